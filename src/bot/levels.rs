//! Navigation in three dimensions: the levels of a world (the ground and every deck a tank can stand on above
//! it) and the hops between them, and routes that chain drives on one level with hops to the next
//! ([`Levels::route`]).
//!
//! # Model
//!
//! * **Levels.** Level 0 is the ground as the [`NavGrid`] sees it (with the low obstacles a tank bumps onto).
//!   Each box or base whose flat top is higher than `_maxBumpHeight` and has room for a tank is a **deck**
//!   (level `i + 1` for deck `i`). A deck is a rectangle; a tank drives on it in straight lines. A point's level
//!   is the surface under it ([`WorldModel::ground`]): a deck, the ground, or none (in the air, or on a surface
//!   that is not modelled, such as a mesh roof).
//! * **Hops** ([`Hop`]) link two levels; each starts at a point of its level and lands at a point of another:
//!   * *Drive*: off the edge of a deck onto a surface within `_maxBumpHeight` of it, either way;
//!   * *Fall*: off the edge of a deck onto a lower level (a tank survives any fall);
//!   * *Jump*: from a lower level onto a deck, when the server allows jumping and the jump reaches: the
//!     takeoff point, the speed and the arc come from `_jumpVelocity`, `_gravity` and `_tankSpeed`; the tank's
//!     box is tested against the world along the whole arc, so no hop is made that a tank cannot take;
//!   * *Teleport*: into a teleporter face with a single destination, out of that destination (on whatever level
//!     it stands).
//!
//!   Hops are sampled along every side of every deck (the middle, and near both ends of long sides).
//! * **Routes.** [`Levels::route`] runs Dijkstra over the start, the goal and the hops' ends: on the ground two
//!   points are joined when they are in one connected part of the grid (cost: 1.15 × the straight distance), on
//!   a deck always (straight distance). A route is the list of hops to take; between hops the tank drives on
//!   its level. No route means the goal cannot be reached from there at all.
//!
//! # Bounds
//!
//! At most [`MAX_DECKS`] decks and [`MAX_HOPS`] hops are kept (the lowest decks first), and building makes at
//! most [`MAX_PROBES`] collision tests, so building is bounded whatever the world; a route (Dijkstra with a
//! heap) looks at each pair of hop ends on one level at most once. Release build, 2-core machine: the captured
//! 800 × 800 CTF world (24 decks, 960 hops) builds in 3.5 ms and a route takes 0.7 ms
//! (`cargo test --release --lib bot::levels -- --ignored --nocapture`).

use std::cell::Cell;
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};

use glam::{Vec2, Vec3};

use crate::bot::nav::{NavGrid, ANY_PART};
use crate::bzflag::play::physics::Physics;
use crate::bzflag::world::{ObstacleId, ObstacleKind, TankBox, WorldModel};

/// Most decks kept.
pub const MAX_DECKS: usize = 400;
/// Most hops kept.
pub const MAX_HOPS: usize = 1200;
/// Most collision tests while building (the time to build is bounded by them: a crowded world of tall boxes
/// gets the hops found within them, the lowest decks first).
pub const MAX_PROBES: u32 = 300_000;

/// A level: 0 the ground, `i + 1` deck `i`.
pub type Level = usize;

/// The ground level.
pub const GROUND: Level = 0;

/// A flat top a tank can stand on, above bump height.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Deck {
    /// The box or base.
    pub obstacle: ObstacleId,
    /// Centre of the top, in the plane.
    pub centre: Vec2,
    /// Rotation about +z.
    pub angle: f32,
    /// Half-width and half-breadth.
    pub half: Vec2,
    /// Height of the top.
    pub z: f32,
}

impl Deck {
    fn to_local(self, p: Vec2) -> Vec2 {
        let (s, c) = self.angle.sin_cos();
        let d = p - self.centre;
        Vec2::new(c * d.x + s * d.y, -s * d.x + c * d.y)
    }

    fn to_world(self, l: Vec2) -> Vec2 {
        let (s, c) = self.angle.sin_cos();
        self.centre + Vec2::new(c * l.x - s * l.y, s * l.x + c * l.y)
    }

    /// `p` is on the top, `margin` in from its edges.
    pub fn contains(&self, p: Vec2, margin: f32) -> bool {
        let l = self.to_local(p);
        l.x.abs() <= self.half.x - margin && l.y.abs() <= self.half.y - margin
    }
}

/// How a hop is made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HopKind {
    /// Drive over the edge (the levels are within bump height of each other).
    Drive,
    /// Drive off the edge and fall.
    Fall,
    /// Drive from `start` to `go` at `speed` (a fraction of `_tankSpeed`) and jump at `go`.
    Jump {
        /// Speed fraction for the run-up and the flight.
        speed: f32,
    },
    /// Drive from `start` into a teleporter field through `go`.
    Teleport,
}

/// A way from one level to another. See the module documentation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hop {
    /// Level it starts on.
    pub from: Level,
    /// Level it lands on.
    pub to: Level,
    /// Where on `from` it starts (the run-up for a jump, the point in front of a teleporter).
    pub start: Vec2,
    /// Where to drive through from `start`: beyond the edge, the takeoff point, the teleporter's field.
    pub go: Vec2,
    /// Where it lands on `to`.
    pub land: Vec2,
    /// How.
    pub kind: HopKind,
    /// Cost in units of driving.
    pub cost: f32,
}

/// A route: the hops to take, in order, and the goal on the last level.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// Hops in order (empty: the goal is on our level and reached by driving).
    pub hops: Vec<Hop>,
    /// Indices of the hops in [`Levels::hops`].
    pub hop_ids: Vec<usize>,
    /// The goal.
    pub goal: Vec2,
    /// Total cost.
    pub cost: f32,
}

/// The levels of a world and the hops between them. See the module documentation.
#[derive(Debug, Clone, Default)]
pub struct Levels {
    decks: Vec<Deck>,
    by_obstacle: HashMap<ObstacleId, usize>,
    hops: Vec<Hop>,
    /// Ground component of each hop's start and land point (when on the ground).
    comp: Vec<(Option<u32>, Option<u32>)>,
    /// The hops starting on each level.
    by_level: Vec<Vec<usize>>,
    /// Collision tests made while building (see [`MAX_PROBES`]).
    probes: Cell<u32>,
    max_bump: f32,
}

/// A jump being tried: the level and height it starts from, when it crosses the deck's edge and lands, where it
/// should land (units in from the edge) and the run-up.
#[derive(Debug, Clone, Copy)]
struct Jump {
    from: Level,
    base: f32,
    t_cross: f32,
    t_land: f32,
    want: f32,
    run_up: f32,
}

/// A cost in a heap (costs are finite: distances and penalties).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Cost(f32);

impl Eq for Cost {}

impl PartialOrd for Cost {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Cost {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Extra cost of a jump (it can fail, and the tank is a sitting target in the air).
const JUMP_PENALTY: f32 = 25.0;
/// Extra cost of a teleport.
const TELEPORT_PENALTY: f32 = 10.0;
/// Extra cost of falling off.
const FALL_PENALTY: f32 = 3.0;
/// Ground distances count this much more than straight lines (paths bend round obstacles).
const GROUND_DETOUR: f32 = 1.15;
/// Run-up before a jump.
const RUN_UP: f32 = 8.0;

fn tank_box(phys: &Physics, pos: Vec3, angle: f32) -> TankBox {
    TankBox {
        pos,
        angle,
        half_length: 0.5 * phys.tank_length,
        half_width: 0.5 * phys.tank_width,
        height: phys.tank_height,
    }
}

impl Levels {
    /// The decks and hops of `world` for a tank of `phys` (see the module documentation).
    pub fn build(world: &WorldModel, phys: &Physics, nav: &NavGrid) -> Levels {
        let max_bump = phys.max_bump_height.max(0.0);
        let hl = 0.5 * phys.tank_length;
        let hw = 0.5 * phys.tank_width;
        let mut decks: Vec<Deck> = world
            .obstacles
            .iter()
            .enumerate()
            .filter(|(_, o)| matches!(o.kind, ObstacleKind::Box | ObstacleKind::Base))
            .filter(|(_, o)| o.pos.z + o.size.z > max_bump && o.size.x >= hw + 0.5 && o.size.y >= hw + 0.5)
            .map(|(i, o)| Deck {
                obstacle: ObstacleId(i as u32),
                centre: o.pos.truncate(),
                angle: o.angle,
                half: Vec2::new(o.size.x, o.size.y),
                z: o.pos.z + o.size.z,
            })
            .filter(|d| d.z.is_finite() && d.centre.is_finite() && d.half.is_finite())
            .collect();
        decks.sort_by(|a, b| a.z.total_cmp(&b.z));
        decks.truncate(MAX_DECKS);
        // Keep only decks with room for a tank somewhere on top (nothing sits on the whole of them).
        decks.retain(|d| {
            let ang = if d.half.x >= d.half.y { d.angle } else { d.angle + std::f32::consts::FRAC_PI_2 };
            let room = Vec2::new((d.half.x - hl).max(0.0), (d.half.y - hl).max(0.0));
            [(0.0, 0.0), (1.0, 0.0), (-1.0, 0.0), (0.0, 1.0), (0.0, -1.0)].iter().any(|&(x, y)| {
                let p = d.to_world(Vec2::new(x * room.x, y * room.y));
                world.tank_collides(&tank_box(phys, p.extend(d.z + 0.05), ang)).is_none()
            })
        });
        let by_obstacle = decks.iter().enumerate().map(|(i, d)| (d.obstacle, i)).collect();
        let mut levels = Levels {
            decks,
            by_obstacle,
            hops: Vec::new(),
            comp: Vec::new(),
            by_level: Vec::new(),
            probes: Cell::new(0),
            max_bump,
        };
        let jump = phys.jumping_allowed() && phys.jump_velocity > 0.0 && phys.gravity < 0.0;
        for di in 0..levels.decks.len() {
            let d = levels.decks[di];
            for (n, along, half_along, depth) in sides(&d) {
                for t in samples(half_along, hl) {
                    let edge = d.to_world(n * depth + along * t);
                    let nw = d.to_world(n) - d.centre;
                    levels.add_edge_hops(world, phys, nav, di, edge, nw, 2.0 * depth);
                    if jump {
                        levels.add_jump(world, phys, nav, di, edge, nw, 2.0 * depth);
                    }
                }
            }
        }
        levels.add_teleports(world, phys, nav);
        levels.hops.truncate(MAX_HOPS);
        levels.by_level = vec![Vec::new(); levels.decks.len() + 1];
        for (i, h) in levels.hops.iter().enumerate() {
            if let Some(l) = levels.by_level.get_mut(h.from) {
                l.push(i);
            }
        }
        levels.comp = levels
            .hops
            .iter()
            .map(|h| {
                let c = |lvl: Level, p: Vec2| if lvl == GROUND { nav.component(p) } else { None };
                (c(h.from, h.start), c(h.to, h.land))
            })
            .collect();
        levels
    }

    /// Whether a tank there collides with something, while building; once [`MAX_PROBES`] tests were made,
    /// everything counts as blocked (no more hops are made).
    fn blocked(&self, world: &WorldModel, tank: &TankBox) -> bool {
        let n = self.probes.get();
        if n >= MAX_PROBES {
            return true;
        }
        self.probes.set(n + 1);
        world.tank_collides(tank).is_some()
    }

    /// The decks.
    pub fn decks(&self) -> &[Deck] {
        &self.decks
    }

    /// The hops.
    pub fn hops(&self) -> &[Hop] {
        &self.hops
    }

    /// The level of the surface under `p` (`None` in the air more than a unit above it, or on a surface that
    /// is not modelled).
    pub fn level_at(&self, world: &WorldModel, p: Vec3) -> Option<Level> {
        if !p.is_finite() {
            return None;
        }
        let g = world.ground(p + Vec3::new(0.0, 0.0, 0.3));
        if p.z - g.height > 1.0 {
            return None;
        }
        if let Some(i) = g.obstacle.and_then(|o| self.by_obstacle.get(&o)) {
            return Some(i + 1);
        }
        (g.height <= self.max_bump + 0.05).then_some(GROUND)
    }

    /// The level a resting point (a flag, a base) is on: like [`Levels::level_at`], but probing from a little
    /// above it.
    pub fn level_of_goal(&self, world: &WorldModel, p: Vec3) -> Option<Level> {
        self.level_at(world, p + Vec3::new(0.0, 0.0, 0.2))
    }

    fn push(&mut self, hop: Hop) {
        if self.hops.len() < MAX_HOPS && hop.start.is_finite() && hop.land.is_finite() && hop.go.is_finite() {
            self.hops.push(hop);
        }
    }

    /// Drives and falls over one point of a deck's edge (`n` the outward normal, `depth` the deck's extent
    /// along it).
    #[allow(clippy::too_many_arguments)]
    fn add_edge_hops(
        &mut self,
        world: &WorldModel,
        phys: &Physics,
        nav: &NavGrid,
        di: usize,
        edge: Vec2,
        n: Vec2,
        depth: f32,
    ) {
        let d = self.decks[di];
        let hl = 0.5 * phys.tank_length;
        let inside = edge - n * (hl + 1.0).min(0.5 * depth);
        let out = edge + n * (hl + 1.5);
        let heading = n.y.atan2(n.x);
        // The way to the edge on the deck is clear.
        for k in 0..=3 {
            let p = inside.lerp(edge, k as f32 / 3.0);
            if self.blocked(world, &tank_box(phys, p.extend(d.z + 0.05), heading)) {
                return;
            }
        }
        let g = world.ground(out.extend(d.z + self.max_bump));
        let (to, land) = match g.obstacle.and_then(|o| self.by_obstacle.get(&o)) {
            Some(&j) if j != di => (j + 1, out),
            Some(_) => return,
            None if g.height <= self.max_bump + 0.05 => {
                let Some(free) = nav.nearest_free(out).filter(|f| f.distance(out) < 4.0) else { return };
                (GROUND, free)
            }
            None => return,
        };
        if self.blocked(world, &tank_box(phys, out.extend(g.height + 0.05), heading)) {
            return;
        }
        if world.water_level.is_some_and(|w| g.height <= w) {
            return;
        }
        let dz = d.z - g.height;
        let kind = if dz.abs() <= self.max_bump { HopKind::Drive } else { HopKind::Fall };
        if dz < -self.max_bump {
            return;
        }
        let cost = inside.distance(out) + if kind == HopKind::Fall { FALL_PENALTY } else { 0.0 };
        self.push(Hop { from: di + 1, to, start: inside, go: out + n * 1.0, land, kind, cost });
        if kind == HopKind::Drive {
            self.push(Hop { from: to, to: di + 1, start: land + n * 2.0, go: inside, land: inside, kind, cost });
        }
    }

    /// A jump onto deck `di` across the edge point `edge` (outward normal `n`), if one reaches.
    #[allow(clippy::too_many_arguments)]
    fn add_jump(
        &mut self,
        world: &WorldModel,
        phys: &Physics,
        nav: &NavGrid,
        di: usize,
        edge: Vec2,
        n: Vec2,
        depth: f32,
    ) {
        let d = self.decks[di];
        let hl = 0.5 * phys.tank_length;
        let probe = edge + n * (hl + RUN_UP);
        let below = world.ground(probe.extend(d.z - 0.05));
        let from = match below.obstacle.and_then(|o| self.by_obstacle.get(&o)) {
            Some(&j) if j != di => j + 1,
            Some(_) => return,
            None if below.height <= self.max_bump + 0.05 => GROUND,
            None => return,
        };
        let base = below.height;
        let dz = d.z - base;
        if dz <= self.max_bump {
            return;
        }
        let (jv, g) = (phys.jump_velocity, -phys.gravity);
        let clear = dz + 0.4;
        let disc_up = jv * jv - 2.0 * g * clear;
        let disc_land = jv * jv - 2.0 * g * dz;
        if disc_up <= 0.0 || disc_land <= 0.0 || clear > 0.85 * jv * jv / (2.0 * g) {
            return;
        }
        let t_cross = (jv - disc_up.sqrt()) / g;
        let t_land = (jv + disc_land.sqrt()) / g;
        // Land in the middle of the deck if the run-up has room for it, else nearer the edge; the shortest run-up
        // that still lets the tank line up.
        for want in [0.5 * depth, (0.25 * depth).max(hl + 2.0), hl + 2.0] {
            for run_up in [RUN_UP, 4.0, 2.0] {
                let jump = Jump { from, base, t_cross, t_land, want, run_up };
                if let Some(hop) = self.try_jump(world, phys, nav, di, edge, n, depth, jump) {
                    self.push(hop);
                    return;
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn try_jump(
        &self,
        world: &WorldModel,
        phys: &Physics,
        nav: &NavGrid,
        di: usize,
        edge: Vec2,
        n: Vec2,
        depth: f32,
        j: Jump,
    ) -> Option<Hop> {
        let d = self.decks.get(di)?;
        let hl = 0.5 * phys.tank_length;
        let (jv, g) = (phys.jump_velocity, -phys.gravity);
        let Jump { from, base, t_cross, t_land, want, run_up } = j;
        let v = ((want + hl + 0.5) / (t_land - t_cross).max(0.05)).min(phys.tank_speed.max(0.1));
        let x_e = v * t_cross + hl + 0.5;
        let land_in = v * t_land - x_e;
        if land_in < hl * 0.5 || land_in > depth - hl * 0.5 {
            return None;
        }
        let dir = -n;
        let heading = dir.y.atan2(dir.x);
        let takeoff = edge + n * x_e;
        let start = takeoff + n * run_up;
        // The run-up is clear and on the level we start from.
        for k in 0..=4 {
            let p = start.lerp(takeoff, k as f32 / 4.0);
            if self.blocked(world, &tank_box(phys, p.extend(base + 0.05), heading)) {
                return None;
            }
            if self.level_at(world, p.extend(base + 0.05)) != Some(from) {
                return None;
            }
        }
        if from == GROUND && nav.component(start).is_none() {
            return None;
        }
        // The arc is clear all the way, and lands on the deck.
        let steps = ((t_land / 0.04).ceil() as usize).clamp(1, 400);
        for k in 1..steps {
            let t = t_land * k as f32 / steps as f32;
            let p = takeoff + dir * v * t;
            let z = base + jv * t - 0.5 * g * t * t;
            if self.blocked(world, &tank_box(phys, p.extend(z), heading)) {
                return None;
            }
        }
        let land = takeoff + dir * v * t_land;
        if !d.contains(land, 0.5 * phys.tank_width) {
            return None;
        }
        let speed = (v / phys.tank_speed.max(0.1)).clamp(0.05, 1.0);
        let cost = run_up + takeoff.distance(land) + JUMP_PENALTY;
        Some(Hop { from, to: di + 1, start, go: takeoff, land, kind: HopKind::Jump { speed }, cost })
    }

    /// Teleports through faces with one destination.
    fn add_teleports(&mut self, world: &WorldModel, phys: &Physics, nav: &NavGrid) {
        let hl = 0.5 * phys.tank_length;
        for (ti, t) in world.teleporters.iter().enumerate() {
            if t.horizontal {
                continue;
            }
            for face in 0..2u32 {
                let index = 2 * ti as u32 + face;
                let Some(links) = world.links.faces.get(index as usize) else { continue };
                let [target] = links.targets.as_slice() else { continue };
                let Some(dest) = world.teleporters.get((*target / 2) as usize) else { continue };
                let side = |tp: &crate::bzflag::world::TeleporterModel, f: u32| {
                    let s = if f == 0 { 1.0 } else { -1.0 };
                    Vec2::new(tp.angle.cos(), tp.angle.sin()) * s
                };
                let n_in = side(t, face);
                let n_out = side(dest, *target % 2);
                let start = t.pos.truncate() + n_in * (hl + t.size.x + 6.0);
                let go = t.pos.truncate() - n_in * (t.size.x + 1.0);
                let land = dest.pos.truncate() + n_out * (hl + dest.size.x + 4.0);
                let Some(from) = self.level_at(world, start.extend(t.pos.z + 0.05)) else { continue };
                let Some(to) = self.level_at(world, land.extend(dest.pos.z + 0.05)) else { continue };
                if from == GROUND && nav.component(start).is_none() {
                    continue;
                }
                let cost = start.distance(go) + TELEPORT_PENALTY;
                self.push(Hop { from, to, start, go, land, kind: HopKind::Teleport, cost });
            }
        }
    }

    /// Where to drive next on deck `level` (not the ground) on the way from `from` to `to`: `to` itself when the
    /// straight way is clear, else the best corner round what stands in the way (an obstacle standing on the
    /// deck, grown by the tank's radius), preferring one from which `to` is in sight.
    pub fn deck_waypoint(&self, world: &WorldModel, phys: &Physics, level: Level, from: Vec2, to: Vec2) -> Vec2 {
        let Some(d) = level.checked_sub(1).and_then(|i| self.decks.get(i)) else { return to };
        let blockers = self.deck_blockers(world, phys, d, from, to);
        if blockers.is_empty() {
            return to;
        }
        let r = 0.5 * phys.tank_length.hypot(phys.tank_width) + 2.0;
        let mut best: Option<(bool, f32, Vec2)> = None;
        for id in blockers {
            let Some(o) = world.obstacle(id) else { continue };
            let (sn, cs) = o.angle.sin_cos();
            for (x, y) in [(1.0, 1.0), (1.0, -1.0), (-1.0, 1.0), (-1.0, -1.0)] {
                let l = Vec2::new(x * (o.size.x + r), y * (o.size.y + r));
                let c = o.pos.truncate() + Vec2::new(cs * l.x - sn * l.y, sn * l.x + cs * l.y);
                if !d.contains(c, 0.5 * phys.tank_width) || c.distance(from) < 1.0 {
                    continue;
                }
                if !self.deck_blockers(world, phys, d, from, c).is_empty() {
                    continue;
                }
                let sees = self.deck_blockers(world, phys, d, c, to).is_empty();
                let cost = from.distance(c) + c.distance(to);
                if best.is_none_or(|(s, k, _)| (sees && !s) || (sees == s && cost < k)) {
                    best = Some((sees, cost, c));
                }
            }
        }
        best.map_or(to, |(_, _, c)| c)
    }

    /// The obstacles a tank driving straight from `a` to `b` on deck `d` runs into (at most four).
    fn deck_blockers(&self, world: &WorldModel, phys: &Physics, d: &Deck, a: Vec2, b: Vec2) -> Vec<ObstacleId> {
        let len = a.distance(b);
        let heading = (b - a).y.atan2((b - a).x);
        let steps = ((len / 1.5).ceil() as usize).clamp(1, 200);
        let mut found = Vec::new();
        for k in 0..=steps {
            let p = a.lerp(b, k as f32 / steps as f32);
            if let Some(id) = world.tank_collides(&tank_box(phys, p.extend(d.z + 0.05), heading)) {
                if id != d.obstacle && !found.contains(&id) && found.len() < 4 {
                    found.push(id);
                }
            }
        }
        found
    }

    /// The cheapest route for a tank at `from` to `goal` (see the module documentation), avoiding the hops in
    /// `avoid`. `None` when either end is on no level or the goal cannot be reached.
    pub fn route(&self, world: &WorldModel, nav: &NavGrid, from: Vec3, goal: Vec3, avoid: &[usize]) -> Option<Route> {
        let l0 = self.level_at(world, from)?;
        let lg = self.level_of_goal(world, goal)?;
        let (a, b) = (from.truncate(), goal.truncate());
        let comp_of = |lvl: Level, p: Vec2| if lvl == GROUND { nav.component(p) } else { None };
        let (c0, cg) = (comp_of(l0, a), comp_of(lg, b));
        // Vertices: 0 the start, 1 the goal, then each hop's start (2 + 2h) and landing (3 + 2h).
        let nh = self.hops.len();
        let nv = 2 + 2 * nh;
        let at = |v: usize| -> (Level, Vec2, Option<u32>) {
            match v {
                0 => (l0, a, c0),
                1 => (lg, b, cg),
                _ => {
                    let h = &self.hops[(v - 2) / 2];
                    let c = self.comp[(v - 2) / 2];
                    if v % 2 == 0 {
                        (h.from, h.start, c.0)
                    } else {
                        (h.to, h.land, c.1)
                    }
                }
            }
        };
        let joined = |x: (Level, Vec2, Option<u32>), y: (Level, Vec2, Option<u32>)| -> Option<f32> {
            if x.0 != y.0 {
                return None;
            }
            if x.0 == GROUND {
                let same = match (x.2, y.2) {
                    (Some(p), Some(q)) => p == q || p == ANY_PART || q == ANY_PART,
                    _ => false,
                };
                same.then(|| x.1.distance(y.1) * GROUND_DETOUR)
            } else {
                Some(x.1.distance(y.1))
            }
        };
        let mut dist = vec![f32::INFINITY; nv];
        let mut prev = vec![usize::MAX; nv];
        let mut done = vec![false; nv];
        let mut heap = BinaryHeap::new();
        dist[0] = 0.0;
        heap.push(Reverse((Cost(0.0), 0usize)));
        let no_hops: Vec<usize> = Vec::new();
        while let Some(Reverse((Cost(best), u))) = heap.pop() {
            if done[u] {
                continue;
            }
            if u == 1 {
                break;
            }
            done[u] = true;
            let pu = at(u);
            let mut relax = |v: usize, c: f32, heap: &mut BinaryHeap<Reverse<(Cost, usize)>>| {
                if !done[v] && best + c < dist[v] {
                    dist[v] = best + c;
                    prev[v] = u;
                    heap.push(Reverse((Cost(best + c), v)));
                }
            };
            if u >= 2 && u % 2 == 0 {
                // A hop's start: take the hop.
                let h = (u - 2) / 2;
                if !avoid.contains(&h) {
                    relax(u + 1, self.hops[h].cost, &mut heap);
                }
            } else {
                // The start or a landing: drive on the level to the goal or a hop's start.
                if let Some(c) = joined(pu, at(1)) {
                    relax(1, c, &mut heap);
                }
                for &h in self.by_level.get(pu.0).unwrap_or(&no_hops) {
                    if let Some(c) = joined(pu, at(2 + 2 * h)) {
                        relax(2 + 2 * h, c, &mut heap);
                    }
                }
            }
        }
        if !dist[1].is_finite() {
            return None;
        }
        let mut hop_ids = Vec::new();
        let mut v = 1;
        while v != 0 {
            let p = prev[v];
            if p == usize::MAX || hop_ids.len() > nh {
                return None;
            }
            if v >= 2 && v % 2 == 1 && p == v - 1 {
                hop_ids.push((v - 2) / 2);
            }
            v = p;
        }
        hop_ids.reverse();
        Some(Route { hops: hop_ids.iter().map(|&h| self.hops[h]).collect(), hop_ids, goal: b, cost: dist[1] })
    }
}

/// A deck's four sides: outward normal and along direction (local), half-length along, distance to the edge.
fn sides(d: &Deck) -> [(Vec2, Vec2, f32, f32); 4] {
    [
        (Vec2::X, Vec2::Y, d.half.y, d.half.x),
        (-Vec2::X, Vec2::Y, d.half.y, d.half.x),
        (Vec2::Y, Vec2::X, d.half.x, d.half.y),
        (-Vec2::Y, Vec2::X, d.half.x, d.half.y),
    ]
}

/// Where along a side of half-length `half` hops are tried: the middle, and every 20 units or so out to near
/// both ends (at most [`SIDE_SAMPLES`] in all).
fn samples(half: f32, hl: f32) -> Vec<f32> {
    let off = half - hl - 1.5;
    if off <= 4.0 {
        return vec![0.0];
    }
    let each = ((off / 20.0).ceil() as usize).clamp(1, SIDE_SAMPLES / 2);
    let mut v = vec![0.0];
    for k in 1..=each {
        let t = off * k as f32 / each as f32;
        v.push(t);
        v.push(-t);
    }
    v
}

/// Most hop points tried along one side of a deck.
const SIDE_SAMPLES: usize = 10;

#[cfg(test)]
#[path = "levels_tests.rs"]
mod tests;
