//! Faster than real time: a real `bzfs` under Debian's libfaketime (`FAKETIME='+0 xK'`, see `docs/time-warp.md`)
//! and bots on a reactor whose clock runs K times as fast ([`ReactorOptions::time_scale`]). The same scripted game
//! at k = 1 and k = 8 gives the same kinds of events at k times the rate per wall-second, with no kick and no lag
//! or jitter warning in the server's log (which is started with `-lagwarn`, `-jitterwarn` and their drops, so a
//! client whose clock disagrees with the server's is kicked).

use std::time::{Duration, Instant};

use bzhead::bot::brains;
use bzhead::bot::{BotConfig, BotEvent, BotHost, HostConfig, HostEvent};
use bzhead::bzflag::consts::Team;
use bzhead::bzflag::event::Event;
use bzhead::reactor::{Reactor, ReactorOptions};

use crate::bots::{add_capper_and_sitter, open_world, BAD};
use crate::support::{Bzfs, BzfsBuilder, TempDir};

/// What bzfs logs when a capture comes from a player whose last update was off its base (`captureFlag`).
const CAPTURE_CHEAT: &str = "without reaching";

/// Warnings and drops for lag and jitter: a client on another clock than the server's is kicked within seconds.
const LAG_CHECKS: [&str; 8] = ["-lagwarn", "300", "-lagdrop", "3", "-jitterwarn", "100", "-jitterdrop", "3"];

/// What one game gave.
#[derive(Debug, Default)]
struct Game {
    kills: u32,
    deaths: u32,
    spawns: u32,
    captures: u32,
    /// Game time and wall time of the measured span.
    game: Duration,
    wall: Duration,
    log: String,
}

/// A bzfs at time scale `k` (a plain one at 1) and a bot host on a reactor at `k`.
fn server_and_host(k: f64, builder: BzfsBuilder) -> (Bzfs, BotHost) {
    let builder = builder.args(LAG_CHECKS);
    let bzfs = if k == 1.0 { builder.start() } else { builder.time_scale(k).start() };
    let reactor = Reactor::with_options(ReactorOptions { time_scale: k }).expect("reactor");
    assert_eq!(reactor.time_scale(), k);
    (bzfs, BotHost::with_reactor(reactor, HostConfig::default()))
}

/// Runs the host until `span` of game time has passed since `until_ready` first said so (or `ready_limit` of wall
/// time passed without it), counting what happens to the bots. Panics on a kick, a stop or a disconnect.
fn play(
    host: &mut BotHost,
    bzfs: &Bzfs,
    span: Duration,
    ready_limit: Duration,
    mut until_ready: impl FnMut(&HostEvent) -> bool,
    mut done: impl FnMut(&Game) -> bool,
) -> Game {
    let mut g = Game::default();
    let wall_start = Instant::now();
    let mut started: Option<(Instant, Instant)> = None;
    loop {
        host.turn(Some(Duration::from_millis(50))).expect("turn");
        while let Some(e) = host.poll_event() {
            match &e {
                HostEvent::Bot { event: BotEvent::Stopped { reason }, .. }
                | HostEvent::Bot { event: BotEvent::Disconnected { reason, .. }, .. } => {
                    panic!("a bot lost its game: {reason}\n{}", bzfs.log())
                }
                HostEvent::Game { event: Event::Kicked { reason }, .. } => panic!("the eye was kicked: {reason}"),
                _ => {}
            }
            if started.is_none() && until_ready(&e) {
                started = Some((host.now(), Instant::now()));
            }
            if started.is_none() {
                continue;
            }
            match e {
                HostEvent::Bot { event: BotEvent::Killed { .. }, .. } => g.kills += 1,
                HostEvent::Bot { event: BotEvent::Died { .. }, .. } => g.deaths += 1,
                HostEvent::Bot { event: BotEvent::Spawned { .. }, .. } => g.spawns += 1,
                HostEvent::Bot { event: BotEvent::Captured { .. }, .. } => g.captures += 1,
                _ => {}
            }
        }
        match started {
            None => assert!(wall_start.elapsed() < ready_limit, "the game did not start in {ready_limit:?}"),
            Some((game0, wall0)) => {
                g.game = host.now().saturating_duration_since(game0);
                g.wall = wall0.elapsed();
                if g.game >= span || done(&g) {
                    break;
                }
            }
        }
    }
    host.leave_all();
    let _ = host.run_until(host.now() + Duration::from_secs(5));
    g.log = bzfs.log();
    g
}

/// Hunters (red) against sitters (green) in an open world for `span` of game time at time scale `k`, counted from
/// the moment every bot has spawned once.
fn hunters_and_sitters(k: f64, span: Duration) -> Game {
    let dir = TempDir::new("warp-hunt");
    let builder = Bzfs::builder().max_shots(3).world(open_world(&dir, 100));
    let (bzfs, mut host) = server_and_host(k, builder);
    for (i, kind) in ["hunter", "sitter", "hunter", "sitter"].iter().enumerate() {
        let team = if *kind == "hunter" { Team::Red } else { Team::Green };
        let seed = i as u64 * 7919 + 17;
        let config = BotConfig { callsign: format!("{kind}{i}"), team, seed, ..BotConfig::default() };
        host.add_bot(bzfs.addr(), config, brains::by_name(kind, seed).expect("kind"));
    }
    let mut spawned = std::collections::HashSet::new();
    play(
        &mut host,
        &bzfs,
        span,
        Duration::from_secs(30),
        |e| {
            if let HostEvent::Bot { bot, event: BotEvent::Spawned { .. }, .. } = e {
                spawned.insert(*bot);
            }
            spawned.len() == 4
        },
        |_| false,
    )
}

/// No kick, no refused move, no lag or jitter warning, no capture off the base; every player left by itself.
#[track_caller]
fn assert_clean(log: &str) {
    for bad in BAD.iter().chain(&["jitter", "Jitter", "too high", CAPTURE_CHEAT]) {
        assert!(!log.contains(bad), "bzfs logged {bad:?}:\n{log}");
    }
    for line in log.lines().filter(|l| l.starts_with("Player ") && l.contains(" removed at ")) {
        assert!(line.ends_with(": left"), "a player did not leave by itself: {line}\n{log}");
    }
}

#[test]
fn the_same_game_at_eight_times_real_time_gives_the_same_events_eight_times_as_fast() {
    // 20 game-seconds at k = 1 and 160 at k = 8: about 20 wall-seconds each, played at the same time.
    let slow = std::thread::spawn(|| hunters_and_sitters(1.0, Duration::from_secs(20)));
    let fast = hunters_and_sitters(8.0, Duration::from_secs(160));
    let slow = slow.join().expect("the k = 1 game");
    eprintln!(
        "k=1: {} kills, {} deaths, {} spawns in {:?} game, {:?} wall",
        slow.kills, slow.deaths, slow.spawns, slow.game, slow.wall
    );
    eprintln!(
        "k=8: {} kills, {} deaths, {} spawns in {:?} game, {:?} wall",
        fast.kills, fast.deaths, fast.spawns, fast.game, fast.wall
    );
    assert_clean(&slow.log);
    assert_clean(&fast.log);
    for g in [&slow, &fast] {
        assert!(g.kills > 0 && g.deaths > 0 && g.spawns > 0, "not every kind of event: {g:?}");
    }
    // The clock: game time runs k times as fast as wall time (loosely: turns end a little past the span).
    let pace = |g: &Game| g.game.as_secs_f64() / g.wall.as_secs_f64();
    assert!((0.9..1.1).contains(&pace(&slow)), "k=1 ran at {:.2}x", pace(&slow));
    assert!((6.0..8.8).contains(&pace(&fast)), "k=8 ran at {:.2}x", pace(&fast));
    // The game: kills per wall-second at least 3 times as many at k = 8 (8 if play is the same) ...
    let per_wall = |g: &Game| f64::from(g.kills) / g.wall.as_secs_f64();
    assert!(per_wall(&fast) >= 3.0 * per_wall(&slow), "kills per wall-second: {slow:?} vs {fast:?}");
    // ... and per game-second not far below k = 1's (play does not degrade at 8).
    let per_game = |g: &Game| f64::from(g.kills) / g.game.as_secs_f64();
    assert!(per_game(&fast) >= per_game(&slow) / 3.0, "kills per game-second: {slow:?} vs {fast:?}");
}

#[test]
fn a_capture_at_eight_times_real_time_is_on_the_base_in_the_servers_eyes() {
    let world = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/worlds/ctf-small.bzw");
    let builder = Bzfs::builder().ctf().max_shots(2).max_players("0,3,3,0,0,3").world(world);
    let (bzfs, mut host) = server_and_host(8.0, builder);
    add_capper_and_sitter(&mut host, bzfs.addr());
    // 150 game-seconds (as the k = 1 capper test allows), under 20 wall-seconds.
    let g = play(
        &mut host,
        &bzfs,
        Duration::from_secs(150),
        Duration::from_secs(30),
        |e| matches!(e, HostEvent::Bot { event: BotEvent::Spawned { .. }, .. }),
        |g| g.captures > 0,
    );
    assert!(g.captures > 0, "no capture in {:?} of game time: {g:?}", g.game);
    assert_clean(&g.log);
}
