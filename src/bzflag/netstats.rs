//! Per-player network diagnostics, as a sans-IO tracker fed by the session for every player update it receives.
//!
//! For each player [`NetStats`] keeps, in bounded memory:
//!
//! * **updates per second**: arrivals within the last [`RATE_WINDOW`] (at most [`MAX_ARRIVALS`] kept);
//! * **jitter**: for two updates in a row (in `order`, less than 2 s apart by the sender's clock), how much the
//!   gap between their arrivals differs from the gap between their timestamps, `|Δarrival − Δtimestamp|`, the
//!   sample `bzfs` smooths into its own jitter figure (`LagInfo::updateLag`); here the mean of the last
//!   [`JITTER_WINDOW`] samples;
//! * **dead-reckoning error**: where the tank's previous update, dead-reckoned with the engine's own
//!   [`Reckoning`] to the time of the next update (by the sender's clock: the timestamps' difference), puts it,
//!   against where that next update says it is, in world units (3-D distance). Median, p95 and max of the last
//!   [`DR_WINDOW`] samples. Samples across a death, a spawn, a pause, a teleport or a physics driver are not
//!   taken; a Wings carrier falls under `_wingsGravity`;
//! * **out-of-order** updates (an `order` not above the last one: the official client drops them) and
//!   **missing** ones (gaps in `order`; an update that comes late counts in both);
//! * **time since the last update**;
//! * **lag** where the server reveals it: the reply to `/lagstats` (`CALLSIGN : LAG +- JITTERms [N% lost/ooo]`,
//!   one line per human player, observers included), which [`NetStats::on_server_text`] parses.
//!
//! A player is **flagged** ([`PlayerNet::flagged`]) when a figure is far past what the server tolerates:
//!
//! * its dead-reckoning p95 over more than [`WARP_FACTOR`] × `_positionTolerance` (the error past which every
//!   client must send an update, so an honest client's error at its next update stays near it);
//! * its jitter over [`JITTER_LIMIT_MS`] (bzfs' own `-jitterwarn` limit is a server option a client cannot read;
//!   this is a fixed, documented stand-in, [`NetStats::set_jitter_limit_ms`]);
//! * alive and silent for more than `_notRespondingTime` (the client's "not responding" limit).
//!
//! Nothing here reads the clock: every input carries its `now`.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::consts::PlayerStatus;
use super::msg::PlayerUpdate;
use super::play::reckon::{sane, sane3, Reckoning};
use super::vars::VarStore;

/// Arrivals older than this do not count in `updates_per_s`.
pub const RATE_WINDOW: Duration = Duration::from_secs(10);
/// Most arrival times kept per player (the rate of a faster sender is computed over the span they cover).
pub const MAX_ARRIVALS: usize = 512;
/// Dead-reckoning error samples kept per player (quantiles are over these).
pub const DR_WINDOW: usize = 256;
/// Jitter samples kept per player.
pub const JITTER_WINDOW: usize = 64;
/// A dead-reckoning p95 above this many times the honest bound ([`NetStats::honest_bound`]) flags a player.
pub const WARP_FACTOR: f32 = 2.0;
/// The largest change of speed in one step, in `_tankSpeed`s: from full speed forward to full reverse (half
/// speed).
pub const MAX_SPEED_CHANGE: f32 = 1.5;
/// Default jitter above which a player is flagged (ms).
pub const JITTER_LIMIT_MS: f32 = 250.0;
/// Samples needed before the error or the jitter can flag a player.
pub const MIN_SAMPLES: usize = 8;
/// A sender-clock gap above this (s) is not used for jitter (as in bzfs) nor trusted for dead reckoning (the
/// arrival gap is used instead).
pub const MAX_TIMESTAMP_GAP: f32 = 2.0;
/// How long a `/lagstats` figure stays valid.
pub const LAG_MAX_AGE: Duration = Duration::from_secs(60);

/// Quantiles of the dead-reckoning error (world units); `null` before the first sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct DrError {
    /// Median.
    pub p50: Option<f64>,
    /// 95th percentile.
    pub p95: Option<f64>,
    /// Largest in the window.
    pub max: Option<f64>,
    /// Samples in the window.
    pub samples: usize,
}

/// One player's figures at a time (see the module documentation). Serializes to
/// `{"updates_per_s","jitter_ms","dr_error":{"p50","p95","max","samples"},"lag_ms",...}` (the id is left out:
/// it is the key the figures are shown under).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlayerNet {
    /// Player id.
    #[serde(skip_serializing)]
    pub id: u8,
    /// Updates received in the last [`RATE_WINDOW`], per second.
    pub updates_per_s: f64,
    /// Mean arrival jitter (ms); `null` before two updates in a row.
    pub jitter_ms: Option<f64>,
    /// Dead-reckoning error.
    pub dr_error: DrError,
    /// Lag as the server measures it (`/lagstats`, ms), when known and recent.
    pub lag_ms: Option<f64>,
    /// The server's jitter figure from `/lagstats` (ms; bzfs prints none for observers).
    pub server_jitter_ms: Option<f64>,
    /// The server's "lost/ooo" percentage from `/lagstats` (0 when it printed none).
    pub server_loss_pct: Option<f64>,
    /// Updates received in all.
    pub updates: u64,
    /// Updates that came with an `order` not above the last one.
    pub out_of_order: u64,
    /// Gaps in `order`.
    pub missing: u64,
    /// Milliseconds since the last update (`null` before the first).
    pub since_last_ms: Option<u64>,
    /// Why the player is flagged, in words (`null` when not).
    pub flagged: Option<String>,
}

/// The last in-order update of a player.
#[derive(Debug, Clone, Copy)]
struct Last {
    reckoning: Reckoning,
    order: i32,
    timestamp: f32,
    arrival: Instant,
    status: PlayerStatus,
    /// No dead-reckoning sample may be taken from this update (a teleport or spawn came after it).
    broken: bool,
}

#[derive(Debug, Clone)]
struct Track {
    last: Option<Last>,
    last_arrival: Option<Instant>,
    arrivals: VecDeque<Instant>,
    dr: VecDeque<f32>,
    jitter: VecDeque<f32>,
    updates: u64,
    out_of_order: u64,
    missing: u64,
    lag: Option<LagLine>,
    /// Carries Wings (falls under `_wingsGravity`).
    wings: bool,
}

impl Track {
    fn new() -> Track {
        Track {
            last: None,
            last_arrival: None,
            arrivals: VecDeque::new(),
            dr: VecDeque::new(),
            jitter: VecDeque::new(),
            updates: 0,
            out_of_order: 0,
            missing: 0,
            lag: None,
            wings: false,
        }
    }
}

fn push_bounded<T>(q: &mut VecDeque<T>, v: T, cap: usize) {
    if q.len() >= cap {
        q.pop_front();
    }
    q.push_back(v);
}

/// One line of a `/lagstats` reply.
#[derive(Debug, Clone, PartialEq)]
pub struct LagLine {
    /// Callsign as printed.
    pub callsign: String,
    /// Lag (ms).
    pub lag_ms: f32,
    /// Jitter (ms); bzfs prints none for observers.
    pub jitter_ms: Option<f32>,
    /// Lost or out-of-order percentage (0 when not printed).
    pub loss_pct: f32,
    /// When it arrived.
    pub at: Instant,
}

/// Parses one `/lagstats` reply line: `CALLSIGN : LAG +- JITTERms[ N% lost/ooo][ (R)]` for a player,
/// `CALLSIGN : LAGms` for an observer. `None` when the text is not such a line.
pub fn parse_lagstats_line(text: &str, at: Instant) -> Option<LagLine> {
    let text = text.trim_end();
    let text = text.strip_suffix(" (R)").unwrap_or(text).trim_end();
    // The callsign may itself hold " : "; the figures follow the last one.
    let (name, rest) = text.rsplit_once(" : ")?;
    let rest = rest.trim();
    let (lag_ms, jitter_ms, tail): (f32, Option<f32>, &str) = match rest.split_once("+-") {
        Some((lag, rest)) => {
            let rest = rest.trim_start();
            let ms_at = rest.find("ms")?;
            let jitter: f32 = rest.get(..ms_at)?.trim().parse().ok()?;
            (lag.trim().parse().ok()?, Some(jitter), rest.get(ms_at + 2..)?.trim())
        }
        None => {
            let ms_at = rest.find("ms")?;
            (rest.get(..ms_at)?.trim().parse().ok()?, None, rest.get(ms_at + 2..)?.trim())
        }
    };
    let loss_pct: f32 = if tail.is_empty() {
        0.0
    } else {
        let pct = tail.strip_suffix("lost/ooo")?.trim().strip_suffix('%')?;
        pct.trim().parse().ok()?
    };
    let name = name.trim_end();
    if name.trim().is_empty() || !lag_ms.is_finite() || !jitter_ms.is_none_or(f32::is_finite) || !loss_pct.is_finite() {
        return None;
    }
    Some(LagLine { callsign: name.trim_start().to_string(), lag_ms, jitter_ms, loss_pct, at })
}

/// The tracker. See the module documentation.
#[derive(Debug, Clone)]
pub struct NetStats {
    players: HashMap<u8, Track>,
    gravity: f32,
    wings_gravity: f32,
    position_tolerance: f32,
    tank_speed: f32,
    throttle_rate: f32,
    not_responding_time: f32,
    burrow_depth: f32,
    jitter_limit_ms: f32,
    /// Our own line of the last `/lagstats` reply.
    own_lag: Option<LagLine>,
    /// The last round trip of a `/lagstats` request to its first reply line, and when it was measured.
    command_rtt: Option<(Duration, Instant)>,
}

impl Default for NetStats {
    fn default() -> Self {
        NetStats::new()
    }
}

impl NetStats {
    /// An empty tracker with the default server variables.
    pub fn new() -> NetStats {
        NetStats {
            players: HashMap::new(),
            gravity: -9.8,
            wings_gravity: -9.8,
            position_tolerance: 0.09,
            tank_speed: 25.0,
            throttle_rate: 30.0,
            not_responding_time: 5.0,
            burrow_depth: -1.32,
            jitter_limit_ms: JITTER_LIMIT_MS,
            own_lag: None,
            command_rtt: None,
        }
    }

    /// Reads the variables the figures depend on (`_gravity`, `_positionTolerance`, `_tankSpeed`,
    /// `_updateThrottleRate`, `_notRespondingTime`, `_burrowDepth`); call it when they change.
    pub fn set_vars(&mut self, vars: &VarStore) {
        self.gravity = sane(vars.get_f32("_gravity", -9.8));
        self.wings_gravity = sane(vars.get_f32("_wingsGravity", self.gravity));
        self.position_tolerance = sane(vars.get_f32("_positionTolerance", 0.09)).max(0.0);
        self.tank_speed = sane(vars.get_f32("_tankSpeed", 25.0)).abs();
        self.throttle_rate = sane(vars.get_f32("_updateThrottleRate", 30.0)).max(0.0);
        self.not_responding_time = sane(vars.get_f32("_notRespondingTime", 5.0)).max(0.0);
        self.burrow_depth = sane(vars.get_f32("_burrowDepth", -1.32)).min(0.0);
    }

    /// Changes the jitter above which a player is flagged (ms).
    pub fn set_jitter_limit_ms(&mut self, ms: f32) {
        if ms.is_finite() && ms > 0.0 {
            self.jitter_limit_ms = ms;
        }
    }

    /// `_positionTolerance` as last read.
    pub fn position_tolerance(&self) -> f32 {
        self.position_tolerance
    }

    /// The largest dead-reckoning error an honest client shows at its next update (world units): it sends as
    /// soon as the prediction is off by `_positionTolerance` on any axis (√3 × it in 3-D), but it may only
    /// notice that a step later, and it sends at most `_updateThrottleRate` a second, so the error can grow by
    /// one such step of the largest change of speed ([`MAX_SPEED_CHANGE`] × `_tankSpeed`) on top.
    pub fn honest_bound(&self) -> f32 {
        let step = if self.throttle_rate > 0.0 { 1.0 / self.throttle_rate.max(1.0) } else { 1.0 / 30.0 };
        3f32.sqrt() * self.position_tolerance + MAX_SPEED_CHANGE * self.tank_speed * step
    }

    /// The dead-reckoning p95 above which a player is flagged as warping: [`WARP_FACTOR`] × the honest bound.
    pub fn warp_limit(&self) -> f32 {
        WARP_FACTOR * self.honest_bound()
    }

    /// A player joined (or an id was reused): start afresh.
    pub fn on_join(&mut self, id: u8) {
        self.players.insert(id, Track::new());
    }

    /// A player left.
    pub fn on_leave(&mut self, id: u8) {
        self.players.remove(&id);
    }

    /// A player spawned: the next update starts a new line of motion.
    pub fn on_spawn(&mut self, id: u8) {
        self.break_motion(id);
    }

    /// A player's flag changed (`None`: no flag): a Wings carrier falls under `_wingsGravity`.
    pub fn on_flag(&mut self, id: u8, abbv: Option<&str>) {
        if let Some(t) = self.players.get_mut(&id) {
            t.wings = abbv == Some("WG");
        }
    }

    /// A player went through a teleporter: no error sample across it.
    pub fn on_teleport(&mut self, id: u8) {
        self.break_motion(id);
    }

    fn break_motion(&mut self, id: u8) {
        if let Some(l) = self.players.get_mut(&id).and_then(|t| t.last.as_mut()) {
            l.broken = true;
        }
    }

    /// A player update arrived at `now` (every one, also those the session drops as out of order).
    pub fn on_update(&mut self, now: Instant, u: &PlayerUpdate) {
        let burrow = self.burrow_depth;
        let t = self.players.entry(u.id).or_insert_with(Track::new);
        let gravity = if t.wings { self.wings_gravity } else { self.gravity };
        t.updates += 1;
        push_bounded(&mut t.arrivals, now, MAX_ARRIVALS);
        t.last_arrival = Some(now);
        let timestamp = sane(u.timestamp);
        if let Some(last) = &t.last {
            if u.order <= last.order {
                t.out_of_order += 1;
                return;
            }
            let gap = i64::from(u.order) - i64::from(last.order) - 1;
            t.missing += u64::try_from(gap).unwrap_or(0);
            let arrival_gap = now.saturating_duration_since(last.arrival).as_secs_f32();
            let ts_gap = timestamp - last.timestamp;
            let ts_ok = ts_gap > 0.0 && ts_gap < MAX_TIMESTAMP_GAP;
            if ts_ok {
                push_bounded(&mut t.jitter, (arrival_gap - ts_gap).abs() * 1000.0, JITTER_WINDOW);
            }
            // (On a physics driver the motion depends on the world's drivers, which the tracker does not have.)
            let steady = |s: PlayerStatus| {
                s.contains(PlayerStatus::ALIVE)
                    && !s.intersects(
                        PlayerStatus::PAUSED
                            | PlayerStatus::EXPLODING
                            | PlayerStatus::TELEPORTING
                            | PlayerStatus::ON_DRIVER,
                    )
            };
            if !last.broken && steady(last.status) && steady(u.status) {
                let dt = if ts_ok { ts_gap } else { arrival_gap.min(MAX_TIMESTAMP_GAP) };
                let actual = sane3(u.pos);
                let ground = actual.z.min(0.0).max(burrow);
                let predicted = last.reckoning.at(dt, gravity, ground).pos;
                let err = (predicted - actual).length();
                if err.is_finite() {
                    push_bounded(&mut t.dr, err, DR_WINDOW);
                }
            }
        }
        t.last = Some(Last {
            reckoning: Reckoning::new(u, &[]),
            order: u.order,
            timestamp,
            arrival: now,
            status: u.status,
            broken: false,
        });
    }

    /// A line of server text to us. A `/lagstats` reply line is parsed and kept for the player `id_of` finds by
    /// its callsign (`my_id` is ours); returns true when the text was such a line.
    pub fn on_server_text(
        &mut self,
        now: Instant,
        text: &str,
        my_id: Option<u8>,
        id_of: impl Fn(&str) -> Option<u8>,
    ) -> bool {
        let Some(line) = parse_lagstats_line(text, now) else { return false };
        if let Some(id) = id_of(&line.callsign) {
            if Some(id) == my_id {
                self.own_lag = Some(line.clone());
            }
            self.players.entry(id).or_insert_with(Track::new).lag = Some(line);
        }
        true
    }

    /// Our own link's lag as the server measured it (its `MsgLagPing` round trip, from `/lagstats`), in ms.
    pub fn own_lag_ms(&self, now: Instant) -> Option<f32> {
        self.own_lag.as_ref().filter(|l| now.saturating_duration_since(l.at) <= LAG_MAX_AGE).map(|l| l.lag_ms)
    }

    /// A request sent at `asked` was answered at `now` (the session measures its `/lagstats` this way).
    pub fn on_command_answer(&mut self, asked: Instant, now: Instant) {
        self.command_rtt = Some((now.saturating_duration_since(asked), now));
    }

    /// Our own link as measured by us: the round trip (ms) of the last `/lagstats` request to the first line of
    /// its reply, over TCP (the server's turn included), when measured in the last [`LAG_MAX_AGE`].
    pub fn command_rtt_ms(&self, now: Instant) -> Option<f64> {
        self.command_rtt
            .filter(|(_, at)| now.saturating_duration_since(*at) <= LAG_MAX_AGE)
            .map(|(d, _)| (d.as_secs_f64() * 10_000.0).round() / 10.0)
    }

    /// Ids of every tracked player, ascending.
    pub fn ids(&self) -> Vec<u8> {
        let mut ids: Vec<u8> = self.players.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// One player's figures at `now`.
    pub fn player(&self, id: u8, now: Instant) -> Option<PlayerNet> {
        let t = self.players.get(&id)?;
        let window_start = now.checked_sub(RATE_WINDOW);
        let recent = t.arrivals.iter().filter(|a| window_start.is_none_or(|s| **a >= s) && **a <= now).count();
        let updates_per_s = if recent == 0 {
            0.0
        } else {
            // Over the whole window, or over the span the kept arrivals cover when the cap cut them.
            let span = if t.arrivals.len() >= MAX_ARRIVALS {
                t.arrivals.front().map_or(RATE_WINDOW, |f| now.saturating_duration_since(*f)).min(RATE_WINDOW)
            } else {
                RATE_WINDOW
            };
            recent as f32 / span.as_secs_f32().max(0.001)
        };
        let jitter_ms = (!t.jitter.is_empty()).then(|| t.jitter.iter().sum::<f32>() / t.jitter.len() as f32);
        let dr_error = quantiles(&t.dr);
        let since_last = t.last_arrival.map(|a| now.saturating_duration_since(a));
        let lag = t.lag.as_ref().filter(|l| now.saturating_duration_since(l.at) <= LAG_MAX_AGE);
        let alive = t.last.is_some_and(|l| l.status.contains(PlayerStatus::ALIVE));
        let mut flagged = None;
        if let Some(p95) = dr_error.p95.filter(|_| t.dr.len() >= MIN_SAMPLES) {
            if p95 > f64::from(self.warp_limit()) {
                flagged = Some(format!(
                    "warping: dead-reckoning error p95 {p95:.2} > {:.2} ({WARP_FACTOR} x what _positionTolerance {} \
                     and a throttled step at _tankSpeed {} allow)",
                    self.warp_limit(),
                    self.position_tolerance,
                    self.tank_speed
                ));
            }
        }
        if flagged.is_none() {
            if let Some(j) = jitter_ms.filter(|_| t.jitter.len() >= MIN_SAMPLES) {
                if j > self.jitter_limit_ms {
                    flagged = Some(format!("jitter: {j:.0} ms > {:.0} ms", self.jitter_limit_ms));
                }
            }
        }
        if flagged.is_none() && alive {
            if let Some(s) = since_last.filter(|s| s.as_secs_f32() > self.not_responding_time) {
                flagged = Some(format!(
                    "not responding: no update for {:.1} s > _notRespondingTime {}",
                    s.as_secs_f32(),
                    self.not_responding_time
                ));
            }
        }
        Some(PlayerNet {
            id,
            updates_per_s: round(updates_per_s, 100.0),
            jitter_ms: jitter_ms.map(|j| round(j, 10.0)),
            dr_error,
            lag_ms: lag.map(|l| round(l.lag_ms, 1.0)),
            server_jitter_ms: lag.and_then(|l| l.jitter_ms).map(|j| round(j, 1.0)),
            server_loss_pct: lag.map(|l| round(l.loss_pct, 1.0)),
            updates: t.updates,
            out_of_order: t.out_of_order,
            missing: t.missing,
            since_last_ms: since_last.map(|s| u64::try_from(s.as_millis()).unwrap_or(u64::MAX)),
            flagged,
        })
    }

    /// Every tracked player's figures at `now`, by id.
    pub fn snapshot(&self, now: Instant) -> Vec<PlayerNet> {
        self.ids().into_iter().filter_map(|id| self.player(id, now)).collect()
    }
}

fn round(v: f32, per_unit: f64) -> f64 {
    (f64::from(v) * per_unit).round() / per_unit
}

/// Nearest-rank quantiles of a window (sorted copy: the window is small).
fn quantiles(window: &VecDeque<f32>) -> DrError {
    if window.is_empty() {
        return DrError::default();
    }
    let mut v: Vec<f32> = window.iter().copied().collect();
    v.sort_unstable_by(f32::total_cmp);
    let at = |q: f32| {
        let rank = (q * v.len() as f32).ceil() as usize;
        v.get(rank.saturating_sub(1).min(v.len() - 1)).copied().map(|x| round(x, 1000.0))
    };
    DrError { p50: at(0.5), p95: at(0.95), max: v.last().map(|x| round(*x, 1000.0)), samples: v.len() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(
        id: u8,
        order: i32,
        timestamp: f32,
        pos: [f32; 3],
        vel: [f32; 3],
        azimuth: f32,
        ang_vel: f32,
    ) -> PlayerUpdate {
        PlayerUpdate {
            small: false,
            timestamp,
            id,
            order,
            status: PlayerStatus::ALIVE,
            pos,
            vel,
            azimuth,
            ang_vel,
            jump_jets: 0.0,
            phydrv: -1,
            user_inputs: (0.0, 0.0),
            sounds: 0,
        }
    }

    /// A tank driving at 20 u/s along x, sending every `every` s; `pos_of(k)` may bend the truth.
    fn drive(n: &mut NetStats, t0: Instant, count: i32, every: f32, pos_of: impl Fn(i32, [f32; 3]) -> [f32; 3]) {
        for k in 0..count {
            let ts = 100.0 + k as f32 * every;
            let truth = [k as f32 * every * 20.0, 0.0, 0.0];
            let u = update(3, k + 1, ts, pos_of(k, truth), [20.0, 0.0, 0.0], 0.0, 0.0);
            n.on_update(t0 + Duration::from_millis((k as f32 * every * 1000.0).round() as u64), &u);
        }
    }

    #[test]
    fn an_honest_straight_line_has_no_error_and_is_not_flagged() {
        let t0 = Instant::now();
        let mut n = NetStats::new();
        n.on_join(3);
        drive(&mut n, t0, 50, 0.1, |_, p| p);
        let now = t0 + Duration::from_millis(4950);
        let p = n.player(3, now).unwrap();
        assert_eq!(p.updates, 50);
        assert_eq!(p.dr_error.samples, 49);
        assert!(p.dr_error.max.unwrap() < 1e-3, "{p:?}");
        assert!(p.jitter_ms.unwrap() < 0.5, "{p:?}");
        // 50 arrivals within the last 10 s.
        assert!((p.updates_per_s - 5.0).abs() < 0.01, "{p:?}");
        assert_eq!((p.out_of_order, p.missing), (0, 0));
        assert_eq!(p.since_last_ms, Some(50));
        assert_eq!(p.flagged, None);
    }

    #[test]
    fn an_arc_is_predicted_like_the_engine_does() {
        let t0 = Instant::now();
        let mut n = NetStats::new();
        // Speed 10 along the heading, turning at 1 rad/s: a circle of radius 10 about (0, 10).
        let at = |t: f32| {
            let a = t;
            let pos = [10.0 * a.sin(), 10.0 - 10.0 * a.cos(), 0.0];
            let vel = [10.0 * a.cos(), 10.0 * a.sin(), 0.0];
            update(1, (t * 10.0).round() as i32 + 1, t, pos, vel, a, 1.0)
        };
        for k in 0..30 {
            let t = k as f32 * 0.1;
            n.on_update(t0 + Duration::from_secs_f32(t), &at(t));
        }
        let p = n.player(1, t0 + Duration::from_secs(3)).unwrap();
        assert!(p.dr_error.max.unwrap() < 2e-3, "{p:?}");
    }

    #[test]
    fn a_warping_tank_is_flagged() {
        let t0 = Instant::now();
        let mut n = NetStats::new();
        // Every other update is 5 units off its line of motion.
        drive(&mut n, t0, 40, 0.1, |k, p| if k % 2 == 1 { [p[0], p[1] + 5.0, p[2]] } else { p });
        let p = n.player(3, t0 + Duration::from_secs(4)).unwrap();
        assert!(p.dr_error.p95.unwrap() > 4.9, "{p:?}");
        let why = p.flagged.expect("flagged");
        assert!(why.starts_with("warping"), "{why}");
        // Too few samples flag nothing.
        let mut n = NetStats::new();
        drive(&mut n, t0, MIN_SAMPLES as i32, 0.1, |k, p| if k % 2 == 1 { [p[0], p[1] + 5.0, p[2]] } else { p });
        // Nor does an honest client's worst: 2 units off now and then.
        let mut n = NetStats::new();
        drive(&mut n, t0, 40, 0.1, |k, p| if k % 10 == 5 { [p[0] - 2.0, p[1], p[2]] } else { p });
        assert_eq!(n.player(3, t0 + Duration::from_secs(4)).unwrap().flagged, None);
        assert_eq!(n.player(3, t0 + Duration::from_secs(1)).unwrap().flagged, None);
    }

    #[test]
    fn teleports_spawns_and_deaths_take_no_sample() {
        let t0 = Instant::now();
        let mut n = NetStats::new();
        let u1 = update(2, 1, 10.0, [0.0, 0.0, 0.0], [0.0; 3], 0.0, 0.0);
        n.on_update(t0, &u1);
        n.on_teleport(2);
        let u2 = update(2, 2, 10.1, [100.0, 50.0, 0.0], [0.0; 3], 0.0, 0.0);
        n.on_update(t0 + Duration::from_millis(100), &u2);
        n.on_spawn(2);
        let u3 = update(2, 3, 10.2, [-100.0, 50.0, 0.0], [0.0; 3], 0.0, 0.0);
        n.on_update(t0 + Duration::from_millis(200), &u3);
        let mut dead = update(2, 4, 10.3, [0.0, 0.0, 0.0], [0.0; 3], 0.0, 0.0);
        dead.status = PlayerStatus::EXPLODING;
        n.on_update(t0 + Duration::from_millis(300), &dead);
        let p = n.player(2, t0 + Duration::from_millis(300)).unwrap();
        assert_eq!(p.dr_error.samples, 0, "{p:?}");
        assert_eq!(p.dr_error.p50, None);
        // An untouched next update does count.
        let u5 = update(2, 5, 10.4, [0.0, 0.0, 0.0], [0.0; 3], 0.0, 0.0);
        n.on_update(t0 + Duration::from_millis(400), &u5);
        let mut u6 = u5;
        u6.order = 6;
        u6.timestamp = 10.5;
        u6.pos = [1.0, 0.0, 0.0];
        n.on_update(t0 + Duration::from_millis(500), &u6);
        let p = n.player(2, t0 + Duration::from_millis(500)).unwrap();
        assert_eq!(p.dr_error.samples, 1);
        assert_eq!(p.dr_error.max, Some(1.0));
    }

    #[test]
    fn wings_carriers_fall_under_wings_gravity_and_drivers_take_no_sample() {
        let t0 = Instant::now();
        let mut vars = VarStore::new();
        vars.set("_wingsGravity", "-2");
        let mut n = NetStats::new();
        n.set_vars(&vars);
        n.on_join(6);
        n.on_flag(6, Some("WG"));
        let fall = |order: i32, t: f32| {
            let mut u = update(6, order, t, [0.0, 0.0, 50.0 - t * t], [0.0; 3], 0.0, 0.0);
            u.status = PlayerStatus::ALIVE | PlayerStatus::FALLING;
            u
        };
        n.on_update(t0, &fall(1, 0.0));
        n.on_update(t0 + Duration::from_secs(1), &fall(2, 1.0));
        assert_eq!(n.player(6, t0).unwrap().dr_error.max, Some(0.0));
        n.on_flag(6, None);
        n.on_update(t0 + Duration::from_secs(2), &fall(3, 2.0));
        // Without Wings the prediction falls under -9.8: 4.9 units in the second the update says was 3 (at -2).
        let p = n.player(6, t0).unwrap();
        assert!((p.dr_error.max.unwrap() - 1.9).abs() < 1e-3, "{p:?}");
        let mut on = update(6, 4, 2.1, [0.0; 3], [0.0; 3], 0.0, 0.0);
        on.status = PlayerStatus::ALIVE | PlayerStatus::ON_DRIVER;
        n.on_update(t0 + Duration::from_millis(2100), &on);
        n.on_update(t0 + Duration::from_millis(2200), &update(6, 5, 2.2, [9.0, 0.0, 0.0], [0.0; 3], 0.0, 0.0));
        assert_eq!(n.player(6, t0).unwrap().dr_error.samples, 2);
    }

    #[test]
    fn out_of_order_and_missing_updates_are_counted() {
        let t0 = Instant::now();
        let mut n = NetStats::new();
        for (i, order) in [1, 2, 5, 4, 6, 6, 9].into_iter().enumerate() {
            let u = update(7, order, i as f32 * 0.1, [0.0; 3], [0.0; 3], 0.0, 0.0);
            n.on_update(t0 + Duration::from_millis(100 * i as u64), &u);
        }
        let p = n.player(7, t0 + Duration::from_secs(1)).unwrap();
        // 3 and 4 missing at 5 (4 then comes late), 7 and 8 missing at 9; 4 and the second 6 out of order.
        assert_eq!(p.missing, 4);
        assert_eq!(p.out_of_order, 2);
        assert_eq!(p.updates, 7);
    }

    #[test]
    fn jitter_is_the_arrival_gap_against_the_timestamp_gap() {
        let t0 = Instant::now();
        let mut n = NetStats::new();
        // Sent every 100 ms, received alternately 60 and 140 ms apart: 40 ms each time.
        let mut at = t0;
        for k in 0..21 {
            let u = update(4, k + 1, k as f32 * 0.1, [0.0; 3], [0.0; 3], 0.0, 0.0);
            n.on_update(at, &u);
            at += Duration::from_millis(if k % 2 == 0 { 60 } else { 140 });
        }
        let p = n.player(4, at).unwrap();
        assert!((p.jitter_ms.unwrap() - 40.0).abs() < 0.2, "{p:?}");
        assert_eq!(p.flagged, None);
        n.set_jitter_limit_ms(30.0);
        let why = n.player(4, at).unwrap().flagged.expect("flagged");
        assert!(why.starts_with("jitter"), "{why}");
        // Gaps of 2 s and more by the sender's clock are not jitter samples (as in bzfs).
        let mut n = NetStats::new();
        n.on_update(t0, &update(4, 1, 0.0, [0.0; 3], [0.0; 3], 0.0, 0.0));
        n.on_update(t0 + Duration::from_secs(9), &update(4, 2, 3.0, [0.0; 3], [0.0; 3], 0.0, 0.0));
        assert_eq!(n.player(4, t0 + Duration::from_secs(9)).unwrap().jitter_ms, None);
    }

    #[test]
    fn a_silent_live_tank_is_flagged_after_not_responding_time() {
        let t0 = Instant::now();
        let mut n = NetStats::new();
        n.on_update(t0, &update(5, 1, 0.0, [0.0; 3], [0.0; 3], 0.0, 0.0));
        assert_eq!(n.player(5, t0 + Duration::from_secs(4)).unwrap().flagged, None);
        let p = n.player(5, t0 + Duration::from_secs(6)).unwrap();
        assert!(p.flagged.unwrap().starts_with("not responding"));
        assert_eq!(p.since_last_ms, Some(6000));
        // Its rate decays to 0 once the window is past.
        assert_eq!(n.player(5, t0 + Duration::from_secs(11)).unwrap().updates_per_s, 0.0);
        // A dead one is not.
        let mut n = NetStats::new();
        let mut u = update(5, 1, 0.0, [0.0; 3], [0.0; 3], 0.0, 0.0);
        u.status = PlayerStatus::empty();
        n.on_update(t0, &u);
        assert_eq!(n.player(5, t0 + Duration::from_secs(60)).unwrap().flagged, None);
    }

    #[test]
    fn variables_set_the_tolerances() {
        let mut vars = VarStore::new();
        vars.set("_positionTolerance", "0.5");
        vars.set("_notRespondingTime", "2");
        let mut n = NetStats::new();
        n.set_vars(&vars);
        assert_eq!(n.position_tolerance(), 0.5);
        assert!((n.honest_bound() - (0.5 * 3f32.sqrt() + 1.5 * 25.0 / 30.0)).abs() < 1e-5);
        assert_eq!(n.warp_limit(), 2.0 * n.honest_bound());
        let t0 = Instant::now();
        n.on_update(t0, &update(5, 1, 0.0, [0.0; 3], [0.0; 3], 0.0, 0.0));
        assert!(n.player(5, t0 + Duration::from_secs(3)).unwrap().flagged.is_some());
        // Garbage values keep sane ones.
        vars.set("_positionTolerance", "-3");
        n.set_vars(&vars);
        assert_eq!(n.position_tolerance(), 0.0);
    }

    #[test]
    fn memory_stays_bounded_and_garbage_is_harmless() {
        let t0 = Instant::now();
        let mut n = NetStats::new();
        for k in 0..20_000 {
            let junk = if k % 3 == 0 { f32::NAN } else { 1.0e30 };
            let u = update(9, k, junk, [junk, -junk, junk], [junk; 3], junk, junk);
            n.on_update(t0 + Duration::from_micros(k as u64 * 500), &u);
        }
        let t = n.players.get(&9).unwrap();
        assert!(t.arrivals.len() <= MAX_ARRIVALS && t.dr.len() <= DR_WINDOW && t.jitter.len() <= JITTER_WINDOW);
        let p = n.player(9, t0 + Duration::from_secs(10)).unwrap();
        assert!(p.dr_error.max.is_none_or(|m| m.is_finite()));
        // 2000 updates a second, measured over the span the kept arrivals cover.
        assert!((p.updates_per_s - 2000.0).abs() < 10.0, "{p:?}");
        for id in 0..=255u8 {
            n.on_join(id);
        }
        assert_eq!(n.ids().len(), 256);
        n.on_leave(9);
        assert_eq!(n.ids().len(), 255);
    }

    #[test]
    fn lagstats_lines_parse() {
        let at = Instant::now();
        let l = parse_lagstats_line("alice            :  42 +-  3ms", at).unwrap();
        assert_eq!((l.callsign.as_str(), l.lag_ms, l.jitter_ms, l.loss_pct), ("alice", 42.0, Some(3.0), 0.0));
        let l = parse_lagstats_line("a : b : 120 +- 15ms 7% lost/ooo (R)", at).unwrap();
        assert_eq!((l.callsign.as_str(), l.lag_ms, l.jitter_ms, l.loss_pct), ("a : b", 120.0, Some(15.0), 7.0));
        // An observer's line, as bzfs 2.4 prints it.
        let l = parse_lagstats_line("bzhead-eye              :   2ms", at).unwrap();
        assert_eq!((l.callsign.as_str(), l.lag_ms, l.jitter_ms), ("bzhead-eye", 2.0, None));
        for bad in
            ["", "hello there", " : 1 +- 2ms", "x : 1 +- 2", "x : y +- 2ms", "x : 1 +- 2ms trailing", "x : 1 +- NaNms"]
        {
            assert!(parse_lagstats_line(bad, at).is_none(), "{bad:?}");
        }
        let mut n = NetStats::new();
        assert!(n.on_server_text(at, "bob : 10 +- 1ms", Some(4), |c| (c == "bob").then_some(4)));
        assert!(!n.on_server_text(at, "bob joined", Some(4), |_| Some(4)));
        assert_eq!(n.own_lag_ms(at), Some(10.0));
        assert_eq!(n.player(4, at).unwrap().lag_ms, Some(10.0));
        assert_eq!(n.own_lag_ms(at + LAG_MAX_AGE + Duration::from_secs(1)), None);
        assert_eq!(n.command_rtt_ms(at), None);
        n.on_command_answer(at, at + Duration::from_micros(2345));
        assert_eq!(n.command_rtt_ms(at + Duration::from_secs(1)), Some(2.3));
        assert_eq!(n.command_rtt_ms(at + LAG_MAX_AGE + Duration::from_secs(1)), None);
    }

    #[test]
    fn the_json_shape_is_the_issues() {
        let t0 = Instant::now();
        let mut n = NetStats::new();
        drive(&mut n, t0, 3, 0.1, |_, p| p);
        let v = serde_json::to_value(n.player(3, t0 + Duration::from_secs(1)).unwrap()).unwrap();
        assert!(v.get("id").is_none());
        for k in ["updates_per_s", "jitter_ms", "lag_ms", "out_of_order", "missing", "since_last_ms", "flagged"] {
            assert!(v.get(k).is_some(), "{k} missing in {v}");
        }
        for k in ["p50", "p95", "max"] {
            assert!(v["dr_error"][k].is_number(), "{k} in {v}");
        }
        assert!(v["lag_ms"].is_null() && v["flagged"].is_null());
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let w: VecDeque<f32> = (1..=100).map(|x| x as f32).collect();
        let q = quantiles(&w);
        assert_eq!((q.p50, q.p95, q.max, q.samples), (Some(50.0), Some(95.0), Some(100.0), 100));
        let w: VecDeque<f32> = [7.0].into_iter().collect();
        assert_eq!(quantiles(&w).p95, Some(7.0));
    }
}

/// The tracker as the session feeds it, driven with scripted server messages in virtual time.
#[cfg(test)]
mod session_tests {
    use std::time::{Duration, Instant};

    use crate::bzflag::consts::{player, PlayerStatus, PlayerType, Team};
    use crate::bzflag::event::Event;
    use crate::bzflag::msg::{ClientMsg, Message, PlayerUpdate, ServerMsg};
    use crate::bzflag::session::{Session, SessionConfig};

    struct Drive {
        s: Session,
        now: Instant,
        sent: Vec<ClientMsg>,
        events: Vec<Event>,
    }

    impl Drive {
        fn joined() -> Drive {
            let now = Instant::now();
            let mut s = Session::new(SessionConfig { full_join: false, udp: false, ..SessionConfig::default() });
            s.handle_connected(now);
            s.handle_tcp(now, b"BZFS0221\x00");
            let mut d = Drive { s, now, sent: vec![], events: vec![] };
            d.send(ServerMsg::Accept { id: 0 });
            for (id, name) in [(1, "alice"), (2, "bob")] {
                d.send(ServerMsg::AddPlayer {
                    id,
                    player_type: PlayerType::Tank,
                    team: Team::Red,
                    wins: 0,
                    losses: 0,
                    team_kills: 0,
                    callsign: name.into(),
                    motto: String::new(),
                });
            }
            d.sent.clear();
            d
        }

        fn send(&mut self, m: ServerMsg) {
            self.s.handle_tcp(self.now, &m.encode());
            while let Some(t) = self.s.poll_transmit() {
                if let Ok(m) = ClientMsg::decode(&t.bytes) {
                    self.sent.push(m);
                }
            }
            while let Some(e) = self.s.poll_event() {
                self.events.push(e);
            }
        }

        fn server_says(&mut self, text: &str) {
            self.send(ServerMsg::Message { from: player::SERVER, to: 0, kind: 0, text: text.into() });
        }

        fn chat_lines(&self) -> usize {
            self.events.iter().filter(|e| matches!(e, Event::Chat { .. })).count()
        }
    }

    fn update(id: u8, order: i32, t: f32, x: f32) -> PlayerUpdate {
        PlayerUpdate {
            small: false,
            timestamp: t,
            id,
            order,
            status: PlayerStatus::ALIVE,
            pos: [x, 0.0, 0.0],
            vel: [10.0, 0.0, 0.0],
            azimuth: 0.0,
            ang_vel: 0.0,
            jump_jets: 0.0,
            phydrv: -1,
            user_inputs: (0.0, 0.0),
            sounds: 0,
        }
    }

    #[test]
    fn every_update_feeds_the_tracker_also_the_dropped_ones() {
        let mut d = Drive::joined();
        for (k, order) in [1, 2, 4, 3].into_iter().enumerate() {
            d.now += Duration::from_millis(100);
            d.send(ServerMsg::PlayerUpdate(update(1, order, k as f32 * 0.1, k as f32)));
        }
        // Updates of a player not in the roster are not tracked.
        d.send(ServerMsg::PlayerUpdate(update(9, 1, 0.0, 0.0)));
        let n = d.s.net_stats().player(1, d.now).expect("alice");
        assert_eq!((n.updates, n.out_of_order, n.missing), (4, 1, 1));
        assert_eq!(n.dr_error.samples, 2);
        assert!(d.s.net_stats().player(9, d.now).is_none());
        // A spawn breaks the line of motion; a leave forgets the player.
        d.send(ServerMsg::Alive { id: 1, pos: [50.0, 0.0, 0.0], azimuth: 0.0 });
        d.now += Duration::from_millis(100);
        d.send(ServerMsg::PlayerUpdate(update(1, 5, 0.5, 50.0)));
        assert_eq!(d.s.net_stats().player(1, d.now).unwrap().dr_error.samples, 2);
        d.send(ServerMsg::RemovePlayer { id: 1 });
        assert!(d.s.net_stats().player(1, d.now).is_none());
    }

    #[test]
    fn a_lagstats_reply_feeds_the_figures_and_is_not_chat() {
        let mut d = Drive::joined();
        d.s.request_lag_stats(d.now);
        let asked = d.s.poll_transmit().and_then(|t| ClientMsg::decode(&t.bytes).ok());
        assert!(matches!(asked, Some(ClientMsg::Message { ref text, .. }) if text == "/lagstats"), "{asked:?}");
        let before = d.chat_lines();
        d.server_says("bzhead                  :   3ms");
        d.server_says("alice            :  42 +-  5ms");
        d.server_says("bob              :  17 +-  2ms 4% lost/ooo (R)");
        assert_eq!(d.chat_lines(), before, "{:?}", d.events);
        assert!(d.s.net_stats().command_rtt_ms(d.now).is_some());
        let a = d.s.net_stats().player(1, d.now).unwrap();
        let b = d.s.net_stats().player(2, d.now).unwrap();
        assert_eq!((a.lag_ms, a.server_jitter_ms), (Some(42.0), Some(5.0)));
        assert_eq!((b.lag_ms, b.server_loss_pct), (Some(17.0), Some(4.0)));
        // The reply window closes: the same text later is chat again (a player could say it).
        d.now += super::super::session::LAGSTATS_REPLY_WINDOW + Duration::from_secs(1);
        d.server_says("alice            :  99 +-  5ms");
        assert_eq!(d.chat_lines(), before + 1);
        assert_eq!(d.s.net_stats().player(1, d.now).unwrap().lag_ms, Some(42.0));
    }

    #[test]
    fn a_refused_lagstats_is_taken_once_and_not_asked_again() {
        let mut d = Drive::joined();
        d.s.request_lag_stats(d.now);
        d.server_says("You do not have permission to run the lagstats command");
        assert_eq!(d.chat_lines(), 0);
        d.sent.clear();
        while d.s.poll_transmit().is_some() {}
        d.s.request_lag_stats(d.now);
        assert!(d.s.poll_transmit().is_none());
    }
}
