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
//! a full `state`, the recent `feed` lines, and then a `state` whenever something moved, at most one per
//! [`PUSH_INTERVAL`] (built once and written to every viewer), `feed` lines as they happen and `status` changes.
//! A `state` carries every tank's pose with its velocity and angular velocity at the snapshot time, so the page
//! extrapolates at its own frame rate; shots are sent once with their whole precomputed path (`new`) and named when
//! they end early (`gone`).

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::bzflag::consts::{FlagStatus, PlayerStatus, Team};
use crate::bzflag::event::Event;
use crate::bzflag::play::physics::flag;
use crate::bzflag::play::{LiveShot, Physics, RemoteTank, ShotKind, ShotTracker};
use crate::bzflag::world::{parse_blob, report, WorldModel};
use crate::http::{sse_comment, sse_event, sse_head, Method, Request, Response};
use crate::observer::text_line;
use crate::reactor::{HttpConnId, HttpEvent, Reactor, SessionId};

/// Least time between two `state` pushes of one server.
pub const PUSH_INTERVAL: Duration = Duration::from_millis(50);
/// A quiet stream gets a comment this often (keeps proxies and the browser's stream alive).
pub const KEEPALIVE: Duration = Duration::from_secs(15);
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
    /// What the viewers were last sent: shots, and a signature of each player and flag (see [`WebView::state_json`]).
    sent_shots: HashSet<(u8, u16)>,
    sent_players: HashMap<u8, u64>,
    sent_flags: HashMap<u16, u64>,
    sent_teams: u64,
    /// When the viewers were last sent everybody's network figures.
    last_net: Option<Instant>,
    feed: VecDeque<Value>,
    dirty: bool,
    /// When the oldest server message not yet pushed arrived (the delay a `state` reports).
    dirty_since: Option<Instant>,
    last_push: Option<Instant>,
    last_write: Instant,
}

/// See the module documentation.
pub struct WebView {
    servers: Vec<ServerView>,
    viewers: Vec<(HttpConnId, usize)>,
    epoch: Instant,
    seq: u64,
    bytes_pushed: u64,
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
                    sent_shots: HashSet::new(),
                    sent_players: HashMap::new(),
                    sent_flags: HashMap::new(),
                    sent_teams: 0,
                    last_net: None,
                    feed: VecDeque::new(),
                    dirty: true,
                    dirty_since: None,
                    last_push: None,
                    last_write: epoch,
                })
                .collect(),
            viewers: Vec::new(),
            epoch,
            seq: 0,
            bytes_pushed: 0,
        }
    }

    /// Server `si`'s observer is now `sid` (a new connection after a reconnect included).
    pub fn set_session(&mut self, reactor: &mut Reactor, si: usize, sid: SessionId) {
        if let Some(s) = self.servers.get_mut(si) {
            s.session = Some(sid);
        }
        self.set_status(reactor, si, Status::Connecting);
    }

    /// Server `si`'s observer status changed; the viewers are told.
    pub fn set_status(&mut self, reactor: &mut Reactor, si: usize, status: Status) {
        let Some(s) = self.servers.get_mut(si) else { return };
        if s.status == status {
            return;
        }
        s.status = status;
        s.dirty = true;
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
                s.sent_shots.clear();
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
            HttpEvent::Closed { conn, .. } => self.viewers.retain(|(c, _)| *c != conn),
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
            "/" | "/index.html" => Response::new(200, "text/html; charset=utf-8", PAGE).with_header(
                "Content-Security-Policy",
                "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self'; connect-src 'self'",
            ),
            "/app.js" => Response::new(200, "text/javascript; charset=utf-8", APP_JS),
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
        self.viewers.push((conn, si));
        let mut bytes = sse_event(Some("hello"), None, &self.hello_json(si).to_string());
        let state = self.state_json(reactor, si, now, true);
        bytes.extend(sse_event(Some("state"), None, &state.to_string()));
        for item in &self.servers[si].feed {
            bytes.extend(sse_event(Some("feed"), None, &item.to_string()));
        }
        self.push_to(reactor, conn, &bytes);
    }

    fn push_to(&mut self, reactor: &mut Reactor, conn: HttpConnId, bytes: &[u8]) {
        if reactor.http_push(conn, bytes) {
            self.bytes_pushed += bytes.len() as u64;
        } else {
            // Gone, or its reader stopped reading: the HTTP side dropped it.
            self.viewers.retain(|(c, _)| *c != conn);
        }
    }

    fn broadcast(&mut self, reactor: &mut Reactor, si: usize, event: &str, data: &str) {
        self.seq += 1;
        let bytes = sse_event(Some(event), Some(self.seq), data);
        let conns: Vec<HttpConnId> = self.viewers.iter().filter(|(_, s)| *s == si).map(|(c, _)| *c).collect();
        for c in conns {
            self.push_to(reactor, c, &bytes);
        }
        if let Some(s) = self.servers.get_mut(si) {
            s.last_write = Instant::now();
        }
    }

    /// Pushes what changed; returns when it wants to be called again at the latest.
    pub fn tick(&mut self, reactor: &mut Reactor, now: Instant) -> Instant {
        let mut next = now + KEEPALIVE;
        for si in 0..self.servers.len() {
            // The tracker and the reckoning are brought up to date when a state is built, not every turn.
            let s = &self.servers[si];
            let moving = s.tracker.iter().any(|x| x.kind == ShotKind::GuidedMissile)
                || reactor
                    .session(s.session.unwrap_or(SessionId(usize::MAX)))
                    .is_some_and(|sess| sess.game().flags.values().any(|f| f.flight().is_some()));
            let due = s.last_push.is_none_or(|t| now >= t + PUSH_INTERVAL);
            if (s.dirty || moving) && due {
                let has_viewers = self.viewers.iter().any(|(_, v)| *v == si);
                if has_viewers {
                    let state = self.state_json(reactor, si, now, false);
                    self.broadcast(reactor, si, "state", &state.to_string());
                }
                let s = &mut self.servers[si];
                s.dirty = false;
                s.dirty_since = None;
                s.last_push = Some(now);
            } else if s.dirty || moving {
                next = next.min(s.last_push.map_or(now, |t| t + PUSH_INTERVAL));
            }
            let s = &self.servers[si];
            if now >= s.last_write + KEEPALIVE {
                let conns: Vec<HttpConnId> = self.viewers.iter().filter(|(_, v)| *v == si).map(|(c, _)| *c).collect();
                for c in conns {
                    self.push_to(reactor, c, &sse_comment("keepalive"));
                }
                self.servers[si].last_write = now;
            }
            next = next.min(self.servers[si].last_write + KEEPALIVE);
        }
        next
    }

    /// Brings the shot tracker and the reckoning of server `si` up to date with its session.
    fn follow(&mut self, reactor: &Reactor, si: usize) {
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
               "world": world, "push_ms": PUSH_INTERVAL.as_millis() as u64})
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

    /// A `state` for the viewers of server `si`: with `full`, everything (for a viewer that just connected);
    /// else only what changed since the last broadcast: the players whose last update, status, flag or score
    /// changed (the page extrapolates the others from their velocity and angular velocity), those gone, new and
    /// gone shots, changed flags (flying ones every time), the teams when they changed, and every player's network
    /// figures once per [`NET_INTERVAL`].
    fn state_json(&mut self, reactor: &Reactor, si: usize, now: Instant, full: bool) -> Value {
        self.follow(reactor, si);
        let s = &self.servers[si];
        let t = round3(now.saturating_duration_since(self.epoch).as_secs_f32());
        let Some(sid) = s.session else { return json!({"server": si, "t": t, "full": true, "players": []}) };
        let Some(game) = reactor.session(sid).map(|x| x.game()) else {
            return json!({"server": si, "t": t, "full": true, "players": []});
        };
        let Some(phys) = s.phys.clone() else { return json!({"server": si, "t": t, "full": true, "players": []}) };
        let mut ids: Vec<u8> = game.players.keys().copied().collect();
        ids.sort_unstable();
        let mut player_sigs = HashMap::with_capacity(ids.len());
        let mut players = Vec::new();
        for id in &ids {
            let Some(p) = game.players.get(id) else { continue };
            let flag = p.flag.and_then(|i| game.flags.get(&i)).map(|f| f.abbv().to_string());
            let nr = s
                .remotes
                .get(&p.id)
                .is_some_and(|r| r.at(now, phys.gravity, 0.0, phys.not_responding_time).not_responding);
            let sig = signature(&(
                p.last_update.map(|u| u.1),
                p.alive,
                p.paused,
                nr,
                p.team.to_i16(),
                &flag,
                (p.wins, p.losses, p.team_kills),
                &p.callsign,
            ));
            player_sigs.insert(p.id, sig);
            if !full && s.sent_players.get(&p.id) == Some(&sig) {
                continue;
            }
            let (pos, vel, az, ang) = pose_of(game, &phys, p, &s.remotes, now);
            players.push(json!({
                "id": p.id, "callsign": p.callsign, "team": p.team.name(), "type": p.player_type.name(),
                "alive": p.alive, "paused": p.paused, "nr": nr, "pos": pos, "vel": vel, "az": az, "av": ang,
                "flag": flag, "wins": p.wins, "losses": p.losses, "tks": p.team_kills,
            }));
        }
        let gone_players: Vec<u8> = if full {
            Vec::new()
        } else {
            s.sent_players.keys().filter(|id| !player_sigs.contains_key(id)).copied().collect()
        };
        let send_net = full || s.last_net.is_none_or(|t| now >= t + NET_INTERVAL);
        let net: Option<serde_json::Map<String, Value>> = send_net.then(|| {
            ids.iter()
                .filter(|id| game.players.get(id).is_some_and(|p| p.team != Team::Observer))
                .map(|id| (id.to_string(), self.net_of(reactor, sid, *id, now)))
                .collect()
        });
        let current: HashSet<(u8, u16)> = s.tracker.iter().map(|x| (x.shooter, x.shot_id)).collect();
        let new: Vec<Value> = s
            .tracker
            .iter()
            .filter(|x| full || !s.sent_shots.contains(&(x.shooter, x.shot_id)))
            .map(|x| shot_json(x, now, &phys))
            .collect();
        let gone: Vec<String> = if full {
            Vec::new()
        } else {
            s.sent_shots.difference(&current).map(|(a, b)| format!("{a}:{b}")).collect()
        };
        let mut flag_sigs = HashMap::new();
        let mut flags = Vec::new();
        for f in flags_json(game, &phys, now).as_array().into_iter().flatten() {
            let index = f["index"].as_u64().unwrap_or(0) as u16;
            let sig = signature(&f.to_string());
            flag_sigs.insert(index, sig);
            if full || s.sent_flags.get(&index) != Some(&sig) {
                flags.push(f.clone());
            }
        }
        let flags_gone: Vec<u16> = if full {
            Vec::new()
        } else {
            s.sent_flags.keys().filter(|i| !flag_sigs.contains_key(i)).copied().collect()
        };
        let teams: Vec<Value> = game
            .teams
            .iter()
            .flatten()
            .filter(|t| t.team != Team::Observer && (t.size > 0 || t.wins > 0 || t.losses > 0))
            .map(|t| json!({"team": t.team.name(), "size": t.size, "score": t.wins as i32 - t.losses as i32}))
            .collect();
        let teams_sig = signature(&Value::Array(teams.clone()).to_string());
        // How long the oldest server message in this state waited for it, and the wall clock when it was built:
        // with them a client on the same machine measures the delay from a server message to its screen.
        let since_ms = s.dirty_since.map(|d| round3(now.saturating_duration_since(d).as_secs_f32() * 1000.0));
        let wall_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0));
        let mut out = json!({
            "server": si, "t": t, "status": s.status.name(), "full": full, "since_ms": since_ms, "wall_ms": wall_ms,
            "time_left": game.seconds_left(now).map(round2),
            "players": players, "flags": flags, "shots": {"new": new, "gone": gone},
        });
        if !gone_players.is_empty() {
            out["gone"] = json!(gone_players);
        }
        if !flags_gone.is_empty() {
            out["flags_gone"] = json!(flags_gone);
        }
        if full || teams_sig != s.sent_teams {
            out["teams"] = Value::Array(teams);
        }
        if let Some(net) = net {
            out["net"] = Value::Object(net);
            out["link"] = link_json(reactor, sid, now);
        }
        if !full {
            let s = &mut self.servers[si];
            s.sent_shots = current;
            s.sent_players = player_sigs;
            s.sent_flags = flag_sigs;
            s.sent_teams = teams_sig;
            if send_net {
                s.last_net = Some(now);
            }
        }
        out
    }
}

/// Our own observer's link: the server's lag figure for it (`/lagstats`), the round trip of our last `/lagstats`
/// request, and whether UDP is up.
fn link_json(reactor: &Reactor, sid: SessionId, now: Instant) -> Value {
    let Some(session) = reactor.session(sid) else { return Value::Null };
    let net = session.net_stats();
    json!({
        "lag_ms": net.own_lag_ms(now).map(|v| round2(v)),
        "command_rtt_ms": net.command_rtt_ms(now).map(|v| (v * 100.0).round() / 100.0),
        "udp": session.udp_up(),
    })
}

/// A 64-bit signature of a value (to tell whether it changed since it was last sent).
fn signature(v: &impl std::hash::Hash) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one(v)
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

fn shot_json(x: &LiveShot, now: Instant, phys: &Physics) -> Value {
    let segs: Vec<Value> = x
        .segments
        .iter()
        .take(100)
        .map(|g| {
            json!([
                round3(g.t0),
                round3(g.t1),
                round2(g.start.x),
                round2(g.start.y),
                round2(g.velocity.x),
                round2(g.velocity.y)
            ])
        })
        .collect();
    let mut v = json!({
        "key": format!("{}:{}", x.shooter, x.shot_id), "shooter": x.shooter, "team": x.team.name(),
        "flag": x.flag.to_string(), "age": round3(x.age(now)), "life": round3(x.lifetime), "segs": segs,
    });
    match x.kind {
        ShotKind::ShockWave => {
            v["sw"] = json!([
                round2(x.start.x),
                round2(x.start.y),
                round2(phys.shock_in_radius),
                round2(phys.shock_out_radius)
            ]);
        }
        ShotKind::GuidedMissile => {
            let (p, vel) =
                x.missile.as_ref().map_or((x.start, x.velocity), |m| (m.pos, m.direction() * x.velocity.length()));
            v["segs"] = json!([[
                round3(x.age(now)),
                round3(x.lifetime),
                round2(p.x),
                round2(p.y),
                round2(vel.x),
                round2(vel.y)
            ]]);
        }
        _ => {}
    }
    v
}

fn flags_json(game: &crate::bzflag::game::Game, phys: &Physics, now: Instant) -> Value {
    let mut flags: Vec<&crate::bzflag::game::FlagState> =
        game.flags.values().filter(|f| f.info.status != FlagStatus::NoExist).collect();
    flags.sort_by_key(|f| f.index);
    flags
        .iter()
        .map(|f| {
            let pos = f.position_at(now, phys.gravity);
            json!({"index": f.index, "abbv": f.abbv().to_string(), "status": f.info.status.name(),
                   "owner": (f.info.owner != 255 && f.info.status == FlagStatus::OnTank).then_some(f.info.owner),
                   "team_flag": f.abbv().is_team_flag(), "pos": v3(pos)})
        })
        .collect()
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
