//! The monitor's history in SQLite: one transaction per round, WAL mode, written on the reactor's worker.
//!
//! Tables (`PRAGMA user_version` = [`SCHEMA_VERSION`]):
//!
//! * `servers(id, protocol, address, first_seen, last_seen, last_ok, up, name, map, players, max_players, ping_ms,
//!   json)`: one row per server seen (and not forgotten), its latest state (`json`: the last answer in the shared
//!   result shape, cut to the monitor's limits).
//! * `samples(t, server_id, up, players, max_players, ping_us, map, name)`: one row per server per round (keyed by
//!   time, so that retention deletes a range; a round's rows are appended together), kept
//!   [`Retention::samples_days`] days; `map` and `name` are NULL when they are those of the server's previous sample
//!   that had them (they are written at least once an hour).
//! * `hourly(server_id, hour, samples, up_samples, players_avg, players_max, ping_avg)`: samples folded per hour
//!   when they leave `samples`, kept [`Retention::hourly_days`] days.
//! * `sightings(name, server_id, first_seen, last_seen, present)`: one row per stint of a name on a server
//!   (written when it begins and ends, and every ten minutes in between).
//! * `events(id, t, type, server_id, data)`: the change feed, ids increasing across restarts; `data` holds only
//!   the event's own fields ([`EventDetail`]): the server is the row `server_id` refers to.
//!
//! Times are Unix seconds. The schema has ordered migrations ([`MIGRATIONS`]) from every earlier version; a
//! database written by a newer bzhead is refused ([`OpenError::Newer`]). The files are created `0600`.
//!
//! [`Database`] owns the connection and is moved into each write job on the reactor's worker (its own lane, so a
//! stalled disk never holds up other work) and back with the job's result; [`WriteQueue`] holds the rounds not
//! written yet, bounded in bytes ([`DEFAULT_MAX_QUEUED_BYTES`]): past the bound the oldest rounds are dropped
//! (their server rows and forgets folded into the next one), counted and logged. A batch that fails (full disk,
//! read-only file, a lock) stays queued and is tried again with the next one or after [`RETRY`]. Each batch is
//! one transaction, so `kill -9` loses at most the batch being written and never leaves half of one. The
//! database is checked with `PRAGMA quick_check` at start and every [`CHECK_EVERY`] seconds, and before each
//! write job the file is checked to still be the one opened: a database that disappears or fails the check is
//! reported ([`Written::Unhealthy`]).

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use tracing::{error, info, warn};

/// The schema's `PRAGMA user_version`.
pub const SCHEMA_VERSION: i64 = 2;
/// How long a failed batch waits before it is tried again (when no new batch comes first).
pub const RETRY: Duration = Duration::from_secs(5);
/// Most bytes of rounds waiting while the database cannot be written (by [`Batch::bytes`]); older rounds are
/// dropped past it (and counted).
pub const DEFAULT_MAX_QUEUED_BYTES: usize = 32 << 20;
/// How far back (seconds before the newest sample) a restart reads the servers' recent history.
pub const HISTORY_WINDOW: i64 = 6 * 3600;
/// Most recent events loaded at start for the change feed.
pub const LOADED_EVENTS: usize = 10_000;
/// Seconds between two `PRAGMA quick_check`s of the database.
pub const CHECK_EVERY: i64 = 3600;

/// How long history is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Raw samples (one per server per round), in days.
    pub samples_days: u32,
    /// Hourly aggregates, in days.
    pub hourly_days: u32,
    /// Events and player sightings, in days.
    pub events_days: u32,
}

impl Default for Retention {
    fn default() -> Self {
        Retention { samples_days: 7, hourly_days: 365, events_days: 90 }
    }
}

/// A server's latest state.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerRow {
    /// Protocol name.
    pub protocol: String,
    /// `IP:PORT`.
    pub address: String,
    /// First round it answered or was listed.
    pub first_seen: i64,
    /// Last round it was queried.
    pub last_seen: i64,
    /// Last round it answered (0: never).
    pub last_ok: i64,
    /// Up as of its last round.
    pub up: bool,
    /// Last known name.
    pub name: Option<String>,
    /// Last known map.
    pub map: Option<String>,
    /// Players in the last answer.
    pub players: Option<i64>,
    /// Player slots in the last answer.
    pub max_players: Option<i64>,
    /// Ping of the last answer, ms.
    pub ping_ms: Option<f64>,
    /// The last answer in the shared result shape (the last good one while down).
    pub json: String,
}

/// One server's state in one round.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Protocol.
    pub protocol: String,
    /// Address.
    pub address: String,
    /// Round time.
    pub t: i64,
    /// Answered.
    pub up: bool,
    /// Players.
    pub players: Option<i64>,
    /// Slots.
    pub max_players: Option<i64>,
    /// Ping, ms.
    pub ping_ms: Option<f64>,
    /// Map.
    pub map: Option<String>,
    /// Name.
    pub name: Option<String>,
}

/// A stint of a name on a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sighting {
    /// Player name.
    pub name: String,
    /// Protocol of the server.
    pub protocol: String,
    /// Address of the server.
    pub address: String,
    /// When the stint began.
    pub first_seen: i64,
    /// When the name was last seen there.
    pub last_seen: i64,
    /// Still there.
    pub present: bool,
}

/// One change-feed event: its server by (protocol, address), its own fields typed.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRow {
    /// Id (increasing).
    pub id: u64,
    /// Unix seconds.
    pub t: i64,
    /// `server_up`, `server_down`, `player_joined`, `player_left`, `map_changed`, `name_changed`, `events_folded`.
    pub kind: &'static str,
    /// Protocol of the server.
    pub protocol: String,
    /// Address of the server.
    pub address: String,
    /// The event's own fields.
    pub detail: EventDetail,
}

/// The event types, as stored and sent.
pub const EVENT_KINDS: [&str; 7] =
    ["server_up", "server_down", "player_joined", "player_left", "map_changed", "name_changed", "events_folded"];

impl EventRow {
    /// Bytes the event holds in memory (its strings and its fixed part), for the byte bounds.
    pub fn bytes(&self) -> usize {
        std::mem::size_of::<EventRow>() + self.protocol.len() + self.address.len() + self.detail.bytes()
    }
}

/// An event's own fields (what `events.data` holds): each is present only for the types that have it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventDetail {
    /// `player_joined`, `player_left`: the name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub player: Option<String>,
    /// `player_left` because the server went down: `"server_down"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `map_changed`, `name_changed`: the old value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// `map_changed`, `name_changed`: the new value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// `server_down`: the last error kind (`null` when none is known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Option<String>>,
    /// `events_folded`: how many events of the server's round it stands for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folded: Option<u64>,
}

impl EventDetail {
    fn bytes(&self) -> usize {
        let len = |s: &Option<String>| s.as_ref().map_or(0, String::len);
        len(&self.player) + len(&self.reason) + len(&self.from) + len(&self.to) + self.error.as_ref().map_or(0, len)
    }
}

/// Everything one round writes, in one transaction.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    /// Round number (for [`Written`]).
    pub round: u64,
    /// Round time.
    pub t: i64,
    /// Servers whose state to store.
    pub servers: Vec<ServerRow>,
    /// Samples.
    pub samples: Vec<Sample>,
    /// Sightings to insert or extend (keyed by name, server and `first_seen`).
    pub sightings: Vec<Sighting>,
    /// Events.
    pub events: Vec<EventRow>,
    /// Servers forgotten: their rows and history are deleted.
    pub forget: Vec<Forgotten>,
}

/// A server forgotten (not seen for `forget_after`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forgotten {
    /// Protocol.
    pub protocol: String,
    /// Address.
    pub address: String,
    /// When it was last seen.
    pub last_seen: i64,
}

impl Batch {
    /// Bytes the batch holds in memory (strings and fixed parts), for the write queue's bound.
    pub fn bytes(&self) -> usize {
        let o = |s: &Option<String>| s.as_ref().map_or(0, String::len);
        let servers: usize = self
            .servers
            .iter()
            .map(|r| {
                std::mem::size_of::<ServerRow>()
                    + r.protocol.len()
                    + r.address.len()
                    + o(&r.name)
                    + o(&r.map)
                    + r.json.len()
            })
            .sum();
        let samples: usize = self
            .samples
            .iter()
            .map(|r| std::mem::size_of::<Sample>() + r.protocol.len() + r.address.len() + o(&r.name) + o(&r.map))
            .sum();
        let sightings: usize = self
            .sightings
            .iter()
            .map(|r| std::mem::size_of::<Sighting>() + r.name.len() + r.protocol.len() + r.address.len())
            .sum();
        let events: usize = self.events.iter().map(EventRow::bytes).sum();
        let forget: usize =
            self.forget.iter().map(|f| std::mem::size_of::<Forgotten>() + f.protocol.len() + f.address.len()).sum();
        std::mem::size_of::<Batch>() + servers + samples + sightings + events + forget
    }
}

/// What the writer reports back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// A batch was committed.
    Committed {
        /// Its round.
        round: u64,
        /// Rows written.
        rows: u64,
        /// Microseconds the transaction took.
        micros: u64,
    },
    /// Writing failed; the batch stays queued.
    Failed {
        /// Its round.
        round: u64,
        /// The error.
        error: String,
    },
    /// A batch was dropped because the rounds waiting held too many bytes.
    Dropped {
        /// Its round.
        round: u64,
    },
    /// Retention pruned old rows.
    Pruned {
        /// Rows deleted.
        rows: u64,
    },
    /// The database file disappeared (or was replaced) while running, or failed `PRAGMA quick_check`.
    Unhealthy {
        /// What is wrong.
        error: String,
    },
    /// The database passed `PRAGMA quick_check`.
    Healthy,
}

/// One sample as a restart reads it: (Unix time, answered, players).
pub type HistoryPoint = (i64, bool, Option<i64>);

/// What a database holds at start: enough to resume the monitor.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Every server.
    pub servers: Vec<ServerRow>,
    /// Sightings (newest first, at most `max_sightings`).
    pub sightings: Vec<Sighting>,
    /// The most recent events, oldest first.
    pub events: Vec<EventRow>,
    /// The next event id.
    pub next_event_id: u64,
    /// Recent samples per server (protocol, address) → (t, up, players), oldest first.
    pub history: HashMap<(String, String), Vec<HistoryPoint>>,
}

/// Why a database cannot be opened.
#[derive(Debug)]
pub enum OpenError {
    /// SQLite (or the file system) refused.
    Sqlite(rusqlite::Error),
    /// The file could not be created.
    Io(std::io::Error),
    /// The database was written by a newer bzhead (its schema version is above [`SCHEMA_VERSION`]).
    Newer {
        /// Its `user_version`.
        found: i64,
    },
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Sqlite(e) => write!(f, "{e}"),
            OpenError::Io(e) => write!(f, "{e}"),
            OpenError::Newer { found } => write!(
                f,
                "written by a newer bzhead (schema version {found}; this bzhead reads versions up to \
                 {SCHEMA_VERSION}): not opened, so that nothing in it is lost; use a newer bzhead or another --db"
            ),
        }
    }
}

impl std::error::Error for OpenError {}

impl From<rusqlite::Error> for OpenError {
    fn from(e: rusqlite::Error) -> Self {
        OpenError::Sqlite(e)
    }
}

/// Creates the database file `0600` when it is missing (SQLite gives its `-wal` and `-shm` files the same mode).
fn create_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Opens (creating or migrating) the database at `path` and sets WAL mode; refuses one written by a newer bzhead.
pub fn open(path: &Path) -> Result<Connection, OpenError> {
    create_private(path).map_err(OpenError::Io)?;
    let mut conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(2))?;
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(OpenError::Newer { found: version });
    }
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    migrate(&mut conn, version)?;
    Ok(conn)
}

/// Brings a database at schema `from` to [`SCHEMA_VERSION`], one migration after another, each in its own
/// transaction with the version it reaches.
fn migrate(conn: &mut Connection, from: i64) -> rusqlite::Result<()> {
    for &(version, sql) in MIGRATIONS {
        if version <= from {
            continue;
        }
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", version)?;
        tx.commit()?;
        info!(version, "monitor database: schema migrated");
    }
    Ok(())
}

/// The migrations, in order: (the version a migration reaches, its SQL). Version 1 is the first schema (a
/// database without a version is empty or from before versions, and gets it with `IF NOT EXISTS`).
pub const MIGRATIONS: &[(i64, &str)] = &[(1, SCHEMA_V1), (2, MIGRATE_V2)];

const SCHEMA_V1: &str = "
CREATE TABLE IF NOT EXISTS servers (
    id INTEGER PRIMARY KEY,
    protocol TEXT NOT NULL,
    address TEXT NOT NULL,
    first_seen INTEGER NOT NULL,
    last_seen INTEGER NOT NULL,
    last_ok INTEGER NOT NULL,
    up INTEGER NOT NULL,
    name TEXT,
    map TEXT,
    players INTEGER,
    max_players INTEGER,
    ping_ms REAL,
    json TEXT NOT NULL,
    UNIQUE (protocol, address)
);
CREATE TABLE IF NOT EXISTS samples (
    t INTEGER NOT NULL,
    server_id INTEGER NOT NULL,
    up INTEGER NOT NULL,
    players INTEGER,
    max_players INTEGER,
    ping_us INTEGER,
    map TEXT,
    name TEXT,
    PRIMARY KEY (t, server_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS hourly (
    server_id INTEGER NOT NULL,
    hour INTEGER NOT NULL,
    samples INTEGER NOT NULL,
    up_samples INTEGER NOT NULL,
    players_avg REAL,
    players_max INTEGER,
    ping_avg REAL,
    PRIMARY KEY (server_id, hour)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sightings (
    name TEXT NOT NULL,
    server_id INTEGER NOT NULL,
    first_seen INTEGER NOT NULL,
    last_seen INTEGER NOT NULL,
    present INTEGER NOT NULL,
    PRIMARY KEY (name, server_id, first_seen)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sightings_by_time ON sightings (last_seen);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    t INTEGER NOT NULL,
    type TEXT NOT NULL,
    server_id INTEGER NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_time ON events (t);
";

/// Version 2: an event's `data` holds only its own fields (the server is the row `server_id` refers to, its name
/// no longer repeated in every event); forgetting a server finds its events and sightings by index.
const MIGRATE_V2: &str = "
UPDATE events SET data = json_remove(data, '$.id', '$.t', '$.type', '$.protocol', '$.address', '$.server')
    WHERE json_valid(data);
CREATE INDEX IF NOT EXISTS events_by_server ON events (server_id);
CREATE INDEX IF NOT EXISTS sightings_by_server ON sightings (server_id);
";

/// Reads what a restart needs: every server, up to `max_sightings` recent sightings, the last [`LOADED_EVENTS`]
/// events, the next event id and the last `history_points` samples of each server.
pub fn load(conn: &Connection, max_sightings: usize, history_points: usize) -> rusqlite::Result<Loaded> {
    let mut out = Loaded::default();
    let mut ids: HashMap<i64, (String, String)> = HashMap::new();
    let mut st = conn.prepare(
        "SELECT id, protocol, address, first_seen, last_seen, last_ok, up, name, map, players, max_players, ping_ms, \
         json FROM servers ORDER BY id",
    )?;
    let rows = st.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            ServerRow {
                protocol: r.get(1)?,
                address: r.get(2)?,
                first_seen: r.get(3)?,
                last_seen: r.get(4)?,
                last_ok: r.get(5)?,
                up: r.get::<_, i64>(6)? != 0,
                name: r.get(7)?,
                map: r.get(8)?,
                players: r.get(9)?,
                max_players: r.get(10)?,
                ping_ms: r.get(11)?,
                json: r.get(12)?,
            },
        ))
    })?;
    for row in rows {
        let (id, s) = row?;
        ids.insert(id, (s.protocol.clone(), s.address.clone()));
        out.servers.push(s);
    }
    let mut st = conn.prepare(
        "SELECT name, server_id, first_seen, last_seen, present FROM sightings ORDER BY last_seen DESC LIMIT ?1",
    )?;
    let rows = st.query_map([i64::try_from(max_sightings).unwrap_or(i64::MAX)], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get(2)?, r.get(3)?, r.get::<_, i64>(4)? != 0))
    })?;
    for row in rows {
        let (name, sid, first_seen, last_seen, present) = row?;
        if let Some((protocol, address)) = ids.get(&sid) {
            out.sightings.push(Sighting {
                name,
                protocol: protocol.clone(),
                address: address.clone(),
                first_seen,
                last_seen,
                present,
            });
        }
    }
    let mut st = conn.prepare("SELECT id, t, type, server_id, data FROM events ORDER BY id DESC LIMIT ?1")?;
    let rows = st.query_map([LOADED_EVENTS as i64], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?, r.get::<_, i64>(3)?, r.get(4)?))
    })?;
    for row in rows {
        let (id, t, kind, sid, data): (i64, i64, String, i64, String) = row?;
        // An event of a forgotten server or of an unknown type is not sent again.
        let (Some((protocol, address)), Some(kind)) =
            (ids.get(&sid).cloned(), EVENT_KINDS.iter().copied().find(|k| *k == kind))
        else {
            continue;
        };
        let detail = serde_json::from_str(&data).unwrap_or_default();
        out.events.push(EventRow { id: u64::try_from(id).unwrap_or(0), t, kind, protocol, address, detail });
    }
    out.events.reverse();
    let max_id: Option<i64> = conn.query_row("SELECT max(id) FROM events", [], |r| r.get(0)).optional()?.flatten();
    out.next_event_id = max_id.and_then(|m| u64::try_from(m).ok()).unwrap_or(0) + 1;
    if history_points > 0 {
        let mut st = conn.prepare(
            "SELECT server_id, t, up, players FROM (SELECT server_id, t, up, players, row_number() OVER \
             (PARTITION BY server_id ORDER BY t DESC) AS n FROM samples WHERE t >= (SELECT max(t) FROM samples) - ?2) \
             WHERE n <= ?1 ORDER BY server_id, t",
        )?;
        // Only the last hours are read (a range of the time-keyed table), not the whole week.
        let rows = st.query_map([i64::try_from(history_points).unwrap_or(i64::MAX), HISTORY_WINDOW], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)? != 0, r.get::<_, Option<i64>>(3)?))
        })?;
        for row in rows {
            let (sid, t, up, players) = row?;
            if let Some(key) = ids.get(&sid) {
                out.history.entry(key.clone()).or_default().push((t, up, players));
            }
        }
    }
    Ok(out)
}

/// Row counts of the tables (for tests and the benchmark).
pub fn counts(conn: &Connection) -> rusqlite::Result<[(&'static str, i64); 5]> {
    let mut out = [("servers", 0), ("samples", 0), ("hourly", 0), ("sightings", 0), ("events", 0)];
    for (table, n) in &mut out {
        *n = conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))?;
    }
    Ok(out)
}

/// The writer's cache of server ids: protocol → address → id (looked up without allocating).
pub type Ids = HashMap<String, HashMap<String, i64>>;

/// Writes one batch in one transaction; returns the rows written. `ids` caches server ids.
pub fn write_batch(conn: &mut Connection, ids: &mut Ids, b: &Batch) -> rusqlite::Result<u64> {
    let tx = conn.transaction()?;
    let mut rows = 0u64;
    {
        let mut upsert = tx.prepare_cached(
            "INSERT INTO servers (protocol, address, first_seen, last_seen, last_ok, up, name, map, players, \
             max_players, ping_ms, json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) \
             ON CONFLICT (protocol, address) DO UPDATE SET last_seen = excluded.last_seen, last_ok = \
             excluded.last_ok, up = excluded.up, name = excluded.name, map = excluded.map, players = \
             excluded.players, max_players = excluded.max_players, ping_ms = excluded.ping_ms, json = excluded.json \
             RETURNING id",
        )?;
        for s in &b.servers {
            let id: i64 = upsert.query_row(
                params![
                    s.protocol,
                    s.address,
                    s.first_seen,
                    s.last_seen,
                    s.last_ok,
                    s.up,
                    s.name,
                    s.map,
                    s.players,
                    s.max_players,
                    s.ping_ms,
                    s.json
                ],
                |r| r.get(0),
            )?;
            ids.entry(s.protocol.clone()).or_default().insert(s.address.clone(), id);
            rows += 1;
        }
        let mut lookup = tx.prepare_cached("SELECT id FROM servers WHERE protocol = ?1 AND address = ?2")?;
        let mut id_of = |protocol: &str, address: &str| -> rusqlite::Result<Option<i64>> {
            if let Some(&id) = ids.get(protocol).and_then(|a| a.get(address)) {
                return Ok(Some(id));
            }
            let id: Option<i64> = lookup.query_row(params![protocol, address], |r| r.get(0)).optional()?;
            if let Some(id) = id {
                ids.entry(protocol.to_owned()).or_default().insert(address.to_owned(), id);
            }
            Ok(id)
        };
        let mut ins = tx.prepare_cached(
            "INSERT OR REPLACE INTO samples (server_id, t, up, players, max_players, ping_us, map, name) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        for s in &b.samples {
            let Some(id) = id_of(&s.protocol, &s.address)? else { continue };
            let ping_us = s.ping_ms.filter(|p| p.is_finite()).map(|p| (p * 1000.0).round().clamp(0.0, 1e12) as i64);
            ins.execute(params![id, s.t, s.up, s.players, s.max_players, ping_us, s.map, s.name])?;
            rows += 1;
        }
        let mut sight = tx.prepare_cached(
            "INSERT INTO sightings (name, server_id, first_seen, last_seen, present) VALUES (?1, ?2, ?3, ?4, ?5) \
             ON CONFLICT (name, server_id, first_seen) DO UPDATE SET last_seen = excluded.last_seen, present = \
             excluded.present",
        )?;
        for s in &b.sightings {
            let Some(id) = id_of(&s.protocol, &s.address)? else { continue };
            sight.execute(params![s.name, id, s.first_seen, s.last_seen, s.present])?;
            rows += 1;
        }
        let mut ev = tx.prepare_cached(
            "INSERT OR IGNORE INTO events (id, t, type, server_id, data) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for e in &b.events {
            let id = id_of(&e.protocol, &e.address)?.unwrap_or(0);
            let data = serde_json::to_string(&e.detail).unwrap_or_else(|_| "{}".to_owned());
            ev.execute(params![i64::try_from(e.id).unwrap_or(i64::MAX), e.t, e.kind, id, data])?;
            rows += 1;
        }
        for f in &b.forget {
            let Some(id) = id_of(&f.protocol, &f.address)? else { continue };
            for sql in [
                "DELETE FROM servers WHERE id = ?1",
                "DELETE FROM hourly WHERE server_id = ?1",
                "DELETE FROM sightings WHERE server_id = ?1",
                "DELETE FROM events WHERE server_id = ?1",
            ] {
                rows += tx.prepare_cached(sql)?.execute([id])? as u64;
            }
            // Its samples are all from before it was last seen: a range of the time-keyed table (empty when
            // retention already took them).
            rows += tx
                .prepare_cached("DELETE FROM samples WHERE t <= ?2 AND server_id = ?1")?
                .execute(params![id, f.last_seen])? as u64;
        }
    }
    tx.commit()?;
    for f in &b.forget {
        if let Some(a) = ids.get_mut(&f.protocol) {
            a.remove(&f.address);
        }
    }
    Ok(rows)
}

/// Folds samples older than the retention into `hourly` and deletes what is past every retention. `now` in Unix
/// seconds. Returns the rows deleted.
pub fn prune(conn: &mut Connection, retention: Retention, now: i64) -> rusqlite::Result<u64> {
    let day = 86_400i64;
    // Whole hours only, so an hour is folded once.
    let cut_samples = (now - i64::from(retention.samples_days) * day).div_euclid(3600) * 3600;
    let cut_hourly = (now - i64::from(retention.hourly_days) * day).div_euclid(3600);
    let cut_events = now - i64::from(retention.events_days) * day;
    let tx = conn.transaction()?;
    tx.execute(
        "INSERT OR IGNORE INTO hourly (server_id, hour, samples, up_samples, players_avg, players_max, ping_avg) \
         SELECT server_id, t / 3600, count(*), sum(up), avg(players), max(players), avg(ping_us) / 1000.0 FROM samples \
         WHERE t < ?1 GROUP BY server_id, t / 3600",
        [cut_samples],
    )?;
    let mut n = tx.execute("DELETE FROM samples WHERE t < ?1", [cut_samples])?;
    n += tx.execute("DELETE FROM hourly WHERE hour < ?1", [cut_hourly])?;
    n += tx.execute("DELETE FROM events WHERE t < ?1", [cut_events])?;
    n += tx.execute("DELETE FROM sightings WHERE last_seen < ?1 AND present = 0", [cut_events])?;
    tx.commit()?;
    Ok(n as u64)
}

/// The database as the write jobs use it: the connection (opened with the first job), the cache of server ids,
/// when retention and `quick_check` last ran, and the file's identity (to notice it disappear). Moved into each job
/// on the worker and back with its [`WriteDone`]; never used on the event loop.
pub struct Database {
    path: PathBuf,
    retention: Retention,
    now: fn() -> i64,
    conn: Option<Connection>,
    ids: Ids,
    last_prune: Option<i64>,
    last_check: Option<i64>,
    /// (device, inode) of the file opened.
    identity: Option<(u64, u64)>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").field("path", &self.path).finish_non_exhaustive()
    }
}

/// What a write job gives back: the database, the batches it could not write (oldest first), its reports.
#[derive(Debug)]
pub struct WriteDone {
    /// The database, for the next job.
    pub db: Box<Database>,
    /// Batches not written (they go back to the front of the queue).
    pub unwritten: Vec<Batch>,
    /// What happened, in order.
    pub reports: Vec<Written>,
}

fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

impl Database {
    /// The database at `path` (opened by the first job; an error to open it is reported like a write error and
    /// tried again). `now` gives Unix seconds (for retention, which runs at start and hourly).
    pub fn new(path: PathBuf, retention: Retention, now: fn() -> i64) -> Database {
        Database {
            path,
            retention,
            now,
            conn: None,
            ids: Ids::new(),
            last_prune: None,
            last_check: None,
            identity: None,
        }
    }

    /// Writes `batches` (oldest first), one transaction each, until one fails; prunes and checks the database when
    /// due. Blocking: a job for the worker.
    pub fn write(mut self: Box<Self>, batches: Vec<Batch>) -> WriteDone {
        let mut reports = Vec::new();
        self.check_file(&mut reports);
        if self.conn.is_none() {
            match open(&self.path) {
                Ok(c) => {
                    self.ids.clear();
                    self.identity = identity(&self.path);
                    self.conn = Some(c);
                }
                Err(e) => {
                    let error = format!("cannot open the database {}: {e}", self.path.display());
                    error!(%error, "monitor database");
                    if let Some(b) = batches.first() {
                        reports.push(Written::Failed { round: b.round, error });
                    }
                    return WriteDone { db: self, unwritten: batches, reports };
                }
            }
        }
        let mut unwritten = Vec::new();
        let mut failed = false;
        for b in batches {
            if failed {
                unwritten.push(b);
                continue;
            }
            let Some(c) = self.conn.as_mut() else {
                unwritten.push(b);
                continue;
            };
            let started = std::time::Instant::now();
            match write_batch(c, &mut self.ids, &b) {
                Ok(rows) => {
                    let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
                    reports.push(Written::Committed { round: b.round, rows, micros });
                }
                Err(e) => {
                    let error = format!("cannot write to the database {}: {e}", self.path.display());
                    error!(%error, round = b.round, "monitor database");
                    reports.push(Written::Failed { round: b.round, error });
                    // The cached ids may belong to a rolled-back transaction.
                    self.ids.clear();
                    failed = true;
                    unwritten.push(b);
                }
            }
        }
        if !failed {
            self.maintain(&mut reports);
        }
        WriteDone { db: self, unwritten, reports }
    }

    /// Notices a database file that disappeared or was replaced: reported, and a new one opened (the history
    /// goes on in it).
    fn check_file(&mut self, reports: &mut Vec<Written>) {
        if self.conn.is_none() {
            return;
        }
        let now = identity(&self.path);
        if now.is_none() || now != self.identity {
            let error = format!(
                "the database {} {} while running; its history is not in the new file",
                self.path.display(),
                if now.is_none() { "disappeared" } else { "was replaced" }
            );
            error!(%error, "monitor database");
            reports.push(Written::Unhealthy { error });
            self.conn = None;
            self.ids.clear();
            self.last_check = None;
        }
    }

    /// Retention (hourly) and `PRAGMA quick_check` (at start and every [`CHECK_EVERY`] seconds).
    fn maintain(&mut self, reports: &mut Vec<Written>) {
        let t = (self.now)();
        let Some(c) = self.conn.as_mut() else { return };
        if self.last_check.is_none_or(|p| t - p >= CHECK_EVERY) {
            self.last_check = Some(t);
            match quick_check(c) {
                Ok(()) => reports.push(Written::Healthy),
                Err(error) => {
                    let error = format!("the database {} failed its check: {error}", self.path.display());
                    error!(%error, "monitor database");
                    reports.push(Written::Unhealthy { error });
                }
            }
        }
        if self.last_prune.is_none_or(|p| t - p >= 3600) {
            self.last_prune = Some(t);
            match prune(c, self.retention, t) {
                Ok(rows) => {
                    if rows > 0 {
                        info!(rows, "monitor database: old history pruned");
                    }
                    reports.push(Written::Pruned { rows });
                }
                Err(e) => warn!(error = %e, "monitor database: pruning failed"),
            }
        }
    }
}

/// `PRAGMA quick_check`: `Ok` when it says `ok`, else its first lines (or the error that stopped it).
pub fn quick_check(conn: &Connection) -> Result<(), String> {
    let mut st = conn.prepare("PRAGMA quick_check(5)").map_err(|e| e.to_string())?;
    let lines: Vec<String> =
        st.query_map([], |r| r.get::<_, String>(0)).map_err(|e| e.to_string())?.filter_map(Result::ok).collect();
    if lines.len() == 1 && lines[0] == "ok" {
        Ok(())
    } else {
        Err(lines.join("; "))
    }
}

/// The rounds waiting to be written, bounded in bytes ([`Batch::bytes`]). Sans-IO: the command moves batches
/// from here into write jobs and back.
#[derive(Debug)]
pub struct WriteQueue {
    batches: VecDeque<Batch>,
    bytes: usize,
    max_bytes: usize,
    /// Rounds dropped so far.
    dropped: u64,
}

impl WriteQueue {
    /// An empty queue holding at most `max_bytes` (the newest round is always kept).
    pub fn new(max_bytes: usize) -> WriteQueue {
        WriteQueue { batches: VecDeque::new(), bytes: 0, max_bytes, dropped: 0 }
    }

    /// Queues a round; returns the rounds dropped to stay within the bound (oldest first). A dropped round's
    /// server rows and forgets are folded into the round after it (its samples, sightings and events are lost).
    pub fn push(&mut self, b: Batch) -> Vec<u64> {
        self.bytes += b.bytes();
        self.batches.push_back(b);
        let mut dropped = Vec::new();
        while self.bytes > self.max_bytes && self.batches.len() > 1 {
            let Some(old) = self.batches.pop_front() else { break };
            self.bytes = self.bytes.saturating_sub(old.bytes());
            if let Some(next) = self.batches.front_mut() {
                self.bytes = self.bytes.saturating_sub(next.bytes());
                let have: HashSet<(&str, &str)> =
                    next.servers.iter().map(|r| (r.protocol.as_str(), r.address.as_str())).collect();
                let carried: Vec<ServerRow> = old
                    .servers
                    .into_iter()
                    .filter(|r| !have.contains(&(r.protocol.as_str(), r.address.as_str())))
                    .collect();
                next.servers.splice(0..0, carried);
                next.forget.splice(0..0, old.forget);
                self.bytes += next.bytes();
            }
            warn!(
                round = old.round,
                queued_bytes = self.bytes,
                "database writes are behind: a round's history is dropped"
            );
            self.dropped += 1;
            dropped.push(old.round);
        }
        dropped
    }

    /// Takes every queued round (for one write job).
    pub fn take(&mut self) -> Vec<Batch> {
        self.bytes = 0;
        self.batches.drain(..).collect()
    }

    /// Puts back the rounds a job could not write, before any queued since; returns the rounds dropped then.
    pub fn put_back(&mut self, unwritten: Vec<Batch>) -> Vec<u64> {
        let newer: Vec<Batch> = self.batches.drain(..).collect();
        self.bytes = 0;
        let mut dropped = Vec::new();
        for b in unwritten.into_iter().chain(newer) {
            dropped.extend(self.push(b));
        }
        dropped
    }

    /// Rounds waiting.
    pub fn len(&self) -> usize {
        self.batches.len()
    }

    /// True when no round waits.
    pub fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }

    /// Bytes waiting.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(addr: &str, t: i64, up: bool) -> ServerRow {
        ServerRow {
            protocol: "quake3".into(),
            address: addr.into(),
            first_seen: 100,
            last_seen: t,
            last_ok: if up { t } else { 100 },
            up,
            name: Some("srv".into()),
            map: Some("q3dm17".into()),
            players: Some(2),
            max_players: Some(8),
            ping_ms: Some(1.5),
            json: "{}".into(),
        }
    }

    fn batch(round: u64, t: i64, event_id: u64) -> Batch {
        Batch {
            round,
            t,
            servers: vec![server("127.0.0.1:27960", t, true)],
            samples: vec![Sample {
                protocol: "quake3".into(),
                address: "127.0.0.1:27960".into(),
                t,
                up: true,
                players: Some(2),
                max_players: Some(8),
                ping_ms: Some(1.5),
                map: Some("q3dm17".into()),
                name: Some("srv".into()),
            }],
            sightings: vec![Sighting {
                name: "bob".into(),
                protocol: "quake3".into(),
                address: "127.0.0.1:27960".into(),
                first_seen: 100,
                last_seen: t,
                present: true,
            }],
            events: vec![EventRow {
                id: event_id,
                t,
                kind: "player_joined",
                protocol: "quake3".into(),
                address: "127.0.0.1:27960".into(),
                detail: EventDetail { player: Some("bob".into()), ..EventDetail::default() },
            }],
            forget: Vec::new(),
        }
    }

    fn temp_db(label: &str) -> PathBuf {
        let mut p = std::env::temp_dir();
        p.push(format!("bzhead-store-{label}-{}-{:?}", std::process::id(), std::thread::current().id()));
        let _ = std::fs::remove_file(&p);
        p
    }

    #[test]
    fn batches_resume_after_reopen() {
        let p = temp_db("resume");
        {
            let mut c = open(&p).unwrap();
            let mut ids = Ids::new();
            write_batch(&mut c, &mut ids, &batch(1, 100, 1)).unwrap();
            write_batch(&mut c, &mut ids, &batch(2, 160, 2)).unwrap();
        }
        let c = open(&p).unwrap();
        let l = load(&c, 100, 10).unwrap();
        assert_eq!(l.servers.len(), 1);
        assert_eq!(l.next_event_id, 3);
        assert_eq!(l.events.iter().map(|e| e.id).collect::<Vec<_>>(), [1, 2]);
        // One stint, extended.
        assert_eq!(l.sightings.len(), 1);
        assert_eq!(l.sightings[0].last_seen, 160);
        let h = &l.history[&("quake3".to_owned(), "127.0.0.1:27960".to_owned())];
        assert_eq!(h.iter().map(|x| x.0).collect::<Vec<_>>(), [100, 160]);
        let n = counts(&c).unwrap();
        assert_eq!(n[1], ("samples", 2));
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn prune_folds_old_samples_into_hours() {
        let p = temp_db("prune");
        let mut c = open(&p).unwrap();
        let mut ids = Ids::new();
        let day = 86_400;
        let now = 400 * day;
        for (i, t) in [now - 10 * day, now - 10 * day + 60, now - 60].into_iter().enumerate() {
            write_batch(&mut c, &mut ids, &batch(i as u64, t, i as u64 + 1)).unwrap();
        }
        let r = Retention { samples_days: 7, hourly_days: 365, events_days: 90 };
        prune(&mut c, r, now).unwrap();
        let n = counts(&c).unwrap();
        assert_eq!(n[1], ("samples", 1));
        assert_eq!(n[2], ("hourly", 1));
        let (s, avg): (i64, f64) =
            c.query_row("SELECT samples, players_avg FROM hourly", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        assert_eq!((s, avg), (2, 2.0));
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn writer_reports_a_locked_database_and_resumes() {
        let p = temp_db("locked");
        drop(open(&p).unwrap());
        // Another process holds the write lock: every write fails after the busy timeout, as on a full disk or a
        // read-only file, and must succeed once the lock is gone.
        let holder = Connection::open(&p).unwrap();
        holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
        let db = Box::new(Database::new(p.clone(), Retention::default(), || 1_000_000));
        let mut q = WriteQueue::new(DEFAULT_MAX_QUEUED_BYTES);
        assert!(q.push(batch(1, 100, 1)).is_empty());
        let done = db.write(q.take());
        let failed = done.reports.iter().find_map(|r| match r {
            Written::Failed { round: 1, error } => Some(error.clone()),
            _ => None,
        });
        let failed = failed.expect("no failure reported");
        assert!(failed.contains("locked"), "{failed}");
        assert_eq!(done.unwritten.len(), 1);
        holder.execute_batch("COMMIT").unwrap();
        drop(holder);
        q.push(batch(2, 160, 2));
        assert!(q.put_back(done.unwritten).is_empty());
        let done = done.db.write(q.take());
        let committed: Vec<u64> = done
            .reports
            .iter()
            .filter_map(|r| match r {
                Written::Committed { round, .. } => Some(*round),
                _ => None,
            })
            .collect();
        assert_eq!(committed, [1, 2]);
        assert!(done.reports.contains(&Written::Healthy));
        drop(done);
        let c = open(&p).unwrap();
        let l = load(&c, 10, 10).unwrap();
        assert_eq!(l.next_event_id, 3);
        assert_eq!(l.events[0].detail.player.as_deref(), Some("bob"));
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn the_write_queue_is_bounded_in_bytes_and_keeps_the_server_rows() {
        let one = batch(1, 100, 1).bytes();
        let mut q = WriteQueue::new(one * 3);
        let mut dropped = Vec::new();
        for r in 1..=10u64 {
            let mut b = batch(r, 100 + r as i64, r);
            if r == 1 {
                b.servers[0].address = "127.0.0.1:1".into();
            }
            dropped.extend(q.push(b));
            assert!(q.bytes() <= one * 3 + 64, "{} > {}", q.bytes(), one * 3);
        }
        assert_eq!(dropped.len(), 10 - q.len());
        assert!(q.len() >= 2);
        // The dropped first round's server row went on with the next round.
        let rows: Vec<String> = q.take().into_iter().flat_map(|b| b.servers).map(|s| s.address).collect();
        assert!(rows.contains(&"127.0.0.1:1".to_owned()), "{rows:?}");
    }

    #[test]
    fn migrations_bring_a_version_1_database_up_and_a_newer_one_is_refused() {
        let p = temp_db("migrate");
        {
            let c = Connection::open(&p).unwrap();
            c.execute_batch(SCHEMA_V1).unwrap();
            c.pragma_update(None, "user_version", 1).unwrap();
            c.execute_batch(
                "INSERT INTO servers (id, protocol, address, first_seen, last_seen, last_ok, up, json) \
                 VALUES (1, 'quake3', '127.0.0.1:27960', 1, 2, 2, 1, '{}'); \
                 INSERT INTO events (id, t, type, server_id, data) VALUES (7, 2, 'player_joined', 1, \
                 '{\"id\":7,\"t\":2,\"type\":\"player_joined\",\"protocol\":\"quake3\",\
                 \"address\":\"127.0.0.1:27960\",\"server\":\"a long name\",\"player\":\"bob\"}');",
            )
            .unwrap();
        }
        let c = open(&p).unwrap();
        let v: i64 = c.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
        assert_eq!(v, SCHEMA_VERSION);
        let data: String = c.query_row("SELECT data FROM events", [], |r| r.get(0)).unwrap();
        assert_eq!(data, "{\"player\":\"bob\"}");
        let l = load(&c, 10, 10).unwrap();
        assert_eq!((l.events[0].kind, l.next_event_id), ("player_joined", 8));
        c.pragma_update(None, "user_version", SCHEMA_VERSION + 1).unwrap();
        drop(c);
        let e = open(&p).unwrap_err();
        assert!(matches!(e, OpenError::Newer { found } if found == SCHEMA_VERSION + 1), "{e}");
        assert!(e.to_string().contains("newer bzhead"), "{e}");
        // Refused without a change: its version is still the newer one.
        let c = Connection::open(&p).unwrap();
        let v: i64 = c.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
        assert_eq!(v, SCHEMA_VERSION + 1);
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn database_files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let p = temp_db("mode");
        let mut c = open(&p).unwrap();
        write_batch(&mut c, &mut Ids::new(), &batch(1, 100, 1)).unwrap();
        for suffix in ["", "-wal", "-shm"] {
            let f = PathBuf::from(format!("{}{suffix}", p.display()));
            let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode & 0o077, 0, "{} is {mode:o}", f.display());
        }
        drop(c);
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn a_database_that_disappears_or_fails_its_check_is_reported() {
        let p = temp_db("gone");
        let db = Box::new(Database::new(p.clone(), Retention::default(), || 1_000_000));
        let done = db.write(vec![batch(1, 100, 1)]);
        assert!(done.reports.contains(&Written::Healthy), "{:?}", done.reports);
        std::fs::remove_file(&p).unwrap();
        let done = done.db.write(vec![batch(2, 160, 2)]);
        assert!(
            done.reports.iter().any(|r| matches!(r, Written::Unhealthy { error } if error.contains("disappeared"))),
            "{:?}",
            done.reports
        );
        // Writing goes on in a new file.
        assert!(done.reports.iter().any(|r| matches!(r, Written::Committed { round: 2, .. })));
        drop(done);
        // A page of the file overwritten: quick_check says so.
        let c = Connection::open(&p).unwrap();
        c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE;").unwrap();
        drop(c);
        let mut bytes = std::fs::read(&p).unwrap();
        let page = 4096;
        assert!(bytes.len() >= 3 * page);
        for b in &mut bytes[page + 8..2 * page] {
            *b = 0x5a;
        }
        std::fs::write(&p, &bytes).unwrap();
        let c = Connection::open(&p).unwrap();
        assert!(quick_check(&c).is_err());
        let _ = std::fs::remove_file(&p);
    }
}
