//! Bots on capture-the-flag maps of many shapes, on a real `bzfs` with jumping: raised bases (a jump to grab and
//! to capture), bases on decks reached by ramps of boxes, two levels, a flag reached only through a teleporter
//! (`testdata/worlds/ctf-*.bzw`). On each a red capper captures the green flag within a bounded time, nobody is
//! kicked and no bot kills a team mate (bzfs's log and the observer link's kills say so). On a map where the
//! flag cannot be reached, the capper says so.

use std::time::{Duration, Instant};

use bzhead::bot::brains::{Capper, Sitter};
use bzhead::bot::{BotConfig, BotEvent, BotHost, BotId, HostConfig, HostEvent};
use bzhead::bzflag::consts::Team;
use bzhead::bzflag::event::Event;

use crate::bots::BAD;
use crate::support::Bzfs;

fn world_file(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/worlds").join(name)
}

fn ctf_server(world: &str) -> Bzfs {
    Bzfs::builder()
        .ctf()
        .jumping()
        .max_shots(2)
        .max_players("0,3,3,0,0,3")
        .world(world_file(world))
        .ready_timeout(Duration::from_secs(30))
        .start()
}

/// A red capper (and a red hunter that must not shoot it) against a green sitter; runs until the capper
/// captures or `limit` passes. Returns the capper, and every event.
fn play(bzfs: &Bzfs, limit: Duration, mut done: impl FnMut(BotId, &HostEvent) -> bool) -> (BotId, Vec<HostEvent>) {
    let mut host = BotHost::new(HostConfig::default()).expect("host");
    let capper = host.add_bot(
        bzfs.addr(),
        BotConfig { callsign: "capper".into(), team: Team::Red, ..BotConfig::default() },
        Box::new(Capper::new(7)),
    );
    host.add_bot(
        bzfs.addr(),
        BotConfig { callsign: "sitter".into(), team: Team::Green, ..BotConfig::default() },
        Box::new(Sitter),
    );
    let start = Instant::now();
    let mut seen = Vec::new();
    let mut shown = Instant::now();
    'outer: while start.elapsed() < limit {
        host.turn(Some(Duration::from_millis(50))).expect("turn");
        if shown.elapsed() > Duration::from_secs(5) {
            shown = Instant::now();
            if let (Some(t), Some(c)) = (host.tank(capper), host.control(capper)) {
                eprintln!(
                    "{:>5.1} s: capper at {:.1?} flag {} speed {:.2}",
                    start.elapsed().as_secs_f32(),
                    t.pos,
                    t.flag,
                    c.speed
                );
            }
        }
        while let Some(e) = host.poll_event() {
            match &e {
                HostEvent::Bot { event: BotEvent::Stopped { reason }, .. } => {
                    panic!("a bot stopped: {reason}\n{}", bzfs.log())
                }
                HostEvent::Game { event: Event::Kicked { reason }, .. } => panic!("the eye was kicked: {reason}"),
                _ => {}
            }
            let finished = done(capper, &e);
            seen.push(e);
            if finished {
                break 'outer;
            }
        }
    }
    host.leave_all();
    let _ = host.run_until(Instant::now() + Duration::from_secs(5));
    (capper, seen)
}

#[track_caller]
fn assert_fair_play(bzfs: &Bzfs, events: &[HostEvent]) {
    let log = bzfs.log();
    for bad in BAD {
        assert!(!log.contains(bad), "bzfs logged {bad:?}:\n{log}");
    }
    let deaths = events.iter().filter(|e| matches!(e, HostEvent::Game { event: Event::Kill { .. }, .. })).count();
    eprintln!("{deaths} kills in the game");
}

#[track_caller]
fn captures_on(world: &str, limit: Duration) {
    let bzfs = ctf_server(world);
    let started = Instant::now();
    let (capper, events) = play(
        &bzfs,
        limit,
        |capper, e| matches!(e, HostEvent::Bot { bot, event: BotEvent::Captured { .. }, .. } if *bot == capper),
    );
    let captured = events
        .iter()
        .any(|e| matches!(e, HostEvent::Bot { bot, event: BotEvent::Captured { .. }, .. } if *bot == capper));
    let capper_events: Vec<&BotEvent> = events
        .iter()
        .filter_map(|e| match e {
            HostEvent::Bot { bot, event, .. } if *bot == capper => Some(event),
            _ => None,
        })
        .collect();
    assert!(captured, "no capture on {world} in {limit:?}: {capper_events:?}\n{}", bzfs.log());
    eprintln!("{world}: capture after {:?} (joins included)", started.elapsed());
    assert!(
        !capper_events.iter().any(|e| matches!(e, BotEvent::Unreachable { .. })),
        "the capper found something out of reach on {world}: {capper_events:?}"
    );
    assert_fair_play(&bzfs, &events);
}

#[test]
fn a_capper_captures_with_raised_bases_jumping_to_grab_and_to_capture() {
    captures_on("ctf-raised.bzw", Duration::from_secs(240));
}

#[test]
fn a_capper_captures_with_bases_on_decks_up_ramps_of_boxes() {
    captures_on("ctf-decks.bzw", Duration::from_secs(240));
}

#[test]
fn a_capper_captures_on_a_map_of_two_levels() {
    captures_on("ctf-two-levels.bzw", Duration::from_secs(240));
}

#[test]
fn a_capper_captures_a_flag_reached_only_through_a_teleporter() {
    captures_on("ctf-teleport.bzw", Duration::from_secs(240));
}

#[test]
fn a_capper_that_cannot_reach_the_flag_says_so() {
    let bzfs = ctf_server("ctf-unreachable.bzw");
    let (capper, events) = play(
        &bzfs,
        Duration::from_secs(120),
        |capper, e| matches!(e, HostEvent::Bot { bot, event: BotEvent::Unreachable { .. }, .. } if *bot == capper),
    );
    let said = events.iter().find_map(|e| match e {
        HostEvent::Bot { bot, event: BotEvent::Unreachable { goal, what }, .. } if *bot == capper => {
            Some((*goal, what.clone()))
        }
        _ => None,
    });
    let (goal, what) = said.unwrap_or_else(|| panic!("the capper never said the flag is out of reach: {events:?}"));
    assert_eq!(what, "flag");
    // The green flag sits on the tower's top, 30 units up.
    assert!((goal[2] - 30.0).abs() < 1.0 && (goal[0] - 80.0).abs() < 20.0, "{goal:?}");
    assert_fair_play(&bzfs, &events);
}

#[test]
fn three_against_three_with_ricochets_and_no_bot_kills_a_team_mate() {
    let bzfs = Bzfs::builder()
        .ctf()
        .jumping()
        .ricochet()
        .max_shots(3)
        .max_players("0,3,3,0,0,3")
        .world(world_file("ctf-raised.bzw"))
        .ready_timeout(Duration::from_secs(30))
        .start();
    let mut host = BotHost::new(HostConfig::default()).expect("host");
    for (i, kind) in ["capper", "hunter", "defender"].iter().enumerate() {
        for (team, name) in [(Team::Red, "red"), (Team::Green, "green")] {
            let seed = i as u64 * 2 + u64::from(team == Team::Green) + 1;
            let config = BotConfig { callsign: format!("{name}-{kind}"), team, seed, ..BotConfig::default() };
            host.add_bot(bzfs.addr(), config, bzhead::bot::brains::by_name(kind, seed).expect("brain"));
        }
    }
    let start = Instant::now();
    let mut events = Vec::new();
    while start.elapsed() < Duration::from_secs(100) {
        host.turn(Some(Duration::from_millis(50))).expect("turn");
        while let Some(e) = host.poll_event() {
            if let HostEvent::Bot { event: BotEvent::Stopped { reason }, .. } = &e {
                panic!("a bot stopped: {reason}\n{}", bzfs.log());
            }
            events.push(e);
        }
    }
    host.leave_all();
    let _ = host.run_until(Instant::now() + Duration::from_secs(5));
    let team = |callsign: &str| callsign.split('-').next().map(str::to_string);
    let kills: Vec<(String, String, &str)> = events
        .iter()
        .filter_map(|e| match e {
            HostEvent::Game { event: Event::Kill { victim_callsign, killer_callsign, reason, .. }, .. } => {
                Some((killer_callsign.clone(), victim_callsign.clone(), *reason))
            }
            _ => None,
        })
        .collect();
    let team_kills: Vec<_> =
        kills.iter().filter(|(k, v, _)| k != v && team(k).is_some() && team(k) == team(v)).collect();
    let own_goals = kills.iter().filter(|(k, v, _)| k == v).count();
    eprintln!("{} kills ({own_goals} by the victim's own shot): {kills:?}", kills.len());
    assert!(team_kills.is_empty(), "team kills: {team_kills:?}\n{}", bzfs.log());
    assert!(kills.len() >= 2, "hardly a fight: {kills:?}");
    assert_fair_play(&bzfs, &events);
}

/// Drives straight ahead, whatever is in the way (into the outer wall, sooner or later).
struct Ram;

impl bzhead::bot::Bot for Ram {
    fn tick(&mut self, _view: &bzhead::bot::View<'_>, control: &mut bzhead::bot::Control) {
        control.drive(1.0, 0.0);
    }
}

#[test]
fn the_watchdog_reports_a_bot_that_is_asked_to_drive_and_does_not_move_and_backs_it_out() {
    let dir = crate::support::TempDir::new("bots-watchdog");
    let bzfs = Bzfs::builder().world(crate::bots::open_world(&dir, 60)).start();
    let mut host = BotHost::new(HostConfig::default()).expect("host");
    let ram = host.add_bot(bzfs.addr(), BotConfig { callsign: "ram".into(), ..BotConfig::default() }, Box::new(Ram));
    let start = Instant::now();
    let mut stuck = None;
    while start.elapsed() < Duration::from_secs(60) && stuck.is_none() {
        host.turn(Some(Duration::from_millis(50))).expect("turn");
        while let Some(e) = host.poll_event() {
            if let HostEvent::Bot { bot, event: BotEvent::Stuck { pos, seconds }, .. } = e {
                if bot == ram {
                    stuck = Some((pos, seconds));
                }
            }
        }
    }
    let (pos, seconds) = stuck.unwrap_or_else(|| panic!("no stuck report in 60 s\n{}", bzfs.log()));
    assert!(seconds >= 4.0, "{seconds}");
    // Against the wall of a world 120 units across.
    assert!(pos[0].abs().max(pos[1].abs()) > 50.0, "{pos:?}");
    // The watchdog backs it out for a second (then it rams on): it moves away from where it was stuck.
    let before = host.tank(ram).expect("tank").pos;
    let until = Instant::now() + Duration::from_millis(1500);
    let mut farthest = 0.0f32;
    while Instant::now() < until {
        host.turn(Some(Duration::from_millis(20))).expect("turn");
        while host.poll_event().is_some() {}
        farthest = farthest.max(host.tank(ram).expect("tank").pos.distance(before));
    }
    assert!(farthest > 2.0, "did not move: {farthest} from {before}");
    host.leave_all();
    let _ = host.run_until(Instant::now() + Duration::from_secs(5));
    let log = bzfs.log();
    for bad in BAD {
        assert!(!log.contains(bad), "bzfs logged {bad:?}:\n{log}");
    }
}

#[test]
fn two_cappers_of_one_team_capture_together_and_one_carries() {
    let bzfs = ctf_server("ctf-raised.bzw");
    let mut host = BotHost::new(HostConfig::default()).expect("host");
    let cappers: Vec<BotId> = (0..2)
        .map(|i| {
            let config =
                BotConfig { callsign: format!("capper{i}"), team: Team::Red, seed: i + 3, ..BotConfig::default() };
            host.add_bot(bzfs.addr(), config, Box::new(Capper::new(i + 3)))
        })
        .collect();
    host.add_bot(
        bzfs.addr(),
        BotConfig { callsign: "sitter".into(), team: Team::Green, ..BotConfig::default() },
        Box::new(Sitter),
    );
    let start = Instant::now();
    let mut grabbed_by = Vec::new();
    let mut captured = false;
    while start.elapsed() < Duration::from_secs(240) && !captured {
        host.turn(Some(Duration::from_millis(50))).expect("turn");
        while let Some(e) = host.poll_event() {
            match e {
                HostEvent::Bot { bot, event: BotEvent::Grabbed { flag }, .. } if flag.starts_with('G') => {
                    grabbed_by.push(bot);
                }
                HostEvent::Bot { event: BotEvent::Captured { .. }, .. } => captured = true,
                HostEvent::Bot { event: BotEvent::Stopped { reason }, .. } => panic!("a bot stopped: {reason}"),
                _ => {}
            }
        }
    }
    host.leave_all();
    let _ = host.run_until(Instant::now() + Duration::from_secs(5));
    assert!(captured, "no capture in 240 s\n{}", bzfs.log());
    grabbed_by.dedup();
    assert_eq!(grabbed_by.len(), 1, "both cappers grabbed the flag: {grabbed_by:?} of {cappers:?}");
    let log = bzfs.log();
    for bad in BAD {
        assert!(!log.contains(bad), "bzfs logged {bad:?}:\n{log}");
    }
}

/// Green: fetches the red flag, carries it to `drop_at` and drops it there; then it sits still and grabs nothing.
struct Thief {
    driver: bzhead::bot::brains::common::Driver,
    drop_at: glam::Vec3,
    dropping: bool,
    done: bool,
}

impl bzhead::bot::Bot for Thief {
    fn tick(&mut self, view: &bzhead::bot::View<'_>, control: &mut bzhead::bot::Control) {
        let carrying = bzhead::bzflag::session::team_of_flag(view.me.tank.flag) == Some(Team::Red);
        if self.dropping && !carrying {
            self.done = true;
        }
        if self.done || !view.me.alive() {
            control.stop();
            control.grab = !self.done;
            return;
        }
        if carrying {
            if self.dropping || view.me.pos().truncate().distance(self.drop_at.truncate()) < 6.0 {
                control.stop();
                control.drop_flag = true;
                self.dropping = true;
            } else {
                self.driver.drive_to3(view, self.drop_at, control);
            }
        } else if let Some(f) = view.team_flag(Team::Red) {
            self.driver.drive_to3(view, f.pos, control);
        }
    }
}

#[test]
fn a_defender_brings_its_flag_home_from_where_an_enemy_dropped_it() {
    let bzfs = Bzfs::builder()
        .ctf()
        .max_shots(2)
        .max_players("0,3,3,0,0,3")
        .world(world_file("ctf-small.bzw"))
        .ready_timeout(Duration::from_secs(30))
        .start();
    let mut host = BotHost::new(HostConfig::default()).expect("host");
    // A red sitter keeps the red team (and so its flag) in the game; a green thief carries the red flag into the
    // field, 75 units from the red base (-120, 0), and drops it there.
    host.add_bot(
        bzfs.addr(),
        BotConfig { callsign: "sitter".into(), team: Team::Red, ..BotConfig::default() },
        Box::new(Sitter),
    );
    let drop_at = glam::Vec3::new(-70.0, -60.0, 0.0);
    let thief = Thief { driver: Default::default(), drop_at, dropping: false, done: false };
    host.add_bot(
        bzfs.addr(),
        BotConfig { callsign: "thief".into(), team: Team::Green, ..BotConfig::default() },
        Box::new(thief),
    );
    let mut events = Vec::new();
    let mut dropped = None;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(150) && dropped.is_none() {
        host.turn(Some(Duration::from_millis(50))).expect("turn");
        while let Some(e) = host.poll_event() {
            match &e {
                HostEvent::Bot { event: BotEvent::Stopped { reason }, .. } => panic!("a bot stopped: {reason}"),
                HostEvent::Game { event: Event::Drop { callsign, flag, .. }, .. }
                    if callsign == "thief" && flag.abbv.to_string() == "R*" =>
                {
                    dropped = Some(flag.pos);
                }
                _ => {}
            }
            events.push(e);
        }
    }
    let dropped = dropped.unwrap_or_else(|| panic!("the thief did not drop the red flag in 150 s\n{}", bzfs.log()));
    let field = glam::Vec2::new(dropped[0], dropped[1]);
    assert!(field.distance(glam::Vec2::new(-120.0, 0.0)) > 40.0, "dropped at {dropped:?}, near the red base");
    // Now the red defender joins and returns the flag: it grabs it and drops it on the red base.
    let defender = host.add_bot(
        bzfs.addr(),
        BotConfig { callsign: "defender".into(), team: Team::Red, seed: 5, ..BotConfig::default() },
        Box::new(bzhead::bot::brains::Defender::new(5)),
    );
    let mut grabbed = false;
    let mut home = None;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(150) && home.is_none() {
        host.turn(Some(Duration::from_millis(50))).expect("turn");
        while let Some(e) = host.poll_event() {
            match &e {
                HostEvent::Bot { event: BotEvent::Stopped { reason }, .. } => panic!("a bot stopped: {reason}"),
                HostEvent::Bot { bot, event: BotEvent::Grabbed { flag }, .. } if *bot == defender => {
                    grabbed |= flag.starts_with('R');
                }
                HostEvent::Game { event: Event::Drop { callsign, flag, .. }, .. }
                    if callsign == "defender" && flag.abbv.to_string() == "R*" =>
                {
                    home = Some(flag.pos);
                }
                _ => {}
            }
            events.push(e);
        }
    }
    // Home, the flag is left alone: the defender does not pick it up again once it has landed (it flies for
    // a few seconds).
    let mut regrabbed = 0;
    let after = Instant::now();
    while home.is_some() && after.elapsed() < Duration::from_secs(10) {
        host.turn(Some(Duration::from_millis(50))).expect("turn");
        while let Some(e) = host.poll_event() {
            if let HostEvent::Bot { bot, event: BotEvent::Grabbed { flag }, .. } = &e {
                if *bot == defender && flag.starts_with('R') {
                    regrabbed += 1;
                }
            }
            events.push(e);
        }
    }
    host.leave_all();
    let _ = host.run_until(Instant::now() + Duration::from_secs(5));
    assert!(grabbed, "the defender never grabbed its flag: {:?}\n{}", host.status(defender), bzfs.log());
    let home = home.unwrap_or_else(|| panic!("the defender did not drop its flag in 150 s\n{}", bzfs.log()));
    assert_eq!(regrabbed, 0, "the defender picked its flag up again at home");
    // On the red base (15 x 15 around (-120, 0)).
    assert!(
        (home[0] + 120.0).abs() <= 15.5 && home[1].abs() <= 15.5,
        "the defender dropped its flag at {home:?}, not on the red base"
    );
    assert_fair_play(&bzfs, &events);
}
