//! The query plugin host: the loader's checks on every broken plugin, misbehaving plugins inside a scan whose other
//! results stay correct, and a BZFlag observer session and a scan sharing one reactor.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bzhead::bzflag::event::Event;
use bzhead::bzflag::session::SessionConfig;
use bzhead::query::loader::{load_file, PluginError, PluginSet};
use bzhead::query::{ErrorKind, QueryResult, Scan, ScanConfig, ScanEvent, Target};
use bzhead::reactor::{Reactor, ScanId, SessionOptions};

use crate::support::fake::{echo, fake_q3, silent, Responder};
use crate::support::plugins::{build_plugins, lib_file_name, plugin_dir_with, plugin_path, MISBEHAVE_PLUGINS};
use crate::support::{run_bzhead, Bzfs, TempDir, WAIT};

/// Turns the reactor until the scan is done; returns its results by address.
pub fn finish_scan(r: &mut Reactor, id: ScanId, limit: Duration) -> Vec<QueryResult> {
    let deadline = Instant::now() + limit;
    let mut out = Vec::new();
    loop {
        while let Some((sid, _, ScanEvent::Result(res))) = r.poll_scan_event() {
            assert_eq!(sid, id);
            out.push(res);
        }
        if r.is_scan_done(id) {
            break;
        }
        assert!(Instant::now() < deadline, "the scan did not finish within {limit:?}: {:?}", r.scan(id));
        r.turn(Some(Duration::from_millis(50))).unwrap();
    }
    out
}

fn by_addr(results: &[QueryResult]) -> HashMap<SocketAddr, &QueryResult> {
    results.iter().map(|r| (r.address, r)).collect()
}

#[test]
fn the_loader_names_the_file_and_what_to_rebuild_for_every_broken_plugin() {
    build_plugins();
    type Case = (&'static str, fn(&PluginError) -> bool, &'static str);
    let cases: [Case; 6] = [
        ("query_misbehave_wrong_abi", |e| matches!(e, PluginError::WrongAbiVersion { found: 2, .. }), "rebuild"),
        ("query_misbehave_short_table", |e| matches!(e, PluginError::ShortTable { .. }), "rebuild"),
        (
            "query_misbehave_null_fn",
            |e| matches!(e, PluginError::MissingFunction { function: "on_timeout", .. }),
            "rebuild",
        ),
        ("query_misbehave_bad_name", |e| matches!(e, PluginError::BadName { .. }), "not valid UTF-8"),
        ("query_misbehave_null_table", |e| matches!(e, PluginError::NullTable { .. }), "rebuild"),
        ("query_misbehave_no_entry", |e| matches!(e, PluginError::NoEntrySymbol { .. }), "bzhead_query_plugin_entry"),
    ];
    for (name, is, says) in cases {
        let err = load_file(&plugin_path(name)).expect_err(name);
        let msg = err.to_string();
        assert!(is(&err), "{name}: {err:?}");
        assert!(msg.contains(&lib_file_name(name)), "{name}: the message names the file: {msg}");
        assert!(msg.contains(says), "{name}: {msg}");
    }
    // Not a library at all.
    let dir = TempDir::new("not-a-lib");
    let fake = dir.join(lib_file_name("query_fake"));
    std::fs::write(&fake, "this is text, not a shared object\n").unwrap();
    let err = load_file(&fake).expect_err("text file");
    assert!(matches!(err, PluginError::NotALibrary { .. }), "{err:?}");
    assert!(err.to_string().contains("libquery_fake"), "{err}");
    // The good one loads, with its protocols.
    let ok = load_file(&plugin_path("query_misbehave")).unwrap();
    assert_eq!(ok.name(), "misbehave");
    assert!(ok.catches_panics());
    assert!(ok.protocols().iter().any(|p| p.name == "panic-on-datagram"));
}

#[test]
fn bzhead_plugins_lists_what_loaded_and_explains_what_did_not() {
    let mut crates = MISBEHAVE_PLUGINS.to_vec();
    crates.extend(crate::support::plugins::REAL_PLUGINS);
    let dir = plugin_dir_with("plugins-cli", &crates);
    std::fs::write(dir.join(lib_file_name("query_notalib")), "text").unwrap();
    let out = run_bzhead(["plugins", "--plugin-dir", dir.path().to_str().unwrap()], WAIT);
    assert!(out.success(), "{}", out.describe());
    for needle in [
        "plugin ABI version 1",
        "teeworlds7",
        "dpmaster",
        "savage2",
        "srb2",
        "bzflag",
        "misbehave 0.1.0",
        "plugin ABI version 2, but this bzhead speaks version 1; rebuild the plugin against query-abi 1",
        "plugin table is 88 bytes",
        "no `on_timeout` function",
        "plugin name: text is not valid UTF-8",
        "returned no table",
        "not a bzhead query plugin",
        "libquery_notalib.so: not a loadable library",
    ] {
        assert!(out.stdout.contains(needle), "no {needle:?} in:\n{}", out.stdout);
    }
    let json = run_bzhead(["plugins", "--json", "--plugin-dir", dir.path().to_str().unwrap()], WAIT);
    let v: serde_json::Value = serde_json::from_str(json.stdout.trim()).unwrap();
    assert!(v["plugins"].as_array().unwrap().iter().any(|p| p["name"] == "teeworlds"));
    assert!(v["errors"].as_array().unwrap().len() >= 7);
}

#[test]
fn misbehaving_plugins_fail_their_own_queries_and_everything_else_goes_on() {
    let mut crates = MISBEHAVE_PLUGINS.to_vec();
    crates.push("query_quake3");
    let dir = plugin_dir_with("misbehave-scan", &crates);
    let set = PluginSet::load_dirs(&[dir.path().to_path_buf()]);
    assert_eq!(set.plugins().len(), 2, "misbehave and quake3 load: {:?}", set.errors());
    assert_eq!(set.errors().len(), 6, "every broken table is refused: {:?}", set.errors());

    // Well-behaved queries around the misbehaving ones.
    let echoes: Vec<Responder> = (0..3).map(|i| echo("127.0.0.1:0", &format!("echo-{i}"))).collect();
    let q3 = [
        fake_q3("127.0.0.1:0", "fake one", "q3dm1", vec![("alpha".into(), 3, 20)]),
        fake_q3("127.0.0.1:0", "fake two", "q3dm7", vec![("beta".into(), 1, 0), ("gamma".into(), 5, 50)]),
    ];
    let bad = [
        "panic-on-create",
        "panic-on-datagram",
        "panic-on-timeout",
        "panic-on-deadline",
        "panic-on-drop",
        "garbage",
        "never-done",
        "busy-deadline",
        "send-flood",
        "report-flood",
    ];
    let responders: Vec<Responder> = bad
        .iter()
        .map(|p| if *p == "panic-on-datagram" { echo("127.0.0.1:0", "boom") } else { silent("127.0.0.1:0") })
        .collect();

    let now = Instant::now();
    let cfg = ScanConfig { timeout: Duration::from_millis(300), retries: 1, seed: 7, ..ScanConfig::default() };
    let mut scan = Scan::new(set, cfg, now);
    for (i, e) in echoes.iter().enumerate() {
        scan.add_target(now, Target::new("echo", e.addr())).unwrap();
        if i == 0 {
            for (p, r) in bad.iter().zip(&responders) {
                scan.add_target(now, Target::new(p, r.addr())).unwrap();
            }
        }
    }
    for q in &q3 {
        scan.add_target(now, Target::new("quake3", q.addr())).unwrap();
    }
    let mut reactor = Reactor::new().unwrap();
    let id = reactor.add_scan(scan);
    let results = finish_scan(&mut reactor, id, WAIT * 6);
    assert_eq!(results.len(), 3 + 2 + bad.len());
    let got = by_addr(&results);

    for (i, e) in echoes.iter().enumerate() {
        let r = got[&e.addr()];
        let a = r.outcome.as_ref().unwrap_or_else(|e| panic!("echo {i}: {e}"));
        assert_eq!(a.name(), Some(format!("echo-{i}").as_str()));
        assert!(r.ping_ms.is_some());
    }
    let a = got[&q3[0].addr()].outcome.as_ref().unwrap();
    assert_eq!((a.name(), a.map(), a.players()), (Some("fake one"), Some("q3dm1"), Some(1)));
    let names: Vec<&str> = a.player_list().unwrap().map(|p| p.name).collect();
    assert_eq!(names, ["alpha"]);
    let a = got[&q3[1].addr()].outcome.as_ref().unwrap();
    assert_eq!(a.player_list().unwrap().len(), 2);

    let outcome = |p: &str| {
        let i = bad.iter().position(|b| b == &p).unwrap();
        got[&responders[i].addr()].outcome.clone()
    };
    let plugin_error = |p: &str, says: &str| {
        let e = outcome(p).expect_err(p);
        assert_eq!(e.kind, ErrorKind::Plugin, "{p}: {e}");
        assert!(e.detail.contains(says), "{p}: {e}");
    };
    plugin_error("panic-on-create", "panicked in create");
    plugin_error("panic-on-datagram", "panicked in on_datagram");
    plugin_error("panic-on-timeout", "panicked in on_timeout");
    plugin_error("panic-on-deadline", "panicked");
    plugin_error("garbage", "reported invalid data");
    plugin_error("send-flood", "datagrams");
    plugin_error("report-flood", "more data in one call");
    // It finished at once; its destructor panics inside the plugin, which catches it.
    assert!(outcome("panic-on-drop").is_ok());
    let e = outcome("never-done").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
    assert!(e.detail.contains("host's deadline"), "{e}");
    let e = outcome("busy-deadline").unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Plugin | ErrorKind::Timeout), "{e}");

    let stats = reactor.scan(id).unwrap().stats();
    assert_eq!(stats.answered, 3 + 2 + 1);
    assert_eq!(stats.plugin_errors + stats.timed_out, bad.len() as u64 - 1);
    // The send flood never reached the network: at most one query's worth of datagrams did.
    assert!(responders[bad.iter().position(|b| *b == "send-flood").unwrap()].requests() <= 64);
}

#[test]
fn a_bzflag_observer_and_a_scan_share_one_reactor() {
    let bzfs = Bzfs::start();
    let dir = plugin_dir_with("observer-scan", &["query_quake3", "query_misbehave"]);
    let q3 = fake_q3("127.0.0.1:0", "side by side", "q3dm17", vec![("tank".into(), 0, 10)]);
    let e = echo("127.0.0.1:0", "echoed");

    let mut reactor = Reactor::new().unwrap();
    let config = SessionConfig { callsign: "scanwatch".into(), ..SessionConfig::default() };
    let observer = reactor.add_session(bzfs.addr(), config, SessionOptions::default()).unwrap();

    let now = Instant::now();
    let set = PluginSet::load_dirs(&[dir.path().to_path_buf()]);
    let mut scan = Scan::new(set, ScanConfig { seed: 1, ..ScanConfig::default() }, now);
    scan.add_target(now, Target::new("quake3", q3.addr())).unwrap();
    scan.add_target(now, Target::new("echo", e.addr())).unwrap();
    scan.add_target(now, Target::new("bzflag", bzfs.addr())).unwrap();
    let sid = reactor.add_scan(scan);

    // Turn the one reactor until the observer is in the game and the scan has finished.
    let deadline = Instant::now() + WAIT * 2;
    let mut accepted = false;
    let mut results = Vec::new();
    while !(accepted && reactor.is_scan_done(sid)) {
        assert!(Instant::now() < deadline, "accepted {accepted}, scan {:?}", reactor.scan(sid));
        reactor.turn(Some(Duration::from_millis(50))).unwrap();
        while let Some((id, _, ev)) = reactor.poll_event() {
            assert_eq!(id, observer, "only the observer's events reach poll_event: {ev:?}");
            match ev {
                Event::Accept { .. } => accepted = true,
                Event::Closed { reason, .. } => panic!("observer closed: {reason}"),
                _ => {}
            }
        }
        while let Some((_, _, ScanEvent::Result(r))) = reactor.poll_scan_event() {
            results.push(r);
        }
    }
    let got = by_addr(&results);
    assert_eq!(got.len(), 3);
    let a = got[&q3.addr()].outcome.as_ref().unwrap();
    assert_eq!(a.name(), Some("side by side"));
    assert_eq!(got[&e.addr()].outcome.as_ref().unwrap().name(), Some("echoed"));
    let bz = got[&bzfs.addr()];
    let a = bz.outcome.as_ref().unwrap_or_else(|e| panic!("bzflag: {e}"));
    assert_eq!(bz.protocol, "bzflag");
    assert_eq!(a.version(), Some("BZFS0221"));
    assert!(a.max_players().is_some_and(|m| m > 0));
    assert!(bz.ping_ms.is_some());

    // The observer is still in the game and leaves cleanly; the scan's query session is gone.
    assert!(!reactor.is_done(observer));
    reactor.leave(observer);
    assert!(reactor.run_until_done(Instant::now() + WAIT).unwrap());
    assert_eq!(reactor.session_ids(), vec![observer]);
    assert!(bzfs.wait_for_log("scanwatch", WAIT));
}

#[test]
fn an_unknown_protocol_is_a_usage_error_that_lists_what_is_known() {
    let dir = plugin_dir_with("unknown-proto", &["query_quake3", "query_misbehave_wrong_abi"]);
    let out = run_bzhead(["query", "nosuch", "127.0.0.1:1", "--plugin-dir", dir.path().to_str().unwrap()], WAIT);
    assert_eq!(out.code, Some(2), "{}", out.describe());
    assert!(out.stderr.contains("unknown protocol \"nosuch\""), "{}", out.stderr);
    assert!(out.stderr.contains("known: bzflag, quake3, warsow, dpmaster"), "{}", out.stderr);
    assert!(out.stderr.contains("libquery_misbehave_wrong_abi.so: plugin ABI version 2"), "{}", out.stderr);
    // `query bzflag` is still the built-in command with its own options.
    let help = run_bzhead(["query", "bzflag", "--help"], WAIT);
    assert!(help.success() && help.stdout.contains("--timeout-ms"), "{}", help.describe());
}

#[test]
fn every_front_end_refuses_an_unknown_protocol_with_the_known_ones() {
    // `query`, `scan` (servers and master) and `monitor` share one front door (`bzhead::query::front`): the same
    // usage error, naming every known protocol (the built-in ones here: no plugin directory).
    let db = TempDir::new("front-unknown");
    let db = db.path().join("m.sqlite");
    let runs: [&[&str]; 4] = [
        &["query", "nosuch", "127.0.0.1:1"],
        &["scan", "--protocol", "nosuch", "--master", "127.0.0.1:1"],
        &["scan", "--protocol", "quake3", "--master", "127.0.0.1:1", "--master-protocol", "nosuch"],
        &["monitor", "--db", db.to_str().unwrap(), "--server", "nosuch=127.0.0.1:1", "--rounds", "1"],
    ];
    for args in runs {
        let out = run_bzhead(args, WAIT);
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.describe());
        assert!(out.stderr.contains("unknown protocol \"nosuch\"; known: bzflag, "), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("quake3") && out.stderr.contains("dpmaster"), "{args:?}: {}", out.stderr);
    }
    // A server protocol as a master's, and a master protocol as the servers', are usage errors too.
    let out =
        run_bzhead(["scan", "--protocol", "quake3", "--master", "127.0.0.1:1", "--master-protocol", "quake3"], WAIT);
    assert_eq!(out.code, Some(2), "{}", out.describe());
    assert!(out.stderr.contains("quake3 is not a master protocol"), "{}", out.stderr);
    let out = run_bzhead(["scan", "--protocol", "dpmaster", "--master", "127.0.0.1:1"], WAIT);
    assert_eq!(out.code, Some(2), "{}", out.describe());
    assert!(out.stderr.contains("dpmaster is a master protocol"), "{}", out.stderr);
}
