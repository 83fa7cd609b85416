//! The monitor's state as a sans-IO engine: query results of a round go in, change events and the round's
//! [`Batch`] for the database come out. No clock (every call takes the round's Unix time), no I/O.
//!
//! * [`Monitor::begin_round`], then [`Monitor::observe`] for each result as it comes, then [`Monitor::end_round`],
//!   which returns the batch to write. Servers the round did not report (a master stopped listing them) count as
//!   failed; servers not seen for [`MonitorConfig::forget_after`] seconds are forgotten (memory, API, metrics, and
//!   through the batch the database).
//! * A server is down after [`MonitorConfig::down_after`] failed rounds in a row (`server_down`, and
//!   `player_left` for whoever was on it); an answer from a down or new server is `server_up`. Players are matched
//!   by name as a multiset (two players may share a name). `map_changed` and `name_changed` compare with the last
//!   answer.
//! * Events become visible ([`Monitor::events_after`]) once the database committed their round
//!   ([`Monitor::committed`]), so an id the feed has sent is never reused after a restart; a round the writer had
//!   to drop publishes its events too (they are then not in the database).
//!
//! **What one game server can make us keep is bounded in bytes.** Each answer is cut before anything is kept
//! ([`bounded`]): the server name to [`MAX_NAME_BYTES`], map, game type and version to [`MAX_TEXT_BYTES`], at most
//! [`MAX_PLAYERS_KEPT`] players with names of at most [`MAX_PLAYER_NAME_BYTES`] (the player count stays the one
//! the server reports), at most [`MAX_RULES`] rules and raw fields with keys and values of at most
//! [`MAX_RULE_BYTES`] (cuts on UTF-8 boundaries). A server makes at most [`MAX_EVENTS_PER_SERVER_ROUND`] events per
//! round; the rest are folded into one `events_folded` event. Events do not hold the server's name (the feed
//! adds its current one). The published events ([`MAX_EVENT_BYTES`]) and those waiting for their commit
//! ([`MAX_UNPUBLISHED_BYTES`]) are bounded in bytes too.

use std::collections::{BTreeSet, HashMap, VecDeque};

use serde::Serialize;

use super::store::{Batch, EventDetail, EventRow, Forgotten, Loaded, Sample, ServerRow, Sighting};
use crate::query::result::{Answer, CountField, ErrorKind, FieldValue, QueryError, QueryResult, TextField};

/// Most bytes of a server name kept.
pub const MAX_NAME_BYTES: usize = 128;
/// Most bytes of a map, a game type or a version kept.
pub const MAX_TEXT_BYTES: usize = 64;
/// Most players of an answer kept (names, sightings, events).
pub const MAX_PLAYERS_KEPT: usize = 64;
/// Most bytes of a player name kept.
pub const MAX_PLAYER_NAME_BYTES: usize = 32;
/// Most extra fields of a player kept.
pub const MAX_PLAYER_EXTRAS: usize = 4;
/// Most rules (and most raw fields) of an answer kept.
pub const MAX_RULES: usize = 32;
/// Most bytes of a rule's (or raw field's, or a player's extra field's) key and of its value kept.
pub const MAX_RULE_BYTES: usize = 128;
/// Most events one server makes in one round; the rest are folded into one `events_folded` event.
pub const MAX_EVENTS_PER_SERVER_ROUND: usize = 32;
/// Most bytes of published events kept in memory for the change feed.
pub const MAX_EVENT_BYTES: usize = 8 << 20;
/// Most bytes of events waiting for their round's commit; past it the oldest round's are published unwritten.
pub const MAX_UNPUBLISHED_BYTES: usize = 8 << 20;
/// Default of [`MonitorConfig::forget_after`]: 7 days.
pub const DEFAULT_FORGET_AFTER: i64 = 7 * 86_400;

/// Limits and thresholds of the monitor's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorConfig {
    /// Failed rounds in a row before a server is down.
    pub down_after: u32,
    /// Recent samples kept in memory per server (for sparklines and `/api/servers/P/A`).
    pub history_points: usize,
    /// Most (name, server) pairs kept in memory for `/api/players`.
    pub max_sightings: usize,
    /// Most published events kept in memory for the change feed (and at most [`MAX_EVENT_BYTES`]).
    pub max_events: usize,
    /// Seconds a server may go unseen (not listed, not queried) before it is forgotten.
    pub forget_after: i64,
}

impl Default for MonitorConfig {
    fn default() -> Self {
        MonitorConfig {
            down_after: 2,
            history_points: 120,
            max_sightings: 1_000_000,
            max_events: 10_000,
            forget_after: DEFAULT_FORGET_AFTER,
        }
    }
}

/// `s` cut to at most `max` bytes on a UTF-8 boundary.
pub fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut i = max;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    &s[..i]
}

fn value_fits(v: FieldValue<'_>) -> bool {
    match v {
        FieldValue::Str(s) => s.len() <= MAX_RULE_BYTES,
        FieldValue::Json(j) => {
            !matches!(j, serde_json::Value::Array(_) | serde_json::Value::Object(_) | serde_json::Value::String(_))
        }
        _ => true,
    }
}

fn cut_value(v: FieldValue<'_>) -> FieldValue<'_> {
    match v {
        FieldValue::Str(s) => FieldValue::Str(cut(s, MAX_RULE_BYTES)),
        // A JSON value (the built-in BZFlag query's) is kept only while it is small.
        FieldValue::Json(j) if !value_fits(v) => {
            if serde_json::to_string(j).map_or(true, |t| t.len() > MAX_RULE_BYTES) {
                FieldValue::Null
            } else {
                v
            }
        }
        v => v,
    }
}

fn fits(a: &Answer) -> bool {
    let short = |s: Option<&str>, max: usize| s.is_none_or(|s| s.len() <= max);
    short(a.name(), MAX_NAME_BYTES)
        && short(a.map(), MAX_TEXT_BYTES)
        && short(a.game_type(), MAX_TEXT_BYTES)
        && short(a.version(), MAX_TEXT_BYTES)
        && a.player_count() <= MAX_PLAYERS_KEPT
        && a.player_list().into_iter().flatten().all(|p| {
            p.name.len() <= MAX_PLAYER_NAME_BYTES
                && [p.score, p.team, p.ping].into_iter().all(value_fits)
                && p.extra.len() <= MAX_PLAYER_EXTRAS
                && p.extra.iter().all(|(k, v)| k.len() <= MAX_RULE_BYTES && value_fits(v))
        })
        && [a.rules(), a.raw()]
            .iter()
            .all(|f| f.len() <= MAX_RULES && f.iter().all(|(k, v)| k.len() <= MAX_RULE_BYTES && value_fits(v)))
}

/// The answer cut to the monitor's limits (see the module documentation), or `None` when it is within them.
pub fn bounded(a: &Answer) -> Option<Answer> {
    if fits(a) {
        return None;
    }
    let mut b = Answer::default();
    b.set_text(TextField::Name, a.name().map(|s| cut(s, MAX_NAME_BYTES)));
    b.set_text(TextField::Map, a.map().map(|s| cut(s, MAX_TEXT_BYTES)));
    b.set_text(TextField::GameType, a.game_type().map(|s| cut(s, MAX_TEXT_BYTES)));
    b.set_text(TextField::Version, a.version().map(|s| cut(s, MAX_TEXT_BYTES)));
    b.set_count(CountField::Players, a.players());
    b.set_count(CountField::MaxPlayers, a.max_players());
    b.set_count(CountField::Bots, a.bots());
    b.set_password(a.password());
    if let Some(list) = a.player_list() {
        b.set_player_list_known(true);
        for p in list.take(MAX_PLAYERS_KEPT) {
            let extra = p
                .extra
                .iter()
                .take(MAX_PLAYER_EXTRAS)
                .map(|(k, v)| (cut(k, MAX_RULE_BYTES), cut_value(v)))
                .collect::<Vec<_>>();
            b.push_player(
                cut(p.name, MAX_PLAYER_NAME_BYTES),
                cut_value(p.score),
                cut_value(p.team),
                cut_value(p.ping),
                extra,
            );
        }
    }
    for (k, v) in a.rules().iter().take(MAX_RULES) {
        b.set_rule(cut(k, MAX_RULE_BYTES), cut_value(v));
    }
    for (k, v) in a.raw().iter().take(MAX_RULES) {
        b.set_raw(cut(k, MAX_RULE_BYTES), cut_value(v));
    }
    b.set_servers(a.servers().map(<[std::net::SocketAddr]>::to_vec));
    Some(b)
}

/// Humans and bots among an answer's players, where the protocol tells them apart: the answer's `bots` (BZFlag's
/// robot players, Quake III's `clients` less `g_humanplayers`, Teeworlds 0.7's bot flag, Warsow's `bots`), else, for
/// Quake III engines (`quake3`, `warsow`), the players with ping 0 in a complete `getstatus` list (where ioq3 puts
/// its bots). `humans` is the players less the bots; both `None` where the protocol cannot tell.
pub fn humans_and_bots(protocol: &str, a: &Answer) -> (Option<i64>, Option<i64>) {
    let bots = a.bots().or_else(|| {
        if !matches!(protocol, "quake3" | "warsow") || a.players().is_none() {
            return None;
        }
        let list = a.player_list()?;
        let pings: Vec<Option<i64>> = list.map(|p| p.ping.as_i64()).collect();
        let complete = i64::try_from(pings.len()).ok() == a.players() && pings.iter().all(Option::is_some);
        complete.then(|| pings.iter().filter(|p| **p == Some(0)).count() as i64)
    });
    let humans = match (a.players(), bots) {
        (Some(p), Some(b)) => Some(p.saturating_sub(b).max(0)),
        _ => None,
    };
    (humans, bots)
}

/// A result as the monitor keeps it: its answer cut to the limits.
fn kept(r: &QueryResult) -> QueryResult {
    let outcome = match &r.outcome {
        Ok(a) => Ok(bounded(a).unwrap_or_else(|| a.clone())),
        Err(e) => Err(QueryError::new(e.kind, cut(&e.detail, MAX_RULE_BYTES))),
    };
    QueryResult { index: r.index, protocol: r.protocol.clone(), address: r.address, ping_ms: r.ping_ms, outcome }
}

/// A result read back from its stored JSON (a restart): the shared shape, or `None` when it is not one.
pub fn result_from_json(protocol: &str, address: &str, json: &str) -> Option<QueryResult> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let address = address.parse().ok()?;
    let outcome = if v.get("ok").and_then(serde_json::Value::as_bool)? {
        let a = Answer::from_shape(&v);
        Ok(bounded(&a).unwrap_or(a))
    } else {
        let name = v.get("error").and_then(serde_json::Value::as_str).unwrap_or("error");
        let kind = [
            ErrorKind::Timeout,
            ErrorKind::Refused,
            ErrorKind::Malformed,
            ErrorKind::Plugin,
            ErrorKind::Unsupported,
            ErrorKind::Error,
        ]
        .into_iter()
        .find(|k| k.name() == name)
        .unwrap_or(ErrorKind::Error);
        let detail = v.get("detail").and_then(serde_json::Value::as_str).unwrap_or("");
        Err(QueryError::new(kind, cut(detail, MAX_RULE_BYTES)))
    };
    let ping_ms = v.get("ping_ms").and_then(serde_json::Value::as_f64);
    Some(QueryResult { index: 0, protocol: protocol.to_owned(), address, ping_ms, outcome })
}

/// One point of a server's history: (Unix time, answered, players).
pub type Point = (i64, bool, Option<i64>);

/// A point as kept in memory (8 bytes): Unix time in seconds, and the players, or [`DOWN`] or [`UNKNOWN`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compact {
    t: u32,
    players: i32,
}

const DOWN: i32 = -2;
const UNKNOWN: i32 = -1;

impl Compact {
    fn new((t, up, players): Point) -> Compact {
        let players = match (up, players) {
            (false, _) => DOWN,
            (true, None) => UNKNOWN,
            (true, Some(p)) => i32::try_from(p.clamp(0, i64::from(i32::MAX))).unwrap_or(i32::MAX),
        };
        Compact { t: u32::try_from(t.clamp(0, i64::from(u32::MAX))).unwrap_or(0), players }
    }

    fn point(self) -> Point {
        (i64::from(self.t), self.players != DOWN, (self.players >= 0).then_some(i64::from(self.players)))
    }
}

/// A tracked server.
#[derive(Debug, Clone, PartialEq)]
pub struct Server {
    /// The stored row's latest state (its `json` is made when the row is written, from [`Server::last`]).
    pub row: ServerRow,
    /// The last answer (cut to the limits), or the last error while it never answered.
    pub last: QueryResult,
    /// Failed rounds in a row.
    pub fails: u32,
    /// The last error kind (`timeout`, `refused`...), while failing.
    pub error: Option<String>,
    /// Players there now: (name, stint start).
    pub present: Vec<(String, i64)>,
    /// Recent samples, oldest first (see [`Server::history`]).
    history: VecDeque<Compact>,
    /// Seen in the current round.
    seen_round: u64,
    /// When its row was last written, and a digest of what it said (up, name, map, counts).
    written: (i64, u64),
    /// When the sightings of its present players were last written.
    sightings_written: i64,
    /// Digest of the name and map of the last sample that carried them.
    sampled_text: u64,
}

/// How long a server's row and its present players' sightings may go unwritten while nothing about them changes
/// (their `last_seen` in the database is then at most this old; the API answers from memory).
pub const REFRESH_SECONDS: i64 = 600;

fn digest<T: std::hash::Hash>(v: &T) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(v)
}

impl Server {
    /// Recent samples, oldest first.
    pub fn history(&self) -> impl Iterator<Item = Point> + '_ {
        self.history.iter().map(|c| c.point())
    }

    /// True when its last answer is current (it answered in its last round).
    pub fn answered_now(&self) -> bool {
        self.row.up && self.fails == 0
    }

    fn new(row: ServerRow, last: QueryResult) -> Server {
        Server {
            row,
            last,
            fails: 0,
            error: None,
            present: Vec::new(),
            history: VecDeque::new(),
            seen_round: 0,
            written: (0, 0),
            sightings_written: 0,
            sampled_text: 0,
        }
    }
}

/// A name's stints per server (protocol, address): (first seen, last seen).
type Stints = HashMap<(String, String), (i64, i64)>;

/// Counters the metrics show.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Rounds finished.
    pub rounds: u64,
    /// Events made (folded ones counted in their `events_folded`).
    pub events: u64,
    /// Events folded into `events_folded` events.
    pub events_folded: u64,
    /// Events published before their round was written because too many bytes of events waited.
    pub events_unwritten: u64,
    /// Player sightings left out because the in-memory index was full.
    pub sightings_dropped: u64,
    /// Servers forgotten.
    pub forgotten: u64,
}

/// The state. See the module documentation.
#[derive(Debug)]
pub struct Monitor {
    config: MonitorConfig,
    servers: HashMap<(String, String), Server>,
    /// The servers' keys in order (for the API).
    order: BTreeSet<(String, String)>,
    next_event_id: u64,
    published: VecDeque<EventRow>,
    published_bytes: usize,
    unpublished: VecDeque<(u64, Vec<EventRow>)>,
    unpublished_bytes: usize,
    /// name → (protocol, address) → (first seen, last seen).
    players: HashMap<String, Stints>,
    sightings: usize,
    round: u64,
    round_t: i64,
    batch: Batch,
    /// Events the server being observed made this round (for [`MAX_EVENTS_PER_SERVER_ROUND`]), and those folded.
    server_events: (usize, u64),
    counters: Counters,
}

/// An event as the feed sends it: the stored event and the server's current name.
#[derive(Serialize)]
struct EventOut<'a> {
    id: u64,
    t: i64,
    #[serde(rename = "type")]
    kind: &'a str,
    protocol: &'a str,
    address: &'a str,
    server: Option<&'a str>,
    #[serde(flatten)]
    detail: &'a EventDetail,
}

impl Monitor {
    /// An empty monitor.
    pub fn new(config: MonitorConfig) -> Monitor {
        Monitor {
            config,
            servers: HashMap::new(),
            order: BTreeSet::new(),
            next_event_id: 1,
            published: VecDeque::new(),
            published_bytes: 0,
            unpublished: VecDeque::new(),
            unpublished_bytes: 0,
            players: HashMap::new(),
            sightings: 0,
            round: 0,
            round_t: 0,
            batch: Batch::default(),
            server_events: (0, 0),
            counters: Counters::default(),
        }
    }

    /// A monitor resumed from what the database held.
    pub fn restore(config: MonitorConfig, mut loaded: Loaded) -> Monitor {
        let mut m = Monitor::new(config);
        m.next_event_id = loaded.next_event_id.max(1);
        let mut present: HashMap<(String, String), Vec<(String, i64)>> = HashMap::new();
        for s in &loaded.sightings {
            let key = (s.protocol.clone(), s.address.clone());
            if s.present {
                present.entry(key.clone()).or_default().push((s.name.clone(), s.first_seen));
            }
            m.note_player(&s.name, &key, s.first_seen, s.last_seen);
        }
        for mut row in loaded.servers {
            let key = (row.protocol.clone(), row.address.clone());
            let Some(last) = result_from_json(&row.protocol, &row.address, &row.json) else { continue };
            row.json = String::new();
            row.name = row.name.map(|n| cut(&n, MAX_NAME_BYTES).to_owned());
            row.map = row.map.map(|n| cut(&n, MAX_TEXT_BYTES).to_owned());
            let mut s = Server::new(row, last);
            s.history = loaded.history.remove(&key).unwrap_or_default().into_iter().map(Compact::new).collect();
            s.present = present.remove(&key).unwrap_or_default();
            m.order.insert(key.clone());
            m.servers.insert(key, s);
        }
        let skip = loaded.events.len().saturating_sub(m.config.max_events);
        for e in loaded.events.into_iter().skip(skip) {
            m.published_bytes += e.bytes();
            m.published.push_back(e);
        }
        m.trim_published();
        m
    }

    /// The tracked servers, by (protocol, address).
    pub fn servers(&self) -> impl Iterator<Item = &Server> + '_ {
        self.order.iter().filter_map(|k| self.servers.get(k))
    }

    /// One server.
    pub fn server(&self, protocol: &str, address: &str) -> Option<&Server> {
        self.servers.get(&(protocol.to_owned(), address.to_owned()))
    }

    /// Where a name has been seen: (protocol, address, first seen, last seen), most recent first.
    pub fn player(&self, name: &str) -> Vec<(&str, &str, i64, i64)> {
        let mut v: Vec<_> = self
            .players
            .get(name)
            .into_iter()
            .flatten()
            .map(|((p, a), &(f, l))| {
                // While the name is there, it was last seen in the server's last round.
                let l = match self.servers.get(&(p.clone(), a.clone())) {
                    Some(s) if s.present.iter().any(|(n, _)| n == name) => l.max(s.row.last_seen),
                    _ => l,
                };
                (p.as_str(), a.as_str(), f, l)
            })
            .collect();
        v.sort_by(|a, b| b.3.cmp(&a.3).then(a.1.cmp(b.1)));
        v
    }

    /// Published events with an id above `after`, oldest first.
    pub fn events_after(&self, after: u64) -> impl Iterator<Item = &EventRow> + '_ {
        let start = self.published.partition_point(|e| e.id <= after);
        self.published.range(start..)
    }

    /// An event as the feed sends it: `{"id","t","type","protocol","address","server", ...its own fields}`, the
    /// server's name being its current one.
    pub fn event_json(&self, e: &EventRow) -> String {
        let server = self.servers.get(&(e.protocol.clone(), e.address.clone())).and_then(|s| s.row.name.as_deref());
        let out = EventOut {
            id: e.id,
            t: e.t,
            kind: e.kind,
            protocol: &e.protocol,
            address: &e.address,
            server,
            detail: &e.detail,
        };
        serde_json::to_string(&out).unwrap_or_default()
    }

    /// The id of the newest published event (0: none).
    pub fn last_event_id(&self) -> u64 {
        self.published.back().map_or(0, |e| e.id)
    }

    /// Counters.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The current round's number.
    pub fn round(&self) -> u64 {
        self.round
    }

    /// Bytes of published events kept, and of events waiting for their commit.
    pub fn event_bytes(&self) -> (usize, usize) {
        (self.published_bytes, self.unpublished_bytes)
    }

    /// Starts a round at Unix time `t`.
    pub fn begin_round(&mut self, t: i64) {
        self.round += 1;
        self.round_t = t;
        self.batch = Batch { round: self.round, t, ..Batch::default() };
    }

    fn note_player(&mut self, name: &str, key: &(String, String), first: i64, last: i64) {
        if let Some(per) = self.players.get_mut(name) {
            if let Some(e) = per.get_mut(key) {
                e.0 = e.0.min(first);
                e.1 = e.1.max(last);
                return;
            }
        }
        if self.sightings >= self.config.max_sightings {
            self.counters.sightings_dropped += 1;
            return;
        }
        self.sightings += 1;
        self.players.entry(name.to_owned()).or_default().insert(key.clone(), (first, last));
    }

    /// Makes an event of the server being observed (or folds it past [`MAX_EVENTS_PER_SERVER_ROUND`]).
    fn event(&mut self, kind: &'static str, row: &ServerRow, detail: EventDetail) {
        if self.server_events.0 >= MAX_EVENTS_PER_SERVER_ROUND {
            self.server_events.1 += 1;
            self.counters.events_folded += 1;
            return;
        }
        self.server_events.0 += 1;
        self.push_event(kind, row, detail);
    }

    fn push_event(&mut self, kind: &'static str, row: &ServerRow, detail: EventDetail) {
        let id = self.next_event_id;
        self.next_event_id += 1;
        self.counters.events += 1;
        self.batch.events.push(EventRow {
            id,
            t: self.round_t,
            kind,
            protocol: row.protocol.clone(),
            address: row.address.clone(),
            detail,
        });
    }

    /// Starts counting a server's events of this round.
    fn begin_server_events(&mut self) {
        self.server_events = (0, 0);
    }

    /// Ends a server's events of this round: those past the cap become one `events_folded` event.
    fn end_server_events(&mut self, row: &ServerRow) {
        let folded = std::mem::take(&mut self.server_events).1;
        if folded > 0 {
            self.push_event("events_folded", row, EventDetail { folded: Some(folded), ..EventDetail::default() });
        }
    }

    /// A result of the current round (a master's own result is ignored: its servers come as results of their own).
    pub fn observe(&mut self, r: &QueryResult) {
        if r.outcome.as_ref().is_ok_and(|a| a.servers().is_some()) {
            return;
        }
        let t = self.round_t;
        let key = (r.protocol.clone(), r.address.to_string());
        let round = self.round;
        let existing = self.servers.remove(&key);
        let is_new = existing.is_none();
        if is_new {
            self.order.insert(key.clone());
        }
        let r = kept(r);
        let mut s = existing.unwrap_or_else(|| {
            Server::new(
                ServerRow {
                    protocol: key.0.clone(),
                    address: key.1.clone(),
                    first_seen: t,
                    last_seen: t,
                    last_ok: 0,
                    up: false,
                    name: None,
                    map: None,
                    players: None,
                    max_players: None,
                    ping_ms: None,
                    json: String::new(),
                },
                r.clone(),
            )
        });
        self.begin_server_events();
        s.seen_round = round;
        s.row.last_seen = t;
        match &r.outcome {
            Ok(a) => {
                let was_up = s.row.up && !is_new;
                s.fails = 0;
                s.error = None;
                s.row.up = true;
                s.row.last_ok = t;
                s.row.ping_ms = r.ping_ms;
                let (old_name, old_map) = (s.row.name.take(), s.row.map.take());
                s.row.name = a.name().map(str::to_owned);
                s.row.map = a.map().map(str::to_owned);
                s.row.players = a.players();
                s.row.max_players = a.max_players();
                if !was_up {
                    self.event("server_up", &s.row, EventDetail::default());
                } else {
                    if old_name.is_some() && s.row.name.is_some() && old_name != s.row.name {
                        let d = EventDetail { from: old_name, to: s.row.name.clone(), ..EventDetail::default() };
                        self.event("name_changed", &s.row, d);
                    }
                    if old_map.is_some() && s.row.map.is_some() && old_map != s.row.map {
                        let d = EventDetail { from: old_map, to: s.row.map.clone(), ..EventDetail::default() };
                        self.event("map_changed", &s.row, d);
                    }
                }
                if let Some(list) = a.player_list() {
                    let names: Vec<&str> = list.map(|p| p.name).collect();
                    self.diff_players(&mut s, &key, &names);
                }
            }
            Err(e) => {
                s.fails = s.fails.saturating_add(1);
                s.error = Some(e.kind.name().to_owned());
                if s.row.last_ok == 0 {
                    s.last = r.clone();
                }
                if s.row.up && s.fails >= self.config.down_after {
                    self.server_down(&mut s, &key);
                }
            }
        }
        if r.is_ok() {
            s.last = r;
        }
        self.end_server_events(&s.row);
        let up = s.fails == 0 && s.last.is_ok();
        self.sample(&mut s, up);
        self.write_row(&mut s, false);
        self.servers.insert(key, s);
    }

    /// Puts the server's row in the batch when something about it changed, or when it was not written for
    /// [`REFRESH_SECONDS`] (or always, with `force`).
    fn write_row(&mut self, s: &mut Server, force: bool) {
        let r = &s.row;
        let d = digest(&(r.up, &r.name, &r.map, r.players, r.max_players, r.last_ok == 0));
        if force || d != s.written.1 || self.round_t - s.written.0 >= REFRESH_SECONDS {
            s.written = (self.round_t, d);
            let mut row = s.row.clone();
            row.json = s.last.to_json_line();
            self.batch.servers.push(row);
        }
    }

    fn server_down(&mut self, s: &mut Server, key: &(String, String)) {
        s.row.up = false;
        let d = EventDetail { error: Some(s.error.clone()), ..EventDetail::default() };
        self.event("server_down", &s.row, d);
        let t = self.round_t;
        for (name, first) in std::mem::take(&mut s.present) {
            self.note_player(&name, key, first, s.row.last_ok.max(first).min(t));
            let d = EventDetail {
                player: Some(name.clone()),
                reason: Some("server_down".into()),
                ..EventDetail::default()
            };
            self.event("player_left", &s.row, d);
            self.batch.sightings.push(Sighting {
                name,
                protocol: key.0.clone(),
                address: key.1.clone(),
                first_seen: first,
                last_seen: s.row.last_ok.max(first).min(t),
                present: false,
            });
        }
    }

    fn diff_players(&mut self, s: &mut Server, key: &(String, String), names: &[&str]) {
        let t = self.round_t;
        // The usual round: the same names in the same order; nothing joined or left.
        if names.len() == s.present.len() && names.iter().zip(&s.present).all(|(n, (p, _))| *n == p.as_str()) {
            let refresh = t - s.sightings_written >= REFRESH_SECONDS;
            if refresh {
                s.sightings_written = t;
            }
            for (n, first) in &s.present {
                if refresh {
                    self.batch.sightings.push(Sighting {
                        name: n.clone(),
                        protocol: key.0.clone(),
                        address: key.1.clone(),
                        first_seen: *first,
                        last_seen: t,
                        present: true,
                    });
                }
            }
            return;
        }
        let mut old: HashMap<&str, Vec<i64>> = HashMap::new();
        let prev = std::mem::take(&mut s.present);
        for (n, f) in &prev {
            old.entry(n.as_str()).or_default().push(*f);
        }
        let mut now_present = Vec::with_capacity(names.len());
        let mut joined = Vec::new();
        for &n in names {
            match old.get_mut(n).and_then(Vec::pop) {
                Some(first) => now_present.push((n.to_owned(), first)),
                None => {
                    now_present.push((n.to_owned(), t));
                    joined.push(n.to_owned());
                }
            }
        }
        let mut left: Vec<(String, i64)> =
            old.into_iter().flat_map(|(n, fs)| fs.into_iter().map(move |f| (n.to_owned(), f))).collect();
        left.sort();
        for n in joined {
            self.event("player_joined", &s.row, EventDetail { player: Some(n), ..EventDetail::default() });
        }
        for (n, first) in left {
            self.note_player(&n, key, first, t);
            self.event("player_left", &s.row, EventDetail { player: Some(n.clone()), ..EventDetail::default() });
            self.batch.sightings.push(Sighting {
                name: n,
                protocol: key.0.clone(),
                address: key.1.clone(),
                first_seen: first,
                last_seen: t,
                present: false,
            });
        }
        // Present players' stints are written when they begin and then every REFRESH_SECONDS (their ends, when
        // they leave).
        let refresh = t - s.sightings_written >= REFRESH_SECONDS;
        if refresh {
            s.sightings_written = t;
        }
        for (n, first) in &now_present {
            if *first == t {
                self.note_player(n, key, t, t);
            }
            if !refresh && *first != t {
                continue;
            }
            self.batch.sightings.push(Sighting {
                name: n.clone(),
                protocol: key.0.clone(),
                address: key.1.clone(),
                first_seen: *first,
                last_seen: t,
                present: true,
            });
        }
        s.present = now_present;
    }

    fn sample(&mut self, s: &mut Server, up: bool) {
        let t = self.round_t;
        let players = if up { s.row.players } else { None };
        s.history.push_back(Compact::new((t, up, players)));
        while s.history.len() > self.config.history_points {
            s.history.pop_front();
        }
        // Name and map only when they differ from the last sample that carried them (NULL: unchanged), and at
        // least once an hour so that an hour's rows always say them.
        let d = digest(&(&s.row.name, &s.row.map, t / 3600));
        let text = up && d != s.sampled_text;
        if text {
            s.sampled_text = d;
        }
        self.batch.samples.push(Sample {
            protocol: s.row.protocol.clone(),
            address: s.row.address.clone(),
            t,
            up,
            players,
            max_players: if up { s.row.max_players } else { None },
            ping_ms: if up { s.row.ping_ms } else { None },
            map: if text { s.row.map.clone() } else { None },
            name: if text { s.row.name.clone() } else { None },
        });
    }

    /// Ends the round: servers it did not report count as failed (not listed), servers not seen for
    /// [`MonitorConfig::forget_after`] are forgotten. Returns the batch to write; its events are published once
    /// [`Monitor::committed`] says so.
    pub fn end_round(&mut self) -> Batch {
        let round = self.round;
        let missing: Vec<(String, String)> =
            self.servers.iter().filter(|(_, s)| s.seen_round != round && s.row.up).map(|(k, _)| k.clone()).collect();
        for key in missing {
            let Some(mut s) = self.servers.remove(&key) else { continue };
            s.fails = s.fails.saturating_add(1);
            s.error = Some("not_listed".to_owned());
            if s.fails >= self.config.down_after {
                self.begin_server_events();
                self.server_down(&mut s, &key);
                self.end_server_events(&s.row);
                self.write_row(&mut s, true);
            }
            self.servers.insert(key, s);
        }
        self.forget();
        self.counters.rounds += 1;
        let batch = std::mem::take(&mut self.batch);
        let bytes: usize = batch.events.iter().map(EventRow::bytes).sum();
        self.unpublished_bytes += bytes;
        self.unpublished.push_back((batch.round, batch.events.clone()));
        // The oldest waiting rounds go out unwritten past the bound (their ids may then come again after a
        // restart: counted).
        while self.unpublished_bytes > MAX_UNPUBLISHED_BYTES && self.unpublished.len() > 1 {
            let Some((r, evs)) = self.unpublished.front() else { break };
            let (r, n) = (*r, evs.len() as u64);
            self.counters.events_unwritten += n;
            self.committed(r);
        }
        batch
    }

    /// Forgets the servers not seen for [`MonitorConfig::forget_after`] seconds: memory, the player index, and
    /// (through the batch) the database.
    fn forget(&mut self) {
        let t = self.round_t;
        let after = self.config.forget_after;
        let old: Vec<(String, String)> = self
            .servers
            .iter()
            .filter(|(_, s)| s.seen_round != self.round && t - s.row.last_seen >= after)
            .map(|(k, _)| k.clone())
            .collect();
        if old.is_empty() {
            return;
        }
        for key in &old {
            if let Some(s) = self.servers.remove(key) {
                self.order.remove(key);
                self.counters.forgotten += 1;
                self.batch.forget.push(Forgotten {
                    protocol: key.0.clone(),
                    address: key.1.clone(),
                    last_seen: s.row.last_seen,
                });
            }
        }
        let gone: std::collections::HashSet<&(String, String)> = old.iter().collect();
        let mut removed = 0usize;
        self.players.retain(|_, stints| {
            let before = stints.len();
            stints.retain(|k, _| !gone.contains(k));
            removed += before - stints.len();
            !stints.is_empty()
        });
        self.sightings = self.sightings.saturating_sub(removed);
    }

    /// The database committed (or dropped) `round`: its events, and those of every earlier round, go out.
    pub fn committed(&mut self, round: u64) {
        while self.unpublished.front().is_some_and(|(r, _)| *r <= round) {
            if let Some((_, evs)) = self.unpublished.pop_front() {
                for e in evs {
                    let b = e.bytes();
                    self.unpublished_bytes = self.unpublished_bytes.saturating_sub(b);
                    self.published_bytes += b;
                    self.published.push_back(e);
                }
            }
        }
        self.trim_published();
    }

    fn trim_published(&mut self) {
        while self.published.len() > self.config.max_events || self.published_bytes > MAX_EVENT_BYTES {
            let Some(e) = self.published.pop_front() else { break };
            self.published_bytes = self.published_bytes.saturating_sub(e.bytes());
        }
    }

    /// Events made but not yet committed.
    pub fn unpublished(&self) -> usize {
        self.unpublished.iter().map(|(_, e)| e.len()).sum()
    }
}

/// A Quake III answer from 127.0.0.1:27960 with `name`, `map` and `players` (8 slots), for the tests.
#[cfg(test)]
pub(crate) fn test_answer(name: &str, map: &str, players: &[&str]) -> QueryResult {
    let mut a = Answer::default();
    a.set_text(TextField::Name, Some(name));
    a.set_text(TextField::Map, Some(map));
    a.set_count(CountField::Players, Some(players.len() as i64));
    a.set_count(CountField::MaxPlayers, Some(8));
    a.set_player_list_known(true);
    for p in players {
        a.push_player(p, FieldValue::Int(0), FieldValue::Null, FieldValue::Null, std::iter::empty());
    }
    QueryResult {
        index: 0,
        protocol: "quake3".into(),
        address: "127.0.0.1:27960".parse().unwrap(),
        ping_ms: Some(1.0),
        outcome: Ok(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::result::{ErrorKind, QueryError};

    use super::test_answer as answer;

    fn timeout() -> QueryResult {
        QueryResult {
            index: 0,
            protocol: "quake3".into(),
            address: "127.0.0.1:27960".parse().unwrap(),
            ping_ms: None,
            outcome: Err(QueryError::new(ErrorKind::Timeout, "no answer")),
        }
    }

    fn kinds(b: &Batch) -> Vec<String> {
        b.events
            .iter()
            .map(|e| match &e.detail.player {
                Some(p) => format!("{}:{p}", e.kind),
                None => e.kind.to_owned(),
            })
            .collect()
    }

    fn round(m: &mut Monitor, t: i64, r: &QueryResult) -> Batch {
        m.begin_round(t);
        m.observe(r);
        let b = m.end_round();
        m.committed(b.round);
        b
    }

    #[test]
    fn rounds_make_the_events() {
        let mut m = Monitor::new(MonitorConfig::default());
        let b = round(&mut m, 100, &answer("srv", "q3dm1", &["a", "b", "b"]));
        assert_eq!(kinds(&b), ["server_up", "player_joined:a", "player_joined:b", "player_joined:b"]);
        let b = round(&mut m, 160, &answer("srv2", "q3dm2", &["b", "c"]));
        assert_eq!(kinds(&b), ["name_changed", "map_changed", "player_joined:c", "player_left:a", "player_left:b"]);
        // One failure is not down yet; two are.
        let b = round(&mut m, 220, &timeout());
        assert!(b.events.is_empty());
        assert!(m.server("quake3", "127.0.0.1:27960").unwrap().row.up);
        let b = round(&mut m, 280, &timeout());
        assert_eq!(kinds(&b), ["server_down", "player_left:b", "player_left:c"]);
        let b = round(&mut m, 340, &answer("srv2", "q3dm2", &[]));
        assert_eq!(kinds(&b), ["server_up"]);
        let ids: Vec<u64> = m.events_after(0).map(|e| e.id).collect();
        assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>());
        assert_eq!(m.events_after(5).next().unwrap().id, 6);
        assert_eq!(m.player("b")[0].0, "quake3");
    }

    #[test]
    fn events_wait_for_the_commit() {
        let mut m = Monitor::new(MonitorConfig::default());
        m.begin_round(100);
        m.observe(&answer("srv", "m", &["a"]));
        let b = m.end_round();
        assert_eq!(m.events_after(0).count(), 0);
        assert_eq!(m.unpublished(), 2);
        m.committed(b.round);
        assert_eq!(m.events_after(0).count(), 2);
    }

    #[test]
    fn restore_resumes_ids_and_players() {
        let mut m = Monitor::new(MonitorConfig::default());
        let b1 = round(&mut m, 100, &answer("srv", "m", &["a"]));
        let mut s = m.server("quake3", "127.0.0.1:27960").unwrap().row.clone();
        s.json = b1.servers[0].json.clone();
        let loaded = Loaded {
            servers: vec![s],
            sightings: b1.sightings.clone(),
            events: b1.events.clone(),
            next_event_id: 3,
            history: HashMap::new(),
        };
        let mut m = Monitor::restore(MonitorConfig::default(), loaded);
        assert_eq!(m.last_event_id(), 2);
        let b = round(&mut m, 160, &answer("srv", "m", &["a", "z"]));
        assert_eq!(kinds(&b), ["player_joined:z"]);
        assert_eq!(b.events[0].id, 3);
    }

    #[test]
    fn a_hostile_answer_is_cut_to_the_limits_and_its_events_folded() {
        let mut m = Monitor::new(MonitorConfig::default());
        let long = "é".repeat(15 * 1024); // 30 KiB, two bytes a character
        let names = |r: usize| -> Vec<String> { (0..800).map(|i| format!("{r}-{i}-{}", "p".repeat(40))).collect() };
        let n1 = names(1);
        let refs: Vec<&str> = n1.iter().map(String::as_str).collect();
        let b = round(&mut m, 100, &answer(&long, &long, &refs));
        let s = m.server("quake3", "127.0.0.1:27960").unwrap();
        assert_eq!(s.row.name.as_deref().map(str::len), Some(MAX_NAME_BYTES));
        assert!(s.row.map.as_deref().is_some_and(|n| n.len() <= MAX_TEXT_BYTES));
        assert_eq!(s.row.players, Some(800));
        assert_eq!(s.present.len(), MAX_PLAYERS_KEPT);
        assert!(s.present.iter().all(|(n, _)| n.len() <= MAX_PLAYER_NAME_BYTES));
        assert_eq!(b.events.len(), MAX_EVENTS_PER_SERVER_ROUND + 1);
        let last = b.events.last().unwrap();
        assert_eq!((last.kind, last.detail.folded), ("events_folded", Some(1 + 64 - 32)));
        assert!(b.servers[0].json.len() < 16 * 1024, "{}", b.servers[0].json.len());
        // The next round: every name new.
        let n2 = names(2);
        let refs: Vec<&str> = n2.iter().map(String::as_str).collect();
        let b = round(&mut m, 160, &answer(&long, &long, &refs));
        assert_eq!(b.events.len(), MAX_EVENTS_PER_SERVER_ROUND + 1);
        assert!(b.bytes() < 64 * 1024, "{}", b.bytes());
        // No event holds the server's name; the feed adds its current (cut) one.
        let e = m.events_after(0).next().unwrap();
        let v: serde_json::Value = serde_json::from_str(&m.event_json(e)).unwrap();
        assert_eq!(v["server"].as_str().map(str::len), Some(MAX_NAME_BYTES));
        assert_eq!(v["type"], "server_up");
        assert!(m.event_bytes().0 < 64 * 1024);
    }

    #[test]
    fn servers_not_seen_for_forget_after_are_forgotten() {
        let cfg = MonitorConfig { forget_after: 300, ..MonitorConfig::default() };
        let mut m = Monitor::new(cfg);
        round(&mut m, 100, &answer("srv", "m", &["a"]));
        // Not listed any more: down after two rounds, forgotten once 300 s passed since it was last seen.
        for t in [160, 220, 280, 340] {
            m.begin_round(t);
            let b = m.end_round();
            m.committed(b.round);
            assert!(b.forget.is_empty());
        }
        m.begin_round(400);
        let b = m.end_round();
        assert_eq!(b.forget.len(), 1);
        assert_eq!(b.forget[0].last_seen, 100);
        assert!(m.server("quake3", "127.0.0.1:27960").is_none());
        assert_eq!(m.servers().count(), 0);
        assert!(m.player("a").is_empty());
        assert_eq!(m.counters().forgotten, 1);
    }

    #[test]
    fn humans_and_bots_where_the_protocol_tells() {
        let r = answer("srv", "m", &["a", "b", "c"]);
        // test_answer's players have no ping: Quake III without g_humanplayers cannot tell.
        let a = r.outcome.as_ref().unwrap().clone();
        assert_eq!(humans_and_bots("quake3", &a), (None, None));
        let mut b = Answer::default();
        b.set_count(CountField::Players, Some(3));
        b.set_player_list_known(true);
        for (n, ping) in [("bot1", 0), ("bot2", 0), ("human", 48)] {
            b.push_player(n, FieldValue::Int(0), FieldValue::Null, FieldValue::Int(ping), std::iter::empty());
        }
        assert_eq!(humans_and_bots("quake3", &b), (Some(1), Some(2)));
        assert_eq!(humans_and_bots("teeworlds", &b), (None, None), "ping 0 means a bot on Quake III only");
        // The answer's own count wins.
        b.set_count(CountField::Bots, Some(1));
        assert_eq!(humans_and_bots("quake3", &b), (Some(2), Some(1)));
        // A cut list (more players than listed) cannot tell.
        let mut c = b.clone();
        c.set_count(CountField::Bots, None);
        c.set_count(CountField::Players, Some(40));
        assert_eq!(humans_and_bots("quake3", &c), (None, None));
    }

    #[test]
    fn cut_keeps_utf8_whole() {
        assert_eq!(cut("aé", 2), "a");
        assert_eq!(cut("aé", 3), "aé");
        assert_eq!(cut("", 0), "");
    }

    #[test]
    fn events_waiting_for_their_commit_are_bounded_in_bytes() {
        let mut m = Monitor::new(MonitorConfig::default());
        let names: Vec<String> = (0..40).map(|i| format!("{i:02}-{}", "n".repeat(28))).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        // The database never commits: rounds of 300 servers whose players all join (33 events each, some 5 MB a
        // round).
        for r in 0..3i64 {
            m.begin_round(100 + r * 60);
            for port in 0..300u16 {
                let mut a = answer("srv", "m", &refs);
                a.address = std::net::SocketAddr::from(([127, 0, 0, 1], port + 1 + (r as u16) * 300));
                m.observe(&a);
            }
            let _ = m.end_round();
            let (published, unpublished) = m.event_bytes();
            assert!(unpublished <= MAX_UNPUBLISHED_BYTES, "{unpublished}");
            assert!(published <= MAX_EVENT_BYTES, "{published}");
        }
        // One round's events fit; more do not: the oldest rounds went out unwritten, whole, counted.
        let unwritten = m.counters().events_unwritten;
        assert!(unwritten > 0 && unwritten % (300 * 33) == 0, "{unwritten}");
        assert!(m.event_bytes().0 <= MAX_EVENT_BYTES);
    }
}
