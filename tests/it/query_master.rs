//! `bzhead scan`: a dpmaster-compatible master written here (several response datagrams, IPv4 and IPv6 entries, EOT
//! only in the last) listing local servers (fake Quake III responders on 127.0.0.1 and ::1, a real OpenArena server
//! with bots, and silent addresses), then a scan of everything it listed; and `scan --list` with a table.

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};

use serde_json::Value;

use crate::support::fake::{fake_dpmaster, fake_q3, Responder};
use crate::support::gameservers::GameServer;
use crate::support::plugins::real_plugin_dir;
use crate::support::{run_bzhead, TempDir, WAIT};

/// An address nothing listens on (bound for a moment, then released).
fn dead_addr(bind: &str) -> SocketAddr {
    UdpSocket::bind(bind).unwrap().local_addr().unwrap()
}

fn fakes(bind: &str, n: usize, prefix: &str) -> Vec<Responder> {
    (0..n).map(|i| fake_q3(bind, &format!("{prefix} {i}"), "q3dm6", vec![(format!("p{i}"), i as i32, 30)])).collect()
}

#[test]
fn a_master_list_over_several_datagrams_is_scanned_in_full() {
    let plugins = real_plugin_dir();
    let oa = GameServer::openarena("bzhead OA listed", 2);
    let v4 = fakes("127.0.0.1:0", 30, "fake v4");
    let v6 = fakes("[::1]:0", 4, "fake v6");
    let dead = [dead_addr("127.0.0.1:0"), dead_addr("127.0.0.1:0"), dead_addr("[::1]:0")];
    let mut listed: Vec<SocketAddr> = v4.iter().chain(&v6).map(Responder::addr).collect();
    listed.push(oa.addr());
    listed.extend(dead);
    // Interleave the families and list a few twice (masters repeat entries across pages); 7 entries a page.
    listed.sort_by_key(|a| (a.port() % 7, a.port()));
    let mut with_dups = listed.clone();
    with_dups.extend_from_slice(&listed[..3]);
    let master = fake_dpmaster("127.0.0.1:0", with_dups, 7);

    let out = run_bzhead(
        [
            "scan",
            "--master",
            &master.addr().to_string(),
            "--protocol",
            "quake3",
            "--game",
            "Quake3Arena",
            "--game-protocol",
            "71",
            "--filters",
            "empty full ipv4 ipv6",
            // Every server here is on loopback, 30 of them on one address: a LAN operator's flags.
            "--allow-private",
            "--max-ports-per-host",
            "100",
            "--json",
            "--timeout-ms",
            "300",
            "--retries",
            "1",
            "--plugin-dir",
            plugins.path().to_str().unwrap(),
        ],
        WAIT * 6,
    );
    assert!(!out.timed_out, "{}", out.describe());
    let seen = master.seen();
    assert_eq!(seen.len(), 1, "one master request, every page answered at once");
    assert_eq!(seen[0], b"\xff\xff\xff\xffgetserversExt Quake3Arena 71 empty full ipv4 ipv6");

    let lines: Vec<Value> = out.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let master_line = &lines[0];
    assert_eq!(master_line["protocol"], "dpmaster");
    assert_eq!(master_line["ok"], true, "{master_line}");
    let servers: Vec<SocketAddr> =
        master_line["servers"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().parse().unwrap()).collect();
    let mut expect = listed.clone();
    expect.sort();
    let mut got = servers.clone();
    got.sort();
    assert_eq!(got, expect, "every entry of every page, duplicates once, IPv6 included");

    let results: HashMap<SocketAddr, &Value> =
        lines[1..].iter().map(|v| (v["address"].as_str().unwrap().parse().unwrap(), v)).collect();
    assert_eq!(results.len(), listed.len(), "one line per listed server:\n{}", out.stdout);
    for (i, f) in v4.iter().enumerate() {
        let v = results[&f.addr()];
        assert_eq!(v["ok"], true, "{v}");
        assert_eq!(v["name"], format!("fake v4 {i}"));
        assert_eq!(v["player_list"][0]["name"], format!("p{i}"));
    }
    for (i, f) in v6.iter().enumerate() {
        let v = results[&f.addr()];
        assert_eq!(v["ok"], true, "{v}");
        assert_eq!(v["name"], format!("fake v6 {i}"));
    }
    let v = results[&oa.addr()];
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["name"], "bzhead OA listed");
    assert_eq!(v["bots"], 2);
    for d in dead {
        assert_eq!(results[&d]["error"], "timeout", "{}", results[&d]);
    }
    assert!(out.stderr.contains("master 127.0.0.1"), "{}", out.stderr);
    let summary = out.stderr.lines().find(|l| l.contains("scanned")).unwrap_or_else(|| panic!("{}", out.stderr));
    let want = format!("scanned {} servers: {} answered, 3 timed out, 0 malformed", listed.len(), listed.len() - 3);
    assert!(summary.contains(&want), "{summary}");
    assert_eq!(out.code, Some(3), "some servers did not answer");
}

#[test]
fn scan_list_prints_a_table_and_a_summary() {
    let plugins = real_plugin_dir();
    let servers = fakes("127.0.0.1:0", 5, "listed");
    let dead = dead_addr("127.0.0.1:0");
    let dir = TempDir::new("scan-list");
    let list = dir.join("servers.txt");
    let mut text = String::from("# a list file\n\n");
    for s in &servers {
        text += &format!("{}  # fake\n", s.addr());
    }
    text += &format!("{dead}\n");
    std::fs::write(&list, text).unwrap();
    let out = run_bzhead(
        [
            "scan",
            "--list",
            list.to_str().unwrap(),
            "--protocol",
            "quake3",
            "--timeout-ms",
            "200",
            "--retries",
            "0",
            "--plugin-dir",
            plugins.path().to_str().unwrap(),
        ],
        WAIT * 3,
    );
    assert!(!out.timed_out, "{}", out.describe());
    let rows: Vec<&str> = out.stdout.lines().collect();
    assert!(rows[0].starts_with("ADDRESS"), "{}", out.stdout);
    assert_eq!(rows.len(), 1 + servers.len(), "answers only by default:\n{}", out.stdout);
    for (i, s) in servers.iter().enumerate() {
        let row = rows.iter().find(|r| r.starts_with(&s.addr().to_string())).unwrap();
        assert!(row.contains(&format!("listed {i}")) && row.contains("q3dm6") && row.contains("1/16"), "{row}");
    }
    assert!(
        out.stderr.contains("scanned 6 servers: 5 answered, 1 timed out, 0 malformed, 0 other errors"),
        "{}",
        out.stderr
    );
    assert_eq!(out.code, Some(3));
}
