//! `bzhead monitor` against a hostile game server, a hostile master and a hostile environment (issue 24): a real
//! UDP Quake III stand-in answering `getstatus` with a 30 KiB name and 800 player names that change every answer,
//! the same server while the database cannot be written, a master listing 2,000 entries, servers that stop being
//! listed, a database deleted while running or written by a newer bzhead, and a configuration with `nan`. Each
//! asserts the limits `docs/monitor.md` documents.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::monitor::{metric, MonitorProc};
use crate::support::fake::{fake_dpmaster, fake_q3, Responder};
use crate::support::peak::run_measured;
use crate::support::plugins::real_plugin_dir;
use crate::support::{bzhead, run_bzhead, TempDir, WAIT};

/// Bytes of database one hostile server may cost per round (docs/monitor.md, "What one server can cost").
const MAX_DB_BYTES_PER_ROUND: u64 = 32 * 1024;
/// Peak memory of a monitor watching the hostile server (docs/monitor.md), KiB.
const MAX_PEAK_KIB: u64 = 48 * 1024;

/// A Quake III server on loopback whose every `getstatus` answer has a 30 KiB name and 800 players of 30-byte
/// names, all new in each answer (`getinfo` says the same name and count).
fn hostile_q3() -> Responder {
    let answers = Arc::new(AtomicU64::new(0));
    let name = "\u{263a}".repeat(10 * 1024); // 30 KiB, three bytes a character
    Responder::spawn(
        "127.0.0.1:0",
        Box::new(move |data, _| {
            let text = data.strip_prefix(b"\xff\xff\xff\xff").map(String::from_utf8_lossy).unwrap_or_default();
            let text = text.trim_end_matches(['\n', '\0']);
            let (cmd, ch) = text.split_once(' ').unwrap_or((text, ""));
            let mut out = b"\xff\xff\xff\xff".to_vec();
            match cmd {
                "getinfo" => out.extend_from_slice(
                    format!(
                        "infoResponse\n\\sv_maxclients\\1000\\clients\\800\\mapname\\q3dm17\\hostname\\{name}\\\
                         protocol\\68\\gamename\\Quake3Arena\\challenge\\{ch}"
                    )
                    .as_bytes(),
                ),
                "getstatus" => {
                    let n = answers.fetch_add(1, Ordering::Relaxed);
                    out.extend_from_slice(
                        format!(
                            "statusResponse\n\\challenge\\{ch}\\sv_hostname\\{name}\\mapname\\q3dm17\\\
                             sv_maxclients\\1000\\g_gametype\\0\n"
                        )
                        .as_bytes(),
                    );
                    for i in 0..800 {
                        out.extend_from_slice(format!("0 50 \"{n:08}-{i:04}-xxxxxxxxxxxxxxxx\"\n").as_bytes());
                    }
                }
                _ => return vec![],
            }
            vec![out]
        }),
    )
}

/// The database's size once its WAL is checkpointed into it.
fn db_bytes(db: &Path) -> u64 {
    let c = rusqlite::Connection::open(db).unwrap();
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    drop(c);
    std::fs::metadata(db).unwrap().len()
}

fn monitor_args(db: &Path, plugins: &TempDir, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "monitor",
        "--db",
        db.to_str().unwrap(),
        "--plugin-dir",
        plugins.path().to_str().unwrap(),
        "--timeout-ms",
        "500",
        "--retries",
        "1",
        "--print-rounds",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args
}

fn round_lines(stdout: &str) -> Vec<Value> {
    stdout.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(|v| v.get("round").is_some()).collect()
}

#[test]
fn a_hostile_quake3_server_costs_a_bounded_number_of_bytes_per_round() {
    let plugins = real_plugin_dir();
    let dir = TempDir::new("monitor-hostile-bytes");
    let db = dir.join("m.db");
    let q3 = hostile_q3();
    let server = format!("quake3={}", q3.addr());
    // Two rounds to insert the server, then ten rounds whose growth is measured.
    let first =
        run_bzhead(monitor_args(&db, &plugins, &["--server", &server, "--interval", "1", "--rounds", "2"]), WAIT * 4);
    assert_eq!(first.code, Some(0), "{}", first.describe());
    let before = db_bytes(&db);
    let mut cmd = bzhead(monitor_args(&db, &plugins, &["--server", &server, "--interval", "1", "--rounds", "10"]));
    let m = run_measured(&mut cmd, WAIT * 6);
    assert_eq!(m.out.code, Some(0), "{}", m.describe());
    let rounds = round_lines(&m.out.stdout);
    assert_eq!(rounds.len(), 10, "{}", m.describe());
    assert!(rounds.iter().all(|r| r["answered"] == 1), "{}", m.describe());
    let after = db_bytes(&db);
    let per_round = after.saturating_sub(before) / 10;
    eprintln!("hostile server: {per_round} bytes of database per round, peak {} KiB", m.max_rss_kib);
    assert!(per_round <= MAX_DB_BYTES_PER_ROUND, "{per_round} bytes per round > {MAX_DB_BYTES_PER_ROUND}");
    assert!(m.max_rss_kib <= MAX_PEAK_KIB, "{}", m.describe());
    // What is stored is cut to the documented lengths, on UTF-8 boundaries, and events do not repeat the name.
    let c = rusqlite::Connection::open(&db).unwrap();
    let (name, players): (String, i64) =
        c.query_row("SELECT name, players FROM servers", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    assert!(name.len() <= 128 && name.len() > 120 && name.chars().all(|ch| ch == '\u{263a}'), "{}", name.len());
    assert_eq!(players, 800);
    let longest_player: i64 =
        c.query_row("SELECT max(length(CAST(name AS BLOB))) FROM sightings", [], |r| r.get(0)).unwrap();
    assert!(longest_player <= 32, "{longest_player}");
    let longest_event: i64 = c.query_row("SELECT max(length(data)) FROM events", [], |r| r.get(0)).unwrap();
    assert!(longest_event < 100, "{longest_event}");
    // At most 32 events a round, the rest folded into one events_folded event.
    let per_t: i64 =
        c.query_row("SELECT max(n) FROM (SELECT count(*) AS n FROM events GROUP BY t)", [], |r| r.get(0)).unwrap();
    let folded: i64 =
        c.query_row("SELECT count(*) FROM events WHERE type = 'events_folded'", [], |r| r.get(0)).unwrap();
    assert!(folded >= 10, "{folded}");
    // Rounds a second apart: at most two rounds share a second.
    assert!(per_t <= 2 * 33, "{per_t}");
}

#[test]
fn a_stalled_database_bounds_the_memory_of_the_rounds_waiting() {
    let plugins = real_plugin_dir();
    let dir = TempDir::new("monitor-hostile-stalled");
    let db = dir.join("m.db");
    let q3 = hostile_q3();
    let server = format!("quake3={}", q3.addr());
    let config = dir.join("m.toml");
    std::fs::write(&config, "write_queue_bytes = 65536\n").unwrap();
    let first = run_bzhead(monitor_args(&db, &plugins, &["--server", &server, "--rounds", "1"]), WAIT * 4);
    assert_eq!(first.code, Some(0), "{}", first.describe());
    // Another process holds the write lock for the whole run: no round can be written (as on a full disk).
    let holder = rusqlite::Connection::open(&db).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let mut cmd = bzhead(monitor_args(
        &db,
        &plugins,
        &["--server", &server, "--interval", "0.3", "--rounds", "16", "--config", config.to_str().unwrap()],
    ));
    let m = run_measured(&mut cmd, WAIT * 8);
    holder.execute_batch("ROLLBACK").unwrap();
    assert_eq!(m.out.code, Some(0), "{}", m.describe());
    assert_eq!(round_lines(&m.out.stdout).len(), 16, "{}", m.describe());
    let log = &m.out.stderr;
    assert!(log.contains("cannot write to the database"), "{}", m.describe());
    assert!(log.contains("a round's history is dropped"), "{}", m.describe());
    eprintln!("stalled database: peak {} KiB", m.max_rss_kib);
    assert!(m.max_rss_kib <= MAX_PEAK_KIB, "{}", m.describe());
}

#[test]
fn a_master_listing_2000_entries_gets_its_first_round_written() {
    let plugins = real_plugin_dir();
    let dir = TempDir::new("monitor-hostile-master");
    let db = dir.join("m.db");
    // 2,000 entries on 500 loopback hosts (4 ports each): nothing listens there, each query is refused at once.
    let entries: Vec<SocketAddr> = (0..2000u32)
        .map(|k| {
            let host = k / 4;
            SocketAddr::from(([127, 1, (host / 250) as u8, (host % 250 + 1) as u8], 20_000 + (k % 4) as u16))
        })
        .collect();
    let master = fake_dpmaster("127.0.0.1:0", entries, 100);
    let config = dir.join("m.toml");
    std::fs::write(
        &config,
        format!(
            "allow_private = true\n[[master]]\nprotocol = \"dpmaster\"\naddress = \"{}\"\nservers = \"quake3\"\n\
             game = \"Quake3Arena\"\ngame_protocol = 68\n",
            master.addr()
        ),
    )
    .unwrap();
    let started = Instant::now();
    let mut cmd = bzhead(monitor_args(
        &db,
        &plugins,
        &["--config", config.to_str().unwrap(), "--interval", "2", "--rounds", "1", "--rate", "20000"],
    ));
    let m = run_measured(&mut cmd, Duration::from_secs(30));
    assert!(!m.out.timed_out, "the first round did not end: {}", m.describe());
    assert_eq!(m.out.code, Some(0), "{}", m.describe());
    let rounds = round_lines(&m.out.stdout);
    assert_eq!(rounds.len(), 1, "{}", m.describe());
    assert!(rounds[0]["queries"].as_u64().unwrap_or(0) >= 2000, "{}", m.describe());
    // Paced on 2,000 entries over about half the interval (not at 50 a second: 40 s).
    assert!(rounds[0]["seconds"].as_f64().unwrap_or(99.0) <= 10.0, "{}", m.describe());
    eprintln!("master of 2000: first round in {:.1} s", started.elapsed().as_secs_f64());
    let c = rusqlite::Connection::open(&db).unwrap();
    let servers: i64 = c.query_row("SELECT count(*) FROM servers", [], |r| r.get(0)).unwrap();
    assert_eq!(servers, 2000);
}

/// Waits (bounded) until `pred` holds.
fn wait(m: &MonitorProc, what: &str, pred: impl Fn(&MonitorProc) -> bool) {
    let deadline = Instant::now() + WAIT * 4;
    while !pred(m) {
        assert!(Instant::now() < deadline, "{what}: not seen in time\n{}", m.log.text());
        thread::sleep(Duration::from_millis(100));
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn servers_not_seen_for_forget_after_are_forgotten_everywhere() {
    let plugins = real_plugin_dir();
    let dir = TempDir::new("monitor-forget");
    let db = dir.join("m.db");
    let (a, b) = (
        fake_q3("127.0.0.1:0", "bzhead old", "q3dm1", vec![("gone".into(), 1, 10)]),
        fake_q3("127.0.0.1:0", "bzhead new", "q3dm2", vec![]),
    );
    let first = run_bzhead(
        monitor_args(
            &db,
            &plugins,
            &["--server", &format!("quake3={}", a.addr()), "--rounds", "2", "--interval", "0.3"],
        ),
        WAIT * 4,
    );
    assert_eq!(first.code, Some(0), "{}", first.describe());
    thread::sleep(Duration::from_millis(2100));
    // A is not a source any more: once 2 s passed since it was last seen, it is forgotten.
    let b_source = format!("quake3={}", b.addr());
    let m = MonitorProc::start(
        &db,
        &plugins,
        &strings(&["--server", &b_source, "--interval", "0.3", "--forget-after", "2"]),
    );
    let a_addr = a.addr().to_string();
    wait(&m, "A forgotten", |m| {
        let servers: Value = serde_json::from_str(&m.get("/api/servers").1).unwrap_or(Value::Null);
        let listed: Vec<String> =
            servers["servers"].as_array().into_iter().flatten().map(|s| s["address"].to_string()).collect();
        listed.len() == 1 && !listed[0].contains(&a_addr)
    });
    let metrics = m.get("/metrics").1;
    assert!(!metrics.contains(&a_addr), "{metrics}");
    assert_eq!(metric(&metrics, "bzhead_monitor_servers_forgotten_total"), Some(1.0), "{metrics}");
    let players: Value = serde_json::from_str(&m.get("/api/players?name=gone").1).unwrap();
    assert_eq!(players["seen"], Value::Array(vec![]));
    wait(&m, "the forget written", |_| {
        let c = rusqlite::Connection::open(&db).unwrap();
        let n: i64 =
            c.query_row("SELECT count(*) FROM servers WHERE address = ?1", [&a_addr], |r| r.get(0)).unwrap_or(1);
        n == 0
    });
    let c = rusqlite::Connection::open(&db).unwrap();
    for table in ["sightings", "events"] {
        let n: i64 = c
            .query_row(
                &format!("SELECT count(*) FROM {table} WHERE server_id NOT IN (SELECT id FROM servers)"),
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(n, 0, "{table}");
    }
}

#[test]
fn a_database_deleted_while_running_is_reported_and_its_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let plugins = real_plugin_dir();
    let dir = TempDir::new("monitor-db-gone");
    let db = dir.join("m.db");
    let q3 = fake_q3("127.0.0.1:0", "bzhead gone", "q3dm1", vec![]);
    let source = format!("quake3={}", q3.addr());
    let m = MonitorProc::start(&db, &plugins, &strings(&["--server", &source, "--interval", "0.3"]));
    wait(&m, "a commit", |m| metric(&m.get("/metrics").1, "bzhead_monitor_db_commits_total").unwrap_or(0.0) >= 1.0);
    for suffix in ["", "-wal", "-shm"] {
        let f = dir.join(format!("m.db{suffix}"));
        let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}: {mode:o}", f.display());
    }
    assert_eq!(metric(&m.get("/metrics").1, "bzhead_monitor_db_healthy"), Some(1.0));
    std::fs::remove_file(&db).unwrap();
    wait(&m, "reported in /metrics", |m| {
        let t = m.get("/metrics").1;
        metric(&t, "bzhead_monitor_db_unhealthy_total").unwrap_or(0.0) >= 1.0
    });
    assert!(m.log.text().contains("disappeared while running"), "{}", m.log.text());
}

#[test]
fn a_database_of_a_newer_bzhead_is_refused() {
    let plugins = real_plugin_dir();
    let dir = TempDir::new("monitor-db-newer");
    let db = dir.join("m.db");
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch("CREATE TABLE future (x); PRAGMA user_version = 99;").unwrap();
    }
    let out = run_bzhead(monitor_args(&db, &plugins, &["--server", "quake3=127.0.0.1:9", "--rounds", "1"]), WAIT * 2);
    assert_eq!(out.code, Some(6), "{}", out.describe());
    assert!(out.stderr.contains("newer bzhead"), "{}", out.describe());
    let c = rusqlite::Connection::open(&db).unwrap();
    let v: i64 = c.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
    assert_eq!(v, 99);
}

#[test]
fn nan_and_other_bad_floats_in_the_config_are_usage_errors() {
    let dir = TempDir::new("monitor-nan");
    for (key, bad) in [("verify_every", "nan"), ("verify_every", "-5.0"), ("interval", "inf"), ("forget_after", "nan")]
    {
        let config = dir.join("m.toml");
        let text = if key == "verify_every" {
            format!("[[server]]\nprotocol = \"bzflag\"\naddress = \"127.0.0.1:5154\"\nverify_join = true\nverify_every = {bad}\n")
        } else {
            format!("{key} = {bad}\n[[server]]\nprotocol = \"bzflag\"\naddress = \"127.0.0.1:5154\"\n")
        };
        std::fs::write(&config, text).unwrap();
        let out = run_bzhead(
            [
                "monitor",
                "--db",
                dir.join("m.db").to_str().unwrap(),
                "--config",
                config.to_str().unwrap(),
                "--rounds",
                "1",
            ],
            WAIT,
        );
        assert_eq!(out.code, Some(2), "{key} = {bad}: {}", out.describe());
        assert!(out.stderr.contains(key) && !out.stderr.contains("panicked"), "{}", out.describe());
    }
}
