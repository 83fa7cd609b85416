//! Shots: every live shot rebuilt from its `MsgShotBegin` as all clients rebuild it (§9.5), guided missiles
//! steered by `MsgGMUpdate`, and firing our own shots with slots, salt and reload (§8.4) so that every
//! `MsgShotBegin` passes the server's checks (§11).
//!
//! # Shot time
//!
//! A shot's clock starts when it was fired: a shot received at local time `r` with `FiringInfo::dt` = d is
//! `(now − r) + d` seconds old at `now` ([`LiveShot::age`]). All paths and positions are functions of that age.
//!
//! # Flag modifiers (applied by every receiver, the sender sends the plain values)
//!
//! | flag | velocity | lifetime | reload | path |
//! |---|---|---|---|---|
//! | F | ×`_rFireAdVel` | ×`_rFireAdLife` | ÷`_rFireAdRate` | stops at obstacles |
//! | MG | ×`_mGunAdVel` | ×`_mGunAdLife` | ÷`_mGunAdRate` | stops |
//! | L | ×`_laserAdVel` | ×`_laserAdLife` | ÷`_laserAdRate` | stops; the whole beam is live at once |
//! | TH | ×`_thiefAdShotVel` | ×`_thiefAdLife` | ÷`_thiefAdRate` | stops; whole beam at once |
//! | GM | `_shotSpeed` along the fired direction | ×`_gmAdLife` | — | steered each frame |
//! | SW | 0 | ×`_shockAdLife` | — | a sphere growing from `_shockInRadius` to `_shockOutRadius` |
//! | R, or `+r` | — | — | — | ricochets off everything |
//! | SB, PZ | — | — | — | passes every obstacle; teleporters still transport it |

use std::time::Instant;

use glam::Vec3;

use super::physics::{flag, FlagEffect, Physics};
use super::reckon::{sane, sane3};
use crate::bzflag::consts::Team;
use crate::bzflag::msg::{Abbv, ClientMsg, FiringInfo, ShotUpdate};
use crate::bzflag::world::{Mask, SegmentReason, ShotOptions, ShotSegment, WorldModel};

/// How a shot behaves, from the flag it was fired with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShotKind {
    /// A plain shell (also every flag without a special shot).
    Normal,
    /// Rapid Fire.
    RapidFire,
    /// Machine Gun.
    MachineGun,
    /// Guided Missile.
    GuidedMissile,
    /// Laser.
    Laser,
    /// Ricochet.
    Ricochet,
    /// Super Bullet.
    SuperBullet,
    /// Shock Wave.
    ShockWave,
    /// Thief.
    Thief,
    /// Phantom Zone.
    PhantomZone,
}

impl ShotKind {
    /// The kind of a shot fired with `f`.
    pub fn of(f: Abbv) -> ShotKind {
        match f {
            x if x == flag::RAPID_FIRE => ShotKind::RapidFire,
            x if x == flag::MACHINE_GUN => ShotKind::MachineGun,
            x if x == flag::GUIDED_MISSILE => ShotKind::GuidedMissile,
            x if x == flag::LASER => ShotKind::Laser,
            x if x == flag::RICOCHET => ShotKind::Ricochet,
            x if x == flag::SUPER_BULLET => ShotKind::SuperBullet,
            x if x == flag::SHOCK_WAVE => ShotKind::ShockWave,
            x if x == flag::THIEF => ShotKind::Thief,
            x if x == flag::PHANTOM_ZONE => ShotKind::PhantomZone,
            _ => ShotKind::Normal,
        }
    }

    /// True when a hit ends the shot (`isStoppedByHit`): everything except Laser, Thief and Shock Wave. The
    /// victim then sends `MsgShotEnd(shooter, id, 1)`.
    pub fn stopped_by_hit(self) -> bool {
        !matches!(self, ShotKind::Laser | ShotKind::Thief | ShotKind::ShockWave)
    }

    /// True for beams (Laser, Thief): the whole path is live for the shot's whole lifetime.
    pub fn is_beam(self) -> bool {
        matches!(self, ShotKind::Laser | ShotKind::Thief)
    }

    /// The reload time of a slot after firing this kind (`ShotPath` reload with the strategy's divisor).
    pub fn reload_time(self, phys: &Physics) -> f32 {
        let r = phys.reload_time;
        match self {
            ShotKind::RapidFire => r / phys.rfire_ad_rate,
            ShotKind::MachineGun => r / phys.mgun_ad_rate,
            ShotKind::Laser => r / phys.laser_ad_rate,
            ShotKind::Thief => r / phys.thief_ad_rate,
            _ => r,
        }
    }

    /// How long the server considers the shot alive (`GetShotLifetime`): a slot may be reused only after it.
    pub fn server_lifetime(self, phys: &Physics) -> f32 {
        let r = phys.reload_time;
        match self {
            ShotKind::RapidFire => r * phys.rfire_ad_life,
            ShotKind::MachineGun => r * phys.mgun_ad_life,
            ShotKind::GuidedMissile => r * (phys.gm_ad_life + 0.01),
            ShotKind::Laser => r * phys.laser_ad_life,
            ShotKind::ShockWave => r * phys.shock_ad_life,
            ShotKind::Thief => r * phys.thief_ad_life,
            _ => r,
        }
    }
}

/// A live shot as every client rebuilds it from `MsgShotBegin`.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveShot {
    /// Shooter (253 for world weapons).
    pub shooter: u8,
    /// Shot id (slot + salt << 8).
    pub shot_id: u16,
    /// Team of the shot.
    pub team: Team,
    /// Flag fired with.
    pub flag: Abbv,
    /// Behaviour.
    pub kind: ShotKind,
    /// Start position.
    pub start: Vec3,
    /// Velocity after the flag modifiers.
    pub velocity: Vec3,
    /// Lifetime after the flag modifiers (s).
    pub lifetime: f32,
    /// The precomputed path (segmented kinds; empty for SW and GM).
    pub segments: Vec<ShotSegment>,
    /// The guided missile's state (GM only).
    pub missile: Option<GuidedMissile>,
    /// Local time the `MsgShotBegin` was received.
    pub received: Instant,
    /// Shot age at reception (`FiringInfo::dt`).
    pub dt0: f32,
    /// Ended early (`MsgShotEnd`, or a hit on us that stops it).
    pub ended: bool,
}

impl LiveShot {
    /// Builds a shot received at `now`. Without a world the path is one straight segment.
    pub fn new(info: &FiringInfo, now: Instant, phys: &Physics, world: Option<&WorldModel>) -> LiveShot {
        let kind = ShotKind::of(info.flag);
        let start = sane3(info.pos);
        let mut velocity = sane3(info.vel);
        let mut lifetime = sane(info.lifetime).clamp(0.0, 3600.0);
        match kind {
            ShotKind::RapidFire => {
                velocity *= phys.rfire_ad_vel;
                lifetime *= phys.rfire_ad_life;
            }
            ShotKind::MachineGun => {
                velocity *= phys.mgun_ad_vel;
                lifetime *= phys.mgun_ad_life;
            }
            ShotKind::Laser => {
                velocity *= phys.laser_ad_vel;
                lifetime *= phys.laser_ad_life;
            }
            ShotKind::Thief => {
                velocity *= phys.thief_ad_shot_vel;
                lifetime *= phys.thief_ad_life;
            }
            ShotKind::GuidedMissile => {
                lifetime *= phys.gm_ad_life;
                velocity = velocity.normalize_or_zero() * phys.shot_speed;
            }
            ShotKind::ShockWave => {
                lifetime *= phys.shock_ad_life;
                velocity = Vec3::ZERO;
            }
            _ => {}
        }
        let mut shot = LiveShot {
            shooter: info.shooter,
            shot_id: info.shot_id,
            team: info.team,
            flag: info.flag,
            kind,
            start,
            velocity,
            lifetime,
            segments: Vec::new(),
            missile: None,
            received: now,
            dt0: sane(info.dt).clamp(0.0, 3600.0),
            ended: false,
        };
        match kind {
            ShotKind::ShockWave => {}
            ShotKind::GuidedMissile => {
                let mut m = GuidedMissile::new(start, velocity, info.shot_id, phys, world);
                m.time = shot.dt0;
                shot.missile = Some(m);
            }
            _ => {
                let opts = ShotOptions {
                    ricochet: kind == ShotKind::Ricochet || phys.all_ricochet(),
                    through: matches!(kind, ShotKind::SuperBullet | ShotKind::PhantomZone),
                    shot_id: info.shot_id,
                    muzzle_front: phys.muzzle_front,
                };
                shot.segments = match world {
                    Some(w) => shot_path(w, start, velocity, lifetime, &opts),
                    None if velocity.length_squared() > 0.0 && lifetime > 0.0 => {
                        vec![ShotSegment { start, velocity, t0: 0.0, t1: lifetime, reason: SegmentReason::Initial }]
                    }
                    None => Vec::new(),
                };
            }
        }
        shot
    }

    /// A shot the session keeps ([`crate::bzflag::game::Shot`]), with its latest `MsgGMUpdate` applied.
    pub fn from_game(shot: &crate::bzflag::game::Shot, phys: &Physics, world: Option<&WorldModel>) -> LiveShot {
        let mut s = LiveShot::new(&shot.info, shot.received, phys, world);
        if let Some((u, _, target)) = &shot.gm_update {
            s.apply_gm_update(u, *target);
        }
        s
    }

    /// Flies a guided missile on to age `age`, turning towards `aim` (the target's position plus its muzzle
    /// height, or `None`); call every tick. Other kinds ignore it.
    pub fn update_missile(&mut self, age: f32, aim: Option<Vec3>, phys: &Physics, world: Option<&WorldModel>) {
        if let Some(m) = self.missile.as_mut() {
            let dt = age - m.time;
            if dt > 0.0 {
                m.step(dt.min(1.0), aim, phys, world);
                m.time = age;
            }
        }
    }

    /// The `MsgGMUpdate` for our own missile now aimed at `target` (255 for none): its position, velocity and
    /// age, sent when the target changes (`GuidedMissileStrategy::sendUpdate`).
    pub fn gm_update(&self, target: u8, phys: &Physics) -> Option<ClientMsg> {
        let m = self.missile.as_ref()?;
        Some(ClientMsg::GmUpdate {
            shot: ShotUpdate {
                shooter: self.shooter,
                shot_id: self.shot_id,
                pos: m.pos.to_array(),
                vel: (m.direction() * phys.shot_speed).to_array(),
                dt: m.time,
                team: self.team,
            },
            target,
        })
    }

    /// Shot age (s) at local time `now`.
    pub fn age(&self, now: Instant) -> f32 {
        now.saturating_duration_since(self.received).as_secs_f32() + self.dt0
    }

    /// When the path ends (shot age): the last segment's end, or the lifetime for SW and GM.
    pub fn path_end(&self) -> f32 {
        match self.kind {
            ShotKind::ShockWave | ShotKind::GuidedMissile => self.lifetime,
            _ => self.segments.last().map_or(0.0, |s| s.t1),
        }
    }

    /// True once the shot is over at age `t` (ended, out of path, or out of lifetime; a beam lives its whole
    /// lifetime).
    pub fn expired_at(&self, t: f32) -> bool {
        if self.ended {
            return true;
        }
        match self.kind {
            k if k.is_beam() => t >= self.lifetime,
            ShotKind::GuidedMissile => t >= self.lifetime || self.missile.as_ref().is_none_or(|m| m.expired),
            _ => t >= self.path_end(),
        }
    }

    /// Where the shot is at age `t` (`None` when expired). A Shock Wave is at its centre; a missile at its
    /// simulated position.
    pub fn position_at(&self, t: f32) -> Option<Vec3> {
        if self.expired_at(t) || t < 0.0 {
            return None;
        }
        match self.kind {
            ShotKind::ShockWave => Some(self.start),
            ShotKind::GuidedMissile => self.missile.as_ref().map(|m| m.pos),
            _ => {
                let s = self.segments.iter().find(|s| t >= s.t0 && t < s.t1)?;
                Some(s.start + s.velocity * (t - s.t0))
            }
        }
    }

    /// The Shock Wave's radius at age `t`: `_shockInRadius` growing linearly to `_shockOutRadius` over the
    /// lifetime. `None` for other kinds.
    pub fn shock_radius(&self, t: f32, phys: &Physics) -> Option<f32> {
        if self.kind != ShotKind::ShockWave || self.lifetime <= 0.0 {
            return None;
        }
        let f = (t / self.lifetime).clamp(0.0, 1.0);
        Some(phys.shock_in_radius + (phys.shock_out_radius - phys.shock_in_radius) * f)
    }

    /// Applies a `MsgGMUpdate` (missiles only): the missile continues from the sender's position and direction
    /// towards `target`.
    pub fn apply_gm_update(&mut self, u: &ShotUpdate, target: u8) {
        if let Some(m) = self.missile.as_mut() {
            m.apply_update(u, target);
        }
    }
}

/// The path of a shot through the world: [`WorldModel::shot_path`] (kept as a function of this module so that the
/// shot code has one entry point).
pub fn shot_path(w: &WorldModel, start: Vec3, vel: Vec3, lifetime: f32, opts: &ShotOptions) -> Vec<ShotSegment> {
    w.shot_path(start, vel, lifetime, opts)
}

/// The live shots of one session, built once each from the session's [`crate::bzflag::game::Game::shots`] and
/// kept while the session keeps them (paths are precomputed only when a shot appears; `MsgGMUpdate`s are applied
/// as they arrive). Call [`ShotTracker::sync`] every tick.
#[derive(Debug, Clone, Default)]
pub struct ShotTracker {
    shots: std::collections::HashMap<(u8, u16), (LiveShot, Option<Instant>)>,
}

impl ShotTracker {
    /// No shots.
    pub fn new() -> ShotTracker {
        ShotTracker::default()
    }

    /// Follows the session's shots: new ones are built, gone or ended ones dropped, missile updates applied.
    pub fn sync(
        &mut self,
        shots: &std::collections::HashMap<(u8, u16), crate::bzflag::game::Shot>,
        phys: &Physics,
        world: Option<&WorldModel>,
    ) {
        self.shots.retain(|k, (s, _)| shots.get(k).is_some_and(|g| g.received == s.received) && !s.ended);
        for (k, g) in shots {
            let entry = self.shots.entry(*k).or_insert_with(|| (LiveShot::new(&g.info, g.received, phys, world), None));
            if let Some((u, at, target)) = &g.gm_update {
                if entry.1 != Some(*at) {
                    entry.0.apply_gm_update(u, *target);
                    entry.1 = Some(*at);
                }
            }
        }
    }

    /// Every tracked shot.
    pub fn iter(&self) -> impl Iterator<Item = &LiveShot> + '_ {
        self.shots.values().map(|(s, _)| s)
    }

    /// Every tracked shot, mutable (to fly missiles with [`LiveShot::update_missile`] or mark shots ended).
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut LiveShot> + '_ {
        self.shots.values_mut().map(|(s, _)| s)
    }

    /// One shot.
    pub fn get(&self, shooter: u8, shot_id: u16) -> Option<&LiveShot> {
        self.shots.get(&(shooter, shot_id)).map(|(s, _)| s)
    }

    /// Number of shots tracked.
    pub fn len(&self) -> usize {
        self.shots.len()
    }

    /// No shots tracked.
    pub fn is_empty(&self) -> bool {
        self.shots.is_empty()
    }
}

fn limit_angle(a: f32) -> f32 {
    use std::f32::consts::{PI, TAU};
    if !a.is_finite() {
        0.0
    } else if a < -PI {
        a + TAU
    } else if a >= PI {
        a - TAU
    } else {
        a
    }
}

/// A guided missile in flight (`GuidedMissileStrategy`): it flies at `_shotSpeed`, turning its azimuth and
/// elevation towards its target by at most `_gmTurnAngle` per second; the ground, an obstacle or its lifetime end
/// it; a teleporter transports it.
#[derive(Debug, Clone, PartialEq)]
pub struct GuidedMissile {
    /// Current position.
    pub pos: Vec3,
    /// Heading.
    pub azimuth: f32,
    /// Elevation.
    pub elevation: f32,
    /// Target player (255 none).
    pub target: u8,
    /// Time flown (s).
    pub time: f32,
    /// Ended (ground or obstacle).
    pub expired: bool,
    /// The last steps flown, newest first, as segments in shot time (at most 4, as the client keeps).
    pub recent: Vec<ShotSegment>,
    shot_id: u16,
}

impl GuidedMissile {
    /// A missile fired at `pos` along `vel`; `world` checks that the first stretch (behind the muzzle) is clear.
    pub fn new(pos: Vec3, vel: Vec3, shot_id: u16, phys: &Physics, world: Option<&WorldModel>) -> GuidedMissile {
        let dir = vel.normalize_or_zero();
        let mut m = GuidedMissile {
            pos,
            azimuth: limit_angle(dir.y.atan2(dir.x)),
            elevation: limit_angle(dir.z.atan2(dir.truncate().length())),
            target: 255,
            time: 0.0,
            expired: false,
            recent: Vec::new(),
            shot_id,
        };
        if let Some(w) = world {
            let back = pos - dir * phys.muzzle_front;
            if w.segment(back, pos, Mask::Shots).is_some_and(|h| h.teleport.is_none()) {
                m.expired = true;
            }
        }
        m
    }

    /// The unit direction of flight.
    pub fn direction(&self) -> Vec3 {
        let (sa, ca) = self.azimuth.sin_cos();
        let (se, ce) = self.elevation.sin_cos();
        Vec3::new(ca * ce, sa * ce, se)
    }

    /// `readUpdate`: continue from the sender's position and velocity, towards `target`.
    pub fn apply_update(&mut self, u: &ShotUpdate, target: u8) {
        let dir = sane3(u.vel).normalize_or_zero();
        if dir != Vec3::ZERO {
            self.azimuth = limit_angle(dir.y.atan2(dir.x));
            self.elevation = limit_angle(dir.z.atan2(dir.truncate().length()));
        }
        self.pos = sane3(u.pos);
        self.target = target;
    }

    /// Flies `dt` seconds, turning towards `aim` (the target's position plus its muzzle height; `None` when
    /// there is no live, visible target).
    pub fn step(&mut self, dt: f32, aim: Option<Vec3>, phys: &Physics, world: Option<&WorldModel>) {
        let dt = sane(dt);
        if self.expired || dt <= 0.0 {
            return;
        }
        if let Some(aim) = aim.filter(|a| a.is_finite()) {
            let d = aim - self.pos;
            let new_az = d.y.atan2(d.x);
            let new_el = d.z.atan2(d.truncate().length());
            let max = dt * phys.gm_turn_angle;
            let turn = |cur: f32, want: f32| {
                let delta = limit_angle(want - cur);
                if delta.abs() <= max {
                    limit_angle(want)
                } else if delta > 0.0 {
                    limit_angle(cur + max)
                } else {
                    limit_angle(cur - max)
                }
            };
            self.azimuth = turn(self.azimuth, new_az);
            self.elevation = turn(self.elevation, new_el);
        }
        let dir = self.direction();
        let start = self.pos;
        let mut next = start + dir * (dt * phys.shot_speed);
        let mut end_t = dt;
        if next.z <= 0.0 {
            let f = start.z / (start.z - next.z);
            let f = if f.is_finite() { f.clamp(0.0, 1.0) } else { 0.0 };
            end_t = f * dt;
            next = start + dir * (end_t * phys.shot_speed);
            self.expired = true;
        } else if let Some(h) = world.and_then(|w| w.segment(start, next, Mask::Shots).map(|h| (w, h))) {
            let (w, h) = h;
            end_t = h.t * dt;
            match h.teleport {
                Some(entry) => {
                    let seed = u32::from(self.shot_id);
                    if let Some((p, _, a)) =
                        w.shot_target(entry.face, seed).and_then(|to| w.teleport(entry.face, to, next, dir))
                    {
                        next = p;
                        self.azimuth = limit_angle(self.azimuth + a);
                    }
                }
                None => {
                    next = h.point;
                    self.expired = true;
                }
            }
        }
        let seg = ShotSegment {
            start,
            velocity: dir * phys.shot_speed,
            t0: self.time,
            t1: self.time + end_t,
            reason: SegmentReason::Initial,
        };
        self.recent.insert(0, seg);
        self.recent.truncate(4);
        self.time += dt;
        self.pos = next;
    }
}

/// Why a shot could not be fired.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FireError {
    /// The tank is not alive.
    Dead,
    /// The tank is paused.
    Paused,
    /// Inside a building (and not zoned).
    InBuilding,
    /// The server allows no shots.
    NoShots,
    /// Every slot is reloading; the first frees up after this many seconds.
    Reloading(f32),
}

/// What a shot is fired from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Muzzle {
    /// Tank position (bottom centre).
    pub pos: Vec3,
    /// Tank velocity.
    pub vel: Vec3,
    /// Tank azimuth.
    pub azimuth: f32,
    /// Flag held (`NONE` for none).
    pub flag: Abbv,
    /// The flag's effect is on (Phantom Zone: zoned).
    pub flag_active: bool,
    /// Our team.
    pub team: Team,
    /// Handicap (0..1; 0 without the handicap option).
    pub handicap: f32,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Slot {
    fired: f32,
    reload: f32,
    salt: u8,
}

/// Our gun: `maxShots` slots, each busy for its reload time after firing, and the salt that changes with every
/// shot (`shot_id = slot + (salt << 8)`, salt 1..=127).
#[derive(Debug, Clone, PartialEq)]
pub struct Gun {
    slots: Vec<Option<Slot>>,
    salt: u8,
    jam_until: f32,
    /// Extra seconds a slot waits beyond the server's idea of the shot's life, so that network jitter does not
    /// make the server drop a reused slot's shot as "still alive" (default 0.05 s; 0 fires exactly like the
    /// official client).
    pub safety_margin: f32,
}

impl Default for Gun {
    fn default() -> Self {
        Gun { slots: Vec::new(), salt: 0, jam_until: 0.0, safety_margin: 0.05 }
    }
}

impl Gun {
    /// All slots free.
    pub fn new() -> Gun {
        Gun::default()
    }

    /// Frees every slot (on spawn, as `LocalPlayer::restart` does). The salt keeps counting.
    pub fn clear(&mut self) {
        self.slots.clear();
        self.jam_until = 0.0;
    }

    /// Pausing delays reloading: every busy slot's reload grows by `dt` (`boostReloadTime`).
    pub fn pause_for(&mut self, dt: f32) {
        let dt = sane(dt).max(0.0);
        for s in self.slots.iter_mut().flatten() {
            s.reload += dt;
        }
    }

    fn resize(&mut self, max: u16) {
        self.slots.resize(usize::from(max), None);
    }

    /// Seconds until a slot is free at time `now` (our clock, s); 0 when one is free now.
    pub fn reload_left(&self, now: f32, max_shots: u16) -> f32 {
        let jam = self.jam_until - now;
        if jam > 0.0 {
            return jam;
        }
        let n = usize::from(max_shots);
        if n == 0 {
            return f32::INFINITY;
        }
        let mut best = f32::INFINITY;
        for i in 0..n {
            match self.slots.get(i).copied().flatten() {
                None => return 0.0,
                Some(s) => best = best.min(s.reload - (now - s.fired)),
            }
        }
        best.max(0.0)
    }

    /// Fires at time `now` (our clock, s): picks the first free slot and builds the
    /// `FiringInfo` the server accepts (muzzle position, velocity, flag, lifetime = `_reloadTime`). The caller
    /// must send a player update right before it (`UpdateSender::before_shot`), then `MsgShotBegin` over UDP.
    pub fn fire(&mut self, now: f32, shooter: u8, m: &Muzzle, phys: &Physics) -> Result<FiringInfo, FireError> {
        if phys.max_shots == 0 {
            return Err(FireError::NoShots);
        }
        self.resize(phys.max_shots);
        let left = self.reload_left(now, phys.max_shots);
        if left > 0.0 {
            return Err(FireError::Reloading(left));
        }
        let Some(slot) = (0..self.slots.len()).find(|&i| match self.slots.get(i).copied().flatten() {
            None => true,
            Some(s) => now - s.fired >= s.reload,
        }) else {
            return Err(FireError::Reloading(self.reload_left(now, phys.max_shots).max(1.0e-3)));
        };
        let info = firing_info(shooter, slot, self.next_salt(), m, phys);
        let kind = ShotKind::of(info.flag);
        let reload = kind.reload_time(phys).max(kind.server_lifetime(phys) + self.safety_margin);
        if let Some(s) = self.slots.get_mut(slot) {
            *s = Some(Slot { fired: now, reload, salt: (info.shot_id >> 8) as u8 });
        }
        if m.flag == flag::TRIGGER_HAPPY {
            self.jam_until = now + phys.reload_time / f32::from(phys.max_shots.max(1));
        }
        Ok(info)
    }

    fn next_salt(&mut self) -> u8 {
        self.salt = if self.salt >= 127 { 1 } else { self.salt + 1 };
        self.salt
    }

    /// The id (slot + salt << 8) the next shot fired at `now` would carry, if a slot is free then. The id seeds
    /// the choice among several teleporter destinations, so a firing solution through teleporters needs it.
    pub fn next_shot_id(&self, now: f32, max_shots: u16) -> Option<u16> {
        if max_shots == 0 || self.reload_left(now, max_shots) > 0.0 {
            return None;
        }
        let slot = (0..usize::from(max_shots)).find(|&i| match self.slots.get(i).copied().flatten() {
            None => true,
            Some(s) => now - s.fired >= s.reload,
        })?;
        let salt = if self.salt >= 127 { 1 } else { self.salt + 1 };
        Some((slot as u16 & 0xff) | (u16::from(salt) << 8))
    }

    /// The salt of the shot last fired from `slot`, if any.
    pub fn salt_of(&self, slot: usize) -> Option<u8> {
        self.slots.get(slot).copied().flatten().map(|s| s.salt)
    }
}

/// The `timeSent` we put in every `MsgShotBegin`: a float whose first byte (big-endian) is our player id.
///
/// No client reads `timeSent` (2.4's only use is commented out), but `bzfs` reads the first byte of a
/// `MsgShotBegin` body that arrives over TCP as the shooter's id (to let robots share their owner's connection;
/// `handleTcp` in bzfs.cxx), although the body starts with the float `timeSent`. When that byte is the id of
/// another robot, the server hands the shot to that robot and drops it ("shot playerid mismatch"): with a
/// clock in seconds, every robot's shot between 8 and 32 s is taken for player 65's, between 32 and 128 s for
/// player 66's. Robots shoot over TCP, so with more than 64 players most of their shots vanished. With our own
/// id in that byte the server keeps the shot as ours. (The float is finite for every id: the low exponent bit
/// is 0.)
pub fn time_sent_tag(shooter: u8) -> f32 {
    f32::from_bits((u32::from(shooter) << 24) | 0x0040_0000)
}

/// The `FiringInfo` of a shot from `m` in `slot` with `salt` (`FiringInfo(tank, id)` + `fireShot`).
pub fn firing_info(shooter: u8, slot: usize, salt: u8, m: &Muzzle, phys: &Physics) -> FiringInfo {
    let shot_flag = if m.flag == flag::PHANTOM_ZONE && !m.flag_active { flag::NONE } else { m.flag };
    let pos = sane3(m.pos.to_array());
    let (s, c) = sane(m.azimuth).sin_cos();
    let fwd = Vec3::new(c, s, 0.0);
    let (fpos, fvel) = if shot_flag == flag::SHOCK_WAVE {
        (pos, Vec3::ZERO)
    } else {
        let scale = FlagEffect::of(m.flag, phys);
        let front = scale.length * phys.tank_radius + 0.1;
        let muzzle = pos + fwd * front + Vec3::new(0.0, 0.0, phys.muzzle_height * scale.height);
        let handicap = sane(m.handicap).clamp(0.0, 1.0);
        let speed = if handicap > 0.0 {
            phys.shot_speed * (1.0 + handicap * (phys.handicap_shot_ad - 1.0))
        } else {
            phys.shot_speed
        };
        let mut v = sane3(m.vel.to_array()) + fwd * speed;
        if !phys.shots_keep_vertical_velocity {
            v.z = 0.0;
        }
        (muzzle, v)
    };
    FiringInfo {
        time_sent: time_sent_tag(shooter),
        shooter,
        shot_id: (slot as u16 & 0xff) | (u16::from(salt & 0x7f) << 8),
        pos: fpos.to_array(),
        vel: fvel.to_array(),
        dt: 0.0,
        team: m.team,
        flag: shot_flag,
        lifetime: phys.reload_time,
    }
}
