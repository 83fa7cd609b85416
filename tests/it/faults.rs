//! Faults around real peers: forged UDP to a session and to a scan, loss and delay (netem in a private network
//! namespace where the kernel has it, else relays in the test), a `bzfs` killed and started again under playing
//! bots, and misbehaving plugins inside a scan of real game servers.

use std::collections::HashMap;
use std::io::Write as _;
use std::net::{SocketAddr, UdpSocket};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use bzhead::bot::{brains, BotConfig, BotEvent, BotHost, BotId, BotState, HostConfig, HostEvent};
use bzhead::bzflag::consts::{PlayerStatus, Team};
use bzhead::bzflag::event::Event;
use bzhead::bzflag::msg::{Abbv, FiringInfo, Message, PlayerUpdate, ServerMsg};
use bzhead::bzflag::session::SessionConfig;
use bzhead::query::loader::PluginSet;
use bzhead::query::{QueryResult, Scan, ScanConfig, Target};
use bzhead::reactor::{Reactor, SessionOptions};
use serde_json::Value;

use crate::bots::{open_world, BAD};
use crate::query_host::finish_scan;
use crate::support::fake::{echo, silent, Responder};
use crate::support::gameservers::GameServer;
use crate::support::netem::NetMode;
use crate::support::plugins::{plugin_dir_with, MISBEHAVE_PLUGINS};
use crate::support::relay::{GameRelay, Hooks, Impair, UdpRelay};
use crate::support::{bzhead, Bzadmin, Bzfs, OutputBuf, TempDir, WAIT};

const DELAY: Duration = Duration::from_millis(50);
const LOSS_PERCENT: u32 = 10;
/// The relays' loss for queries: every tenth datagram of each direction, starting with the first (so every
/// server's first request and first reply are lost).
const RELAY_LOSS: Impair = Impair { delay: DELAY, drop_every: Some(10), drop_phase: 0 };
/// The relays' loss for games: every tenth datagram of each direction, the 10th, 20th ... (bzfs sends its UDP
/// probe only once per player: losing the first datagram would always leave the link on TCP).
const GAME_LOSS: Impair = Impair { delay: DELAY, drop_every: Some(10), drop_phase: 9 };

#[track_caller]
fn assert_clean_log(log: &str) {
    for bad in BAD {
        assert!(!log.contains(bad), "bzfs logged {bad:?}:\n{log}");
    }
}

/// Results as the JSON every protocol shares, by address.
fn by_addr(results: &[QueryResult]) -> HashMap<SocketAddr, Value> {
    results.iter().map(|r| (r.address, r.to_json())).collect()
}

// ------------------------------------------------------------------ forged UDP

/// The local address of the one UDP socket on this host connected to 127.0.0.1:`server_port` (`/proc/net/udp`).
fn udp_socket_connected_to(server_port: u16) -> Vec<SocketAddr> {
    let table = crate::support::proc_net("udp").unwrap_or_default();
    let remote = format!("0100007F:{server_port:04X}");
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut f = l.split_whitespace().skip(1);
            let (local, rem) = (f.next()?, f.next()?);
            if rem != remote {
                return None;
            }
            let (ip, port) = local.split_once(':')?;
            let ip = u32::from_str_radix(ip, 16).ok()?;
            let port = u16::from_str_radix(port, 16).ok()?;
            Some(SocketAddr::from((ip.to_le_bytes(), port)))
        })
        .collect()
}

/// The kernel's count of UDP datagrams that found no socket to take them (`Udp: NoPorts` in `/proc/net/snmp`).
fn udp_no_ports() -> u64 {
    let snmp = crate::support::proc_net("snmp").unwrap_or_default();
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp:"));
    let (Some(names), Some(values)) = (udp.next(), udp.next()) else { return 0 };
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(n, _)| *n == "NoPorts")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
}

#[test]
fn forged_datagrams_to_a_sessions_udp_port_change_no_game_state_and_are_counted_by_the_kernel() {
    let bzfs = Bzfs::start();
    let mut admin = Bzadmin::join("witness", bzfs.addr());
    let mut r = Reactor::new().unwrap();
    let config = SessionConfig { callsign: "forgetarget".into(), ..SessionConfig::default() };
    let id = r.add_session(bzfs.addr(), config, SessionOptions::default()).unwrap();
    let mut events = Vec::new();
    let deadline = Instant::now() + WAIT;
    let pump = |r: &mut Reactor, events: &mut Vec<Event>, until: &dyn Fn(&[Event]) -> bool, limit: Instant| {
        while !until(events) && Instant::now() < limit {
            r.turn(Some(Duration::from_millis(20))).unwrap();
            while let Some((_, _, e)) = r.poll_event() {
                if let Event::Closed { reason, .. } = &e {
                    panic!("the session closed: {reason}");
                }
                events.push(e);
            }
        }
    };
    pump(
        &mut r,
        &mut events,
        // The witness's MsgAddPlayer may come after our UDP link is up: wait for all three.
        &|ev| {
            ev.iter().any(|e| matches!(e, Event::Accept { .. }))
                && ev.iter().any(|e| matches!(e, Event::UdpLink { up: true, .. }))
                && ev.iter().any(|e| matches!(e, Event::Join { callsign, .. } if callsign == "witness"))
        },
        deadline,
    );
    assert!(events.iter().any(|e| matches!(e, Event::UdpLink { up: true, .. })), "the UDP link came up: {events:?}");
    let game = r.session(id).unwrap().game();
    let witness = game.players.values().find(|p| p.callsign == "witness").map(|p| p.id).expect("witness in roster");
    let server_time_before = game.server_time.map(|(us, _)| us);
    let warnings_before = r.session(id).unwrap().warnings();

    let targets = udp_socket_connected_to(bzfs.port());
    assert_eq!(targets.len(), 1, "exactly our session's socket is connected to bzfs: {targets:?}");
    let target = targets[0];

    // What a forger would like us to believe: the witness alive at (123, 456, 7), a shot of its, a game time of
    // 42 µs and a chat line, from another port of the server's address and from another address with the
    // server's own port.
    let update = ServerMsg::PlayerUpdate(PlayerUpdate {
        small: false,
        timestamp: 1.0,
        id: witness,
        order: 1_000_000,
        status: PlayerStatus::ALIVE,
        pos: [123.0, 456.0, 7.0],
        vel: [0.0; 3],
        azimuth: 0.0,
        ang_vel: 0.0,
        jump_jets: 0.0,
        phydrv: -1,
        user_inputs: (0.0, 0.0),
        sounds: 0,
    })
    .encode();
    let shot = ServerMsg::ShotBegin(FiringInfo {
        time_sent: 1.0,
        shooter: witness,
        shot_id: 77,
        pos: [0.0, 0.0, 1.0],
        vel: [100.0, 0.0, 0.0],
        dt: 0.0,
        team: Team::Observer,
        flag: Abbv::NONE,
        lifetime: 3600.0,
    })
    .encode();
    let time = ServerMsg::GameTime { usec: 42 }.encode();
    let chat = ServerMsg::Message { from: 253, to: 254, kind: 0, text: "forged chat".into() }.encode();
    let mut forgers = vec![UdpSocket::bind("127.0.0.1:0").unwrap()];
    match UdpSocket::bind(("127.0.0.2", bzfs.port())) {
        Ok(s) => forgers.push(s),
        Err(e) => eprintln!("cannot bind 127.0.0.2:{} ({e}); forging from 127.0.0.1 only", bzfs.port()),
    }
    let no_ports_before = udp_no_ports();
    let mut sent = 0u64;
    for _ in 0..25 {
        for f in &forgers {
            for d in [&update, &shot, &time, &chat] {
                f.send_to(d, target).unwrap();
                sent += 1;
            }
        }
    }
    // The session goes on: a real chat line after the forgeries arrives.
    admin.say("real chat after the forgeries");
    pump(
        &mut r,
        &mut events,
        &|ev| ev.iter().any(|e| matches!(e, Event::Chat { text, .. } if text == "real chat after the forgeries")),
        Instant::now() + WAIT,
    );
    assert!(
        events.iter().any(|e| matches!(e, Event::Chat { text, .. } if text == "real chat after the forgeries")),
        "the session still works: {events:?}"
    );
    assert!(!events.iter().any(|e| matches!(e, Event::Update(u) if u.id == witness)), "a forged update got in");
    assert!(!events.iter().any(|e| matches!(e, Event::ShotBegin(f) if f.shot_id == 77)), "a forged shot got in");
    assert!(!events.iter().any(|e| matches!(e, Event::Chat { text, .. } if text == "forged chat")), "forged chat");
    let game = r.session(id).unwrap().game();
    assert!(game.player(witness).unwrap().last_update.is_none(), "the witness never sent an update");
    assert!(!game.shots.contains_key(&(witness, 77)));
    assert_ne!(game.server_time.map(|(us, _)| us), Some(42), "the forged game time was taken");
    assert!(server_time_before != Some(42));
    assert_eq!(r.session(id).unwrap().warnings(), warnings_before, "nothing forged even reached the engine");
    let counted = udp_no_ports().saturating_sub(no_ports_before);
    assert!(counted >= sent, "the kernel counts each forged datagram as NoPorts: {counted} of {sent}");
    eprintln!("{sent} forged datagrams to {target}, kernel NoPorts +{counted}");
    r.leave(id);
    r.run_until_done(Instant::now() + WAIT).unwrap();
}

/// Forges replies to a scan's socket: stale replies (recorded in an earlier scan, so with other tokens and
/// challenges) from the server's own address, and copies of every live reply from another port. All forged ones
/// carry "FORGED" in place of "bzhead" in the server name.
struct Forger {
    record: Arc<Mutex<bool>>,
    recorded: Vec<Vec<u8>>,
    spoof: UdpSocket,
    stale_sent: Arc<AtomicU64>,
    other_port_sent: Arc<AtomicU64>,
}

fn forge(d: &[u8]) -> Vec<u8> {
    let mut v = d.to_vec();
    for i in 0..v.len().saturating_sub(5) {
        if &v[i..i + 6] == b"bzhead" {
            v[i..i + 6].copy_from_slice(b"FORGED");
        }
    }
    v
}

impl Hooks for Forger {
    fn on_request(&mut self, _data: &[u8], client: SocketAddr, front: &UdpSocket) {
        if *self.record.lock().unwrap() {
            return;
        }
        for r in &self.recorded {
            let f = forge(r);
            if front.send_to(&f, client).is_ok() {
                self.stale_sent.fetch_add(1, Ordering::Relaxed);
            }
            if self.spoof.send_to(&f, client).is_ok() {
                self.other_port_sent.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn on_reply(&mut self, data: &[u8], client: SocketAddr, _front: &UdpSocket) {
        if *self.record.lock().unwrap() {
            if self.recorded.len() < 16 {
                self.recorded.push(data.to_vec());
            }
            return;
        }
        // The live reply, token and all, from another port, ahead of the real one.
        if self.spoof.send_to(&forge(data), client).is_ok() {
            self.other_port_sent.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn scan_through(
    plugins: &TempDir,
    targets: &[(&str, SocketAddr)],
    cfg: ScanConfig,
) -> (Vec<QueryResult>, bzhead::query::ScanStats) {
    let set = PluginSet::load_dirs(&[plugins.path().to_path_buf()]);
    let now = Instant::now();
    let mut scan = Scan::new(set, cfg, now);
    for (p, a) in targets {
        scan.add_target(now, Target::new(p, *a)).unwrap();
    }
    let mut reactor = Reactor::new().unwrap();
    let id = reactor.add_scan(scan);
    let results = finish_scan(&mut reactor, id, WAIT * 4);
    let stats = reactor.scan(id).unwrap().stats();
    (results, stats)
}

#[test]
fn forged_replies_to_a_scan_from_other_ports_or_with_stale_tokens_change_no_result_and_are_counted() {
    let plugins = plugin_dir_with("forged-scan", &["query_teeworlds", "query_quake3"]);
    let ddnet = GameServer::ddnet("bzhead DDNet forged");
    let tw07 = GameServer::teeworlds07("bzhead TW07 forged");
    let oa = GameServer::openarena("bzhead OA forged", 1);
    let record = Arc::new(Mutex::new(true));
    let (stale, other) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let relays: Vec<(&str, UdpRelay)> =
        [("teeworlds", ddnet.addr()), ("teeworlds7", tw07.addr()), ("quake3", oa.addr())]
            .into_iter()
            .map(|(p, a)| {
                let hooks = Forger {
                    record: record.clone(),
                    recorded: Vec::new(),
                    spoof: UdpSocket::bind("127.0.0.1:0").unwrap(),
                    stale_sent: stale.clone(),
                    other_port_sent: other.clone(),
                };
                (p, UdpRelay::spawn(a, Impair::NONE, Some(Box::new(hooks))))
            })
            .collect();
    let targets: Vec<(&str, SocketAddr)> = relays.iter().map(|(p, r)| (*p, r.addr())).collect();
    let cfg = |seed| ScanConfig { timeout: Duration::from_millis(500), retries: 2, seed, ..ScanConfig::default() };

    // A clean scan, which the relays record.
    let (clean, clean_stats) = scan_through(&plugins, &targets, cfg(1));
    let clean = by_addr(&clean);
    for (p, a) in &targets {
        assert_eq!(clean[a]["ok"], true, "{p}: {}", clean[a]);
        assert!(clean[a]["name"].as_str().unwrap().starts_with("bzhead "), "{}", clean[a]);
    }
    assert_eq!((clean_stats.unsolicited, clean_stats.ignored), (0, 0), "{clean_stats:?}");

    // The same scan (other tokens and challenges) with the forgeries.
    *record.lock().unwrap() = false;
    let (forged, stats) = scan_through(&plugins, &targets, cfg(2));
    let forged = by_addr(&forged);
    for (p, a) in &targets {
        let (c, f) = (&clean[a], &forged[a]);
        assert_eq!(f["ok"], true, "{p}: {f}");
        for key in ["name", "map", "game_type", "version", "max_players", "players", "password"] {
            assert_eq!(f[key], c[key], "{p}: {key} differs: {f} vs {c}");
        }
        assert!(!f.to_string().contains("FORGED"), "{p}: a forged reply was taken: {f}");
    }
    let (stale, other) = (stale.load(Ordering::Relaxed), other.load(Ordering::Relaxed));
    eprintln!("forged: {stale} stale from the servers' addresses, {other} from other ports; scan stats {stats:?}");
    assert!(stale >= 3 && other >= 6, "the forger was busy: {stale} stale, {other} other-port");
    assert!(stats.unsolicited >= other, "every datagram from another port is unsolicited: {stats:?}, {other} sent");
    assert!(stats.ignored >= 3, "stale replies to queries in flight are ignored: {stats:?}");
    assert!(stats.unsolicited + stats.ignored >= stale + other, "every forgery is counted: {stats:?}");
}

// ------------------------------------------------------------------ loss and delay

#[test]
fn a_scan_of_real_servers_answers_every_one_through_loss_and_delay() {
    let mode = NetMode::setup(DELAY, LOSS_PERCENT);
    let plugins = plugin_dir_with("lossy-scan", &["query_teeworlds", "query_quake3"]);
    let bzfs = Bzfs::start();
    let ddnet = GameServer::ddnet("bzhead DDNet lossy");
    let tw07 = GameServer::teeworlds07("bzhead TW07 lossy");
    let oa = GameServer::openarena("bzhead OA lossy", 2);
    let servers = [("teeworlds", ddnet.addr()), ("teeworlds7", tw07.addr()), ("quake3", oa.addr())];
    let (udp_relays, bz_relay) = match mode {
        NetMode::Netem => (Vec::new(), None),
        NetMode::Relay(_) => (
            servers.iter().map(|(_, a)| UdpRelay::spawn(*a, RELAY_LOSS, None)).collect::<Vec<_>>(),
            Some(GameRelay::spawn(bzfs.addr(), RELAY_LOSS)),
        ),
    };
    let mut targets: Vec<(&str, SocketAddr)> = match mode {
        NetMode::Netem => servers.to_vec(),
        NetMode::Relay(_) => servers.iter().zip(&udp_relays).map(|((p, _), r)| (*p, r.addr())).collect(),
    };
    targets.push(("bzflag", bz_relay.as_ref().map_or(bzfs.addr(), |r| r.addr())));
    // Enough retries that random 10 % loss (netem) fails a query with odds far below one in a thousand.
    let cfg = ScanConfig { timeout: Duration::from_millis(400), retries: 6, seed: 5, ..ScanConfig::default() };
    let (results, stats) = scan_through(&plugins, &targets, cfg);
    let got = by_addr(&results);
    let expect = [("bzhead DDNet lossy", "Tutorial"), ("bzhead TW07 lossy", "dm1"), ("bzhead OA lossy", "oa_dm1")];
    for ((p, a), (name, map)) in targets.iter().zip(expect) {
        let v = &got[a];
        assert_eq!(v["ok"], true, "{p} through loss and delay: {v}");
        assert_eq!((v["name"].as_str(), v["map"].as_str()), (Some(name), Some(map)), "{p}: {v}");
    }
    let bz = &got[&targets[3].1];
    assert_eq!(bz["ok"], true, "bzflag: {bz}");
    assert_eq!(bz["version"], "BZFS0221");
    assert_eq!(got[&targets[2].1]["players"], 2, "{}", got[&targets[2].1]);
    for (r, (p, _)) in udp_relays.iter().zip(&servers) {
        let (up, up_dropped, down, down_dropped) = r.stats().datagrams();
        eprintln!("{p} relay: {up} requests forwarded, {up_dropped} dropped; {down} replies forwarded, {down_dropped} dropped");
        assert!(up_dropped >= 1, "{p}: the first request was dropped, so the answer came through a retry");
    }
    eprintln!("scan: {stats:?}\n{}", mode.qdisc_stats());
    if mode == NetMode::Netem {
        assert!(mode.qdisc_stats().contains("netem"), "the loopback qdisc is netem:\n{}", mode.qdisc_stats());
    }
}

/// Runs the host for `limit` (or until `done`), failing on a bot that stops or disconnects.
fn play(
    host: &mut BotHost,
    limit: Duration,
    log: &dyn Fn() -> String,
    mut done: impl FnMut(&HostEvent) -> bool,
) -> Vec<HostEvent> {
    let start = Instant::now();
    let mut seen = Vec::new();
    while start.elapsed() < limit {
        host.turn(Some(Duration::from_millis(50))).expect("turn");
        let mut finished = false;
        while let Some(e) = host.poll_event() {
            match &e {
                HostEvent::Bot { event: BotEvent::Stopped { reason }, .. } => {
                    panic!("a bot stopped: {reason}\n{}", log())
                }
                HostEvent::Bot { event: BotEvent::Disconnected { reason, .. }, .. } => {
                    panic!("a bot was disconnected: {reason}\n{}", log())
                }
                _ => {}
            }
            finished |= done(&e);
            seen.push(e);
        }
        if finished {
            break;
        }
    }
    seen
}

#[test]
fn bots_play_through_loss_and_delay_without_a_kick() {
    let mode = NetMode::setup(DELAY, LOSS_PERCENT);
    let dir = TempDir::new("lossy-bots");
    let bzfs = Bzfs::builder().max_shots(3).world(open_world(&dir, 100)).start();
    let relay = match mode {
        NetMode::Netem => None,
        NetMode::Relay(_) => Some(GameRelay::spawn(bzfs.addr(), GAME_LOSS)),
    };
    let server = relay.as_ref().map_or(bzfs.addr(), |r| r.addr());
    let mut host = BotHost::new(HostConfig::default()).expect("host");
    let ids: Vec<BotId> = [("hunter1", Team::Red), ("hunter2", Team::Green)]
        .into_iter()
        .enumerate()
        .map(|(i, (name, team))| {
            let config = BotConfig { callsign: name.into(), team, seed: i as u64 + 3, ..BotConfig::default() };
            host.add_bot(server, config, brains::by_name("hunter", i as u64 + 3).expect("hunter"))
        })
        .collect();
    let log = || bzfs.log();
    // 20 s of play after both joined.
    let mut joined = 0;
    let mut events = play(&mut host, WAIT * 3, &log, |e| {
        joined += usize::from(matches!(e, HostEvent::Bot { event: BotEvent::Joined { .. }, .. }));
        joined >= 2
    });
    assert_eq!(joined, 2, "both bots joined through the impaired network:\n{}", bzfs.log());
    events.extend(play(&mut host, Duration::from_secs(20), &log, |_| false));
    let eye_udp = events.iter().any(|e| matches!(e, HostEvent::Game { event: Event::UdpLink { up: true, .. }, .. }));
    let kills = events.iter().filter(|e| matches!(e, HostEvent::Bot { event: BotEvent::Killed { .. }, .. })).count();
    for &b in &ids {
        let s = host.status(b).expect("status");
        assert_eq!(s.state, BotState::Joined, "{}: {:?}", s.callsign, s.state);
        assert!(s.stats.spawns >= 1 && s.stats.updates > 0, "{} plays: {:?}", s.callsign, s.stats);
    }
    let shots: u32 = ids.iter().map(|b| host.status(*b).unwrap().stats.shots).sum();
    assert!(shots > 0, "the hunters shot at each other");
    host.leave_all();
    let _ = host.run_until(Instant::now() + Duration::from_secs(5));
    let log = bzfs.log();
    assert!(log.contains("hunter1 [") && log.contains("hunter2 ["), "{log}");
    assert_clean_log(&log);
    if let Some(r) = &relay {
        let (up, up_dropped, down, down_dropped) = r.udp_stats().datagrams();
        eprintln!(
            "relay: {} TCP connections, {} TCP bytes delayed {DELAY:?}; UDP {up} up ({up_dropped} dropped), {down} down ({down_dropped} dropped)",
            r.tcp_stats().connections.load(Ordering::Relaxed),
            r.tcp_stats().tcp_bytes.load(Ordering::Relaxed),
        );
        assert!(r.tcp_stats().connections.load(Ordering::Relaxed) >= 3, "the eye and both bots went through the relay");
        assert!(eye_udp, "the observer link's UDP came up through the relay");
        assert!(down_dropped >= 1 && down >= 9 * down_dropped, "game traffic went over UDP with losses");
    }
    eprintln!(
        "20 s through loss and delay: {kills} kills, {shots} shots, observer UDP up: {eye_udp}\n{}",
        mode.qdisc_stats()
    );
}

// ------------------------------------------------------------------ server restart

#[test]
fn bots_reconnect_after_a_server_restart_with_the_same_callsigns_teams_and_kinds() {
    let dir = TempDir::new("restart-bots");
    let mut bzfs = Bzfs::builder().max_shots(3).world(open_world(&dir, 100)).start();
    let mut host = BotHost::new(HostConfig::default()).expect("host");
    let wanted = [("hunter1", Team::Red), ("hunter2", Team::Green)];
    let ids: Vec<BotId> = wanted
        .iter()
        .enumerate()
        .map(|(i, (name, team))| {
            let config =
                BotConfig { callsign: (*name).into(), team: *team, seed: i as u64 + 5, ..BotConfig::default() };
            host.add_bot(bzfs.addr(), config, brains::by_name("hunter", i as u64 + 5).expect("hunter"))
        })
        .collect();
    let mut log = String::new();
    let turn_until =
        |host: &mut BotHost, limit: Duration, log: &mut String, mut done: Box<dyn FnMut(&HostEvent) -> bool + '_>| {
            let start = Instant::now();
            while start.elapsed() < limit {
                host.turn(Some(Duration::from_millis(50))).expect("turn");
                let mut finished = false;
                while let Some(e) = host.poll_event() {
                    if let HostEvent::Bot { event: BotEvent::Stopped { reason }, bot, .. } = &e {
                        panic!("bot {bot:?} stopped (it should retry): {reason}");
                    }
                    match &e {
                        HostEvent::Bot { bot, event, .. } => log.push_str(&format!("bot {}: {event:?}\n", bot.0)),
                        HostEvent::Game { event: ev @ (Event::Accept { .. } | Event::Closed { .. }), .. } => {
                            log.push_str(&format!("eye: {ev:?}\n"))
                        }
                        _ => {}
                    }
                    finished |= done(&e);
                }
                if finished {
                    return true;
                }
            }
            false
        };

    // Both in, and the eye.
    let mut joined = HashMap::new();
    let mut eye_in = 0;
    let ok = turn_until(
        &mut host,
        WAIT * 3,
        &mut log,
        Box::new(|e| {
            match e {
                HostEvent::Bot { bot, event: BotEvent::Joined { team, .. }, .. } => {
                    joined.insert(*bot, *team);
                }
                HostEvent::Game { event: Event::Accept { .. }, .. } => eye_in += 1,
                _ => {}
            }
            joined.len() == 2 && eye_in == 1
        }),
    );
    assert!(ok, "joined: {joined:?}\n{log}\n{}", bzfs.log());
    let before: Vec<_> = ids.iter().map(|b| host.status(*b).unwrap()).collect();
    for (s, (name, team)) in before.iter().zip(wanted) {
        assert_eq!((s.callsign.as_str(), s.team), (name, team));
    }

    // The server dies: every bot says it lost the connection and when it retries; the eye closes.
    let old_log = bzfs.kill_now();
    let mut disconnected = HashMap::new();
    let mut eye_closed = false;
    let ok = turn_until(
        &mut host,
        WAIT,
        &mut log,
        Box::new(|e| {
            match e {
                HostEvent::Bot { bot, event: BotEvent::Disconnected { retry_in: Some(s), reason }, .. } => {
                    disconnected.insert(*bot, (*s, reason.clone()));
                }
                HostEvent::Game { event: Event::Closed { .. }, .. } => eye_closed = true,
                _ => {}
            }
            disconnected.len() == 2 && eye_closed
        }),
    );
    assert!(ok, "after the kill: disconnected {disconnected:?}, eye closed {eye_closed}\n{log}");
    for (bot, (retry, reason)) in &disconnected {
        assert!(*retry >= 1.0, "bot {bot:?} backs off: {retry} s ({reason})");
        assert!(reason.contains("closed the connection"), "bot {bot:?}: {reason}");
    }

    // A second or two later the server is back on the same port: the eye and both bots come back by themselves.
    thread::sleep(Duration::from_millis(1500));
    bzfs.restart(WAIT);
    let mut rejoined = HashMap::new();
    let mut eye_back = false;
    let ok = turn_until(
        &mut host,
        Duration::from_secs(60),
        &mut log,
        Box::new(|e| {
            match e {
                HostEvent::Bot { bot, event: BotEvent::Joined { team, .. }, .. } => {
                    rejoined.insert(*bot, *team);
                }
                HostEvent::Game { event: Event::Accept { .. }, .. } => eye_back = true,
                _ => {}
            }
            rejoined.len() == 2 && eye_back
        }),
    );
    assert!(ok, "after the restart: rejoined {rejoined:?}, eye back {eye_back}\n{log}\n{}", bzfs.log());
    // Same configuration: callsigns, teams, and the hunters hunt again (they shoot).
    let shots = |host: &BotHost| -> u32 { ids.iter().map(|b| host.status(*b).unwrap().stats.shots).sum() };
    let shots_before = shots(&host);
    let deadline = Instant::now() + Duration::from_secs(45);
    while shots(&host) == shots_before && Instant::now() < deadline {
        turn_until(&mut host, Duration::from_millis(500), &mut log, Box::new(|_| false));
    }
    for (b, (name, team)) in ids.iter().zip(wanted) {
        let s = host.status(*b).unwrap();
        assert_eq!(s.state, BotState::Joined, "{name}: {:?}\n{log}", s.state);
        assert_eq!((s.callsign.as_str(), s.team, rejoined[b]), (name, team, team), "{log}");
    }
    let shots_after = shots(&host);
    assert!(
        shots_after > shots_before,
        "the hunters shoot again after the restart ({shots_before} → {shots_after})\n{log}"
    );
    eprintln!("restart: {log}");
    let new_log = bzfs.log();
    for (name, _) in wanted {
        assert!(new_log.contains(&format!("{name} [")), "{name} rejoined the new server:\n{new_log}");
    }
    host.leave_all();
    let _ = host.run_until(Instant::now() + Duration::from_secs(5));
    assert_clean_log(&old_log);
    assert_clean_log(&bzfs.log());
}

/// A running `bzhead bot ...` with its output collected; killed on drop.
struct BotCli {
    child: Child,
    out: OutputBuf,
}

impl BotCli {
    fn start(args: &[&str]) -> BotCli {
        let mut cmd = bzhead(args);
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start bzhead bot");
        let out = OutputBuf::new();
        out.attach("bot-stdout", child.stdout.take().unwrap());
        out.attach("bot-stderr", child.stderr.take().unwrap());
        BotCli { child, out }
    }
}

impl Drop for BotCli {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn bzhead_bot_says_disconnected_retrying_and_joined_again_when_the_server_restarts() {
    let dir = TempDir::new("restart-cli");
    let mut bzfs = Bzfs::builder().world(open_world(&dir, 100)).start();
    let cli = BotCli::start(&["bot", "hunter,sitter", "--count", "2", "--team", "red,green", &bzfs.host_port()]);
    let out = &cli.out;
    assert!(
        out.wait_until(WAIT * 3, |t| t.contains("*** hunter1: joined as player")
            && t.contains("*** sitter2: joined as player")),
        "{}\n{}",
        out.text(),
        bzfs.log()
    );
    assert_eq!(out.text().matches("--- joined the game as player").count(), 1, "the observer link joined once");

    let mark = out.mark();
    bzfs.kill_now();
    let retrying = |t: &str, bot: &str| {
        t.lines().any(|l| l.starts_with(&format!("*** {bot}: disconnected:")) && l.contains("retrying in"))
    };
    assert!(
        out.wait_until(WAIT, |t| {
            let t = t.get(mark..).unwrap_or_default();
            retrying(t, "hunter1") && retrying(t, "sitter2")
        }),
        "every bot says it lost the server and when it retries:\n{}",
        out.since(mark)
    );
    thread::sleep(Duration::from_millis(1500));
    bzfs.restart(WAIT);
    let back = |t: &str| {
        let t = t.get(mark..).unwrap_or_default();
        t.contains("*** hunter1: joined as player")
            && t.contains("on the red team")
            && t.contains("*** sitter2: joined as player")
            && t.contains("on the green team")
            && t.contains("--- joined the game as player")
    };
    assert!(
        out.wait_until(Duration::from_secs(60), back),
        "the observer link and both bots join the restarted server:\n{}\n{}",
        out.since(mark),
        bzfs.log()
    );
    let since = out.since(mark);
    for l in since.lines().filter(|l| l.contains("joined as player")) {
        let want = if l.contains("hunter1") { "red" } else { "green" };
        assert!(l.contains(&format!("on the {want} team")), "same teams as before: {l}");
    }
    // A clean stop: every bot leaves, a summary per bot, exit code 0.
    let status = std::process::Command::new("kill").args(["-TERM", &cli.child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let mut cli = cli;
    let deadline = Instant::now() + WAIT;
    let code = loop {
        if let Ok(Some(s)) = cli.child.try_wait() {
            break s.code();
        }
        assert!(Instant::now() < deadline, "bzhead bot did not stop:\n{}", cli.out.text());
        thread::sleep(Duration::from_millis(20));
    };
    cli.out.wait_until(Duration::from_secs(2), |_| false);
    assert_eq!(code, Some(0), "{}", cli.out.text());
    assert!(
        cli.out.text().contains("bzhead: hunter1: ") && cli.out.text().contains("bzhead: sitter2: "),
        "{}",
        cli.out.text()
    );
    assert_clean_log(&bzfs.log());
}

// ------------------------------------------------------------------ plugins

#[test]
fn misbehaving_plugins_beside_real_servers_leave_every_other_result_correct() {
    let mut crates = MISBEHAVE_PLUGINS.to_vec();
    crates.extend(["query_teeworlds", "query_quake3"]);
    let plugins = plugin_dir_with("misbehave-real", &crates);
    let bzfs = Bzfs::start();
    let ddnet = GameServer::ddnet("bzhead DDNet misbehave");
    let tw07 = GameServer::teeworlds07("bzhead TW07 misbehave");
    let oa = GameServer::openarena("bzhead OA misbehave", 2);
    let real =
        [("teeworlds", ddnet.addr()), ("teeworlds7", tw07.addr()), ("quake3", oa.addr()), ("bzflag", bzfs.addr())];
    let cfg = || ScanConfig { timeout: Duration::from_millis(400), retries: 1, seed: 9, ..ScanConfig::default() };

    // The real servers alone, for reference.
    let (alone, _) = scan_through(&plugins, &real, cfg());
    let alone = by_addr(&alone);

    // The same, interleaved with every misbehaving protocol (and well-behaved echoes).
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
    let echoes = [echo("127.0.0.1:0", "echo-a"), echo("127.0.0.1:0", "echo-b")];
    let mut targets: Vec<(&str, SocketAddr)> = Vec::new();
    for (i, r) in real.iter().enumerate() {
        targets.push(*r);
        // Misbehaving queries between the real ones, so that they run at the same time.
        for (p, resp) in bad.iter().zip(&responders).skip(i * 3).take(3) {
            targets.push((p, resp.addr()));
        }
    }
    for e in &echoes {
        targets.push(("echo", e.addr()));
    }
    let started = Instant::now();
    let (results, stats) = scan_through(&plugins, &targets, cfg());
    let got = by_addr(&results);
    assert_eq!(got.len(), targets.len(), "one result per target");
    for (p, a) in &real {
        let (v, want) = (&got[a], &alone[a]);
        assert_eq!(v["ok"], true, "{p} beside the misbehaving plugins: {v}");
        for key in ["name", "map", "game_type", "version", "max_players", "players", "bots", "password"] {
            assert_eq!(v[key], want[key], "{p}: {key}: {v} vs {want}");
        }
        if *p != "bzflag" && *p != "quake3" {
            assert_eq!(v["player_list"], want["player_list"], "{p}");
        }
    }
    assert_eq!(got[&oa.addr()]["player_list"].as_array().map(Vec::len), Some(2), "{}", got[&oa.addr()]);
    for (e, name) in echoes.iter().zip(["echo-a", "echo-b"]) {
        assert_eq!(got[&e.addr()]["name"], name, "{}", got[&e.addr()]);
    }
    for (p, r) in bad.iter().zip(&responders) {
        let v = &got[&r.addr()];
        if *p == "panic-on-drop" {
            assert_eq!(v["ok"], true, "{p}: {v}");
        } else {
            assert_eq!(v["ok"], false, "{p}: {v}");
            assert!(matches!(v["error"].as_str(), Some("plugin" | "timeout")), "{p}: {v}");
        }
    }
    assert_eq!(stats.answered, 4 + 2 + 1, "{stats:?}");
    eprintln!("misbehaving plugins beside real servers: {:?}, {stats:?}", started.elapsed());
    let _ = std::io::stderr().flush();
}
