//! The live web view of `observe --web`: a page, `/api/state` and a Server-Sent Events stream per server, served by
//! the reactor's HTTP side ([`crate::http`]).
//!
//! A [`WebView`] follows one observer session per server. It models each server's world once (from the session's
//! world blob, on the reactor's worker: see [`WebView::on_job`]), follows the game with the engine's one scene
//! follower ([`Scene`]: the bots' dead reckoning, shot paths with ricochets and teleporters, guided missiles flown
//! as the bots fly them), and keeps a short kill feed and chat. It never touches a socket: it reads the sessions
//! from the [`Reactor`] and answers and pushes through it.
//!
//! No turn of the loop does work whose size a peer controls: a world (a few kilobytes can model to a million
//! boxes) is modelled, and its map drawn, on the reactor's worker; the map is refused past [`SVG_MAX_BYTES`]
//! and kept shared ([`Arc`]), so a request for it does not copy the view's own.
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

pub mod replay;
mod state;

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::bzflag::consts::Team;
use crate::bzflag::event::Event;
use crate::bzflag::play::ShotKind;
use crate::bzflag::scene::Scene;
use crate::bzflag::session::Session;
use crate::bzflag::world::{parse_blob, report, WorldModel};
use crate::http::{sse_comment, sse_event, sse_head, Method, Request, Response};
use crate::observer::text_line;
use crate::reactor::{HttpConnId, HttpEvent, JobId, JobPanicked, JobResult, Reactor, SessionId};
use replay::Replay;
use state::{FeedItem, FlagOut, PlayerSig, TeamOut};

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
/// The largest map (`/map.svg`) the view draws and keeps, in bytes (8 MiB: a large community map draws to about
/// 1 MB). A world whose map would be bigger (at least [`SVG_MIN_ITEM_BYTES`] for each obstacle, face, zone and
/// weapon drawn) is not drawn at all; one whose drawing comes out bigger is dropped. The page then shows no map
/// (`/map.svg` answers `404` with the reason) and everything else as usual.
pub const SVG_MAX_BYTES: usize = 8 << 20;
/// The least bytes one drawn item (a polygon or line of the map) takes.
pub const SVG_MIN_ITEM_BYTES: usize = 48;
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

struct ServerView {
    label: String,
    addr: SocketAddr,
    /// What the page shows as its address (the file of a replay).
    address: String,
    session: Option<SessionId>,
    status: Status,
    world: Option<Arc<WorldModel>>,
    world_hash: Option<String>,
    /// The world being modelled on the worker: its job and hash.
    building: Option<(JobId, Option<String>)>,
    /// The map, or why there is none.
    svg: Result<Arc<[u8]>, String>,
    links: Arc<[[f64; 4]]>,
    /// The game's scene: tanks reckoned, shots and missiles flown (brought to a state's time when one is built).
    scene: Scene,
    /// What the viewers were last sent (see [`WebView::write_state`]): each shot (`false`: only in the full state
    /// of a viewer that connected since, so still new to the others), what decides whether each player and flag is
    /// sent again (`None`: the same), and the teams.
    sent_shots: HashMap<(u8, u16), bool>,
    sent_players: HashMap<u8, Option<PlayerSig>>,
    sent_flags: HashMap<u16, Option<FlagOut>>,
    sent_teams: Option<Vec<TeamOut>>,
    /// When the viewers were last sent everybody's network figures.
    last_net: Option<Instant>,
    feed: VecDeque<FeedItem>,
    dirty: bool,
    /// When the oldest server message not yet pushed arrived (the delay a `state` reports).
    dirty_since: Option<Instant>,
    /// When the oldest event not yet pushed arrived (one the page cannot reckon: see [`EVENT_INTERVAL`]).
    urgent_since: Option<Instant>,
    last_push: Option<Instant>,
    last_write: Instant,
    /// Events (feed lines, status, hello) for every viewer, written with the next push of this server.
    pending: Vec<u8>,
    /// The next push is a full state (the game was rebuilt: a replay's seek).
    resync: bool,
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
    /// The recording played as server 0 (`bzhead replay FILE --web`): its session stands for an observer's, and
    /// its clock gives the game's `now` (see [`replay`]).
    replay: Option<Box<Replay>>,
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
                    address: addr.to_string(),
                    session: None,
                    status: Status::Connecting,
                    world: None,
                    world_hash: None,
                    building: None,
                    svg: Err("no world yet".into()),
                    links: Arc::new([]),
                    scene: Scene::new(),
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
                    resync: false,
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
            replay: None,
        }
    }

    /// A view of a recording played on a clock the viewers control (`bzhead replay FILE --web`): one server,
    /// labelled `label`, whose game is the replay's session; times on the page count from the recording's start.
    pub fn for_replay(label: &str, replay: Replay) -> WebView {
        let unspecified = SocketAddr::from(([0, 0, 0, 0], 0));
        let mut v = WebView::new(&[(label.to_string(), unspecified)], replay.base());
        v.servers[0].address = replay.status(replay.base()).file;
        v.replay = Some(Box::new(replay));
        v
    }

    /// The game's `now` at wall time `now`: the replay's game time, or `now` itself for a live observer.
    fn game_now(&self, now: Instant) -> Instant {
        self.replay.as_ref().map_or(now, |r| r.game_now())
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
        self.broadcast(reactor, si, "status", &state::StatusOut { server: si, status: status.name() });
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
        let t = at.saturating_duration_since(self.epoch).as_secs_f32();
        let item = FeedItem { server: si, t: round2(t), kind, text: text_line(ev) };
        self.broadcast(reactor, si, "feed", &item);
        let s = &mut self.servers[si];
        s.feed.push_back(item);
        while s.feed.len() > FEED_LEN {
            s.feed.pop_front();
        }
    }

    /// Models the world server `si`'s session brought, on the reactor's worker (with its map and teleporter
    /// links): a world a peer sends can take seconds to model and draw, which no turn of the loop may spend. The
    /// blob is taken from the session, not copied. The result comes back through [`WebView::on_job`].
    fn load_world(&mut self, reactor: &mut Reactor, si: usize) {
        let Some(s) = self.servers.get_mut(si) else { return };
        let Some(session) = session_of(&self.replay, reactor, s.session) else { return };
        let hash = session.world_hash().map(str::to_string);
        if s.world.is_some() && s.world_hash == hash || s.building.as_ref().is_some_and(|(_, h)| *h == hash) {
            return;
        }
        let blob = match (&mut self.replay, s.session) {
            (Some(r), _) => r.session_mut().take_world_blob(),
            (None, Some(sid)) => reactor.with_session(sid, |x, _| x.take_world_blob()).flatten(),
            (None, None) => None,
        };
        let Some(blob) = blob else { return };
        let job = reactor.submit(move || Box::new(model_world(&blob)) as JobResult);
        self.servers[si].building = Some((job, hash));
    }

    /// A finished job of the reactor's worker: a world modelled for a server (installed, and the viewers get the
    /// new world), or `Some(result)` back when the job is not the view's. Call it for every
    /// [`Reactor::poll_job`].
    pub fn on_job(&mut self, id: JobId, result: JobResult) -> Option<JobResult> {
        let Some(si) = self.servers.iter().position(|s| s.building.as_ref().is_some_and(|(j, _)| *j == id)) else {
            return Some(result);
        };
        let s = &mut self.servers[si];
        let hash = s.building.take().and_then(|(_, h)| h);
        let built = match result.downcast::<Result<WorldReady, String>>() {
            Ok(r) => *r,
            Err(r) if r.is::<JobPanicked>() => {
                Err("modelling the world failed (a bug: the model builder panicked)".into())
            }
            Err(_) => Err("modelling the world gave an unknown result".into()),
        };
        match built {
            Ok(w) => {
                if let Err(why) = &w.svg {
                    tracing::warn!(server = %s.addr, why = %why, "the world's map is not drawn");
                }
                s.svg = w.svg;
                s.links = w.links;
                s.world = Some(w.model);
                s.world_hash = hash;
                s.scene.reset();
                state::forget_sent(s);
                // Viewers already there get the new world (a first one, or another after a reconnect).
                s.dirty = true;
                let hello = to_string(&self.hello(si));
                self.broadcast_str(si, "hello", &hello);
            }
            Err(e) => tracing::warn!(server = %s.addr, error = %e, "cannot model the world; the map stays empty"),
        }
        None
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
            "/api/servers" => Response::json(to_json(&self.servers_out())),
            "/api/replay" => self.replay_request(reactor, r, now),
            "/api/state" => match self.server_param(r) {
                Ok(si) => Response::json(to_json(&self.api_state_out(reactor, si, now))),
                Err(e) => e,
            },
            // The map is shared (`Arc`): each request queues it without a copy.
            "/map.svg" => match self.server_param(r) {
                Ok(si) => match &self.servers[si].svg {
                    Ok(svg) => Response::shared(200, "image/svg+xml", svg.clone()),
                    Err(why) => Response::error(404, why),
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
        let mut bytes = sse_event(Some("hello"), None, &to_string(&self.hello(si)));
        self.write_state(reactor, si, now, true, &mut bytes);
        for item in &self.servers[si].feed {
            bytes.extend(sse_event(Some("feed"), None, &to_string(item)));
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
    fn broadcast<T: Serialize>(&mut self, _reactor: &mut Reactor, si: usize, event: &str, data: &T) {
        let data = to_string(data);
        self.broadcast_str(si, event, &data);
    }

    fn broadcast_str(&mut self, si: usize, event: &str, data: &str) {
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
        if let Some(wake) = self.replay_step(reactor, now) {
            next = next.min(wake);
        }
        let mut frame = std::mem::take(&mut self.frame);
        let (mut push_interval, event_interval) = self.intervals();
        if let Some(r) = &self.replay {
            push_interval = r.push_interval(push_interval);
        }
        for si in 0..self.servers.len() {
            // The tracker and the reckoning are brought up to date when a state is built, not every turn.
            let s = &self.servers[si];
            let moving = s.scene.shots().iter().any(|x| x.kind == ShotKind::GuidedMissile)
                || session_of(&self.replay, reactor, s.session)
                    .is_some_and(|sess| sess.game().flags.values().any(|f| f.flight().is_some()));
            let motion_at = s.last_push.map_or(now, |t| t + push_interval);
            let event_at = s.last_push.map_or(now, |t| t + event_interval);
            let due = ((s.dirty || moving) && now >= motion_at) || (s.urgent_since.is_some() && now >= event_at);
            let has_viewers = self.viewers.iter().any(|v| v.server == si);
            frame.clear();
            if due {
                if has_viewers {
                    let full = self.servers[si].resync;
                    self.write_state(reactor, si, now, full, &mut frame);
                }
                let s = &mut self.servers[si];
                s.resync = false;
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

    /// Brings the scene of server `si` to `now` with its session's game.
    fn follow(&mut self, reactor: &Reactor, si: usize, now: Instant) {
        let now = self.game_now(now);
        let s = &mut self.servers[si];
        let Some(game) = session_of(&self.replay, reactor, s.session).map(|x| x.game()) else { return };
        s.scene.follow(game, s.world.as_deref(), now);
    }

    fn servers_out(&self) -> state::ServersOut<'_> {
        let servers = self
            .servers
            .iter()
            .enumerate()
            .map(|(i, s)| state::ServerOut {
                index: i,
                label: &s.label,
                address: s.address.clone(),
                status: s.status.name(),
                world: s.world_hash.as_deref(),
            })
            .collect();
        state::ServersOut { v: 1, servers }
    }

    fn hello(&self, si: usize) -> state::HelloOut<'_> {
        let s = &self.servers[si];
        let world = s.world.as_ref().map(|w| state::HelloWorld {
            hash: s.world_hash.as_deref(),
            size: w.world_size,
            links: &s.links,
            bases: w
                .bases
                .iter()
                .map(|b| state::BaseOut {
                    team: Team::from_u16(b.team).name(),
                    pos: v2(b.pos.to_array()),
                    size: v2(b.size.to_array()),
                    angle: round2(b.angle),
                })
                .collect(),
            water: w.water_level,
        });
        state::HelloOut {
            server: si,
            label: &s.label,
            address: s.address.clone(),
            status: s.status.name(),
            world,
            push_ms: self.push_interval.as_millis() as u64,
            replay: self.replay.as_ref().map(|r| r.status(Instant::now())),
        }
    }

    /// `GET /api/state?server=N` (`docs/schemas/web-state.schema.json`): one server's game at `now`, positions
    /// dead-reckoned to it.
    pub fn api_state(&mut self, reactor: &Reactor, si: usize, now: Instant) -> serde_json::Value {
        serde_json::to_value(self.api_state_out(reactor, si, now)).unwrap_or_default()
    }
}

/// The session whose game server `sid`'s view shows: the replay's, or the observer's on the reactor.
fn session_of<'a>(
    replay: &'a Option<Box<Replay>>,
    reactor: &'a Reactor,
    sid: Option<SessionId>,
) -> Option<&'a Session> {
    match replay {
        Some(r) => Some(r.session()),
        None => reactor.session(sid?),
    }
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

/// A world modelled on the worker, with its map (or why it is not drawn) and its teleporter links.
struct WorldReady {
    model: Arc<WorldModel>,
    svg: Result<Arc<[u8]>, String>,
    links: Arc<[[f64; 4]]>,
}

/// The worker's job: the world modelled, its map drawn (within [`SVG_MAX_BYTES`]) and its links listed.
fn model_world(blob: &[u8]) -> Result<WorldReady, String> {
    let db = parse_blob(blob).map_err(|e| e.to_string())?;
    let model = WorldModel::build(&db).map_err(|e| e.to_string())?;
    let svg = draw_map(&model);
    let links = links_of(&model);
    Ok(WorldReady { model: Arc::new(model), svg, links })
}

/// The map of `m`, unless it would take more than [`SVG_MAX_BYTES`]: refused before drawing when its items alone
/// (at least [`SVG_MIN_ITEM_BYTES`] each) are too many, dropped when the drawing comes out too big.
fn draw_map(m: &WorldModel) -> Result<Arc<[u8]>, String> {
    let items = m.solids.len() + m.faces.len() + m.teleporters.len() + m.zones.len() + m.weapons.len() + m.walls.len();
    if items.saturating_mul(SVG_MIN_ITEM_BYTES) > SVG_MAX_BYTES {
        return Err(format!("the map is not drawn: {items} items would take more than {SVG_MAX_BYTES} bytes"));
    }
    let svg = report::to_svg(m);
    if svg.len() > SVG_MAX_BYTES {
        return Err(format!("the map is not drawn: it takes {} bytes, more than {SVG_MAX_BYTES}", svg.len()));
    }
    Ok(Arc::from(svg.into_bytes()))
}

/// Each linked face pair once: from the centre of one teleporter to the centre of the other (at most 2,000).
fn links_of(m: &WorldModel) -> Arc<[[f64; 4]]> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for face in 0..(m.teleporters.len() as u32 * 2) {
        for &to in m.links.targets(face) {
            let (a, b) = (face / 2, to / 2);
            if !seen.insert((a.min(b), a.max(b), face.min(to))) {
                continue;
            }
            if let (Some(ta), Some(tb)) = (m.teleporters.get(a as usize), m.teleporters.get(b as usize)) {
                out.push([round2(ta.pos.x), round2(ta.pos.y), round2(tb.pos.x), round2(tb.pos.y)]);
            }
            if out.len() >= 2000 {
                return out.into();
            }
        }
    }
    out.into()
}

/// `v` as JSON bytes (every value of the view serializes).
fn to_json<T: Serialize>(v: &T) -> Vec<u8> {
    let mut out = Vec::new();
    state::json(&mut out, v);
    out
}

/// `v` as a JSON string.
fn to_string<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
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
