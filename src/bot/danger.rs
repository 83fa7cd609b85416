//! Shot danger: which live shots will pass close to our tank over the next moments ([`threats`]), and which of a
//! few simple manoeuvres takes us farthest out of their way ([`dodge`]).
//!
//! # Threats
//!
//! Our tank is predicted on its line or arc from its present velocity and angular velocity (a ballistic fall in
//! the air), exactly as others dead-reckon it ([`TargetTrack::own`]), and sampled every [`SAMPLE_STEP`] over the
//! horizon. Each live shot is then compared with that track in time and space:
//!
//! * the filters of the hit test first (`hit::shot_hits`, §9.6): shots of paused shooters, our own Shock Wave and
//!   Thief shots, team mates' shots when team kills are off (not for rogues; Thief still counts), anything but
//!   SW/SB/PZ while we are zoned, Laser against Cloaking, PZ shots while we are not zoned: none of these can
//!   hurt us;
//! * segmented shots (every ordinary kind, ricochets and teleporters included): a quick distance rejection per
//!   path segment (the segment's stretch within the horizon against the ball our track stays in), then the exact
//!   closest approach of the segment's straight motion to the track, linear between samples;
//! * beams (Laser, Thief): the whole path is live for the shot's life, so the distance from our centre to the
//!   path at each sample;
//! * Shock Waves: only while we come within the growing sphere's reach; the miss is measured so that, as for
//!   every kind, `miss < hit radius` means a hit (`miss = distance − sphere radius + hit radius`);
//! * guided missiles: flown on from their present position and heading ([`GuidedMissile::step`]), turning at
//!   `_gmTurnAngle` towards us when we are their target, straight on otherwise, and harmless before
//!   `_gmActivationTime` (obstacles are not consulted: a missile that would hit a wall first still counts).
//!
//! A threat is reported when the shot comes within our hit radius plus [`DangerOptions::margin`], unless its
//! closest approach is now and it does not touch us (it is already moving away).
//!
//! # Dodging
//!
//! [`dodge`] clones our tank and drives each of at most [`MAX_CANDIDATES`] fixed manoeuvres (full ahead, full
//! reverse, hard turns on the spot, hard turns ahead and in reverse, and a jump when jumping is allowed) with
//! [`Tank::step`] through the world, for at most [`MAX_DODGE_STEPS`] steps, measuring in every step the exact
//! closest approach of each threatening shot to the tank moving over that step, as the hit test does. The
//! manoeuvre with the largest smallest miss wins.
//!
//! # Use, every tick
//!
//! ```text
//! let me = Me::new(&tank, id, team, &phys);
//! let list = threats(&me, tracker.iter(), now, &phys, &opts);      // ~1.5 µs for 50 shots (release)
//! if let Some(c) = dodge(&tank, &me, &list, now, &phys, &world, &opts) { controls = c }   // ~45 µs, 3 threats
//! ```

use std::time::Instant;

use glam::Vec3;

use super::aim::{closest, closest_approach, Approach, SampledTrack, TargetTrack, SAMPLE_STEP};
use crate::bzflag::consts::Team;
use crate::bzflag::msg::Abbv;
use crate::bzflag::play::hit;
use crate::bzflag::play::physics::{flag, Physics};
use crate::bzflag::play::reckon::sane;
use crate::bzflag::play::shots::{GuidedMissile, LiveShot, ShotKind};
use crate::bzflag::play::tank::{Controls, Location, Tank};
use crate::bzflag::world::{ShotSegment, WorldModel};

/// Most manoeuvres [`dodge`] tries.
pub const MAX_CANDIDATES: usize = 9;

/// Most simulated steps per manoeuvre.
pub const MAX_DODGE_STEPS: usize = 45;

/// Longest horizon (s) looked at.
const MAX_HORIZON: f32 = 10.0;

/// Step (s) of a guided missile's simulated flight.
const MISSILE_STEP: f32 = 0.1;

/// A set of player ids (0..=255).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PlayerSet([u64; 4]);

impl PlayerSet {
    /// Nobody.
    pub fn new() -> PlayerSet {
        PlayerSet::default()
    }

    /// Adds `id`.
    pub fn insert(&mut self, id: u8) {
        if let Some(w) = self.0.get_mut(usize::from(id >> 6)) {
            *w |= 1 << (id & 63);
        }
    }

    /// Removes `id`.
    pub fn remove(&mut self, id: u8) {
        if let Some(w) = self.0.get_mut(usize::from(id >> 6)) {
            *w &= !(1 << (id & 63));
        }
    }

    /// Whether `id` is in the set.
    pub fn contains(&self, id: u8) -> bool {
        self.0.get(usize::from(id >> 6)).is_some_and(|w| w & (1 << (id & 63)) != 0)
    }
}

impl FromIterator<u8> for PlayerSet {
    fn from_iter<I: IntoIterator<Item = u8>>(iter: I) -> Self {
        let mut s = PlayerSet::new();
        for id in iter {
            s.insert(id);
        }
        s
    }
}

/// How far ahead and how wide to look.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DangerOptions {
    /// Seconds ahead (default 1.5; at most 10).
    pub horizon: f32,
    /// Distance beyond our hit radius within which a passing shot still counts as a threat (default 4).
    pub margin: f32,
    /// Players that are paused: their shots do not count.
    pub paused: PlayerSet,
    /// Step (s) of [`dodge`]'s simulation (default 1/15; the closest approach within a step is exact, as in the
    /// hit test). The number of steps is capped at [`MAX_DODGE_STEPS`].
    pub step: f32,
    /// Jump only as a last resort: when every manoeuvre on the ground still gets us hit (default false: a jump
    /// wins whenever it keeps us farthest). A jumping tank flies a ballistic arc it cannot leave for seconds, and
    /// a shooter that leads its landing (the official robots do) hits it there.
    pub ground_first: bool,
}

impl Default for DangerOptions {
    fn default() -> Self {
        DangerOptions { horizon: 1.5, margin: 4.0, paused: PlayerSet::new(), step: 1.0 / 15.0, ground_first: false }
    }
}

/// Our tank as shots see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Me {
    /// Our player id.
    pub id: u8,
    /// Our team.
    pub team: Team,
    /// The flag we carry (`NONE` for none).
    pub flag: Abbv,
    /// Phantom-zoned.
    pub zoned: bool,
    /// Our predicted motion (line, arc or fall), with our hit radius.
    pub track: TargetTrack,
}

impl Me {
    /// Our `tank`, player `id` of `team`.
    pub fn new(tank: &Tank, id: u8, team: Team, phys: &Physics) -> Me {
        Me { id, team, flag: tank.flag, zoned: tank.is_zoned(), track: TargetTrack::own(tank, phys) }
    }
}

/// A shot that will pass close to us.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Threat<'a> {
    /// The shot.
    pub shot: &'a LiveShot,
    /// Its shooter.
    pub shooter: u8,
    /// Its id.
    pub shot_id: u16,
    /// Its kind.
    pub kind: ShotKind,
    /// Seconds from now of the closest approach (of the pass that hits, when one does).
    pub time: f32,
    /// When it would first touch our hit sphere (s from now), if it does.
    pub contact: Option<f32>,
    /// Distance from our centre then (for a Shock Wave: distance beyond its sphere plus our hit radius).
    pub miss: f32,
    /// Our hit radius: `miss < hit_radius` is a hit.
    pub hit_radius: f32,
    /// Where the shot is then (a Shock Wave: its centre).
    pub position: Vec3,
    /// The shot's velocity then (a Shock Wave: the speed its sphere grows at, pointing at us).
    pub velocity: Vec3,
}

impl Threat<'_> {
    /// The shot would hit us if we kept going as we are.
    pub fn hits(&self) -> bool {
        self.miss < self.hit_radius
    }
}

/// Whether `shot` can hurt `me` at all (the filters of the hit test, §9.6, [`hit::can_hit`]), `paused` being the
/// paused players.
pub fn can_hurt(me: &Me, shot: &LiveShot, paused: &PlayerSet, phys: &Physics) -> bool {
    hit::can_hit(me.id, me.team, me.flag, me.zoned, shot, paused.contains(shot.shooter), phys)
}

/// Distance from `p` to the segment `a`–`b`, and the parameter of the nearest point.
fn point_segment(p: Vec3, a: Vec3, b: Vec3) -> (f32, f32) {
    let ab = b - a;
    let l2 = ab.length_squared();
    let u = if l2 > 0.0 { ((p - a).dot(ab) / l2).clamp(0.0, 1.0) } else { 0.0 };
    let u = if u.is_finite() { u } else { 0.0 };
    ((a + ab * u).distance(p), u)
}

/// Keeps the better of two approaches: an earlier contact wins, else the smaller miss.
fn better(best: Option<Approach>, a: Approach) -> Option<Approach> {
    match best {
        None => Some(a),
        Some(b) => match (b.contact, a.contact) {
            (Some(x), Some(y)) => Some(if y < x { a } else { b }),
            (Some(_), None) => Some(b),
            (None, Some(_)) => Some(a),
            (None, None) => Some(if a.miss < b.miss { a } else { b }),
        },
    }
}

/// The ball our track stays in (its start and how far it strays), and the distance within which a shot counts.
struct Ball {
    centre: Vec3,
    spread: f32,
    reach: f32,
}

fn segmented(segments: &[ShotSegment], age: f32, track: &SampledTrack, ball: &Ball) -> Option<Approach> {
    let horizon = track.duration();
    let mut best: Option<Approach> = None;
    for (i, s) in segments.iter().enumerate() {
        let a = (s.t0 - age).max(0.0);
        let b = (s.t1 - age).min(horizon);
        if a > b {
            continue;
        }
        if best.is_some_and(|x| x.contact.is_some_and(|c| c < a)) {
            break;
        }
        let p0 = s.start + s.velocity * (a + age - s.t0);
        let p1 = s.start + s.velocity * (b + age - s.t0);
        if point_segment(ball.centre, p0, p1).0 > ball.spread + ball.reach {
            continue;
        }
        if let Some(mut x) = closest_approach(std::slice::from_ref(s), age, track) {
            x.segment = i;
            best = better(best, x);
        }
    }
    best
}

fn beam(shot: &LiveShot, me: &Me, age: f32, track: &SampledTrack, ball: &Ball) -> Option<Approach> {
    let end = (shot.lifetime - age).min(track.duration());
    if end.is_nan() || end < 0.0 {
        return None;
    }
    let r = track.hit_radius;
    let skip_first = shot.kind == ShotKind::Laser && shot.shooter == me.id;
    let near: Vec<(usize, &ShotSegment)> = shot
        .segments
        .iter()
        .enumerate()
        .filter(|&(i, s)| {
            !(i == 0 && skip_first) && point_segment(ball.centre, s.start, s.end()).0 <= ball.spread + ball.reach
        })
        .collect();
    if near.is_empty() {
        return None;
    }
    let mut best: Option<Approach> = None;
    let n = track.centres().len();
    for k in 0..n {
        let t = (k as f32 * track.step()).min(end);
        let c = track.centre_at(t);
        for &(i, s) in &near {
            let (d, u) = point_segment(c, s.start, s.end());
            let a = Approach {
                time: t,
                miss: d,
                contact: (d <= r).then_some(t),
                position: s.start + (s.end() - s.start) * u,
                velocity: s.velocity,
                segment: i,
            };
            best = better(best, a);
        }
        if t >= end || best.is_some_and(|b| b.contact.is_some()) {
            break;
        }
    }
    best
}

fn shock(shot: &LiveShot, age: f32, track: &SampledTrack, me: &Me, phys: &Physics) -> Option<Approach> {
    let end = (shot.lifetime - age).min(track.duration());
    if end.is_nan() || end < 0.0 {
        return None;
    }
    let r = track.hit_radius;
    let lift = Vec3::new(0.0, 0.0, me.track.centre_height);
    let growth = if shot.lifetime > 0.0 { (phys.shock_out_radius - phys.shock_in_radius) / shot.lifetime } else { 0.0 };
    let mut best: Option<Approach> = None;
    for k in 0..track.centres().len() {
        let t = (k as f32 * track.step()).min(end);
        let p = track.centre_at(t) - lift;
        let radius = shot.shock_radius(age + t, phys).unwrap_or(0.0);
        let d = p.distance(shot.start);
        let miss = (d - radius + r).max(0.0);
        let a = Approach {
            time: t,
            miss,
            contact: (d <= radius).then_some(t),
            position: shot.start,
            velocity: (p - shot.start).normalize_or_zero() * growth,
            segment: 0,
        };
        best = better(best, a);
        if t >= end || best.is_some_and(|b| b.contact.is_some()) {
            break;
        }
    }
    best
}

/// The missile's position (aim point) for a tank at `pos`: its position plus the muzzle height, as the missile
/// code wants it.
fn missile_aim(pos: Vec3, phys: &Physics) -> Vec3 {
    pos + Vec3::new(0.0, 0.0, phys.muzzle_height)
}

fn missile(shot: &LiveShot, me: &Me, age: f32, track: &SampledTrack, phys: &Physics) -> Option<Approach> {
    let m = shot.missile.as_ref()?;
    if m.expired {
        return None;
    }
    let mut m = m.clone();
    let homing = m.target == me.id;
    let lift = Vec3::new(0.0, 0.0, me.track.centre_height);
    // Catch up with now (the tracker may be a little behind).
    if m.time < age {
        m.step((age - m.time).min(1.0), None, phys, None);
        m.time = age;
    }
    let end = (shot.lifetime.min(age + track.duration())).min(age + MAX_HORIZON);
    let act = phys.gm_activation_time;
    let mut best: Option<Approach> = None;
    let mut steps = 0;
    while !m.expired && m.time < end && steps < 128 {
        steps += 1;
        let t0 = m.time;
        let aim = homing.then(|| missile_aim(track.centre_at(t0 - age) - lift, phys));
        m.step((end - t0).min(MISSILE_STEP), aim, phys, None);
        if m.time <= t0 || m.time.is_nan() {
            break;
        }
        let Some(mut s) = m.recent.first().copied() else { break };
        if s.t1 <= act {
            continue;
        }
        if s.t0 < act {
            s.start += s.velocity * (act - s.t0);
            s.t0 = act;
        }
        if let Some(x) = closest_approach(std::slice::from_ref(&s), age, track) {
            best = better(best, x);
            if x.contact.is_some() {
                break;
            }
        }
    }
    best
}

/// Every live shot among `shots` that will pass within our hit radius plus `opts.margin` of us over the next
/// `opts.horizon` seconds (see the module docs), sorted by the time of closest approach. `now` is the local
/// time the shots' ages are taken at.
pub fn threats<'a>(
    me: &Me,
    shots: impl IntoIterator<Item = &'a LiveShot>,
    now: Instant,
    phys: &Physics,
    opts: &DangerOptions,
) -> Vec<Threat<'a>> {
    let mut out = Vec::new();
    let horizon = sane(opts.horizon).clamp(0.0, MAX_HORIZON);
    if horizon <= 0.0 {
        return out;
    }
    let track = me.track.sample(horizon, SAMPLE_STEP);
    let r = track.hit_radius;
    let margin = sane(opts.margin).clamp(0.0, 1.0e4);
    let centre = track.centre_at(0.0);
    let ball = Ball { centre, spread: track.spread_from(centre), reach: r + margin };
    for shot in shots {
        if !can_hurt(me, shot, &opts.paused, phys) {
            continue;
        }
        let age = shot.age(now);
        if shot.expired_at(age) {
            continue;
        }
        let a = match shot.kind {
            ShotKind::ShockWave => {
                if shot.start.distance(centre) > ball.spread + ball.reach + phys.shock_out_radius {
                    continue;
                }
                shock(shot, age, &track, me, phys)
            }
            k if k.is_beam() => beam(shot, me, age, &track, &ball),
            ShotKind::GuidedMissile => {
                let far = shot.missile.as_ref().is_none_or(|m| {
                    m.pos.distance(centre) > ball.spread + ball.reach + phys.shot_speed * horizon * 1.01 + 1.0
                });
                if far {
                    continue;
                }
                missile(shot, me, age, &track, phys)
            }
            _ => segmented(&shot.segments, age, &track, &ball),
        };
        let Some(a) = a else { continue };
        let receding = a.contact.is_none() && a.time <= 1.0e-4;
        if a.miss < ball.reach && !receding {
            out.push(Threat {
                shot,
                shooter: shot.shooter,
                shot_id: shot.shot_id,
                kind: shot.kind,
                time: a.time,
                contact: a.contact,
                miss: a.miss,
                hit_radius: r,
                position: a.position,
                velocity: a.velocity,
            });
        }
    }
    out.sort_by(|a, b| a.time.total_cmp(&b.time));
    out
}

/// A threat being flown alongside a simulated tank.
enum Flying<'a> {
    /// Precomputed segments overlapping the simulated time.
    Path(&'a [ShotSegment]),
    /// The whole path is live until `until` (shot age).
    Beam { segments: &'a [ShotSegment], skip_first: bool, until: f32 },
    /// A sphere growing about its centre.
    Shock(&'a LiveShot),
    /// A missile flown step by step (towards us when `homing`).
    Missile { m: GuidedMissile, homing: bool },
}

/// One simulated step of our tank: its centre starts at `c0` and moves with `v` while the shot's age goes from
/// `a0` to `a1`.
#[derive(Debug, Clone, Copy)]
struct Step {
    c0: Vec3,
    v: Vec3,
    a0: f32,
    a1: f32,
}

/// The closest approach within one step (for our hit radius `r`, our centre `lift` above our position).
fn step_miss(f: &mut Flying<'_>, st: Step, r: f32, lift: f32, phys: &Physics) -> f32 {
    let Step { c0, v, a0, a1 } = st;
    let dt = a1 - a0;
    match f {
        Flying::Path(segs) => {
            let mut best = f32::INFINITY;
            for s in segs.iter() {
                let lo = s.t0.max(a0);
                let hi = s.t1.min(a1);
                if hi < lo {
                    continue;
                }
                let o = s.start + s.velocity * (lo - s.t0) - (c0 + v * (lo - a0));
                best = best.min(closest(o, s.velocity - v, hi - lo).1);
            }
            best
        }
        Flying::Beam { segments, skip_first, until } => {
            if a1 >= *until {
                return f32::INFINITY;
            }
            let c1 = c0 + v * dt;
            segments
                .iter()
                .enumerate()
                .filter(|&(i, _)| !(i == 0 && *skip_first))
                .map(|(_, s)| point_segment(c1, s.start, s.end()).0)
                .fold(f32::INFINITY, f32::min)
        }
        Flying::Shock(shot) => {
            if shot.expired_at(a1) {
                return f32::INFINITY;
            }
            let p1 = c0 + v * dt - Vec3::new(0.0, 0.0, lift);
            let radius = shot.shock_radius(a1, phys).unwrap_or(0.0);
            (p1.distance(shot.start) - radius + r).max(0.0)
        }
        Flying::Missile { m, homing } => {
            if m.expired || dt <= 0.0 {
                return f32::INFINITY;
            }
            if m.time < a0 {
                m.step((a0 - m.time).min(1.0), None, phys, None);
                m.time = a0;
            }
            let aim = homing.then(|| missile_aim(c0 - Vec3::new(0.0, 0.0, lift), phys));
            m.step(dt, aim, phys, None);
            let Some(s) = m.recent.first().copied() else { return f32::INFINITY };
            if s.t1 <= phys.gm_activation_time {
                return f32::INFINITY;
            }
            closest(s.start - c0, s.velocity - v, s.t1 - s.t0).1
        }
    }
}

/// The manoeuvres tried, in order of preference when they do equally well.
fn candidates(tank: &Tank, phys: &Physics) -> ([Controls; MAX_CANDIDATES], usize) {
    let c = |speed: f32, turn: f32| Controls { speed, turn, jump: false };
    let mut list = [
        c(1.0, 0.0),
        c(-0.5, 0.0),
        c(1.0, 1.0),
        c(1.0, -1.0),
        c(-0.5, 1.0),
        c(-0.5, -1.0),
        c(0.0, 1.0),
        c(0.0, -1.0),
        Controls::default(),
    ];
    let f = tank.flag;
    let may_jump = f != flag::NO_JUMPING
        && (phys.jumping_allowed() || f == flag::JUMPING || f == flag::BOUNCY || f == flag::WINGS)
        && (matches!(tank.location, Location::OnGround | Location::OnBuilding) || f == flag::WINGS);
    if !may_jump {
        return (list, MAX_CANDIDATES - 1);
    }
    let (s, co) = tank.azimuth.sin_cos();
    let ahead = tank.vel.x * co + tank.vel.y * s;
    let speed = if phys.tank_speed > 0.0 { sane(ahead / phys.tank_speed).clamp(-0.5, 1.0) } else { 0.0 };
    if let Some(last) = list.last_mut() {
        *last = Controls { speed, turn: 0.0, jump: true };
    }
    (list, MAX_CANDIDATES)
}

/// Scores: the smallest miss over the threats (capped), then the sum of capped misses.
fn score(misses: &[f32], cap: f32) -> (f32, f32) {
    let min = misses.iter().map(|m| m.min(cap)).fold(cap, f32::min);
    let sum = misses.iter().map(|m| m.min(3.0 * cap)).sum();
    (min, sum)
}

/// The manoeuvre that keeps us farthest from `threats` (from [`threats`] at `now`, for our `tank` as `me`),
/// simulated through `world` (see the module docs); hold it until the next call. `None` when nothing threatens.
pub fn dodge(
    tank: &Tank,
    me: &Me,
    threats: &[Threat<'_>],
    now: Instant,
    phys: &Physics,
    world: &WorldModel,
    opts: &DangerOptions,
) -> Option<Controls> {
    if threats.is_empty() {
        return None;
    }
    let step = if opts.step.is_finite() { opts.step.clamp(0.005, 0.5) } else { 1.0 / 15.0 };
    let horizon = sane(opts.horizon).clamp(0.0, MAX_HORIZON);
    let last = threats.iter().map(|t| t.contact.unwrap_or(t.time).max(t.time)).fold(0.0f32, f32::max);
    let duration = horizon.min(last + 0.25).max(step);
    let n = ((duration / step).ceil() as usize).clamp(1, MAX_DODGE_STEPS);
    let r = me.track.hit_radius();
    let lift = me.track.centre_height;
    let cap = r + sane(opts.margin).clamp(0.0, 1.0e4);
    let ages: Vec<f32> = threats.iter().map(|t| t.shot.age(now)).collect();
    let (list, count) = candidates(tank, phys);
    let mut best: Option<(Controls, (f32, f32))> = None;
    let mut misses = vec![f32::INFINITY; threats.len()];
    let mut flying: Vec<Flying<'_>> = Vec::with_capacity(threats.len());
    for &controls in list.iter().take(count) {
        flying.clear();
        for (t, &age) in threats.iter().zip(&ages) {
            let s = t.shot;
            flying.push(match s.kind {
                ShotKind::ShockWave => Flying::Shock(s),
                k if k.is_beam() => Flying::Beam {
                    segments: &s.segments,
                    skip_first: k == ShotKind::Laser && s.shooter == me.id,
                    until: s.lifetime,
                },
                ShotKind::GuidedMissile => match s.missile.as_ref() {
                    Some(m) => Flying::Missile { m: m.clone(), homing: m.target == me.id },
                    None => Flying::Path(&[]),
                },
                _ => {
                    let end = age + n as f32 * step;
                    let from = s.segments.partition_point(|x| x.t1 < age);
                    let to = s.segments.partition_point(|x| x.t0 <= end).max(from);
                    Flying::Path(s.segments.get(from..to).unwrap_or(&[]))
                }
            });
        }
        misses.iter_mut().for_each(|m| *m = f32::INFINITY);
        let mut sim = tank.clone();
        let mut c = controls;
        let mut died = false;
        for k in 0..n {
            let before = sim.pos;
            let report = sim.step(step, c, phys, world);
            c.jump = false;
            if report.death.is_some() {
                died = true;
                break;
            }
            let c0 = before + Vec3::new(0.0, 0.0, lift);
            let v = if report.teleported.is_some() { Vec3::ZERO } else { (sim.pos - before) / step };
            for ((f, m), &age) in flying.iter_mut().zip(misses.iter_mut()).zip(&ages) {
                let a0 = age + k as f32 * step;
                *m = m.min(step_miss(f, Step { c0, v, a0, a1: a0 + step }, r, lift, phys));
            }
        }
        if died {
            continue;
        }
        let sc = score(&misses, cap);
        // The jump is the last candidate: with `ground_first`, it is taken only when the best on the ground is hit.
        if controls.jump && opts.ground_first && best.is_some_and(|(_, b)| b.0 >= r + 0.5) {
            continue;
        }
        if best.is_none_or(|(_, b)| sc.0 > b.0 + 1.0e-3 || (sc.0 >= b.0 - 1.0e-3 && sc.1 > b.1 + 1.0e-3)) {
            best = Some((controls, sc));
        }
    }
    Some(best.map_or(Controls { speed: 1.0, turn: 0.0, jump: false }, |(c, _)| c))
}

#[cfg(test)]
#[path = "danger_tests.rs"]
mod tests;
