//! `bzhead observe`, `query bzflag` and `replay` against a real `bzfs` (and a real `bzadmin` as a witness), plus
//! hostile server stand-ins for the error paths.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::process::{Child, ChildStdin, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{bzhead, run_bzfquery, run_bzhead, Bzadmin, Bzfs, OutputBuf, TempDir, WAIT};

/// A running `bzhead observe --json` with stdin piped for chat.
struct Observer {
    child: Child,
    stdin: Option<ChildStdin>,
    out: OutputBuf,
}

impl Observer {
    fn start(server: SocketAddr, cache: &TempDir, extra: &[&str]) -> Observer {
        let mut cmd = bzhead(["observe", "--json", "--cache-dir"]);
        cmd.arg(cache.path()).args(extra).arg(server.to_string());
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start bzhead observe");
        let out = OutputBuf::new();
        out.attach("bzhead-stdout", child.stdout.take().unwrap());
        out.attach("bzhead-stderr", child.stderr.take().unwrap());
        let stdin = child.stdin.take();
        Observer { child, stdin, out }
    }

    fn say(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    fn events(&self) -> Vec<Value> {
        self.out.text().lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).collect()
    }

    fn wait_event(&self, pred: impl Fn(&Value) -> bool) -> bool {
        self.out.wait_until(WAIT, |text| {
            text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).any(|v| pred(&v))
        })
    }

    /// Waits for the process to exit by itself; returns its code.
    fn wait_exit(&mut self, timeout: Duration) -> Option<i32> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(s)) = self.child.try_wait() {
                // Let the reader threads catch up with the last lines.
                self.out.wait_until(Duration::from_secs(2), |_| false);
                return s.code();
            }
            if Instant::now() >= deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn of_type<'a>(events: &'a [Value], t: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == t).collect()
}

#[test]
fn observer_joins_gets_world_roster_flags_and_all_variables_and_uses_the_cache_the_second_time() {
    let bzfs = Bzfs::builder().ctf().jumping().max_shots(3).args(["+s", "4"]).start();
    let cache = TempDir::new("observe-cache");

    let mut obs = Observer::start(bzfs.addr(), &cache, &["--callsign", "watcher1", "--for", "2"]);
    assert_eq!(obs.wait_exit(WAIT * 2), Some(0), "{}", obs.out.text());
    let ev = obs.events();
    assert_eq!(ev.first().map(|e| e["v"].clone()), Some(Value::from(1)));
    let world = of_type(&ev, "world");
    assert_eq!(world.len(), 1, "{}", obs.out.text());
    assert_eq!(world[0]["cached"], false);
    let hash = world[0]["hash"].as_str().unwrap().to_string();
    assert_eq!(hash.len(), 32);
    assert!(!of_type(&ev, "accept").is_empty());
    // 168 variables on a stock server, in several MsgSetVar messages.
    let vars: u64 = of_type(&ev, "set_var").iter().map(|e| e["count"].as_u64().unwrap()).sum();
    assert_eq!(vars, 168, "{}", obs.out.text());
    // Our own join in the roster, as an observer, and the five team counts.
    assert!(of_type(&ev, "join").iter().any(|e| e["callsign"] == "watcher1" && e["team"] == "observer"));
    assert!(of_type(&ev, "team").len() >= 5);
    // +s 4: four super flags (shown as PZ while loose).
    assert!(of_type(&ev, "flag").iter().filter(|e| e["abbv"] == "PZ").count() >= 4, "{}", obs.out.text());
    assert_eq!(of_type(&ev, "closed").last().map(|e| e["exit_code"].clone()), Some(Value::from(0)));
    assert!(bzfs.wait_for_log("watcher1", WAIT));
    assert!(
        bzfs.wait_for_log("removed", WAIT)
            && bzfs.log().lines().any(|l| l.contains("watcher1") && l.contains(": left")),
        "bzfs should log a clean leave:\n{}",
        bzfs.log()
    );

    let mut obs = Observer::start(bzfs.addr(), &cache, &["--callsign", "watcher2", "--for", "1"]);
    assert_eq!(obs.wait_exit(WAIT * 2), Some(0), "{}", obs.out.text());
    let ev = obs.events();
    let world = of_type(&ev, "world");
    assert_eq!(world.len(), 1);
    assert_eq!(world[0]["cached"], true, "the second join must use the cache");
    assert_eq!(world[0]["hash"], hash.as_str());
}

#[test]
fn chat_goes_both_ways_with_a_real_bzadmin() {
    let bzfs = Bzfs::builder().start();
    let cache = TempDir::new("chat-cache");
    let mut obs = Observer::start(bzfs.addr(), &cache, &["--callsign", "bzheadobs"]);
    assert!(obs.wait_event(|e| e["type"] == "accept"), "{}", obs.out.text());

    let mut admin = Bzadmin::join("adminwitness", bzfs.addr());
    assert!(
        obs.wait_event(|e| e["type"] == "join" && e["callsign"] == "adminwitness"),
        "the observer sees bzadmin join:\n{}",
        obs.out.text()
    );
    admin.say("hello from bzadmin");
    assert!(
        obs.wait_event(|e| e["type"] == "chat"
            && e["text"] == "hello from bzadmin"
            && e["from_callsign"] == "adminwitness"),
        "{}",
        obs.out.text()
    );
    obs.say("hello from bzhead");
    assert!(admin.wait_for_output("bzheadobs: hello from bzhead", WAIT), "bzadmin sees our chat:\n{}", admin.output());

    obs.say("/quit");
    assert_eq!(obs.wait_exit(WAIT), Some(0));
    assert!(admin.wait_for_output("'bzheadobs' left the game", WAIT), "{}", admin.output());
}

#[test]
fn query_agrees_with_bzfquery() {
    let bzfs = Bzfs::builder().ctf().jumping().max_players("3,3,3,3,3,3").args(["-ms", "2"]).start();
    let _admin = Bzadmin::join("listed", bzfs.addr());
    let ours = run_bzhead(["query", "bzflag", &bzfs.host_port()], WAIT);
    assert!(ours.success(), "{}", ours.describe());
    let theirs = run_bzfquery(bzfs.addr());
    // Everything bzfquery prints about the game and the teams, line for line.
    for line in theirs.lines().filter(|l| !l.starts_with("player ") && !l.starts_with("  ")) {
        assert!(
            ours.stdout.lines().any(|l| l == line),
            "missing {line:?}\nours:\n{}\nbzfquery:\n{theirs}",
            ours.stdout
        );
    }
    assert!(ours.stdout.contains("player listed (Observer team) is a tank:"), "{}", ours.stdout);

    let json = run_bzhead(["query", "bzflag", "--json", &bzfs.host_port()], WAIT);
    assert!(json.success(), "{}", json.describe());
    let v: Value = serde_json::from_str(json.stdout.trim()).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["protocol"], "bzflag");
    assert_eq!(v["rules"]["style"], "ClassicCTF");
    assert_eq!(v["rules"]["max_shots"], 2);
    assert_eq!(v["player_list"][0]["name"], "listed");
}

#[test]
fn a_duplicate_callsign_is_rejected_with_exit_code_4_and_the_servers_reason() {
    let bzfs = Bzfs::builder().start();
    let _admin = Bzadmin::join("twin", bzfs.addr());
    let cache = TempDir::new("reject-cache");
    let out = run_bzhead(
        ["observe", "--callsign", "twin", "--cache-dir", &cache.path().to_string_lossy(), &bzfs.host_port()],
        WAIT,
    );
    assert_eq!(out.code, Some(4), "{}", out.describe());
    assert!(out.stdout.contains("The callsign specified is already in use."), "{}", out.describe());
    assert!(out.stderr.contains("rejected"), "{}", out.describe());
}

#[test]
fn a_replay_prints_the_same_events_as_the_live_run() {
    let bzfs = Bzfs::builder().ctf().start();
    let cache = TempDir::new("replay-cache");
    let rec = cache.join("session.bzrec");
    let mut admin = Bzadmin::join("talker", bzfs.addr());
    let mut obs = Observer::start(
        bzfs.addr(),
        &cache,
        &["--callsign", "recorder", "--record", &rec.to_string_lossy(), "--for", "3"],
    );
    assert!(obs.wait_event(|e| e["type"] == "accept"), "{}", obs.out.text());
    admin.say("something to record");
    obs.say("and an answer");
    assert_eq!(obs.wait_exit(WAIT * 2), Some(0), "{}", obs.out.text());
    let live: Vec<String> = obs.out.text().lines().filter(|l| l.starts_with("{\"v\":1")).map(String::from).collect();
    assert!(live.iter().any(|l| l.contains("something to record")));

    let replay = run_bzhead(["replay", "--json", &rec.to_string_lossy()], WAIT);
    assert!(replay.success(), "{}", replay.describe());
    let replayed: Vec<String> = replay.stdout.lines().map(String::from).collect();
    assert_eq!(live, replayed, "replay differs from the live run");

    let text = run_bzhead(["replay", &rec.to_string_lossy()], WAIT);
    assert!(text.stdout.contains("    talker: something to record"), "{}", text.describe());
}

/// A fake server on loopback that runs `script` for the first connection.
fn stand_in(script: impl FnOnce(std::net::TcpStream) + Send + 'static) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    thread::spawn(move || {
        if let Ok((s, _)) = l.accept() {
            script(s);
        }
    });
    addr
}

fn read_header(s: &mut std::net::TcpStream) {
    let mut h = [0u8; 10];
    let _ = s.read_exact(&mut h);
}

fn observe_stand_in(addr: SocketAddr, extra: &[&str]) -> crate::support::RunOutput {
    let mut args = vec!["observe", "--no-cache", "--hello-timeout", "2", "--join-timeout", "3"];
    args.extend_from_slice(extra);
    let a = addr.to_string();
    args.push(&a);
    crate::support::run_with_deadline(&mut bzhead(args), WAIT)
}

#[test]
fn hostile_servers_end_with_a_clear_message_and_exit_code() {
    // Nothing listening: cannot connect.
    let port = crate::support::free_port();
    let out = observe_stand_in(SocketAddr::from(([127, 0, 0, 1], port)), &[]);
    assert_eq!(out.code, Some(3), "{}", out.describe());
    assert!(out.stderr.contains("cannot connect"), "{}", out.describe());

    // A web server.
    let addr = stand_in(|mut s| {
        read_header(&mut s);
        let _ = s.write_all(b"HTTP/1.0 400 Bad Request\r\n\r\n");
        thread::sleep(Duration::from_secs(1));
    });
    let out = observe_stand_in(addr, &[]);
    assert_eq!(out.code, Some(6), "{}", out.describe());
    assert!(out.stderr.contains("not a BZFlag"), "{}", out.describe());

    // Silence after accept: the hello deadline.
    let addr = stand_in(|s| {
        thread::sleep(Duration::from_secs(5));
        drop(s);
    });
    let out = observe_stand_in(addr, &[]);
    assert_eq!(out.code, Some(6), "{}", out.describe());
    assert!(out.stderr.contains("timed out during the hello"), "{}", out.describe());

    // A server that drips its hello one byte a second: the hello deadline is absolute.
    let addr = stand_in(|mut s| {
        read_header(&mut s);
        for b in b"BZFS0221\x00" {
            if s.write_all(&[*b]).is_err() {
                return;
            }
            thread::sleep(Duration::from_secs(1));
        }
    });
    let out = observe_stand_in(addr, &[]);
    assert_eq!(out.code, Some(6), "{}", out.describe());
    assert!(out.stderr.contains("timed out during the hello"), "{}", out.describe());

    // An oversized length right after the hello.
    let addr = stand_in(|mut s| {
        read_header(&mut s);
        let _ = s.write_all(b"BZFS0221\x00\xff\xff\x61\x63");
        thread::sleep(Duration::from_secs(2));
    });
    let out = observe_stand_in(addr, &["--no-world", "--no-udp"]);
    assert_eq!(out.code, Some(6), "{}", out.describe());
    assert!(out.stderr.contains("exceeds the protocol maximum"), "{}", out.describe());

    // Garbage after a good hello: skipped as malformed messages or fatal as a broken frame, never a hang.
    let addr = stand_in(|mut s| {
        read_header(&mut s);
        let _ = s.write_all(b"BZFS0221\x00");
        let mut x: u32 = 0x1234_5678;
        let garbage: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        let _ = s.write_all(&garbage);
        thread::sleep(Duration::from_secs(5));
    });
    let out = observe_stand_in(addr, &["--no-udp"]);
    assert_eq!(out.code, Some(6), "{}", out.describe());
    assert!(!out.timed_out);

    // The server closes in the middle of the world download.
    let addr = stand_in(|mut s| {
        read_header(&mut s);
        let _ = s.write_all(b"BZFS0221\x00");
        let mut buf = [0u8; 512];
        // Answer the join steps in order, then half a world.
        let reply = |code: &[u8; 2], body: &[u8]| {
            let mut m = (body.len() as u16).to_be_bytes().to_vec();
            m.extend_from_slice(code);
            m.extend_from_slice(body);
            m
        };
        let _ = s.read(&mut buf); // MsgNegotiateFlags
        let _ = s.write_all(&reply(b"nf", &[]));
        let _ = s.read(&mut buf); // MsgWantSettings
        let mut settings = 400f32.to_be_bytes().to_vec();
        settings.extend_from_slice(&[0; 26]);
        let _ = s.write_all(&reply(b"gs", &settings));
        let _ = s.read(&mut buf); // MsgWantWHash
        let mut hash = b"p".to_vec();
        hash.extend_from_slice(b"0123456789abcdef0123456789abcdef\0");
        let _ = s.write_all(&reply(b"wh", &hash));
        let _ = s.read(&mut buf); // MsgGetWorld
        let mut chunk = 5000u32.to_be_bytes().to_vec();
        chunk.extend_from_slice(&[7; 1016]);
        let _ = s.write_all(&reply(b"gw", &chunk));
        let _ = s.read(&mut buf);
    });
    let out = observe_stand_in(addr, &["--no-udp"]);
    assert_eq!(out.code, Some(6), "{}", out.describe());
    assert!(out.stderr.contains("closed the connection during the world download"), "{}", out.describe());
}

#[test]
fn ctrl_c_leaves_cleanly() {
    let bzfs = Bzfs::builder().start();
    let cache = TempDir::new("sigint-cache");
    let mut obs = Observer::start(bzfs.addr(), &cache, &["--callsign", "interrupted"]);
    assert!(obs.wait_event(|e| e["type"] == "accept"), "{}", obs.out.text());
    let status = std::process::Command::new("kill").args(["-INT", &obs.child.id().to_string()]).status().unwrap();
    assert!(status.success());
    assert_eq!(obs.wait_exit(WAIT), Some(0), "{}", obs.out.text());
    assert!(
        bzfs.log_buf().wait_until(WAIT, |log| log.lines().any(|l| l.contains("interrupted") && l.contains(": left"))),
        "bzfs should log a clean leave:\n{}",
        bzfs.log()
    );
}

#[test]
fn three_observers_in_one_process_all_join_and_leave_cleanly() {
    let bzfs = Bzfs::builder().ctf().start();
    let cache = TempDir::new("count-cache");
    let mut obs = Observer::start(bzfs.addr(), &cache, &["--callsign", "crowd", "--count", "3", "--stagger-ms", "20"]);
    assert!(obs.wait_event(|e| e["type"] == "all_joined" && e["count"] == 3), "{}", obs.out.text());
    let ev = obs.events();
    let joined: Vec<&str> = of_type(&ev, "observer_joined").iter().map(|e| e["callsign"].as_str().unwrap()).collect();
    assert_eq!(joined.len(), 3, "{}", obs.out.text());
    for name in ["crowd1", "crowd2", "crowd3"] {
        assert!(joined.contains(&name), "{name} missing: {}", obs.out.text());
    }
    // Only the first observer's events are printed: one accept, its own.
    assert_eq!(of_type(&ev, "accept").len(), 1, "{}", obs.out.text());

    // The server lists all three as observers.
    let q = run_bzhead(["query", "bzflag", "--json", &bzfs.host_port()], WAIT);
    assert!(q.success(), "{}", q.describe());
    let v: Value = serde_json::from_str(q.stdout.trim()).unwrap();
    let list = v["player_list"].as_array().expect("player list");
    for name in ["crowd1", "crowd2", "crowd3"] {
        assert!(
            list.iter().any(|p| p["name"] == name && p["team"] == "observer"),
            "{name} not listed as an observer: {}",
            q.stdout
        );
    }

    obs.say("/quit");
    assert_eq!(obs.wait_exit(WAIT), Some(0), "{}", obs.out.text());
    for name in ["crowd1", "crowd2", "crowd3"] {
        assert!(
            bzfs.log_buf().wait_until(WAIT, |log| log.lines().any(|l| l.contains(name) && l.contains(": left"))),
            "bzfs should log {name}'s clean leave:\n{}",
            bzfs.log()
        );
    }
}
