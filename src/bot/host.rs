//! [`BotHost`]: any number of bots, on any number of servers, on one [`Reactor`] and one thread.
//!
//! # What it does
//!
//! * **One observer link per server** (the "eye", on by default). `bzfs` sends robot players no teams, flags or
//!   roster when they join (`AddPlayer` skips them; they see only what changes later), so each server gets one
//!   observer session whose full picture of the game every bot of that server reads. The eye also downloads the
//!   world (or takes it from the cache) once; bots then join like `bzadmin`, without negotiation, settings or a
//!   world download of their own. If the server has no observer slot, the bots join with the full handshake and
//!   read the state of the first bot that got in (robot players then only know what changed since they joined).
//! * **Staggered joins**: bots connect one after another ([`HostConfig::join_stagger`]) once their server's world
//!   is known. They join as robot players (`PlayerType::Computer`) and over TCP only, like the official client's
//!   robots, and do not join at all while the server sets `_disableBots`.
//! * **A fixed tick** ([`HostConfig::tick`], 30 Hz by default): each tick, per server, the shared picture is
//!   computed once (the physics numbers from the variables, every live shot's path, every tank dead-reckoned to
//!   the tick's time), then every bot gets its [`View`], decides ([`Bot::tick`]), and its pilot steps the tank,
//!   detects hits, grabs and captures flags, fires and sends updates exactly as the official client would.
//! * **Reconnects** with back-off (1 s doubling to [`HostConfig::max_backoff`]) when a server closes or cannot be
//!   reached, a new callsign when the old one is taken, and no retry after a kick or a ban. What a reject calls for
//!   (rename, wait, give up) is decided once, by [`RejectCode::remedy`](crate::bzflag::consts::RejectCode::remedy);
//!   the eye follows it too, except that it does not wait for room on a full server.
//! * **Yielding to humans** ([`HostConfig::yield_slots`]): the eye asks the server for its team sizes and limits
//!   (`MsgQueryGame`) whenever someone joins or leaves; while fewer than that many slots are free (in total, or
//!   in the team of one of our bots), our most recently joined bot leaves; it comes back when the slots are free
//!   again.
//!
//! The host runs on its reactor's clock ([`BotHost::now`]): the tick, the stagger, the back-offs and every event
//! time are game time, K times as fast as real time on a reactor with a time scale K (`docs/time-warp.md`).
//!
//! Events of other sessions on the same reactor (observers, queries) and of the scans on it are left for their
//! owners: see [`HostEvent::Session`] and [`Reactor::poll_scan_event`].

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use slab::Slab;
use tracing::{debug, warn};

use super::danger::PlayerSet;
use super::pilot::{BotStats, Pilot, Shared};
use super::view::{Me, NavSlot, TankView, View};
use super::{Bot, BotEvent, Control};
use crate::bzflag::consts::{PlayerType, RejectRemedy, Team};
use crate::bzflag::event::Event;
use crate::bzflag::msg::ClientMsg;
use crate::bzflag::scene::Scene;
use crate::bzflag::session::{SessionConfig, SessionEnd};
use crate::bzflag::world::{parse_blob, WorldModel};
use crate::cache::WorldCache;
use crate::reactor::{JobId, Reactor, SessionId, SessionOptions};

/// How a [`BotHost`] runs its bots.
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// Time between two ticks (default 1/30 s).
    pub tick: Duration,
    /// Time between two bots' connects (default 200 ms).
    pub join_stagger: Duration,
    /// Share one observer link per server (default on; see the module documentation).
    pub shared_eye: bool,
    /// Callsign of the observer link (a number is added when it is taken).
    pub eye_callsign: String,
    /// Keep this many player slots free for humans (`None`: never yield).
    pub yield_slots: Option<u16>,
    /// Reconnect when a server closes or cannot be reached (default on).
    pub reconnect: bool,
    /// Longest wait between two reconnects (default 30 s).
    pub max_backoff: Duration,
    /// World cache for the observer links (default none).
    pub cache: Option<WorldCache>,
    /// Least time between two polls of the network (default 4 ms). Waking for every relayed message costs more
    /// than handling it (a context switch, a read and an acknowledgement each); batching a few milliseconds of
    /// them keeps receive times far finer than the official client's, which reads the network once a frame.
    pub poll_interval: Duration,
    /// Record each server's observer link to this file (`bzhead replay` plays it back; with several servers the
    /// server number is added to the name).
    pub record: Option<std::path::PathBuf>,
    /// Write each server's observer link as a BZFlag `.rec` to this file (named as `record`); the link then
    /// stays on TCP (see docs/recordings.md).
    pub rec: Option<std::path::PathBuf>,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            tick: Duration::from_micros(33_333),
            join_stagger: Duration::from_millis(200),
            shared_eye: true,
            eye_callsign: "bzhead-eye".into(),
            yield_slots: None,
            reconnect: true,
            max_backoff: Duration::from_secs(30),
            cache: None,
            poll_interval: Duration::from_millis(4),
            record: None,
            rec: None,
        }
    }
}

/// How one bot joins.
#[derive(Debug, Clone)]
pub struct BotConfig {
    /// Callsign (a number is added when it is taken).
    pub callsign: String,
    /// Motto.
    pub motto: String,
    /// Team wanted ([`Team::Automatic`]: the server chooses).
    pub team: Team,
    /// Player type: a robot (default, and what the rules ask of a program) or a tank.
    pub player_type: PlayerType,
    /// Bring up a UDP link (default off: robots use TCP, like the official client's robots; tanks always do, as
    /// the server kicks a human player whose shots come over TCP).
    pub udp: bool,
    /// Seed for the bot's random choices (teleporter destinations).
    pub seed: u64,
}

impl Default for BotConfig {
    fn default() -> Self {
        BotConfig {
            callsign: "bzhead-bot".into(),
            motto: "bzhead bot".into(),
            team: Team::Automatic,
            player_type: PlayerType::Computer,
            udp: false,
            seed: 1,
        }
    }
}

/// Identifies a bot of a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BotId(pub usize);

/// Identifies a server of a host (every bot of one address shares it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServerId(pub usize);

/// What a host reports.
#[derive(Debug, Clone, PartialEq)]
pub enum HostEvent {
    /// An event of a server's observer link: the game as an observer sees it (joins, kills, captures, chat ...).
    Game {
        /// The server.
        server: ServerId,
        /// When.
        at: Instant,
        /// The event.
        event: Event,
    },
    /// Something that happened to one of our bots.
    Bot {
        /// The bot.
        bot: BotId,
        /// When.
        at: Instant,
        /// What.
        event: BotEvent,
    },
    /// An event of a session the host does not own (added to [`BotHost::reactor`] by its user).
    Session {
        /// The session.
        session: SessionId,
        /// When.
        at: Instant,
        /// The event.
        event: Event,
    },
}

/// Where a bot is in its life.
#[derive(Debug, Clone, PartialEq)]
pub enum BotState {
    /// Waiting to connect (its turn in the stagger, a back-off, or its server's world).
    Waiting,
    /// Connecting and joining.
    Joining,
    /// In the game.
    Joined,
    /// Left to free a slot for a human; comes back when slots are free.
    Yielded,
    /// Leaving (`MsgExit` sent).
    Leaving,
    /// Left for good.
    Left,
    /// Gave up (kicked, banned, bots disabled, rejected): the reason.
    Stopped(String),
}

/// A bot's state and counts.
#[derive(Debug, Clone, PartialEq)]
pub struct BotStatus {
    /// Callsign (as joined, after any renaming).
    pub callsign: String,
    /// Server.
    pub server: SocketAddr,
    /// Player id while joined.
    pub id: Option<u8>,
    /// Team while joined.
    pub team: Team,
    /// State.
    pub state: BotState,
    /// How the session that stopped the bot ended, when a session end stopped it ([`BotState::Stopped`]).
    pub stopped_by: Option<SessionEnd>,
    /// Counts.
    pub stats: BotStats,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    Eye(usize),
    Bot(usize),
}

#[derive(Debug, Clone, PartialEq)]
enum Eye {
    Off,
    Waiting {
        at: Instant,
    },
    Joining(SessionId),
    Joined(SessionId),
    /// The server has no room for an observer: the bots read their own state.
    Unavailable,
}

struct ServerSlot {
    addr: SocketAddr,
    eye: Eye,
    eye_callsign: String,
    eye_attempts: u32,
    world: Option<Arc<WorldModel>>,
    world_hash: Option<String>,
    /// The hash of the world being modelled for this server on the worker, if any.
    world_building: Option<String>,
    nav: NavSlot,
    /// The game's scene (tanks reckoned, shots and missiles flown), followed to each tick.
    scene: Scene,
    tanks: Vec<TankView>,
    bots_disabled: bool,
    last_limits_ask: Option<Instant>,
    limits_seen: Option<Instant>,
    want_limits: bool,
}

struct BotSlot {
    server: usize,
    config: BotConfig,
    callsign: String,
    renames: u32,
    bot: Box<dyn Bot>,
    control: Control,
    pilot: Pilot,
    session: Option<SessionId>,
    state: BotState,
    wait_until: Instant,
    attempts: u32,
    joined_at: Option<Instant>,
    /// See [`BotStatus::stopped_by`].
    stopped_by: Option<SessionEnd>,
    join_order: u64,
    pending: VecDeque<Event>,
    chat: Vec<(u8, String)>,
    watch: super::watchdog::Watchdog,
}

/// Events kept for a bot's [`Bot::on_event`] between two ticks (older ones are dropped beyond this).
const MAX_PENDING: usize = 256;
/// Bots that stayed joined this long start their back-off afresh when they lose the connection.
const STABLE: Duration = Duration::from_secs(30);
/// How often the eye asks for team sizes when yielding is on (besides after every join and leave).
const LIMITS_EVERY: Duration = Duration::from_secs(10);
/// The observer link ends (and reconnects) when the server sends it nothing for this long.
const EYE_IDLE: Duration = Duration::from_secs(30);
/// A bot that yielded comes back no sooner than this.
const YIELD_HOLD: Duration = Duration::from_secs(10);

/// Bots on a reactor. See the module documentation.
pub struct BotHost {
    reactor: Reactor,
    config: HostConfig,
    epoch: Instant,
    servers: Vec<ServerSlot>,
    bots: Slab<BotSlot>,
    owners: HashMap<SessionId, Owner>,
    closing: Vec<SessionId>,
    events: VecDeque<HostEvent>,
    next_tick: Instant,
    last_tick: Option<Instant>,
    last_poll: Option<Instant>,
    next_join: Instant,
    join_seq: u64,
    leaving: bool,
    tick_us: VecDeque<u32>,
    /// Worlds that could not be modelled, for [`BotHost::turn`] to report.
    world_failures: VecDeque<String>,
    /// Worlds being modelled on the reactor's worker: the hash and the servers waiting for it.
    world_jobs: HashMap<JobId, (Option<String>, Vec<usize>)>,
    /// Models by world hash, shared by every server that has that world (one build per hash).
    models: HashMap<String, Weak<WorldModel>>,
    /// The longest time one turn spent working (the reactor's part and the host's), see
    /// [`BotHost::longest_turn`].
    longest_turn: Duration,
}

/// Tick durations kept for [`BotHost::tick_times_us`].
const TICK_SAMPLES: usize = 100_000;

impl BotHost {
    /// A host on a new reactor.
    pub fn new(config: HostConfig) -> io::Result<BotHost> {
        Ok(BotHost::with_reactor(Reactor::new()?, config))
    }

    /// A host on an existing reactor (which may already run sessions and scans of its own).
    pub fn with_reactor(reactor: Reactor, config: HostConfig) -> BotHost {
        let now = reactor.now();
        BotHost {
            reactor,
            config,
            epoch: now,
            servers: Vec::new(),
            bots: Slab::new(),
            owners: HashMap::new(),
            closing: Vec::new(),
            events: VecDeque::new(),
            next_tick: now,
            last_tick: None,
            last_poll: None,
            next_join: now,
            join_seq: 0,
            leaving: false,
            tick_us: VecDeque::new(),
            world_failures: VecDeque::new(),
            world_jobs: HashMap::new(),
            models: HashMap::new(),
            longest_turn: Duration::ZERO,
        }
    }

    /// The reactor, to add observers, queries or scans that run beside the bots.
    pub fn reactor(&mut self) -> &mut Reactor {
        &mut self.reactor
    }

    /// The configuration.
    pub fn config(&self) -> &HostConfig {
        &self.config
    }

    /// Adds a bot for `server`; it connects in its turn.
    pub fn add_bot(&mut self, server: SocketAddr, config: BotConfig, bot: Box<dyn Bot>) -> BotId {
        let si = match self.servers.iter().position(|s| s.addr == server) {
            Some(i) => i,
            None => {
                let now = self.reactor.now();
                self.servers.push(ServerSlot {
                    addr: server,
                    eye: if self.config.shared_eye { Eye::Waiting { at: now } } else { Eye::Off },
                    eye_callsign: self.config.eye_callsign.clone(),
                    eye_attempts: 0,
                    world: None,
                    world_hash: None,
                    world_building: None,
                    nav: NavSlot::default(),
                    scene: Scene::new(),
                    tanks: Vec::new(),
                    bots_disabled: false,
                    last_limits_ask: None,
                    limits_seen: None,
                    want_limits: false,
                });
                self.servers.len() - 1
            }
        };
        let now = self.reactor.now();
        let at = self.next_join.max(now);
        self.next_join = at + self.config.join_stagger;
        let seed = config.seed;
        BotId(self.bots.insert(BotSlot {
            server: si,
            callsign: config.callsign.clone(),
            config,
            renames: 0,
            bot,
            control: Control::default(),
            pilot: Pilot::new(seed),
            session: None,
            state: BotState::Waiting,
            wait_until: at,
            attempts: 0,
            joined_at: None,
            stopped_by: None,
            join_order: 0,
            pending: VecDeque::new(),
            chat: Vec::new(),
            watch: super::watchdog::Watchdog::default(),
        }))
    }

    /// The server a bot plays on.
    pub fn server_of(&self, bot: BotId) -> Option<ServerId> {
        self.bots.get(bot.0).map(|b| ServerId(b.server))
    }

    /// A server's address.
    pub fn server_addr(&self, server: ServerId) -> Option<SocketAddr> {
        self.servers.get(server.0).map(|s| s.addr)
    }

    /// The game as a server's observer link sees it (`None` before it joined, or without one).
    pub fn server_game(&self, server: ServerId) -> Option<&crate::bzflag::game::Game> {
        let s = self.servers.get(server.0)?;
        match s.eye {
            Eye::Joined(sid) => self.reactor.session(sid).map(|x| x.game()),
            _ => None,
        }
    }

    /// A server's world model, once known.
    pub fn server_world(&self, server: ServerId) -> Option<&WorldModel> {
        self.servers.get(server.0)?.world.as_deref()
    }

    /// A bot's state and counts.
    pub fn status(&self, bot: BotId) -> Option<BotStatus> {
        let b = self.bots.get(bot.0)?;
        Some(BotStatus {
            callsign: b.callsign.clone(),
            server: self.servers.get(b.server).map(|s| s.addr)?,
            id: b.pilot.me,
            team: b.pilot.team,
            state: b.state.clone(),
            stopped_by: b.stopped_by.clone(),
            stats: b.pilot.stats,
        })
    }

    /// Every bot.
    pub fn bot_ids(&self) -> Vec<BotId> {
        self.bots.iter().map(|(k, _)| BotId(k)).collect()
    }

    /// A bot's tank (its true state), while it has one.
    pub fn tank(&self, bot: BotId) -> Option<&crate::bzflag::play::Tank> {
        self.bots.get(bot.0).filter(|b| b.pilot.me.is_some()).map(|b| &b.pilot.tank)
    }

    /// The picture of every tank computed at the last tick for a server's bots (their [`View::tanks`]).
    pub fn server_tanks(&self, server: ServerId) -> &[TankView] {
        self.servers.get(server.0).map_or(&[], |s| s.tanks.as_slice())
    }

    /// A bot's controls as it last set them.
    pub fn control(&self, bot: BotId) -> Option<&Control> {
        self.bots.get(bot.0).map(|b| &b.control)
    }

    /// A bot's session id while it is connected.
    pub fn session_of(&self, bot: BotId) -> Option<SessionId> {
        self.bots.get(bot.0).and_then(|b| b.session)
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<HostEvent> {
        self.events.pop_front()
    }

    /// How long each tick took (µs, the last 100,000 ticks): every bot's decisions and pilots plus the shared
    /// picture of each server.
    pub fn tick_times_us(&self) -> Vec<u32> {
        self.tick_us.iter().copied().collect()
    }

    /// The longest time one [`BotHost::turn`] has spent working (not waiting for the network): the reactor's
    /// part (reading, engines, events) and the host's (routing, the tick, the connects). Worlds are modelled
    /// off the loop, so a world a server sends does not show here.
    pub fn longest_turn(&self) -> Duration {
        self.longest_turn
    }

    /// Starts [`BotHost::longest_turn`] afresh.
    pub fn reset_longest_turn(&mut self) {
        self.longest_turn = Duration::ZERO;
        self.reactor.reset_longest_turn();
    }

    /// The game time now: the reactor's clock ([`Reactor::now`]; `Instant::now()` unless the reactor runs at another
    /// time scale), which every tick, timestamp and event time of the host is on.
    pub fn now(&self) -> Instant {
        self.reactor.now()
    }

    /// Seconds since the host started at `at`: the clock of [`View::time`] and of our player updates' timestamps.
    pub fn clock(&self, at: Instant) -> f32 {
        at.saturating_duration_since(self.epoch).as_secs_f32()
    }

    /// The time of the last tick (every bot's tank has been stepped to it).
    pub fn last_tick(&self) -> Option<Instant> {
        self.last_tick
    }

    /// Makes one bot leave for good.
    pub fn leave_bot(&mut self, bot: BotId) {
        let Some(b) = self.bots.get_mut(bot.0) else { return };
        match b.session {
            Some(sid) => {
                b.state = BotState::Leaving;
                self.reactor.leave(sid);
            }
            None => b.state = BotState::Left,
        }
    }

    /// Every bot and observer link leaves (`MsgExit`); nothing reconnects. [`BotHost::is_done`] tells when all
    /// are gone.
    pub fn leave_all(&mut self) {
        self.leaving = true;
        for k in self.bot_ids() {
            self.leave_bot(k);
        }
        for s in &mut self.servers {
            match s.eye {
                Eye::Joined(sid) | Eye::Joining(sid) => self.reactor.leave(sid),
                _ => {}
            }
            s.eye = Eye::Off;
        }
    }

    /// True once every bot has left or stopped and every connection is closed (recordings finished).
    pub fn is_done(&self) -> bool {
        self.bots.iter().all(|(_, b)| matches!(b.state, BotState::Left | BotState::Stopped(_)) && b.session.is_none())
            && self.owners.is_empty()
            && self.closing.is_empty()
    }

    /// One turn: waits for the network until the next tick (or `max_wait`), handles what arrived, then runs the
    /// tick when it is due and starts the connects whose time came.
    ///
    /// Fails when the reactor does, and (with [`io::ErrorKind::InvalidData`], once per world) when a server's
    /// world cannot be modelled: that server's bots have stopped and its observer link is leaving; the host
    /// keeps running any other server's bots if turned again.
    pub fn turn(&mut self, max_wait: Option<Duration>) -> io::Result<()> {
        let clock = self.reactor.clock();
        let now = clock.now();
        let mut wake = self.next_tick;
        for (_, b) in &self.bots {
            if b.state == BotState::Waiting || b.state == BotState::Yielded {
                wake = wake.min(b.wait_until.max(now));
            }
        }
        for s in &self.servers {
            if let Eye::Waiting { at } = s.eye {
                wake = wake.min(at.max(now));
            }
        }
        let mut wait = wake.saturating_duration_since(now);
        if let Some(m) = max_wait {
            wait = wait.min(m);
        }
        // Let a few milliseconds of messages gather between two polls (see HostConfig::poll_interval).
        if let Some(last) = self.last_poll {
            let idle = (last + self.config.poll_interval).saturating_duration_since(now).min(wait);
            if !idle.is_zero() {
                std::thread::sleep(clock.to_real(idle));
                wait = wait.saturating_sub(idle);
            }
        }
        self.reactor.turn(Some(wait))?;
        let work_started = Instant::now();
        self.last_poll = Some(clock.at(work_started));
        self.take_worlds();
        self.route_events();
        let now = clock.now();
        self.start_due(now);
        if now >= self.next_tick {
            let started = Instant::now();
            self.last_tick = Some(now);
            self.tick(now);
            let took = started.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
            if self.tick_us.len() >= TICK_SAMPLES {
                self.tick_us.pop_front();
            }
            self.tick_us.push_back(took);
            self.next_tick += self.config.tick;
            if self.next_tick <= now {
                // Fell behind (a slow turn): skip ahead rather than run ticks back to back.
                self.next_tick = now + self.config.tick;
            }
        }
        self.reap();
        let work = self.reactor.last_turn() + work_started.elapsed();
        self.longest_turn = self.longest_turn.max(work);
        match self.world_failures.pop_front() {
            Some(reason) => Err(io::Error::new(io::ErrorKind::InvalidData, reason)),
            None => Ok(()),
        }
    }

    /// Runs turns until `deadline` (game time, [`BotHost::now`]) or until every bot is done. Returns true when
    /// all are done.
    pub fn run_until(&mut self, deadline: Instant) -> io::Result<bool> {
        while !self.is_done() {
            let now = self.reactor.now();
            if now >= deadline {
                return Ok(false);
            }
            self.turn(Some(deadline - now))?;
        }
        Ok(true)
    }

    // ------------------------------------------------------------------ connects

    fn start_due(&mut self, now: Instant) {
        if self.leaving {
            return;
        }
        for si in 0..self.servers.len() {
            if let Eye::Waiting { at } = self.servers[si].eye {
                if at <= now {
                    self.start_eye(si, now);
                }
            }
        }
        let due: Vec<usize> = self
            .bots
            .iter()
            .filter(|(_, b)| b.state == BotState::Waiting && b.wait_until <= now && b.session.is_none())
            .map(|(k, _)| k)
            .collect();
        for k in due {
            let si = self.bots[k].server;
            let s = &self.servers[si];
            if s.bots_disabled {
                self.stop_bot(k, now, "the server disables bots (_disableBots is set)".into());
                continue;
            }
            // With an eye, wait for the world it brings; without one, join at once (full handshake).
            let ready = match s.eye {
                Eye::Joined(_) => s.world.is_some(),
                Eye::Off | Eye::Unavailable => true,
                Eye::Waiting { .. } | Eye::Joining(_) => false,
            };
            if ready {
                self.start_bot(k, now);
            }
        }
        // Yielded bots come back when there is room again (checked when limits arrive).
    }

    fn start_eye(&mut self, si: usize, now: Instant) {
        let s = &mut self.servers[si];
        let config = SessionConfig {
            callsign: s.eye_callsign.clone(),
            motto: "bzhead bots' observer".into(),
            team: Team::Observer,
            player_type: PlayerType::Tank,
            // bzfs sends an observer the game time at least every 10 s: a silent server is gone, reconnect.
            idle_timeout: Some(EYE_IDLE),
            ..SessionConfig::default()
        };
        let numbered = |p: &std::path::PathBuf| -> std::path::PathBuf {
            if si == 0 {
                p.clone()
            } else {
                let mut name = p.as_os_str().to_owned();
                name.push(format!(".{si}"));
                name.into()
            }
        };
        let record = self.config.record.as_ref().map(numbered);
        let rec = self.config.rec.as_ref().map(numbered);
        let config = SessionConfig { udp: rec.is_none(), ..config };
        let options = SessionOptions { record, rec, cache: self.config.cache.clone(), record_max_bytes: None };
        match self.reactor.add_session(s.addr, config, options) {
            Ok(sid) => {
                s.eye = Eye::Joining(sid);
                self.owners.insert(sid, Owner::Eye(si));
            }
            Err(e) => {
                s.eye_attempts += 1;
                let wait = backoff(s.eye_attempts, self.config.max_backoff);
                warn!(server = %s.addr, error = %e, "cannot connect the observer link; retrying in {wait:?}");
                s.eye = Eye::Waiting { at: now + wait };
            }
        }
    }

    fn start_bot(&mut self, k: usize, now: Instant) {
        let si = self.bots[k].server;
        let addr = self.servers[si].addr;
        let with_eye = matches!(self.servers[si].eye, Eye::Joined(_));
        let b = &mut self.bots[k];
        let config = SessionConfig {
            callsign: b.callsign.clone(),
            motto: b.config.motto.clone(),
            team: b.config.team,
            player_type: b.config.player_type,
            // Tanks must shoot over UDP (bzfs kicks a human player whose shot comes over TCP); robots may use TCP.
            udp: b.config.udp || b.config.player_type != PlayerType::Computer,
            // The eye has the world and the settings; without one, the bot does the full join itself.
            full_join: !with_eye,
            // The eye follows every tank and shot for the bots: theirs need not decode the relays.
            lean: with_eye,
            ..SessionConfig::default()
        };
        b.pilot.reset();
        b.control = Control::default();
        b.attempts += 1;
        let options = SessionOptions {
            record: None,
            rec: None,
            cache: if with_eye { None } else { self.config.cache.clone() },
            record_max_bytes: None,
        };
        match self.reactor.add_session(addr, config, options) {
            Ok(sid) => {
                b.session = Some(sid);
                b.state = BotState::Joining;
                self.owners.insert(sid, Owner::Bot(k));
                let attempt = b.attempts;
                self.push_bot(k, now, BotEvent::Connecting { attempt });
            }
            Err(e) => {
                let wait = backoff(b.attempts, self.config.max_backoff);
                b.wait_until = now + wait;
                b.state = BotState::Waiting;
                let reason = format!("cannot connect to {addr}: {e}");
                self.push_bot(k, now, BotEvent::Disconnected { reason, retry_in: Some(wait.as_secs_f32()) });
            }
        }
    }

    fn stop_bot(&mut self, k: usize, now: Instant, reason: String) {
        let Some(b) = self.bots.get_mut(k) else { return };
        if let Some(sid) = b.session {
            self.reactor.leave(sid);
        }
        b.state = BotState::Stopped(reason.clone());
        b.stopped_by = None;
        self.push_bot(k, now, BotEvent::Stopped { reason });
    }

    fn push_bot(&mut self, k: usize, at: Instant, event: BotEvent) {
        self.events.push_back(HostEvent::Bot { bot: BotId(k), at, event });
    }

    /// Removes finished sessions from the reactor.
    fn reap(&mut self) {
        let reactor = &mut self.reactor;
        self.closing.retain(|sid| {
            if reactor.is_done(*sid) {
                reactor.remove_session(*sid);
                false
            } else {
                true
            }
        });
    }

    // ------------------------------------------------------------------ events

    fn route_events(&mut self) {
        while let Some((sid, at, ev)) = self.reactor.poll_event() {
            match self.owners.get(&sid).copied() {
                Some(Owner::Eye(si)) => {
                    self.on_eye_event(si, sid, at, &ev);
                    self.events.push_back(HostEvent::Game { server: ServerId(si), at, event: ev });
                }
                Some(Owner::Bot(k)) => self.on_bot_event(k, sid, at, ev),
                None => self.events.push_back(HostEvent::Session { session: sid, at, event: ev }),
            }
        }
    }

    fn on_eye_event(&mut self, si: usize, sid: SessionId, at: Instant, ev: &Event) {
        match ev {
            Event::Accept { .. } => {
                let s = &mut self.servers[si];
                s.eye = Eye::Joined(sid);
                s.eye_attempts = 0;
                self.load_world(si, sid, at);
                self.check_disable_bots(si, at);
                self.servers[si].want_limits = self.config.yield_slots.is_some();
            }
            Event::SetVar { .. } => self.check_disable_bots(si, at),
            Event::Join { .. } | Event::Leave { .. } if self.config.yield_slots.is_some() => {
                self.servers[si].want_limits = true;
            }
            Event::Closed { .. } => {
                self.owners.remove(&sid);
                self.closing.push(sid);
                let end = self.reactor.session(sid).and_then(|s| s.end().cloned());
                let s = &mut self.servers[si];
                if self.leaving || s.eye == Eye::Off {
                    return;
                }
                let no_room = match &end {
                    Some(SessionEnd::ServerFull) => true,
                    Some(SessionEnd::Rejected { code, .. }) => code.is_full(),
                    _ => false,
                };
                match end {
                    // No room for an observer: the bots will read their own state (the eye does not wait for room).
                    _ if no_room => {
                        warn!(server = %s.addr, "no observer slot; bots will only know what changes after they join");
                        s.eye = Eye::Unavailable;
                    }
                    // Otherwise a reject calls for what `RejectCode::remedy` says, as for the bots.
                    Some(SessionEnd::Rejected { code, .. }) if code.remedy() == RejectRemedy::Rename => {
                        s.eye_attempts += 1;
                        s.eye_callsign = format!("{}{}", self.config.eye_callsign, s.eye_attempts + 1);
                        s.eye = Eye::Waiting { at: at + Duration::from_millis(500) };
                    }
                    Some(SessionEnd::Rejected { code, reason }) if code.remedy() == RejectRemedy::GiveUp => {
                        warn!(server = %s.addr, code = code.to_u16(), %reason, "the observer link was rejected");
                        s.eye = Eye::Unavailable;
                    }
                    // A rejoin wait, or the server went away: back off and come back.
                    _ => {
                        s.eye_attempts += 1;
                        let wait = backoff(s.eye_attempts, self.config.max_backoff);
                        debug!(server = %s.addr, "observer link closed; reconnecting in {wait:?}");
                        s.eye = Eye::Waiting { at: at + wait };
                    }
                }
            }
            _ => {}
        }
    }

    /// Models the world `sid` brought for server `si`, on the reactor's worker (a world a server sends can take
    /// seconds to model; no turn of the loop may wait for it). A world whose model exists already (another
    /// server sent the same hash) is shared; one being modelled is waited for, not modelled twice. The result
    /// comes back through [`BotHost::take_worlds`].
    fn load_world(&mut self, si: usize, sid: SessionId, _at: Instant) {
        let Some(session) = self.reactor.session(sid) else { return };
        let hash = session.world_hash().map(str::to_string);
        let s = &mut self.servers[si];
        if hash.is_some() && (s.world.is_some() && s.world_hash == hash || s.world_building == hash) {
            return;
        }
        if let Some(model) = hash.as_ref().and_then(|h| self.models.get(h)).and_then(Weak::upgrade) {
            Self::install_world(s, model, hash);
            return;
        }
        if let Some(h) = &hash {
            if let Some((_, waiting)) = self.world_jobs.values_mut().find(|(jh, _)| jh.as_ref() == Some(h)) {
                waiting.push(si);
                s.world_building = hash;
                return;
            }
        }
        if session.world_blob().is_none() {
            return;
        }
        // Taken, not copied: the session has no more use for it.
        let Some(blob) = self.reactor.with_session(sid, |s, _| s.take_world_blob()).flatten() else { return };
        let s = &mut self.servers[si];
        s.world_building = hash.clone();
        let job = self.reactor.submit(move || {
            let r: Result<Arc<WorldModel>, String> = parse_blob(&blob)
                .map_err(|e| e.to_string())
                .and_then(|db| WorldModel::build(&db).map(Arc::new).map_err(|e| e.to_string()));
            Box::new(r)
        });
        self.world_jobs.insert(job, (hash, vec![si]));
    }

    /// Takes the models the worker finished and gives them to the servers waiting for them. A world that cannot
    /// be modelled (malformed, or too big once its group instances are expanded) leaves nothing to play on: the
    /// server's bots stop, its observer link leaves, and the next [`BotHost::turn`] reports it.
    fn take_worlds(&mut self) {
        while let Some((id, result)) = self.reactor.poll_job() {
            let Some((hash, waiting)) = self.world_jobs.remove(&id) else {
                debug!(job = id.0, "a job of the reactor's worker that is not the host's; dropped");
                continue;
            };
            let at = self.reactor.now();
            let result = match result.downcast::<Result<Arc<WorldModel>, String>>() {
                Ok(r) => *r,
                Err(_) => Err("modelling the world failed (a bug: the model builder panicked)".to_string()),
            };
            self.models.retain(|_, w| w.strong_count() > 0);
            if let (Ok(model), Some(h)) = (&result, &hash) {
                self.models.insert(h.clone(), Arc::downgrade(model));
            }
            for si in waiting {
                let s = &mut self.servers[si];
                if s.world_building != hash {
                    continue; // the server has moved on to another world since
                }
                s.world_building = None;
                match &result {
                    Ok(model) => Self::install_world(s, model.clone(), hash.clone()),
                    Err(e) => {
                        let reason = format!("cannot model the world of {}: {e}", s.addr);
                        warn!(server = %s.addr, error = %e, "cannot model the server's world; its bots stop");
                        if let Eye::Joined(eye) | Eye::Joining(eye) = s.eye {
                            self.reactor.leave(eye);
                        }
                        s.eye = Eye::Off;
                        self.stop_server_bots(si, at, &reason);
                        self.world_failures.push_back(reason);
                    }
                }
            }
        }
    }

    fn install_world(s: &mut ServerSlot, model: Arc<WorldModel>, hash: Option<String>) {
        s.world = Some(model);
        s.world_hash = hash;
        s.world_building = None;
        s.nav = NavSlot::default();
        s.scene.reset();
    }

    /// Stops every bot of server `si` that is still playing or trying to, for `reason`.
    fn stop_server_bots(&mut self, si: usize, at: Instant, reason: &str) {
        let mine: Vec<usize> = self
            .bots
            .iter()
            .filter(|(_, b)| b.server == si && !matches!(b.state, BotState::Left | BotState::Stopped(_)))
            .map(|(k, _)| k)
            .collect();
        for k in mine {
            self.stop_bot(k, at, reason.to_owned());
        }
    }

    fn check_disable_bots(&mut self, si: usize, at: Instant) {
        let disabled = match self.source(si) {
            Some(sid) => self.reactor.session(sid).is_some_and(|s| s.game().vars.is_true("_disableBots")),
            None => false,
        };
        if disabled && !self.servers[si].bots_disabled {
            self.servers[si].bots_disabled = true;
            self.stop_server_bots(si, at, "the server disables bots (_disableBots is set)");
        }
    }

    fn on_bot_event(&mut self, k: usize, sid: SessionId, at: Instant, ev: Event) {
        let si = self.bots[k].server;
        let clock = at.saturating_duration_since(self.epoch).as_secs_f32();
        // Flag types come from the shared picture (a robot's own session may not know flags grabbed before it
        // joined).
        let report = {
            let game_sid = self.source(si).unwrap_or(sid);
            let Some(game) = self.reactor.session(game_sid).or_else(|| self.reactor.session(sid)).map(|s| s.game())
            else {
                return;
            };
            self.bots[k].pilot.on_event(&ev, game, clock)
        };
        if let Some(r) = report {
            self.push_bot(k, at, r);
        }
        match &ev {
            Event::Accept { .. } => {
                self.join_seq += 1;
                let b = &mut self.bots[k];
                b.state = BotState::Joined;
                b.joined_at = Some(at);
                b.join_order = self.join_seq;
                if self.servers[si].world.is_none() {
                    // No observer link: the first bot in brings the world.
                    self.load_world(si, sid, at);
                }
                self.check_disable_bots(si, at);
            }
            Event::Closed { .. } => {
                self.owners.remove(&sid);
                self.closing.push(sid);
                let end = self.reactor.session(sid).and_then(|s| s.end().cloned());
                self.on_bot_closed(k, at, end);
                return;
            }
            _ => {}
        }
        if !matches!(ev, Event::Update(_) | Event::SetVar { .. } | Event::ShotBegin(_) | Event::ShotEnd { .. }) {
            let b = &mut self.bots[k];
            if b.pending.len() >= MAX_PENDING {
                b.pending.pop_front();
            }
            b.pending.push_back(ev);
        }
    }

    fn on_bot_closed(&mut self, k: usize, at: Instant, end: Option<SessionEnd>) {
        let max_backoff = self.config.max_backoff;
        let reconnect = self.config.reconnect && !self.leaving;
        let b = &mut self.bots[k];
        b.session = None;
        b.pilot.me = None;
        b.pending.clear();
        if b.joined_at.is_some_and(|t| at.saturating_duration_since(t) >= STABLE) {
            b.attempts = 0;
        }
        b.joined_at = None;
        if !matches!(b.state, BotState::Stopped(_)) {
            b.stopped_by = end.clone();
        }
        let (state, event) = match (&b.state, end) {
            (BotState::Stopped(r), _) => (BotState::Stopped(r.clone()), None),
            (BotState::Yielded, _) => (BotState::Yielded, None),
            (BotState::Leaving, _) | (_, Some(SessionEnd::Left)) => (BotState::Left, Some(BotEvent::Left)),
            (_, Some(SessionEnd::Kicked { reason })) => {
                let why =
                    if reason.is_empty() { "kicked by the server".to_string() } else { format!("kicked: {reason}") };
                (BotState::Stopped(why.clone()), Some(BotEvent::Stopped { reason: why }))
            }
            (_, Some(SessionEnd::Rejected { code, reason }))
                if code.remedy() == RejectRemedy::Rename && b.renames < 20 =>
            {
                b.renames += 1;
                b.callsign = format!("{}{}", b.config.callsign, b.renames + 1);
                b.wait_until = at + Duration::from_millis(300);
                let why = format!("callsign taken ({reason}); trying {}", b.callsign);
                (BotState::Waiting, Some(BotEvent::Disconnected { reason: why, retry_in: Some(0.3) }))
            }
            // The server went away or had no room: back off and come back.
            (_, Some(e)) if reconnect && comes_back(&e) => {
                let wait = backoff(b.attempts, max_backoff);
                b.wait_until = at + wait;
                let event = BotEvent::Disconnected { reason: e.to_string(), retry_in: Some(wait.as_secs_f32()) };
                (BotState::Waiting, Some(event))
            }
            (_, Some(e)) => (BotState::Stopped(e.to_string()), Some(BotEvent::Stopped { reason: e.to_string() })),
            (_, None) => (BotState::Stopped("the connection ended".into()), None),
        };
        if !matches!(state, BotState::Stopped(_)) {
            b.stopped_by = None;
        }
        b.state = state;
        if let Some(e) = event {
            self.push_bot(k, at, e);
        }
    }

    /// The session whose picture of the game a server's bots read: the eye, else the first joined bot.
    fn source(&self, si: usize) -> Option<SessionId> {
        match self.servers.get(si)?.eye {
            Eye::Joined(sid) => Some(sid),
            _ => self
                .bots
                .iter()
                .filter(|(_, b)| b.server == si && b.state == BotState::Joined)
                .min_by_key(|(_, b)| b.join_order)
                .and_then(|(_, b)| b.session),
        }
    }

    // ------------------------------------------------------------------ yielding

    fn manage_slots(&mut self, si: usize, now: Instant) {
        let Some(reserve) = self.config.yield_slots else { return };
        let Some(eye) = (match self.servers[si].eye {
            Eye::Joined(sid) => Some(sid),
            _ => None,
        }) else {
            return;
        };
        let s = &mut self.servers[si];
        let asked_long_ago = s.last_limits_ask.is_none_or(|t| now.saturating_duration_since(t) >= LIMITS_EVERY);
        let may_ask = s.last_limits_ask.is_none_or(|t| now.saturating_duration_since(t) >= Duration::from_millis(500));
        if (s.want_limits && may_ask) || asked_long_ago {
            s.want_limits = false;
            s.last_limits_ask = Some(now);
            self.reactor.with_session(eye, |sess, _| sess.send(&ClientMsg::QueryGame));
        }
        let Some((info, when)) = self.reactor.session(eye).and_then(|x| x.game().limits) else { return };
        let s = &mut self.servers[si];
        if s.limits_seen == Some(when) {
            return;
        }
        s.limits_seen = Some(when);
        let used: u32 = info.team_sizes.iter().map(|&n| u32::from(n)).sum();
        let total_free = u32::from(info.max_players).saturating_sub(used);
        let team_free = |t: Team| -> u32 {
            t.index()
                .filter(|&i| i < 6)
                .map_or(u32::MAX, |i| u32::from(info.team_max[i]).saturating_sub(u32::from(info.team_sizes[i])))
        };
        let reserve = u32::from(reserve);
        // The newest joined bot of a team short of room (or of any team when the server is) yields.
        let short = self
            .bots
            .iter()
            .filter(|(_, b)| b.server == si && b.state == BotState::Joined)
            .filter(|(_, b)| total_free < reserve || team_free(b.pilot.team) < reserve)
            .max_by_key(|(_, b)| b.join_order)
            .map(|(k, _)| k);
        if let Some(k) = short {
            let free = total_free.min(team_free(self.bots[k].pilot.team));
            let b = &mut self.bots[k];
            b.state = BotState::Yielded;
            b.wait_until = now + YIELD_HOLD;
            if let Some(sid) = b.session {
                self.reactor.leave(sid);
            }
            self.servers[si].want_limits = true;
            self.push_bot(k, now, BotEvent::Yielded { free: free.min(u32::from(u16::MAX)) as u16 });
            return;
        }
        // Room again: one yielded bot comes back when the team it will land on keeps the reserve after it joined
        // (it takes a slot; the next answer decides about the next one). With an automatic team bzfs puts it on
        // the emptiest colour team that is not full, so that is the team to check (every one of them on a tie).
        if total_free > reserve {
            let auto_free = auto_team_room(&info);
            let back = self
                .bots
                .iter()
                .filter(|(_, b)| b.server == si && b.state == BotState::Yielded && b.session.is_none())
                .filter(|(_, b)| b.wait_until <= now)
                .filter(|(_, b)| match b.config.team {
                    Team::Automatic => auto_free.is_some_and(|f| f > reserve),
                    t => team_free(t) > reserve,
                })
                .min_by_key(|(_, b)| b.join_order)
                .map(|(k, _)| k);
            if let Some(k) = back {
                self.bots[k].state = BotState::Waiting;
                self.bots[k].wait_until = now;
                self.servers[si].want_limits = true;
            }
        }
    }

    // ------------------------------------------------------------------ the tick

    fn tick(&mut self, now: Instant) {
        let clock = now.saturating_duration_since(self.epoch).as_secs_f32();
        for si in 0..self.servers.len() {
            self.manage_slots(si, now);
            let source = self.source(si);
            self.tick_server(si, source, now, clock);
        }
        self.flush(now);
    }

    fn tick_server(&mut self, si: usize, source: Option<SessionId>, now: Instant, clock: f32) {
        let Some(game) = source.and_then(|sid| self.reactor.session(sid)).map(|s| s.game()) else { return };
        let s = &mut self.servers[si];
        let Some(world) = s.world.as_deref() else { return };
        s.scene.follow(game, Some(world), now);
        let Some(phys) = s.scene.physics() else { return };

        // Every tank, dead-reckoned to now.
        let ours: Vec<u8> = self.bots.iter().filter(|(_, b)| b.server == si).filter_map(|(_, b)| b.pilot.me).collect();
        s.tanks.clear();
        s.tanks.extend(s.scene.tanks().iter().map(|t| TankView { ours: ours.contains(&t.id), ..t.clone() }));

        // Every bot of this server decides and steps.
        let paused: PlayerSet = s.tanks.iter().filter(|t| t.paused).map(|t| t.id).collect();
        let (tanks, tracker, nav) = (&s.tanks, s.scene.shots(), &s.nav);
        let reactor = &self.reactor;
        let mut notes: Vec<(usize, BotEvent)> = Vec::new();
        let own_tanks: Vec<(u8, crate::bzflag::play::Tank)> = self
            .bots
            .iter()
            .filter(|(_, b)| b.server == si && b.state == BotState::Joined && b.pilot.tank.is_alive())
            .filter_map(|(_, b)| Some((b.pilot.me?, b.pilot.tank.clone())))
            .collect();
        // Teams with a bot of ours about to respawn where bzfs likes: its team mates hold fire until it is back.
        let respawning: Vec<Team> = self
            .bots
            .iter()
            .filter(|(_, b)| b.server == si && b.state == BotState::Joined && b.pilot.awaiting_spawn())
            .map(|(_, b)| b.pilot.team)
            .filter(|t| phys.team_kills() && !matches!(t, Team::Rogue | Team::NoTeam))
            .collect();
        for (k, b) in self.bots.iter_mut().filter(|(_, b)| b.server == si && b.state == BotState::Joined) {
            let Some(me) = b.pilot.me else { continue };
            let may_fire = b.config.player_type == PlayerType::Computer
                || b.session.and_then(|sid| reactor.session(sid)).is_some_and(|x| x.udp_up());
            let BotSlot { bot, control, pilot, pending, callsign, chat, watch, .. } = b;
            let dt = pilot.since_last_step(now);
            {
                let view = View {
                    now,
                    time: clock,
                    dt,
                    me: Me {
                        id: me,
                        team: pilot.team,
                        callsign,
                        tank: &pilot.tank,
                        reload: pilot.reload(clock, phys),
                        flag_index: pilot.flag_index,
                        next_shot_id: pilot.next_shot_id(clock, phys),
                    },
                    world,
                    phys,
                    game,
                    tanks,
                    own_tanks: &own_tanks,
                    shots: tracker,
                    nav,
                };
                for ev in pending.drain(..) {
                    bot.on_event(&view, &ev);
                }
                bot.tick(&view, control);
                if let Some(seconds) = watch.check(clock, &pilot.tank, control, pilot.stats.shots) {
                    bot.on_stuck(&view);
                    notes.push((k, BotEvent::Stuck { pos: pilot.tank.pos.to_array(), seconds }));
                }
                watch.steer(clock, control);
                if control.fire
                    && (respawning.contains(&pilot.team)
                        || crate::bot::brains::common::shot_after_step_endangers(&view, control))
                {
                    control.fire = false;
                }
            }
            notes.extend(control.notes.drain(..).map(|e| (k, e)));
            let shared = Shared { now, clock, world, phys, game, shots: tracker, tanks, paused: &paused };
            pilot.tick(&shared, control, may_fire);
            chat.append(&mut control.chat);
            control.end_tick();
        }
        for (k, e) in notes {
            self.push_bot(k, now, e);
        }
    }

    /// Sends what every pilot produced.
    fn flush(&mut self, _now: Instant) {
        for (_, b) in self.bots.iter_mut() {
            if b.pilot.out.is_empty() && b.chat.is_empty() {
                continue;
            }
            let Some(sid) = b.session else {
                b.pilot.out.clear();
                b.chat.clear();
                continue;
            };
            let out = std::mem::take(&mut b.pilot.out);
            let chat = std::mem::take(&mut b.chat);
            self.reactor.with_session(sid, |s, _| {
                for m in &out {
                    s.send(m);
                }
                for (to, text) in &chat {
                    s.send_chat(*to, text);
                }
            });
            b.pilot.out = out;
            b.pilot.out.clear();
        }
    }
}

/// The free slots of the team an automatically teamed player would be put on, before it joins: bzfs's
/// `autoTeamSelect` narrows the colour teams that take players (maximum above 0) to candidates (all of them while
/// every one is empty; else the teams that are not full, and when the sizes differ, not the biggest ones, and
/// not empty ones while a non-empty one is below the biggest, except to make a 1-1 pair), then picks among them
/// by team score and at random; we take the least room among the candidates. Rogue when no colour team takes
/// players. `None` when there is no room.
fn auto_team_room(info: &crate::bzflag::msg::QueryGameInfo) -> Option<u32> {
    let size = |i: usize| u32::from(info.team_sizes[i]);
    let room = |i: usize| u32::from(info.team_max[i]).saturating_sub(size(i));
    let rogue = || (room(0) > 0).then(|| room(0));
    let mut teams: Vec<usize> = (1..=4).filter(|&i| info.team_max[i] > 0).collect();
    if teams.is_empty() {
        return rogue();
    }
    teams.sort_by_key(|&i| std::cmp::Reverse(size(i)));
    let biggest = size(teams[0]);
    if biggest > 0 {
        teams.retain(|&i| room(i) > 0);
        let smallest = teams.last().map(|&i| size(i))?;
        if smallest < biggest {
            if biggest == 1 && teams.len() >= 2 && size(teams[1]) == 1 {
                teams.retain(|&i| size(i) > 0);
            } else {
                teams.retain(|&i| size(i) != biggest);
                if teams.first().is_some_and(|&i| size(i) > 0) {
                    teams.retain(|&i| size(i) > 0);
                    let lower = teams.last().map(|&i| size(i))?;
                    teams.retain(|&i| size(i) == lower);
                }
            }
        }
    }
    match teams.iter().map(|&i| room(i)).min() {
        Some(r) => Some(r),
        None => rogue(),
    }
}

/// 1 s doubling per attempt, at most `max`.
/// Whether a bot whose session ended this way joins again after a back-off (with [`HostConfig::reconnect`]): when
/// the server went away, stalled or broke the stream, or had no room or wants a rejoin wait
/// ([`RejectRemedy::Wait`]); not after a kick or a reject that waiting cannot cure.
fn comes_back(end: &SessionEnd) -> bool {
    match end {
        SessionEnd::Rejected { code, .. } => code.remedy() == RejectRemedy::Wait,
        SessionEnd::ServerFull
        | SessionEnd::ConnectFailed(_)
        | SessionEnd::Shutdown
        | SessionEnd::ServerClosed { .. }
        | SessionEnd::Timeout { .. }
        | SessionEnd::Protocol(_) => true,
        SessionEnd::Left | SessionEnd::Kicked { .. } => false,
    }
}

fn backoff(attempts: u32, max: Duration) -> Duration {
    let secs = 1u64 << attempts.saturating_sub(1).min(16);
    Duration::from_secs(secs).min(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_automatic_team_lands_on_the_emptiest_open_team() {
        let info = |sizes: [u16; 6], max: [u16; 6]| crate::bzflag::msg::QueryGameInfo {
            team_sizes: sizes,
            team_max: max,
            ..Default::default()
        };
        // Red 0/2, green 1/2: a 1-0 game goes to red (the other team), with 2 free.
        assert_eq!(auto_team_room(&info([0, 0, 1, 0, 0, 1], [0, 2, 2, 0, 0, 3])), Some(2));
        // A tie: the least room of the tied teams.
        assert_eq!(auto_team_room(&info([0, 1, 1, 0, 0, 1], [0, 2, 3, 0, 0, 3])), Some(1));
        // Red full: green.
        assert_eq!(auto_team_room(&info([0, 2, 1, 0, 0, 0], [0, 2, 4, 0, 0, 3])), Some(3));
        // Red 2, green 1, blue and purple empty (5 each): bzfs balances green rather than starting a team.
        assert_eq!(auto_team_room(&info([0, 2, 1, 0, 0, 0], [0, 5, 5, 5, 5, 3])), Some(4));
        // Every team empty: any of them.
        assert_eq!(auto_team_room(&info([0, 0, 0, 0, 0, 0], [0, 5, 3, 0, 0, 3])), Some(3));
        // Only rogues.
        assert_eq!(auto_team_room(&info([3, 0, 0, 0, 0, 0], [8, 0, 0, 0, 0, 3])), Some(5));
        assert_eq!(auto_team_room(&info([2, 2, 2, 0, 0, 0], [2, 2, 2, 0, 0, 3])), None);
    }

    #[test]
    fn back_off_doubles_to_its_limit() {
        let max = Duration::from_secs(30);
        let waits: Vec<u64> = (0..8).map(|a| backoff(a, max).as_secs()).collect();
        assert_eq!(waits, vec![1, 1, 2, 4, 8, 16, 30, 30]);
        assert_eq!(backoff(u32::MAX, max), max);
    }
}
