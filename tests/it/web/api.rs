//! `/api/state` against a real game: the roster of bzfs, and positions that follow what the bots themselves know.

use std::time::{Duration, Instant};

use bzhead::bot::brains::{Capper, Hunter};
use bzhead::bot::{BotConfig, BotHost, BotState, HostConfig};
use bzhead::bzflag::consts::Team;

use super::{api_players, api_state, bzfquery_players, http_get, web_observer};
use crate::support::Bzfs;

#[test]
fn api_state_has_the_roster_and_follows_the_bots_real_motion() {
    let bzfs = Bzfs::builder().ctf().max_players("0,5,5,0,0,6").start();
    let mut host = BotHost::new(HostConfig::default()).expect("host");
    let names = ["runner-red", "runner-green", "hunt-red", "hunt-green"];
    let ids = [
        host.add_bot(
            bzfs.addr(),
            BotConfig { callsign: names[0].into(), team: Team::Red, ..BotConfig::default() },
            Box::new(Capper::new(1)),
        ),
        host.add_bot(
            bzfs.addr(),
            BotConfig { callsign: names[1].into(), team: Team::Green, ..BotConfig::default() },
            Box::new(Capper::new(2)),
        ),
        host.add_bot(
            bzfs.addr(),
            BotConfig { callsign: names[2].into(), team: Team::Red, ..BotConfig::default() },
            Box::new(Hunter::new(3)),
        ),
        host.add_bot(
            bzfs.addr(),
            BotConfig { callsign: names[3].into(), team: Team::Green, ..BotConfig::default() },
            Box::new(Hunter::new(4)),
        ),
    ];
    let (obs, addr) = web_observer(&[bzfs.host_port()], &[]);
    let start = Instant::now();
    let mut errors = Vec::new();
    let mut moving = 0;
    let mut last_poll = Instant::now();
    let mut last_pos: std::collections::HashMap<String, [f64; 2]> = Default::default();
    let mut travelled = 0.0f64;
    let mut roster_checked = false;
    while start.elapsed() < Duration::from_secs(120) && errors.len() < 200 {
        host.turn(Some(Duration::from_millis(20))).expect("turn");
        while host.poll_event().is_some() {}
        if last_poll.elapsed() < Duration::from_millis(250) {
            continue;
        }
        last_poll = Instant::now();
        let joined = ids.iter().all(|&b| host.status(b).is_some_and(|s| s.state == BotState::Joined));
        if !joined {
            continue;
        }
        let state = api_state(addr, 0);
        if !roster_checked && api_players(&state).len() == names.len() {
            let roster = bzfquery_players(&bzfs);
            assert_eq!(api_players(&state), roster, "/api/state vs bzfquery: {state}");
            assert_eq!(state["v"], 1);
            assert_eq!(state["server"], 0);
            assert!(state["world"]["hash"].is_string() && state["world"]["size"].is_number(), "{state}");
            crate::schemas::Schema::load("web-state").check(&state);
            roster_checked = true;
        }
        let size = state["world"]["size"].as_f64().unwrap_or(800.0);
        for (i, &b) in ids.iter().enumerate() {
            let Some(tank) = host.tank(b) else { continue };
            let Some(p) = state["players"].as_array().and_then(|ps| ps.iter().find(|p| p["callsign"] == names[i]))
            else {
                continue;
            };
            for key in ["id", "team", "type", "alive", "azimuth", "vel", "flag", "score", "net"] {
                assert!(p.get(key).is_some(), "player without {key:?}: {p}");
            }
            if !tank.is_alive() || p["alive"] != true {
                continue;
            }
            let pos = [p["pos"][0].as_f64().unwrap(), p["pos"][1].as_f64().unwrap()];
            assert!(
                pos[0].abs() <= size / 2.0 + 1.0 && pos[1].abs() <= size / 2.0 + 1.0,
                "{} outside the world: {p}",
                names[i]
            );
            let own = tank.own_state();
            let e = ((pos[0] - own.pos[0] as f64).powi(2) + (pos[1] - own.pos[1] as f64).powi(2)).sqrt();
            errors.push(e);
            if let Some(prev) = last_pos.insert(names[i].to_string(), pos) {
                let d = ((pos[0] - prev[0]).powi(2) + (pos[1] - prev[1]).powi(2)).sqrt();
                if d > 0.5 {
                    moving += 1;
                    travelled += d;
                }
            }
        }
    }
    // The network figures of each bot (the netstats tracker of the observer's session).
    let state = api_state(addr, 0);
    crate::schemas::Schema::load("web-state").check(&state);
    for name in names {
        let p = state["players"].as_array().and_then(|ps| ps.iter().find(|p| p["callsign"] == name)).cloned();
        let net = p.map(|p| p["net"].clone()).unwrap_or_default();
        assert!(net["updates_per_s"].as_f64().is_some_and(|u| u > 1.0), "{name}: {net}");
        assert!(net["dr_error"]["p95"].is_number(), "{name}: {net}");
        assert!(net.get("lag_ms").is_some() && net.get("jitter_ms").is_some(), "{name}: {net}");
        eprintln!("{name}: {net}");
    }
    host.leave_all();
    let _ = host.run_until(Instant::now() + Duration::from_secs(5));
    assert!(roster_checked, "the roster never matched\n{}", obs.stderr());
    assert!(errors.len() >= 100, "only {} samples\n{}", errors.len(), obs.stderr());
    assert!(moving >= 30 && travelled > 100.0, "the bots hardly moved ({moving} moves, {travelled:.0} units)");
    errors.sort_by(f64::total_cmp);
    let pct = |q: f64| errors[((errors.len() - 1) as f64 * q) as usize];
    eprintln!(
        "/api/state vs the bots' own positions, {} samples: median {:.3}, p90 {:.3}, max {:.3} units",
        errors.len(),
        pct(0.5),
        pct(0.9),
        pct(1.0)
    );
    // The observer reckons each tank from its last update (sent whenever the bot's own prediction is off by more
    // than _positionTolerance), and the request and the bot's pose are read a few milliseconds apart (25 u/s at
    // most): within a unit nearly always; spawns and teleports between two reads allow a few outliers.
    assert!(pct(0.5) < 1.0, "median {}", pct(0.5));
    assert!(pct(0.9) < 2.5, "p90 {}", pct(0.9));
    // Unknown servers are a clean 404.
    let (status, _, _) = http_get(addr, "/api/state?server=7");
    assert_eq!(status, 404);
    let (status, _, _) = http_get(addr, "/api/state?server=x");
    assert_eq!(status, 400);
}

/// A test client that joins as a tank and claims to stand still while every other update puts it 4 units to the
/// side: updates inconsistent with their own motion.
struct Warper {
    me: Option<u8>,
    spawn: Option<glam::Vec3>,
    updates: bzhead::bzflag::play::UpdateSender,
    next: Instant,
    sent: u32,
}

impl Warper {
    fn tick(&mut self, now: Instant, stamp: f32, s: &mut bzhead::bzflag::session::Session) {
        use bzhead::bzflag::consts::PlayerStatus;
        use bzhead::bzflag::play::{OwnState, Physics};
        let (Some(me), Some(spawn)) = (self.me, self.spawn) else { return };
        if now < self.next {
            return;
        }
        self.next = now + Duration::from_millis(100);
        let phys = Physics::new(&s.game().vars, s.game().settings.as_ref());
        let side = if self.sent % 2 == 1 { 4.0 } else { 0.0 };
        let state = OwnState {
            status: PlayerStatus::ALIVE,
            pos: spawn + glam::Vec3::new(side, 0.0, 0.0),
            vel: glam::Vec3::ZERO,
            azimuth: 0.0,
            ang_vel: 0.0,
            phydrv: -1,
            sounds: 0,
            burrow: false,
        };
        let u = self.updates.build(now, me, stamp, &state, &phys, &[]);
        s.send(&bzhead::bzflag::msg::ClientMsg::PlayerUpdate(u));
        self.sent += 1;
    }
}

#[test]
fn a_warping_tank_is_flagged_on_the_api_and_the_page() {
    use bzhead::bot::HostEvent;
    use bzhead::bzflag::event::Event;
    use bzhead::bzflag::session::SessionConfig;
    use bzhead::reactor::SessionOptions;

    let bzfs = Bzfs::builder().ctf().max_players("0,5,5,0,0,6").start();
    let mut host = BotHost::new(HostConfig::default()).expect("host");
    host.add_bot(
        bzfs.addr(),
        BotConfig { callsign: "honest".into(), team: Team::Red, ..BotConfig::default() },
        Box::new(Capper::new(7)),
    );
    let warper_sid = host
        .reactor()
        .add_session(
            bzfs.addr(),
            SessionConfig { callsign: "warper".into(), team: Team::Green, ..SessionConfig::default() },
            SessionOptions::default(),
        )
        .expect("warper");
    let mut warper = Warper {
        me: None,
        spawn: None,
        updates: bzhead::bzflag::play::UpdateSender::new(),
        next: Instant::now(),
        sent: 0,
    };
    let (obs, addr) = web_observer(&[bzfs.host_port()], &[]);
    let start = Instant::now();
    let mut browser: Option<super::chromium::Browser> = None;
    let mut flagged = None;
    let mut page_ok = false;
    let mut last_check = Instant::now();
    while start.elapsed() < Duration::from_secs(120) && !(flagged.is_some() && page_ok) {
        host.turn(Some(Duration::from_millis(10))).expect("turn");
        while let Some(e) = host.poll_event() {
            let HostEvent::Session { session, event, .. } = e else { continue };
            match event {
                Event::Accept { id } if session == warper_sid => {
                    warper.me = Some(id);
                    host.reactor().with_session(warper_sid, |s, _| s.send(&bzhead::bzflag::msg::ClientMsg::Alive));
                }
                Event::Spawn { id, pos, .. } if session == warper_sid && Some(id) == warper.me => {
                    warper.spawn = Some(glam::Vec3::from(pos));
                }
                _ => {}
            }
        }
        let stamp = start.elapsed().as_secs_f32();
        host.reactor().with_session(warper_sid, |s, now| warper.tick(now, stamp, s));
        if last_check.elapsed() < Duration::from_millis(500) {
            continue;
        }
        last_check = Instant::now();
        if flagged.is_none() {
            let state = api_state(addr, 0);
            let w = state["players"].as_array().and_then(|ps| ps.iter().find(|p| p["callsign"] == "warper")).cloned();
            if let Some(why) = w.as_ref().and_then(|w| w["net"]["flagged"].as_str()) {
                flagged = Some(why.to_string());
                eprintln!("warper: {}", w.unwrap_or_default()["net"]);
            }
        } else {
            let b =
                browser.get_or_insert_with(|| super::chromium::Browser::open(&format!("http://{addr}/"), 1200, 800));
            let v = b.eval(
                "[...document.querySelectorAll('#scoreboard tbody tr.warn td.callsign')].map(td => td.textContent).join(',')",
            );
            page_ok = v == "warper";
        }
    }
    host.leave_all();
    let _ = host.run_until(Instant::now() + Duration::from_secs(3));
    let why = flagged.unwrap_or_else(|| panic!("the warper was never flagged on /api/state\n{}", obs.stderr()));
    assert!(why.starts_with("warping"), "{why}");
    assert!(page_ok, "the page did not mark the warper's row (and only it)");
}
