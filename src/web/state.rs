//! The `state` events of the stream, written with `serde` straight into one buffer per push (no `serde_json::Value`
//! trees), once for every viewer of a server.
//!
//! A full `state` holds everything; the others only what changed since the last push (see
//! [`WebView::write_state`]). What the viewers were sent is kept as plain values ([`PlayerSig`], [`FlagOut`],
//! [`TeamOut`]) compared field by field, not hashed.

use std::time::Instant;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use super::{pose_of, round2, round3, v3, ServerView, WebView};
use crate::bzflag::consts::{FlagStatus, Team};
use crate::bzflag::game::{FlagState, Game, Player};
use crate::bzflag::msg::Abbv;
use crate::bzflag::play::{LiveShot, Physics, ShotKind};
use crate::reactor::{Reactor, SessionId};

/// What decides whether a player is sent again: a new update, its status, flag, score or name.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct PlayerSig {
    update: Option<Instant>,
    alive: bool,
    paused: bool,
    nr: bool,
    team: Team,
    flag: Option<Abbv>,
    score: (u16, u16, u16),
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
    score: i32,
}

#[derive(Serialize)]
struct PlayerOut<'a> {
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
    az: f64,
    av: f64,
    flag: Option<Abbv>,
    wins: u16,
    losses: u16,
    tks: u16,
}

/// A shot with its whole path: `segs` are `[t0, t1, x, y, vx, vy]` in shot time. A guided missile has one segment
/// from its current pose, and `gm`: `[x, y, z, azimuth, elevation, target, turn rate (rad/s), speed, time flown]`,
/// for the page to fly it on, turning towards its target, until the next state.
pub(super) struct ShotOut<'a> {
    pub(super) shot: &'a LiveShot,
    pub(super) now: Instant,
    pub(super) phys: &'a Physics,
}

impl Serialize for ShotOut<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let x = self.shot;
        let age = round3(x.age(self.now));
        let mut m = ser.serialize_map(None)?;
        m.serialize_entry("key", &ShotKey(x.shooter, x.shot_id))?;
        m.serialize_entry("shooter", &x.shooter)?;
        m.serialize_entry("team", x.team.name())?;
        m.serialize_entry("flag", &x.flag)?;
        m.serialize_entry("age", &age)?;
        m.serialize_entry("life", &round3(x.lifetime))?;
        match (x.kind, x.missile.as_ref()) {
            (ShotKind::GuidedMissile, Some(g)) => {
                let speed = x.velocity.length();
                let vel = g.direction() * speed;
                let t = round3(g.time);
                let seg = [t, round3(x.lifetime), round2(g.pos.x), round2(g.pos.y), round2(vel.x), round2(vel.y)];
                m.serialize_entry("segs", &[seg])?;
                let gm = [
                    round2(g.pos.x),
                    round2(g.pos.y),
                    round2(g.pos.z),
                    round3(g.azimuth),
                    round3(g.elevation),
                    f64::from(g.target),
                    round3(self.phys.gm_turn_angle),
                    round2(speed),
                    t,
                ];
                m.serialize_entry("gm", &gm)?;
                m.serialize_entry("expired", &g.expired)?;
            }
            _ => m.serialize_entry("segs", &Segs(x))?,
        }
        if x.kind == ShotKind::ShockWave {
            let p = self.phys;
            let sw = [round2(x.start.x), round2(x.start.y), round2(p.shock_in_radius), round2(p.shock_out_radius)];
            m.serialize_entry("sw", &sw)?;
        }
        m.end()
    }
}

struct Segs<'a>(&'a LiveShot);

impl Serialize for Segs<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let segs = &self.0.segments[..self.0.segments.len().min(100)];
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
    reactor: &'a Reactor,
    sid: SessionId,
    ids: &'a [u8],
    game: &'a Game,
    now: Instant,
}

impl Serialize for NetOut<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let net = self.reactor.net_stats(self.sid);
        let mut m = ser.serialize_map(None)?;
        for id in self.ids {
            if self.game.players.get(id).is_none_or(|p| p.team == Team::Observer) {
                continue;
            }
            m.serialize_entry(&id.to_string(), &net.and_then(|n| n.player(*id, self.now)))?;
        }
        m.end()
    }
}

#[derive(Serialize)]
struct Link {
    lag_ms: Option<f64>,
    command_rtt_ms: Option<f64>,
    udp: bool,
}

fn link(reactor: &Reactor, sid: SessionId, now: Instant) -> Option<Link> {
    let session = reactor.session(sid)?;
    let net = session.net_stats();
    Some(Link {
        lag_ms: net.own_lag_ms(now).map(round2),
        command_rtt_ms: net.command_rtt_ms(now).map(|v| (v * 100.0).round() / 100.0),
        udp: session.udp_up(),
    })
}

pub(super) fn flag_out(f: &FlagState, phys: &Physics, now: Instant) -> FlagOut {
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
pub(super) fn flags_sorted(game: &Game) -> Vec<&FlagState> {
    let mut flags: Vec<&FlagState> = game.flags.values().filter(|f| f.info.status != FlagStatus::NoExist).collect();
    flags.sort_unstable_by_key(|f| f.index);
    flags
}

fn teams_of(game: &Game) -> Vec<TeamOut> {
    game.teams
        .iter()
        .flatten()
        .filter(|t| t.team != Team::Observer && (t.size > 0 || t.wins > 0 || t.losses > 0))
        .map(|t| TeamOut { team: t.team.name(), size: t.size, score: i32::from(t.wins) - i32::from(t.losses) })
        .collect()
}

fn callsign_sig(p: &Player) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one(p.callsign.as_str())
}

/// Appends `v` as JSON (it cannot fail: every value written here serializes).
fn json<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    let _ = serde_json::to_writer(&mut *out, v);
}

/// Appends `,"key":`.
fn key(out: &mut Vec<u8>, k: &str) {
    out.push(b',');
    json(out, k);
    out.push(b':');
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
        self.follow(reactor, si);
        self.seq += 1;
        out.extend_from_slice(format!("event: state\nid: {}\ndata: ", self.seq).as_bytes());
        let t = round3(now.saturating_duration_since(self.epoch).as_secs_f32());
        let s = &mut self.servers[si];
        let game = s.session.and_then(|sid| reactor.session(sid).map(|x| (sid, x.game())));
        let (Some((sid, game)), Some(phys)) = (game, s.phys.clone()) else {
            out.extend_from_slice(format!(r#"{{"server":{si},"t":{t},"full":true,"players":[]}}"#).as_bytes());
            out.extend_from_slice(b"\n\n");
            return;
        };
        let since_ms = s.dirty_since.map(|d| round3(now.saturating_duration_since(d).as_secs_f32() * 1000.0));
        let event_ms = s.urgent_since.map(|d| round3(now.saturating_duration_since(d).as_secs_f32() * 1000.0));
        let wall_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0));
        out.extend_from_slice(format!(r#"{{"server":{si},"t":{t},"status":"#).as_bytes());
        json(out, s.status.name());
        key(out, "full");
        json(out, &full);
        key(out, "since_ms");
        json(out, &since_ms);
        key(out, "event_ms");
        json(out, &event_ms);
        key(out, "wall_ms");
        json(out, &wall_ms);
        key(out, "time_left");
        json(out, &game.seconds_left(now).map(round2));

        let ids = write_players(s, game, &phys, now, full, out);
        write_flags(s, game, &phys, now, full, out);
        write_shots(s, &phys, now, full, out);

        // Teams when they changed; network figures once a second.
        let teams = teams_of(game);
        if full || s.sent_teams.as_ref() != Some(&teams) {
            key(out, "teams");
            json(out, &teams);
            if !full {
                s.sent_teams = Some(teams);
            }
        }
        let send_net = full || s.last_net.is_none_or(|t| now >= t + super::NET_INTERVAL);
        if send_net {
            key(out, "net");
            json(out, &NetOut { reactor, sid, ids: &ids, game, now });
            key(out, "link");
            json(out, &link(reactor, sid, now));
            if !full {
                s.last_net = Some(now);
            }
        }
        out.extend_from_slice(b"}\n\n");
    }
}

/// The `players` of a state: every player for a `full` one, else those whose [`PlayerSig`] changed (the page
/// extrapolates the others), then the ids of those `gone`. Returns the ids of the players in the game, sorted.
fn write_players(
    s: &mut ServerView,
    game: &Game,
    phys: &Physics,
    now: Instant,
    full: bool,
    out: &mut Vec<u8>,
) -> Vec<u8> {
    let mut ids: Vec<u8> = game.players.keys().copied().collect();
    ids.sort_unstable();
    key(out, "players");
    out.push(b'[');
    let mut first = true;
    for id in &ids {
        let Some(p) = game.players.get(id) else { continue };
        let flag = p.flag.and_then(|i| game.flags.get(&i)).map(|f| f.abbv());
        let nr =
            s.remotes.get(&p.id).is_some_and(|r| r.at(now, phys.gravity, 0.0, phys.not_responding_time).not_responding);
        let sig = PlayerSig {
            update: p.last_update.map(|u| u.1),
            alive: p.alive,
            paused: p.paused,
            nr,
            team: p.team,
            flag,
            score: (p.wins, p.losses, p.team_kills),
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
        let (pos, vel, az, av) = pose_of(game, phys, p, &s.remotes, now);
        if !first {
            out.push(b',');
        }
        first = false;
        json(
            out,
            &PlayerOut {
                id: p.id,
                callsign: &p.callsign,
                team: p.team.name(),
                kind: p.player_type.name(),
                alive: p.alive,
                paused: p.paused,
                nr,
                pos,
                vel,
                az,
                av,
                flag,
                wins: p.wins,
                losses: p.losses,
                tks: p.team_kills,
            },
        );
    }
    out.push(b']');
    if !full {
        let gone: Vec<u8> = s.sent_players.keys().filter(|id| !game.players.contains_key(id)).copied().collect();
        if !gone.is_empty() {
            s.sent_players.retain(|id, _| game.players.contains_key(id));
            key(out, "gone");
            json(out, &gone);
        }
    }
    ids
}

/// The `flags` of a state: every flag for a `full` one, else those that changed (flying ones every time), then
/// the indexes of those gone (`flags_gone`).
fn write_flags(s: &mut ServerView, game: &Game, phys: &Physics, now: Instant, full: bool, out: &mut Vec<u8>) {
    key(out, "flags");
    out.push(b'[');
    let mut first = true;
    let flags = flags_sorted(game);
    for f in &flags {
        let fo = flag_out(f, phys, now);
        let known = s.sent_flags.get(&f.index);
        if !full && known.is_some_and(|k| k.as_ref() == Some(&fo)) {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        json(out, &fo);
        if full {
            s.sent_flags.entry(f.index).or_insert(None);
        } else {
            s.sent_flags.insert(f.index, Some(fo));
        }
    }
    out.push(b']');
    if !full && s.sent_flags.len() > flags.len() {
        let gone: Vec<u16> =
            s.sent_flags.keys().filter(|i| flags.binary_search_by_key(i, |f| &f.index).is_err()).copied().collect();
        s.sent_flags.retain(|i, _| !gone.contains(i));
        if !gone.is_empty() {
            key(out, "flags_gone");
            json(out, &gone);
        }
    }
}

/// The `shots` of a state: new ones with their whole path, guided missiles every time (they turn), and those that
/// ended early (`gone`).
fn write_shots(s: &mut ServerView, phys: &Physics, now: Instant, full: bool, out: &mut Vec<u8>) {
    key(out, "shots");
    out.extend_from_slice(br#"{"new":["#);
    let mut first = true;
    for x in s.tracker.iter() {
        let k = (x.shooter, x.shot_id);
        let gm = x.kind == ShotKind::GuidedMissile;
        if !full && !gm && s.sent_shots.get(&k) == Some(&true) {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        json(out, &ShotOut { shot: x, now, phys });
        if full {
            s.sent_shots.entry(k).or_insert(false);
        } else {
            s.sent_shots.insert(k, true);
        }
    }
    out.extend_from_slice(br#"],"gone":["#);
    if !full {
        let mut first = true;
        let tracker = &s.tracker;
        s.sent_shots.retain(|&(a, b), _| {
            if tracker.get(a, b).is_some() {
                return true;
            }
            if !first {
                out.push(b',');
            }
            first = false;
            json(out, &ShotKey(a, b));
            false
        });
    }
    out.extend_from_slice(b"]}");
}

/// Forget what the viewers were sent (a new world, or nobody watching): the next state sends everything again.
pub(super) fn forget_sent(s: &mut ServerView) {
    s.sent_players.clear();
    s.sent_flags.clear();
    s.sent_shots.clear();
    s.sent_teams = None;
    s.last_net = None;
}
