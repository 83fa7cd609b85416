//! Many BZFlag sessions on one reactor (one thread, one mio Poll) against a real `bzfs`.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use bzhead::bzflag::event::Event;
use bzhead::bzflag::session::{SessionConfig, SessionEnd};
use bzhead::reactor::{Reactor, SessionOptions};

use crate::support::{Bzfs, WAIT};

#[test]
fn ten_observers_share_one_reactor_and_see_each_other() {
    const N: usize = 10;
    let bzfs = Bzfs::builder().ctf().start();
    let mut r = Reactor::new().unwrap();
    let mut ids = vec![];
    for i in 0..N {
        let config = SessionConfig { callsign: format!("multi{i}"), ..SessionConfig::default() };
        ids.push(r.add_session(bzfs.addr(), config, SessionOptions::default()).unwrap());
    }
    // Wait until every session is accepted and has seen every other join.
    let deadline = Instant::now() + WAIT * 2;
    let mut accepted = HashSet::new();
    let mut seen_joins = vec![HashSet::new(); N];
    while (accepted.len() < N || seen_joins.iter().any(|s| s.len() < N)) && Instant::now() < deadline {
        r.turn(Some(Duration::from_millis(100))).unwrap();
        while let Some((id, _, ev)) = r.poll_event() {
            let k = ids.iter().position(|x| *x == id).unwrap();
            match ev {
                Event::Accept { .. } => {
                    accepted.insert(k);
                }
                Event::Join { callsign, .. } if callsign.starts_with("multi") => {
                    seen_joins[k].insert(callsign);
                }
                Event::Closed { reason, .. } => panic!("session {k} closed: {reason}"),
                _ => {}
            }
        }
    }
    assert_eq!(accepted.len(), N);
    for (k, s) in seen_joins.iter().enumerate() {
        assert_eq!(s.len(), N, "session {k} saw {s:?}");
    }
    // Every roster holds all of them; then everybody leaves cleanly.
    for id in &ids {
        let game = r.session(*id).unwrap().game();
        assert!(game.players.values().filter(|p| p.callsign.starts_with("multi")).count() >= N);
    }
    for id in &ids {
        r.leave(*id);
    }
    assert!(r.run_until_done(Instant::now() + WAIT).unwrap());
    for id in &ids {
        assert_eq!(r.session(*id).unwrap().end(), Some(&SessionEnd::Left));
    }
    for i in 0..N {
        assert!(bzfs.wait_for_log(&format!("multi{i} ["), WAIT));
    }
    assert!(
        bzfs.log_buf().wait_until(WAIT, |log| log
            .lines()
            .filter(|l| l.contains("removed") && l.contains(": left"))
            .count()
            >= N),
        "every session leaves cleanly:\n{}",
        bzfs.log()
    );
}

#[test]
fn a_flooding_server_does_not_starve_the_other_sessions() {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let bzfs = Bzfs::builder().start();
    // A stand-in that accepts the join and then floods chat lines as fast as it can until told to stop.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let flood_addr = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let flooder = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut header = [0u8; 10];
        s.read_exact(&mut header).unwrap();
        s.write_all(b"BZFS0221\x00").unwrap();
        let mut enter = [0u8; 4 + 247];
        s.read_exact(&mut enter).unwrap();
        s.write_all(&[0, 1, 0x61, 0x63, 0]).unwrap(); // MsgAccept(0)
        let mut line = vec![0, 8, 0x6d, 0x67, 253, 0, 0];
        line.extend_from_slice(b"flood");
        let burst: Vec<u8> = line.iter().copied().cycle().take(line.len() * 4096).collect();
        let mut sent = 0usize;
        while !stop2.load(Ordering::Relaxed) {
            match s.write_all(&burst) {
                Ok(()) => sent += 4096,
                Err(_) => break,
            }
        }
        sent
    });

    let mut r = Reactor::new().unwrap();
    let flood_cfg =
        SessionConfig { callsign: "flooded".into(), full_join: false, udp: false, ..SessionConfig::default() };
    let flooded = r.add_session(flood_addr, flood_cfg, SessionOptions::default()).unwrap();
    let mut flood_lines = 0usize;
    // Let the flood get going, then start a real session next to it.
    let start = Instant::now();
    while flood_lines < 20_000 && start.elapsed() < WAIT {
        r.turn(Some(Duration::from_millis(50))).unwrap();
        while let Some((id, _, ev)) = r.poll_event() {
            if id == flooded && matches!(ev, Event::Chat { .. }) {
                flood_lines += 1;
            }
        }
    }
    assert!(flood_lines >= 20_000, "the flood did not get going: {flood_lines}");
    let real = r
        .add_session(
            bzfs.addr(),
            SessionConfig { callsign: "bystander".into(), ..SessionConfig::default() },
            SessionOptions::default(),
        )
        .unwrap();
    let mut accepted = false;
    let deadline = Instant::now() + WAIT;
    while !accepted && Instant::now() < deadline {
        r.turn(Some(Duration::from_millis(50))).unwrap();
        while let Some((id, _, ev)) = r.poll_event() {
            if id == real && matches!(ev, Event::Accept { .. }) {
                accepted = true;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    assert!(accepted, "the real session was starved by the flood");
    r.leave(real);
    r.leave(flooded);
    r.run_until_done(Instant::now() + WAIT).unwrap();
    let _ = flooder.join();
}

/// On a clock 8 times as fast as real time, a session's handshake timeout is its length in real time (the server's
/// CPU and the network are not warped): a listener that accepts and never says hello ends the session after the
/// `hello_timeout` of real time, not an eighth of it.
#[test]
fn handshake_timeouts_are_real_time_on_a_fast_clock() {
    use bzhead::reactor::ReactorOptions;
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut r = Reactor::with_options(ReactorOptions { time_scale: 8.0 }).unwrap();
    let config = SessionConfig { hello_timeout: Duration::from_secs(1), ..SessionConfig::default() };
    let start = Instant::now();
    let id = r.add_session(silent.local_addr().unwrap(), config, SessionOptions::default()).unwrap();
    let mut ended = None;
    while ended.is_none() && start.elapsed() < WAIT {
        r.turn(Some(Duration::from_millis(50))).unwrap();
        while let Some((sid, _, ev)) = r.poll_event() {
            if let (true, Event::Closed { reason, .. }) = (sid == id, ev) {
                ended = Some((start.elapsed(), reason));
            }
        }
    }
    let (after, reason) = ended.expect("the session never ended");
    assert!(matches!(reason, SessionEnd::Timeout { .. }), "{reason}");
    assert!(after >= Duration::from_millis(900), "the hello timed out after {after:?} of real time, not 1 s");
}
