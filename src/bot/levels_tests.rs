//! The levels and routes of the test worlds in `testdata/worlds/` (`ctf-*.blob` is what
//! `bzfs -c -j -mp 0,3,3,0,0,3 -world ctf-NAME.bzw -cacheout ctf-NAME.blob` wrote for each).

use glam::Vec3;

use super::*;
use crate::bzflag::consts::GameOptions;
use crate::bzflag::play::physics::Physics;
use crate::bzflag::world::{parse_blob, WorldModel};

fn world(name: &str) -> WorldModel {
    let path = format!("{}/testdata/worlds/ctf-{name}.blob", env!("CARGO_MANIFEST_DIR"));
    let blob = std::fs::read(&path).expect("blob");
    WorldModel::build(&parse_blob(&blob).expect("parse")).expect("model")
}

fn phys(jumping: bool) -> Physics {
    let mut p = Physics::default();
    if jumping {
        p.options |= GameOptions::JUMPING;
    }
    p
}

/// The kinds of the hops of the route from `from` to the top of the base of `team`, or `None`.
fn route_kinds(w: &WorldModel, phys: &Physics, from: Vec3, team: u16) -> Option<Vec<HopKind>> {
    let nav = NavGrid::build(w, phys);
    let lv = Levels::build(w, phys, &nav);
    let b = w.bases.iter().find(|b| b.team == team).expect("base");
    let top = b.pos + Vec3::new(0.0, 0.0, b.size.z);
    lv.route(w, &nav, from, top, &[]).map(|r| r.hops.iter().map(|h| h.kind).collect())
}

fn jumps(kinds: &[HopKind]) -> usize {
    kinds.iter().filter(|k| matches!(k, HopKind::Jump { .. })).count()
}

#[test]
fn a_raised_base_is_reached_with_one_jump_and_left_with_a_fall() {
    let w = world("raised");
    let kinds = route_kinds(&w, &phys(true), Vec3::new(-60.0, 80.0, 0.0), 1).expect("a route up");
    assert_eq!(kinds.len(), 1, "{kinds:?}");
    assert_eq!(jumps(&kinds), 1, "{kinds:?}");
    // Off the base: a fall (or a drive) to the ground, and the ground's goal.
    let p = phys(true);
    let nav = NavGrid::build(&w, &p);
    let lv = Levels::build(&w, &p, &nav);
    let r = lv.route(&w, &nav, Vec3::new(-115.0, 0.0, 5.0), Vec3::new(60.0, 80.0, 0.0), &[]).expect("a route down");
    assert!(matches!(r.hops.as_slice(), [h] if h.kind == HopKind::Fall && h.to == GROUND), "{r:?}");
    // Without jumping, the raised base cannot be reached.
    assert_eq!(route_kinds(&w, &phys(false), Vec3::new(-60.0, 80.0, 0.0), 1), None);
}

#[test]
fn a_deck_too_high_for_one_jump_is_climbed_by_its_ramp_of_boxes() {
    let w = world("decks");
    let kinds = route_kinds(&w, &phys(true), Vec3::new(-60.0, 80.0, 0.0), 1).expect("a route up");
    assert!(jumps(&kinds) >= 2, "one step at a time: {kinds:?}");
    let kinds = route_kinds(&w, &phys(true), Vec3::new(60.0, -80.0, 0.0), 2).expect("a route up");
    assert!(jumps(&kinds) >= 2, "{kinds:?}");
}

#[test]
fn the_upper_floor_is_reached_by_its_stairs() {
    let w = world("two-levels");
    let kinds = route_kinds(&w, &phys(true), Vec3::new(-120.0, 60.0, 0.0), 2).expect("a route up");
    assert!(jumps(&kinds) >= 2, "{kinds:?}");
}

#[test]
fn a_tower_is_reached_through_its_teleporter_and_nothing_reaches_one_without() {
    let w = world("teleport");
    let kinds = route_kinds(&w, &phys(true), Vec3::new(-120.0, 60.0, 0.0), 2).expect("a route up");
    assert_eq!(kinds, vec![HopKind::Teleport]);
    let w = world("unreachable");
    assert_eq!(route_kinds(&w, &phys(true), Vec3::new(-60.0, 60.0, 0.0), 2), None);
}

#[test]
fn every_jump_lands_on_its_deck_and_starts_on_its_level() {
    let p = phys(true);
    for name in ["raised", "decks", "two-levels", "teleport"] {
        let w = world(name);
        let nav = NavGrid::build(&w, &p);
        let lv = Levels::build(&w, &p, &nav);
        assert!(lv.hops().len() <= MAX_HOPS && lv.decks().len() <= MAX_DECKS);
        for h in lv.hops().iter().filter(|h| matches!(h.kind, HopKind::Jump { .. })) {
            let d = lv.decks()[h.to - 1];
            assert!(d.contains(h.land, 0.0), "{name}: {h:?} lands off {d:?}");
            let base = if h.from == GROUND { 0.0 } else { lv.decks()[h.from - 1].z };
            assert_eq!(lv.level_at(&w, h.start.extend(base)), Some(h.from), "{name}: {h:?}");
        }
    }
}

/// Building the levels of the captured worlds: `cargo test --release --lib bot::levels -- --ignored --nocapture`.
#[test]
#[ignore]
fn build_times_on_the_captured_worlds() {
    let p = phys(true);
    for name in ["01-ctf-world.bin", "02-custom-world.bin"] {
        let path = format!("{}/testdata/bzflag/{name}", env!("CARGO_MANIFEST_DIR"));
        let w = WorldModel::build(&parse_blob(&std::fs::read(path).expect("capture")).expect("parse")).expect("model");
        let nav = NavGrid::build(&w, &p);
        let t = std::time::Instant::now();
        let lv = Levels::build(&w, &p, &nav);
        let built = t.elapsed();
        let t = std::time::Instant::now();
        let mut found = 0;
        for b in &w.bases {
            for d in lv.decks().iter().take(20) {
                found += usize::from(lv.route(&w, &nav, b.pos, d.centre.extend(d.z), &[]).is_some());
            }
        }
        println!(
            "{name}: {} decks, {} hops, built in {built:?}; {found} routes in {:?}",
            lv.decks().len(),
            lv.hops().len(),
            t.elapsed()
        );
    }
}
