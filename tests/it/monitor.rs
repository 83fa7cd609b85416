//! `bzhead monitor` against real servers on loopback (DDNet 16.4, Teeworlds 0.7.5, OpenArena with bots, a real
//! `bzfs` with a bzhead bot): the API, the change feed, a real Prometheus scraping `/metrics`, `kill -9` and a
//! restart on the same database, a real headless chromium on the page.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::gameservers::GameServer;
use crate::support::plugins::real_plugin_dir;
use crate::support::{bzhead, free_port, require_program, Bzfs, OutputBuf, TempDir, WAIT};

const PROMETHEUS: &str = "/usr/bin/prometheus";
const CHROMIUM: &str = "/usr/bin/chromium";

/// `bzhead monitor` on `db`, serving HTTP on `http`, with the plugins of `plugins` and `extra` arguments.
pub(crate) fn monitor_command(db: &Path, http: SocketAddr, plugins: &TempDir, extra: &[String]) -> Command {
    let mut args: Vec<String> = vec![
        "monitor".into(),
        "--db".into(),
        db.to_str().unwrap().into(),
        "--http".into(),
        http.to_string(),
        "--plugin-dir".into(),
        plugins.path().to_str().unwrap().into(),
        "--timeout-ms".into(),
        "300".into(),
        "--retries".into(),
        "1".into(),
        "--print-rounds".into(),
    ];
    args.extend(extra.iter().cloned());
    bzhead(&args)
}

/// A running `bzhead monitor`, killed on drop.
pub(crate) struct MonitorProc {
    child: Child,
    pub(crate) http: SocketAddr,
    pub(crate) log: OutputBuf,
}

impl MonitorProc {
    /// Starts `bzhead monitor` on `db` with the plugins of `plugins`, its API on a free port, and `extra`.
    pub(crate) fn start(db: &Path, plugins: &TempDir, extra: &[String]) -> MonitorProc {
        let http = SocketAddr::from(([127, 0, 0, 1], free_port()));
        MonitorProc::spawn(monitor_command(db, http, plugins, extra), http)
    }

    /// Starts `cmd`, a monitor serving HTTP on `http`, and waits for its API.
    pub(crate) fn spawn(mut cmd: Command, http: SocketAddr) -> MonitorProc {
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("cannot start bzhead monitor");
        let log = OutputBuf::new();
        if let Some(o) = child.stdout.take() {
            log.attach("monitor-stdout", o);
        }
        if let Some(e) = child.stderr.take() {
            log.attach("monitor-stderr", e);
        }
        let m = MonitorProc { child, http, log };
        assert!(m.log.wait_for("monitor API on http://", WAIT), "{}", m.log.text());
        m
    }

    /// `GET path`: status and body.
    pub(crate) fn get(&self, path: &str) -> (u16, String) {
        http_get(self.http, path, &[])
    }

    pub(crate) fn json(&self, path: &str) -> Value {
        let (status, body) = self.get(path);
        assert_eq!(status, 200, "{path}: {body}");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
    }

    /// Waits until `/api/servers` satisfies `pred`; returns it.
    fn wait_servers(&self, what: &str, timeout: Duration, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let v = self.json("/api/servers");
            let servers = v["servers"].as_array().cloned().unwrap_or_default();
            if pred(&servers) {
                return servers;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not seen in time; last /api/servers: {v:#}\n{}",
                self.log.text()
            );
            thread::sleep(Duration::from_millis(100));
        }
    }

    fn rounds(&self) -> usize {
        self.log.text().lines().filter(|l| l.starts_with("{\"answered\"")).count()
    }

    fn kill9(&mut self) {
        let _ = self.child.kill(); // SIGKILL
        let _ = self.child.wait();
    }
}

impl Drop for MonitorProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if thread::panicking() {
            eprintln!("--- bzhead monitor ---\n{}\n---", self.log.tail(40));
        }
    }
}

/// A plain HTTP/1.1 GET with `Connection: close`: status and body.
pub(crate) fn http_get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut s = TcpStream::connect_timeout(&addr, WAIT).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    s.set_read_timeout(Some(WAIT)).unwrap();
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req += &format!("{k}: {v}\r\n");
    }
    req += "\r\n";
    s.write_all(req.as_bytes()).unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, body.to_owned())
}

/// The change feed read on a thread: every event's JSON, in order.
struct Feed {
    events: Arc<Mutex<Vec<Value>>>,
}

impl Feed {
    fn open(addr: SocketAddr, last_event_id: Option<u64>) -> Feed {
        let mut s = TcpStream::connect_timeout(&addr, WAIT).unwrap();
        let mut req = format!("GET /api/events HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n");
        if let Some(id) = last_event_id {
            req += &format!("Last-Event-ID: {id}\r\n");
        }
        req += "\r\n";
        s.write_all(req.as_bytes()).unwrap();
        let events = Arc::new(Mutex::new(Vec::new()));
        let out = events.clone();
        thread::spawn(move || {
            let mut r = BufReader::new(s);
            let mut line = String::new();
            while r.read_line(&mut line).is_ok_and(|n| n > 0) {
                if let Some(data) = line.trim_end().strip_prefix("data: ") {
                    if let Ok(v) = serde_json::from_str::<Value>(data) {
                        out.lock().unwrap().push(v);
                    }
                }
                line.clear();
            }
        });
        Feed { events }
    }

    fn all(&self) -> Vec<Value> {
        self.events.lock().unwrap().clone()
    }

    /// Waits for an event matching `pred`.
    #[track_caller]
    fn wait(&self, what: &str, timeout: Duration, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(v) = self.all().into_iter().find(|v| pred(v)) {
                return v;
            }
            assert!(Instant::now() < deadline, "{what}: not on the feed; got {:#?}", self.all());
            thread::sleep(Duration::from_millis(50));
        }
    }
}

fn find<'a>(servers: &'a [Value], protocol: &str, addr: SocketAddr) -> Option<&'a Value> {
    servers.iter().find(|s| s["protocol"] == protocol && s["address"] == addr.to_string())
}

fn is(ev: &Value, kind: &str, protocol: &str, addr: SocketAddr) -> bool {
    ev["type"] == kind && ev["protocol"] == protocol && ev["address"] == addr.to_string()
}

/// A bzhead bot on `bzfs` (a `sitter`), killed on drop.
pub(crate) struct Bot(Child);

impl Bot {
    pub(crate) fn join(bzfs: &Bzfs, name: &str) -> Bot {
        let mut cmd = bzhead(["bot", "sitter", "--count", "1", "--callsign", name, "--quiet", &bzfs.host_port()]);
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        Bot(cmd.spawn().expect("cannot start bzhead bot"))
    }
}

impl Drop for Bot {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn monitor_tracks_real_servers_and_feeds_their_changes() {
    let plugins = real_plugin_dir();
    let dir = TempDir::new("monitor-real");
    let ddnet = GameServer::ddnet("bzhead monitor DDNet");
    let tw07 = GameServer::teeworlds07("bzhead monitor tw07");
    let oa = GameServer::openarena("bzhead monitor OA", 2);
    let mut bzfs = Bzfs::builder().start();
    let bot = Bot::join(&bzfs, "monbot");
    assert!(bzfs.wait_for_log("monbot1", WAIT), "{}", bzfs.log());
    let mut args = vec!["--interval".to_owned(), "1".to_owned()];
    for (p, a) in
        [("teeworlds", ddnet.addr()), ("teeworlds7", tw07.addr()), ("quake3", oa.addr()), ("bzflag", bzfs.addr())]
    {
        args.extend(["--server".to_owned(), format!("{p}={a}")]);
    }
    let m = MonitorProc::start(&dir.join("m.db"), &plugins, &args);
    let feed = Feed::open(m.http, Some(0));
    let servers = m.wait_servers("all four up with their players", WAIT * 3, |s| {
        [("teeworlds", ddnet.addr()), ("teeworlds7", tw07.addr()), ("quake3", oa.addr())]
            .iter()
            .all(|(p, a)| find(s, p, *a).is_some_and(|v| v["up"] == true))
            && find(s, "bzflag", bzfs.addr()).is_some_and(|v| v["up"] == true && v["players"] == 1)
    });
    // Every answer validates against docs/schemas/monitor-api.schema.json.
    let schema = crate::schemas::Schema::load("monitor-api");
    schema.check(&m.json("/api/servers?history=1"));
    let get = |p: &str, a: SocketAddr| find(&servers, p, a).unwrap().clone();
    assert_eq!(get("teeworlds", ddnet.addr())["name"], "bzhead monitor DDNet");
    assert_eq!(get("teeworlds", ddnet.addr())["players"], 0);
    assert_eq!(get("teeworlds7", tw07.addr())["name"], "bzhead monitor tw07");
    assert_eq!(get("teeworlds7", tw07.addr())["players"], 0);
    let oa_v = get("quake3", oa.addr());
    assert_eq!(oa_v["name"], "bzhead monitor OA");
    assert_eq!(oa_v["players"], 2, "{oa_v}");
    // Humans and bots apart: OpenArena's two bots; bzfs's bzhead bot, a robot player (its observer link is not a
    // player); Teeworlds 0.7 tells bots apart, 0.6 does not.
    assert_eq!((oa_v["bots"].clone(), oa_v["humans"].clone()), (2.into(), 0.into()), "{oa_v}");
    let bz_v = get("bzflag", bzfs.addr());
    assert_eq!((bz_v["bots"].clone(), bz_v["humans"].clone()), (1.into(), 0.into()), "{bz_v}");
    assert_eq!(get("teeworlds7", tw07.addr())["humans"], 0);
    assert_eq!(get("teeworlds", ddnet.addr())["humans"], Value::Null);
    // Configured servers: no master lists them.
    let src = serde_json::json!({"registered": null, "upstreams": [], "listed_first": null, "listed_last": null,
                                 "last_verified_join": null});
    assert_eq!(oa_v["source"], src, "{oa_v}");
    assert!(oa_v["first_seen"].as_i64().unwrap() > 0 && oa_v["last_ok"].as_i64().is_some(), "{oa_v}");
    // Filters.
    let q = m.json("/api/servers?protocol=quake3&min_players=2");
    assert_eq!(q["servers"].as_array().unwrap().len(), 1, "{q}");
    let q = m.json("/api/servers?q=TW07");
    schema.check(&q);
    assert_eq!(q["servers"][0]["address"], tw07.addr().to_string(), "{q}");
    // One server with its players and history.
    let one = m.json(&format!("/api/servers/bzflag/{}", bzfs.addr()));
    schema.check(&one);
    // bzfs lists the bots' observer link too (bzhead-eye); players counts the bot only.
    assert!(one["player_list"].as_array().unwrap().iter().any(|p| p["name"] == "monbot1"), "{one}");
    assert!(one["history"].as_array().is_some_and(|h| !h.is_empty()), "{one}");
    let who = m.json("/api/players?name=monbot1");
    schema.check(&who);
    assert_eq!(who["seen"][0]["address"], bzfs.addr().to_string(), "{who}");
    assert_eq!(who["seen"][0]["present"], true, "{who}");
    feed.wait("the bot joined", WAIT, |e| is(e, "player_joined", "bzflag", bzfs.addr()) && e["player"] == "monbot1");
    feed.wait("OpenArena up", WAIT, |e| is(e, "server_up", "quake3", oa.addr()));

    // The bot leaves.
    drop(bot);
    feed.wait("the bot left", WAIT * 2, |e| is(e, "player_left", "bzflag", bzfs.addr()) && e["player"] == "monbot1");
    // DDNet stops.
    let dd_addr = ddnet.addr();
    drop(ddnet);
    // bzfs crashes and comes back.
    let bz = bzfs.addr();
    bzfs.kill_now();
    feed.wait("bzfs down", WAIT * 2, |e| is(e, "server_down", "bzflag", bz));
    feed.wait("DDNet down", WAIT * 2, |e| e["type"] == "server_down" && e["protocol"] == "teeworlds");
    bzfs.restart(WAIT);
    feed.wait("bzfs up again", WAIT * 2, |e| {
        is(e, "server_up", "bzflag", bz) && e["id"].as_u64() > Some(1) && e["t"].as_i64().is_some()
    });
    // Ids increase one by one, none twice.
    let ids: Vec<u64> = feed.all().iter().filter_map(|e| e["id"].as_u64()).collect();
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");
    let after = m.json("/api/servers");
    schema.check(&after);
    schema.check(&m.json(&format!("/api/servers/teeworlds/{}", dd_addr)));
    let dd = after["servers"].as_array().unwrap().iter().find(|s| s["protocol"] == "teeworlds").unwrap().clone();
    assert_eq!((dd["up"].clone(), dd["ok"].clone()), (false.into(), false.into()), "{dd}");
    assert_eq!(dd["name"], "bzhead monitor DDNet", "the last known name stays: {dd}");
}

#[test]
fn prometheus_scrapes_the_monitor_and_answers_with_the_player_counts() {
    require_program(PROMETHEUS);
    let plugins = real_plugin_dir();
    let dir = TempDir::new("monitor-prom");
    // (Names with quotes or backslashes cannot be given to these servers on their command line; the escaping of
    // label values has its unit test in src/monitor/metrics.rs.)
    let oa = GameServer::openarena("bzhead prom OA", 3);
    let tw07 = GameServer::teeworlds07("bzhead prom tw07");
    let args: Vec<String> = ["--interval", "1", "--server", &format!("quake3={}", oa.addr())]
        .into_iter()
        .map(str::to_owned)
        .chain(["--server".to_owned(), format!("teeworlds7={}", tw07.addr())])
        .collect();
    let m = MonitorProc::start(&dir.join("m.db"), &plugins, &args);
    m.wait_servers("both up", WAIT * 2, |s| s.len() == 2 && s.iter().all(|v| v["up"] == true));
    let (status, text) = m.get("/metrics");
    assert_eq!(status, 200);
    assert!(
        text.contains(&format!(
            r#"bzhead_server_players{{protocol="quake3",address="{}",name="bzhead prom OA"}} 3"#,
            oa.addr()
        )),
        "{text}"
    );
    // promtool's opinion of the exposition.
    let promtool = Command::new("/usr/bin/promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    if let Ok(mut p) = promtool {
        p.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        let out = p.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "promtool: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let prom_port = free_port();
    std::fs::write(
        dir.join("prometheus.yml"),
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: bzhead\n    \
             static_configs:\n      - targets: ['{}']\n",
            m.http
        ),
    )
    .unwrap();
    let mut prom = Command::new(PROMETHEUS)
        .args([
            &format!("--config.file={}", dir.join("prometheus.yml").display()),
            &format!("--storage.tsdb.path={}", dir.join("tsdb").display()),
            &format!("--web.listen-address=127.0.0.1:{prom_port}"),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start prometheus");
    let plog = OutputBuf::new();
    if let Some(e) = prom.stderr.take() {
        plog.attach("prometheus", e);
    }
    struct Kill(Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _prom = Kill(prom);
    let addr = SocketAddr::from(([127, 0, 0, 1], prom_port));
    let deadline = Instant::now() + WAIT * 4;
    let mut last = String::new();
    loop {
        if let Ok(s) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
            drop(s);
            let (status, body) = http_get(addr, "/api/v1/query?query=bzhead_server_players", &[]);
            if status == 200 {
                let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                let results = v["data"]["result"].as_array().cloned().unwrap_or_default();
                let value_of = |proto: &str| {
                    results
                        .iter()
                        .find(|r| r["metric"]["protocol"] == proto)
                        .and_then(|r| r["value"][1].as_str().map(str::to_owned))
                };
                if value_of("quake3").as_deref() == Some("3") && value_of("teeworlds7").as_deref() == Some("0") {
                    let oa_r = results.iter().find(|r| r["metric"]["protocol"] == "quake3").unwrap();
                    assert_eq!(oa_r["metric"]["name"], "bzhead prom OA");
                    assert_eq!(oa_r["metric"]["address"], oa.addr().to_string());
                    break;
                }
                last = body;
            }
        }
        assert!(Instant::now() < deadline, "prometheus never had the counts; last answer {last}\n{}", plog.text());
        thread::sleep(Duration::from_millis(200));
    }
}

fn db_counts(db: &Path) -> Vec<(String, i64)> {
    let c = rusqlite::Connection::open(db).unwrap();
    let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
    ["servers", "samples", "sightings", "events"]
        .iter()
        .map(|t| (t.to_string(), c.query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0)).unwrap()))
        .collect()
}

#[test]
fn kill_9_mid_round_then_restart_loses_nothing_and_repeats_nothing() {
    let plugins = real_plugin_dir();
    let dir = TempDir::new("monitor-kill");
    let db = dir.join("m.db");
    let oa = GameServer::openarena("bzhead kill OA", 2);
    let tw07 = GameServer::teeworlds07("bzhead kill tw07");
    // Unanswered addresses keep a round running long enough to be killed in the middle of one.
    let mut args: Vec<String> = vec!["--interval".into(), "0.5".into()];
    args.extend(["--server".into(), format!("quake3={}", oa.addr())]);
    args.extend(["--server".into(), format!("teeworlds7={}", tw07.addr())]);
    for _ in 0..3 {
        args.extend(["--server".into(), format!("quake3=127.0.0.1:{}", free_port())]);
    }
    let mut m = MonitorProc::start(&db, &plugins, &args);
    let feed = Feed::open(m.http, Some(0));
    feed.wait("OpenArena up", WAIT * 2, |e| is(e, "server_up", "quake3", oa.addr()));
    let deadline = Instant::now() + WAIT * 2;
    while m.rounds() < 4 {
        assert!(Instant::now() < deadline, "{}", m.log.text());
        thread::sleep(Duration::from_millis(50));
    }
    // Mid-round: just after a round line, the next round is running.
    let n = m.rounds();
    while m.rounds() == n {
        thread::sleep(Duration::from_millis(5));
    }
    thread::sleep(Duration::from_millis(150));
    m.kill9();
    let before = db_counts(&db);
    let seen_before: Vec<u64> = feed.all().iter().filter_map(|e| e["id"].as_u64()).collect();
    let last_seen = *seen_before.last().unwrap();
    // While it is down, a server stops: the restarted monitor must report it, with the next ids.
    drop(tw07);

    let m2 = MonitorProc::start(&db, &plugins, &args);
    let feed2 = Feed::open(m2.http, Some(last_seen));
    let down = feed2
        .wait("tw07 down after the restart", WAIT * 3, |e| e["type"] == "server_down" && e["protocol"] == "teeworlds7");
    let ids: Vec<u64> = feed2.all().iter().filter_map(|e| e["id"].as_u64()).collect();
    assert!(ids.iter().all(|&i| i > last_seen), "ids after {last_seen}: {ids:?}");
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");
    assert!(down["id"].as_u64().unwrap() > last_seen);
    // OpenArena was up before and is up now: no second server_up.
    assert!(!feed2.all().iter().any(|e| is(e, "server_up", "quake3", oa.addr())), "{:#?}", feed2.all());
    // Every row committed before the kill is still there, and history goes on.
    let deadline = Instant::now() + WAIT;
    loop {
        let after = db_counts(&db);
        let grew = after.iter().zip(&before).all(|(a, b)| a.1 >= b.1) && after[1].1 > before[1].1;
        if grew {
            assert_eq!(after[0], before[0], "servers: {before:?} → {after:?}");
            break;
        }
        assert!(Instant::now() < deadline, "{before:?} → {after:?}");
        thread::sleep(Duration::from_millis(100));
    }
    // The database's events are exactly those the feeds delivered (nothing lost, nothing twice).
    let c = rusqlite::Connection::open(&db).unwrap();
    let mut st = c.prepare("SELECT id FROM events ORDER BY id").unwrap();
    let stored: Vec<u64> = st.query_map([], |r| r.get::<_, i64>(0)).unwrap().map(|r| r.unwrap() as u64).collect();
    let delivered: Vec<u64> = seen_before.iter().chain(ids.iter()).copied().collect();
    assert!(
        stored.starts_with(&delivered) || delivered.starts_with(&stored[..delivered.len().min(stored.len())]),
        "stored {stored:?}, delivered {delivered:?}"
    );
    assert_eq!(stored, (1..=stored.len() as u64).collect::<Vec<_>>());
}

#[test]
fn headless_chromium_shows_the_servers_as_text() {
    require_program(CHROMIUM);
    let plugins = real_plugin_dir();
    let dir = TempDir::new("monitor-chromium");
    let oa = GameServer::openarena("bzhead page OA", 1);
    let tw07 = GameServer::teeworlds07("<i>tw07</i> page");
    let args: Vec<String> = vec![
        "--interval".into(),
        "1".into(),
        "--server".into(),
        format!("quake3={}", oa.addr()),
        "--server".into(),
        format!("teeworlds7={}", tw07.addr()),
    ];
    let m = MonitorProc::start(&dir.join("m.db"), &plugins, &args);
    m.wait_servers("both up", WAIT * 2, |s| s.len() == 2 && s.iter().all(|v| v["up"] == true));
    let out = crate::support::run_with_deadline(
        Command::new(CHROMIUM).args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            &format!("--user-data-dir={}", dir.join("chromium").display()),
            "--virtual-time-budget=2000",
            "--dump-dom",
            &format!("http://{}/", m.http),
        ]),
        WAIT * 6,
    );
    assert!(out.success(), "{}", out.describe());
    let dom = out.stdout;
    assert!(dom.contains("bzhead page OA"), "{dom}");
    assert!(dom.contains(&oa.addr().to_string()), "{dom}");
    // The name is text: its markup shows escaped, and no <i> element was made from it.
    assert!(dom.contains("&lt;i&gt;tw07&lt;/i&gt; page"), "{dom}");
    assert!(!dom.contains("<i>tw07</i>"), "{dom}");
    assert!(dom.contains("2 of 2 servers"), "{dom}");
    // Where they come from (no master lists them), and OpenArena's bot told apart.
    assert!(dom.contains(">configured<"), "{dom}");
    assert!(dom.contains("1/12 (1 bot)"), "{dom}");
}

#[test]
fn verify_join_joins_a_real_bzfs_as_an_observer_and_reports_it() {
    let plugins = real_plugin_dir();
    let dir = TempDir::new("monitor-verify-join");
    let bzfs = Bzfs::builder().start();
    let config = dir.join("monitor.toml");
    std::fs::write(
        &config,
        format!(
            "interval = 1\n[[server]]\nprotocol = \"bzflag\"\naddress = \"{}\"\nverify_join = true\nverify_every = 3600\n",
            bzfs.addr()
        ),
    )
    .unwrap();
    let m =
        MonitorProc::start(&dir.join("m.db"), &plugins, &["--config".to_owned(), config.to_str().unwrap().to_owned()]);
    let deadline = Instant::now() + WAIT * 2;
    let text = loop {
        let (_, text) = m.get("/metrics");
        if text.contains("bzhead_server_join_seconds{") {
            break text;
        }
        assert!(Instant::now() < deadline, "no join reported: {text}\n{}", m.log.text());
        thread::sleep(Duration::from_millis(100));
    };
    assert!(
        text.contains(&format!("bzhead_server_joinable{{protocol=\"bzflag\",address=\"{}\"}} 1", bzfs.addr())),
        "{text}"
    );
    // The API says when the last join worked.
    let v = m.json(&format!("/api/servers/bzflag/{}", bzfs.addr()));
    crate::schemas::Schema::load("monitor-api").check(&v);
    assert!(v["source"]["last_verified_join"].as_i64().is_some_and(|t| t > 0), "{v}");
    // The server saw an observer join and leave.
    assert!(bzfs.wait_for_log("bzhead-monitor", WAIT), "{}", bzfs.log());
    assert!(bzfs.wait_for_log("removed", WAIT), "{}", bzfs.log());
}

/// A metric's value in a Prometheus text exposition.
/// A sample's value in a Prometheus exposition.
pub(crate) fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')).and_then(|v| v.trim().parse().ok()))
}

#[test]
fn a_database_that_cannot_be_written_is_reported_while_scanning_goes_on_and_writing_resumes() {
    let plugins = real_plugin_dir();
    let dir = TempDir::new("monitor-db-locked");
    let db = dir.join("m.db");
    let oa = GameServer::openarena("bzhead locked OA", 1);
    let args: Vec<String> = vec!["--interval".into(), "0.5".into(), "--server".into(), format!("quake3={}", oa.addr())];
    let m = MonitorProc::start(&db, &plugins, &args);
    m.wait_servers("OpenArena up", WAIT * 2, |s| s.iter().any(|v| v["up"] == true));
    let wait_metrics = |what: &str, pred: &dyn Fn(&str) -> bool| -> String {
        let deadline = Instant::now() + WAIT * 3;
        loop {
            let (_, text) = m.get("/metrics");
            if pred(&text) {
                return text;
            }
            assert!(Instant::now() < deadline, "{what}: {text}\n{}", m.log.text());
            thread::sleep(Duration::from_millis(100));
        }
    };
    // Another process takes the write lock: every write fails (as on a full disk or a read-only file).
    let holder = rusqlite::Connection::open(&db).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let text = wait_metrics("db errors", &|t| {
        metric(t, "bzhead_monitor_db_ok") == Some(0.0)
            && metric(t, "bzhead_monitor_db_errors_total").unwrap_or(0.0) >= 1.0
    });
    let rounds_then = metric(&text, "bzhead_monitor_rounds_total").unwrap();
    // Scanning and the API go on.
    wait_metrics("rounds go on", &|t| metric(t, "bzhead_monitor_rounds_total").unwrap_or(0.0) >= rounds_then + 2.0);
    assert_eq!(m.json("/api/servers")["servers"][0]["up"], true);
    assert!(m.log.text().contains("cannot write to the database"), "{}", m.log.text());
    // The lock goes: the queued rounds are written and the database is fine again.
    let commits_then = metric(&m.get("/metrics").1, "bzhead_monitor_db_commits_total").unwrap();
    holder.execute_batch("COMMIT").unwrap();
    drop(holder);
    wait_metrics("writes resume", &|t| {
        metric(t, "bzhead_monitor_db_ok") == Some(1.0)
            && metric(t, "bzhead_monitor_db_commits_total").unwrap_or(0.0) >= commits_then + 2.0
            && metric(t, "bzhead_monitor_db_dropped_rounds_total") == Some(0.0)
    });
    let c = rusqlite::Connection::open(&db).unwrap();
    let rounds: i64 = c.query_row("SELECT count(DISTINCT t) FROM samples", [], |r| r.get(0)).unwrap();
    assert!(rounds >= 2, "{rounds}");
}

/// A server that never answered (no name, no map, no players, never up) is listed by `/api/servers` and
/// `/api/servers/PROTOCOL/ADDRESS`, and both answers validate against docs/schemas/monitor-api.schema.json.
#[test]
fn a_server_that_never_answers_is_listed_and_validates_against_the_schema() {
    let plugins = real_plugin_dir();
    let dir = TempDir::new("monitor-silent");
    let silent = crate::support::fake::silent("127.0.0.1:0");
    let addr = silent.addr();
    let args = ["--interval".to_owned(), "1".to_owned(), "--server".to_owned(), format!("quake3={addr}")];
    let m = MonitorProc::start(&dir.join("m.db"), &plugins, &args);
    let servers = m.wait_servers("the silent server after a round", WAIT * 2, |s| {
        find(s, "quake3", addr).is_some_and(|v| v["ok"] == false)
    });
    let v = find(&servers, "quake3", addr).unwrap().clone();
    assert_eq!(
        (v["up"].clone(), v["name"].clone(), v["last_ok"].clone()),
        (false.into(), Value::Null, Value::Null),
        "{v}"
    );
    assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{v}");
    let schema = crate::schemas::Schema::load("monitor-api");
    schema.check(&m.json("/api/servers"));
    schema.check(&m.json("/api/servers?history=1"));
    let one = m.json(&format!("/api/servers/quake3/{addr}"));
    schema.check(&one);
    assert_eq!(one["address"], addr.to_string(), "{one}");
}
