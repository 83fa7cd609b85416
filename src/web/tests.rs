use serde_json::json;

use super::*;
use crate::bzflag::play::Physics;

fn view() -> (Reactor, WebView) {
    let reactor = Reactor::new().expect("reactor");
    let servers = vec![("a:5154".to_string(), "127.0.0.1:5154".parse().unwrap())];
    (reactor, WebView::new(&servers, Instant::now()))
}

#[test]
fn the_state_of_a_server_not_joined_yet_has_the_whole_shape() {
    let (reactor, mut v) = view();
    let s = v.api_state(&reactor, 0, Instant::now());
    for key in ["v", "server", "world", "time", "teams", "players", "flags", "shots"] {
        assert!(s.get(key).is_some(), "{key} missing: {s}");
    }
    assert_eq!(s["v"], 1);
    assert_eq!(s["status"], "connecting");
    assert!(s["players"].as_array().unwrap().is_empty());
}

#[test]
fn feed_lines_are_kept_bounded_and_carry_text_not_markup() {
    let (mut reactor, mut v) = view();
    for i in 0..(FEED_LEN + 10) {
        let ev = Event::Chat {
            from: 1,
            from_callsign: "<b>x</b>".into(),
            to: 255,
            to_name: "all".into(),
            action: false,
            text: format!("<script>{i}</script>"),
        };
        v.on_event(&mut reactor, 0, Instant::now(), &ev);
    }
    assert_eq!(v.servers[0].feed.len(), FEED_LEN);
    // The page puts it in with textContent; the JSON keeps it as the text it is.
    let last = serde_json::to_value(v.servers[0].feed.back().unwrap()).unwrap();
    assert_eq!(last["kind"], "chat");
    assert!(last["text"].as_str().unwrap().contains("<script>"));
}

#[test]
fn many_viewers_stretch_both_intervals_to_the_write_budget() {
    let ms = Duration::from_millis;
    let at = |viewers| intervals_for(PUSH_INTERVAL, EVENT_INTERVAL, WRITE_BUDGET, viewers);
    // Few viewers: events at once (at most every 100 ms), motion every 250 ms.
    assert_eq!(at(0), (PUSH_INTERVAL, EVENT_INTERVAL));
    assert_eq!(at(1), (PUSH_INTERVAL, EVENT_INTERVAL));
    assert_eq!(at(6), (PUSH_INTERVAL, EVENT_INTERVAL));
    // From 7 viewers the events wait longer; from 16 the motion too; writes a second stay within the budget.
    assert!(at(7).1 > EVENT_INTERVAL && at(7).0 == PUSH_INTERVAL);
    for viewers in [16, 20, 100, 1000] {
        let (motion, event) = at(viewers);
        assert!(motion > PUSH_INTERVAL && motion == event, "{viewers}: {motion:?} {event:?}");
        let writes_per_s = viewers as f64 / event.as_secs_f64();
        assert!(writes_per_s <= f64::from(WRITE_BUDGET) + 1e-6, "{viewers}: {writes_per_s}");
    }
    assert_eq!(at(20).1.as_millis(), 333);
    // No budget: the intervals as given.
    assert_eq!(intervals_for(ms(50), ms(20), 0, 1000), (ms(50), ms(20)));
}

#[test]
fn numbers_on_the_wire_are_rounded_and_finite() {
    assert_eq!(round2(1.23456), 1.23);
    assert_eq!(round3(f32::NAN), 0.0);
    assert_eq!(v3([f32::INFINITY, 1.0, -0.004]), [0.0, 1.0, -0.0]);
}

fn fired(flag: &str, vel: [f32; 3]) -> crate::bzflag::msg::FiringInfo {
    crate::bzflag::msg::FiringInfo {
        time_sent: 0.0,
        shooter: 3,
        shot_id: 0x0102,
        pos: [0.0, 0.0, 1.57],
        vel,
        dt: 0.0,
        team: Team::Red,
        flag: crate::bzflag::msg::Abbv::new(flag),
        lifetime: 3.5,
    }
}

#[test]
fn shots_on_the_wire_carry_their_path_and_missiles_their_pose_and_target() {
    use crate::bzflag::play::LiveShot;
    let phys = Physics::default();
    let now = Instant::now();
    // A plain shot: its path as [t0, t1, x, y, vx, vy] segments.
    let shot = LiveShot::new(&fired("", [100.0, 0.0, 0.0]), now, &phys, None);
    let v = serde_json::to_value(state::ShotOut { shot: &shot, now, phys: &phys }).unwrap();
    assert_eq!(v["key"], "3:258");
    assert_eq!(v["segs"], json!([[0.0, 3.5, 0.0, 0.0, 100.0, 0.0]]));
    assert!(v.get("gm").is_none(), "{v}");
    // A guided missile flown on towards a target: its pose, target, turn rate and speed, for the page to fly on.
    let mut gm = LiveShot::new(&fired("GM", [0.0, 100.0, 0.0]), now, &phys, None);
    if let Some(m) = gm.missile.as_mut() {
        m.target = 7;
    }
    gm.update_missile(0.5, Some(glam::Vec3::new(40.0, 40.0, 1.57)), &phys, None);
    let v = serde_json::to_value(state::ShotOut { shot: &gm, now, phys: &phys }).unwrap();
    let g = v["gm"].as_array().expect("gm").iter().map(|x| x.as_f64().unwrap()).collect::<Vec<_>>();
    assert_eq!(g.len(), 9, "{v}");
    assert!(g[1] > 10.0, "flew north: {v}");
    assert!(g[3] < std::f64::consts::FRAC_PI_2 - 0.01, "turned towards the target (east of north): {v}");
    assert_eq!((g[5], g[8]), (7.0, 0.5), "{v}");
    assert_eq!(g[6], round3(phys.gm_turn_angle));
    assert!(v["segs"][0][0].as_f64() == Some(0.5) && v["expired"] == false, "{v}");
}
