//! Hostile input to the query side (issue 11): a master that aims the scan (special-use addresses, one host on
//! many ports), spoofed Quake III replies, server names that drive the terminal, and numeric options that are NaN,
//! infinite or huge. Masters are dpmaster stand-ins built from the format (`support::fake::fake_dpmaster`); the
//! servers they list are real OpenArena and DDNet servers on 127.0.0.1 where a real one exists.

use std::collections::HashSet;
use std::net::SocketAddr;

use serde_json::Value;

use crate::support::fake::{fake_dpmaster, fake_q3, Responder};
use crate::support::gameservers::GameServer;
use crate::support::peak::run_measured;
use crate::support::plugins::real_plugin_dir;
use crate::support::relay::{Hooks, Impair, UdpRelay};
use crate::support::{run_bzhead, RunOutput, TempDir, WAIT};

fn addrs(list: &[&str]) -> Vec<SocketAddr> {
    list.iter().map(|s| s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))).collect()
}

/// Special-use entries of every class the issue names, none of them loopback (nothing may be sent to them: with
/// the default policy nothing is).
const SPECIAL_USE: &[&str] = &[
    "0.0.0.0:27960",
    "10.1.2.3:27960",
    "172.16.0.9:27960",
    "192.168.1.1:27960",
    "100.64.0.1:27960",
    "169.254.1.1:27960",
    "224.0.0.1:27960",
    "239.255.255.250:27960",
    "255.255.255.255:27960",
    "192.0.2.1:27960",
    "198.51.100.1:27960",
    "203.0.113.1:27960",
    "198.18.0.1:27960",
    "240.0.0.1:27960",
    "[::]:27960",
    "[::1]:27960",
    "[::ffff:0.0.0.0]:27961",
    "[::ffff:10.0.0.1]:27960",
    "[64:ff9b::a00:1]:27960",
    "[2002:c0a8:101::1]:27960",
    "[fe80::1]:27960",
    "[fc00::1]:27960",
    "[fd00::2]:27960",
    "[ff02::1]:27960",
    "[2001:db8::1]:27960",
    "[::127.0.0.1]:27960",
];

fn scan_master(master: &Responder, protocol: &str, extra: &[&str], plugins: &TempDir) -> RunOutput {
    let mut args = vec![
        "scan".to_owned(),
        "--master".to_owned(),
        master.addr().to_string(),
        "--protocol".to_owned(),
        protocol.to_owned(),
        "--filters".to_owned(),
        "empty full ipv4 ipv6".to_owned(),
        "--json".to_owned(),
        "--quiet".to_owned(),
        // Generous for a loaded machine: the real servers must answer; the silent ones just take longer.
        "--timeout-ms".to_owned(),
        "500".to_owned(),
        "--retries".to_owned(),
        "2".to_owned(),
        "--plugin-dir".to_owned(),
        plugins.path().to_str().unwrap().to_owned(),
    ];
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let out = run_bzhead(&args, WAIT * 6);
    assert!(!out.timed_out, "{}", out.describe());
    assert!(!out.stderr.contains("panicked"), "{}", out.describe());
    out
}

fn json_lines(out: &RunOutput) -> Vec<Value> {
    out.stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

/// The master's line and the servers' lines (by address).
fn split(out: &RunOutput) -> (Value, Vec<Value>) {
    let lines = json_lines(out);
    let master =
        lines.iter().find(|v| v["protocol"] == "dpmaster").cloned().unwrap_or_else(|| panic!("{}", out.describe()));
    let servers = lines.into_iter().filter(|v| v["protocol"] != "dpmaster").collect();
    (master, servers)
}

fn summary(out: &RunOutput) -> String {
    out.stderr.lines().find(|l| l.contains("scanned")).unwrap_or_else(|| panic!("{}", out.describe())).to_owned()
}

#[test]
fn a_master_cannot_aim_the_scan_at_special_use_addresses() {
    let plugins = real_plugin_dir();
    let oa = GameServer::openarena("bzhead OA behind a hostile master", 1);
    // A loopback Quake III server that counts what reaches it: nothing may, by default.
    let witness = fake_q3("127.0.0.1:0", "witness", "q3dm6", vec![]);
    let mut listed = addrs(SPECIAL_USE);
    listed.push(oa.addr());
    listed.push(witness.addr());
    let master = fake_dpmaster("127.0.0.1:0", listed.clone(), 5);

    let out = scan_master(&master, "quake3", &[], &plugins);
    let (m, servers) = split(&out);
    assert_eq!(m["ok"], true, "{m}");
    // The master's own answer keeps every entry it listed (mapped forms are reported as IPv4); nothing was taken.
    let n_listed = m["servers"].as_array().unwrap().len();
    assert!(n_listed >= listed.len() - 2, "{m}");
    assert_eq!(m["raw"]["entries_taken"], 0, "{m}");
    assert_eq!(m["raw"]["dropped_special_use"], n_listed, "{m}");
    assert_eq!(m["raw"]["dropped_ports_per_host"], 0, "{m}");
    assert!(servers.is_empty(), "no special-use entry is queried:\n{}", out.stdout);
    assert_eq!(witness.requests(), 0, "the loopback witness got a query");
    let s = summary(&out);
    assert!(s.contains("scanned 0 servers"), "{s}");
    assert!(s.contains(&format!("dropped: {n_listed} special-use, 0 over the per-host limit")), "{s}");
    assert!(
        out.stderr.contains(&format!("listed {n_listed} servers: 0 taken, {n_listed} special-use dropped")),
        "{}",
        out.stderr
    );
    assert_eq!(out.code, Some(0), "{}", out.describe());

    // A LAN operator's master: only loopback entries here (nothing leaves this host), taken with --allow-private.
    let lan = vec![oa.addr(), witness.addr(), "[::ffff:127.0.0.1]:9".parse().unwrap()];
    let master = fake_dpmaster("127.0.0.1:0", lan.clone(), 5);
    let out = scan_master(&master, "quake3", &["--allow-private"], &plugins);
    let (m, servers) = split(&out);
    assert_eq!(m["raw"]["entries_taken"], 3, "{m}");
    assert_eq!(m["raw"]["dropped_special_use"], 0, "{m}");
    let by_addr: std::collections::HashMap<String, &Value> =
        servers.iter().map(|v| (v["address"].as_str().unwrap().to_owned(), v)).collect();
    assert_eq!(by_addr.len(), 3, "{}", out.stdout);
    let v = by_addr[&oa.addr().to_string()];
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["name"], "bzhead OA behind a hostile master");
    assert_eq!(by_addr[&witness.addr().to_string()]["name"], "witness");
    assert_eq!(by_addr["127.0.0.1:9"]["error"], "timeout");
    assert!(witness.requests() > 0);
    let s = summary(&out);
    assert!(s.contains("scanned 3 servers: 2 answered, 1 timed out"), "{s}");
    assert!(s.contains("dropped: 0 special-use, 0 over the per-host limit"), "{s}");
}

#[test]
fn a_master_cannot_turn_a_scan_into_a_port_scan_of_one_host() {
    let plugins = real_plugin_dir();
    let ddnet = GameServer::ddnet("bzhead DDNet behind a hostile master");
    // The real server first, then 40 ports of one other loopback address, and a second host with two ports.
    let mut listed = vec![ddnet.addr()];
    listed.extend((0..40).map(|i| SocketAddr::from(([127, 0, 0, 2], 20_000 + i))));
    listed.extend(addrs(&["127.0.0.3:20000", "127.0.0.3:20001"]));
    let master = fake_dpmaster("127.0.0.1:0", listed.clone(), 9);

    // Loopback needs --allow-private; the per-host limit keeps its default of 4.
    let out = scan_master(&master, "teeworlds", &["--allow-private"], &plugins);
    let (m, servers) = split(&out);
    assert_eq!(m["raw"]["entries_taken"], 1 + 4 + 2, "{m}");
    assert_eq!(m["raw"]["dropped_ports_per_host"], 36, "{m}");
    assert_eq!(m["raw"]["dropped_special_use"], 0, "{m}");
    let queried: HashSet<SocketAddr> =
        servers.iter().map(|v| v["address"].as_str().unwrap().parse().unwrap()).collect();
    assert_eq!(queried.len(), 7, "{}", out.stdout);
    assert_eq!(queried.iter().filter(|a| a.ip() == std::net::Ipv4Addr::new(127, 0, 0, 2)).count(), 4);
    let v = servers.iter().find(|v| v["address"] == ddnet.addr().to_string()).unwrap();
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["name"], "bzhead DDNet behind a hostile master");
    let s = summary(&out);
    assert!(s.contains("scanned 7 servers: 1 answered, 6 timed out"), "{s}");
    assert!(s.contains("dropped: 0 special-use, 36 over the per-host limit"), "{s}");
    // No amplification: what went out is bounded by the entries taken (one teeworlds request per attempt here).
    let sent: u64 = s.split(" datagrams sent").next().unwrap().rsplit('(').next().unwrap().parse().unwrap();
    assert!(sent <= 1 + 7 * 3 * 4, "{s}");

    // The operator of a LAN lifts the limit.
    let out = scan_master(&master, "teeworlds", &["--allow-private", "--max-ports-per-host", "64"], &plugins);
    let (m, _) = split(&out);
    assert_eq!(m["raw"]["entries_taken"], listed.len(), "{m}");
    assert_eq!(m["raw"]["dropped_ports_per_host"], 0, "{m}");
    assert!(summary(&out).contains(&format!("scanned {} servers: 1 answered", listed.len())));

    // A list file is the user's own: taken as it is, loopback and all 40 ports.
    let dir = TempDir::new("scan-list-trusted");
    let list = dir.join("servers.txt");
    std::fs::write(&list, listed.iter().map(|a| format!("{a}\n")).collect::<String>()).unwrap();
    let out = run_bzhead(
        [
            "scan",
            "--list",
            list.to_str().unwrap(),
            "--protocol",
            "teeworlds",
            "--quiet",
            "--timeout-ms",
            "500",
            "--retries",
            "2",
            "--plugin-dir",
            plugins.path().to_str().unwrap(),
        ],
        WAIT * 6,
    );
    let s = summary(&out);
    assert!(s.contains(&format!("scanned {} servers: 1 answered", listed.len())), "{s}");
    assert!(s.contains("dropped: 0 special-use, 0 over the per-host limit"), "{s}");
}

/// A Quake III responder whose replies carry `challenge` (`None`: no challenge key at all) instead of ours.
fn spoofer(challenge: Option<&'static str>) -> Responder {
    Responder::spawn(
        "127.0.0.1:0",
        Box::new(move |data, _| {
            let chal = challenge.map(|c| format!("\\challenge\\{c}")).unwrap_or_default();
            let body = if data.windows(7).any(|w| w == b"getinfo") {
                format!("infoResponse\n\\hostname\\spoofed\\mapname\\q3dm1\\clients\\0\\sv_maxclients\\8{chal}")
            } else if data.windows(9).any(|w| w == b"getstatus") {
                format!("statusResponse\n\\sv_hostname\\spoofed\\mapname\\q3dm1{chal}\n")
            } else {
                return vec![];
            };
            let mut out = b"\xff\xff\xff\xff".to_vec();
            out.extend_from_slice(body.as_bytes());
            vec![out]
        }),
    )
}

#[test]
fn spoofed_quake3_replies_with_a_wrong_or_missing_challenge_are_refused() {
    let plugins = real_plugin_dir();
    let oa = GameServer::openarena("bzhead OA real", 0);
    let wrong = spoofer(Some("bzh0000000000000000"));
    let missing = spoofer(None);
    let query = |targets: &[SocketAddr], extra: &[&str]| {
        let mut args = vec!["query".to_owned(), "quake3".to_owned()];
        args.extend(targets.iter().map(ToString::to_string));
        args.extend(["--json", "--timeout-ms", "500", "--retries", "1", "--plugin-dir"].map(str::to_owned));
        args.push(plugins.path().to_str().unwrap().to_owned());
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let out = run_bzhead(&args, WAIT * 3);
        assert!(!out.timed_out && !out.stderr.contains("panicked"), "{}", out.describe());
        out
    };
    let out = query(&[oa.addr(), wrong.addr(), missing.addr()], &[]);
    let lines = json_lines(&out);
    let find = |a: SocketAddr| lines.iter().find(|v| v["address"] == a.to_string()).unwrap();
    assert_eq!(find(oa.addr())["ok"], true, "{}", out.stdout);
    assert_eq!(find(oa.addr())["name"], "bzhead OA real");
    for a in [wrong.addr(), missing.addr()] {
        let v = find(a);
        assert_eq!(v["ok"], false, "a spoofed reply was accepted: {v}");
        assert_eq!(v["error"], "timeout", "{v}");
        assert!(v["name"].is_null());
    }
    assert_eq!(out.code, Some(3), "{}", out.describe());
    // They did answer every request (two requests, each sent twice): all refused.
    assert_eq!(wrong.requests(), 4);
    assert_eq!(missing.requests(), 4);

    // Every request carried a long challenge from the random source: each query its own.
    let challenges = |r: &Responder| -> Vec<String> {
        r.seen()
            .iter()
            .map(|d| {
                let text = String::from_utf8_lossy(&d[4..]).into_owned();
                let chal = text.split_whitespace().nth(1).unwrap_or_else(|| panic!("{text:?}")).to_owned();
                assert!(chal.len() >= 3 + 86 && chal.len() <= 128, "{chal:?}");
                chal
            })
            .collect()
    };
    let (a, b) = (challenges(&wrong), challenges(&missing));
    let firsts: HashSet<&str> = a.iter().chain(&b).map(|c| c.trim_end_matches("r1")).collect();
    assert_eq!(firsts.len(), 2, "two queries, two challenges: {a:?} {b:?}");

    // A pre-1.32 server that echoes nothing is accepted only when asked; a wrong challenge never is.
    let out = query(&[wrong.addr(), missing.addr()], &["--param", "challenge=optional"]);
    let lines = json_lines(&out);
    let find = |a: SocketAddr| lines.iter().find(|v| v["address"] == a.to_string()).unwrap();
    assert_eq!(find(missing.addr())["ok"], true, "{}", out.stdout);
    assert_eq!(find(wrong.addr())["error"], "timeout", "{}", out.stdout);
}

/// A name with every kind of sequence a terminal obeys: colours, clear screen, cursor moves, a window title (OSC),
/// 8-bit CSI, DEL, a tab and a right-to-left override.
/// (No `\\` or line break: the Quake III info string and status format use them as separators.)
const EVIL: &str = "\u{1b}[2J\u{1b}[31mEvil\u{1b}[0m\u{1b}]0;pwned\u{7}Server\u{9b}1A\u{7f}\t\u{202e}xyz";
/// What every text output must show of it.
const EVIL_CLEAN: &str = "EvilServer xyz";

fn assert_clean(text: &str) {
    for c in text.chars() {
        assert!(!c.is_control() || c == '\n', "control character {c:?} reached the terminal:\n{}", text.escape_debug());
        assert!(!matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'), "bidi control in {text:?}");
    }
}

#[test]
fn server_names_with_escape_sequences_print_clean_text_and_exact_json() {
    let plugins = real_plugin_dir();
    let evil = fake_q3("127.0.0.1:0", EVIL, "\u{1b}[1;1Hmap", vec![("\u{1b}]2;p\u{7}player".to_owned(), 3, 40)]);
    let pd = plugins.path().to_str().unwrap();
    let addr = evil.addr().to_string();

    let text = run_bzhead(["query", "quake3", &addr, "--plugin-dir", pd], WAIT * 2);
    assert_eq!(text.code, Some(0), "{}", text.describe());
    assert_clean(&text.stdout);
    assert_clean(&text.stderr);
    assert!(text.stdout.contains(&format!("name: {EVIL_CLEAN}")), "{}", text.stdout);
    assert!(text.stdout.contains("map: map"), "{}", text.stdout);
    assert!(text.stdout.contains("  player "), "{}", text.stdout);

    let json = run_bzhead(["query", "quake3", &addr, "--json", "--plugin-dir", pd], WAIT * 2);
    let v: Value = serde_json::from_str(json.stdout.trim()).unwrap();
    assert_eq!(v["name"], EVIL, "JSON keeps the data exact");
    assert_eq!(v["player_list"][0]["name"], "\u{1b}]2;p\u{7}player");
    assert!(!json.stdout.contains('\u{1b}'), "JSON escapes control characters");

    let dir = TempDir::new("scan-evil");
    let list = dir.join("servers.txt");
    std::fs::write(&list, format!("{addr}\n")).unwrap();
    let table =
        run_bzhead(["scan", "--list", list.to_str().unwrap(), "--protocol", "quake3", "--plugin-dir", pd], WAIT * 2);
    assert_eq!(table.code, Some(0), "{}", table.describe());
    assert_clean(&table.stdout);
    assert_clean(&table.stderr);
    assert!(table.stdout.contains(EVIL_CLEAN), "{}", table.stdout);
}

#[test]
fn a_real_ddnet_server_named_with_escape_sequences_prints_clean() {
    let plugins = real_plugin_dir();
    // DDNet keeps ESC and the bidi controls in sv_name (OpenArena turns control bytes into spaces, so it cannot
    // carry one).
    let name = "\u{1b}[2J\u{1b}[31mRed\u{1b}[0mDD\u{1b}[5mBlink\u{202e}x";
    let dd = GameServer::ddnet(name);
    let pd = plugins.path().to_str().unwrap();
    let addr = dd.addr().to_string();
    let json = run_bzhead(["query", "teeworlds", &addr, "--json", "--plugin-dir", pd], WAIT * 2);
    let v: Value = serde_json::from_str(json.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", json.describe()));
    assert_eq!(v["name"], name, "JSON keeps the data exact");
    let text = run_bzhead(["query", "teeworlds", &addr, "--plugin-dir", pd], WAIT * 2);
    assert_eq!(text.code, Some(0), "{}", text.describe());
    assert_clean(&text.stdout);
    assert!(text.stdout.contains("name: RedDDBlinkx\n"), "{}", text.stdout);
    let dir = TempDir::new("scan-evil-ddnet");
    let list = dir.join("servers.txt");
    std::fs::write(&list, format!("{addr}\n")).unwrap();
    let table =
        run_bzhead(["scan", "--list", list.to_str().unwrap(), "--protocol", "teeworlds", "--plugin-dir", pd], WAIT * 2);
    assert_clean(&table.stdout);
    assert!(table.stdout.contains("RedDDBlinkx"), "{}", table.stdout);
}

/// Every option of `help` output that takes a number: a numeric default, or a value name that is a unit.
fn numeric_options(help: &str) -> Vec<String> {
    const UNITS: &[&str] = &["<N>", "<MS>", "<SECONDS>", "<SLOTS>", "<BYTES>", "<MIB>", "<MB>", "<HZ>"];
    let mut out = Vec::new();
    let lines: Vec<&str> = help.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let Some(rest) = t.strip_prefix("--").or_else(|| t.split_once(", --").map(|(_, r)| r)) else { continue };
        let mut words = rest.split_whitespace();
        let Some(name) = words.next() else { continue };
        let Some(value) = words.next().filter(|w| w.starts_with('<')) else { continue };
        // The option's description runs until the next option line.
        let desc: String = lines[i..]
            .iter()
            .enumerate()
            .take_while(|(k, l)| *k == 0 || !l.trim_start().starts_with('-'))
            .map(|(_, l)| *l)
            .collect::<Vec<_>>()
            .join(" ");
        let default_numeric =
            desc.split("[default: ").nth(1).and_then(|d| d.split(']').next()).is_some_and(|d| d.parse::<f64>().is_ok());
        if default_numeric || UNITS.contains(&value) {
            out.push(format!("--{name}"));
        }
    }
    out
}

#[test]
fn every_numeric_option_refuses_nan_infinities_and_huge_values() {
    let dir = TempDir::new("args");
    let list = dir.join("empty.txt");
    std::fs::write(&list, "").unwrap();
    let list = list.to_str().unwrap().to_owned();
    // Each command with what it needs besides the option (a dead server: should a value slip through, the
    // command fails otherwise, never with exit code 2).
    let commands: Vec<Vec<String>> = [
        vec!["observe", "127.0.0.1:9"],
        vec!["bot", "hunter", "127.0.0.1:9"],
        vec!["query", "bzflag", "127.0.0.1:9"],
        vec!["query", "quake3", "127.0.0.1:9"],
        vec!["scan", "--list", &list, "--protocol", "quake3"],
        vec!["world", "127.0.0.1:9"],
        vec!["replay", "/nonexistent"],
        vec!["plugins"],
    ]
    .into_iter()
    .map(|v| v.into_iter().map(str::to_owned).collect())
    .collect();
    let bad = ["NaN", "nan", "inf", "-inf", "infinity", "1e19", "1e400", "-1", "18446744073709551616", "0x10", ""];
    let mut tested = Vec::new();
    for cmd in &commands {
        let help = run_bzhead(cmd.iter().map(String::as_str).chain(["--help"]), WAIT);
        assert_eq!(help.code, Some(0), "{}", help.describe());
        for opt in numeric_options(&help.stdout) {
            for value in bad {
                let arg = format!("{opt}={value}");
                let out = run_bzhead(cmd.iter().map(String::as_str).chain([arg.as_str()]), WAIT);
                let what = format!("bzhead {} {arg}", cmd.join(" "));
                assert!(!out.timed_out, "{what}: {}", out.describe());
                assert!(!out.stderr.contains("panicked"), "{what} panicked: {}", out.describe());
                assert_eq!(out.code, Some(2), "{what}: {}", out.describe());
                assert!(out.stderr.contains("invalid value") && out.stderr.contains(&opt), "{what}: {}", out.stderr);
            }
            tested.push(format!("{} {opt}", cmd[0]));
        }
    }
    // The options the issue names are among them (and the others of each command).
    for must in [
        "observe --for",
        "observe --count",
        "observe --stagger-ms",
        "observe --hello-timeout",
        "observe --join-timeout",
        "observe --idle-timeout",
        "bot --for",
        "bot --poll-ms",
        "bot --tick-hz",
        "bot --count",
        "bot --stagger-ms",
        "bot --yield",
        "query --timeout-ms",
        "query --retries",
        "scan --rate",
        "scan --concurrency",
        "scan --max-ports-per-host",
        "scan --timeout-ms",
        "scan --retries",
        "world --timeout",
    ] {
        assert!(tested.iter().any(|t| t == must), "{must} not found in the help; tested: {tested:?}");
    }
    // The messages say what is allowed.
    let out = run_bzhead(["bot", "hunter", "127.0.0.1:9", "--poll-ms", "NaN"], WAIT);
    assert!(out.stderr.contains("not a finite number (expected 0 to 30)"), "{}", out.stderr);
    let out = run_bzhead(["observe", "127.0.0.1:9", "--for", "1e19"], WAIT);
    assert!(out.stderr.contains("out of range (expected 0 to 31536000)"), "{}", out.stderr);
    // A value in range still works: the command gets as far as the (dead) server.
    let out = run_bzhead(["query", "bzflag", "127.0.0.1:9", "--timeout-ms", "300"], WAIT);
    assert_ne!(out.code, Some(2), "{}", out.describe());
}

/// Sends, from the real server's address (the relay's front socket) and ahead of its answer, a forged reply to each
/// request: one with a challenge nobody sent, one with none.
struct Forger {
    sent: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Hooks for Forger {
    fn on_request(&mut self, data: &[u8], client: SocketAddr, front: &std::net::UdpSocket) {
        let reply = if data.windows(7).any(|w| w == b"getinfo") { "infoResponse" } else { "statusResponse" };
        for chal in ["\\challenge\\bzhFORGED", ""] {
            let mut f = b"\xff\xff\xff\xff".to_vec();
            f.extend_from_slice(
                format!("{reply}\n\\hostname\\FORGED\\sv_hostname\\FORGED\\mapname\\forged\\clients\\9{chal}\n")
                    .as_bytes(),
            );
            if front.send_to(&f, client).is_ok() {
                self.sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
}

#[test]
fn forged_replies_from_a_real_servers_address_lose_to_its_real_answer() {
    let plugins = real_plugin_dir();
    let oa = GameServer::openarena("bzhead OA genuine", 1);
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let relay = UdpRelay::spawn(oa.addr(), Impair::NONE, Some(Box::new(Forger { sent: sent.clone() })));
    let dir = TempDir::new("forged");
    let list = dir.join("servers.txt");
    std::fs::write(&list, format!("{}\n", relay.addr())).unwrap();
    let out = run_bzhead(
        [
            "scan",
            "--list",
            list.to_str().unwrap(),
            "--protocol",
            "quake3",
            "--json",
            "--quiet",
            "--plugin-dir",
            plugins.path().to_str().unwrap(),
        ],
        WAIT * 3,
    );
    assert!(!out.timed_out, "{}", out.describe());
    let v: Value = serde_json::from_str(out.stdout.lines().next().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{e}: {}", out.describe()));
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["name"], "bzhead OA genuine", "a forged reply was taken: {v}");
    assert_eq!(v["map"], "oa_dm1");
    assert_eq!(v["bots"], 1);
    let forged = sent.load(std::sync::atomic::Ordering::Relaxed);
    assert!(forged >= 4, "the forger sent {forged}");
    // Every forged datagram was refused by the plugin and counted.
    let s = summary(&out);
    let ignored: u64 = s.split(" unsolicited or ignored").next().unwrap().rsplit(", ").next().unwrap().parse().unwrap();
    assert!(ignored >= forged.min(4), "{s}");
    assert_eq!(out.code, Some(0), "{}", out.describe());
}

/// A dpmaster page (getserversExtResponse, with EOT) listing `entries`.
fn dpmaster_page(entries: &[SocketAddr]) -> Vec<u8> {
    let mut p = b"\xff\xff\xff\xffgetserversExtResponse".to_vec();
    for a in entries {
        match a {
            SocketAddr::V4(v4) => {
                p.push(b'\\');
                p.extend_from_slice(&v4.ip().octets());
            }
            SocketAddr::V6(v6) => {
                p.push(b'/');
                p.extend_from_slice(&v6.ip().octets());
            }
        }
        p.extend_from_slice(&a.port().to_be_bytes());
    }
    p.extend_from_slice(b"\\EOT\0\0\0");
    p
}

/// The scheduler itself, in virtual time (nothing is sent anywhere): the master policy and the per-entry budget
/// hold for a master that lists public-looking addresses and a plugin that would flood each of them.
#[test]
fn what_one_master_entry_may_cost_is_bounded_in_the_scheduler() {
    use bzhead::query::loader::PluginSet;
    use bzhead::query::scan::{entry_budget, ENTRY_DATAGRAMS_PER_ATTEMPT};
    use bzhead::query::{Scan, ScanConfig, ScanEvent, Target};
    use std::collections::HashMap;
    use std::time::{Duration, Instant};

    let dir = crate::support::plugins::plugin_dir_with("budget", &["query_quake3", "query_misbehave"]);
    let set = PluginSet::load_dirs(&[dir.path().to_path_buf()]);
    let mut now = Instant::now();
    let config = ScanConfig { retries: 1, timeout: Duration::from_millis(200), ..ScanConfig::default() };
    let mut scan = Scan::new(set, config, now);
    let master: SocketAddr = "127.0.0.1:27950".parse().unwrap();
    let t = Target {
        protocol: "dpmaster".into(),
        addr: master,
        params: vec![("ext".into(), "1".into())],
        // Every listed server is queried with a protocol whose plugin sends 10000 datagrams at once.
        expand: Some(("send-flood".into(), Vec::new())),
    };
    scan.add_target(now, t).unwrap();
    assert!(scan.poll_transmit().is_some(), "the master request");
    let mut listed = addrs(SPECIAL_USE);
    listed.extend((0..10).map(|i| SocketAddr::from(([8, 8, 4, 4], 30_000 + i))));
    listed.push("[2a00:1450:4001::1]:27960".parse().unwrap());
    now += Duration::from_millis(1);
    scan.handle_datagram(now, master, &dpmaster_page(&listed));

    let mut sent: HashMap<SocketAddr, usize> = HashMap::new();
    let mut results = Vec::new();
    for _ in 0..10_000 {
        while let Some(tx) = scan.poll_transmit() {
            *sent.entry(tx.to).or_default() += 1;
        }
        while let Some(ScanEvent::Result(r)) = scan.poll_event() {
            results.push(r);
        }
        if scan.is_done() {
            break;
        }
        now = now.max(scan.poll_timeout().expect("a deadline while not done"));
        scan.handle_timeout(now);
    }
    assert!(scan.is_done());
    let stats = scan.stats();
    assert_eq!(stats.dropped_special_use, SPECIAL_USE.len() as u64 - 2, "{stats:?}"); // the plugin drops :: and 0.0.0.0
    assert_eq!(stats.dropped_ports_per_host, 6, "{stats:?}");
    // 4 ports of 8.8.4.4 and the IPv6 host: each query ended at its budget.
    let servers: Vec<_> = results.iter().filter(|r| r.protocol == "send-flood").collect();
    assert_eq!(servers.len(), 5, "{results:#?}");
    for r in &servers {
        let e = r.outcome.as_ref().unwrap_err();
        assert!(e.detail.contains("more than a master entry may cause"), "{e}");
    }
    assert_eq!(stats.over_budget, 5, "{stats:?}");
    let (max_datagrams, _) = entry_budget(1);
    for (to, n) in &sent {
        if *to != master {
            // The flood is cut at the budget: 4 datagrams for each of the 2 attempts, all at once here.
            assert_eq!(*n, max_datagrams, "{to}");
            assert_eq!(max_datagrams, ENTRY_DATAGRAMS_PER_ATTEMPT * 2);
            assert!(!to.ip().is_loopback() && !to.ip().is_unspecified(), "{to} was sent to");
        }
    }
    assert_eq!(sent.len(), 5, "only the five entries taken were sent to: {sent:?}");
}

/// Peak resident memory allowed to a `bzhead scan` facing a hostile master (a debug build scanning a few servers
/// stays around 12 MiB).
const SCAN_MEMORY_LIMIT_KIB: u64 = 128 * 1024;

#[test]
fn a_master_listing_a_hundred_thousand_entries_costs_one_datagram_in_bounded_memory() {
    let plugins = real_plugin_dir();
    // 60,000 ports of one host and 40,000 other loopback hosts: all special-use, all dropped by default.
    let mut listed: Vec<SocketAddr> =
        (0..60_000u32).map(|i| SocketAddr::from(([127, 0, 0, 5], 1024 + i as u16))).collect();
    listed.extend((0..40_000u32).map(|i| SocketAddr::from(([127, 1, (i >> 8) as u8, i as u8], 27960))));
    let master = fake_dpmaster("127.0.0.1:0", listed, 1000);
    let args = [
        "scan",
        "--master",
        &master.addr().to_string(),
        "--protocol",
        "quake3",
        "--json",
        "--quiet",
        "--timeout-ms",
        "200",
        "--retries",
        "0",
        "--plugin-dir",
        plugins.path().to_str().unwrap(),
    ];
    let m = run_measured(&mut crate::support::bzhead(args), WAIT * 6);
    let out = &m.out;
    assert!(!out.timed_out && !out.stderr.contains("panicked"), "{}", m.describe());
    assert!(m.max_rss_kib < SCAN_MEMORY_LIMIT_KIB, "{}", m.describe());
    let (master_line, servers) = split(out);
    assert_eq!(master_line["raw"]["dropped_special_use"], 100_000, "{}", out.stderr);
    assert_eq!(master_line["raw"]["entries_taken"], 0);
    assert_eq!(master_line["servers"].as_array().map(Vec::len), Some(100_000), "the master's list, exact");
    assert!(servers.is_empty());
    let s = summary(out);
    assert!(s.contains("scanned 0 servers") && s.contains("(1 datagrams sent"), "{s}");
    assert!(s.contains("dropped: 100000 special-use, 0 over the per-host limit"), "{s}");
    assert_eq!(out.code, Some(0), "{}", m.describe());
    eprintln!("100,000 hostile entries: {} KiB peak", m.max_rss_kib);
}

// ------------------------------------------------------------------ BZFlag texts that reach the terminal

/// A callsign (31 bytes at most), a motto and a reject reason full of escape sequences.
const EVIL_CALLSIGN: &str = "\u{1b}[2J\u{1b}]0;x\u{7}Evil\u{9b}H\u{202e}cs";
const EVIL_MOTTO: &str = "\u{1b}[31mred\u{1b}[0m \u{1b}]8;;http://x\u{1b}\\motto\u{7f}";
const EVIL_REASON: &str = "\u{1b}[2J\u{1b}[1;1HBanned\u{1b}]0;title\u{7}: go away\u{202e}!";

#[test]
fn query_bzflag_prints_callsigns_and_mottos_clean_and_json_exact() {
    use crate::support::standin::{hello, StandIn};
    use bzhead::bzflag::consts::{PlayerType, Team};
    use bzhead::bzflag::msg::{Message, QueryGameInfo, ServerMsg, TeamInfo};

    let serve = || {
        StandIn::spawn(|mut c| {
            if !(c.read_header() && c.send(&hello(0))) {
                return;
            }
            if c.expect(b"qg", WAIT).is_none() || c.expect(b"qp", WAIT).is_none() {
                return;
            }
            let mut b = ServerMsg::QueryGame(QueryGameInfo { max_players: 20, ..QueryGameInfo::default() }).encode();
            b.extend(ServerMsg::QueryPlayers { num_teams: 1, num_players: 1 }.encode());
            b.extend(
                ServerMsg::TeamUpdate { teams: vec![TeamInfo { team: Team::Red, size: 1, wins: 0, losses: 0 }] }
                    .encode(),
            );
            b.extend(
                ServerMsg::AddPlayer {
                    id: 3,
                    player_type: PlayerType::Tank,
                    team: Team::Red,
                    wins: 2,
                    losses: 1,
                    team_kills: 0,
                    callsign: EVIL_CALLSIGN.into(),
                    motto: EVIL_MOTTO.into(),
                }
                .encode(),
            );
            c.send(&b);
            std::thread::sleep(std::time::Duration::from_secs(2));
        })
    };
    let s = serve();
    let text = run_bzhead(["query", "bzflag", &s.addr().to_string()], WAIT);
    assert_eq!(text.code, Some(0), "{}", text.describe());
    assert_clean(&text.stdout);
    assert!(text.stdout.contains("player Evilcs (Red team) is a tank:"), "{}", text.stdout);
    assert!(text.stdout.contains("  red motto\n"), "{}", text.stdout);

    let s = serve();
    let json = run_bzhead(["query", "bzflag", &s.addr().to_string(), "--json"], WAIT);
    let v: Value = serde_json::from_str(json.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", json.describe()));
    assert_eq!(v["player_list"][0]["name"], EVIL_CALLSIGN, "{v}");
}

#[test]
fn reject_reasons_and_callsigns_with_escape_sequences_reach_no_terminal() {
    use crate::support::standin::{add_player, hello, reject, StandIn};

    // Rejected at the join (bzadmin-style join, no world): the reason is printed on stderr, cleaned.
    let s = StandIn::spawn(|mut c| {
        if c.read_header() && c.send(&hello(1)) && c.expect(b"en", WAIT).is_some() {
            c.send(&reject(5, EVIL_REASON));
            std::thread::sleep(std::time::Duration::from_secs(2));
        }
    });
    let out = run_bzhead(["observe", "--no-world", "--no-udp", "--no-cache", &s.addr().to_string()], WAIT);
    assert_eq!(out.code, Some(4), "{}", out.describe());
    assert_clean(&out.stderr);
    assert_clean(&out.stdout);
    assert!(out.stderr.contains("Banned: go away!"), "{}", out.stderr);

    // A player whose callsign carries escape sequences joins: clean text, exact JSON.
    let serve = || {
        StandIn::spawn(|mut c| {
            if c.read_header() && c.send(&hello(1)) && c.expect(b"en", WAIT).is_some() {
                let mut b = frame_accept(1);
                b.extend(add_player(7, 1, EVIL_CALLSIGN));
                c.send(&b);
                std::thread::sleep(std::time::Duration::from_secs(3));
            }
        })
    };
    let s = serve();
    let out =
        run_bzhead(["observe", "--no-world", "--no-udp", "--no-cache", "--for", "1", &s.addr().to_string()], WAIT);
    assert_clean(&out.stdout);
    assert_clean(&out.stderr);
    assert!(out.stdout.contains("*** 'Evilcs' joined the game"), "{}", out.stdout);
    let s = serve();
    let out = run_bzhead(
        ["observe", "--no-world", "--no-udp", "--no-cache", "--json", "--for", "1", &s.addr().to_string()],
        WAIT,
    );
    let joined = out
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "join")
        .unwrap_or_else(|| panic!("{}", out.describe()));
    assert_eq!(joined["callsign"], EVIL_CALLSIGN, "{joined}");
}

/// `MsgAccept` for player `id`.
fn frame_accept(id: u8) -> Vec<u8> {
    crate::support::standin::frame(b"ac", &[id])
}
