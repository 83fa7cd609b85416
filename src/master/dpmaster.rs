//! A dpmaster-compatible master (dpmaster 2.2's protocol, `doc/techinfo.txt`) as a sans-IO engine: datagrams and
//! `now` in ([`Dpmaster::handle_datagram`], [`Dpmaster::handle_timeout`]), datagrams out
//! ([`Dpmaster::poll_transmit`]) and the next deadline ([`Dpmaster::poll_timeout`]). No socket, no clock; the
//! challenges come from the operating system's random source (`getrandom`).
//!
//! * **Heartbeat** `heartbeat <tag>\n` from a server: `DarkPlaces` (the server names its game in its info), or a tag
//!   of a known game ([`Game::heartbeat`]: `QuakeArena-1`, `Wolfenstein-1`, `EnemyTerritory-1`); a game's flatline
//!   tag (`WolfFlatline-1`, `ETFlatline-1`) is ignored, an unknown tag refused. The master answers `getinfo
//!   <challenge>` to the heartbeat's **source address** (so a heartbeat forged for another address can never be
//!   completed), a challenge of [`CHALLENGE_LEN`] printable characters (33–126 but `\ / ; " %`) valid for
//!   [`CHALLENGE_TIMEOUT`]. A new server waits that long for its answer ("pending"); more heartbeats do not extend it,
//!   they get the same challenge again while it is valid.
//! * **infoResponse** `infoResponse\n\key\value...` from the same address, with that challenge and `sv_maxclients`
//!   (not 0), `protocol` (a number), `clients`, `gamename` (no spaces; absent when the heartbeat named the game) and
//!   `gametype` (no spaces, default `0`): the server is listed for the lease ([`Config::lease`], 15 minutes). A
//!   challenge is **single-use**: the reply that used it cannot be replayed, and only a new valid reply (after a new
//!   heartbeat) renews the lease.
//! * **getservers** `[game] <protocol> [empty] [full] [gametype=X | ffa | tourney | team | ctf]` and
//!   **getserversExt** `<game> <protocol> [filters] [ipv4] [ipv6]`: the listed servers of that game and protocol,
//!   `\` + IPv4 + port and (Ext only) `/` + IPv6 + port, in datagrams of at most [`MAX_DATAGRAM_OUT`] bytes; only
//!   the last ends with `\EOT\0\0\0`. Empty and full servers only when asked for (or when the game's options say so).
//!   A request without a game name belongs to the game whose [`Game::protocols`] hold its protocol, else to the game
//!   of the first server of that protocol that registered with a game's heartbeat (as dpmaster does).
//!
//! Policies, as dpmaster's options ([`Config`]): most servers (`-n`), most servers per IP address (`-N`), flood
//! protection of list requests per IP address (`-f --fp-throttle`, decay [`FP_DECAY`]), a game accept/reject list
//! (`--game-policy`), game properties (`-g`), and loopback and private server addresses refused (unless
//! `--allow-loopback`); an IPv6 address counts by its /64, as in dpmaster. Beyond dpmaster: heartbeats are throttled per IP address too (a burst of twice the per-address
//! cap, then one per server slot every [`CHALLENGE_TIMEOUT`]), datagrams over [`MAX_DATAGRAM_IN`] bytes are refused
//! unread, and the tables of throttled peers hold at most [`MAX_PEERS`] addresses each. Memory is bounded by the caps:
//! at most `max_servers` servers (pending ones included), a 72-byte record each in one array, their game names and
//! types interned (at most [`MAX_NAMES`] of each at once, of at most [`GAMENAME_MAX`] and [`GAMETYPE_MAX`] bytes: a
//! registration with a new one past that is refused), at most two peer tables of [`MAX_PEERS`], and one reply's
//! datagrams queued. Ended leases and unanswered challenges are swept out of the array at most every
//! [`SWEEP_EVERY`] (out of every list at once). `now` must not go back before the first input's.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use tracing::{debug, warn};

use super::Counters;
use crate::query::filter::special_use;
use crate::reactor::{UdpService, UdpTransmit};

/// dpmaster's port.
pub const DEFAULT_PORT: u16 = 27950;
/// Datagrams longer than this are refused unread (dpmaster's `MAX_PACKET_SIZE_IN`).
pub const MAX_DATAGRAM_IN: usize = 2048;
/// Reply datagrams are at most this long (dpmaster's `MAX_PACKET_SIZE_OUT`).
pub const MAX_DATAGRAM_OUT: usize = 1400;
/// Default [`Config::max_servers`] (dpmaster's default).
pub const DEFAULT_MAX_SERVERS: usize = 4096;
/// Default [`Config::max_per_address`] (dpmaster's default).
pub const DEFAULT_MAX_PER_ADDRESS: usize = 32;
/// Default [`Config::flood_throttle`] (dpmaster's `--fp-throttle` default; dpmaster's protection is off unless `-f`).
pub const DEFAULT_FLOOD_THROTTLE: u32 = 5;
/// A list request's weight decays in this long (dpmaster's `--fp-decay-time` default).
pub const FP_DECAY: Duration = Duration::from_secs(3);
/// Default [`Config::lease`]: a listed server stays that long after its last valid `infoResponse`.
pub const LEASE: Duration = Duration::from_secs(15 * 60);
/// How long a challenge may be answered, and a new server waits for its answer.
pub const CHALLENGE_TIMEOUT: Duration = Duration::from_secs(2);
/// Characters of a challenge.
pub const CHALLENGE_LEN: usize = 12;
/// Longest game name kept (dpmaster keeps 63 bytes).
pub const GAMENAME_MAX: usize = 63;
/// Longest game type kept; longer ones are cut (as dpmaster does).
pub const GAMETYPE_MAX: usize = 31;
/// Most addresses a throttle table tracks; past it, idle entries are dropped, and a new address is throttled while
/// every entry is busy.
pub const MAX_PEERS: usize = 65_536;

const OOB: &[u8] = b"\xff\xff\xff\xff";
const EOT: &[u8] = b"\\EOT\0\0\0";

/// A game's properties (dpmaster's `-g`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Game {
    /// Its game name (`gamename`).
    pub name: String,
    /// Protocol numbers that name it in anonymous requests.
    pub protocols: Vec<i32>,
    /// The heartbeat tag its servers send (they may then leave `gamename` out).
    pub heartbeat: Option<String>,
    /// The tag of its servers' shutdown heartbeat (ignored).
    pub flatline: Option<String>,
    /// Its clients get empty servers without asking.
    pub send_empty: bool,
    /// Its clients get full servers without asking.
    pub send_full: bool,
}

/// dpmaster 2.2's built-in game properties (`src/games.c`).
pub fn builtin_games() -> Vec<Game> {
    let game = |name: &str, protocols: &[i32], hb: &str, flat: Option<&str>, all: bool| Game {
        name: name.into(),
        protocols: protocols.to_vec(),
        heartbeat: Some(hb.into()),
        flatline: flat.map(Into::into),
        send_empty: all,
        send_full: all,
    };
    vec![
        game("Quake3Arena", &[66, 67, 68], "QuakeArena-1", None, false),
        game("wolfmp", &[50, 59, 60], "Wolfenstein-1", Some("WolfFlatline-1"), false),
        game("et", &[72, 80, 83, 84], "EnemyTerritory-1", Some("ETFlatline-1"), true),
    ]
}

/// Applies one dpmaster `-g` change to `games`: `protocols`, `options` (`send-empty-servers`,
/// `send-full-servers`), `heartbeat` or `flatline`, with `=` (set), `+=` (add) or `-=` (remove), values separated by
/// commas. A game not in `games` yet is added.
pub fn apply_property(games: &mut Vec<Game>, game: &str, change: &str) -> Result<(), String> {
    if game.is_empty() || game.len() > GAMENAME_MAX || game.contains(char::is_whitespace) {
        return Err(format!("game {game:?}: expected a game name without spaces"));
    }
    let (key, op, values) = if let Some((k, v)) = change.split_once("+=") {
        (k, '+', v)
    } else if let Some((k, v)) = change.split_once("-=") {
        (k, '-', v)
    } else if let Some((k, v)) = change.split_once('=') {
        (k, '=', v)
    } else {
        return Err(format!("{change:?}: expected KEY=VALUE, KEY+=VALUE or KEY-=VALUE"));
    };
    let values: Vec<&str> = values.split(',').filter(|v| !v.is_empty()).collect();
    let i = match games.iter().position(|g| g.name == game) {
        Some(i) => i,
        None => {
            games.push(Game { name: game.into(), ..Game::default() });
            games.len() - 1
        }
    };
    let g = &mut games[i];
    match key {
        "protocols" => {
            let mut nums = Vec::new();
            for v in &values {
                nums.push(v.parse::<i32>().map_err(|_| format!("protocols: {v:?} is not a number"))?);
            }
            match op {
                '=' => g.protocols = nums,
                '+' => g.protocols.extend(nums.iter().filter(|n| !g.protocols.contains(n)).collect::<Vec<_>>()),
                _ => g.protocols.retain(|p| !nums.contains(p)),
            }
        }
        "options" => {
            let mut empty = None;
            let mut full = None;
            for v in &values {
                match *v {
                    "send-empty-servers" => empty = Some(op != '-'),
                    "send-full-servers" => full = Some(op != '-'),
                    "none" if op == '=' => {}
                    _ => return Err(format!("options: {v:?} (send-empty-servers or send-full-servers)")),
                }
            }
            if op == '=' {
                g.send_empty = empty.unwrap_or(false);
                g.send_full = full.unwrap_or(false);
            } else {
                g.send_empty = empty.unwrap_or(g.send_empty);
                g.send_full = full.unwrap_or(g.send_full);
            }
        }
        "heartbeat" | "flatline" => {
            let slot = if key == "heartbeat" { &mut g.heartbeat } else { &mut g.flatline };
            match (op, values.as_slice()) {
                ('-', _) | ('=', []) => *slot = None,
                (_, [tag]) if tag.len() <= 63 && tag.bytes().all(|b| b.is_ascii_graphic()) => {
                    *slot = Some((*tag).into())
                }
                _ => return Err(format!("{key}: expected one tag without spaces")),
            }
        }
        _ => return Err(format!("{key:?}: expected protocols, options, heartbeat or flatline")),
    }
    Ok(())
}

/// Which games are served (dpmaster's `--game-policy`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum GamePolicy {
    /// Every game.
    #[default]
    All,
    /// Only these.
    Accept(Vec<String>),
    /// All but these.
    Reject(Vec<String>),
}

impl GamePolicy {
    /// Whether `game` is served.
    pub fn accepts(&self, game: &str) -> bool {
        match self {
            GamePolicy::All => true,
            GamePolicy::Accept(names) => names.iter().any(|n| n == game),
            GamePolicy::Reject(names) => !names.iter().any(|n| n == game),
        }
    }
}

/// The master's policies.
#[derive(Debug, Clone)]
pub struct Config {
    /// Most servers, pending ones included (`-n`).
    pub max_servers: usize,
    /// Most servers per IP address, pending ones included (`-N`).
    pub max_per_address: usize,
    /// List requests per IP address beyond which requests are dropped, one more allowed every [`FP_DECAY`]
    /// (`--fp-throttle`); the same 0 turns the heartbeat throttle off too (for benchmarks).
    pub flood_throttle: u32,
    /// Loopback, private and other special-use server addresses are listed too (`--allow-loopback`).
    pub allow_private: bool,
    /// How long a valid `infoResponse` lists a server.
    pub lease: Duration,
    /// Games served.
    pub policy: GamePolicy,
    /// Game properties.
    pub games: Vec<Game>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            max_servers: DEFAULT_MAX_SERVERS,
            max_per_address: DEFAULT_MAX_PER_ADDRESS,
            flood_throttle: DEFAULT_FLOOD_THROTTLE,
            allow_private: false,
            lease: LEASE,
            policy: GamePolicy::All,
            games: builtin_games(),
        }
    }
}

/// A listed server, as [`Dpmaster::listed`] gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Its address (the heartbeat's source).
    pub addr: SocketAddr,
    /// Game name.
    pub game: String,
    /// Protocol number.
    pub protocol: i32,
    /// Game type.
    pub gametype: String,
    /// Clients (bots included, as the server counts them).
    pub clients: u32,
    /// Slots.
    pub max_clients: u32,
}

/// A server's address as a reply carries it: `\` + IPv4 address + port (7 bytes used, the rest zero) or `/` + IPv6
/// address + port (19 bytes), ports big-endian. It is also the server's key.
type Record = [u8; 19];

fn record(a: SocketAddr) -> Record {
    let mut r = [0u8; 19];
    match a.ip() {
        IpAddr::V4(ip) => {
            r[0] = b'\\';
            r[1..5].copy_from_slice(&ip.octets());
            r[5..7].copy_from_slice(&a.port().to_be_bytes());
        }
        IpAddr::V6(ip) => {
            r[0] = b'/';
            r[1..17].copy_from_slice(&ip.octets());
            r[17..19].copy_from_slice(&a.port().to_be_bytes());
        }
    }
    r
}

fn address(r: &Record) -> SocketAddr {
    let (ip, port): (IpAddr, [u8; 2]) = if r[0] == b'\\' {
        (IpAddr::from([r[1], r[2], r[3], r[4]]), [r[5], r[6]])
    } else {
        let mut v6 = [0u8; 16];
        v6.copy_from_slice(&r[1..17]);
        (IpAddr::from(v6), [r[17], r[18]])
    };
    SocketAddr::new(ip, u16::from_be_bytes(port))
}

/// [`Server::hb_game`] of a server whose heartbeat named no game (`DarkPlaces`).
const NO_GAME: u32 = u32::MAX;
/// A name id no name has: a request's game or game type that no listed server has.
const NO_NAME: u16 = u16::MAX;

/// A server, pending or listed: one record of the master's dense table, 72 bytes (a unit test holds it to that).
/// Times are nanoseconds since the master's first input.
struct Server {
    rec: Record,
    /// It has a listing (the fields below `hb_game` are its): it answered a challenge.
    listed: bool,
    /// It registered with a game's heartbeat (it can name the game of an anonymous request).
    anonymous: bool,
    /// A challenge was sent that is not used yet.
    challenged: bool,
    /// The game its last heartbeat named (an index in the games), [`NO_GAME`] for `DarkPlaces`.
    hb_game: u32,
    /// Game name and type, ids in the master's [`Names`].
    game: u16,
    gametype: u16,
    protocol: i32,
    clients: u32,
    max_clients: u32,
    challenge: [u8; CHALLENGE_LEN],
    /// Pending: until when it waits for its answer; listed: the end of its lease.
    expires: u64,
    /// Until when the challenge may be answered.
    challenge_until: u64,
}

/// Most distinct game names, and most distinct game types, held at once ([`Names`]): a registration with a new one
/// past it is refused. Not reached with the default [`Config::max_servers`] (one name of each per server).
pub const MAX_NAMES: usize = 4096;

/// Game names (or game types) interned: a server holds a 2-byte id, not a string. At most [`MAX_NAMES`] distinct
/// names at once, each counted by the servers that hold it and freed with the last of them, so that the table
/// cannot grow past the bound whatever peers send.
#[derive(Default)]
struct Names {
    ids: HashMap<Box<str>, u16>,
    /// By id: the name and how many servers hold it (0: a free id, listed in `free`).
    names: Vec<(Box<str>, u32)>,
    free: Vec<u16>,
}

impl Names {
    /// The id of `name` if a server holds it.
    fn get(&self, name: &str) -> Option<u16> {
        self.ids.get(name).copied()
    }

    /// Takes a hold of `name`: its id, `None` when it is new and [`MAX_NAMES`] are held.
    fn acquire(&mut self, name: &str) -> Option<u16> {
        if let Some(&id) = self.ids.get(name) {
            if let Some((_, refs)) = self.names.get_mut(usize::from(id)) {
                *refs += 1;
            }
            return Some(id);
        }
        if self.ids.len() >= MAX_NAMES {
            return None;
        }
        let id = match self.free.pop() {
            Some(id) => id,
            None => u16::try_from(self.names.len()).ok().filter(|id| *id != NO_NAME)?,
        };
        let entry = (Box::<str>::from(name), 1);
        match self.names.get_mut(usize::from(id)) {
            Some(slot) => *slot = entry,
            None => self.names.push(entry),
        }
        self.ids.insert(name.into(), id);
        Some(id)
    }

    /// Lets go of a hold of `id`.
    fn release(&mut self, id: u16) {
        let Some((name, refs)) = self.names.get_mut(usize::from(id)) else { return };
        *refs = refs.saturating_sub(1);
        if *refs == 0 {
            self.ids.remove(&**name);
            *name = Box::from("");
            self.free.push(id);
        }
    }

    fn name(&self, id: u16) -> &str {
        self.names.get(usize::from(id)).map_or("", |(n, _)| n)
    }
}

/// A per-address rate limit (GCRA): a burst of `burst`, then one every `every`.
struct Throttle {
    burst: u32,
    every: Duration,
    /// Per address, the theoretical arrival time of its next request.
    peers: HashMap<IpAddr, Instant>,
    /// No purge of idle entries before this (a purge that freed nothing is not repeated at once).
    next_purge: Option<Instant>,
}

impl Throttle {
    fn new(burst: u32, every: Duration) -> Throttle {
        Throttle { burst, every, peers: HashMap::new(), next_purge: None }
    }

    /// Whether a request from `ip` at `now` passes (and counts it).
    fn allow(&mut self, now: Instant, ip: IpAddr) -> bool {
        if self.burst == 0 {
            return true;
        }
        if !self.peers.contains_key(&ip) && self.peers.len() >= MAX_PEERS {
            if self.next_purge.is_some_and(|t| now < t) {
                return false;
            }
            self.peers.retain(|_, tat| *tat > now);
            self.next_purge = Some(now + Duration::from_secs(1));
            if self.peers.len() >= MAX_PEERS {
                return false;
            }
        }
        let tat = self.peers.entry(ip).or_insert(now);
        let start = (*tat).max(now);
        let next = start + self.every;
        if next.saturating_duration_since(now) > self.every * self.burst {
            return false;
        }
        *tat = next;
        true
    }
}

/// Challenges from the operating system's random source, drawn a pool at a time.
#[derive(Default)]
struct Challenges {
    pool: Vec<u8>,
    used: usize,
}

/// The characters of a challenge: printable ASCII 33–126 without `\ / ; " %` (89 of them).
const ALPHABET: [u8; 89] = {
    let mut a = [0u8; 89];
    let (mut c, mut i) = (33u8, 0);
    while c <= 126 {
        if c != b'\\' && c != b'/' && c != b';' && c != b'"' && c != b'%' {
            a[i] = c;
            i += 1;
        }
        c += 1;
    }
    a
};

impl Challenges {
    const POOL: usize = 1024;

    fn next(&mut self) -> Option<[u8; CHALLENGE_LEN]> {
        let mut out = [0u8; CHALLENGE_LEN];
        let mut n = 0;
        while n < CHALLENGE_LEN {
            if self.used >= self.pool.len() {
                self.pool.resize(Self::POOL, 0);
                if let Err(e) = getrandom::fill(&mut self.pool) {
                    warn!(error = %e, "dpmaster: no random bytes from the operating system");
                    self.pool.clear();
                    self.used = 0;
                    return None;
                }
                self.used = 0;
            }
            let b = self.pool.get(self.used).copied().unwrap_or(0);
            self.used += 1;
            // Bytes past the largest multiple of 89 are skipped, so that every character is as likely.
            if usize::from(b) < 2 * ALPHABET.len() {
                out[n] = ALPHABET[usize::from(b) % ALPHABET.len()];
                n += 1;
            }
        }
        Some(out)
    }
}

/// A sweep of the table for ended leases and unanswered challenges runs at most this often (a deadline waits for
/// the next one): the table is an array walked in full, and a steady stream of new servers would otherwise walk it
/// for each of them. Ended leases are out of every list at once; only their slots are freed that much later.
pub const SWEEP_EVERY: Duration = Duration::from_millis(200);

/// The master. See the module documentation.
///
/// The servers are one dense array (walked in order by a list request: a reply is a copy of the [`Record`]s that
/// pass its filters), found by address through an index, removed by swapping the last one into their slot.
pub struct Dpmaster {
    cfg: Config,
    servers: Vec<Server>,
    /// Position in `servers` by record.
    index: HashMap<Record, u32>,
    /// Servers per IPv4 address or IPv6 /64 ([`quota_slot`]).
    per_ip: HashMap<u64, u32>,
    games: Names,
    types: Names,
    /// The first input's time: the table's times are nanoseconds since it.
    epoch: Option<Instant>,
    /// No server's deadline is before this (nanoseconds; it may be earlier than the earliest one).
    next_deadline: Option<u64>,
    /// When the last sweep ran (nanoseconds).
    last_sweep: Option<u64>,
    clients: Throttle,
    heartbeats: Throttle,
    challenges: Challenges,
    out: VecDeque<UdpTransmit>,
    counters: Counters,
    /// Servers with a listing (the others are pending).
    listed: usize,
    /// Servers mirrored from upstream masters ([`Dpmaster::set_mirrored`]).
    mirrored: Vec<Listed>,
}

/// Where a request's replies go: the socket it came to and its source as it came.
#[derive(Clone, Copy)]
struct Reply {
    socket: usize,
    to: SocketAddr,
}

impl Reply {
    fn with(self, bytes: Vec<u8>) -> UdpTransmit {
        UdpTransmit { socket: self.socket, to: self.to, bytes }
    }
}

/// What the per-address caps and throttles count by: an IPv4 address, or an IPv6 address's /64 (its subnet, as
/// dpmaster counts: one host holds a whole /64).
fn quota_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => IpAddr::V6((u128::from(v6) & !u128::from(u64::MAX)).into()),
    }
}

/// The first space-separated word of `s` and the rest.
fn word(s: &str) -> (&str, &str) {
    let s = s.trim_start_matches(' ');
    s.split_once(' ').unwrap_or((s, ""))
}

/// C's `atoi` on a value: leading digits, 0 when none (saturating).
fn atoi(v: &[u8]) -> u32 {
    v.iter()
        .take_while(|b| b.is_ascii_digit())
        .fold(0u32, |n, b| n.saturating_mul(10).saturating_add(u32::from(b - b'0')))
}

/// The per-address cap's key: an IPv4 address (tagged in the top byte with `ff`, a multicast prefix no source has)
/// or an IPv6 address's /64 (as [`quota_key`]).
fn quota_slot(ip: IpAddr) -> u64 {
    match ip {
        IpAddr::V4(v4) => 0xff00_0000_0000_0000 | u64::from(u32::from(v4)),
        IpAddr::V6(v6) => (u128::from(v6) >> 64) as u64,
    }
}

impl Dpmaster {
    /// A master with these policies.
    pub fn new(cfg: Config) -> Dpmaster {
        let hb_burst = if cfg.flood_throttle == 0 { 0 } else { (cfg.max_per_address.max(1) * 2).min(1 << 20) as u32 };
        let hb_every = CHALLENGE_TIMEOUT / u32::try_from(cfg.max_per_address.clamp(1, 1 << 20)).unwrap_or(1);
        Dpmaster {
            clients: Throttle::new(cfg.flood_throttle, FP_DECAY),
            heartbeats: Throttle::new(hb_burst, hb_every),
            cfg,
            servers: Vec::new(),
            index: HashMap::new(),
            per_ip: HashMap::new(),
            games: Names::default(),
            types: Names::default(),
            epoch: None,
            next_deadline: None,
            last_sweep: None,
            challenges: Challenges::default(),
            out: VecDeque::new(),
            counters: Counters::default(),
            listed: 0,
            mirrored: Vec::new(),
        }
    }

    /// `now` as the table's time (the first input's time is 0; an earlier `now` is 0 too).
    fn ns(&mut self, now: Instant) -> u64 {
        let epoch = *self.epoch.get_or_insert(now);
        u64::try_from(now.saturating_duration_since(epoch).as_nanos()).unwrap_or(u64::MAX)
    }

    fn duration_ns(d: Duration) -> u64 {
        u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
    }

    /// A deadline at `t` (nanoseconds).
    fn deadline(&mut self, t: u64) {
        self.next_deadline = Some(self.next_deadline.map_or(t, |d| d.min(t)));
    }

    /// The counters, with the servers listed and pending.
    pub fn counters(&self) -> Counters {
        let listed = self.listed as u64;
        Counters { listed, pending: (self.servers.len() as u64).saturating_sub(listed), ..self.counters }
    }

    /// The servers listed at `now`.
    pub fn listed(&self, now: Instant) -> Vec<Listed> {
        let now = self.epoch.map_or(0, |e| now.saturating_duration_since(e).as_nanos());
        self.servers
            .iter()
            .filter(|s| s.listed && u128::from(s.expires) > now)
            .map(|s| Listed {
                addr: address(&s.rec),
                game: self.games.name(s.game).to_owned(),
                protocol: s.protocol,
                gametype: self.types.name(s.gametype).to_owned(),
                clients: s.clients,
                max_clients: s.max_clients,
            })
            .collect()
    }

    /// The servers mirrored from upstream masters (the monitor's `[[master]]` sources, with what its queries say of
    /// them), listed in the replies after the registered ones under the same filters; a server registered here is
    /// listed once, with its own listing. Replaced as a whole; at most [`Config::max_servers`] kept. A mirrored server
    /// of a game with a heartbeat tag ([`Game::heartbeat`]) names the game of an anonymous request as a registered
    /// one does.
    pub fn set_mirrored(&mut self, mut list: Vec<Listed>) {
        list.truncate(self.cfg.max_servers);
        self.mirrored = list;
    }

    /// The position of the server at `addr` (canonical) in the table.
    fn find(&self, addr: SocketAddr) -> Option<usize> {
        self.index.get(&record(addr)).map(|&i| i as usize)
    }

    /// A datagram from `from` on the service's socket `socket` (replies go out on the same socket).
    pub fn handle_datagram(&mut self, now: Instant, socket: usize, peer: SocketAddr, data: &[u8]) {
        // Servers are known by their canonical address; replies go to the address as it came (its socket's family).
        let from = SocketAddr::new(peer.ip().to_canonical(), peer.port());
        let reply = Reply { socket, to: peer };
        if data.len() > MAX_DATAGRAM_IN {
            self.counters.refused += 1;
            debug!(%from, len = data.len(), "dpmaster: oversized datagram refused");
            return;
        }
        let Some(msg) = data.strip_prefix(OOB) else {
            self.counters.refused += 1;
            return;
        };
        if let Some(rest) = msg.strip_prefix(b"heartbeat ") {
            self.heartbeat(now, reply, from, rest);
        } else if let Some(rest) = msg.strip_prefix(b"infoResponse\n") {
            self.info_response(now, from, rest);
        } else if let Some(rest) = msg.strip_prefix(b"getserversExt ") {
            self.getservers(now, reply, from, rest, true);
        } else if let Some(rest) = msg.strip_prefix(b"getservers ") {
            self.getservers(now, reply, from, rest, false);
        } else {
            self.counters.refused += 1;
        }
    }

    /// The next datagram to send.
    pub fn poll_transmit(&mut self) -> Option<UdpTransmit> {
        self.out.pop_front()
    }

    /// When [`Dpmaster::handle_timeout`] is due next: a pending server's wait or a lease ends (at most every
    /// [`SWEEP_EVERY`]).
    pub fn poll_timeout(&self) -> Option<Instant> {
        let due = self.next_deadline?;
        let due = self.last_sweep.map_or(due, |t| due.max(t.saturating_add(Self::duration_ns(SWEEP_EVERY))));
        self.epoch?.checked_add(Duration::from_nanos(due))
    }

    /// Drops the pending servers whose challenge went unanswered and the servers whose lease ended.
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.ns(now);
        self.last_sweep = Some(now);
        let mut next = None::<u64>;
        let mut i = 0;
        while let Some(s) = self.servers.get(i) {
            if s.expires > now {
                next = Some(next.map_or(s.expires, |n| n.min(s.expires)));
                i += 1;
                continue;
            }
            if s.listed {
                self.counters.leases_expired += 1;
                debug!(server = %address(&s.rec), "dpmaster: lease expired");
            } else {
                self.counters.challenges_failed += 1;
            }
            self.remove_at(i); // the last server comes to `i`: looked at next
        }
        self.next_deadline = next;
    }

    /// Removes the server at `i`, the last one taking its place.
    fn remove_at(&mut self, i: usize) {
        if i >= self.servers.len() {
            return;
        }
        let s = self.servers.swap_remove(i);
        self.index.remove(&s.rec);
        if let Some(moved) = self.servers.get(i) {
            self.index.insert(moved.rec, i as u32);
        }
        if s.listed {
            self.listed = self.listed.saturating_sub(1);
            self.games.release(s.game);
            self.types.release(s.gametype);
        }
        let key = quota_slot(address(&s.rec).ip());
        if let Some(n) = self.per_ip.get_mut(&key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.per_ip.remove(&key);
            }
        }
    }

    fn game_index(&self, name: &str) -> Option<usize> {
        self.cfg.games.iter().position(|g| g.name == name)
    }

    fn heartbeat(&mut self, now: Instant, reply: Reply, from: SocketAddr, rest: &[u8]) {
        self.counters.heartbeats += 1;
        let tag = rest.split(|b| b.is_ascii_whitespace()).next().unwrap_or_default();
        let hb_game = if tag == b"DarkPlaces" {
            NO_GAME
        } else if let Some(i) =
            self.cfg.games.iter().position(|g| g.heartbeat.as_deref().map(str::as_bytes) == Some(tag))
        {
            if !self.cfg.policy.accepts(&self.cfg.games[i].name) {
                self.counters.refused += 1;
                return;
            }
            match u32::try_from(i) {
                Ok(i) if i != NO_GAME => i,
                _ => {
                    self.counters.refused += 1;
                    return;
                }
            }
        } else if self.cfg.games.iter().any(|g| g.flatline.as_deref().map(str::as_bytes) == Some(tag)) {
            return; // a server shutting down: its lease runs out
        } else {
            self.counters.refused += 1;
            debug!(%from, "dpmaster: unknown heartbeat");
            return;
        };
        if !self.cfg.allow_private && special_use(from.ip()).is_some() {
            self.counters.refused += 1;
            debug!(%from, "dpmaster: special-use server address refused");
            return;
        }
        if !self.heartbeats.allow(now, quota_key(from.ip())) {
            self.counters.throttled += 1;
            return;
        }
        let now = self.ns(now);
        let i = match self.find(from) {
            Some(i) => i,
            None => {
                let slot = quota_slot(from.ip());
                let on_ip = self.per_ip.get(&slot).copied().unwrap_or(0) as usize;
                if self.servers.len() >= self.cfg.max_servers || on_ip >= self.cfg.max_per_address {
                    self.counters.refused += 1;
                    debug!(%from, "dpmaster: server table or address quota full");
                    return;
                }
                let Ok(i) = u32::try_from(self.servers.len()) else {
                    self.counters.refused += 1;
                    return;
                };
                let expires = now.saturating_add(Self::duration_ns(CHALLENGE_TIMEOUT));
                let rec = record(from);
                self.servers.push(Server {
                    rec,
                    listed: false,
                    anonymous: false,
                    challenged: false,
                    hb_game,
                    game: NO_NAME,
                    gametype: NO_NAME,
                    protocol: 0,
                    clients: 0,
                    max_clients: 0,
                    challenge: [0; CHALLENGE_LEN],
                    expires,
                    challenge_until: 0,
                });
                self.index.insert(rec, i);
                *self.per_ip.entry(slot).or_default() += 1;
                self.deadline(expires);
                i as usize
            }
        };
        let Some(s) = self.servers.get_mut(i) else { return };
        let challenge = if s.challenged && s.challenge_until >= now && s.hb_game == hb_game {
            s.challenge
        } else {
            let Some(c) = self.challenges.next() else {
                self.counters.refused += 1;
                return;
            };
            s.challenge = c;
            s.challenged = true;
            s.challenge_until = now.saturating_add(Self::duration_ns(CHALLENGE_TIMEOUT));
            c
        };
        s.hb_game = hb_game;
        let mut bytes = Vec::with_capacity(4 + 8 + CHALLENGE_LEN);
        bytes.extend_from_slice(OOB);
        bytes.extend_from_slice(b"getinfo ");
        bytes.extend_from_slice(&challenge);
        self.out.push_back(reply.with(bytes));
    }

    fn info_response(&mut self, now: Instant, from: SocketAddr, info: &[u8]) {
        let now = self.ns(now);
        let Some(i) = self.find(from) else {
            self.counters.challenges_failed += 1;
            return;
        };
        let Some(s) = self.servers.get(i) else { return };
        // No challenge waiting (none sent, or already used: a replay), or too late.
        if !s.challenged || s.challenge_until < now {
            self.counters.challenges_failed += 1;
            return;
        }
        let mut keys: [Option<&[u8]>; 6] = [None; 6];
        const NAMES: [&[u8]; 6] = [b"challenge", b"protocol", b"gametype", b"sv_maxclients", b"clients", b"gamename"];
        for (k, v) in query_quake3::msg::raw_pairs(info) {
            if let Some(i) = NAMES.iter().position(|n| *n == k) {
                keys[i] = keys[i].or(Some(v));
            }
        }
        let [got, protocol, gametype, max_clients, clients, gamename] = keys;
        if got != Some(&s.challenge[..]) {
            // A wrong challenge does not spend the right one (a forged reply must not cancel the real one).
            self.counters.challenges_failed += 1;
            return;
        }
        let refuse = |c: &mut Counters, why: &str| {
            c.refused += 1;
            debug!(%from, why, "dpmaster: infoResponse refused");
        };
        let Some(protocol) = protocol.and_then(|p| std::str::from_utf8(p).ok()).and_then(|p| p.parse::<i32>().ok())
        else {
            return refuse(&mut self.counters, "protocol");
        };
        let gametype = gametype.unwrap_or(b"0");
        if gametype.is_empty() || !gametype.iter().all(u8::is_ascii_graphic) {
            return refuse(&mut self.counters, "gametype");
        }
        let gametype = &gametype[..gametype.len().min(GAMETYPE_MAX)];
        let max_clients = max_clients.map_or(0, atoi);
        if max_clients == 0 {
            return refuse(&mut self.counters, "sv_maxclients");
        }
        let Some(clients) = clients.map(atoi) else {
            return refuse(&mut self.counters, "clients");
        };
        let hb_name =
            self.cfg.games.get(s.hb_game as usize).filter(|_| s.hb_game != NO_GAME).map(|g| g.name.as_bytes());
        let game = match (gamename, hb_name) {
            (None, Some(n)) => n,
            (Some(g), Some(n)) if g != n => return refuse(&mut self.counters, "gamename differs from the heartbeat's"),
            (Some(g), _) => g,
            (None, None) => return refuse(&mut self.counters, "no gamename"),
        };
        let game = match std::str::from_utf8(game) {
            Ok(g) if !g.is_empty() && g.len() <= GAMENAME_MAX && !g.contains(char::is_whitespace) => g,
            _ => return refuse(&mut self.counters, "gamename"),
        };
        if !self.cfg.policy.accepts(game) {
            return refuse(&mut self.counters, "game policy");
        }
        // Only graphic ASCII: valid UTF-8.
        let gametype = std::str::from_utf8(gametype).unwrap_or("0");
        // The new names are held before the old ones are let go (a renewal keeps its names' ids).
        let Some(game_id) = self.games.acquire(game) else {
            return refuse(&mut self.counters, "too many game names");
        };
        let Some(type_id) = self.types.acquire(gametype) else {
            self.games.release(game_id);
            return refuse(&mut self.counters, "too many game types");
        };
        let lease = match now.checked_add(Self::duration_ns(self.cfg.lease)) {
            Some(t) => t,
            // A lease too long for the clock (a library user's configuration) is a day.
            None => now.saturating_add(Self::duration_ns(Duration::from_secs(86_400))),
        };
        let Some(s) = self.servers.get_mut(i) else { return };
        let old = s.listed.then_some((s.game, s.gametype));
        s.challenged = false;
        s.listed = true;
        s.anonymous = s.hb_game != NO_GAME;
        s.game = game_id;
        s.gametype = type_id;
        s.protocol = protocol;
        s.clients = clients;
        s.max_clients = max_clients;
        s.expires = lease;
        match old {
            Some((g, t)) => {
                self.games.release(g);
                self.types.release(t);
            }
            None => self.listed += 1,
        }
        self.deadline(lease);
        self.counters.registrations += 1;
    }

    fn getservers(&mut self, now: Instant, reply: Reply, from: SocketAddr, rest: &[u8], ext: bool) {
        if !self.clients.allow(now, quota_key(from.ip())) {
            self.counters.throttled += 1;
            return;
        }
        let now = self.ns(now);
        let Ok(text) = std::str::from_utf8(rest) else {
            self.counters.refused += 1;
            return;
        };
        let text = text.trim_end_matches(['\n', '\0']);
        let (first, after) = word(text);
        let anonymous = !ext && first.parse::<i32>().is_ok();
        let (name, protocol, filters): (Option<&str>, i32, &str) = if anonymous {
            let p = first.parse::<i32>().unwrap_or(0);
            (self.cfg.games.iter().find(|g| g.protocols.contains(&p)).map(|g| g.name.as_str()), p, after)
        } else {
            let (p, filters) = word(after);
            match p.parse::<i32>() {
                Ok(p) if !first.is_empty() && first.len() <= GAMENAME_MAX => (Some(first), p, filters),
                _ => {
                    self.counters.refused += 1;
                    return;
                }
            }
        };
        if name.is_some_and(|g| !self.cfg.policy.accepts(g)) {
            self.counters.refused += 1;
            return;
        }
        let props = name.and_then(|g| self.game_index(g)).and_then(|i| self.cfg.games.get(i));
        let (mut empty, mut full) = props.map_or((false, false), |g| (g.send_empty, g.send_full));
        // The game asked for as its id ([`NO_NAME`]: no server has it); `None` until an anonymous request's is known.
        let mut game = name.map(|g| self.games.get(g).unwrap_or(NO_NAME));
        let (mut v4, mut v6, mut gametype) = (!ext, false, None::<&str>);
        for f in filters.split(' ').filter(|f| !f.is_empty()) {
            match f {
                "empty" => empty = true,
                "full" => full = true,
                "ffa" => gametype = Some("0"),
                "tourney" => gametype = Some("1"),
                "team" => gametype = Some("3"),
                "ctf" => gametype = Some("4"),
                "ipv4" if ext => v4 = true,
                "ipv6" if ext => v6 = true,
                f => {
                    if let Some(t) = f.strip_prefix("gametype=") {
                        // Cut as the stored game types are (at a character boundary: a peer's text).
                        let mut end = t.len().min(GAMETYPE_MAX);
                        while !t.is_char_boundary(end) {
                            end -= 1;
                        }
                        gametype = t.get(..end);
                    }
                }
            }
        }
        if !v4 && !v6 {
            (v4, v6) = (true, true);
        }
        let v6 = v6 && ext;
        let type_name = gametype;
        let gametype = type_name.map(|t| self.types.get(t).unwrap_or(NO_NAME));
        let header: &[u8] =
            if ext { b"\xff\xff\xff\xffgetserversExtResponse" } else { b"\xff\xff\xff\xffgetserversResponse" };
        let mut packet = Vec::with_capacity(MAX_DATAGRAM_OUT);
        packet.extend_from_slice(header);
        for s in &self.servers {
            if !s.listed || s.expires <= now || s.protocol != protocol {
                continue;
            }
            if game.is_none() && s.anonymous {
                // An anonymous request takes the game of the first anonymous server of its protocol.
                if !self.cfg.policy.accepts(self.games.name(s.game)) {
                    self.counters.refused += 1;
                    return; // nothing of this reply was queued yet: no entry matched before its game was known
                }
                game = Some(s.game);
            }
            if game != Some(s.game)
                || (!empty && s.clients == 0)
                || (!full && s.clients >= s.max_clients)
                || gametype.is_some_and(|t| t != s.gametype)
            {
                continue;
            }
            pack(&mut self.out, reply, header, &mut packet, &s.rec, v4, v6);
        }
        // The mirrored servers, under the same filters (by name: their names are not interned).
        let mut game_name = name.map(str::to_owned).or_else(|| game.map(|g| self.games.name(g).to_owned()));
        for m in &self.mirrored {
            if m.protocol != protocol || self.find(m.addr).is_some_and(|i| self.servers[i].listed) {
                continue;
            }
            if game_name.is_none() {
                // As an anonymous registered server: a game known by its heartbeat tag.
                let heartbeat = self.cfg.games.iter().any(|g| g.name == m.game && g.heartbeat.is_some());
                if !heartbeat || !self.cfg.policy.accepts(&m.game) {
                    continue;
                }
                game_name = Some(m.game.clone());
            }
            if game_name.as_deref() != Some(&*m.game)
                || (!empty && m.clients == 0)
                || (!full && m.clients >= m.max_clients)
                || type_name.is_some_and(|t| t != m.gametype)
            {
                continue;
            }
            pack(&mut self.out, reply, header, &mut packet, &record(m.addr), v4, v6);
        }
        if packet.len() + EOT.len() > MAX_DATAGRAM_OUT {
            let full_packet = std::mem::replace(&mut packet, Vec::with_capacity(64));
            self.out.push_back(reply.with(full_packet));
            packet.extend_from_slice(header);
        }
        packet.extend_from_slice(EOT);
        self.out.push_back(reply.with(packet));
        self.counters.list_requests += 1;
    }
}

/// Adds a server's record to a reply (`\` + IPv4 + port when `v4`, `/` + IPv6 + port when `v6`), queueing the
/// datagram and starting the next one when it would pass [`MAX_DATAGRAM_OUT`].
fn pack(
    out: &mut VecDeque<UdpTransmit>,
    reply: Reply,
    header: &[u8],
    packet: &mut Vec<u8>,
    rec: &Record,
    v4: bool,
    v6: bool,
) {
    let size = match rec[0] {
        b'\\' if v4 => 7,
        b'/' if v6 => 19,
        _ => return,
    };
    if packet.len() + size > MAX_DATAGRAM_OUT {
        let full_packet = std::mem::replace(packet, Vec::with_capacity(MAX_DATAGRAM_OUT));
        out.push_back(reply.with(full_packet));
        packet.extend_from_slice(header);
    }
    packet.extend_from_slice(&rec[..size]);
}

impl UdpService for Dpmaster {
    fn handle_datagram(&mut self, now: Instant, socket: usize, from: SocketAddr, data: &[u8]) {
        Dpmaster::handle_datagram(self, now, socket, from, data);
    }
    fn poll_transmit(&mut self) -> Option<UdpTransmit> {
        Dpmaster::poll_transmit(self)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        Dpmaster::poll_timeout(self)
    }
    fn handle_timeout(&mut self, now: Instant) {
        Dpmaster::handle_timeout(self, now);
    }
}

#[cfg(test)]
mod tests;
