//! How bots end on a real `bzfs`: an admin's `/kick` stops the kicked bot alone, with the reason the server sent
//! with the kick; a kick of the shared observer link brings a new one while the bots play on; a server stopped
//! with SIGTERM (every player gets a `MsgSuperKill` with no reason) and started again gets every bot back.

use std::time::{Duration, Instant};

use bzhead::bot::brains;
use bzhead::bot::{BotConfig, BotEvent, BotHost, BotId, BotState, HostConfig, HostEvent};
use bzhead::bzflag::event::Event;

use crate::bots::open_world;
use crate::support::{Bzadmin, Bzfs, TempDir};

/// Runs the host until `done` says so or `limit` passes; returns every event seen.
fn run_for(host: &mut BotHost, limit: Duration, mut done: impl FnMut(&HostEvent) -> bool) -> Vec<HostEvent> {
    let start = Instant::now();
    let mut seen = Vec::new();
    while start.elapsed() < limit {
        host.turn(Some(Duration::from_millis(50))).expect("turn");
        let mut finished = false;
        while let Some(e) = host.poll_event() {
            finished |= done(&e);
            seen.push(e);
        }
        if finished {
            break;
        }
    }
    seen
}

fn sitters(host: &mut BotHost, bzfs: &Bzfs, names: &[&str]) -> Vec<BotId> {
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let config = BotConfig { callsign: (*name).into(), seed: i as u64 + 1, ..BotConfig::default() };
            host.add_bot(bzfs.addr(), config, brains::by_name("sitter", i as u64 + 1).expect("sitter"))
        })
        .collect()
}

fn joined(host: &BotHost, ids: &[BotId]) -> bool {
    ids.iter().all(|id| host.status(*id).is_some_and(|s| s.state == BotState::Joined))
}

/// Runs until every bot in `ids` is in the game and the observer link has joined.
#[track_caller]
fn until_all_in(host: &mut BotHost, bzfs: &Bzfs, ids: &[BotId], limit: Duration) -> Vec<HostEvent> {
    let server = host.server_of(ids[0]).expect("server");
    let start = Instant::now();
    let mut seen = Vec::new();
    while !(joined(host, ids) && host.server_game(server).is_some_and(|g| g.my_id.is_some())) {
        assert!(start.elapsed() < limit, "not every bot joined within {limit:?}: {seen:?}\n{}", bzfs.log());
        seen.extend(run_for(host, Duration::from_millis(200), |_| false));
    }
    seen
}

#[test]
fn an_admin_kick_stops_that_bot_alone_with_the_servers_reason_and_a_kicked_eye_comes_back() {
    let dir = TempDir::new("bots-kick");
    let bzfs = Bzfs::builder().world(open_world(&dir, 100)).args(["-passwd", "sesame"]).start();
    let mut admin = Bzadmin::join("admin", bzfs.addr());
    assert!(admin.wait_joined(Duration::from_secs(20)), "{}", admin.output());
    admin.send_line("/password sesame");
    assert!(admin.wait_for_output("You are now an administrator", Duration::from_secs(20)), "{}", admin.output());

    let mut host =
        BotHost::new(HostConfig { max_backoff: Duration::from_secs(2), ..HostConfig::default() }).expect("host");
    let ids = sitters(&mut host, &bzfs, &["kickme", "stayer"]);
    until_all_in(&mut host, &bzfs, &ids, Duration::from_secs(60));
    // Let the welcome texts come and go: the kick's reason must not be one of them.
    run_for(&mut host, Duration::from_secs(3), |_| false);

    admin.send_line("/kick kickme enough of you");
    let events = run_for(
        &mut host,
        Duration::from_secs(30),
        |e| matches!(e, HostEvent::Bot { bot, event: BotEvent::Stopped { .. }, .. } if *bot == ids[0]),
    );
    let reason = events
        .iter()
        .find_map(|e| match e {
            HostEvent::Bot { bot, event: BotEvent::Stopped { reason }, .. } if *bot == ids[0] => Some(reason.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("the kicked bot did not stop: {events:?}\n{}", bzfs.log()));
    assert!(reason.contains("You were kicked off the server"), "{reason}");
    assert!(reason.contains("enough of you"), "{reason}");
    assert!(!reason.contains("observer mode") && !reason.contains("BZFlag server"), "an old message: {reason}");
    // The other bot plays on, and nothing brings the kicked one back.
    run_for(&mut host, Duration::from_secs(4), |_| false);
    assert_eq!(host.status(ids[1]).expect("status").state, BotState::Joined);
    assert!(matches!(host.status(ids[0]).expect("status").state, BotState::Stopped(_)));

    // Kick the shared observer link: a new one joins, and the bot still in plays on.
    let server = host.server_of(ids[1]).expect("server");
    let eye = host.config().eye_callsign.clone();
    admin.send_line(&format!("/kick {eye} observers too"));
    let mut kicked = None;
    let mut back = false;
    let events = run_for(&mut host, Duration::from_secs(60), |e| {
        match e {
            HostEvent::Game { event: Event::Kicked { reason }, .. } => kicked = Some(reason.clone()),
            HostEvent::Game { event: Event::Accept { .. }, .. } if kicked.is_some() => back = true,
            _ => {}
        }
        back
    });
    let reason = kicked.unwrap_or_else(|| panic!("the observer link was not kicked: {events:?}\n{}", bzfs.log()));
    assert!(reason.contains("observers too"), "{reason}");
    assert!(back, "no new observer link after the kick: {events:?}\n{}", bzfs.log());
    assert!(host.server_game(server).is_some_and(|g| g.my_id.is_some()), "the new observer link is not in");
    let left = |e: &HostEvent| match e {
        HostEvent::Bot { bot, event, .. } if *bot == ids[1] => {
            matches!(event, BotEvent::Disconnected { .. } | BotEvent::Stopped { .. })
        }
        _ => false,
    };
    assert!(!events.iter().any(left), "the bot left with the observer link: {events:?}");
    assert_eq!(host.status(ids[1]).expect("status").state, BotState::Joined);
    host.leave_all();
    let _ = host.run_until(Instant::now() + Duration::from_secs(5));
}

#[test]
fn bots_come_back_after_bzfs_is_stopped_with_sigterm_and_started_again() {
    let dir = TempDir::new("bots-restart");
    let mut bzfs = Bzfs::builder().world(open_world(&dir, 100)).start();
    let mut host =
        BotHost::new(HostConfig { max_backoff: Duration::from_secs(2), ..HostConfig::default() }).expect("host");
    let ids = sitters(&mut host, &bzfs, &["phoenix1", "phoenix2"]);
    until_all_in(&mut host, &bzfs, &ids, Duration::from_secs(60));
    run_for(&mut host, Duration::from_secs(3), |_| false);

    bzfs.terminate(Duration::from_secs(20));
    let mut gone = Vec::new();
    let events = run_for(&mut host, Duration::from_secs(30), |e| {
        if let HostEvent::Bot { bot, event: BotEvent::Disconnected { reason, retry_in: Some(_) }, .. } = e {
            gone.push((*bot, reason.clone()));
        }
        gone.len() >= ids.len()
    });
    assert!(
        !events.iter().any(|e| matches!(e, HostEvent::Bot { event: BotEvent::Stopped { .. }, .. })),
        "a bot gave up on a shutdown: {events:?}"
    );
    assert_eq!(gone.len(), ids.len(), "{events:?}");
    for (_, reason) in &gone {
        assert!(reason.contains("shut down"), "a shutdown is not a kick: {reason}");
    }

    bzfs.restart(Duration::from_secs(30));
    let events = until_all_in(&mut host, &bzfs, &ids, Duration::from_secs(90));
    assert!(!events.iter().any(|e| matches!(e, HostEvent::Bot { event: BotEvent::Stopped { .. }, .. })), "{events:?}");
    host.leave_all();
    let _ = host.run_until(Instant::now() + Duration::from_secs(5));
}

/// The callsign in a `MsgEnter` body (after the u16 type and team, 32 bytes, NUL-padded).
fn enter_callsign(body: &[u8]) -> String {
    let field = body.get(4..36).unwrap_or_default();
    let end = field.iter().position(|b| *b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

#[test]
fn an_observer_link_refused_for_its_callsign_comes_back_under_another() {
    use crate::support::standin::{hello, reject, Conn};
    // A server that refuses the first join for its callsign (RejectBadCallsign, code 6, as bzfs answers a
    // registered callsign without its token) and reports the callsign of the next one.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let world = b"any bytes: the world is only checked against its hash before the join".to_vec();
        for (n, stream) in listener.incoming().take(2).enumerate() {
            let Ok(stream) = stream else { return };
            let mut c = Conn::from_stream(stream);
            let enter = if c.read_header() && c.send(&hello(1)) { c.serve_join(&world) } else { None };
            let _ = tx.send(enter.map(|b| enter_callsign(&b)));
            if n == 0 {
                c.send(&reject(6, "This callsign is registered."));
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    });
    let mut host = BotHost::new(HostConfig::default()).expect("host");
    let config = BotConfig { callsign: "sitter".into(), ..BotConfig::default() };
    host.add_bot(addr, config, brains::by_name("sitter", 1).expect("sitter"));
    let eye = host.config().eye_callsign.clone();
    let mut callsigns = Vec::new();
    let start = Instant::now();
    while callsigns.len() < 2 && start.elapsed() < Duration::from_secs(20) {
        host.turn(Some(Duration::from_millis(50))).expect("turn");
        while host.poll_event().is_some() {}
        while let Ok(c) = rx.try_recv() {
            callsigns.push(c);
        }
    }
    // Before RejectCode::remedy, the link gave up on code 6 and the bot joined on its own instead.
    assert_eq!(callsigns, [Some(eye.clone()), Some(format!("{eye}2"))]);
}
