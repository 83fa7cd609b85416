//! Payload records shared by several messages.

use crate::bzflag::consts::{FlagStatus, PlayerStatus, Team, FIRING_INFO_PLEN};
use crate::wire::{DecodeResult, Reader, ReaderExt, Writer};
use serde::Serialize;

/// A flag abbreviation: exactly two bytes on the wire, second byte 0 for one-letter flags, both 0 for "none".
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Abbv(pub [u8; 2]);

impl Abbv {
    /// No flag.
    pub const NONE: Abbv = Abbv([0, 0]);

    /// From text: the first two bytes of `s` (zero-padded).
    pub fn new(s: &str) -> Abbv {
        let b = s.as_bytes();
        Abbv([b.first().copied().unwrap_or(0), b.get(1).copied().unwrap_or(0)])
    }
    /// The abbreviation as text (`""` for none). Non-ASCII bytes become `?`.
    pub fn as_string(&self) -> String {
        self.0.iter().take_while(|&&c| c != 0).map(|&c| if c.is_ascii_graphic() { c as char } else { '?' }).collect()
    }
    /// True for "no flag".
    pub fn is_none(&self) -> bool {
        self.0[0] == 0
    }
    /// True for a team flag (`R*`, `G*`, `B*`, `P*`).
    pub fn is_team_flag(&self) -> bool {
        self.0[1] == b'*'
    }
    pub(crate) fn read(r: &mut Reader<'_>) -> DecodeResult<Abbv> {
        Ok(Abbv([r.u8()?, r.u8()?]))
    }
    pub(crate) fn write(&self, w: &mut Writer) {
        w.bytes(&self.0);
    }
}

impl std::fmt::Debug for Abbv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_string())
    }
}

impl std::fmt::Display for Abbv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.as_string())
    }
}

impl Serialize for Abbv {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.as_string())
    }
}

/// The packed `Flag` record (55 bytes) of `MsgFlagUpdate`, `MsgGrabFlag`, `MsgDropFlag`, `MsgTransferFlag`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlagInfo {
    /// Type (`"PZ"` for a hidden loose flag).
    pub abbv: Abbv,
    /// Status.
    pub status: FlagStatus,
    /// Endurance (0 normal/team, 1 unstable = good, 2 sticky = bad).
    pub endurance: u16,
    /// Holder (255 = none; may keep the last holder after a drop).
    pub owner: u8,
    /// Position.
    pub position: [f32; 3],
    /// Where a flight started.
    pub launch: [f32; 3],
    /// Where a flight ends.
    pub landing: [f32; 3],
    /// Flight time so far (s).
    pub flight_time: f32,
    /// Total flight duration (s).
    pub flight_end: f32,
    /// Initial vertical velocity of the flight.
    pub initial_velocity: f32,
}

impl FlagInfo {
    /// Reads the 55-byte record.
    pub fn read(r: &mut Reader<'_>) -> DecodeResult<FlagInfo> {
        Ok(FlagInfo {
            abbv: Abbv::read(r)?,
            status: FlagStatus::from_u16(r.u16()?),
            endurance: r.u16()?,
            owner: r.u8()?,
            position: r.vec3()?,
            launch: r.vec3()?,
            landing: r.vec3()?,
            flight_time: r.f32_finite()?,
            flight_end: r.f32_finite()?,
            initial_velocity: r.f32_finite()?,
        })
    }
    /// Writes the 55-byte record.
    pub fn write(&self, w: &mut Writer) {
        self.abbv.write(w);
        w.u16(self.status.to_u16()).u16(self.endurance).u8(self.owner);
        w.vec3(self.position).vec3(self.launch).vec3(self.landing);
        w.f32(self.flight_time).f32(self.flight_end).f32(self.initial_velocity);
    }
}

/// One team's counts in `MsgTeamUpdate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TeamInfo {
    /// The team.
    pub team: Team,
    /// Players on it.
    pub size: u16,
    /// Wins.
    pub wins: u16,
    /// Losses.
    pub losses: u16,
}

/// A player update, `MsgPlayerUpdate` ('pu', full floats) or `MsgPlayerUpdateSmall` ('ps', 16-bit fixed point).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlayerUpdate {
    /// True for the small 'ps' form.
    pub small: bool,
    /// Sender's clock (s).
    pub timestamp: f32,
    /// Player id.
    pub id: u8,
    /// Strictly increasing per player.
    pub order: i32,
    /// Status bits.
    pub status: PlayerStatus,
    /// Position.
    pub pos: [f32; 3],
    /// Velocity.
    pub vel: [f32; 3],
    /// Azimuth (rad).
    pub azimuth: f32,
    /// Angular velocity (rad/s).
    pub ang_vel: f32,
    /// Jump-jets scale (present with `JUMP_JETS`).
    pub jump_jets: f32,
    /// Physics driver index (present with `ON_DRIVER`).
    pub phydrv: i32,
    /// User speed and angular velocity (present with `USER_INPUTS`).
    pub user_inputs: (f32, f32),
    /// Sound bits (present with `PLAY_SOUND`).
    pub sounds: u8,
}

const SMALL_SCALE: f32 = 32766.0;
// Computed in f32 exactly as the official PlayerState.cxx does (0.02f * 32766.0f is 655.31995, not 655.32), so
// that we pack to the same integers as the official client.
const SMALL_MAX_POS: f32 = 0.02 * SMALL_SCALE;
const SMALL_MAX_VEL: f32 = 0.01 * SMALL_SCALE;
const SMALL_MAX_ANGVEL: f32 = 0.001 * SMALL_SCALE;

fn pack_small(v: f32, max: f32) -> i16 {
    // The official packer converts with a C cast, i.e. truncation toward zero; clamp first so that
    // out-of-range values cannot wrap. A value within a thousandth of a step of a whole step (one that came
    // from unpacking) packs to that step, so that decoding and re-encoding gives the same bytes.
    let scaled = (v * SMALL_SCALE / max).clamp(-32767.0, 32767.0);
    if !scaled.is_finite() {
        return 0;
    }
    let nearest = scaled.round();
    if (scaled - nearest).abs() < 1e-3 {
        nearest as i16
    } else {
        scaled as i16
    }
}

fn unpack_small(v: i16, max: f32) -> f32 {
    v as f32 * max / SMALL_SCALE
}

impl PlayerUpdate {
    /// Parses a 'pu' (`small == false`) or 'ps' payload.
    pub fn read(r: &mut Reader<'_>, small: bool) -> DecodeResult<PlayerUpdate> {
        let timestamp = r.f32_finite()?;
        let id = r.u8()?;
        let order = r.i32()?;
        let status = PlayerStatus::from_bits_retain(r.i16()? as u16);
        let base = PlayerUpdate {
            small,
            timestamp,
            id,
            order,
            status,
            pos: [0.0; 3],
            vel: [0.0; 3],
            azimuth: 0.0,
            ang_vel: 0.0,
            jump_jets: 0.0,
            phydrv: -1,
            user_inputs: (0.0, 0.0),
            sounds: 0,
        };
        let u = if small {
            let p = [r.i16()?, r.i16()?, r.i16()?];
            let v = [r.i16()?, r.i16()?, r.i16()?];
            let a = r.i16()?;
            let w = r.i16()?;
            PlayerUpdate {
                pos: p.map(|x| unpack_small(x, SMALL_MAX_POS)),
                vel: v.map(|x| unpack_small(x, SMALL_MAX_VEL)),
                azimuth: unpack_small(a, std::f32::consts::PI),
                ang_vel: unpack_small(w, SMALL_MAX_ANGVEL),
                ..base
            }
        } else {
            PlayerUpdate { pos: r.vec3()?, vel: r.vec3()?, azimuth: r.f32_finite()?, ang_vel: r.f32_finite()?, ..base }
        };
        Self::finish(r, u)
    }

    fn finish(r: &mut Reader<'_>, mut u: PlayerUpdate) -> DecodeResult<PlayerUpdate> {
        if u.status.contains(PlayerStatus::JUMP_JETS) {
            u.jump_jets = r.i16()? as f32 / SMALL_SCALE;
        }
        if u.status.contains(PlayerStatus::ON_DRIVER) {
            u.phydrv = r.i32()?;
        }
        if u.status.contains(PlayerStatus::USER_INPUTS) {
            let s = r.i16()?;
            let a = r.i16()?;
            u.user_inputs = (unpack_small(s, SMALL_MAX_VEL), unpack_small(a, SMALL_MAX_ANGVEL));
        }
        if u.status.contains(PlayerStatus::PLAY_SOUND) {
            u.sounds = r.u8()?;
        }
        Ok(u)
    }

    /// Writes the payload in the form given by `self.small`.
    pub fn write(&self, w: &mut Writer) {
        w.f32(self.timestamp).u8(self.id).i32(self.order).i16(self.status.bits() as i16);
        if self.small {
            for v in self.pos {
                w.i16(pack_small(v, SMALL_MAX_POS));
            }
            for v in self.vel {
                w.i16(pack_small(v, SMALL_MAX_VEL));
            }
            let a = wrap_angle(self.azimuth);
            w.i16(pack_small(a, std::f32::consts::PI));
            w.i16(pack_small(self.ang_vel, SMALL_MAX_ANGVEL));
        } else {
            w.vec3(self.pos).vec3(self.vel).f32(self.azimuth).f32(self.ang_vel);
        }
        if self.status.contains(PlayerStatus::JUMP_JETS) {
            w.i16(pack_small(self.jump_jets, 1.0));
        }
        if self.status.contains(PlayerStatus::ON_DRIVER) {
            w.i32(self.phydrv);
        }
        if self.status.contains(PlayerStatus::USER_INPUTS) {
            w.i16(pack_small(self.user_inputs.0, SMALL_MAX_VEL)).i16(pack_small(self.user_inputs.1, SMALL_MAX_ANGVEL));
        }
        if self.status.contains(PlayerStatus::PLAY_SOUND) {
            w.u8(self.sounds);
        }
    }

    /// True when the values fit the small form's ranges (the official sender's rule).
    pub fn fits_small(&self) -> bool {
        self.pos.iter().all(|v| v.abs() < SMALL_MAX_POS)
            && self.vel.iter().all(|v| v.abs() < SMALL_MAX_VEL)
            && self.ang_vel.abs() < SMALL_MAX_ANGVEL
    }
}

/// Wraps an angle to [−π, π].
pub fn wrap_angle(a: f32) -> f32 {
    if !a.is_finite() {
        return 0.0;
    }
    let tau = std::f32::consts::TAU;
    let mut a = a % tau;
    if a > std::f32::consts::PI {
        a -= tau;
    } else if a < -std::f32::consts::PI {
        a += tau;
    }
    a
}

/// `MsgShotBegin` payload ("FiringInfo", 43 bytes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FiringInfo {
    /// Sender's clock when sent.
    pub time_sent: f32,
    /// Shooter (253 for world weapons).
    pub shooter: u8,
    /// Shot id: low byte slot, high byte salt.
    pub shot_id: u16,
    /// Start (muzzle) position.
    pub pos: [f32; 3],
    /// Velocity.
    pub vel: [f32; 3],
    /// Time already flown (0 for a new shot).
    pub dt: f32,
    /// Shooter's team.
    pub team: Team,
    /// Flag the shot is fired with.
    pub flag: Abbv,
    /// Lifetime (must equal `_reloadTime`).
    pub lifetime: f32,
}

impl FiringInfo {
    /// Reads the 43-byte record.
    pub fn read(r: &mut Reader<'_>) -> DecodeResult<FiringInfo> {
        Ok(FiringInfo {
            time_sent: r.f32_finite()?,
            shooter: r.u8()?,
            shot_id: r.u16()?,
            pos: r.vec3()?,
            vel: r.vec3()?,
            dt: r.f32_finite()?,
            team: Team::from_i16(r.i16()?),
            flag: Abbv::read(r)?,
            lifetime: r.f32_finite()?,
        })
    }
    /// Writes the 43-byte record.
    pub fn write(&self, w: &mut Writer) {
        let start = w.len();
        w.f32(self.time_sent).u8(self.shooter).u16(self.shot_id).vec3(self.pos).vec3(self.vel).f32(self.dt);
        w.i16(self.team.to_i16());
        self.flag.write(w);
        w.f32(self.lifetime);
        debug_assert_eq!(w.len() - start, FIRING_INFO_PLEN);
    }
}

/// The shot update at the start of `MsgGMUpdate` (33 bytes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShotUpdate {
    /// Shooter.
    pub shooter: u8,
    /// Shot id.
    pub shot_id: u16,
    /// Position.
    pub pos: [f32; 3],
    /// Velocity.
    pub vel: [f32; 3],
    /// Time flown.
    pub dt: f32,
    /// Shooter's team.
    pub team: Team,
}

impl ShotUpdate {
    /// Reads the 33-byte record.
    pub fn read(r: &mut Reader<'_>) -> DecodeResult<ShotUpdate> {
        Ok(ShotUpdate {
            shooter: r.u8()?,
            shot_id: r.u16()?,
            pos: r.vec3()?,
            vel: r.vec3()?,
            dt: r.f32_finite()?,
            team: Team::from_i16(r.i16()?),
        })
    }
    /// Writes the 33-byte record.
    pub fn write(&self, w: &mut Writer) {
        w.u8(self.shooter).u16(self.shot_id).vec3(self.pos).vec3(self.vel).f32(self.dt).i16(self.team.to_i16());
    }
}

/// `MsgGameSettings` (30 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GameSettings {
    /// Full edge length of the world.
    pub world_size: f32,
    /// Game type (0 TeamFFA, 1 CTF, 2 OpenFFA, 3 Rabbit).
    pub game_type: u16,
    /// Game option bits.
    pub game_options: u16,
    /// Player slots (always 216 in 2.4).
    pub max_players: u16,
    /// Shots per player.
    pub max_shots: u16,
    /// Size of the flag index space.
    pub num_flags: u16,
    /// Linear acceleration (0 = unlimited).
    pub linear_acceleration: f32,
    /// Angular acceleration (0 = unlimited).
    pub angular_acceleration: f32,
    /// Shake timeout (1/10 s).
    pub shake_timeout: u16,
    /// Shake wins.
    pub shake_wins: u16,
    /// Formerly the sync time; 0.
    pub sync_time: u32,
}

impl GameSettings {
    /// Reads the 30-byte record.
    pub fn read(r: &mut Reader<'_>) -> DecodeResult<GameSettings> {
        Ok(GameSettings {
            world_size: r.f32_finite()?,
            game_type: r.u16()?,
            game_options: r.u16()?,
            max_players: r.u16()?,
            max_shots: r.u16()?,
            num_flags: r.u16()?,
            linear_acceleration: r.f32_finite()?,
            angular_acceleration: r.f32_finite()?,
            shake_timeout: r.u16()?,
            shake_wins: r.u16()?,
            sync_time: r.u32()?,
        })
    }
    /// Writes the 30-byte record.
    pub fn write(&self, w: &mut Writer) {
        w.f32(self.world_size).u16(self.game_type).u16(self.game_options).u16(self.max_players);
        w.u16(self.max_shots).u16(self.num_flags).f32(self.linear_acceleration).f32(self.angular_acceleration);
        w.u16(self.shake_timeout).u16(self.shake_wins).u32(self.sync_time);
    }
}

/// The `MsgQueryGame` reply (22 × u16).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct QueryGameInfo {
    /// Game type.
    pub game_type: u16,
    /// Option bits.
    pub game_options: u16,
    /// Maximum players.
    pub max_players: u16,
    /// Shots per player.
    pub max_shots: u16,
    /// Team sizes: rogue, red, green, blue, purple, observer.
    pub team_sizes: [u16; 6],
    /// Team maxima in the same order.
    pub team_max: [u16; 6],
    /// Shake wins.
    pub shake_wins: u16,
    /// Shake timeout (1/10 s).
    pub shake_timeout: u16,
    /// Score limit per player (0 = none).
    pub max_player_score: u16,
    /// Score limit per team (0 = none).
    pub max_team_score: u16,
    /// Time limit (s, 0 = none).
    pub max_time: u16,
    /// Time elapsed (s).
    pub time_elapsed: u16,
}

impl QueryGameInfo {
    /// Reads the 44-byte record.
    pub fn read(r: &mut Reader<'_>) -> DecodeResult<QueryGameInfo> {
        let mut q = QueryGameInfo {
            game_type: r.u16()?,
            game_options: r.u16()?,
            max_players: r.u16()?,
            max_shots: r.u16()?,
            ..Default::default()
        };
        for s in q.team_sizes.iter_mut() {
            *s = r.u16()?;
        }
        for s in q.team_max.iter_mut() {
            *s = r.u16()?;
        }
        q.shake_wins = r.u16()?;
        q.shake_timeout = r.u16()?;
        q.max_player_score = r.u16()?;
        q.max_team_score = r.u16()?;
        q.max_time = r.u16()?;
        q.time_elapsed = r.u16()?;
        Ok(q)
    }
    /// Writes the 44-byte record.
    pub fn write(&self, w: &mut Writer) {
        w.u16(self.game_type).u16(self.game_options).u16(self.max_players).u16(self.max_shots);
        for s in self.team_sizes.iter().chain(self.team_max.iter()) {
            w.u16(*s);
        }
        w.u16(self.shake_wins).u16(self.shake_timeout).u16(self.max_player_score).u16(self.max_team_score);
        w.u16(self.max_time).u16(self.time_elapsed);
    }
}
