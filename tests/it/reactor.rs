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
