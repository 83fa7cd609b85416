//! The monitor's history in SQLite: one writer thread, one transaction per round, WAL mode.
//!
//! Tables (`PRAGMA user_version` = [`SCHEMA_VERSION`]):
//!
//! * `servers(id, protocol, address, first_seen, last_seen, last_ok, up, name, map, players, max_players, ping_ms,
//!   json)`: one row per server ever seen, its latest state (`json`: the last answer in the shared result shape).
//! * `samples(t, server_id, up, players, max_players, ping_us, map, name)`: one row per server per round (keyed by
//!   time, so that retention deletes a range; a round's rows are appended together), kept
//!   [`Retention::samples_days`] days; `map` and `name` are NULL when they are those of the server's previous sample
//!   that had them (they are written at least once an hour).
//! * `hourly(server_id, hour, samples, up_samples, players_avg, players_max, ping_avg)`: samples folded per hour
//!   when they leave `samples`, kept [`Retention::hourly_days`] days.
//! * `sightings(name, server_id, first_seen, last_seen, present)`: one row per stint of a name on a server
//!   (written when it begins and ends, and every ten minutes in between).
//! * `events(id, t, type, server_id, data)`: the change feed, ids increasing across restarts.
//!
//! Times are Unix seconds. [`Writer`] owns the connection on its own thread: the event loop hands it a [`Batch`] per
//! round through a channel and hears back ([`Written`]) through another, with a `mio::Waker` nudge, so that no turn
//! of the loop waits for the disk. A batch that fails (full disk, read-only file, a lock) stays queued and is tried
//! again with the next one or after [`RETRY`]; the queue is bounded ([`MAX_QUEUED_BATCHES`]), the oldest batch is
//! dropped past it and counted. Each batch is one transaction, so `kill -9` loses at most the batch being written
//! and never leaves half of one.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension};
use tracing::{error, info, warn};

/// The schema's `PRAGMA user_version`.
pub const SCHEMA_VERSION: i64 = 1;
/// How long a failed batch waits before it is tried again (when no new batch comes first).
pub const RETRY: Duration = Duration::from_secs(5);
/// Most batches waiting while the database cannot be written; older ones are dropped (and counted).
pub const MAX_QUEUED_BATCHES: usize = 120;
/// How far back (seconds before the newest sample) a restart reads the servers' recent history.
pub const HISTORY_WINDOW: i64 = 6 * 3600;
/// Most recent events loaded at start for the change feed.
pub const LOADED_EVENTS: usize = 10_000;

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

/// One change-feed event.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRow {
    /// Id (increasing).
    pub id: u64,
    /// Unix seconds.
    pub t: i64,
    /// `server_up`, `server_down`, `player_joined`, `player_left`, `map_changed`, `name_changed`.
    pub kind: String,
    /// Protocol of the server.
    pub protocol: String,
    /// Address of the server.
    pub address: String,
    /// The event as one JSON object (what the feed sends).
    pub json: String,
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
    /// A batch was dropped because too many waited.
    Dropped {
        /// Its round.
        round: u64,
    },
    /// Retention pruned old rows.
    Pruned {
        /// Rows deleted.
        rows: u64,
    },
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

/// Opens (creating or migrating) the database at `path` and sets WAL mode.
pub fn open(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(2))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version < SCHEMA_VERSION {
        conn.execute_batch(SCHEMA)?;
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    }
    Ok(conn)
}

const SCHEMA: &str = "
BEGIN;
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
COMMIT;
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
        let (id, t, kind, sid, json) = row?;
        let (protocol, address) = ids.get(&sid).cloned().unwrap_or_default();
        out.events.push(EventRow { id: u64::try_from(id).unwrap_or(0), t, kind, protocol, address, json });
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
            ev.execute(params![i64::try_from(e.id).unwrap_or(i64::MAX), e.t, e.kind, id, e.json])?;
            rows += 1;
        }
    }
    tx.commit()?;
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

/// The writer thread's handle: send batches, hear back through [`Writer::try_recv`].
pub struct Writer {
    tx: Option<Sender<Batch>>,
    rx: Receiver<Written>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").finish_non_exhaustive()
    }
}

/// Called by the writer thread after each report (e.g. a `mio::Waker`'s `wake`).
pub type Notify = Arc<dyn Fn() + Send + Sync>;

impl Writer {
    /// Starts the writer thread on the database at `path` (opened there; an error to open it is reported like a
    /// write error and retried). `now` gives Unix seconds (for retention); prune runs at start and hourly.
    pub fn start(path: PathBuf, retention: Retention, now: fn() -> i64, notify: Notify) -> std::io::Result<Writer> {
        let (tx, brx) = mpsc::channel::<Batch>();
        let (wtx, rx) = mpsc::channel::<Written>();
        let thread = std::thread::Builder::new()
            .name("monitor-db".into())
            .spawn(move || writer_loop(&path, retention, now, &brx, &wtx, &notify))?;
        Ok(Writer { tx: Some(tx), rx, thread: Some(thread) })
    }

    /// Queues a batch (never blocks).
    pub fn send(&self, b: Batch) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(b);
        }
    }

    /// The next report, if any.
    pub fn try_recv(&self) -> Option<Written> {
        self.rx.try_recv().ok()
    }

    /// Stops the thread after it wrote what it can (one last try for a failed batch).
    pub fn close(&mut self) {
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.close();
    }
}

fn writer_loop(
    path: &Path,
    retention: Retention,
    now: fn() -> i64,
    rx: &Receiver<Batch>,
    tx: &Sender<Written>,
    notify: &Notify,
) {
    let report = |w: Written| {
        let _ = tx.send(w);
        notify();
    };
    let mut conn: Option<Connection> = None;
    let mut ids = Ids::new();
    let mut queue: VecDeque<Batch> = VecDeque::new();
    let mut last_prune: Option<i64> = None;
    let mut closing = false;
    loop {
        let wait = if queue.is_empty() { Duration::from_secs(600) } else { RETRY };
        match rx.recv_timeout(wait) {
            Ok(b) => {
                queue.push_back(b);
                // Take whatever else is waiting, so a backlog is written in one go.
                while let Ok(b) = rx.try_recv() {
                    queue.push_back(b);
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => closing = true,
        }
        while queue.len() > MAX_QUEUED_BATCHES {
            if let Some(b) = queue.pop_front() {
                warn!(round = b.round, "database writes are behind: a round's history is dropped");
                report(Written::Dropped { round: b.round });
            }
        }
        if conn.is_none() {
            match open(path) {
                Ok(c) => {
                    ids.clear();
                    conn = Some(c);
                }
                Err(e) => {
                    let error = format!("cannot open the database {}: {e}", path.display());
                    error!(%error, "monitor database");
                    if let Some(b) = queue.front() {
                        report(Written::Failed { round: b.round, error });
                    }
                }
            }
        }
        if let Some(c) = conn.as_mut() {
            while let Some(b) = queue.front() {
                let started = std::time::Instant::now();
                match write_batch(c, &mut ids, b) {
                    Ok(rows) => {
                        let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
                        report(Written::Committed { round: b.round, rows, micros });
                        queue.pop_front();
                    }
                    Err(e) => {
                        let error = format!("cannot write to the database {}: {e}", path.display());
                        error!(%error, round = b.round, "monitor database");
                        report(Written::Failed { round: b.round, error });
                        // The cached ids may belong to a rolled-back transaction.
                        ids.clear();
                        break;
                    }
                }
            }
            let t = now();
            if queue.is_empty() && last_prune.is_none_or(|p| t - p >= 3600) {
                last_prune = Some(t);
                match prune(c, retention, t) {
                    Ok(rows) => {
                        if rows > 0 {
                            info!(rows, "monitor database: old history pruned");
                        }
                        report(Written::Pruned { rows });
                    }
                    Err(e) => warn!(error = %e, "monitor database: pruning failed"),
                }
            }
        }
        if closing {
            return;
        }
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
                kind: "player_joined".into(),
                protocol: "quake3".into(),
                address: "127.0.0.1:27960".into(),
                json: "{}".into(),
            }],
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
        let (ntx, nrx) = mpsc::channel::<()>();
        let ntx = std::sync::Mutex::new(ntx);
        let notify: Notify = Arc::new(move || {
            let _ = ntx.lock().map(|t| t.send(()));
        });
        let mut w = Writer::start(p.clone(), Retention::default(), || 1_000_000, notify).unwrap();
        w.send(batch(1, 100, 1));
        let mut failed = None;
        while failed.is_none() && nrx.recv_timeout(Duration::from_secs(20)).is_ok() {
            while let Some(r) = w.try_recv() {
                if let Written::Failed { round: 1, error } = r {
                    failed = Some(error);
                }
            }
        }
        let failed = failed.expect("no failure reported");
        assert!(failed.contains("locked"), "{failed}");
        holder.execute_batch("COMMIT").unwrap();
        drop(holder);
        w.send(batch(2, 160, 2));
        let mut committed = Vec::new();
        while committed.len() < 2 && nrx.recv_timeout(Duration::from_secs(20)).is_ok() {
            while let Some(r) = w.try_recv() {
                if let Written::Committed { round, .. } = r {
                    committed.push(round);
                }
            }
        }
        assert_eq!(committed, [1, 2]);
        w.close();
        let c = open(&p).unwrap();
        assert_eq!(load(&c, 10, 10).unwrap().next_event_id, 3);
        let _ = std::fs::remove_file(&p);
    }
}
