use super::*;
use crate::bot::aim::tests::{boxb, world_with};
use crate::bzflag::msg::Abbv;

#[test]
fn the_observation_length_follows_the_spec() {
    let spec = ObsSpec::default();
    assert_eq!(spec.len(), 11 + 4 * 11 + 4 * 6 + 4 * 6 + 16);
    assert!(spec.validate().is_ok());
    assert!(ObsSpec { rays: MAX_ITEMS + 1, ..spec }.validate().is_err());
    assert!(ObsSpec { ray_range: f32::NAN, ..spec }.validate().is_err());
}

#[test]
fn to_frame_gives_forward_and_left() {
    let half_pi = std::f32::consts::FRAC_PI_2;
    // Facing +y: a point at +y is ahead, one at −x is on the left.
    let ahead = to_frame(Vec2::new(0.0, 5.0), half_pi);
    assert!((ahead.x - 5.0).abs() < 1e-5 && ahead.y.abs() < 1e-5, "{ahead}");
    let left = to_frame(Vec2::new(-3.0, 0.0), half_pi);
    assert!(left.x.abs() < 1e-5 && (left.y - 3.0).abs() < 1e-5, "{left}");
}

#[test]
fn box_actions_are_checked_and_decoded() {
    let a = Action::from_box(&[1.0, -1.0, 0.9, 0.1, 0.6]).unwrap();
    assert_eq!(a, Action { speed: 1.0, turn: -1.0, fire: true, jump: false, drop_flag: true });
    assert!(Action::from_box(&[1.0, 0.0, 0.0, 0.0]).unwrap_err().contains("5 entries"));
    assert!(Action::from_box(&[f32::NAN, 0.0, 0.0, 0.0, 0.0]).unwrap_err().contains("finite"));
    assert!(Action::from_box(&[-0.6, 0.0, 0.0, 0.0, 0.0]).unwrap_err().contains("speed"));
    assert!(Action::from_box(&[0.0, 1.5, 0.0, 0.0, 0.0]).unwrap_err().contains("turn"));
    // Rounding slack is clamped, not refused.
    assert_eq!(Action::from_box(&[1.00001, 0.0, 0.0, 0.0, 0.0]).unwrap().speed, 1.0);
}

#[test]
fn discrete_actions_are_checked_and_decoded() {
    let a = Action::from_discrete(&[0, 4, 1, 0, 0]).unwrap();
    assert_eq!(a, Action { speed: -0.5, turn: 1.0, fire: true, jump: false, drop_flag: false });
    assert!(Action::from_discrete(&[4, 0, 0, 0, 0]).unwrap_err().contains("speed"));
    assert!(Action::from_discrete(&[0, 0, 0, 0, -1]).unwrap_err().contains("drop_flag"));
    assert!(Action::from_discrete(&[0, 0]).is_err());
}

#[test]
fn fire_jump_and_drop_only_on_the_decision_tick() {
    let a = Action { speed: 0.5, turn: 0.25, fire: true, jump: true, drop_flag: true };
    let mut c = Control::default();
    a.apply(&mut c, false);
    assert_eq!((c.speed, c.turn, c.fire, c.jump, c.drop_flag), (0.5, 0.25, false, false, false));
    a.apply(&mut c, true);
    assert!(c.fire && c.jump && c.drop_flag);
}

fn kill(victim: u8, killer: u8) -> Event {
    Event::Kill {
        victim,
        victim_callsign: String::new(),
        killer,
        killer_callsign: String::new(),
        reason: "shot",
        reason_code: 1,
        shot_id: 0,
        flag: Abbv::NONE,
        phydrv: None,
    }
}

#[test]
fn kills_deaths_and_team_kills_are_told_apart() {
    let teams = |id: u8| Some(if id < 10 { Team::Red } else { Team::Green });
    let mut out = Vec::new();
    rewards(&kill(11, 1), 1, Team::Red, teams, &mut out);
    rewards(&kill(2, 1), 1, Team::Red, teams, &mut out);
    rewards(&kill(1, 11), 1, Team::Red, teams, &mut out);
    rewards(&kill(1, 1), 1, Team::Red, teams, &mut out);
    rewards(&kill(12, 11), 1, Team::Red, teams, &mut out);
    let kinds: Vec<_> = out.iter().map(|o| (o.kind, o.other)).collect();
    assert_eq!(
        kinds,
        [(RewardKind::Kill, 11), (RewardKind::TeamKill, 2), (RewardKind::Death, 11), (RewardKind::Death, 1)]
    );
    let w = RewardWeights::default();
    let total: f32 = out.iter().map(|o| o.kind.weight(&w)).sum();
    assert_eq!(total, 1.0 - 1.0 - 1.0 - 1.0);
}

#[test]
fn captures_count_for_the_capturer_and_against_the_flag_s_team() {
    let cap = |player: u8, flag: &str| Event::Capture {
        player,
        callsign: String::new(),
        index: 0,
        abbv: Abbv::new(flag),
        team: Team::Green,
    };
    let mut out = Vec::new();
    rewards(&cap(1, "G*"), 1, Team::Red, |_| None, &mut out);
    rewards(&cap(11, "R*"), 1, Team::Red, |_| None, &mut out);
    rewards(&cap(11, "B*"), 1, Team::Red, |_| None, &mut out);
    let kinds: Vec<_> = out.iter().map(|o| o.kind).collect();
    assert_eq!(kinds, [RewardKind::Capture, RewardKind::CapturedAgainst]);
}

#[test]
fn the_decision_clock_keeps_game_time_and_counts_missed_decisions() {
    let mut c = DecisionClock::new(10.0);
    // 30 Hz ticks: a decision every third tick.
    let due: Vec<bool> = (0..9).map(|k| c.due(k as f32 / 30.0).is_some()).collect();
    assert_eq!(due, [true, false, false, true, false, false, true, false, false]);
    assert_eq!(c.decisions(), 3);
    // The loop was held until 0.65 s: the decision of 0.4 s is taken late, those of 0.5 and 0.6 s are missed;
    // then on time again, a period after the late one.
    assert_eq!(c.due(0.3), Some(0));
    assert_eq!(c.due(0.65), Some(2));
    assert_eq!(c.missed(), 2);
    assert_eq!(c.due(0.65 + 1.0 / 30.0), None);
    assert_eq!(c.due(0.75), Some(0));
}

#[test]
fn rays_see_the_walls_and_buildings_of_the_world_model() {
    // Outer walls at ±100, a box of half-size 10 centred 50 ahead (+x) of a tank at the origin facing +x.
    let world = world_with(100.0, vec![boxb(50.0, 0.0, 10.0, 10.0, 0)]);
    let spec = ObsSpec { rays: 4, ray_range: 200.0, ..ObsSpec::default() };
    let mut out = Vec::new();
    rays(&world, Vec3::ZERO, 0.0, &spec, &mut out);
    // Ahead: the box's near face at x = 40; left, behind, right: the outer walls at 100.
    let want = [40.0 / 200.0, 0.5, 0.5, 0.5];
    for (got, want) in out.iter().zip(want) {
        assert!((got - want).abs() < 1e-3, "{out:?}");
    }
    // Facing +y, the first ray looks at the wall at y = 100 and the last (right) at the box.
    out.clear();
    rays(&world, Vec3::ZERO, std::f32::consts::FRAC_PI_2, &spec, &mut out);
    assert!((out[0] - 0.5).abs() < 1e-3 && (out[3] - 0.2).abs() < 1e-3, "{out:?}");
    // Beyond the range: 1.
    out.clear();
    rays(&world, Vec3::ZERO, std::f32::consts::PI, &ObsSpec { rays: 1, ray_range: 50.0, ..spec }, &mut out);
    assert_eq!(out, [1.0]);
}

#[test]
fn nearest_picks_what_a_stable_sort_puts_first() {
    // Ties (the repeated values) keep the items' order, as the stable sort this replaces did.
    let d = [5.0, 1.0, 3.0, 1.0, 9.0, 0.5, 3.0, 7.0, 1.0, 2.0];
    let mut sorted: Vec<usize> = (0..d.len()).collect();
    sorted.sort_by(|&a, &b| d[a].partial_cmp(&d[b]).unwrap());
    for k in 0..=d.len() + 2 {
        let got = nearest(d.iter().copied(), k);
        assert_eq!(got, sorted[..k.min(d.len())], "k = {k}");
    }
}

#[test]
fn nearest_takes_nan_distances_last_without_panicking() {
    let d = [f32::NAN, 2.0, -f32::NAN, f32::INFINITY, 1.0];
    assert_eq!(nearest(d.iter().copied(), 3), [4, 1, 0]);
    assert_eq!(nearest(d.iter().copied(), 5), [4, 1, 0, 2, 3]);
    assert!(nearest(std::iter::empty(), 4).is_empty());
}
