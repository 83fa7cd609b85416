//! Bots on a real `bzfs`: the [`BotHost`] running the library's brains and bots written against the public API
//! only. Every test checks the server's own log for kicks and dropped shots.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bzhead::bot::brains::{self, Capper, Sitter};
use bzhead::bot::{Bot, BotConfig, BotEvent, BotHost, BotId, BotState, Control, HostConfig, HostEvent, ServerId, View};
use bzhead::bzflag::consts::{PlayerStatus, Team};
use bzhead::bzflag::event::Event;
use bzhead::bzflag::msg::wrap_angle;
use bzhead::bzflag::play::RemoteTank;
use bzhead::bzflag::world::TankBox;
use serde_json::Value;

use crate::support::{run_bzhead, Bzadmin, Bzfs, TempDir};

/// Phrases bzfs logs (at `-d -d`) when it kicks a player, refuses its moves or silently drops a shot.
pub const BAD: [&str; 13] = [
    "Kicking",
    "kicked",
    "Autokick",
    "shot lifetime mismatch",
    "shot over speed",
    "too far from tank",
    "duplicated",
    "out of range",
    "Player using wrong shots",
    "out of bounds",
    "wrong end shots",
    "moving too fast",
    "playerid mismatch",
];

#[track_caller]
fn assert_clean_log(bzfs: &Bzfs) {
    let log = bzfs.log();
    for bad in BAD {
        assert!(!log.contains(bad), "bzfs logged {bad:?}:\n{log}");
    }
}

/// A world with nothing in it but its walls (`size` is the BZW half-size).
pub fn open_world(dir: &TempDir, size: u32) -> std::path::PathBuf {
    let path = dir.join("open.bzw");
    std::fs::write(&path, format!("world\n  size {size}\nend\n")).expect("world file");
    path
}

fn world_file(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

/// Runs the host until `done` says so or `limit` passes; panics on a kick or a bot that stops. Returns the
/// events seen.
fn run(host: &mut BotHost, bzfs: &Bzfs, limit: Duration, mut done: impl FnMut(&HostEvent) -> bool) -> Vec<HostEvent> {
    let start = Instant::now();
    let mut seen = Vec::new();
    while start.elapsed() < limit {
        host.turn(Some(Duration::from_millis(50))).expect("turn");
        let mut finished = false;
        while let Some(e) = host.poll_event() {
            match &e {
                HostEvent::Bot { event: BotEvent::Stopped { reason }, .. } => {
                    panic!("a bot stopped: {reason}\n{}", bzfs.log())
                }
                HostEvent::Game { event: Event::Kicked { reason }, .. } => panic!("the eye was kicked: {reason}"),
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

fn leave(host: &mut BotHost) {
    host.leave_all();
    let _ = host.run_until(Instant::now() + Duration::from_secs(5));
}

#[test]
fn two_hunters_kill_each_other_respawn_and_go_on() {
    let dir = TempDir::new("bots-hunters");
    let bzfs = Bzfs::builder().max_shots(3).world(open_world(&dir, 100)).start();
    let witness = Bzadmin::join("witness", bzfs.addr());
    let record = dir.join("eye.rec");
    let mut host = BotHost::new(HostConfig { record: Some(record.clone()), ..HostConfig::default() }).expect("host");
    let ids: Vec<BotId> = ["hunter1", "hunter2"]
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let config = BotConfig { callsign: (*name).into(), seed: i as u64 + 1, ..BotConfig::default() };
            host.add_bot(bzfs.addr(), config, brains::by_name("hunter", i as u64 + 1).expect("hunter"))
        })
        .collect();
    // Three kills, and a spawn after the first death: they respawn and go on.
    let mut kills = 0;
    let mut spawns_after_death = 0;
    let mut died = false;
    let events = run(&mut host, &bzfs, Duration::from_secs(90), |e| {
        match e {
            HostEvent::Bot { event: BotEvent::Killed { .. }, .. } => kills += 1,
            HostEvent::Bot { event: BotEvent::Died { .. }, .. } => died = true,
            HostEvent::Bot { event: BotEvent::Spawned { .. }, .. } if died => spawns_after_death += 1,
            _ => {}
        }
        kills >= 3 && spawns_after_death >= 1
    });
    assert!(kills >= 3 && spawns_after_death >= 1, "kills {kills}, respawns {spawns_after_death}\n{}", bzfs.log());
    assert!(witness.wait_for_output("destroyed by", Duration::from_secs(5)), "{}", witness.output());
    // The scores moved: the server's MsgScore reached the observer link.
    let game = host.server_game(host.server_of(ids[0]).expect("server")).expect("the eye joined");
    let wins: u32 = game.players.values().map(|p| u32::from(p.wins)).sum();
    assert!(wins >= 3, "wins {wins}");
    let live_kills: Vec<(u8, u8, i16)> = events
        .iter()
        .filter_map(|e| match e {
            HostEvent::Game { event: Event::Kill { victim, killer, shot_id, .. }, .. } => {
                Some((*victim, *killer, *shot_id))
            }
            _ => None,
        })
        .collect();
    leave(&mut host);
    assert_clean_log(&bzfs);
    // The observer link's recording replays to the same kills.
    let (meta, records) = bzhead::record::read_records(&record).expect("recording");
    let replayed: Vec<(u8, u8, i16)> = bzhead::record::replay(&meta, &records)
        .into_iter()
        .filter_map(|(_, e)| match e {
            Event::Kill { victim, killer, shot_id, .. } => Some((victim, killer, shot_id)),
            _ => None,
        })
        .collect();
    assert!(
        replayed.len() >= live_kills.len() && replayed[..live_kills.len()] == live_kills[..],
        "{replayed:?} vs {live_kills:?}"
    );
}

/// A red capper (returned) and a green sitter, for `server`.
pub fn add_capper_and_sitter(host: &mut BotHost, server: std::net::SocketAddr) -> BotId {
    let capper = host.add_bot(
        server,
        BotConfig { callsign: "capper".into(), team: Team::Red, ..BotConfig::default() },
        Box::new(Capper::new(7)),
    );
    host.add_bot(
        server,
        BotConfig { callsign: "sitter".into(), team: Team::Green, ..BotConfig::default() },
        Box::new(Sitter),
    );
    capper
}

fn team_wins(out: &str, team: &str) -> Option<u64> {
    let v: Value = serde_json::from_str(out.trim()).ok()?;
    v["raw"]["teams"].as_array()?.iter().find(|t| t["team"] == team).and_then(|t| t["wins"].as_u64())
}

#[test]
fn a_capper_brings_the_enemy_flag_home_and_the_team_score_rises() {
    let bzfs = Bzfs::builder()
        .ctf()
        .max_shots(2)
        .max_players("0,3,3,0,0,3")
        .world(world_file("testdata/worlds/ctf-small.bzw"))
        .start();
    let mut host = BotHost::new(HostConfig::default()).expect("host");
    let capper = add_capper_and_sitter(&mut host, bzfs.addr());
    let before = run_bzhead(["query", "bzflag", "--json", &bzfs.host_port()], Duration::from_secs(10));
    assert_eq!(team_wins(&before.stdout, "red"), Some(0), "{}", before.describe());
    let mut captured = false;
    let started = Instant::now();
    run(&mut host, &bzfs, Duration::from_secs(150), |e| {
        if let HostEvent::Bot { bot, event: BotEvent::Captured { .. }, .. } = e {
            captured |= *bot == capper;
        }
        captured
    });
    let took = started.elapsed();
    assert!(captured, "no capture in 150 s: {:?}\n{}", host.status(capper), bzfs.log());
    eprintln!("capture after {took:?} (joins included)");
    let after = run_bzhead(["query", "bzflag", "--json", &bzfs.host_port()], Duration::from_secs(10));
    assert!(team_wins(&after.stdout, "red").is_some_and(|w| w >= 1), "{}", after.describe());
    leave(&mut host);
    assert_clean_log(&bzfs);
    // The capture came right after an update on our base (bzfs checks the capture against the last update).
    let log = bzfs.log();
    assert!(!log.contains("without reaching"), "bzfs saw the capture off the base:\n{log}");
}

#[test]
fn ten_bots_play_two_minutes_without_a_kick_in_walls_or_outside() {
    let bzfs = Bzfs::builder().jumping().max_shots(3).world(world_file("testdata/bzflag/custom-world.bzw")).start();
    let mut host =
        BotHost::new(HostConfig { join_stagger: Duration::from_millis(100), ..HostConfig::default() }).expect("host");
    let kinds = ["hunter", "hunter", "capper", "defender"];
    let ids: Vec<BotId> = (0..10)
        .map(|i| {
            let kind = kinds[i % kinds.len()];
            let config = BotConfig { callsign: format!("{kind}{i}"), seed: i as u64 + 11, ..BotConfig::default() };
            host.add_bot(bzfs.addr(), config, brains::by_name(kind, i as u64 + 11).expect("kind"))
        })
        .collect();
    let server = host.server_of(ids[0]).expect("server");
    let start = Instant::now();
    let mut stuck_since: HashMap<BotId, Instant> = HashMap::new();
    let mut worst_stuck = Duration::ZERO;
    let mut kills = 0;
    let mut ticks_checked = 0u64;
    while start.elapsed() < Duration::from_secs(120) {
        host.turn(Some(Duration::from_millis(20))).expect("turn");
        while let Some(e) = host.poll_event() {
            match e {
                HostEvent::Bot { event: BotEvent::Stopped { reason }, .. } => {
                    panic!("stopped: {reason}\n{}", bzfs.log())
                }
                HostEvent::Bot { event: BotEvent::Disconnected { reason, .. }, .. } => {
                    panic!("disconnected: {reason}\n{}", bzfs.log())
                }
                HostEvent::Bot { event: BotEvent::Killed { .. }, .. } => kills += 1,
                _ => {}
            }
        }
        let Some(world) = host.server_world(server) else { continue };
        let half = world.world_size / 2.0;
        for &b in &ids {
            let Some(tank) = host.tank(b) else { continue };
            if !tank.is_alive() {
                stuck_since.remove(&b);
                continue;
            }
            ticks_checked += 1;
            let p = tank.pos;
            assert!(p.x.abs() < half && p.y.abs() < half && p.z > -1.0, "{b:?} left the world at {p}");
            let inside = world.tank_collides(&TankBox {
                pos: p + glam::Vec3::new(0.0, 0.0, 0.05),
                angle: tank.azimuth,
                half_length: 2.7,
                half_width: 1.2,
                height: 1.8,
            });
            assert!(
                inside.is_none(),
                "{b:?} is inside {:?} at {p}",
                inside.and_then(|o| world.obstacle(o)).map(|o| o.kind)
            );
            let asked = host.control(b).map_or(0.0, |c| c.speed.abs());
            if asked > 0.4 && tank.vel.truncate().length() < 0.5 && !tank.status.contains(PlayerStatus::FALLING) {
                let since = *stuck_since.entry(b).or_insert_with(Instant::now);
                worst_stuck = worst_stuck.max(since.elapsed());
            } else {
                stuck_since.remove(&b);
            }
        }
    }
    for &b in &ids {
        let s = host.status(b).expect("status");
        assert_eq!(s.state, BotState::Joined, "{}: {:?}", s.callsign, s.state);
        assert!(s.stats.spawns >= 1, "{} never spawned", s.callsign);
    }
    eprintln!("10 bots, 120 s: {kills} kills, {ticks_checked} bot-ticks checked, longest jam {worst_stuck:?}");
    assert!(worst_stuck < Duration::from_secs(5), "a bot was jammed for {worst_stuck:?}");
    leave(&mut host);
    assert_clean_log(&bzfs);
}

/// Drives a fixed programme of lines and arcs (changing controls every 1.5 s).
struct Driver {
    started: Option<f32>,
}

impl Bot for Driver {
    fn tick(&mut self, view: &View<'_>, control: &mut Control) {
        if !view.me.alive() {
            return;
        }
        let t0 = *self.started.get_or_insert(view.time);
        let phase = ((view.time - t0) / 1.5) as usize % 6;
        let (speed, turn) = [(1.0, 0.0), (1.0, 0.5), (0.5, -1.0), (1.0, 0.0), (0.75, 1.0), (-0.5, 0.25)][phase];
        control.drive(speed, turn);
    }
}

/// Watches: stands still.
struct Still;

impl Bot for Still {
    fn tick(&mut self, _view: &View<'_>, control: &mut Control) {
        control.stop();
    }
}

#[test]
fn another_bots_prediction_of_a_driving_bot_stays_within_the_tolerances() {
    let dir = TempDir::new("bots-reckoning");
    let bzfs = Bzfs::builder().world(open_world(&dir, 200)).start();
    let mut host = BotHost::new(HostConfig::default()).expect("host");
    let driver = host.add_bot(
        bzfs.addr(),
        BotConfig { callsign: "driver".into(), team: Team::Red, ..BotConfig::default() },
        Box::new(Driver { started: None }),
    );
    let watcher = host.add_bot(
        bzfs.addr(),
        BotConfig { callsign: "watcher".into(), team: Team::Red, ..BotConfig::default() },
        Box::new(Still),
    );
    let server: ServerId = host.server_of(driver).expect("server");
    let start = Instant::now();
    let mut model = Vec::new();
    let mut received = Vec::new();
    let mut worst_angle = 0.0f32;
    let mut measured = None;
    let mut late = 0;
    while start.elapsed() < Duration::from_secs(40) && model.len() < 900 {
        host.turn(Some(Duration::from_millis(20))).expect("turn");
        while host.poll_event().is_some() {}
        let Some(tick) = host.last_tick().filter(|t| Some(*t) != measured) else { continue };
        measured = Some(tick);
        // Let the observer link receive what the driver sent at that tick (without running another tick), then
        // compare its prediction for the tick's time with where the driver really was.
        let settle = Instant::now() + Duration::from_millis(5);
        while Instant::now() < settle {
            host.reactor().turn(Some(settle.saturating_duration_since(Instant::now()))).expect("turn");
        }
        if host.last_tick() != Some(tick) {
            continue;
        }
        let (Some(id), Some(tank)) = (host.status(driver).and_then(|s| s.id), host.tank(driver)) else { continue };
        if host.status(watcher).is_none_or(|s| s.state != BotState::Joined) || !tank.is_alive() {
            continue;
        }
        let Some(game) = host.server_game(server) else { continue };
        let Some((u, at)) = game.player(id).and_then(|p| p.last_update) else { continue };
        if !u.status.contains(PlayerStatus::ALIVE) {
            continue;
        }
        let r = RemoteTank::new(&u, at, &[]);
        // What the observer really saw: reckoned from when the update arrived (network latency included).
        let seen = r.at(tick, -9.8, 0.0, 5.0).pose;
        received.push((seen.pos - tank.pos).truncate().length());
        // The model needs the driver's newest update (its order is the number of updates it built): a busy
        // machine may deliver it late.
        if host.status(driver).is_none_or(|s| s.stats.updates as i32 != u.order) {
            late += 1;
            continue;
        }
        // The model: the newest update, reckoned from when it was sent (its timestamp is the host's clock).
        let since_sent = (host.clock(tick) - u.timestamp).max(0.0);
        let predicted = r.reckoning.at(since_sent, -9.8, 0.0);
        model.push((predicted.pos - tank.pos).truncate().length());
        worst_angle = worst_angle.max(wrap_angle(predicted.azimuth - tank.azimuth).abs());
    }
    leave(&mut host);
    assert!(
        model.len() > 300,
        "only {} samples ({late} with the newest update still on its way)\n{}",
        model.len(),
        bzfs.log()
    );
    for v in [&mut model, &mut received] {
        v.sort_by(f32::total_cmp);
    }
    let pct = |v: &[f32], q: f64| v[((v.len() - 1) as f64 * q) as usize];
    eprintln!(
        "dead reckoning of a driving bot, {} samples: between updates (from the send time) median {:.4}, p99 {:.4}, \
         worst {:.4} units, worst {:.4} rad; as received (with the network's latency) median {:.4}, p99 {:.4}, worst \
         {:.4}; {late} ticks had the newest update still on its way",
        model.len(),
        pct(&model, 0.5),
        pct(&model, 0.99),
        pct(&model, 1.0),
        worst_angle,
        pct(&received, 0.5),
        pct(&received, 0.99),
        pct(&received, 1.0)
    );
    // The driver sends an update whenever the error exceeds _positionTolerance (0.09 on any axis, so up to
    // 0.127 in the plane) or _angleTolerance (0.05), checked once per tick, and (like the official client) at
    // most 30 a second: nearly always the prediction is within the tolerance, a few hundredths beyond it when the
    // error grew within a tick; only when an update went out just before does a crossing wait one more tick (at
    // worst a tick of the largest change of speed: 1.5 x 25 u/s / 30).
    let tolerance = 0.09 * std::f32::consts::SQRT_2;
    assert!(pct(&model, 0.99) < tolerance + 0.02, "p99 {}", pct(&model, 0.99));
    assert!(pct(&model, 1.0) < 1.5 * 25.0 / 30.0, "worst {}", pct(&model, 1.0));
    assert!(worst_angle < 0.05 + 0.785 / 30.0, "worst angle {worst_angle}");
    // On loopback the updates arrive within milliseconds; a busy machine may hold one back a little.
    assert!(pct(&received, 0.5) < 0.09, "median as received {}", pct(&received, 0.5));
    assert_clean_log(&bzfs);
}

#[test]
fn bots_stay_out_when_the_server_disables_them() {
    let bzfs = Bzfs::builder().args(["-set", "_disableBots", "1"]).start();
    let out = run_bzhead(["bot", "hunter", "--count", "2", "--for", "20", &bzfs.host_port()], Duration::from_secs(30));
    assert_eq!(out.code, Some(4), "{}", out.describe());
    assert!(out.stderr.contains("_disableBots"), "{}", out.describe());
    assert!(!bzfs.log().contains("hunter1 [") || !bzfs.log().contains("hunter1 [1] has joined"), "{}", bzfs.log());
}

/// Records every tick the host ran, to check the control surface from a bot written here.
#[derive(Default)]
struct Probe {
    log: Rc<RefCell<Vec<(f32, bool)>>>,
}

impl Bot for Probe {
    fn tick(&mut self, view: &View<'_>, control: &mut Control) {
        let mut log = self.log.borrow_mut();
        log.push((view.time, view.me.alive()));
        control.drive(0.5, 0.2);
        if log.iter().filter(|(_, alive)| *alive).count() == 30 {
            control.say("hello from a probe");
        }
    }
}

#[test]
fn the_cli_runs_bots_with_json_events_and_leaves_cleanly() {
    let dir = TempDir::new("bots-cli");
    let bzfs = Bzfs::builder().world(open_world(&dir, 100)).start();
    let out = run_bzhead(
        ["bot", "hunter,capper", "--count", "2", "--for", "6", "--json", &bzfs.host_port()],
        Duration::from_secs(30),
    );
    assert!(out.success(), "{}", out.describe());
    let lines: Vec<Value> = out.stdout.lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
    let joined: Vec<&str> = lines
        .iter()
        .filter(|v| v["type"] == "bot" && v["bot_event"] == "joined")
        .filter_map(|v| v["bot"].as_str())
        .collect();
    assert_eq!(joined, vec!["hunter1", "capper2"], "{}", out.stdout);
    assert!(lines.iter().any(|v| v["type"] == "join"), "the observer's events are there too");
    assert!(lines.iter().all(|v| v["v"] == 1 && v["t"].is_number()));
    assert!(bzfs.wait_for_log("hunter1 [", Duration::from_secs(1)));
    assert!(out.stderr.contains("hunter1: ") && out.stderr.contains("kills"), "a summary per bot:\n{}", out.stderr);
    // Left cleanly: bzfs saw MsgExit, not a reset.
    let log = bzfs.log();
    assert!(!log.contains("ECONNRESET"), "{log}");

    // A bot written in the test drives and chats through the same host.
    let probe_log = Rc::new(RefCell::new(Vec::new()));
    let witness = Bzadmin::join("witness", bzfs.addr());
    let mut host = BotHost::new(HostConfig::default()).expect("host");
    host.add_bot(
        bzfs.addr(),
        BotConfig { callsign: "probe".into(), ..BotConfig::default() },
        Box::new(Probe { log: probe_log.clone() }),
    );
    run(&mut host, &bzfs, Duration::from_secs(20), |_| probe_log.borrow().iter().filter(|(_, a)| *a).count() > 60);
    assert!(witness.wait_for_output("hello from a probe", Duration::from_secs(5)), "{}", witness.output());
    leave(&mut host);
    let ticks = probe_log.borrow();
    assert!(ticks.windows(2).all(|w| w[1].0 >= w[0].0), "the clock never goes back");
    assert_clean_log(&bzfs);
}

#[test]
fn bots_leave_when_a_human_needs_the_slot_and_come_back_later() {
    // Two slots per team, red and green: three bots that keep one slot free in each team.
    let bzfs = Bzfs::builder().max_players("0,2,2,0,0,3").start();
    let mut host = BotHost::new(HostConfig { yield_slots: Some(1), ..HostConfig::default() }).expect("host");
    let bots: Vec<BotId> = (0..3)
        .map(|i| {
            let config = BotConfig { callsign: format!("filler{i}"), seed: i + 1, ..BotConfig::default() };
            host.add_bot(bzfs.addr(), config, Box::new(Sitter))
        })
        .collect();
    let count =
        |host: &BotHost, state: BotState| bots.iter().filter(|b| host.status(**b).unwrap().state == state).count();
    // One bot per team; the third yields.
    let mut yielded = 0;
    run(&mut host, &bzfs, Duration::from_secs(30), |e| {
        yielded += matches!(e, HostEvent::Bot { event: BotEvent::Yielded { .. }, .. }) as u32;
        yielded >= 1
    });
    assert_eq!(yielded, 1, "{}", bzfs.log());
    let settle = Instant::now();
    while settle.elapsed() < Duration::from_secs(3) {
        host.turn(Some(Duration::from_millis(50))).expect("turn");
        while host.poll_event().is_some() {}
    }
    assert_eq!((count(&host, BotState::Joined), count(&host, BotState::Yielded)), (2, 1));

    // A human takes a red slot: the red bot makes room.
    let human = host
        .reactor()
        .add_session(
            bzfs.addr(),
            bzhead::bzflag::session::SessionConfig {
                callsign: "human".into(),
                team: Team::Red,
                player_type: bzhead::bzflag::consts::PlayerType::Tank,
                ..Default::default()
            },
            bzhead::reactor::SessionOptions::default(),
        )
        .expect("human");
    let mut human_joined = false;
    let mut red_yielded = false;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(30) && !(human_joined && red_yielded) {
        host.turn(Some(Duration::from_millis(50))).expect("turn");
        while let Some(e) = host.poll_event() {
            match e {
                HostEvent::Session { session, event: Event::Accept { .. }, .. } if session == human => {
                    human_joined = true
                }
                HostEvent::Session { session, event: Event::Closed { reason, .. }, .. } if session == human => {
                    panic!("the human could not stay: {reason}\n{}", bzfs.log())
                }
                HostEvent::Bot { bot, event: BotEvent::Yielded { .. }, .. } => {
                    red_yielded |= host.status(bot).is_some_and(|s| s.callsign.starts_with("filler"));
                }
                _ => {}
            }
        }
    }
    assert!(human_joined && red_yielded, "human joined {human_joined}, a bot yielded {red_yielded}\n{}", bzfs.log());
    assert_eq!(count(&host, BotState::Joined), 1);

    // The human leaves: one bot comes back (after the hold), and the reserve holds again.
    host.reactor().leave(human);
    let mut back = false;
    run(&mut host, &bzfs, Duration::from_secs(40), |e| {
        back |= matches!(e, HostEvent::Bot { event: BotEvent::Joined { .. }, .. });
        back
    });
    assert!(back, "no bot came back\n{}", bzfs.log());
    let settle = Instant::now();
    while settle.elapsed() < Duration::from_secs(3) {
        host.turn(Some(Duration::from_millis(50))).expect("turn");
        while host.poll_event().is_some() {}
    }
    assert_eq!(count(&host, BotState::Joined), 2, "two bots play, one slot free per team");
    leave(&mut host);
    assert_clean_log(&bzfs);
}

/// Recorded with `bzhead bot hunter --count 2 --for 30 --record testdata/recordings/two-hunters.rec` against a
/// bzfs on a 120 x 120 world with one box in the middle (`-ms 3`).
const RECORDED_GAME: &str = "testdata/recordings/two-hunters.rec";

#[test]
fn recorded_kills_are_found_again_offline_by_our_hit_detection() {
    use bzhead::bzflag::msg::{FiringInfo, PlayerUpdate};
    use bzhead::bzflag::play::{check_hits, HitCandidate, LiveShot, Physics, Victim};
    use bzhead::bzflag::world::{parse_blob, WorldModel};

    let (meta, records) = bzhead::record::read_records(&world_file(RECORDED_GAME)).expect("the recording");
    let (events, session) = bzhead::record::replay_session(&meta, &records);
    let world = WorldModel::build(&parse_blob(session.world_blob().expect("world")).expect("blob")).expect("model");
    let game = session.game();
    let mut phys = Physics::new(&game.vars, game.settings.as_ref());
    // The victim judged each hit on its true motion; we only have its motion as others dead-reckoned it, which
    // may be off by up to _positionTolerance on each axis, plus a frame of its motion: a hit that grazed the
    // victim may pass just outside it here. That much slack, no more.
    phys.tank_radius += 0.5;

    let mut teams: HashMap<u8, Team> = HashMap::new();
    let mut motion: HashMap<u8, Vec<(Duration, PlayerUpdate)>> = HashMap::new();
    let mut shots: Vec<(Duration, FiringInfo)> = Vec::new();
    let mut kills = Vec::new();
    for (t, e) in &events {
        match e {
            Event::Join { id, team, .. } => {
                teams.insert(*id, *team);
            }
            Event::Update(u) => motion.entry(u.id).or_default().push((*t, *u)),
            Event::ShotBegin(f) => shots.push((*t, *f)),
            Event::Kill { victim, killer, reason_code: 1, shot_id, .. } => kills.push((*t, *victim, *killer, *shot_id)),
            _ => {}
        }
    }
    assert!(kills.len() >= 3, "{} kills in the recording", kills.len());

    // Where others saw the victim at `t`: its last update received by then, dead-reckoned.
    let base = Instant::now();
    let seen = |id: u8, t: Duration| {
        let (at, u) = motion.get(&id)?.iter().rev().find(|(at, _)| *at <= t)?;
        Some(RemoteTank::new(u, base + *at, &[]).at(base + t, phys.gravity, 0.0, 5.0).pose)
    };
    let dt = Duration::from_micros(16_667);
    // The first time, from `ts` until `until`, that `info` (received at `ts`) hits `victim` as others saw it.
    let first_hit = |info: &FiringInfo, ts: Duration, victim: u8, until: Duration| {
        let shot = LiveShot::new(info, base + ts, &phys, Some(&world));
        let team = teams.get(&victim).copied().unwrap_or(Team::Rogue);
        let mut t = ts;
        while t <= until {
            if let (Some(a), Some(b)) = (seen(victim, t), seen(victim, t + dt)) {
                let v = Victim {
                    id: victim,
                    team,
                    flag: Default::default(),
                    zoned: false,
                    pos: a.pos,
                    vel: (b.pos - a.pos) / dt.as_secs_f32(),
                    azimuth: a.azimuth,
                    crossing: None,
                };
                let c = HitCandidate::over(&shot, base + t, base + t + dt, false);
                if check_hits(&v, [c], dt.as_secs_f32(), &phys).is_some() {
                    return Some(t);
                }
            }
            t += dt;
        }
        None
    };
    // Shots that killed nobody: the detector must find most of them missing (it is no yes-machine).
    let killing: Vec<(u8, i16)> = kills.iter().map(|k| (k.2, k.3)).collect();
    let (mut misses, mut grazes) = (0, 0);
    for (ts, info) in shots.iter().filter(|(_, f)| !killing.contains(&(f.shooter, f.shot_id as i16))) {
        let Some(&other) = motion.keys().find(|id| **id != info.shooter) else { continue };
        // Until the other tank next died (a dead tank is no target), or the shot's life is over.
        let until = kills.iter().find(|k| k.1 == other && k.0 > *ts).map_or(*ts + Duration::from_secs(4), |k| k.0);
        match first_hit(info, *ts, other, until) {
            Some(_) => grazes += 1,
            None => misses += 1,
        }
    }
    eprintln!("{} shot kills found again; of the other shots {misses} miss and {grazes} graze", kills.len());
    assert!(misses > 0 && grazes <= misses, "{misses} misses, {grazes} grazes among the shots that killed nobody");
    for (tk, victim, killer, shot_id) in kills.iter().copied() {
        let (ts, info) = shots
            .iter()
            .rev()
            .find(|(ts, f)| *ts <= tk && f.shooter == killer && f.shot_id == shot_id as u16)
            .copied()
            .unwrap_or_else(|| panic!("no shot {shot_id:#x} of {killer} before the kill at {tk:?}"));
        let found = first_hit(&info, ts, victim, tk + Duration::from_millis(100));
        let at =
            found.unwrap_or_else(|| panic!("shot {shot_id:#x} of {killer} never hits {victim} (killed at {tk:?})"));
        // The victim decided on its true state, we on what others saw of it: the same hit, within a few frames.
        assert!(tk.saturating_sub(at) < Duration::from_millis(250), "hit found at {at:?}, reported at {tk:?}");
    }
}

/// Fetches the nearest loose flag first (every flag is a guided missile in this test), then hunts.
struct FlagFirst {
    hunter: brains::Hunter,
    driver: brains::common::Driver,
}

impl Bot for FlagFirst {
    fn tick(&mut self, view: &View<'_>, control: &mut Control) {
        let me = view.me.pos();
        let loose = view
            .flags()
            .filter(|f| f.status == bzhead::bzflag::consts::FlagStatus::OnGround)
            .min_by(|a, b| a.pos.distance_squared(me).total_cmp(&b.pos.distance_squared(me)));
        match loose {
            Some(f) if view.me.alive() && view.me.tank.flag.is_none() => {
                self.driver.drive_to(view, f.pos.truncate(), control);
            }
            _ => self.hunter.tick(view, control),
        }
    }
}

#[test]
fn a_guided_missile_locks_on_the_hunters_target() {
    let dir = TempDir::new("bots-gm");
    let bzfs = Bzfs::builder().max_shots(3).arg("+f").arg("GM{40}").world(open_world(&dir, 80)).start();
    let mut host = BotHost::new(HostConfig::default()).expect("host");
    let ids: Vec<BotId> = (0..2)
        .map(|i| {
            let config = BotConfig { callsign: format!("gm{i}"), seed: i + 3, ..BotConfig::default() };
            let bot = FlagFirst { hunter: brains::Hunter::new(i + 3), driver: brains::common::Driver::default() };
            host.add_bot(bzfs.addr(), config, Box::new(bot))
        })
        .collect();
    let server = host.server_of(ids[0]).expect("server");
    let start = Instant::now();
    let mut locked = None;
    while start.elapsed() < Duration::from_secs(60) && locked.is_none() {
        host.turn(Some(Duration::from_millis(20))).expect("turn");
        while let Some(e) = host.poll_event() {
            if let HostEvent::Bot { event: BotEvent::Stopped { reason }, .. } = e {
                panic!("{reason}\n{}", bzfs.log());
            }
        }
        let ours: Vec<u8> = ids.iter().filter_map(|b| host.status(*b).and_then(|s| s.id)).collect();
        if let Some(game) = host.server_game(server) {
            locked = game
                .shots
                .values()
                .filter(|s| ours.contains(&s.info.shooter) && s.info.flag.as_string() == "GM")
                .find_map(|s| s.gm_update.map(|(_, _, target)| (s.info.shooter, target)));
        }
    }
    let (shooter, target) = locked.unwrap_or_else(|| panic!("no locked missile in 60 s\n{}", bzfs.log()));
    assert_ne!(shooter, target);
    assert!(
        host.bot_ids().iter().any(|b| host.status(*b).and_then(|s| s.id) == Some(target)),
        "locked on the other bot"
    );
    leave(&mut host);
    assert_clean_log(&bzfs);
}
