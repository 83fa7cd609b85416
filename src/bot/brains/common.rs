//! What every brain is made of: a [`Driver`] that follows planned paths (replanning as the goal moves, backing
//! out when stuck), a [`Gunner`] that picks targets, leads them and pulls the trigger only when the real shot at
//! our heading meets the target's predicted track, and [`evade`], which steers out of the way of shots.

use glam::{Vec2, Vec3};

use crate::bot::aim::{self, FiringSolution};
use crate::bot::levels::{HopKind, Level, Route, GROUND};
use crate::bot::nav::PathFollower;
use crate::bot::{Control, TankView, View};
use crate::bzflag::msg::wrap_angle;

/// A small deterministic random source (xorshift64*), so that a bot's choices are repeatable for a seed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// Seeded (0 is replaced by a constant).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (x >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.unit()
    }
}

/// The turn fraction that closes a heading error of `err` radians in about one tick without overshooting.
pub fn turn_towards(view: &View<'_>, err: f32) -> f32 {
    let per_tick = view.phys.tank_ang_vel.max(1.0e-3) * view.dt.clamp(1.0 / 120.0, 0.1);
    (err / per_tick).clamp(-1.0, 1.0)
}

/// Whether our tank was alive last tick, so a brain can forget its plans once when the tank dies.
#[derive(Debug, Clone, Copy, Default)]
pub struct Life {
    was_alive: bool,
}

impl Life {
    /// True while our tank is dead (then `control` is stopped); `on_death` runs once, on the first dead tick.
    pub fn dead(&mut self, view: &View<'_>, control: &mut Control, on_death: impl FnOnce()) -> bool {
        if view.me.alive() {
            self.was_alive = true;
            return false;
        }
        if std::mem::take(&mut self.was_alive) {
            on_death();
        }
        control.stop();
        true
    }
}

/// Follows planned paths to a goal. See the module documentation.
#[derive(Debug, Clone, Default)]
pub struct Driver {
    follower: Option<PathFollower>,
    goal: Option<Vec2>,
    planned_at: f32,
    slow_since: Option<f32>,
    unstick_until: f32,
    unstick_turn: f32,
    unstick_speed: f32,
    unstick_tries: u32,
    failed_at: Option<f32>,
    climb: Climb,
}

/// The three-dimensional side of a [`Driver`]: the route over the levels and the hop under way.
#[derive(Debug, Clone, Default)]
struct Climb {
    route: Option<Route>,
    goal: Option<Vec3>,
    level: Option<Level>,
    planned_at: f32,
    phase: Phase,
    phase_at: f32,
    /// Hops that failed lately, with when: the plans avoid them for [`AVOID_FOR`] seconds.
    avoid: Vec<(usize, f32)>,
    unreachable: Option<Vec3>,
    /// Drive straight on until then (out of a teleporter: the tank comes out in the doorway).
    coast_until: f32,
    /// The last waypoint on a deck: where, towards what, when.
    deck_wp: Option<(Vec2, Vec2, f32)>,
}

/// Where a bot is in its next hop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Phase {
    /// Driving on our level to the hop's start.
    #[default]
    Approach,
    /// Driving from the start through the hop's `go` point (jumping there for a jump).
    Go,
    /// In the air after a jump.
    Air,
}

/// Seconds a failed hop is left out of the plans.
const AVOID_FOR: f32 = 30.0;
/// Seconds to get to a hop's start, and through it, before it counts as failed.
const APPROACH_LIMIT: f32 = 30.0;
const GO_LIMIT: f32 = 6.0;

/// What backing out of a jam tries, in turn (speed, and whether to turn): reversing while turning frees most
/// jams, but not a tank that backed into a wall or a corner, which may not even turn there; then ahead, turning
/// on the spot, ahead while turning.
const UNSTICK: [(f32, bool); 4] = [(-0.5, true), (0.7, false), (0.0, true), (0.7, true)];

/// Seconds a planned path is trusted before it is planned again.
const REPLAN: f32 = 3.0;
/// How far the goal may move before the path is planned again.
const GOAL_MOVE: f32 = 10.0;

impl Driver {
    /// Forgets the path (after a death or a teleport).
    pub fn reset(&mut self) {
        *self = Driver::default();
    }

    /// The goal being driven to.
    pub fn goal(&self) -> Option<Vec2> {
        self.goal
    }

    /// Sets `control` to drive towards `goal` along a planned path (straight at it when no path is found).
    /// Returns true once there (within a few units).
    pub fn drive_to(&mut self, view: &View<'_>, goal: Vec2, control: &mut Control) -> bool {
        let now = view.time;
        let tank = view.me.tank;
        let pos = tank.pos.truncate();
        if self.unstick(view, control) {
            return false;
        }
        let moved = self.goal.is_none_or(|g| g.distance(goal) > GOAL_MOVE);
        let stale = now - self.planned_at > REPLAN;
        let may_retry = self.failed_at.is_none_or(|t| now - t > 1.0);
        if (self.follower.is_none() || moved || stale) && may_retry {
            self.goal = Some(goal);
            self.planned_at = now;
            match view.path_to(goal) {
                Some(p) => {
                    self.follower = Some(PathFollower::new(p));
                    self.failed_at = None;
                }
                None => {
                    self.follower = None;
                    self.failed_at = Some(now);
                }
            }
        }
        let arrived = match self.follower.as_mut() {
            Some(f) => {
                let s = f.steer(tank.pos, tank.azimuth, view.phys);
                control.drive(s.speed, s.turn);
                s.arrived
            }
            None => {
                // No path (an unreachable goal, or on a roof): head straight for it.
                let d = goal - pos;
                let err = wrap_angle(d.y.atan2(d.x) - tank.azimuth);
                let speed = if err.abs() > 1.0 { 0.0 } else { 1.0 };
                control.drive(speed, turn_towards(view, err));
                d.length() < 3.0
            }
        };
        self.watch_progress(view, control);
        arrived
    }

    /// Like [`Driver::drive_to`] for a goal anywhere in three dimensions: on the ground, on a deck, on a raised
    /// base. Follows a route over the levels ([`View::route_to`]): drives on its level to the next hop, then
    /// drives off the edge, jumps or teleports, and plans again on the next level. Returns true once there.
    /// When no route leads there, [`Driver::unreachable`] says so, and the tank drives as near as it can on the
    /// ground.
    pub fn drive_to3(&mut self, view: &View<'_>, goal: Vec3, control: &mut Control) -> bool {
        let now = view.time;
        let tank = view.me.tank;
        if self.unstick(view, control) {
            return false;
        }
        let levels = view.levels();
        let here = levels.level_at(view.world, tank.pos);
        let airborne = tank.status.contains(crate::bzflag::consts::PlayerStatus::FALLING);
        let c = &mut self.climb;
        c.avoid.retain(|(_, t)| now - *t < AVOID_FOR);
        if c.phase == Phase::Air || (airborne && c.phase == Phase::Go) {
            if airborne || here.is_none() {
                // Nothing steers in the air: keep the speed of the takeoff.
                control.turn = 0.0;
                return false;
            }
            // Landed: where we meant to?
            if let (Some(r), Some(l)) = (c.route.as_ref(), here) {
                if let (Some(h), Some(&id)) = (r.hops.first(), r.hop_ids.first()) {
                    if h.to != l {
                        c.avoid.push((id, now));
                    }
                }
            }
            c.route = None;
            c.phase = Phase::Approach;
        }
        let Some(here) = here else {
            return self.drive_to(view, goal.truncate(), control);
        };
        if levels.level_of_goal(view.world, goal).is_none() {
            return self.drive_to(view, goal.truncate(), control);
        }
        let c = &mut self.climb;
        let moved = c.goal.is_none_or(|g| g.distance(goal) > GOAL_MOVE);
        let stale = now - c.planned_at > REPLAN && c.phase == Phase::Approach;
        if c.level.is_some_and(|l| l != here) && c.phase == Phase::Go {
            if let Some(h) = c.route.as_ref().and_then(|r| r.hops.first()) {
                if h.kind == HopKind::Teleport {
                    c.coast_until = now + 0.3;
                }
            }
        }
        if now < c.coast_until {
            control.drive(1.0, 0.0);
            c.level = Some(here);
            c.route = None;
            c.phase = Phase::Approach;
            return false;
        }
        if c.route.is_none() || moved || stale || c.level != Some(here) {
            let avoid: Vec<usize> = c.avoid.iter().map(|(h, _)| *h).collect();
            c.route = view.route_to(goal, &avoid);
            c.goal = Some(goal);
            c.level = Some(here);
            c.planned_at = now;
            c.phase = Phase::Approach;
            c.phase_at = now;
            c.unreachable = if c.route.is_none() { Some(goal) } else { None };
        }
        let Some(route) = c.route.clone() else {
            return self.drive_to(view, goal.truncate(), control);
        };
        let Some((hop, id)) = route.hops.first().copied().zip(route.hop_ids.first().copied()) else {
            // On the goal's level.
            return if here == GROUND {
                self.drive_to(view, goal.truncate(), control)
            } else {
                let to = self.deck_waypoint(view, here, goal.truncate());
                steer_straight(view, to, 1.0, control) < 2.0 && to == goal.truncate()
            };
        };
        let pos = tank.pos.truncate();
        let c = &mut self.climb;
        match c.phase {
            Phase::Approach => {
                if now - c.phase_at > APPROACH_LIMIT {
                    c.avoid.push((id, now));
                    c.route = None;
                    return false;
                }
                let near = if matches!(hop.kind, HopKind::Jump { .. }) { 1.2 } else { 2.0 };
                if pos.distance(hop.start) <= near {
                    c.phase = Phase::Go;
                    c.phase_at = now;
                } else if here == GROUND && pos.distance(hop.start) > 6.0 {
                    self.drive_to(view, hop.start, control);
                } else if here != GROUND && pos.distance(hop.start) > 6.0 {
                    let to = self.deck_waypoint(view, here, hop.start);
                    steer_straight(view, to, 1.0, control);
                } else {
                    steer_straight(view, hop.start, 0.5, control);
                }
                false
            }
            Phase::Go => {
                if now - c.phase_at > GO_LIMIT {
                    c.avoid.push((id, now));
                    c.route = None;
                    c.phase = Phase::Approach;
                    return false;
                }
                let dir = (hop.go - hop.start).normalize_or_zero();
                let along = (pos - hop.start).dot(dir);
                let length = hop.go.distance(hop.start);
                match hop.kind {
                    HopKind::Jump { speed } => {
                        let heading = dir.y.atan2(dir.x);
                        let err = wrap_angle(heading - tank.azimuth);
                        if along < 0.5 && err.abs() > 0.05 {
                            control.drive(0.0, turn_towards(view, err));
                        } else {
                            // Hold the line: aim at the takeoff point, then straight on.
                            let aim = if along < length - 1.0 { hop.go } else { hop.go + dir * 10.0 };
                            let d = aim - pos;
                            let e = wrap_angle(d.y.atan2(d.x) - tank.azimuth);
                            control.drive(speed, turn_towards(view, e) * 0.5);
                            if along >= length - 0.3 && view.phys.jumping_allowed() {
                                control.jump = true;
                                control.turn = 0.0;
                                c.phase = Phase::Air;
                                c.phase_at = now;
                            }
                        }
                    }
                    HopKind::Drive | HopKind::Fall | HopKind::Teleport => {
                        let speed = if hop.kind == HopKind::Teleport { 0.8 } else { 0.6 };
                        steer_straight(view, hop.go + dir * 4.0, speed, control);
                        if along > length + 6.0 {
                            // Went through without reaching the level: that hop does not work.
                            c.avoid.push((id, now));
                            c.route = None;
                            c.phase = Phase::Approach;
                        }
                    }
                }
                false
            }
            Phase::Air => false,
        }
    }

    /// The next point to drive to on a deck, towards `to` (recomputed at most twice a second).
    fn deck_waypoint(&mut self, view: &View<'_>, level: Level, to: Vec2) -> Vec2 {
        let c = &mut self.climb;
        if let Some((wp, target, at)) = c.deck_wp {
            if view.time - at < 0.5 && target.distance(to) < 1.0 && wp.distance(view.me.tank.pos.truncate()) > 2.0 {
                return wp;
            }
        }
        let wp = view.levels().deck_waypoint(view.world, view.phys, level, view.me.tank.pos.truncate(), to);
        c.deck_wp = Some((wp, to, view.time));
        wp
    }

    /// The goal of the last [`Driver::drive_to3`] when no route leads to it from where we are.
    pub fn unreachable(&self) -> Option<Vec3> {
        self.climb.unreachable
    }

    /// Forgets the plan and the hop under way, and leaves the hop that was being tried out of the next plans (the
    /// host's watchdog found the tank stuck).
    pub fn stuck(&mut self, now: f32) {
        if let Some(&id) = self.climb.route.as_ref().and_then(|r| r.hop_ids.first()) {
            if self.climb.phase != Phase::Approach {
                self.climb.avoid.push((id, now));
            }
        }
        let avoid = std::mem::take(&mut self.climb.avoid);
        self.reset();
        self.climb.avoid = avoid;
    }

    /// Notes when the tank is told to drive but does not move; after a second of that, backs out and turns.
    pub fn watch_progress(&mut self, view: &View<'_>, control: &Control) {
        let speed = view.me.tank.vel.truncate().length();
        let asked = control.speed.abs() * view.phys.tank_speed;
        if asked > 5.0
            && speed < 0.15 * asked
            && !view.me.tank.status.contains(crate::bzflag::consts::PlayerStatus::FALLING)
        {
            let since = *self.slow_since.get_or_insert(view.time);
            if view.time - since > 1.0 {
                self.slow_since = None;
                self.unstick_until = view.time + 0.8;
                let (speed, turn) = UNSTICK[self.unstick_tries as usize % UNSTICK.len()];
                self.unstick_tries = self.unstick_tries.wrapping_add(1);
                let side = if (view.time * 10.0) as i64 % 2 == 0 { 1.0 } else { -1.0 };
                self.unstick_speed = speed;
                self.unstick_turn = if turn { side } else { 0.0 };
                self.follower = None;
            }
        } else {
            self.slow_since = None;
            if speed > 0.5 * asked && asked > 5.0 && view.time > self.unstick_until + 2.0 {
                self.unstick_tries = 0;
            }
        }
    }

    /// While backing out of a jam: reverse and turn. Returns true while doing so.
    pub fn unstick(&mut self, view: &View<'_>, control: &mut Control) -> bool {
        if view.time < self.unstick_until {
            control.drive(self.unstick_speed, self.unstick_turn);
            return true;
        }
        false
    }
}

/// Drives straight at `to` (turning in place first when it is well off the nose), at most at `speed`; returns
/// the distance left.
fn steer_straight(view: &View<'_>, to: Vec2, speed: f32, control: &mut Control) -> f32 {
    let tank = view.me.tank;
    let d = to - tank.pos.truncate();
    let err = wrap_angle(d.y.atan2(d.x) - tank.azimuth);
    let dist = d.length();
    let v = if err.abs() > 0.7 { 0.0 } else { speed.min((dist / 6.0).max(0.25)) };
    control.drive(v, turn_towards(view, err));
    dist
}

/// Target choice, leading and the trigger. See the module documentation.
#[derive(Debug, Clone, Default)]
pub struct Gunner {
    target: Option<u8>,
    chosen_at: f32,
    fired_at: Option<f32>,
    bank: Option<(u8, FiringSolution, f32)>,
    bank_tried: f32,
}

/// Seconds between two full target choices (in between only the chosen target's solution is recomputed).
const RECHOOSE: f32 = 0.2;
/// Least seconds between two of our shots: a shot fired a tick after another flies the same line and misses
/// with it; a little later it follows a fresher prediction (the target may have turned), and a slot is left for
/// the moment a target is sure.
const SHOT_SPACING: f32 = 0.45;
/// Longest flight worth a shot at a target that watches shots: tanks turn slowly (`_tankAngVel`, 45°/s), so a
/// target that turns away at full speed as soon as it sees the shot (the official robots turn square to any shot
/// within 150 units heading at them) strays about 0.5 × 25 × 0.785 × t² units from the predicted line after t
/// seconds: within the hit sphere (0.99 × 4.32) for about 0.65 s.
const DODGE_TIME: f32 = 0.65;
/// Longest flight worth a shot at a target driving a steady straight line (it may not be watching).
const STEADY_TIME: f32 = 1.3;

/// Whether a target is worth a shot with `flight` seconds of flight: short shots always; longer ones at a
/// target driving a steady straight line (no turn in its last update); any at a target that stands (nearly)
/// still. A wasted long shot is a slot empty for `_reloadTime` when the target comes close.
fn worth_it(view: &View<'_>, target: &TankView, flight: f32) -> bool {
    flight <= DODGE_TIME
        || target.pose.vel.truncate().length() < 3.0
        || (flight <= STEADY_TIME && target.reckoning.is_some_and(|r| !r.is_turning() && target.age < 0.5))
        || view.me.tank.flag == crate::bzflag::play::physics::flag::GUIDED_MISSILE
}

/// Whether a shot fired now at our heading flies at least [`MUZZLE_ROOM`] units before anything stops or turns
/// it: a shot into a wall just ahead is wasted, and one that ends (or bounces) at our own nose can kill us.
fn muzzle_clear(view: &View<'_>) -> bool {
    let shot = aim::fire_at(&view.shooter(), view.me.azimuth(), view.phys, Some(view.world));
    shot.segments.first().is_none_or(|s| (s.t1 - s.t0) * s.velocity.length() >= MUZZLE_ROOM)
}

/// See [`muzzle_clear`].
const MUZZLE_ROOM: f32 = 12.0;

/// The farthest a target is considered (units; shots fly `_shotSpeed × _reloadTime`, 350 by default).
fn range(view: &View<'_>) -> f32 {
    (view.phys.shot_speed * view.phys.reload_time).clamp(1.0, 2000.0)
}

impl Gunner {
    /// The current target.
    pub fn target(&self) -> Option<u8> {
        self.target
    }

    /// Forgets the target (after a death).
    pub fn reset(&mut self) {
        *self = Gunner::default();
    }

    /// The best target and how to hit it: among the nearest few enemies in range, the one whose clear solution
    /// takes the least time to turn to and fly; `prefer` (a flag carrier, say) counts double. Keeps the last
    /// target unless another is clearly better.
    pub fn choose<'v>(&mut self, view: &View<'v>, prefer: Option<u8>) -> Option<(&'v TankView, FiringSolution)> {
        let me = view.me.tank;
        // Between full choices, keep the target while it stays a clear shot (one solution per tick, not four).
        if view.time - self.chosen_at < RECHOOSE && prefer.is_none_or(|p| Some(p) == self.target) {
            let kept = self.target.and_then(|id| view.tank(id)).filter(|t| t.alive && !t.paused);
            if let Some(t) = kept {
                if let Some(sol) = view.lead(t).filter(|s| s.clear && s.reachable && s.hits()) {
                    return Some((t, sol));
                }
            }
        }
        self.chosen_at = view.time;
        let reach = range(view);
        let mut best: Option<(&TankView, FiringSolution, f32)> = None;
        let enemies = view.enemies();
        for t in enemies.iter().filter(|t| t.pose.pos.distance(me.pos) < reach * 1.2).take(4) {
            let Some(sol) = view.lead(t) else { continue };
            if !(sol.clear && sol.reachable && sol.hits()) {
                continue;
            }
            let turn = wrap_angle(sol.azimuth - me.azimuth).abs() / view.phys.tank_ang_vel.max(1.0e-3);
            let mut score = turn + sol.flight_time;
            if Some(t.id) == prefer {
                score *= 0.5;
            }
            if Some(t.id) == self.target {
                score *= 0.8;
            }
            if best.as_ref().is_none_or(|(_, _, s)| score < *s) {
                best = Some((*t, sol, score));
            }
        }
        self.target = best.as_ref().map(|(t, _, _)| t.id);
        best.map(|(t, s, _)| (t, s))
    }

    /// A shot off a ricochet surface or through a teleporter at the nearest enemy that has no clear direct shot
    /// (asked at most every 0.7 s; a found solution is kept 0.5 s and re-checked before firing).
    pub fn bank<'v>(&mut self, view: &View<'v>) -> Option<(&'v TankView, FiringSolution)> {
        let now = view.time;
        if let Some((id, sol, at)) = self.bank {
            if now - at < 0.5 {
                if let Some(t) = view.tank(id).filter(|t| t.alive) {
                    return Some((t, sol));
                }
            }
            self.bank = None;
        }
        if now - self.bank_tried < 0.7 {
            return None;
        }
        self.bank_tried = now;
        let t = view.enemies().into_iter().find(|t| t.pose.pos.distance(view.me.pos()) < range(view))?;
        let sol = view.bank_shot(t)?;
        self.bank = Some((t.id, sol, now));
        Some((t, sol))
    }

    /// Turns towards `sol` and fires when the real shot at our present heading meets the target.
    pub fn lay(&mut self, view: &View<'_>, target: &TankView, sol: &FiringSolution, control: &mut Control) {
        let err = wrap_angle(sol.azimuth - view.me.azimuth());
        control.turn = turn_towards(view, err);
        self.trigger(view, target, sol, control);
    }

    /// Fires (without turning) when the real shot at our present heading meets `target`, a slot is loaded, our
    /// last shot is far enough behind (0.45 s: a shot a tick after another flies the same line) and the shot is
    /// worth it (short enough not to be dodged, or at a target on a steady line).
    pub fn trigger(&mut self, view: &View<'_>, target: &TankView, sol: &FiringSolution, control: &mut Control) {
        control.target = Some(target.id);
        if !self.may_fire(view) || !worth_it(view, target, sol.flight_time) {
            return;
        }
        let err = wrap_angle(sol.azimuth - view.me.azimuth());
        control.fire = if sol.bounces + sol.teleports == 0 {
            sol.on_target(view.me.azimuth())
        } else {
            // A bank shot: check the real path at the heading we have.
            err.abs() < 0.1 && {
                let track = view.track(target).sample(3.0, aim::SAMPLE_STEP);
                aim::would_hit(&view.shooter(), view.me.azimuth(), &track, view.phys, view.world).is_some()
            }
        } && !endangers_team_mate(view)
            && !endangers_me(view);
        if control.fire {
            self.fired_at = Some(view.time);
        }
    }

    /// A slot is loaded, our last shot is far enough behind (see [`SHOT_SPACING`]) and the muzzle is not up
    /// against a wall (see [`muzzle_clear`]).
    fn may_fire(&self, view: &View<'_>) -> bool {
        view.me.reload == 0.0
            && self.fired_at.is_none_or(|t| view.time - t >= SHOT_SPACING || view.time < t)
            && muzzle_clear(view)
    }

    /// With a Shock Wave (which has no firing solution: it is a sphere growing around us to `_shockOutRadius`):
    /// fires when an enemy is well inside its reach, and returns true while we carry it.
    pub fn shock_wave(&self, view: &View<'_>, control: &mut Control) -> bool {
        if view.me.tank.flag != crate::bzflag::play::physics::flag::SHOCK_WAVE {
            return false;
        }
        let reach = 0.8 * view.phys.shock_out_radius;
        let me = view.me.pos();
        let mate_near = view.phys.team_kills()
            && view.tanks().iter().any(|t| {
                t.alive && t.id != view.me.id && !view.is_hostile(t.team) && t.pose.pos.distance(me) < 1.2 * reach
            });
        if view.me.reload == 0.0
            && !mate_near
            && view.enemies().first().is_some_and(|t| t.pose.pos.distance(me) < reach)
        {
            control.fire = true;
        }
        true
    }

    /// Fires, without turning, when a shot at our present heading would hit one of the nearest enemies ahead.
    pub fn snap_shot(&mut self, view: &View<'_>, control: &mut Control) {
        if !self.may_fire(view) {
            return;
        }
        let az = view.me.azimuth();
        let me = view.me.pos();
        let reach = range(view);
        let ahead = |t: &&TankView| {
            let d = t.pose.pos - me;
            d.truncate().length() < reach && wrap_angle(d.y.atan2(d.x) - az).abs() < 0.5
        };
        for t in view.enemies().into_iter().filter(ahead).take(2) {
            if let Some(sol) = view.lead(t) {
                if sol.clear
                    && sol.on_target(az)
                    && worth_it(view, t, sol.flight_time)
                    && !endangers_team_mate(view)
                    && !endangers_me(view)
                {
                    control.fire = true;
                    control.target = Some(t.id);
                    self.fired_at = Some(view.time);
                    return;
                }
            }
        }
    }
}

/// Whether the shot fired now at our heading would come near a team mate: along the shot's real path through
/// the world, ricochets and teleporters included, against each team mate's predicted track, over the shot's
/// whole flight (not only up to its target: a target may dodge, and the shot flies on). Always false when the
/// server has team kills off.
pub fn endangers_team_mate(view: &View<'_>) -> bool {
    if !view.phys.team_kills() {
        return false;
    }
    let me = view.me.pos();
    let reach = view.phys.shot_speed * view.phys.reload_time + 20.0;
    let mut mates: Vec<&TankView> = view
        .tanks()
        .iter()
        .filter(|t| t.alive && t.id != view.me.id && !view.is_hostile(t.team) && t.pose.pos.distance(me) < reach)
        .collect();
    if mates.is_empty() {
        return false;
    }
    mates.sort_by(|a, b| a.pose.pos.distance_squared(me).total_cmp(&b.pose.pos.distance_squared(me)));
    let shot = aim::fire_at(&view.shooter(), view.me.azimuth(), view.phys, Some(view.world));
    let path = aim::flown_path(&shot, view.phys, Some(view.world));
    // A shot that misses its target flies on: check its whole flight, not only up to the target.
    let horizon = shot.lifetime.clamp(0.0, 10.0);
    // Team mates are bots or people that do not keep to their predicted line: the later the shot gets there,
    // the wider the berth.
    let drift = MATE_DRIFT * view.phys.tank_speed;
    mates.iter().take(MAX_MATES_CHECKED).any(|t| {
        let track = view.mate_track(t).sample(horizon, aim::SAMPLE_STEP);
        aim::closest_approach(&path, 0.0, &track)
            .is_some_and(|a| a.time <= horizon && a.miss < track.hit_radius + MATE_MARGIN + drift * a.time)
    })
}

/// The host's last check before a shot leaves, for every brain: the pilot steps the tank with this tick's
/// controls before it fires, so the shot starts from the pose after that step, not the one the brain aimed from
/// (a turning tank's shot leaves a few hundredths of a radian off, which a ricochet widens). True when a shot
/// from there endangers neither a team mate ([`endangers_team_mate`]) nor ourselves ([`endangers_me`]).
pub fn shot_after_step_endangers(view: &View<'_>, control: &Control) -> bool {
    let mut after = view.me.tank.clone();
    let controls = crate::bzflag::play::Controls { speed: control.speed, turn: control.turn, jump: control.jump };
    let _ = after.step(view.dt.min(1.0), controls, view.phys, view.world);
    if !after.is_alive() {
        return false;
    }
    let view = View { me: crate::bot::view::Me { tank: &after, ..view.me }, ..*view };
    endangers_team_mate(&view) || endangers_me(&view)
}

/// Whether the shot fired now at our heading comes back at us after a ricochet or a teleporter during its flight
/// (our own tank on its present course, given a wider berth the later the shot comes back).
pub fn endangers_me(view: &View<'_>) -> bool {
    let shot = aim::fire_at(&view.shooter(), view.me.azimuth(), view.phys, Some(view.world));
    let path = aim::flown_path(&shot, view.phys, Some(view.world));
    let Some(after_first) = path.get(1..).filter(|p| !p.is_empty()) else { return false };
    let horizon = shot.lifetime.clamp(0.0, 10.0);
    let track = aim::TargetTrack::own(view.me.tank, view.phys).sample(horizon, aim::SAMPLE_STEP);
    // We may turn away from our present course: the later the shot comes back, the wider the berth.
    let drift = SELF_DRIFT * view.phys.tank_speed;
    aim::closest_approach(after_first, 0.0, &track)
        .is_some_and(|a| a.time <= horizon && a.miss < track.hit_radius + MATE_MARGIN + drift * a.time)
}

/// How far (as a fraction of `_tankSpeed` per second of the shot's flight) our own tank may stray from its
/// present course before one of our ricochets comes back.
const SELF_DRIFT: f32 = 0.3;

/// Team mates whose tracks a shot is checked against (the nearest ones).
const MAX_MATES_CHECKED: usize = 8;
/// Room left round a team mate: it may swerve from its predicted track.
const MATE_MARGIN: f32 = 2.0;
/// How far (as a fraction of `_tankSpeed` per second of the shot's flight) a team mate may stray from its
/// predicted track: all the way (a tank that turns at full rate is as far off its straight prediction after two
/// seconds as one that stopped). At half of it, four 3-against-3 ricochet games on ctf-raised had 2 team kills in
/// 199 kills; at all of it, none in 156 (`bench/bots.py teams --ricochet --maps ctf-raised --games 4`).
const MATE_DRIFT: f32 = 1.0;

/// Steers out of the way of shots that would hit us within the next second: sets `control` to the best
/// escape and returns true, or returns false when nothing threatens.
pub fn evade(view: &View<'_>, control: &mut Control) -> bool {
    let threats: Vec<_> =
        view.threats(1.2).into_iter().filter(|t| t.miss < t.hit_radius + 1.0 && t.time < 1.0).collect();
    if threats.is_empty() {
        return false;
    }
    // Jump only when nothing on the ground gets us out of the way: a jump is a long ballistic arc, and shooters
    // that lead the landing (the official robots do) hit us there.
    let horizon = threats.iter().map(|t| t.time).fold(0.5_f32, f32::max) + 0.25;
    let opts = crate::bot::danger::DangerOptions { ground_first: true, ..view.danger_options(horizon) };
    match crate::bot::danger::dodge(view.me.tank, &view.danger_me(), &threats, view.now, view.phys, view.world, &opts) {
        Some(c) => {
            control.drive(c.speed, c.turn);
            control.jump |= c.jump;
            true
        }
        None => false,
    }
}

/// The point `d` units ahead of our tank.
pub fn ahead(view: &View<'_>, d: f32) -> Vec3 {
    let az = view.me.azimuth();
    view.me.pos() + Vec3::new(az.cos(), az.sin(), 0.0) * d
}

/// Whether the way `d` units ahead is clear for the tank at ground level. Up against a wall or in a corner our
/// own cell is not free (a free cell has room for the tank at any heading), so then the way counts as clear when
/// the cells ahead are: facing out, we drive out instead of backing further in.
pub fn road_clear(view: &View<'_>, d: f32) -> bool {
    let p = view.me.pos().truncate();
    let nav = view.nav();
    if nav.is_free(p) {
        return nav.clear_line(p, ahead(view, d).truncate());
    }
    let near = ahead(view, 0.5 * d).truncate();
    nav.is_free(near) && nav.clear_line(near, ahead(view, d).truncate())
}

#[cfg(test)]
#[path = "common_tests.rs"]
mod tests;
