//! Replies matched by source address and by the plugin's own challenge: answers from another port are counted as
//! unsolicited and dropped, answers with a stale challenge as ignored; the real Savage 2 reply (capture) and a
//! Warsow-style server through the CLI; `scan --protocol bzflag` through the CLI against a real bzfs.

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::{Arc, Mutex};

use bzhead::query::loader::PluginSet;
use bzhead::query::{ErrorKind, Scan, ScanConfig, Target};
use bzhead::reactor::Reactor;
use serde_json::Value;

use crate::query_host::finish_scan;
use crate::support::fake::Responder;
use crate::support::plugins::real_plugin_dir;
use crate::support::{run_bzhead, Bzfs, WAIT};

fn challenge_of(req: &[u8], cmd: &str) -> Option<String> {
    let text = std::str::from_utf8(req.strip_prefix(b"\xff\xff\xff\xff")?).ok()?;
    let (c, arg) = text.trim_end_matches(['\n', '\0']).split_once(' ')?;
    (c == cmd).then(|| arg.to_owned())
}

fn status_reply(challenge: &str, name: &str) -> Vec<u8> {
    let mut v = b"\xff\xff\xff\xff".to_vec();
    v.extend_from_slice(
        format!("statusResponse\n\\challenge\\{challenge}\\sv_hostname\\{name}\\mapname\\m\\sv_maxclients\\8\n")
            .as_bytes(),
    );
    v
}

#[test]
fn replies_from_other_addresses_or_with_stale_challenges_are_dropped() {
    let dir = real_plugin_dir();
    // Answers from a second socket (another source port): never the query's answer.
    let other = Arc::new(UdpSocket::bind("127.0.0.1:0").unwrap());
    let other2 = other.clone();
    let spoofed = Responder::spawn(
        "127.0.0.1:0",
        Box::new(move |req, from| {
            if let Some(ch) = challenge_of(req, "getstatus") {
                let _ = other2.send_to(&status_reply(&ch, "spoofed"), from);
            }
            vec![]
        }),
    );
    // First a reply with another challenge, then the right one.
    let stale = Responder::spawn(
        "127.0.0.1:0",
        Box::new(|req, _| match challenge_of(req, "getstatus") {
            Some(ch) => vec![status_reply("not-the-challenge", "stale"), status_reply(&ch, "fresh")],
            None => vec![],
        }),
    );
    let set = PluginSet::load_dirs(&[dir.path().to_path_buf()]);
    let now = std::time::Instant::now();
    let cfg = ScanConfig {
        timeout: std::time::Duration::from_millis(200),
        retries: 1,
        params: vec![("query".into(), "status".into())],
        ..ScanConfig::default()
    };
    let mut scan = Scan::new(set, cfg, now);
    scan.add_target(now, Target::new("quake3", spoofed.addr())).unwrap();
    scan.add_target(now, Target::new("quake3", stale.addr())).unwrap();
    let mut reactor = Reactor::new().unwrap();
    let id = reactor.add_scan(scan);
    let results = finish_scan(&mut reactor, id, WAIT * 2);
    let by: std::collections::HashMap<SocketAddr, _> = results.iter().map(|r| (r.address, r)).collect();
    assert_eq!(by[&spoofed.addr()].outcome.as_ref().unwrap_err().kind, ErrorKind::Timeout);
    let a = by[&stale.addr()].outcome.as_ref().unwrap();
    assert_eq!(a.name(), Some("fresh"));
    let st = reactor.scan(id).unwrap().stats();
    assert_eq!(st.unsolicited, 2, "both spoofed answers (one per attempt): {st:?}");
    assert_eq!(st.ignored, 1, "the stale challenge: {st:?}");
}

#[test]
fn savage2_answers_with_the_real_reply() {
    let dir = real_plugin_dir();
    let reply =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("plugins/query-savage2/testdata/savage2-reply1.bin"))
            .unwrap();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = requests.clone();
    let server = Responder::spawn(
        "127.0.0.1:0",
        Box::new(move |req, _| {
            seen.lock().unwrap().push(req.to_vec());
            vec![reply.clone()]
        }),
    );
    let out = run_bzhead(
        ["query", "savage2", &server.addr().to_string(), "--json", "--plugin-dir", dir.path().to_str().unwrap()],
        WAIT,
    );
    assert!(out.success(), "{}", out.describe());
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["name"], "Unnamed Server");
    assert_eq!(v["map"], "duel_arena");
    assert_eq!(v["players"], 2);
    assert_eq!(v["max_players"], 20);
    assert_eq!(v["version"], "1.7.5.0");
    assert_eq!(v["password"], true);
    let reqs = requests.lock().unwrap();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].len(), 12, "the 12-byte K2 info request");
}

#[test]
fn warsow_style_answers_keep_colour_codes_and_strip_them() {
    let dir = real_plugin_dir();
    let server = Responder::spawn(
        "127.0.0.1:0",
        Box::new(|req, _| {
            let mut v = b"\xff\xff\xff\xff".to_vec();
            if let Some(ch) = challenge_of(req, "getinfo") {
                v.extend_from_slice(
                    format!(
                        "infoResponse\n\\challenge\\{ch}\\sv_hostname\\^1Red ^7Warsow\\mapname\\wdm1\\gametype\\dm\\\
                         sv_maxclients\\16\\clients\\1\\bots\\0"
                    )
                    .as_bytes(),
                );
            } else if let Some(ch) = challenge_of(req, "getstatus") {
                v.extend_from_slice(
                    format!(
                        "statusResponse\n\\challenge\\{ch}\\sv_hostname\\^1Red ^7Warsow\\mapname\\wdm1\\gametype\\dm\\\
                         sv_maxclients\\16\\clients\\1\n12 40 \"^2pl^7ayer\" 1\n"
                    )
                    .as_bytes(),
                );
            } else {
                return vec![];
            }
            vec![v]
        }),
    );
    let out = run_bzhead(
        ["query", "warsow", &server.addr().to_string(), "--json", "--plugin-dir", dir.path().to_str().unwrap()],
        WAIT,
    );
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", out.describe()));
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["name"], "^1Red ^7Warsow");
    assert_eq!(v["raw"]["name_plain"], "Red Warsow");
    assert_eq!(v["map"], "wdm1");
    let p = &v["player_list"][0];
    assert_eq!((p["name"].as_str(), p["score"].as_i64(), p["ping"].as_i64()), (Some("^2pl^7ayer"), Some(12), Some(40)));
    assert_eq!(p["name_plain"], "player");
}

#[test]
fn scan_includes_the_builtin_bzflag_protocol() {
    let bzfs = Bzfs::start();
    let dir = crate::support::TempDir::new("bz-list");
    let list = dir.join("list.txt");
    std::fs::write(&list, format!("{}\n", bzfs.addr())).unwrap();
    let out = run_bzhead(["scan", "--list", list.to_str().unwrap(), "--protocol", "bzflag", "--json"], WAIT * 2);
    assert!(out.success(), "{}", out.describe());
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(v["protocol"], "bzflag");
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["version"], "BZFS0221");
    assert!(v["max_players"].as_i64().unwrap() > 0);
    assert!(v["rules"]["style"].is_string(), "{v}");
    assert!(out.stderr.contains("1 answered"), "{}", out.stderr);
}
