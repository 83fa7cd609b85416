//! Per-player network diagnostics (`bzhead::bzflag::netstats`) and `observe --netstats` / `--reconnect` against a
//! real `bzfs`: honest bots' dead-reckoning error stays near the server's position tolerance, a tank that
//! sends updates inconsistent with its motion is flagged, `/lagstats` is parsed, the JSON lines come with the
//! documented shape and cadence, and an observer comes back after the server is stopped (SIGTERM) or killed
//! (SIGKILL) and restarted.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use bzhead::bot::{Bot, BotConfig, BotHost, Control, HostConfig, HostEvent, View};
use bzhead::bzflag::consts::{PlayerStatus, Team};
use bzhead::bzflag::event::Event;
use bzhead::bzflag::msg::ClientMsg;
use bzhead::bzflag::netstats::PlayerNet;
use bzhead::bzflag::play::{OwnState, Physics, UpdateSender};
use bzhead::bzflag::session::SessionConfig;
use bzhead::reactor::SessionOptions;
use glam::Vec3;
use serde_json::Value;

use crate::bots::{open_world, BAD};
use crate::support::{bzhead, Bzfs, OutputBuf, TempDir};

/// Drives lines and arcs, easing its controls towards a new programme step every 1.5 s (at most 1.5 per second:
/// a tank's speed changes at once in BZFlag, and an abrupt change shows as an error up to a tick of it at the
/// next update, which is the sender's timing and not the network). Beyond 120 units from the centre it turns
/// home and drives back to within 60 (sliding along a wall, a tank moves otherwise than its velocity says).
struct Driver {
    started: Option<f32>,
    phase: usize,
    homing: bool,
    speed: f32,
    turn: f32,
}

impl Driver {
    fn new(phase: usize) -> Driver {
        Driver { started: None, phase, homing: false, speed: 0.0, turn: 0.0 }
    }
}

impl Bot for Driver {
    fn tick(&mut self, view: &View<'_>, control: &mut Control) {
        if !view.me.alive() {
            return;
        }
        let p = view.me.pos().truncate();
        if p.length() > 120.0 {
            self.homing = true;
        } else if p.length() < 60.0 {
            self.homing = false;
        }
        let (speed, turn) = if self.homing {
            let off = bzhead::bzflag::msg::wrap_angle((-p.y).atan2(-p.x) - view.me.azimuth());
            if off.abs() > 0.1 {
                (0.6, off.signum())
            } else {
                (1.0, 0.0)
            }
        } else {
            let t0 = *self.started.get_or_insert(view.time);
            let phase = (((view.time - t0) / 1.5) as usize + self.phase) % 4;
            [(1.0, 0.0), (1.0, 0.5), (0.6, -0.8), (0.8, 0.3)][phase]
        };
        let step = 1.5 * view.dt.clamp(0.0, 0.1);
        self.speed += (speed - self.speed).clamp(-step, step);
        self.turn += (turn - self.turn).clamp(-step, step);
        control.drive(self.speed, self.turn);
    }
}

/// A test client that joins as a tank and claims to stand still while every other update puts it 4 units to the
/// side: updates inconsistent with their own motion, built with the crate's play API.
struct Warper {
    me: Option<u8>,
    spawn: Option<Vec3>,
    updates: UpdateSender,
    next: Instant,
    sent: u32,
}

impl Warper {
    fn tick(&mut self, now: Instant, stamp: f32, s: &mut bzhead::bzflag::session::Session) {
        let (Some(me), Some(spawn)) = (self.me, self.spawn) else { return };
        if now < self.next {
            return;
        }
        self.next = now + Duration::from_millis(100);
        let phys = Physics::new(&s.game().vars, s.game().settings.as_ref());
        let side = if self.sent % 2 == 1 { 4.0 } else { 0.0 };
        let state = OwnState {
            status: PlayerStatus::ALIVE,
            pos: spawn + Vec3::new(side, 0.0, 0.0),
            vel: Vec3::ZERO,
            azimuth: 0.0,
            ang_vel: 0.0,
            phydrv: -1,
            sounds: 0,
            burrow: false,
        };
        let u = self.updates.build(now, me, stamp, &state, &phys, &[]);
        s.send(&ClientMsg::PlayerUpdate(u));
        self.sent += 1;
    }
}

fn by_callsign(obs: &bzhead::bzflag::session::Session, now: Instant, callsign: &str) -> Option<PlayerNet> {
    let p = obs.game().players.values().find(|p| p.callsign == callsign)?;
    obs.net_stats().player(p.id, now)
}

#[test]
fn honest_bots_stay_near_the_position_tolerance_and_a_warping_tank_is_flagged() {
    let dir = TempDir::new("netstats-warp");
    let bzfs = Bzfs::builder().world(open_world(&dir, 200)).start();
    let mut host = BotHost::new(HostConfig::default()).expect("host");
    for (k, name) in ["driver1", "driver2"].into_iter().enumerate() {
        host.add_bot(
            bzfs.addr(),
            BotConfig { callsign: name.into(), team: Team::Red, ..BotConfig::default() },
            Box::new(Driver::new(2 * k)),
        );
    }
    let obs = host
        .reactor()
        .add_session(
            bzfs.addr(),
            SessionConfig { callsign: "netwatch".into(), ..SessionConfig::default() },
            SessionOptions::default(),
        )
        .expect("observer");
    let warper_sid = host
        .reactor()
        .add_session(
            bzfs.addr(),
            SessionConfig { callsign: "warper".into(), team: Team::Green, ..SessionConfig::default() },
            SessionOptions::default(),
        )
        .expect("warper");
    let mut warper = Warper { me: None, spawn: None, updates: UpdateSender::new(), next: Instant::now(), sent: 0 };
    let start = Instant::now();
    let mut asked_lag = None;
    let enough = |n: &Option<PlayerNet>, samples: usize| n.as_ref().is_some_and(|n| n.dr_error.samples >= samples);
    let (mut d1, mut d2, mut w) = (None, None, None);
    // Generous: the machine is shared and debug builds are slow.
    while start.elapsed() < Duration::from_secs(90) {
        host.turn(Some(Duration::from_millis(10))).expect("turn");
        while let Some(e) = host.poll_event() {
            let HostEvent::Session { session, event, .. } = e else { continue };
            match event {
                Event::Accept { id } if session == warper_sid => {
                    warper.me = Some(id);
                    host.reactor().with_session(warper_sid, |s, _| s.send(&ClientMsg::Alive));
                }
                Event::Spawn { id, pos, .. } if session == warper_sid && Some(id) == warper.me => {
                    warper.spawn = Some(Vec3::from(pos));
                }
                Event::Closed { reason, .. } => panic!("a session closed: {reason}\n{}", bzfs.log()),
                _ => {}
            }
        }
        let stamp = start.elapsed().as_secs_f32();
        host.reactor().with_session(warper_sid, |s, now| warper.tick(now, stamp, s));
        let now = Instant::now();
        let Some(o) = host.reactor().session(obs) else { continue };
        (d1, d2, w) = (by_callsign(o, now, "driver1"), by_callsign(o, now, "driver2"), by_callsign(o, now, "warper"));
        if enough(&d1, 60) && enough(&d2, 60) && enough(&w, 20) {
            match asked_lag {
                None => {
                    host.reactor().request_lag_stats(obs);
                    asked_lag = Some(now);
                }
                Some(at) if w.as_ref().is_some_and(|w| w.lag_ms.is_some()) || now > at + Duration::from_secs(10) => {
                    break
                }
                Some(_) => {}
            }
        }
    }
    let (Some(d1), Some(d2), Some(w)) = (d1, d2, w) else { panic!("a player was never seen\n{}", bzfs.log()) };
    let obs_net = host.reactor().net_stats(obs).expect("observer").clone();
    let own_lag = obs_net.own_lag_ms(Instant::now());
    host.leave_all();
    let _ = host.run_until(Instant::now() + Duration::from_secs(3));
    eprintln!("driver1 {d1:?}\ndriver2 {d2:?}\nwarper {w:?}\nour own lag {own_lag:?} ms");
    let tol = f64::from(obs_net.position_tolerance());
    let honest = f64::from(obs_net.honest_bound());
    for d in [&d1, &d2] {
        assert!(d.dr_error.samples >= 60, "{d:?}\n{}", bzfs.log());
        // The tolerance is per axis, so an error in the plane where they drive is within it up to √2 × it. A
        // sender only updates once its error is past the tolerance (or after a second), checking once a tick: so
        // the error at the next update is the tolerance plus what it grew in the sender's last tick. Half the
        // samples are within the tolerance itself (a few hundredths of slack for that growth) ...
        let (p50, p95) = (d.dr_error.p50.expect("p50"), d.dr_error.p95.expect("p95"));
        assert!(p50 <= tol * std::f64::consts::SQRT_2 + 0.03, "p50 {p50} beyond _positionTolerance {tol}: {d:?}");
        // ... and 95 % within the tolerance plus one throttled step of the largest change of speed, the bound the
        // warp flag doubles.
        assert!(p95 <= honest, "p95 {p95} beyond the honest bound {honest}: {d:?}");
        assert_eq!(d.flagged, None, "{d:?}");
        assert_eq!((d.out_of_order, d.missing), (0, 0), "{d:?}");
        assert!(d.jitter_ms.is_some_and(|j| j < 50.0), "{d:?}");
        assert!(d.updates_per_s > 0.5, "{d:?}");
    }
    assert!(w.dr_error.p95.is_some_and(|p| p > 3.5), "{w:?}");
    let why = w.flagged.as_deref().unwrap_or_default();
    assert!(why.starts_with("warping"), "the warper is not flagged: {w:?}");
    // bzfs answers /lagstats for human players and observers (the bots join as robots).
    assert!(w.lag_ms.is_some() && own_lag.is_some(), "no /lagstats figures: {w:?}, ours {own_lag:?}");
    let log = bzfs.log();
    for bad in BAD {
        assert!(!log.contains(bad), "bzfs logged {bad:?}:\n{log}");
    }
}

/// `bzhead observe` as a child, its stdout collected.
struct Observe {
    child: Child,
    out: OutputBuf,
}

impl Observe {
    fn start(args: &[&str]) -> Observe {
        let mut child =
            bzhead(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("bzhead");
        let out = OutputBuf::new();
        out.attach("stdout", child.stdout.take().expect("stdout"));
        out.attach("stderr", child.stderr.take().expect("stderr"));
        Observe { child, out }
    }

    fn lines(&self) -> Vec<Value> {
        self.out.text().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }

    fn count(&self, ty: &str) -> usize {
        self.lines().iter().filter(|v| v["type"] == ty).count()
    }

    fn wait_count(&self, ty: &str, n: usize, timeout: Duration) -> bool {
        let pat = format!("\"type\":\"{ty}\"");
        self.out.wait_for_count(&pat, n, timeout)
    }

    fn wait_exit(&mut self, timeout: Duration) -> Option<i32> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(s)) = self.child.try_wait() {
                return s.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Observe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs bots on `bzfs` from a thread of their own until `stop` is set.
fn bots_in_background(
    addr: std::net::SocketAddr,
    names: &[&str],
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<()> {
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    std::thread::spawn(move || {
        let mut host = BotHost::new(HostConfig::default()).expect("host");
        for (k, n) in names.iter().enumerate() {
            host.add_bot(
                addr,
                BotConfig { callsign: n.clone(), team: Team::Red, ..BotConfig::default() },
                Box::new(Driver::new(k)),
            );
        }
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let _ = host.turn(Some(Duration::from_millis(20)));
            while host.poll_event().is_some() {}
        }
        host.leave_all();
        let _ = host.run_until(Instant::now() + Duration::from_secs(2));
    })
}

#[test]
fn observe_prints_netstats_lines_with_the_documented_shape_and_cadence() {
    let dir = TempDir::new("netstats-cli");
    let bzfs = Bzfs::builder().world(open_world(&dir, 200)).start();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let bots = bots_in_background(bzfs.addr(), &["roller1", "roller2"], stop.clone());
    let cache = dir.join("cache");
    let cache = cache.to_string_lossy();
    let mut obs = Observe::start(&["observe", "--json", "--netstats", "2", "--cache-dir", &cache, &bzfs.host_port()]);
    // Two bots: two lines every 2 s; wait for five rounds with both in (generous for a loaded machine).
    let ok = obs.out.wait_until(Duration::from_secs(90), |text| {
        let lines: Vec<Value> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        let rounds: std::collections::BTreeSet<String> = lines
            .iter()
            .filter(|v| v["type"] == "netstats" && v["updates"].as_u64().is_some_and(|n| n > 0))
            .map(|v| v["t"].to_string())
            .collect();
        rounds.len() >= 5
    });
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = bots.join();
    let _ = obs.child.kill();
    assert!(ok, "no netstats lines:\n{}", obs.out.tail(40));
    let lines = obs.lines();
    let net: Vec<&Value> = lines.iter().filter(|v| v["type"] == "netstats").collect();
    for v in &net {
        assert_eq!(v["v"], 1, "{v}");
        assert!(v["t"].is_number() && v["id"].is_u64(), "{v}");
        assert!(["roller1", "roller2"].contains(&v["callsign"].as_str().unwrap_or_default()), "{v}");
        assert!(v["updates_per_s"].is_number(), "{v}");
        for k in ["jitter_ms", "lag_ms", "flagged", "since_last_ms"] {
            assert!(v.get(k).is_some(), "{k} missing: {v}");
        }
        for k in ["p50", "p95", "max"] {
            assert!(v["dr_error"].get(k).is_some(), "dr_error.{k} missing: {v}");
        }
        assert!(v["out_of_order"].is_u64() && v["missing"].is_u64(), "{v}");
    }
    // Cadence: the lines come in rounds 2 s apart (to the millisecond the loop woke), one per player each.
    let mut rounds: Vec<f64> = net.iter().filter_map(|v| v["t"].as_f64()).collect();
    rounds.dedup();
    for pair in rounds.windows(2) {
        let gap = pair[1] - pair[0];
        assert!((1.9..=2.6).contains(&gap), "rounds {rounds:?}");
    }
    let last = rounds.last().copied().unwrap_or_default();
    let in_last: Vec<&&Value> = net.iter().filter(|v| v["t"].as_f64() == Some(last)).collect();
    assert_eq!(in_last.len(), 2, "{in_last:?}");
    // Honest rollers are not flagged, and their error and figures are filled in once they have moved.
    for v in in_last {
        assert!(v["flagged"].is_null(), "{v}");
        assert!(v["dr_error"]["p95"].is_number() && v["jitter_ms"].is_number(), "{v}");
    }
    // Each round starts with a line about our own link: the server's lag figure for us and our own round trip
    // of the /lagstats request.
    let links: Vec<&Value> = lines.iter().filter(|v| v["type"] == "link").collect();
    assert!(links.len() >= rounds.len(), "{}", obs.out.tail(40));
    let link = links.last().copied().unwrap_or(&Value::Null);
    assert!(link["lag_ms"].is_number() && link["command_rtt_ms"].is_number() && link["udp"] == true, "{link}");
    // The /lagstats replies feed the figures and are not printed as chat.
    assert!(
        !lines.iter().any(|v| v["type"] == "chat" && v["text"].as_str().is_some_and(|t| t.contains(" : "))),
        "{}",
        obs.out.tail(40)
    );
    // 0 turns them off.
    let mut quiet = Observe::start(&[
        "observe",
        "--json",
        "--netstats",
        "0",
        "--for",
        "5",
        "--cache-dir",
        &cache,
        &bzfs.host_port(),
    ]);
    assert_eq!(quiet.wait_exit(Duration::from_secs(60)), Some(0), "{}", quiet.out.tail(20));
    assert_eq!(quiet.count("netstats"), 0);
    assert_eq!(quiet.count("accept"), 1);
}

/// Sends a signal (`TERM`, `STOP`, `CONT`) to a process.
fn signal(pid: u32, sig: &str) {
    let status =
        std::process::Command::new("kill").args([&format!("-{sig}"), &pid.to_string()]).status().expect("kill");
    assert!(status.success(), "kill -{sig} {pid}");
}

#[test]
fn observe_reconnects_across_a_bzfs_stop_and_a_crash_and_goes_on_printing() {
    let dir = TempDir::new("netstats-reconnect");
    let mut bzfs = Bzfs::builder().world(open_world(&dir, 200)).start();
    let cache = dir.join("cache");
    let cache = cache.to_string_lossy();
    let mut obs = Observe::start(&[
        "observe",
        "--json",
        "--reconnect",
        "--netstats",
        "1",
        "--show",
        "all",
        "--hide",
        "update,flag,team,set_var",
        "--cache-dir",
        &cache,
        &bzfs.host_port(),
    ]);
    assert!(obs.wait_count("accept", 1, Duration::from_secs(60)), "{}", obs.out.tail(20));
    // (Not right after the join: a kill within half a second of the server's welcome text would read as a kick.)
    std::thread::sleep(Duration::from_secs(2));

    // A clean stop: bzfs kills every player with a reason-less MsgSuperKill, then exits.
    let pid = bzfs.pid();
    signal(pid, "TERM");
    let deadline = Instant::now() + Duration::from_secs(20);
    while bzfs.is_running() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(obs.wait_count("reconnecting", 1, Duration::from_secs(30)), "{}", obs.out.tail(20));
    // Down for a while: the attempts back off.
    std::thread::sleep(Duration::from_secs(2));
    bzfs.restart(Duration::from_secs(30));
    assert!(obs.wait_count("reconnected", 1, Duration::from_secs(60)), "{}", obs.out.tail(30));
    assert!(obs.wait_count("accept", 2, Duration::from_secs(10)), "{}", obs.out.tail(30));

    // A crash: SIGKILL, no goodbye; the connection just closes.
    bzfs.kill_now();
    assert!(obs.wait_count("reconnecting", 3, Duration::from_secs(30)), "{}", obs.out.tail(20));
    bzfs.restart(Duration::from_secs(30));
    assert!(obs.wait_count("reconnected", 2, Duration::from_secs(60)), "{}", obs.out.tail(30));

    // And it goes on printing: a bot joins the new server and is reported, with its netstats.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let bots = bots_in_background(bzfs.addr(), &["afterwards"], stop.clone());
    let seen = obs.out.wait_until(Duration::from_secs(60), |t| {
        t.lines().any(|l| l.contains("\"type\":\"netstats\"") && l.contains("\"callsign\":\"afterwards\""))
    });
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = bots.join();
    assert!(seen, "{}", obs.out.tail(30));
    obs.child.stdin.take().map(|mut s| std::io::Write::write_all(&mut s, b"/quit\n"));
    assert_eq!(obs.wait_exit(Duration::from_secs(20)), Some(0), "{}", obs.out.tail(20));

    let lines = obs.lines();
    // Every line (the reconnection's own among them) validates against docs/schemas/event.schema.json.
    let events = crate::schemas::Schema::load("event");
    for v in &lines {
        events.check(v);
    }
    for t in ["reconnecting", "reconnected", "netstats", "link"] {
        assert!(lines.iter().any(|v| v["type"] == t), "no {t:?} line");
    }
    let rec: Vec<&Value> = lines.iter().filter(|v| v["type"] == "reconnecting").collect();
    // The first attempt after each loss waits 0.5 s, the next ones longer.
    assert_eq!(rec[0]["attempt"], 1);
    assert_eq!(rec[0]["in_ms"], 500);
    for pair in rec.windows(2) {
        let (a, b) = (pair[0]["attempt"].as_u64().unwrap_or(0), pair[1]["attempt"].as_u64().unwrap_or(0));
        if b > 1 {
            assert_eq!(b, a + 1, "{rec:?}");
            assert!(pair[1]["in_ms"].as_u64() > pair[0]["in_ms"].as_u64(), "{rec:?}");
        }
    }
    for v in lines.iter().filter(|v| v["type"] == "reconnected") {
        assert!(v["attempt"].as_u64().is_some_and(|a| a >= 1) && v["down_ms"].is_u64(), "{v}");
    }
}

#[test]
fn a_kick_with_a_reason_is_final_even_with_reconnect() {
    let dir = TempDir::new("netstats-kick");
    let bzfs = Bzfs::builder().world(open_world(&dir, 200)).args(["-passwd", "sesame"]).start();
    let cache = dir.join("cache");
    let cache = cache.to_string_lossy();
    let mut victim = Observe::start(&[
        "observe",
        "--json",
        "--reconnect",
        "--callsign",
        "victim",
        "--cache-dir",
        &cache,
        &bzfs.host_port(),
    ]);
    assert!(victim.wait_count("accept", 1, Duration::from_secs(60)), "{}", victim.out.tail(20));
    // An admin kicks it with bzfs's own /kick, through a real bzadmin.
    let mut admin = crate::support::Bzadmin::join("admin", bzfs.addr());
    assert!(admin.wait_joined(Duration::from_secs(30)));
    admin.send_line("/password sesame");
    std::thread::sleep(Duration::from_millis(500));
    admin.send_line("/kick victim testing kicks");
    assert_eq!(victim.wait_exit(Duration::from_secs(30)), Some(5), "{}\n{}", victim.out.tail(20), bzfs.log());
    assert_eq!(victim.count("reconnecting"), 0, "{}", victim.out.tail(20));
    assert_eq!(victim.count("kicked"), 1, "{}", victim.out.tail(20));
}

#[test]
fn observe_reconnects_when_the_server_goes_silent() {
    let dir = TempDir::new("netstats-silent");
    let bzfs = Bzfs::builder().world(open_world(&dir, 200)).start();
    let cache = dir.join("cache");
    let cache = cache.to_string_lossy();
    let mut obs = Observe::start(&[
        "observe",
        "--json",
        "--reconnect",
        "--idle-timeout",
        "2",
        "--hello-timeout",
        "2",
        "--netstats",
        "0",
        "--cache-dir",
        &cache,
        &bzfs.host_port(),
    ]);
    assert!(obs.wait_count("accept", 1, Duration::from_secs(60)), "{}", obs.out.tail(20));
    // The server stops (SIGSTOP): the connection stays open and nothing comes. Past the idle limit the observer
    // gives up on it; the next attempts connect (the kernel still accepts) but get no hello.
    signal(bzfs.pid(), "STOP");
    let silent = obs.wait_count("reconnecting", 2, Duration::from_secs(60));
    signal(bzfs.pid(), "CONT");
    assert!(silent, "{}", obs.out.tail(20));
    assert!(obs.wait_count("reconnected", 1, Duration::from_secs(90)), "{}", obs.out.tail(20));
    let lines = obs.lines();
    let first = lines.iter().find(|v| v["type"] == "reconnecting").expect("reconnecting");
    assert!(first["reason"].as_str().is_some_and(|r| r.contains("timed out")), "{first}");
    obs.child.stdin.take().map(|mut s| std::io::Write::write_all(&mut s, b"/quit\n"));
    assert_eq!(obs.wait_exit(Duration::from_secs(20)), Some(0), "{}", obs.out.tail(20));
}

#[test]
fn leaving_while_waiting_to_reconnect_is_a_clean_end() {
    let dir = TempDir::new("netstats-away");
    let mut bzfs = Bzfs::builder().world(open_world(&dir, 200)).start();
    let cache = dir.join("cache");
    let cache = cache.to_string_lossy();
    let mut obs =
        Observe::start(&["observe", "--json", "--reconnect", "--for", "8", "--cache-dir", &cache, &bzfs.host_port()]);
    assert!(obs.wait_count("accept", 1, Duration::from_secs(60)), "{}", obs.out.tail(20));
    bzfs.kill_now();
    assert!(obs.wait_count("reconnecting", 1, Duration::from_secs(30)), "{}", obs.out.tail(20));
    // The server stays down; --for ends the command while it waits to come back.
    assert_eq!(obs.wait_exit(Duration::from_secs(30)), Some(0), "{}", obs.out.tail(20));
    assert!(!obs.out.text().contains("bzhead: the server closed"), "{}", obs.out.tail(20));
}

/// Four hunters fighting (dodging, turning at once, dying and respawning) on a real bzfs for 40 s: however far
/// their abrupt moves put their error past the tolerance, none is taken for a warper or a lagger.
#[test]
fn fighting_hunters_are_not_flagged() {
    let dir = TempDir::new("netstats-hunters");
    let bzfs = Bzfs::builder().max_shots(3).world(open_world(&dir, 100)).start();
    let mut host = BotHost::new(HostConfig::default()).expect("host");
    let names = ["hunter1", "hunter2", "hunter3", "hunter4"];
    for (i, name) in names.iter().enumerate() {
        let config = BotConfig { callsign: (*name).into(), seed: i as u64 + 1, ..BotConfig::default() };
        host.add_bot(bzfs.addr(), config, bzhead::bot::brains::by_name("hunter", i as u64 + 1).expect("hunter"));
    }
    let obs = host
        .reactor()
        .add_session(
            bzfs.addr(),
            SessionConfig { callsign: "netwatch".into(), ..SessionConfig::default() },
            SessionOptions::default(),
        )
        .expect("observer");
    let start = Instant::now();
    let mut kills = 0;
    let mut flagged = Vec::new();
    let mut last_check = start;
    while start.elapsed() < Duration::from_secs(40) {
        host.turn(Some(Duration::from_millis(20))).expect("turn");
        while let Some(e) = host.poll_event() {
            if let HostEvent::Session { session, event: Event::Kill { .. }, .. } = e {
                if session == obs {
                    kills += 1;
                }
            }
        }
        // Checked every second along the way, not only at the end.
        let now = Instant::now();
        if now.duration_since(last_check) >= Duration::from_secs(1) {
            last_check = now;
            if let Some(n) = host.reactor().net_stats(obs) {
                flagged.extend(n.snapshot(now).into_iter().filter(|p| p.flagged.is_some()));
            }
        }
    }
    let now = Instant::now();
    let figures = host.reactor().net_stats(obs).expect("observer").snapshot(now);
    host.leave_all();
    let _ = host.run_until(Instant::now() + Duration::from_secs(3));
    for p in &figures {
        eprintln!("{p:?}");
    }
    assert_eq!(figures.iter().filter(|p| p.dr_error.samples >= 20).count(), 4, "{figures:?}\n{}", bzfs.log());
    assert!(kills >= 1, "the hunters did not fight: {figures:?}");
    assert!(flagged.is_empty(), "honest hunters flagged: {flagged:?}");
}

/// A recording made with `--netstats` replays to the same events: the `/lagstats` requests are recorded as such,
/// so their replies are taken in the replay as they were live (not shown as chat).
#[test]
fn a_recording_with_netstats_replays_to_the_same_events() {
    let dir = TempDir::new("netstats-record");
    let bzfs = Bzfs::builder().world(open_world(&dir, 200)).start();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let bots = bots_in_background(bzfs.addr(), &["taped"], stop.clone());
    let cache = dir.join("cache");
    let cache = cache.to_string_lossy();
    let rec = dir.join("netstats.rec");
    let rec = rec.to_string_lossy();
    let mut live = Observe::start(&[
        "observe",
        "--json",
        "--netstats",
        "1",
        "--for",
        "6",
        "--record",
        &rec,
        "--cache-dir",
        &cache,
        &bzfs.host_port(),
    ]);
    let code = live.wait_exit(Duration::from_secs(60));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = bots.join();
    assert_eq!(code, Some(0), "{}", live.out.tail(20));
    let replayed = crate::support::run_bzhead(["replay", "--json", &*rec], Duration::from_secs(60));
    assert!(replayed.success(), "{}", replayed.describe());
    let kinds = |lines: Vec<Value>| -> Vec<String> {
        lines
            .iter()
            .filter(|v| !["netstats", "link"].contains(&v["type"].as_str().unwrap_or_default()))
            .map(|v| format!("{} {}", v["type"], v["text"]))
            .collect()
    };
    let live_kinds = kinds(live.lines());
    let replay_kinds = kinds(replayed.stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect());
    assert_eq!(live_kinds, replay_kinds);
    assert!(live.count("link") >= 4, "{}", live.out.tail(20));
    // The server answered (our own line at least), and no answer showed as chat.
    let link = live.lines().into_iter().rfind(|v| v["type"] == "link").unwrap_or(Value::Null);
    assert!(link["lag_ms"].is_number(), "{link}");
    assert!(!live_kinds.iter().any(|k| k.starts_with("\"chat\"") && k.contains(" : ")), "{live_kinds:?}");
}
