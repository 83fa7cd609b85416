//! The monitor's state as a sans-IO engine: query results of a round go in, change events and the round's
//! [`Batch`] for the database come out. No clock (every call takes the round's Unix time), no I/O.
//!
//! * [`Monitor::begin_round`], then [`Monitor::observe`] for each result as it comes, then [`Monitor::end_round`],
//!   which returns the batch to write. Servers the round did not report (a master stopped listing them) count as
//!   failed.
//! * A server is down after [`MonitorConfig::down_after`] failed rounds in a row (`server_down`, and
//!   `player_left` for whoever was on it); an answer from a down or new server is `server_up`. Players are matched
//!   by name as a multiset (two players may share a name). `map_changed` and `name_changed` compare with the last
//!   answer.
//! * Events become visible ([`Monitor::events_after`]) once the database committed their round
//!   ([`Monitor::committed`]), so an id the feed has sent is never reused after a restart; a round the writer had
//!   to drop publishes its events too (they are then not in the database).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fmt::Write as _;

use serde_json::json;

use super::store::{Batch, EventRow, Loaded, Sample, ServerRow, Sighting};
use crate::query::result::QueryResult;

/// Limits and thresholds of the monitor's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorConfig {
    /// Failed rounds in a row before a server is down.
    pub down_after: u32,
    /// Recent samples kept in memory per server (for sparklines and `/api/servers/P/A`).
    pub history_points: usize,
    /// Most (name, server) pairs kept in memory for `/api/players`.
    pub max_sightings: usize,
    /// Most published events kept in memory for the change feed.
    pub max_events: usize,
}

impl Default for MonitorConfig {
    fn default() -> Self {
        MonitorConfig { down_after: 2, history_points: 120, max_sightings: 1_000_000, max_events: 10_000 }
    }
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
    /// The stored row (latest state; `json` is the last good answer, or the last error while it never answered).
    pub row: ServerRow,
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
}

/// A name's stints per server (protocol, address): (first seen, last seen).
type Stints = HashMap<(String, String), (i64, i64)>;

/// Counters the metrics show.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Rounds finished.
    pub rounds: u64,
    /// Events made.
    pub events: u64,
    /// Player sightings left out because the in-memory index was full.
    pub sightings_dropped: u64,
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
    unpublished: VecDeque<(u64, Vec<EventRow>)>,
    /// name → (protocol, address) → (first seen, last seen).
    players: HashMap<String, Stints>,
    sightings: usize,
    round: u64,
    round_t: i64,
    batch: Batch,
    counters: Counters,
}

fn opt_str(v: Option<&str>) -> Option<String> {
    v.map(str::to_owned)
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
            unpublished: VecDeque::new(),
            players: HashMap::new(),
            sightings: 0,
            round: 0,
            round_t: 0,
            batch: Batch::default(),
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
        for row in loaded.servers {
            let key = (row.protocol.clone(), row.address.clone());
            let history = loaded.history.remove(&key).unwrap_or_default().into_iter().map(Compact::new).collect();
            let present = present.remove(&key).unwrap_or_default();
            m.order.insert(key.clone());
            m.servers.insert(
                key,
                Server {
                    row,
                    fails: 0,
                    error: None,
                    present,
                    history,
                    seen_round: 0,
                    written: (0, 0),
                    sightings_written: 0,
                    sampled_text: 0,
                },
            );
        }
        let skip = loaded.events.len().saturating_sub(m.config.max_events);
        m.published.extend(loaded.events.into_iter().skip(skip));
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

    fn event(&mut self, kind: &str, row: &ServerRow, extra: serde_json::Value) {
        let id = self.next_event_id;
        self.next_event_id += 1;
        self.counters.events += 1;
        let mut v = json!({
            "id": id, "t": self.round_t, "type": kind, "protocol": row.protocol, "address": row.address,
            "server": row.name,
        });
        if let (Some(o), serde_json::Value::Object(x)) = (v.as_object_mut(), extra) {
            o.extend(x);
        }
        self.batch.events.push(EventRow {
            id,
            t: self.round_t,
            kind: kind.to_owned(),
            protocol: row.protocol.clone(),
            address: row.address.clone(),
            json: v.to_string(),
        });
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
        let mut s = existing.unwrap_or_else(|| Server {
            row: ServerRow {
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
            fails: 0,
            error: None,
            present: Vec::new(),
            history: VecDeque::new(),
            seen_round: 0,
            written: (0, 0),
            sightings_written: 0,
            sampled_text: 0,
        });
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
                s.row.json = r.to_json_line();
                let (old_name, old_map) = (s.row.name.take(), s.row.map.take());
                s.row.name = opt_str(a.name());
                s.row.map = opt_str(a.map());
                s.row.players = a.players();
                s.row.max_players = a.max_players();
                if !was_up {
                    self.event("server_up", &s.row, json!({}));
                } else {
                    if old_name.is_some() && s.row.name.is_some() && old_name != s.row.name {
                        self.event("name_changed", &s.row, json!({"from": old_name, "to": s.row.name}));
                    }
                    if old_map.is_some() && s.row.map.is_some() && old_map != s.row.map {
                        self.event("map_changed", &s.row, json!({"from": old_map, "to": s.row.map}));
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
                if s.row.json.is_empty() || s.row.last_ok == 0 {
                    s.row.json = r.to_json_line();
                }
                if s.row.up && s.fails >= self.config.down_after {
                    self.server_down(&mut s, &key);
                }
            }
        }
        self.sample(&mut s, r.is_ok());
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
            self.batch.servers.push(s.row.clone());
        }
    }

    fn server_down(&mut self, s: &mut Server, key: &(String, String)) {
        s.row.up = false;
        self.event("server_down", &s.row, json!({"error": s.error}));
        let t = self.round_t;
        for (name, first) in std::mem::take(&mut s.present) {
            self.note_player(&name, key, first, s.row.last_ok.max(first).min(t));
            self.event("player_left", &s.row, json!({"player": name, "reason": "server_down"}));
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
            self.event("player_joined", &s.row, json!({"player": n}));
        }
        for (n, first) in left {
            self.note_player(&n, key, first, t);
            self.event("player_left", &s.row, json!({"player": n}));
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

    /// Ends the round: servers it did not report count as failed (not listed). Returns the batch to write; its
    /// events are published once [`Monitor::committed`] says so.
    pub fn end_round(&mut self) -> Batch {
        let round = self.round;
        let missing: Vec<(String, String)> =
            self.servers.iter().filter(|(_, s)| s.seen_round != round && s.row.up).map(|(k, _)| k.clone()).collect();
        for key in missing {
            let Some(mut s) = self.servers.remove(&key) else { continue };
            s.fails = s.fails.saturating_add(1);
            s.error = Some("not_listed".to_owned());
            if s.fails >= self.config.down_after {
                self.server_down(&mut s, &key);
                self.write_row(&mut s, true);
            }
            self.servers.insert(key, s);
        }
        self.counters.rounds += 1;
        let batch = std::mem::take(&mut self.batch);
        self.unpublished.push_back((batch.round, batch.events.clone()));
        batch
    }

    /// The database committed (or dropped) `round`: its events, and those of every earlier round, go out.
    pub fn committed(&mut self, round: u64) {
        while self.unpublished.front().is_some_and(|(r, _)| *r <= round) {
            if let Some((_, evs)) = self.unpublished.pop_front() {
                self.published.extend(evs);
            }
        }
        while self.published.len() > self.config.max_events {
            self.published.pop_front();
        }
    }

    /// Events made but not yet committed.
    pub fn unpublished(&self) -> usize {
        self.unpublished.iter().map(|(_, e)| e.len()).sum()
    }

    /// The server's JSON for the API: its last answer in the shared shape plus `up`, `first_seen`, `last_seen`,
    /// `last_ok` (ISO 8601 is left to clients: Unix seconds), and for a server that does not answer now, its last
    /// known `name`, `map`, `players` and `max_players` (the error shape has none of them).
    pub fn server_json(s: &Server, with_players: bool) -> String {
        let mut out = String::with_capacity(s.row.json.len() + 96);
        let body = s.row.json.trim_end();
        let body = body.strip_suffix('}').unwrap_or("{\"v\":1");
        if with_players {
            out.push_str(body);
        } else {
            // Cut the player list out (the list view does not need it).
            match (body.find(",\"player_list\":"), body.find(",\"rules\":")) {
                (Some(a), Some(b)) if a < b => {
                    out.push_str(&body[..a]);
                    out.push_str(&body[b..]);
                }
                _ => out.push_str(body),
            }
        }
        let answered_now = s.row.up && s.fails == 0;
        if answered_now {
            // The answer is current: its own "ok": true stands.
        } else if s.row.last_ok > 0 {
            // The stored json is the last good answer; say it is stale.
            out = out.replacen("\"ok\":true", "\"ok\":false", 1);
            let _ = write!(out, ",\"error\":{}", serde_json::Value::from(s.error.clone()));
        } else {
            let _ = write!(
                out,
                ",\"name\":{},\"map\":{},\"players\":{},\"max_players\":{}",
                serde_json::Value::from(s.row.name.clone()),
                serde_json::Value::from(s.row.map.clone()),
                serde_json::Value::from(s.row.players),
                serde_json::Value::from(s.row.max_players)
            );
        }
        let _ = write!(
            out,
            ",\"up\":{},\"first_seen\":{},\"last_seen\":{},\"last_ok\":{}}}",
            s.row.up,
            s.row.first_seen,
            s.row.last_seen,
            if s.row.last_ok > 0 { s.row.last_ok.to_string() } else { "null".to_owned() }
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::result::{Answer, CountField, ErrorKind, FieldValue, QueryError, TextField};

    fn answer(name: &str, map: &str, players: &[&str]) -> QueryResult {
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
            .map(|e| {
                let v: serde_json::Value = serde_json::from_str(&e.json).unwrap();
                match v.get("player").and_then(|p| p.as_str()) {
                    Some(p) => format!("{}:{p}", e.kind),
                    None => e.kind.clone(),
                }
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
    fn server_json_adds_the_monitor_fields_and_escapes() {
        let mut m = Monitor::new(MonitorConfig::default());
        round(&mut m, 100, &answer("<b>\"x\"</b>", "m", &["a"]));
        let s = m.server("quake3", "127.0.0.1:27960").unwrap();
        let v: serde_json::Value = serde_json::from_str(&Monitor::server_json(s, false)).unwrap();
        assert_eq!(v["name"], "<b>\"x\"</b>");
        assert_eq!(v["up"], true);
        assert_eq!(v["first_seen"], 100);
        assert!(v.get("player_list").is_none());
        let v: serde_json::Value = serde_json::from_str(&Monitor::server_json(s, true)).unwrap();
        assert_eq!(v["player_list"][0]["name"], "a");
        round(&mut m, 160, &timeout());
        round(&mut m, 220, &timeout());
        let s = m.server("quake3", "127.0.0.1:27960").unwrap();
        let v: serde_json::Value = serde_json::from_str(&Monitor::server_json(s, false)).unwrap();
        assert_eq!(
            (v["up"].clone(), v["ok"].clone(), v["error"].clone()),
            (false.into(), false.into(), "timeout".into())
        );
        assert_eq!(v["last_ok"], 100);
    }

    #[test]
    fn restore_resumes_ids_and_players() {
        let mut m = Monitor::new(MonitorConfig::default());
        let b1 = round(&mut m, 100, &answer("srv", "m", &["a"]));
        let s = m.server("quake3", "127.0.0.1:27960").unwrap().row.clone();
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
}
