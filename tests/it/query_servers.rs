//! `bzhead query` against real game servers on loopback (DDNet 16.4, Teeworlds 0.7.5, OpenArena 0.8.8 with bots),
//! compared with `qstat` where it speaks the protocol; and DDNet's two-datagram player list replayed from the real
//! capture by a responder that rewrites the token.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::fake::Responder;
use crate::support::gameservers::{require_game_program, tw07_bare_connection, GameServer, QSTAT};
use crate::support::plugins::real_plugin_dir;
use crate::support::{run_bzhead, run_with_deadline, TempDir, WAIT};

/// `bzhead query PROTOCOL ADDR --json` with the real plugins; the one JSON result.
fn query_json(plugins: &TempDir, protocol: &str, addr: SocketAddr, extra: &[&str]) -> Value {
    let mut args = vec!["query", protocol];
    let a = addr.to_string();
    args.push(&a);
    args.extend(["--json", "--plugin-dir", plugins.path().to_str().unwrap()]);
    args.extend(extra);
    let out = run_bzhead(&args, WAIT * 2);
    assert!(!out.timed_out, "{}", out.describe());
    let line = out.stdout.lines().next().unwrap_or_else(|| panic!("no output:\n{}", out.describe()));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// `quakestat -TYPE ADDR -P -R -json`: the one server object.
fn qstat(kind: &str, addr: SocketAddr) -> Value {
    require_game_program(QSTAT, "qstat");
    let out = run_with_deadline(
        Command::new(QSTAT).args([&format!("-{kind}"), &addr.to_string(), "-P", "-R", "-json"]),
        WAIT * 2,
    );
    assert!(out.success(), "{}", out.describe());
    let v: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    v[0].clone()
}

#[test]
fn ddnet_extended_info_agrees_with_qstat() {
    let plugins = real_plugin_dir();
    let server = GameServer::ddnet("bzhead DDNet query test");
    let v = query_json(&plugins, "teeworlds", server.addr(), &[]);
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["v"], 1);
    assert_eq!(v["protocol"], "teeworlds");
    assert_eq!(v["address"], server.addr().to_string());
    assert_eq!(v["name"], "bzhead DDNet query test");
    assert_eq!(v["map"], "Tutorial");
    assert_eq!(v["raw"]["format"], "extended", "DDNet answers the xe request with iext: {v}");
    assert!(v["version"].as_str().unwrap().contains("16.4"), "{v}");
    assert_eq!(v["players"], 0);
    assert_eq!(v["max_players"], 64);
    assert_eq!(v["password"], false);
    assert_eq!(v["player_list"], Value::Array(vec![]));
    assert!(v["ping_ms"].as_f64().is_some());

    // qstat speaks vanilla 0.6 only: DDNet clamps max to 16 and appends [clients/max] to the name for it.
    let q = qstat("tees", server.addr());
    assert_eq!(q["status"], "online", "{q}");
    assert_eq!(q["name"], format!("{} [0/64]", v["name"].as_str().unwrap()));
    assert_eq!(q["map"], v["map"]);
    assert_eq!(q["gametype"], v["game_type"]);
    assert_eq!(q["numplayers"], v["players"]);

    // The same server over the 0.7 protocol (DDNet speaks it too).
    let v7 = query_json(&plugins, "teeworlds7", server.addr(), &[]);
    assert_eq!(v7["ok"], true, "{v7}");
    assert_eq!(v7["name"], v["name"]);
    assert_eq!(v7["map"], v["map"]);
    assert!(v7["version"].as_str().unwrap().starts_with("0.7"), "{v7}");

    // The vanilla fallback alone gets the clamped form, like qstat.
    let vv = query_json(&plugins, "teeworlds", server.addr(), &["--param", "mode=vanilla"]);
    assert_eq!(vv["ok"], true, "{vv}");
    assert_eq!(vv["name"], q["name"]);
}

#[test]
fn teeworlds_075_answers_the_07_handshake_with_its_players() {
    let plugins = real_plugin_dir();
    let server = GameServer::teeworlds07("bzhead TW07 query test");
    let _conns: Vec<_> = (0..3).map(|_| tw07_bare_connection(server.addr())).collect();
    let v = query_json(&plugins, "teeworlds7", server.addr(), &[]);
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["name"], "bzhead TW07 query test");
    assert_eq!(v["version"], "0.7.5");
    assert_eq!(v["map"], "dm1");
    assert_eq!(v["game_type"], "DM");
    assert_eq!(v["players"], 3);
    let list = v["player_list"].as_array().unwrap();
    assert_eq!(list.len(), 3, "{v}");
    assert!(list.iter().all(|p| p["name"] == "(connecting)"), "{v}");

    // 0.7.5 ignores 0.6 requests: the teeworlds protocol times out (and so does qstat, which only speaks 0.6).
    let v6 = query_json(&plugins, "teeworlds", server.addr(), &["--timeout-ms", "200", "--retries", "1"]);
    assert_eq!(v6["ok"], false, "{v6}");
    assert_eq!(v6["error"], "timeout");
    assert_eq!(qstat("tees", server.addr())["status"], "timeout");
}

#[test]
fn openarena_with_bots_agrees_with_qstat() {
    let plugins = real_plugin_dir();
    let server = GameServer::openarena("bzhead OA query test", 4);
    let v = query_json(&plugins, "quake3", server.addr(), &[]);
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["name"], "bzhead OA query test");
    assert_eq!(v["map"], "oa_dm1");
    assert_eq!(v["max_players"], 12);
    assert_eq!(v["players"], 4, "bots count in `clients`: {v}");
    assert_eq!(v["bots"], 4, "{v}");
    assert_eq!(v["rules"]["protocol"], "71");
    assert!(v["version"].as_str().unwrap().starts_with("ioq3"), "{v}");
    let list = v["player_list"].as_array().unwrap();
    assert_eq!(list.len(), 4, "{v}");
    assert!(list.iter().all(|p| p["ping"] == 0), "bots have ping 0: {v}");

    let q = qstat("q3s", server.addr());
    assert_eq!(q["status"], "online", "{q}");
    assert_eq!(q["name"], v["name"]);
    assert_eq!(q["map"], v["map"]);
    assert_eq!(q["maxplayers"], v["max_players"]);
    assert_eq!(q["numplayers"], v["players"]);
    let mut ours: Vec<(String, i64)> =
        list.iter().map(|p| (p["name"].as_str().unwrap().to_owned(), p["score"].as_i64().unwrap())).collect();
    let mut theirs: Vec<(String, i64)> = q["players"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap().to_owned(), p["score"].as_i64().unwrap()))
        .collect();
    ours.sort();
    theirs.sort();
    // Scores can change between the two queries (bots fight); names cannot.
    let names = |v: &[(String, i64)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&ours), names(&theirs));
    for (k, val) in q["rules"].as_object().unwrap() {
        if !["g_timestamp", "gamename", "gametype", "g_humanplayers", "clients"].contains(&k.as_str()) {
            assert_eq!(&v["rules"][k], val, "rule {k}");
        }
    }
}

/// A responder that answers DDNet's extended request with the two datagrams DDNet 16.4 sent for 60 players (the
/// vendored capture), the token rewritten to the request's, and the second page first.
fn ddnet60_replay() -> Responder {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugins/query-teeworlds/testdata");
    let pages: Vec<Vec<u8>> = ["players60-ddnet-xe-gie3.resp1.bin", "players60-ddnet-xe-gie3.resp0.bin"]
        .iter()
        .map(|f| std::fs::read(dir.join(f)).unwrap())
        .collect();
    Responder::spawn(
        "127.0.0.1:0",
        Box::new(move |req, _| {
            // 'x' 'e' T1 T2 0 0, ff ff ff ff "gie3", T0.
            if req.len() != 15 || !req.starts_with(b"xe") || &req[6..14] != b"\xff\xff\xff\xffgie3" {
                return vec![];
            }
            let token = (u32::from(req[2]) << 16) | (u32::from(req[3]) << 8) | u32::from(req[14]);
            pages
                .iter()
                .map(|p| {
                    // 6 × ff, ff ff ff ff + 4-byte magic, then the token string up to its NUL.
                    let body = &p[14..];
                    let end = body.iter().position(|&b| b == 0).unwrap();
                    let mut out = p[..14].to_vec();
                    out.extend_from_slice(token.to_string().as_bytes());
                    out.extend_from_slice(&body[end..]);
                    out
                })
                .collect()
        }),
    )
}

#[test]
fn ddnet_players_paged_over_two_datagrams_are_assembled() {
    let plugins = real_plugin_dir();
    let replay = ddnet60_replay();
    let v = query_json(&plugins, "teeworlds", replay.addr(), &[]);
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["players"], 60, "{v}");
    assert_eq!(v["name"], "bzhead DDNet test");
    let list = v["player_list"].as_array().unwrap();
    assert_eq!(list.len(), 60, "both pages, in either order: {v}");
    assert!(list.iter().any(|p| p["name"] == "^7colour^1name"), "{v}");
    assert!(v["raw"].get("player_list_complete").is_none(), "{v}");
}
