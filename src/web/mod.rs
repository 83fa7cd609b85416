//! The live web view of `observe --web`: a page, `/api/state` and a Server-Sent Events stream per server, served by
//! the reactor's HTTP side ([`crate::http`]).
//!
//! A [`WebView`] follows one observer session per server. It models each server's world once (from the session's
//! world blob), follows the tanks with the same dead reckoning as the bots ([`RemoteTank`]) and the shots with the
//! same paths ([`ShotTracker`]: ricochets and teleporters included), and keeps a short kill feed and chat. It never
//! touches a socket: it reads the sessions from the [`Reactor`] and answers and pushes through it.
//!
//! Routes: `GET /` (the page), `/app.js`, `/api/servers`, `/api/state?server=N`, `/map.svg?server=N` (the world
//! drawn top-down by [`crate::bzflag::world::report::to_svg`]), `/events?server=N` (the stream). Anything else is
//! `404`; methods other than GET and HEAD are refused by the HTTP layer (`405`).
//!
//! The stream of a server sends, in order: `hello` (the server, its status and world: size, hash, teleporter links),
//! a full `state`, the recent `feed` lines, and then `state`s with what changed, `feed` lines and `status` changes.
//! What the page can reckon by itself (tanks moving on, flags and missiles flying) goes out at most once per
//! [`PUSH_INTERVAL`]; what it cannot (a shot fired or ended, a kill, a spawn, a join, a flag taken, a score, a chat
//! line) goes out in the reactor turn it arrives in, at most once per [`EVENT_INTERVAL`]. With many viewers both
//! intervals grow so that the writes to viewers stay within [`WRITE_BUDGET`] a second. Each push is built once
//! ([`state`]: `serde` straight into one buffer) and written to every viewer of the server in one write, with the
//! feed lines of that turn. A `state` carries a changed tank's pose with its velocity and angular velocity at the
//! snapshot time, so the page extrapolates at its own frame rate; shots are sent once with their whole precomputed
//! path (`new`) and named when they end early (`gone`); guided missiles with their pose and target every time.

mod state;

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::bzflag::consts::{PlayerStatus, Team};
use crate::bzflag::event::Event;
use crate::bzflag::play::physics::flag;
use crate::bzflag::play::{Physics, RemoteTank, ShotKind, ShotTracker};
use crate::bzflag::world::{parse_blob, report, WorldModel};
use crate::http::{sse_comment, sse_event, sse_head, Method, Request, Response};
use crate::observer::text_line;
use crate::reactor::{HttpConnId, HttpEvent, Reactor, SessionId};
use state::{FlagOut, PlayerSig, TeamOut};

/// The stream's frame interval: least time between two pushes of a server when only motion changed (player
/// updates, flags in flight, guided missiles). The page reckons tanks, shots and missiles at its own frame rate in
/// between. `BZHEAD_WEB_PUSH_MS` overrides it (for measuring).
pub const PUSH_INTERVAL: Duration = Duration::from_millis(250);
/// Least time between two pushes of a server when something happened that the page cannot reckon (a shot fired or
/// ended, a kill, a spawn, a join or leave, a flag taken or dropped, a score, a chat line): such a push goes out in
/// the reactor turn the event arrives in unless another went out less than this ago. `BZHEAD_WEB_EVENT_MS`
/// overrides it.
pub const EVENT_INTERVAL: Duration = Duration::from_millis(100);
/// Writes to viewers per second, all viewers of all servers together, that the view spends at most: with more
/// viewers than fit at [`EVENT_INTERVAL`] and [`PUSH_INTERVAL`], both intervals grow to `viewers / WRITE_BUDGET`
/// seconds (20 viewers: a push every 333 ms, events included), so that the cost of viewers stays bounded however
/// many connect (each write costs the kernel some 10 to 17 µs here, most of it waking the reader; see
/// `docs/benchmarks.md`). The page reckons motion between pushes either way. `BZHEAD_WEB_WRITES_PER_S` overrides
/// it (0: no budget).
pub const WRITE_BUDGET: u32 = 60;
/// A quiet stream gets a comment this often (keeps proxies and the browser's stream alive).
pub const KEEPALIVE: Duration = Duration::from_secs(15);
/// Guided missiles are flown in steps of at most this (s) between two states.
const GM_STEP: f32 = 0.02;
/// Feed lines kept per server (sent to a viewer that connects).
pub const FEED_LEN: usize = 40;
/// How soon the browser reconnects a dropped stream (the SSE `retry`).
pub const RETRY_MS: u32 = 1000;
/// How often a `state` carries every player's network figures (they change slowly; other states leave them out).
pub const NET_INTERVAL: Duration = Duration::from_secs(1);

const PAGE: &str = include_str!("page.html");
const APP_JS: &str = include_str!("app.js");

/// Where an observer stands, as the page shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Connecting or joining.
    Connecting,
    /// In the game.
    Joined,
    /// Gone; waiting to connect again.
    Reconnecting,
    /// Gone for good.
    Closed,
}

impl Status {
    fn name(self) -> &'static str {
        match self {
            Status::Connecting => "connecting",
            Status::Joined => "joined",
            Status::Reconnecting => "reconnecting",
            Status::Closed => "closed",
        }
    }
}

struct ServerView {
    label: String,
    addr: SocketAddr,
    session: Option<SessionId>,
    status: Status,
    world: Option<WorldModel>,
    world_hash: Option<String>,
    svg: Option<String>,
    links: Value,
    tracker: ShotTracker,
    remotes: HashMap<u8, RemoteTank>,
    /// The server's physics, read from its variables (evaluating their expressions) once, and again after a
    /// `MsgSetVar`, new settings or a new join.
    phys: Option<Physics>,
    /// What the viewers were last sent (see [`WebView::write_state`]): each shot (`false`: only in the full state
    /// of a viewer that connected since, so still new to the others), what decides whether each player and flag is
    /// sent again (`None`: the same), and the teams.
    sent_shots: HashMap<(u8, u16), bool>,
    sent_players: HashMap<u8, Option<PlayerSig>>,
    sent_flags: HashMap<u16, Option<FlagOut>>,
    sent_teams: Option<Vec<TeamOut>>,
    /// When the viewers were last sent everybody's network figures.
    last_net: Option<Instant>,
    feed: VecDeque<Value>,
    dirty: bool,
    /// When the oldest server message not yet pushed arrived (the delay a `state` reports).
    dirty_since: Option<Instant>,
    /// When the oldest event not yet pushed arrived (one the page cannot reckon: see [`EVENT_INTERVAL`]).
    urgent_since: Option<Instant>,
    last_push: Option<Instant>,
    last_write: Instant,
    /// Events (feed lines, status, hello) for every viewer, written with the next push of this server.
    pending: Vec<u8>,
}

/// An open stream.
struct Viewer {
    conn: HttpConnId,
    server: usize,
    /// The first bytes of its server's `pending` it must not get (its own first state already has them).
    skip: usize,
}

/// See the module documentation.
pub struct WebView {
    servers: Vec<ServerView>,
    viewers: Vec<Viewer>,
    epoch: Instant,
    seq: u64,
    bytes_pushed: u64,
    push_interval: Duration,
    event_interval: Duration,
    /// See [`WRITE_BUDGET`].
    write_budget: u32,
    /// The bytes of one push, reused.
    frame: Vec<u8>,
}

fn interval_from_env(name: &str, default: Duration) -> Duration {
    std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok()).map_or(default, Duration::from_millis)
}

impl WebView {
    /// A view of these servers (label as the user gave it, and address); times on the page count from `epoch`.
    pub fn new(servers: &[(String, SocketAddr)], epoch: Instant) -> WebView {
        WebView {
            servers: servers
                .iter()
                .map(|(label, addr)| ServerView {
                    label: label.clone(),
                    addr: *addr,
                    session: None,
                    status: Status::Connecting,
                    world: None,
                    world_hash: None,
                    svg: None,
                    links: json!([]),
                    tracker: ShotTracker::new(),
                    remotes: HashMap::new(),
                    phys: None,
                    sent_shots: HashMap::new(),
                    sent_players: HashMap::new(),
                    sent_flags: HashMap::new(),
                    sent_teams: None,
                    last_net: None,
                    feed: VecDeque::new(),
                    dirty: true,
                    dirty_since: None,
                    urgent_since: None,
                    last_push: None,
                    last_write: epoch,
                    pending: Vec::new(),
                })
                .collect(),
            viewers: Vec::new(),
            epoch,
            seq: 0,
            bytes_pushed: 0,
            push_interval: interval_from_env("BZHEAD_WEB_PUSH_MS", PUSH_INTERVAL),
            event_interval: interval_from_env("BZHEAD_WEB_EVENT_MS", EVENT_INTERVAL),
            write_budget: std::env::var("BZHEAD_WEB_WRITES_PER_S")
                .ok()
                .and_then(|v| v.parse::<u32>().ok())
                .unwrap_or(WRITE_BUDGET),
            frame: Vec::new(),
        }
    }

    /// Server `si`'s observer is now `sid` (a new connection after a reconnect included).
    pub fn set_session(&mut self, reactor: &mut Reactor, si: usize, sid: SessionId) {
        if let Some(s) = self.servers.get_mut(si) {
            s.session = Some(sid);
        }
        self.set_status(reactor, si, Status::Connecting);
    }

    /// Server `si`'s observer status changed; the viewers are told (with the next push, in this turn).
    pub fn set_status(&mut self, reactor: &mut Reactor, si: usize, status: Status) {
        let Some(s) = self.servers.get_mut(si) else { return };
        if s.status == status {
            return;
        }
        s.status = status;
        s.dirty = true;
        s.urgent_since.get_or_insert_with(Instant::now);
        let data = json!({"server": si, "status": status.name()}).to_string();
        self.broadcast(reactor, si, "status", &data);
    }

    /// The status of server `si`.
    pub fn status(&self, si: usize) -> Option<Status> {
        self.servers.get(si).map(|s| s.status)
    }

    /// Bytes pushed to streams so far (all viewers).
    pub fn bytes_pushed(&self) -> u64 {
        self.bytes_pushed
    }

    /// Open streams.
    pub fn viewers(&self) -> usize {
        self.viewers.len()
    }

    /// An event of server `si`'s observer.
    pub fn on_event(&mut self, reactor: &mut Reactor, si: usize, at: Instant, ev: &Event) {
        let Some(s) = self.servers.get_mut(si) else { return };
        s.dirty = true;
        s.dirty_since.get_or_insert(at);
        if is_event(ev) {
            s.urgent_since.get_or_insert(at);
        }
        if matches!(ev, Event::SetVar { .. } | Event::Settings(_) | Event::Accept { .. } | Event::Hello { .. }) {
            s.phys = None;
        }
        let kind = match ev {
            Event::Accept { .. } => {
                self.load_world(reactor, si);
                self.set_status(reactor, si, Status::Joined);
                return;
            }
            Event::World { .. } => {
                self.load_world(reactor, si);
                return;
            }
            Event::Closed { .. } => {
                if s.status != Status::Reconnecting {
                    self.set_status(reactor, si, Status::Closed);
                }
                return;
            }
            Event::Kill { .. } => "kill",
            Event::Chat { .. } => "chat",
            Event::Capture { .. } | Event::GameOver { .. } | Event::Join { .. } | Event::Leave { .. } => "game",
            Event::Grab { .. } | Event::Drop { .. } => "flag",
            _ => return,
        };
        let t = at.saturating_duration_since(self.epoch).as_secs_f64();
        let item = json!({"server": si, "t": round2(t as f32), "kind": kind, "text": text_line(ev)});
        s.feed.push_back(item.clone());
        while s.feed.len() > FEED_LEN {
            s.feed.pop_front();
        }
        self.broadcast(reactor, si, "feed", &item.to_string());
    }

    fn load_world(&mut self, reactor: &mut Reactor, si: usize) {
        let Some(s) = self.servers.get_mut(si) else { return };
        let Some(session) = s.session.and_then(|sid| reactor.session(sid)) else { return };
        let hash = session.world_hash().map(str::to_string);
        if s.world.is_some() && s.world_hash == hash {
            return;
        }
        let Some(blob) = session.world_blob() else { return };
        match parse_blob(blob)
            .map_err(|e| e.to_string())
            .and_then(|db| WorldModel::build(&db).map_err(|e| e.to_string()))
        {
            Ok(model) => {
                s.svg = Some(report::to_svg(&model));
                s.links = links_json(&model);
                s.world = Some(model);
                s.world_hash = hash;
                s.tracker = ShotTracker::new();
                s.remotes.clear();
                state::forget_sent(s);
                // Viewers already there get the new world (a first one, or another after a reconnect).
                let hello = self.hello_json(si).to_string();
                self.broadcast(reactor, si, "hello", &hello);
            }
            Err(e) => tracing::warn!(server = %s.addr, error = %e, "cannot model the world; the map stays empty"),
        }
    }

    /// A request or close of the HTTP side.
    pub fn on_http(&mut self, reactor: &mut Reactor, ev: HttpEvent) {
        match ev {
            HttpEvent::Request { conn, request, .. } => self.on_request(reactor, conn, &request),
            HttpEvent::Closed { conn, .. } => self.viewers.retain(|v| v.conn != conn),
        }
    }

    fn server_param(&self, r: &Request) -> Result<usize, Response> {
        let n = match r.query_param("server") {
            None => 0,
            Some(v) => v.parse::<usize>().map_err(|_| Response::error(400, "server must be a number"))?,
        };
        if n >= self.servers.len() {
            return Err(Response::error(404, &format!("no server {n} (there are {})", self.servers.len())));
        }
        Ok(n)
    }

    fn on_request(&mut self, reactor: &mut Reactor, conn: HttpConnId, r: &Request) {
        let now = Instant::now();
        if r.header("upgrade").is_some() {
            let why = "no protocol upgrades (WebSocket included): the view is read-only; its stream is Server-Sent Events at /events";
            reactor.http_respond(conn, &Response::error(400, why).closing());
            return;
        }
        let resp = match r.path.as_str() {
            "/" | "/index.html" => Response::shared(200, "text/html; charset=utf-8", PAGE).with_header(
                "Content-Security-Policy",
                "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self'; connect-src 'self'",
            ),
            "/app.js" => Response::shared(200, "text/javascript; charset=utf-8", APP_JS),
            "/api/servers" => Response::json(self.servers_json().to_string()),
            "/api/state" => match self.server_param(r) {
                Ok(si) => Response::json(self.api_state(reactor, si, now).to_string()),
                Err(e) => e,
            },
            "/map.svg" => match self.server_param(r) {
                Ok(si) => match &self.servers[si].svg {
                    Some(svg) => Response::new(200, "image/svg+xml", svg.as_bytes()),
                    None => Response::error(404, "no world yet"),
                },
                Err(e) => e,
            },
            "/events" => match self.server_param(r) {
                Ok(si) if r.method == Method::Get => {
                    self.open_stream(reactor, conn, si, now);
                    return;
                }
                Ok(_) => Response::new(200, "text/event-stream", ""),
                Err(e) => e,
            },
            _ => Response::error(404, "no such page"),
        };
        reactor.http_respond(conn, &resp);
    }

    fn open_stream(&mut self, reactor: &mut Reactor, conn: HttpConnId, si: usize, now: Instant) {
        reactor.http_stream(conn, &sse_head(RETRY_MS));
        let mut bytes = sse_event(Some("hello"), None, &self.hello_json(si).to_string());
        self.write_state(reactor, si, now, true, &mut bytes);
        for item in &self.servers[si].feed {
            bytes.extend(sse_event(Some("feed"), None, &item.to_string()));
        }
        self.viewers.push(Viewer { conn, server: si, skip: self.servers[si].pending.len() });
        self.push_to(reactor, conn, &bytes);
    }

    fn push_to(&mut self, reactor: &mut Reactor, conn: HttpConnId, bytes: &[u8]) {
        if reactor.http_push(conn, bytes) {
            self.bytes_pushed += bytes.len() as u64;
        } else {
            // Gone, or its reader stopped reading: the HTTP side dropped it.
            self.viewers.retain(|v| v.conn != conn);
        }
    }

    /// Queues an event for every viewer of server `si`; it goes out with the next push (in this turn).
    fn broadcast(&mut self, _reactor: &mut Reactor, si: usize, event: &str, data: &str) {
        self.seq += 1;
        let bytes = sse_event(Some(event), Some(self.seq), data);
        if let Some(s) = self.servers.get_mut(si) {
            s.pending.extend_from_slice(&bytes);
        }
    }

    /// Pushes what is due; returns when it wants to be called again at the latest. Call it once a turn, after the
    /// turn's events: every viewer of a server gets one write, with that turn's feed lines and state together.
    pub fn tick(&mut self, reactor: &mut Reactor, now: Instant) -> Instant {
        let mut next = now + KEEPALIVE;
        let mut frame = std::mem::take(&mut self.frame);
        let (push_interval, event_interval) = self.intervals();
        for si in 0..self.servers.len() {
            // The tracker and the reckoning are brought up to date when a state is built, not every turn.
            let s = &self.servers[si];
            let moving = s.tracker.iter().any(|x| x.kind == ShotKind::GuidedMissile)
                || reactor
                    .session(s.session.unwrap_or(SessionId(usize::MAX)))
                    .is_some_and(|sess| sess.game().flags.values().any(|f| f.flight().is_some()));
            let motion_at = s.last_push.map_or(now, |t| t + push_interval);
            let event_at = s.last_push.map_or(now, |t| t + event_interval);
            let due = ((s.dirty || moving) && now >= motion_at) || (s.urgent_since.is_some() && now >= event_at);
            let has_viewers = self.viewers.iter().any(|v| v.server == si);
            frame.clear();
            if due {
                if has_viewers {
                    self.write_state(reactor, si, now, false, &mut frame);
                }
                let s = &mut self.servers[si];
                s.dirty = false;
                s.dirty_since = None;
                s.urgent_since = None;
                s.last_push = Some(now);
            } else {
                if s.dirty || moving {
                    next = next.min(motion_at);
                }
                if s.urgent_since.is_some() {
                    next = next.min(event_at);
                }
            }
            let s = &mut self.servers[si];
            if s.pending.is_empty() && frame.is_empty() && now >= s.last_write + KEEPALIVE {
                frame.extend_from_slice(&sse_comment("keepalive"));
            }
            if !s.pending.is_empty() || !frame.is_empty() {
                // One write per viewer: this turn's events, then the state.
                let mut bytes = std::mem::take(&mut s.pending);
                let events = bytes.len();
                bytes.extend_from_slice(&frame);
                s.last_write = now;
                if has_viewers {
                    let conns: Vec<(HttpConnId, usize)> = self
                        .viewers
                        .iter_mut()
                        .filter(|v| v.server == si)
                        .map(|v| (v.conn, std::mem::take(&mut v.skip).min(events)))
                        .collect();
                    for (c, skip) in conns {
                        self.push_to(reactor, c, &bytes[skip..]);
                    }
                }
                bytes.clear();
                self.servers[si].pending = bytes;
            }
            next = next.min(self.servers[si].last_write + KEEPALIVE);
        }
        self.frame = frame;
        next
    }

    /// The least time between two pushes of a server for motion and for events, with the viewers there are now
    /// (see [`WRITE_BUDGET`]).
    pub fn intervals(&self) -> (Duration, Duration) {
        intervals_for(self.push_interval, self.event_interval, self.write_budget, self.viewers.len())
    }

    /// Brings the shot tracker and the reckoning of server `si` up to date with its session.
    /// Guided missiles fly on towards their targets (as the bots fly them), in steps of at most [`GM_STEP`].
    fn follow(&mut self, reactor: &Reactor, si: usize) {
        let now = Instant::now();
        let s = &mut self.servers[si];
        let Some(game) = s.session.and_then(|sid| reactor.session(sid)).map(|x| x.game()) else { return };
        let phys = s.phys.get_or_insert_with(|| Physics::new(&game.vars, game.settings.as_ref()));
        s.tracker.sync(&game.shots, phys, s.world.as_ref());
        let drivers = s.world.as_ref().map(|w| w.physics_drivers.as_slice()).unwrap_or(&[]);
        s.remotes.retain(|id, _| game.players.contains_key(id));
        for p in game.players.values() {
            if let Some((u, at)) = p.last_update {
                let e = s.remotes.entry(p.id).or_insert_with(|| RemoteTank::new(&u, at, drivers));
                if e.received != at || e.order != u.order {
                    *e = RemoteTank::new(&u, at, drivers);
                }
            }
        }
        let (remotes, world) = (&s.remotes, s.world.as_ref());
        for shot in s.tracker.iter_mut() {
            let Some(target) = shot.missile.as_ref().filter(|m| !m.expired).map(|m| m.target) else { continue };
            let aim = game.players.get(&target).filter(|p| p.alive).and_then(|_| remotes.get(&target)).map(|r| {
                r.at(now, phys.gravity, 0.0, phys.not_responding_time).pose.pos
                    + glam::Vec3::new(0.0, 0.0, phys.muzzle_height)
            });
            let age = shot.age(now);
            let mut t = shot.missile.as_ref().map_or(age, |m| m.time);
            while t < age {
                t = (t + GM_STEP).min(age);
                shot.update_missile(t, aim, phys, world);
            }
        }
    }

    fn servers_json(&self) -> Value {
        let servers: Vec<Value> = self
            .servers
            .iter()
            .enumerate()
            .map(|(i, s)| {
                json!({"index": i, "label": s.label, "address": s.addr.to_string(), "status": s.status.name(),
                       "world": s.world_hash})
            })
            .collect();
        json!({"v": 1, "servers": servers})
    }

    fn hello_json(&self, si: usize) -> Value {
        let s = &self.servers[si];
        let world = s.world.as_ref().map(|w| {
            let bases: Vec<Value> = w
                .bases
                .iter()
                .map(|b| json!({"team": Team::from_u16(b.team).name(), "pos": v2(b.pos.to_array()), "size": v2(b.size.to_array()), "angle": round2(b.angle)}))
                .collect();
            json!({"hash": s.world_hash, "size": w.world_size, "links": s.links, "bases": bases,
                   "water": w.water_level})
        });
        json!({"server": si, "label": s.label, "address": s.addr.to_string(), "status": s.status.name(),
               "world": world, "push_ms": self.push_interval.as_millis() as u64})
    }

    /// `GET /api/state?server=N`: see the shape; positions dead-reckoned to `now`.
    pub fn api_state(&mut self, reactor: &Reactor, si: usize, now: Instant) -> Value {
        self.follow(reactor, si);
        let s = &self.servers[si];
        let t = round3(now.saturating_duration_since(self.epoch).as_secs_f32());
        let mut out = json!({
            "v": 1, "server": si, "address": s.addr.to_string(), "status": s.status.name(),
            "world": {"hash": s.world_hash, "size": s.world.as_ref().map(|w| w.world_size)},
            "time": t, "time_left": null, "teams": [], "players": [], "flags": [], "shots": [],
        });
        let Some(sid) = s.session else { return out };
        let Some(game) = reactor.session(sid).map(|x| x.game()) else { return out };
        let Some(phys) = s.phys.clone() else { return out };
        out["time_left"] = json!(game.seconds_left(now).map(round2));
        out["teams"] = game
            .teams
            .iter()
            .flatten()
            .filter(|t| t.team != Team::Observer)
            .map(|t| {
                json!({"team": t.team.name(), "size": t.size, "wins": t.wins, "losses": t.losses,
                       "score": t.wins as i32 - t.losses as i32})
            })
            .collect();
        let mut players: Vec<&crate::bzflag::game::Player> = game.players.values().collect();
        players.sort_by_key(|p| p.id);
        out["players"] = players
            .iter()
            .map(|p| {
                let (pos, vel, az, _) = pose_of(game, &phys, p, &s.remotes, now);
                json!({
                    "id": p.id, "callsign": p.callsign, "team": p.team.name(), "type": p.player_type.name(),
                    "alive": p.alive, "pos": pos, "azimuth": az, "vel": vel,
                    "flag": p.flag.and_then(|i| game.flags.get(&i)).map(|f| f.abbv().to_string()),
                    "score": {"wins": p.wins, "losses": p.losses, "tks": p.team_kills},
                    "net": self.net_of(reactor, sid, p.id, now),
                })
            })
            .collect();
        out["flags"] = flags_json(game, &phys, now);
        out["link"] = link_json(reactor, sid, now);
        out["shots"] = s
            .tracker
            .iter()
            .filter_map(|x| {
                let age = x.age(now);
                let pos = x.position_at(age)?;
                let vel = x.segments.iter().find(|g| age >= g.t0 && age < g.t1).map_or(x.velocity, |g| g.velocity);
                Some(json!({"shooter": x.shooter, "id": x.shot_id, "team": x.team.name(), "flag": x.flag.to_string(),
                            "pos": v3(pos.to_array()), "vel": v3(vel.to_array())}))
            })
            .collect();
        out
    }

    /// A player's network figures ([`crate::bzflag::netstats::PlayerNet`]: updates per second, jitter,
    /// dead-reckoning error, lag, missing and out-of-order updates, why it is flagged); `null` before its first
    /// update.
    fn net_of(&self, reactor: &Reactor, sid: SessionId, id: u8, now: Instant) -> Value {
        reactor
            .net_stats(sid)
            .and_then(|n| n.player(id, now))
            .and_then(|p| serde_json::to_value(p).ok())
            .unwrap_or(Value::Null)
    }
}

/// Our own observer's link: the server's lag figure for it (`/lagstats`), the round trip of our last `/lagstats`
/// request, and whether UDP is up.
fn link_json(reactor: &Reactor, sid: SessionId, now: Instant) -> Value {
    let Some(session) = reactor.session(sid) else { return Value::Null };
    let net = session.net_stats();
    json!({
        "lag_ms": net.own_lag_ms(now).map(round2),
        "command_rtt_ms": net.command_rtt_ms(now).map(|v| (v * 100.0).round() / 100.0),
        "udp": session.udp_up(),
    })
}

/// The motion and event intervals for `viewers` open streams within `budget` writes a second (0: no budget): each
/// at least as given, and at least `viewers / budget` seconds.
fn intervals_for(push: Duration, event: Duration, budget: u32, viewers: usize) -> (Duration, Duration) {
    let spread = match budget {
        0 => Duration::ZERO,
        b => Duration::from_secs_f64(viewers as f64 / f64::from(b)),
    };
    (push.max(spread), event.max(spread))
}

/// Whether an event changes what the page cannot reckon by itself (see [`EVENT_INTERVAL`]).
fn is_event(ev: &Event) -> bool {
    !matches!(
        ev,
        Event::Update(_)
            | Event::Hello { .. }
            | Event::UdpLink { .. }
            | Event::CacheUrl { .. }
            | Event::NearFlag { .. }
            | Event::TimeLeft { .. }
            | Event::Resources { .. }
            | Event::QueryResult { .. }
            | Event::Warning { .. }
    )
}

/// A player's pose at `now`: position, velocity, azimuth and angular velocity (rounded for the wire), from its
/// dead reckoning when it sent an update, else where it spawned.
fn pose_of(
    game: &crate::bzflag::game::Game,
    phys: &Physics,
    p: &crate::bzflag::game::Player,
    remotes: &HashMap<u8, RemoteTank>,
    now: Instant,
) -> ([f64; 3], [f64; 3], f64, f64) {
    let remote = remotes.get(&p.id).filter(|r| Some(r.received) == p.last_update.map(|u| u.1));
    match remote {
        Some(r) => {
            let holds_burrow = p.flag.and_then(|i| game.flags.get(&i)).is_some_and(|f| f.abbv() == flag::BURROW);
            let ground = if holds_burrow { phys.burrow_depth } else { 0.0 };
            let rp = r.at(now, phys.gravity, ground, phys.not_responding_time);
            let alive = r.reckoning.status.contains(PlayerStatus::ALIVE);
            let ang = if alive && !rp.not_responding { r.reckoning.ang_vel } else { 0.0 };
            let vel = if alive { rp.pose.vel.to_array() } else { [0.0; 3] };
            (v3(rp.pose.pos.to_array()), v3(vel), round3(rp.pose.azimuth), round3(ang))
        }
        None => {
            let (pos, az) = p.spawn.unwrap_or(([0.0; 3], 0.0));
            (v3(pos), [0.0; 3], round3(az), 0.0)
        }
    }
}

fn flags_json(game: &crate::bzflag::game::Game, phys: &Physics, now: Instant) -> Value {
    let flags: Vec<state::FlagOut> = state::flags_sorted(game).iter().map(|f| state::flag_out(f, phys, now)).collect();
    serde_json::to_value(flags).unwrap_or(Value::Null)
}

fn links_json(m: &WorldModel) -> Value {
    // Each linked face pair once: from the centre of one teleporter to the centre of the other.
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for face in 0..(m.teleporters.len() as u32 * 2) {
        for &to in m.links.targets(face) {
            let (a, b) = (face / 2, to / 2);
            if !seen.insert((a.min(b), a.max(b), face.min(to))) {
                continue;
            }
            if let (Some(ta), Some(tb)) = (m.teleporters.get(a as usize), m.teleporters.get(b as usize)) {
                out.push(json!([round2(ta.pos.x), round2(ta.pos.y), round2(tb.pos.x), round2(tb.pos.y)]));
            }
            if out.len() >= 2000 {
                return Value::Array(out);
            }
        }
    }
    Value::Array(out)
}

fn round2(x: f32) -> f64 {
    if x.is_finite() {
        (f64::from(x) * 100.0).round() / 100.0
    } else {
        0.0
    }
}

fn round3(x: f32) -> f64 {
    if x.is_finite() {
        (f64::from(x) * 1000.0).round() / 1000.0
    } else {
        0.0
    }
}

fn v3(p: [f32; 3]) -> [f64; 3] {
    [round2(p[0]), round2(p[1]), round2(p[2])]
}

fn v2(p: [f32; 3]) -> [f64; 2] {
    [round2(p[0]), round2(p[1])]
}

#[cfg(test)]
mod tests;
