//! Every JSON shape of the web view, each written by one `serde` type: a player ([`PlayerOut`]) is the same in
//! `/api/state` and in the stream's `state` events (the API adds its network figures next to it), a team, a flag,
//! our link, a feed line, the hello and the server list likewise. Nothing is spliced as text: each answer and
//! each event is one typed value written with `serde_json` straight into one buffer (no `serde_json::Value`
//! trees).
//!
//! A full `state` holds everything; the others only what changed since the last push (see
//! [`WebView::write_state`]). What the viewers were sent is kept as plain values ([`PlayerSig`], [`FlagOut`],
//! [`TeamOut`]) compared field by field, not hashed.

use std::collections::HashMap;
use std::time::Instant;

use serde::ser::SerializeSeq;
use serde::{Serialize, Serializer};

use super::{round2, round3, v3, ServerView, Status, WebView};
use crate::bzflag::consts::{FlagStatus, Team};
use crate::bzflag::game::{FlagState, Game, Player};
use crate::bzflag::msg::Abbv;
use crate::bzflag::netstats::{NetStats, PlayerNet};
use crate::bzflag::play::{LiveShot, Physics, ShotKind};
use crate::bzflag::scene::{Scene, SceneTank};
use crate::bzflag::session::Session;
use crate::reactor::Reactor;

/// What decides whether a player is sent again: a new update, its status, flag, score or name.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct PlayerSig {
    update: Option<Instant>,
    alive: bool,
    paused: bool,
    nr: bool,
    team: Team,
    flag: Option<Abbv>,
    score: ScoreOut,
    callsign: u64,
}

/// A flag as the page gets it (and as it was last sent).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct FlagOut {
    index: u16,
    abbv: Abbv,
    status: &'static str,
    owner: Option<u8>,
    team_flag: bool,
    pos: [f64; 3],
}

/// A team's line of the scoreboard.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct TeamOut {
    team: &'static str,
    size: u16,
    wins: u16,
    losses: u16,
    score: i32,
}

/// A player's score.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(super) struct ScoreOut {
    wins: u16,
    losses: u16,
    tks: u16,
}

/// A player, in `/api/state` and in the stream alike: its pose at the state's time (`pos`, velocity `vel`,
/// `azimuth`, angular velocity `av`, from the scene's dead reckoning; its spawn point at rest before its first
/// update), whether it is not responding (`nr`), and its score.
#[derive(Serialize)]
pub(super) struct PlayerOut<'a> {
    id: u8,
    callsign: &'a str,
    team: &'static str,
    #[serde(rename = "type")]
    kind: &'static str,
    alive: bool,
    paused: bool,
    nr: bool,
    pos: [f64; 3],
    vel: [f64; 3],
    azimuth: f64,
    av: f64,
    flag: Option<Abbv>,
    score: ScoreOut,
}

impl<'a> PlayerOut<'a> {
    /// Player `p` as the scene has it (`tank`: `None` for an observer, which the scene does not follow).
    fn of(game: &Game, p: &'a Player, tank: Option<&SceneTank>) -> PlayerOut<'a> {
        let (pos, vel, azimuth, av, nr) = match tank {
            Some(t) => (
                v3(t.pose.pos.to_array()),
                v3(t.velocity().to_array()),
                round3(t.pose.azimuth),
                round3(t.angular_velocity()),
                t.not_responding,
            ),
            None => {
                let (pos, az) = p.spawn.unwrap_or(([0.0; 3], 0.0));
                (v3(pos), [0.0; 3], round3(az), 0.0, false)
            }
        };
        PlayerOut {
            id: p.id,
            callsign: &p.callsign,
            team: p.team.name(),
            kind: p.player_type.name(),
            alive: p.alive,
            paused: p.paused,
            nr,
            pos,
            vel,
            azimuth,
            av,
            flag: p.flag.and_then(|i| game.flags.get(&i)).map(|f| f.abbv()),
            score: ScoreOut { wins: p.wins, losses: p.losses, tks: p.team_kills },
        }
    }
}

/// A player of `/api/state`: the player and its network figures (`null` before its first update).
#[derive(Serialize)]
struct ApiPlayer<'a> {
    #[serde(flatten)]
    player: PlayerOut<'a>,
    net: Option<PlayerNet>,
}

/// A shot of `/api/state`: where it is at the request and how it moves.
#[derive(Serialize)]
struct ApiShot {
    shooter: u8,
    id: u16,
    team: &'static str,
    flag: Abbv,
    pos: [f64; 3],
    vel: [f64; 3],
}

#[derive(Serialize)]
struct WorldRef<'a> {
    hash: Option<&'a str>,
    size: Option<f32>,
}

/// `GET /api/state?server=N` (`docs/schemas/web-state.schema.json`).
#[derive(Serialize)]
pub(super) struct ApiState<'a> {
    v: u8,
    server: usize,
    address: String,
    status: &'static str,
    world: WorldRef<'a>,
    time: f64,
    time_left: Option<f64>,
    teams: Vec<TeamOut>,
    players: Vec<ApiPlayer<'a>>,
    flags: Vec<FlagOut>,
    shots: Vec<ApiShot>,
    /// Absent before the observer is in the game; `null` when its session is gone.
    #[serde(skip_serializing_if = "Option::is_none")]
    link: Option<Option<Link>>,
}

/// A shot with its whole path: `segs` are `[t0, t1, x, y, vx, vy]` in shot time. A guided missile has one segment
/// from its current pose, and `gm`: `[x, y, z, azimuth, elevation, target, turn rate (rad/s), speed, time flown]`,
/// for the page to fly it on, turning towards its target, until the next state.
pub(super) struct ShotOut<'a> {
    pub(super) shot: &'a LiveShot,
    pub(super) now: Instant,
    pub(super) phys: &'a Physics,
}

#[derive(Serialize)]
struct ShotWire<'a> {
    key: ShotKey,
    shooter: u8,
    team: &'static str,
    flag: Abbv,
    age: f64,
    life: f64,
    segs: Segs<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gm: Option<[f64; 9]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expired: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sw: Option<[f64; 4]>,
}

impl Serialize for ShotOut<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let x = self.shot;
        let p = self.phys;
        let mut wire = ShotWire {
            key: ShotKey(x.shooter, x.shot_id),
            shooter: x.shooter,
            team: x.team.name(),
            flag: x.flag,
            age: round3(x.age(self.now)),
            life: round3(x.lifetime),
            segs: Segs::Path(x),
            gm: None,
            expired: None,
            sw: (x.kind == ShotKind::ShockWave)
                .then(|| [round2(x.start.x), round2(x.start.y), round2(p.shock_in_radius), round2(p.shock_out_radius)]),
        };
        if let (ShotKind::GuidedMissile, Some(g)) = (x.kind, x.missile.as_ref()) {
            let speed = x.velocity.length();
            let vel = g.direction() * speed;
            let t = round3(g.time);
            wire.segs =
                Segs::One([t, round3(x.lifetime), round2(g.pos.x), round2(g.pos.y), round2(vel.x), round2(vel.y)]);
            wire.gm = Some([
                round2(g.pos.x),
                round2(g.pos.y),
                round2(g.pos.z),
                round3(g.azimuth),
                round3(g.elevation),
                f64::from(g.target),
                round3(p.gm_turn_angle),
                round2(speed),
                t,
            ]);
            wire.expired = Some(g.expired);
        }
        wire.serialize(ser)
    }
}

enum Segs<'a> {
    Path(&'a LiveShot),
    One([f64; 6]),
}

impl Serialize for Segs<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let shot = match self {
            Segs::One(seg) => return [seg].serialize(ser),
            Segs::Path(shot) => shot,
        };
        let segs = &shot.segments[..shot.segments.len().min(100)];
        let mut q = ser.serialize_seq(Some(segs.len()))?;
        for g in segs {
            q.serialize_element(&[
                round3(g.t0),
                round3(g.t1),
                round2(g.start.x),
                round2(g.start.y),
                round2(g.velocity.x),
                round2(g.velocity.y),
            ])?;
        }
        q.end()
    }
}

/// `"shooter:shot_id"`.
struct ShotKey(u8, u16);

impl Serialize for ShotKey {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        ser.collect_str(&format_args!("{}:{}", self.0, self.1))
    }
}

/// Every player's network figures, by id (`null` before a player's first update).
struct NetOut<'a> {
    net: &'a NetStats,
    ids: &'a [u8],
    game: &'a Game,
    now: Instant,
}

impl Serialize for NetOut<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = ser.serialize_map(None)?;
        for id in self.ids {
            if self.game.players.get(id).is_none_or(|p| p.team == Team::Observer) {
                continue;
            }
            m.serialize_entry(&id.to_string(), &self.net.player(*id, self.now))?;
        }
        m.end()
    }
}

/// Our own observer's link: the server's lag figure for it (`/lagstats`), the round trip of our last `/lagstats`
/// request, and whether UDP is up.
#[derive(Serialize)]
struct Link {
    lag_ms: Option<f64>,
    command_rtt_ms: Option<f64>,
    udp: bool,
}

fn link(session: &Session, now: Instant) -> Option<Link> {
    let net = session.net_stats();
    Some(Link {
        lag_ms: net.own_lag_ms(now).map(round2),
        command_rtt_ms: net.command_rtt_ms(now).map(|v| (v * 100.0).round() / 100.0),
        udp: session.udp_up(),
    })
}

fn flag_out(f: &FlagState, phys: &Physics, now: Instant) -> FlagOut {
    FlagOut {
        index: f.index,
        abbv: f.abbv(),
        status: f.info.status.name(),
        owner: (f.info.owner != 255 && f.info.status == FlagStatus::OnTank).then_some(f.info.owner),
        team_flag: f.abbv().is_team_flag(),
        pos: v3(f.position_at(now, phys.gravity)),
    }
}

/// The flags that exist, by index.
fn flags_sorted(game: &Game) -> Vec<&FlagState> {
    let mut flags: Vec<&FlagState> = game.flags.values().filter(|f| f.info.status != FlagStatus::NoExist).collect();
    flags.sort_unstable_by_key(|f| f.index);
    flags
}

/// The teams (observers left out) that pass `keep`.
fn teams_of(game: &Game, keep: impl Fn(u16, u16, u16) -> bool) -> Vec<TeamOut> {
    game.teams
        .iter()
        .flatten()
        .filter(|t| t.team != Team::Observer && keep(t.size, t.wins, t.losses))
        .map(|t| TeamOut {
            team: t.team.name(),
            size: t.size,
            wins: t.wins,
            losses: t.losses,
            score: i32::from(t.wins) - i32::from(t.losses),
        })
        .collect()
}

fn callsign_sig(p: &Player) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one(p.callsign.as_str())
}

/// A `state` event of the stream. Before the observer is in the game only `server`, `t`, `full` and an empty
/// `players`; then everything in [`Live`].
#[derive(Serialize)]
struct StateOut<'a> {
    server: usize,
    t: f64,
    full: bool,
    players: Vec<PlayerOut<'a>>,
    #[serde(flatten)]
    live: Option<Live<'a>>,
}

#[derive(Serialize)]
struct Live<'a> {
    status: &'static str,
    since_ms: Option<f64>,
    event_ms: Option<f64>,
    wall_ms: u64,
    time_left: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gone: Option<Vec<u8>>,
    flags: Vec<FlagOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    flags_gone: Option<Vec<u16>>,
    shots: ShotsOut<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    teams: Option<Vec<TeamOut>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    net: Option<NetOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    link: Option<Option<Link>>,
}

#[derive(Serialize)]
struct ShotsOut<'a> {
    new: Vec<ShotOut<'a>>,
    gone: Vec<ShotKey>,
}

/// Appends `v` as JSON (it cannot fail: every value written here serializes).
pub(super) fn json<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    let _ = serde_json::to_writer(&mut *out, v);
}

impl WebView {
    /// Appends the `state` event of server `si` (`event: state`, `id:`, one `data:` line: JSON has no raw line
    /// breaks) to `out`. With `full`, everything (for a viewer that just connected), and what was sent is marked as
    /// known to some viewers only; else only what changed since the last push: the players whose last update,
    /// status, flag or score changed (the page extrapolates the others from their velocity and angular velocity),
    /// those gone, new and gone shots (guided missiles every time: they turn), changed flags (flying ones every
    /// time), the teams when they changed, and every player's network figures once per
    /// [`super::NET_INTERVAL`].
    pub(super) fn write_state(&mut self, reactor: &Reactor, si: usize, now: Instant, full: bool, out: &mut Vec<u8>) {
        self.follow(reactor, si, now);
        self.seq += 1;
        out.extend_from_slice(format!("event: state\nid: {}\ndata: ", self.seq).as_bytes());
        let wall = now;
        let now = self.game_now(now);
        let t = round3(now.saturating_duration_since(self.epoch).as_secs_f32());
        let s = &mut self.servers[si];
        let game = super::session_of(&self.replay, reactor, s.session).map(|x| (x, x.game()));
        let (Some((session, game)), Some(phys)) = (game, s.scene.physics().cloned()) else {
            json(out, &StateOut { server: si, t, full: true, players: Vec::new(), live: None });
            out.extend_from_slice(b"\n\n");
            return;
        };
        let since_ms = s.dirty_since.map(|d| round3(now.saturating_duration_since(d).as_secs_f32() * 1000.0));
        let event_ms = s.urgent_since.map(|d| round3(now.saturating_duration_since(d).as_secs_f32() * 1000.0));
        let wall_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0));

        let (ids, players, gone) = players_of(s, game, full);
        let (flags, flags_gone) = flags_of(s, game, &phys, now, full);
        // Teams when they changed; network figures once a second.
        let teams = teams_of(game, |size, wins, losses| size > 0 || wins > 0 || losses > 0);
        let teams = (full || s.sent_teams.as_ref() != Some(&teams)).then(|| {
            if !full {
                s.sent_teams = Some(teams.clone());
            }
            teams
        });
        let send_net = full || s.last_net.is_none_or(|t| wall >= t + super::NET_INTERVAL);
        if send_net && !full {
            s.last_net = Some(wall);
        }
        let shots = shots_of(&s.scene, &mut s.sent_shots, &phys, now, full);
        let state = StateOut {
            server: si,
            t,
            full,
            players,
            live: Some(Live {
                status: s.status.name(),
                since_ms,
                event_ms,
                wall_ms,
                time_left: game.seconds_left(now).map(round2),
                gone,
                flags,
                flags_gone,
                shots,
                teams,
                net: send_net.then_some(NetOut { net: session.net_stats(), ids: &ids, game, now }),
                link: send_net.then(|| link(session, now)),
            }),
        };
        json(out, &state);
        out.extend_from_slice(b"\n\n");
    }

    /// `GET /api/state?server=N`: one server's game at `now`, positions dead-reckoned to it.
    pub(super) fn api_state_out<'a>(&'a mut self, reactor: &'a Reactor, si: usize, now: Instant) -> ApiState<'a> {
        self.follow(reactor, si, now);
        let now = self.game_now(now);
        let s = &self.servers[si];
        let mut out = ApiState {
            v: 1,
            server: si,
            address: s.address.clone(),
            status: s.status.name(),
            world: WorldRef { hash: s.world_hash.as_deref(), size: s.world.as_ref().map(|w| w.world_size) },
            time: round3(now.saturating_duration_since(self.epoch).as_secs_f32()),
            time_left: None,
            teams: Vec::new(),
            players: Vec::new(),
            flags: Vec::new(),
            shots: Vec::new(),
            link: None,
        };
        let Some(session) = super::session_of(&self.replay, reactor, s.session) else { return out };
        let game = session.game();
        let Some(phys) = s.scene.physics() else { return out };
        let net = session.net_stats();
        out.time_left = game.seconds_left(now).map(round2);
        out.teams = teams_of(game, |_, _, _| true);
        let mut players: Vec<&Player> = game.players.values().collect();
        players.sort_by_key(|p| p.id);
        out.players = players
            .into_iter()
            .map(|p| ApiPlayer { player: PlayerOut::of(game, p, s.scene.tank(p.id)), net: net.player(p.id, now) })
            .collect();
        out.flags = flags_sorted(game).iter().map(|f| flag_out(f, phys, now)).collect();
        out.link = Some(link(session, now));
        out.shots = shots_now(&s.scene, now);
        out
    }
}

fn shots_now(scene: &Scene, now: Instant) -> Vec<ApiShot> {
    scene
        .shots_at(now)
        .map(|x| ApiShot {
            shooter: x.shot.shooter,
            id: x.shot.shot_id,
            team: x.shot.team.name(),
            flag: x.shot.flag,
            pos: v3(x.pos.to_array()),
            vel: v3(x.vel.to_array()),
        })
        .collect()
}

/// The `players` of a state: every player for a `full` one, else those whose [`PlayerSig`] changed (the page
/// extrapolates the others), and the ids of those `gone`. Also the ids of the players in the game, sorted.
fn players_of<'a>(s: &mut ServerView, game: &'a Game, full: bool) -> (Vec<u8>, Vec<PlayerOut<'a>>, Option<Vec<u8>>) {
    let mut ids: Vec<u8> = game.players.keys().copied().collect();
    ids.sort_unstable();
    let mut out = Vec::new();
    for id in &ids {
        let Some(p) = game.players.get(id) else { continue };
        let player = PlayerOut::of(game, p, s.scene.tank(p.id));
        let sig = PlayerSig {
            update: p.last_update.map(|u| u.1),
            alive: p.alive,
            paused: p.paused,
            nr: player.nr,
            team: p.team,
            flag: player.flag,
            score: player.score,
            callsign: callsign_sig(p),
        };
        let known = s.sent_players.get(&p.id);
        if !full && known.is_some_and(|k| k.as_ref() == Some(&sig)) {
            continue;
        }
        if full {
            // This viewer has it; the others may not: send it to everyone next time.
            s.sent_players.entry(p.id).or_insert(None);
        } else {
            s.sent_players.insert(p.id, Some(sig));
        }
        out.push(player);
    }
    let mut gone = None;
    if !full {
        let ids: Vec<u8> = s.sent_players.keys().filter(|id| !game.players.contains_key(id)).copied().collect();
        if !ids.is_empty() {
            s.sent_players.retain(|id, _| game.players.contains_key(id));
            gone = Some(ids);
        }
    }
    (ids, out, gone)
}

/// The `flags` of a state: every flag for a `full` one, else those that changed (flying ones every time), and
/// the indexes of those gone (`flags_gone`).
fn flags_of(
    s: &mut ServerView,
    game: &Game,
    phys: &Physics,
    now: Instant,
    full: bool,
) -> (Vec<FlagOut>, Option<Vec<u16>>) {
    let mut out = Vec::new();
    let flags = flags_sorted(game);
    for f in &flags {
        let fo = flag_out(f, phys, now);
        let known = s.sent_flags.get(&f.index);
        if !full && known.is_some_and(|k| k.as_ref() == Some(&fo)) {
            continue;
        }
        if full {
            s.sent_flags.entry(f.index).or_insert(None);
        } else {
            s.sent_flags.insert(f.index, Some(fo.clone()));
        }
        out.push(fo);
    }
    let mut gone = None;
    if !full && s.sent_flags.len() > flags.len() {
        let ids: Vec<u16> =
            s.sent_flags.keys().filter(|i| flags.binary_search_by_key(i, |f| &f.index).is_err()).copied().collect();
        s.sent_flags.retain(|i, _| !ids.contains(i));
        if !ids.is_empty() {
            gone = Some(ids);
        }
    }
    (out, gone)
}

/// The `shots` of a state: new ones with their whole path, guided missiles every time (they turn), and those that
/// ended early (`gone`).
fn shots_of<'a>(
    scene: &'a Scene,
    sent: &mut HashMap<(u8, u16), bool>,
    phys: &'a Physics,
    now: Instant,
    full: bool,
) -> ShotsOut<'a> {
    let tracker = scene.shots();
    let mut new = Vec::new();
    for x in tracker.iter() {
        let k = (x.shooter, x.shot_id);
        let gm = x.kind == ShotKind::GuidedMissile;
        if !full && !gm && sent.get(&k) == Some(&true) {
            continue;
        }
        new.push(ShotOut { shot: x, now, phys });
        if full {
            sent.entry(k).or_insert(false);
        } else {
            sent.insert(k, true);
        }
    }
    let mut gone = Vec::new();
    if !full {
        sent.retain(|&(a, b), _| {
            if tracker.get(a, b).is_some() {
                return true;
            }
            gone.push(ShotKey(a, b));
            false
        });
    }
    ShotsOut { new, gone }
}

/// Forget what the viewers were sent (a new world, or nobody watching): the next state sends everything again.
pub(super) fn forget_sent(s: &mut ServerView) {
    s.sent_players.clear();
    s.sent_flags.clear();
    s.sent_shots.clear();
    s.sent_teams = None;
    s.last_net = None;
}

/// A line of the kill and chat feed.
#[derive(Debug, Clone, Serialize)]
pub(super) struct FeedItem {
    pub(super) server: usize,
    pub(super) t: f64,
    pub(super) kind: &'static str,
    pub(super) text: String,
}

/// A `status` event.
#[derive(Serialize)]
pub(super) struct StatusOut {
    pub(super) server: usize,
    pub(super) status: &'static str,
}

/// `GET /api/servers`.
#[derive(Serialize)]
pub(super) struct ServersOut<'a> {
    pub(super) v: u8,
    pub(super) servers: Vec<ServerOut<'a>>,
}

#[derive(Serialize)]
pub(super) struct ServerOut<'a> {
    pub(super) index: usize,
    pub(super) label: &'a str,
    pub(super) address: String,
    pub(super) status: &'static str,
    pub(super) world: Option<&'a str>,
}

/// The `hello` event: the server, its status and world.
#[derive(Serialize)]
pub(super) struct HelloOut<'a> {
    pub(super) server: usize,
    pub(super) label: &'a str,
    pub(super) address: String,
    pub(super) status: &'static str,
    pub(super) world: Option<HelloWorld<'a>>,
    pub(super) push_ms: u64,
    /// A replay's state (`bzhead replay FILE --web`); absent for a live observer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) replay: Option<super::replay::ReplayOut>,
}

#[derive(Serialize)]
pub(super) struct HelloWorld<'a> {
    pub(super) hash: Option<&'a str>,
    pub(super) size: f32,
    pub(super) links: &'a [[f64; 4]],
    pub(super) bases: Vec<BaseOut>,
    pub(super) water: Option<f32>,
}

#[derive(Serialize)]
pub(super) struct BaseOut {
    pub(super) team: &'static str,
    pub(super) pos: [f64; 2],
    pub(super) size: [f64; 2],
    pub(super) angle: f64,
}

impl Status {
    pub(super) fn name(self) -> &'static str {
        match self {
            Status::Connecting => "connecting",
            Status::Joined => "joined",
            Status::Reconnecting => "reconnecting",
            Status::Closed => "closed",
        }
    }
}
