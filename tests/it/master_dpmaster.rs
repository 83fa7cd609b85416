//! `bzhead monitor --dpmaster`: the dpmaster-compatible master, with a real OpenArena server registering by heartbeat
//! and a real qstat and `bzhead scan --master` listing it; and hostile peers (forged and replayed challenges, a 64 KB
//! infoResponse, 100,000 heartbeats from one address), the memory they cost and a clean end on SIGHUP.

use std::net::{SocketAddr, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::monitor::monitor_command;
use crate::support::gameservers::{require_game_program, GameServer, QSTAT};
use crate::support::plugins::real_plugin_dir;
use crate::support::{free_port, run_bzhead, run_with_deadline, OutputBuf, TempDir, WAIT};

const OOB: &[u8] = b"\xff\xff\xff\xff";

/// A running `bzhead monitor --dpmaster ...` (its API on a free port), killed on drop.
struct Master {
    child: Child,
    http: SocketAddr,
    /// The master's UDP addresses, in the order given.
    udp: Vec<SocketAddr>,
    log: OutputBuf,
    _dir: TempDir,
    _plugins: TempDir,
}

impl Master {
    fn start(extra: &[&str]) -> Master {
        let dir = TempDir::new("dpmaster");
        let plugins = real_plugin_dir();
        let http = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let mut cmd = monitor_command(&dir.path().join("m.db"), http, &plugins, &extra);
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("cannot start bzhead monitor");
        let log = OutputBuf::new();
        log.attach("monitor-stdout", child.stdout.take().unwrap());
        log.attach("monitor-stderr", child.stderr.take().unwrap());
        let listens = extra.iter().filter(|a| *a == "--dpmaster").count();
        assert!(log.wait_for("monitor API on http://", WAIT), "{}", log.text());
        assert!(log.wait_for_count("dpmaster master on udp://", listens, WAIT), "{}", log.text());
        let udp = log
            .text()
            .lines()
            .filter_map(|l| l.split("dpmaster master on udp://").nth(1))
            .map(|a| a.trim().parse().unwrap())
            .collect();
        Master { child, http, udp, log, _dir: dir, _plugins: plugins }
    }

    /// A sample of the master family `name` (`protocol="dpmaster"`).
    fn metric(&self, name: &str) -> u64 {
        let (status, body) = crate::monitor::http_get(self.http, "/metrics", &[]);
        assert_eq!(status, 200, "{body}");
        let prefix = format!("{name}{{protocol=\"dpmaster\"}} ");
        body.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {prefix} in /metrics:\n{body}"))
    }

    #[track_caller]
    fn wait_metric(&self, name: &str, timeout: Duration, pred: impl Fn(u64) -> bool) -> u64 {
        let deadline = Instant::now() + timeout;
        loop {
            let v = self.metric(name);
            if pred(v) {
                return v;
            }
            assert!(Instant::now() < deadline, "{name} = {v}, not as expected in time\n{}", self.log.tail(20));
            thread::sleep(Duration::from_millis(50));
        }
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status.lines().find_map(|l| l.strip_prefix("VmRSS:")).unwrap().trim().trim_end_matches(" kB").parse().unwrap()
    }
}

impl Drop for Master {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if thread::panicking() {
            eprintln!("--- bzhead monitor ---\n{}\n---", self.log.tail(40));
        }
    }
}

fn oob(s: &str) -> Vec<u8> {
    [OOB, s.as_bytes()].concat()
}

fn socket(bind: &str) -> UdpSocket {
    let s = UdpSocket::bind(bind).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    s
}

/// Sends a heartbeat from `s`; the challenge of the `getinfo` it gets back.
#[track_caller]
fn heartbeat(s: &UdpSocket, master: SocketAddr) -> String {
    let mut buf = [0u8; 2048];
    for _ in 0..4 {
        s.send_to(&oob("heartbeat DarkPlaces\n"), master).unwrap();
        if let Ok((n, _)) = s.recv_from(&mut buf) {
            let text = std::str::from_utf8(&buf[4..n]).unwrap();
            return text.strip_prefix("getinfo ").unwrap_or_else(|| panic!("{text:?}")).to_owned();
        }
    }
    panic!("no getinfo from {master}");
}

fn info(challenge: &str, pad: usize) -> Vec<u8> {
    let padding = "x".repeat(pad);
    oob(&format!(
        "infoResponse\n\\pad\\{padding}\\sv_maxclients\\8\\clients\\1\\protocol\\71\\gamename\\Quake3Arena\\challenge\\{challenge}"
    ))
}

/// `getservers`/`getserversExt` from a fresh socket: the entries of every reply datagram up to the one with EOT.
#[track_caller]
fn list(master: SocketAddr, request: &str) -> Vec<SocketAddr> {
    try_list(master, request).unwrap_or_else(|e| panic!("{request}: {e}"))
}

/// [`list`], or the error of a reply that did not come within 500 ms.
#[track_caller]
fn try_list(master: SocketAddr, request: &str) -> Result<Vec<SocketAddr>, std::io::Error> {
    let s = socket(if master.is_ipv6() { "[::1]:0" } else { "127.0.0.1:0" });
    s.send_to(&oob(request), master).unwrap();
    let mut buf = [0u8; 2048];
    let mut entries = Vec::new();
    loop {
        let (n, _) = s.recv_from(&mut buf)?;
        assert!(n <= 1400, "{n} bytes");
        let body = &buf[4..n];
        let body = body
            .strip_prefix(b"getserversExtResponse".as_slice())
            .or_else(|| body.strip_prefix(b"getserversResponse".as_slice()))
            .unwrap();
        let page = query_quake3::msg::parse_servers(body);
        entries.extend(page.entries);
        if page.eot {
            return Ok(entries);
        }
    }
}

#[test]
fn openarena_registers_is_listed_by_qstat_and_scan_and_drops_off_after_its_lease() {
    require_game_program(QSTAT, "qstat");
    let lease = 30;
    // The list requests of the test, qstat, scan and a downstream monitor (one a second) all come from 127.0.0.1:
    // no flood throttle (the hostile test below has it).
    let m = Master::start(&[
        "--dpmaster",
        "127.0.0.1:0",
        "--allow-private",
        "--dpmaster-lease",
        &lease.to_string(),
        "--dpmaster-flood-throttle",
        "0",
        "--interval",
        "1",
    ]);
    let master = m.udp[0];
    let oa = GameServer::openarena_registered("bzhead OA registered", 1, master);
    m.wait_metric("bzhead_master_servers", WAIT, |n| n == 1);
    let registered = Instant::now();
    assert!(oa.log().contains("Sending heartbeat to"), "{}", oa.log());
    assert_eq!(list(master, "getservers Quake3Arena 71 empty full"), vec![oa.addr()]);

    // qstat's OpenArena master query: `getservers 71 empty full`, without a game name (dpmaster's anonymous form).
    let out = run_with_deadline(
        Command::new(QSTAT).args(["-openarenam", &master.to_string(), "-R", "-json", "-mi", "0.5", "-retry", "1"]),
        WAIT * 2,
    );
    assert!(out.success(), "{}", out.describe());
    let v: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    let rows = v.as_array().unwrap();
    assert_eq!(rows[0]["servers"], 1, "{v:#}");
    let row = rows.iter().find(|r| r["address"] == oa.addr().to_string()).unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(row["name"], "bzhead OA registered");

    // bzhead's own scan of the master.
    let plugins = real_plugin_dir();
    let out = run_bzhead(
        [
            "scan",
            "--master",
            &master.to_string(),
            "--protocol",
            "quake3",
            "--game",
            "Quake3Arena",
            "--game-protocol",
            "71",
            "--filters",
            "empty full",
            "--allow-private",
            "--json",
            "--timeout-ms",
            "500",
            "--plugin-dir",
            plugins.path().to_str().unwrap(),
        ],
        WAIT * 2,
    );
    assert!(!out.timed_out, "{}", out.describe());
    let lines: Vec<Value> = out.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let addr = oa.addr().to_string();
    assert_eq!(lines[0]["servers"], serde_json::json!([addr]), "{}", out.stdout);
    let result = lines.iter().find(|l| l["address"] == addr).unwrap_or_else(|| panic!("{}", out.stdout));
    assert_eq!(result["ok"], true, "{result}");

    // The monitor's own rounds query the servers its master lists: the server gets history.
    let deadline = Instant::now() + WAIT;
    loop {
        let (_, body) = crate::monitor::http_get(m.http, "/api/servers", &[]);
        let v: Value = serde_json::from_str(&body).unwrap();
        let servers = v["servers"].as_array().cloned().unwrap_or_default();
        if servers.iter().any(|s| s["protocol"] == "quake3" && s["address"] == addr && s["up"] == true) {
            break;
        }
        assert!(Instant::now() < deadline, "not in the monitor's rounds: {v:#}");
        thread::sleep(Duration::from_millis(100));
    }

    // Another monitor reads this one as its upstream dpmaster master: it serves the server in its own dpmaster
    // lists (named and anonymous requests), with the upstream in its API.
    let dir = TempDir::new("dpmaster-downstream");
    let config = dir.join("b.toml");
    std::fs::write(
        &config,
        format!(
            "[[master]]\nprotocol = \"dpmaster\"\naddress = \"{master}\"\nservers = \"quake3\"\n\
             game = \"Quake3Arena\"\ngame_protocol = 71\nfilters = \"empty full\"\n"
        ),
    )
    .unwrap();
    let b = Master::start(&[
        "--dpmaster",
        "127.0.0.1:0",
        "--dpmaster-flood-throttle",
        "0",
        "--allow-private",
        "--interval",
        "1",
        "--config",
        config.to_str().unwrap(),
    ]);
    let b_master = b.udp[0];
    let deadline = Instant::now() + WAIT;
    while list(b_master, "getservers Quake3Arena 71 empty full") != vec![oa.addr()] {
        assert!(Instant::now() < deadline, "not mirrored downstream: {}", b.log.text());
        thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(list(b_master, "getservers 71 empty full"), vec![oa.addr()], "the anonymous form");
    assert!(list(b_master, "getservers Quake3Arena 71 empty full ctf").is_empty(), "filtered by its game type");
    let (_, body) = crate::monitor::http_get(b.http, "/api/servers", &[]);
    let v: Value = serde_json::from_str(&body).unwrap();
    let s = v["servers"].as_array().unwrap().iter().find(|s| s["address"] == addr).cloned().unwrap_or_default();
    let src = &s["source"];
    assert_eq!(src["upstreams"][0]["name"], format!("dpmaster@{master}"), "{s}");
    assert_eq!((src["registered"].clone(), s["bots"].clone(), s["humans"].clone()), (Value::Null, 1.into(), 0.into()));
    // Registered with the upstream, not with the downstream; the upstream says so.
    let (_, body) = crate::monitor::http_get(m.http, "/api/servers", &[]);
    assert!(body.contains("\"registered\":\"dpmaster\""), "{body}");
    let (_, body) = crate::monitor::http_get(m.http, "/api/masters", &[]);
    let v: Value = serde_json::from_str(&body).unwrap();
    crate::schemas::Schema::load("monitor-api").check(&v);
    let e = v["servers"].as_array().unwrap().iter().find(|s| s["address"] == addr).cloned().unwrap_or_default();
    assert_eq!(
        (e["direct"].clone(), e["bots"].clone(), e["players"].clone()),
        ("dpmaster".into(), 1.into(), 0.into()),
        "{v}"
    );

    // Stopped, it stays listed until its lease ends (it sends no more heartbeats), then drops off.
    drop(oa);
    assert_eq!(m.metric("bzhead_master_leases_expired_total"), 0);
    let until = registered + Duration::from_secs(lease - 2);
    assert!(Instant::now() < until, "the test ran past the lease before the server stopped");
    thread::sleep(until - Instant::now());
    assert_eq!(list(master, "getservers Quake3Arena 71 empty full").len(), 1, "dropped before its lease ended");
    m.wait_metric("bzhead_master_leases_expired_total", WAIT, |n| n == 1);
    assert_eq!(m.metric("bzhead_master_servers"), 0);
    assert!(list(master, "getservers Quake3Arena 71 empty full").is_empty());
    assert!(m.metric("bzhead_master_list_requests_total") >= 4);
    // The downstream follows its upstream's list: the server leaves there too (an answer that does not come
    // within 500 ms is asked again: the downstream's rounds run on the same loop).
    let deadline = Instant::now() + WAIT;
    while !try_list(b_master, "getservers Quake3Arena 71 empty full").is_ok_and(|l| l.is_empty()) {
        assert!(Instant::now() < deadline, "still mirrored downstream");
        thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn forged_replayed_oversized_and_flooding_peers_are_refused_with_bounded_memory() {
    let m = Master::start(&["--dpmaster", "127.0.0.1:0", "--dpmaster", "[::1]:0", "--allow-private"]);
    let (master, master6) = (m.udp[0], m.udp[1]);
    let a = socket("127.0.0.1:0");
    let b = socket("127.0.0.1:0");

    // A reply from another address than the heartbeat's (a forger who saw the challenge): not listed.
    let c = heartbeat(&a, master);
    b.send_to(&info(&c, 0), master).unwrap();
    // 64 KB of infoResponse with the right challenge: refused unread.
    a.send_to(&info(&c, 64 * 1024 - 200), master).unwrap();
    m.wait_metric("bzhead_master_challenges_failed_total", WAIT, |n| n == 1);
    m.wait_metric("bzhead_master_refused_total", WAIT, |n| n == 1);
    assert_eq!(m.metric("bzhead_master_servers"), 0);
    // The challenge is still good for the real reply; it is single-use.
    a.send_to(&info(&c, 0), master).unwrap();
    m.wait_metric("bzhead_master_servers", WAIT, |n| n == 1);
    a.send_to(&info(&c, 0), master).unwrap();
    m.wait_metric("bzhead_master_challenges_failed_total", WAIT, |n| n == 2);
    assert_eq!(m.metric("bzhead_master_registrations_total"), 1);
    assert_eq!(list(master, "getservers Quake3Arena 71"), vec![a.local_addr().unwrap()]);

    // An IPv6 server, listed in extended replies only.
    let v6 = socket("[::1]:0");
    let c6 = heartbeat(&v6, master6);
    v6.send_to(&info(&c6, 0), master6).unwrap();
    m.wait_metric("bzhead_master_servers", WAIT, |n| n == 2);
    assert_eq!(list(master6, "getserversExt Quake3Arena 71 ipv6"), vec![v6.local_addr().unwrap()]);
    assert_eq!(list(master, "getservers Quake3Arena 71"), vec![a.local_addr().unwrap()]);

    // 100,000 heartbeats from one address (64 ports).
    let rss_before = m.rss_kib();
    let flood: Vec<UdpSocket> = (0..64).map(|_| socket("127.0.0.1:0")).collect();
    let hb = oob("heartbeat QuakeArena-1\n");
    let started = Instant::now();
    for i in 0..100_000 {
        let _ = flood[i % flood.len()].send_to(&hb, master);
    }
    let secs = started.elapsed().as_secs_f64();
    thread::sleep(Duration::from_millis(500));
    let mut answered = 0;
    let mut buf = [0u8; 64];
    for s in &flood {
        s.set_nonblocking(true).unwrap();
        while s.recv_from(&mut buf).is_ok() {
            answered += 1;
        }
    }
    // The per-address quota holds (32 servers on 127.0.0.1, `a` one of them), and the heartbeat throttle answered
    // at most its burst (64) and one more per 2 s / 32 (16 a second).
    let pending = m.metric("bzhead_master_pending");
    let listed = m.metric("bzhead_master_servers");
    assert!(pending + listed <= 32 + 1, "{pending} pending, {listed} listed");
    let bound = 64 + (16.0 * (secs + 0.5)).ceil() as u64 + 1;
    assert!(answered <= bound, "{answered} getinfo answered to the flood in {secs:.2} s (bound {bound})");
    assert!(m.metric("bzhead_master_throttled_total") > 0);
    let rss_after = m.rss_kib();
    assert!(rss_after < rss_before + 16 * 1024, "RSS {rss_before} KiB before the flood, {rss_after} KiB after");

    // Another server (another address) still registers during the flood's aftermath.
    let other = socket("127.0.0.2:0");
    let c = heartbeat(&other, master);
    other.send_to(&info(&c, 0), master).unwrap();
    m.wait_metric("bzhead_master_registrations_total", WAIT, |n| n == 3);
    assert!(list(master, "getservers Quake3Arena 71").contains(&other.local_addr().unwrap()));

    // SIGHUP ends the monitor cleanly, like SIGTERM.
    let mut m = m;
    let status = Command::new("kill").args(["-HUP", &m.child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let deadline = Instant::now() + WAIT;
    let code = loop {
        if let Some(s) = m.child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "still running after SIGHUP");
        thread::sleep(Duration::from_millis(20));
    };
    assert!(code.success(), "{code:?}\n{}", m.log.text());
}
