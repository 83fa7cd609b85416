//! Firing solutions: where to point the gun so that a shot fired now meets a moving tank, directly or off the
//! walls.
//!
//! # Model
//!
//! * A target moves as every client dead-reckons it (fact sheet §9.4): on a straight line, a circular arc, a
//!   ballistic fall, or a physics driver, from its last update ([`TargetTrack`]). It is hit when a shot comes
//!   within 0.99 × its radius of its centre, its position plus half its height (§9.6).
//! * Our shot leaves the muzzle, `(tank radius + 0.1)` ahead of our tank's centre along the azimuth and
//!   `_muzzleHeight` up, with our tank's velocity plus `_shotSpeed` along the azimuth, its vertical velocity
//!   dropped unless `_shotsKeepVerticalVelocity` (§8.4); every receiver scales it by the flag's modifiers
//!   (§9.5). Shots are built here with the very code that fires them ([`firing_info`], [`LiveShot::new`]), so
//!   the path predicted is the path every client computes, ricochets and teleporters included.
//! * Shots fly level (z = muzzle height) unless `_shotsKeepVerticalVelocity`: a target in the air, or on
//!   another level, may be out of reach whatever the azimuth. A solution says so ([`FiringSolution::reachable`],
//!   [`FiringSolution::vertical_gap`]).
//!
//! # The direct shot ([`lead`])
//!
//! The muzzle lies on the ray from our tank's centre along the azimuth `f`, so a level shot fired at azimuth
//! `f` is at `P + m·u·t + (k + m·s·t)·f` after `t` seconds (P our centre, u our velocity, k the muzzle distance,
//! s the shot speed, m the flag's speed factor). With `D(t) = C(t) − P − m·u·t` (C the target's centre), the
//! shot meets the target when `|D(t)| = k + m·s·t`, and the azimuth is then the direction of `D(t)`: one
//! scalar root in the time of flight, found by a bounded scan over the shot's lifetime and bisection, with
//! the muzzle offset and our velocity exactly accounted for. The solution is then checked against the real
//! path through the world ([`FiringSolution::clear`], [`FiringSolution::miss`]).
//!
//! # Bank shots ([`bank_shot`])
//!
//! When the direct line is blocked, shots that ricochet (every surface under `+r` or with the R flag, else only
//! surfaces with the ricochet bit) or pass a teleporter may still get there: a coarse sweep of azimuths around
//! the circle, then golden-section refinement of the best few, each one a real path simulated through the world
//! and compared with the target's track in time and space (at most [`BANK_MAX_PATHS`] paths per call).
//!
//! # Use
//!
//! ```text
//! let gun = Shooter::of_tank(&tank, id, team, now);
//! let target = TargetTrack::remote(&remote, now, &phys).with_flag(its_flag, &phys);
//! let shot = lead(&gun, &target, &phys, &world)                    // ~5 µs (release)
//!     .filter(|s| s.clear && s.hits())
//!     .or_else(|| bank_shot(&gun, &target, &phys, &world));        // ~0.3 ms, at most 200 paths
//! if let Some(s) = shot { turn towards s.azimuth; if s.on_target(tank.azimuth) { fire } }
//! ```
//!
//! # Timing
//!
//! Everything is a function of "seconds from now". Our shot reaches other clients one latency later than we
//! fire it, so a caller that knows the one-way latency can add it to the target's age
//! ([`TargetTrack::delayed`]).

use std::borrow::Cow;
use std::time::Instant;

use glam::{Vec2, Vec3};

use crate::bzflag::consts::{PlayerStatus, Team};
use crate::bzflag::msg::{wrap_angle, Abbv};
use crate::bzflag::play::physics::{flag, FlagEffect, Physics};
use crate::bzflag::play::reckon::{sane, sane3, Reckoning, RemoteTank};
use crate::bzflag::play::shots::{firing_info, LiveShot, Muzzle, ShotKind};
use crate::bzflag::play::tank::Tank;
use crate::bzflag::world::{SegmentReason, ShotSegment, WorldModel};

/// The hit test's factor on a tank's radius (`0.99 × radius`, §9.6).
pub const HIT_FACTOR: f32 = 0.99;

/// Spacing (s) of the samples a track is linearised between. A tank on a 25 u/s arc turning at π/4 rad/s
/// strays less than 0.01 units from the chord over one step, a falling one about 0.003.
pub const SAMPLE_STEP: f32 = 0.05;

/// Most samples kept for one track (a longer track gets a coarser step).
pub const MAX_SAMPLES: usize = 256;

/// Most shot paths one [`bank_shot`] call simulates.
pub const BANK_MAX_PATHS: usize = BANK_COARSE + BANK_REFINE * BANK_REFINE_STEPS;

/// Azimuths of the bank shot's coarse sweep (2.8° apart).
const BANK_COARSE: usize = 128;
/// Local minima of the sweep refined.
const BANK_REFINE: usize = 4;
/// Paths simulated per refinement.
const BANK_REFINE_STEPS: usize = 18;
/// Samples of the time-of-flight scan before bisection.
const ROOT_SCAN: usize = 96;
/// Bisection steps on the time of flight.
const ROOT_BISECT: usize = 32;
/// Longest lifetime considered (s); anything longer is garbage.
const MAX_LIFETIME: f32 = 60.0;

// ------------------------------------------------------------------------------------------------------------
// Targets.

#[derive(Debug, Clone, Copy, PartialEq)]
enum Motion {
    Reckoned(Reckoning),
    Fixed(Vec3),
}

/// A target's predicted motion: where its centre is `t` seconds from now, as dead reckoning from its last
/// update predicts it (§9.4), or a fixed point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TargetTrack {
    motion: Motion,
    age: f32,
    gravity: f32,
    ground: f32,
    /// Height of the hit centre above the tank's position (half its height).
    pub centre_height: f32,
    /// Hit radius of the tank (`_tankRadius`, scaled by Obesity, Tiny or Thief): a shot must come within
    /// [`HIT_FACTOR`] × this of the centre. (Narrow tanks are thinner than this sphere from the side; they are
    /// treated as spheres here.)
    pub radius: f32,
}

impl TargetTrack {
    /// A tank whose last update is `reckoning`, received `age` seconds ago, with default size (use
    /// [`TargetTrack::with_flag`] for a flag that changes it).
    pub fn new(reckoning: Reckoning, age: f32, phys: &Physics) -> TargetTrack {
        TargetTrack {
            motion: Motion::Reckoned(reckoning),
            age: sane(age).clamp(0.0, 3600.0),
            gravity: phys.gravity,
            ground: 0.0,
            centre_height: 0.5 * phys.tank_height,
            radius: phys.tank_radius,
        }
    }

    /// A remote tank at local time `now`.
    pub fn remote(tank: &RemoteTank, now: Instant, phys: &Physics) -> TargetTrack {
        TargetTrack::new(tank.reckoning, now.saturating_duration_since(tank.received).as_secs_f32(), phys)
    }

    /// A tank standing at `pos` (bottom centre) for ever.
    pub fn fixed(pos: Vec3, phys: &Physics) -> TargetTrack {
        TargetTrack {
            motion: Motion::Fixed(sane3(pos.to_array())),
            age: 0.0,
            gravity: phys.gravity,
            ground: 0.0,
            centre_height: 0.5 * phys.tank_height,
            radius: phys.tank_radius,
        }
    }

    /// Our own tank, continuing on its line or arc from its present velocity and angular velocity (a ballistic
    /// fall while in the air, under `_wingsGravity` with Wings), with its flag's size.
    pub fn own(tank: &Tank, phys: &Physics) -> TargetTrack {
        let status = tank.status & (PlayerStatus::ALIVE | PlayerStatus::PAUSED | PlayerStatus::FALLING);
        let r = Reckoning::from_parts(status, tank.pos, tank.vel, tank.azimuth, tank.ang_vel, -1, None);
        let mut track = TargetTrack::new(r, 0.0, phys).with_flag(tank.flag, phys);
        if tank.flag == flag::WINGS {
            track.gravity = phys.wings_gravity;
        }
        track
    }

    /// The same tank holding `f`: its hit radius follows Obesity, Tiny and Thief; a Burrow carrier's ground is
    /// `_burrowDepth`.
    pub fn with_flag(mut self, f: Abbv, phys: &Physics) -> TargetTrack {
        self.radius = FlagEffect::of(f, phys).length * phys.tank_radius;
        self.ground = if f == flag::BURROW { phys.burrow_depth } else { 0.0 };
        self
    }

    /// The same track, `lag` seconds later (e.g. the one-way latency to the target's client, which sees our
    /// shot that much later than we fire it).
    pub fn delayed(mut self, lag: f32) -> TargetTrack {
        self.age = (self.age + sane(lag).max(0.0)).min(3600.0);
        self
    }

    /// Radius within which a shot hits: [`HIT_FACTOR`] × [`TargetTrack::radius`].
    pub fn hit_radius(&self) -> f32 {
        HIT_FACTOR * self.radius
    }

    fn pose(&self, t: f32) -> (Vec3, Vec3) {
        match &self.motion {
            Motion::Fixed(p) => (*p, Vec3::ZERO),
            Motion::Reckoned(r) => {
                let dt = (self.age + sane(t).max(0.0)).min(3600.0);
                let p = r.at(dt, self.gravity, self.ground);
                (p.pos, p.vel)
            }
        }
    }

    /// Position (bottom centre) `t` seconds from now.
    pub fn position(&self, t: f32) -> Vec3 {
        self.pose(t).0
    }

    /// Velocity `t` seconds from now.
    pub fn velocity(&self, t: f32) -> Vec3 {
        self.pose(t).1
    }

    /// The hit centre (position plus [`TargetTrack::centre_height`]) `t` seconds from now.
    pub fn centre(&self, t: f32) -> Vec3 {
        self.position(t) + Vec3::new(0.0, 0.0, self.centre_height)
    }

    /// The centre sampled every `step` seconds (at least 1 ms, coarser when more than [`MAX_SAMPLES`] would be
    /// needed) from now over `duration` seconds, for comparing with shot paths.
    pub fn sample(&self, duration: f32, step: f32) -> SampledTrack {
        let duration = if duration.is_finite() { duration.clamp(0.0, 3600.0) } else { 0.0 };
        let step = if step.is_finite() { step.max(1.0e-3) } else { SAMPLE_STEP };
        let n = ((duration / step).ceil() as usize).clamp(1, MAX_SAMPLES - 1);
        let step = if duration > 0.0 { duration / n as f32 } else { step };
        let centres = (0..=n).map(|i| self.centre(i as f32 * step)).collect();
        SampledTrack { step, centres, hit_radius: self.hit_radius() }
    }
}

/// A track's centre sampled at a fixed step from now, linear between samples.
#[derive(Debug, Clone, PartialEq)]
pub struct SampledTrack {
    step: f32,
    centres: Vec<Vec3>,
    /// Radius within which a shot hits.
    pub hit_radius: f32,
}

impl SampledTrack {
    /// Seconds covered.
    pub fn duration(&self) -> f32 {
        self.step * self.centres.len().saturating_sub(1) as f32
    }

    /// Seconds between samples.
    pub fn step(&self) -> f32 {
        self.step
    }

    /// The samples (centres), first = now.
    pub fn centres(&self) -> &[Vec3] {
        &self.centres
    }

    /// The centre `t` seconds from now (clamped to the covered time).
    pub fn centre_at(&self, t: f32) -> Vec3 {
        let last = self.centres.len().saturating_sub(1);
        let x = if t.is_finite() { (t / self.step).clamp(0.0, last as f32) } else { 0.0 };
        let i = (x.floor() as usize).min(last.saturating_sub(1));
        let a = self.centres.get(i).copied().unwrap_or(Vec3::ZERO);
        let b = self.centres.get(i + 1).copied().unwrap_or(a);
        a + (b - a) * (x - i as f32)
    }

    /// The farthest any sample is from `p`.
    pub fn spread_from(&self, p: Vec3) -> f32 {
        self.centres.iter().map(|c| c.distance(p)).fold(0.0, f32::max)
    }
}

// ------------------------------------------------------------------------------------------------------------
// Shots against tracks.

/// The closest a shot comes to a track.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Approach {
    /// Seconds from now of the closest approach. When the shot comes within the hit radius, this is the
    /// closest point of that pass (the shot would be stopped there); otherwise of the whole path.
    pub time: f32,
    /// Distance from the shot to the target's centre then.
    pub miss: f32,
    /// When the shot first comes within the hit radius (s from now), if it does.
    pub contact: Option<f32>,
    /// The shot's position at `time`.
    pub position: Vec3,
    /// The shot's velocity at `time`.
    pub velocity: Vec3,
    /// Index of the path segment the shot is on then.
    pub segment: usize,
}

impl Approach {
    /// The shot comes within the hit radius.
    pub fn hits(&self) -> bool {
        self.contact.is_some()
    }
}

/// The closest approach of relative motion `o + d·τ` over `τ ∈ [0, len]`: `(τ, distance)`.
pub(crate) fn closest(o: Vec3, d: Vec3, len: f32) -> (f32, f32) {
    let dd = d.length_squared();
    let tau = if dd > 0.0 { (-o.dot(d) / dd).clamp(0.0, len.max(0.0)) } else { 0.0 };
    let tau = if tau.is_finite() { tau } else { 0.0 };
    (tau, (o + d * tau).length())
}

/// The first `τ ∈ [0, len]` at which `|o + d·τ| ≤ r`, if any.
pub(crate) fn first_within(o: Vec3, d: Vec3, len: f32, r: f32) -> Option<f32> {
    let c = o.length_squared() - r * r;
    if c <= 0.0 {
        return Some(0.0);
    }
    let a = d.length_squared();
    let b = o.dot(d);
    if a <= 0.0 || b >= 0.0 {
        return None;
    }
    let disc = b * b - a * c;
    if disc < 0.0 {
        return None;
    }
    let t = (-b - disc.sqrt()) / a;
    (t.is_finite() && t <= len).then_some(t.max(0.0))
}

/// How close the shot whose path is `segments` (times are shot ages), `age_now` seconds old now, comes to
/// `track`'s centre within the time the track covers. Segments are taken in time order; once the shot comes
/// within the track's hit radius the search ends with the closest point of that pass, as the shot would be
/// stopped there. `None` when no segment overlaps the track's time.
pub fn closest_approach(segments: &[ShotSegment], age_now: f32, track: &SampledTrack) -> Option<Approach> {
    let age_now = sane(age_now);
    let step = track.step;
    let horizon = track.duration();
    let last = track.centres.len().saturating_sub(1);
    let r = track.hit_radius;
    let mut best: Option<Approach> = None;
    for (i, s) in segments.iter().enumerate() {
        let a = (s.t0 - age_now).max(0.0);
        let b = (s.t1 - age_now).min(horizon);
        if a > b || !s.start.is_finite() || !s.velocity.is_finite() {
            continue;
        }
        let mut k = ((a / step).floor() as usize).min(last.saturating_sub(1));
        let mut from = a;
        loop {
            let piece_end = (((k + 1) as f32) * step).min(b);
            let (c0, c1) = match (track.centres.get(k), track.centres.get(k + 1)) {
                (Some(&c0), Some(&c1)) => (c0, c1),
                (Some(&c0), None) => (c0, c0),
                _ => break,
            };
            let cv = (c1 - c0) / step;
            let centre = c0 + cv * (from - k as f32 * step);
            let shot = s.start + s.velocity * (from + age_now - s.t0);
            let o = shot - centre;
            let d = s.velocity - cv;
            let len = piece_end - from;
            let (tau, miss) = closest(o, d, len);
            let had_contact = best.and_then(|x| x.contact);
            let better = best.is_none_or(|x| miss < x.miss);
            if had_contact.is_some() && !better {
                // Moving away again after the contact: that pass is over.
                return best;
            }
            if better {
                // (Right at the radius rounding may find no entry time; the closest point is then the contact.)
                let entry = || first_within(o, d, len, r).unwrap_or(tau);
                let contact = had_contact.or_else(|| (miss <= r).then(|| from + entry()));
                let time = from + tau;
                best = Some(Approach {
                    time,
                    miss,
                    contact,
                    position: s.start + s.velocity * (time + age_now - s.t0),
                    velocity: s.velocity,
                    segment: i,
                });
            }
            if piece_end >= b || k + 1 >= last {
                break;
            }
            k += 1;
            from = piece_end;
        }
        // After a contact the shot is gone; only the rest of that pass (same segment) is looked at.
        if best.is_some_and(|x| x.contact.is_some()) {
            return best;
        }
    }
    best
}

// ------------------------------------------------------------------------------------------------------------
// Firing.

/// What we fire from, and when.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shooter {
    /// Our tank as a gun (position, velocity, flag, team, handicap; the azimuth is what a solution chooses).
    pub muzzle: Muzzle,
    /// Our player id.
    pub id: u8,
    /// The id the shot will carry (slot + salt << 8): it seeds the choice among several teleporter destinations.
    pub shot_id: u16,
    /// Local time of firing.
    pub now: Instant,
}

impl Shooter {
    /// A gun at `muzzle`, firing at `now` (shot id 0x0100: slot 0, salt 1).
    pub fn new(muzzle: Muzzle, id: u8, now: Instant) -> Shooter {
        Shooter { muzzle, id, shot_id: 0x0100, now }
    }

    /// Our tank's gun.
    pub fn of_tank(tank: &Tank, id: u8, team: Team, now: Instant) -> Shooter {
        Shooter::new(tank.muzzle(team), id, now)
    }
}

/// The shot we would fire now at `azimuth`, exactly as every client rebuilds it (through `world` when given;
/// without it, one straight segment).
pub fn fire_at(shooter: &Shooter, azimuth: f32, phys: &Physics, world: Option<&WorldModel>) -> LiveShot {
    let m = Muzzle { azimuth: wrap_angle(azimuth), ..shooter.muzzle };
    let info = firing_info(shooter.id, usize::from(shooter.shot_id & 0xff), (shooter.shot_id >> 8) as u8, &m, phys);
    LiveShot::new(&info, shooter.now, phys, world)
}

/// The closest approach to `track` of the shot fired now at `azimuth` along its real path through `world`.
pub fn evaluate(
    shooter: &Shooter,
    azimuth: f32,
    track: &SampledTrack,
    phys: &Physics,
    world: &WorldModel,
) -> Option<Approach> {
    let shot = fire_at(shooter, azimuth, phys, Some(world));
    closest_approach(&flown_path(&shot, phys, Some(world)), 0.0, track)
}

/// Step (s) of a guided missile's simulated flight.
const MISSILE_STEP: f32 = 0.1;

/// The path of `shot` in shot age, as far as it can hurt: its precomputed segments, or for a guided missile
/// its flight simulated on from its present state (straight on: a missile that homes in does better), from
/// `_gmActivationTime` on (before it the missile is harmless).
pub fn flown_path<'a>(shot: &'a LiveShot, phys: &Physics, world: Option<&WorldModel>) -> Cow<'a, [ShotSegment]> {
    let Some(m) = shot.missile.as_ref().filter(|_| shot.kind == ShotKind::GuidedMissile) else {
        return Cow::Borrowed(&shot.segments);
    };
    let mut m = m.clone();
    let life = shot.lifetime.min(MAX_LIFETIME);
    let mut out = Vec::new();
    let act = phys.gm_activation_time;
    while !m.expired && m.time < life && out.len() < 1024 {
        let t0 = m.time;
        m.step((life - t0).min(MISSILE_STEP), None, phys, world);
        if m.time <= t0 || m.time.is_nan() {
            break;
        }
        if let Some(mut s) = m.recent.first().copied() {
            if s.t1 > act {
                if s.t0 < act {
                    s.start += s.velocity * (act - s.t0);
                    s.t0 = act;
                }
                out.push(s);
            }
        }
    }
    Cow::Owned(out)
}

/// Whether the shot fired now at `azimuth` hits `track` on its real path: its closest approach when it comes
/// within the hit radius.
pub fn would_hit(
    shooter: &Shooter,
    azimuth: f32,
    track: &SampledTrack,
    phys: &Physics,
    world: &WorldModel,
) -> Option<Approach> {
    evaluate(shooter, azimuth, track, phys, world).filter(Approach::hits)
}

/// The largest azimuth error that still hits a still target `distance` away from our tank's centre with
/// hit radius `hit_radius` (the muzzle turns with the tank, so the shot's line passes through our centre):
/// `asin(hit_radius / distance)`, π/2 when the target is nearer than its radius.
pub fn azimuth_tolerance(distance: f32, hit_radius: f32) -> f32 {
    if !(distance.is_finite() && hit_radius.is_finite()) || hit_radius <= 0.0 {
        return 0.0;
    }
    if distance <= hit_radius {
        return std::f32::consts::FRAC_PI_2;
    }
    (hit_radius / distance).asin()
}

/// A way to hit a target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FiringSolution {
    /// Azimuth to fire at (radians, wrapped to [−π, π)).
    pub azimuth: f32,
    /// Seconds from firing until the shot meets the target: its closest pass on the real path when that path
    /// hits, else the solved meeting time on the straight line.
    pub flight_time: f32,
    /// Where the shot is then.
    pub impact: Vec3,
    /// How close the real path comes to the target's centre (∞ when the path ends before the target is
    /// reached, e.g. a muzzle inside a wall).
    pub miss: f32,
    /// The target's hit radius: the shot hits when `miss < hit_radius`.
    pub hit_radius: f32,
    /// Ricochets before the meeting.
    pub bounces: u32,
    /// Teleporters passed before the meeting.
    pub teleports: u32,
    /// Nothing stops or deflects the shot before the meeting point.
    pub clear: bool,
    /// The target's centre is within the hit radius of the shot's height at the meeting time (false e.g. for a
    /// jumping target, or one on another level: shots fly level).
    pub reachable: bool,
    /// Height of the target's centre above the shot at the meeting time.
    pub vertical_gap: f32,
    /// Largest azimuth error (radians, either way) that still hits: fire while turning once within it.
    pub tolerance: f32,
}

impl FiringSolution {
    /// The real path hits.
    pub fn hits(&self) -> bool {
        self.miss < self.hit_radius
    }

    /// Whether a gun pointing at `azimuth` is close enough to this solution to fire.
    pub fn on_target(&self, azimuth: f32) -> bool {
        self.hits() && wrap_angle(azimuth - self.azimuth).abs() <= self.tolerance
    }
}

/// The straight-line model of our shot: `P + mu·t + (k + ms·t)·f` horizontally, `z0 + vz·t` vertically.
#[derive(Debug, Clone, Copy)]
struct Launch {
    centre: Vec2,
    k: f32,
    ms: f32,
    mu: Vec2,
    z0: f32,
    vz: f32,
    lifetime: f32,
    kind: ShotKind,
}

impl Launch {
    /// Reads the model off two real shots (with and without our velocity), so that every flag modifier is the
    /// one the shot code applies. `None` for shots that do not travel (Shock Wave) or garbage.
    fn of(shooter: &Shooter, azimuth: f32, phys: &Physics) -> Option<Launch> {
        let moving = fire_at(shooter, azimuth, phys, None);
        if moving.kind == ShotKind::ShockWave {
            return None;
        }
        let still_muzzle = Muzzle { vel: Vec3::ZERO, ..shooter.muzzle };
        let still = fire_at(&Shooter { muzzle: still_muzzle, ..*shooter }, azimuth, phys, None);
        let centre = sane3(shooter.muzzle.pos.to_array()).truncate();
        let k = (moving.start.truncate() - centre).length();
        let ms = still.velocity.truncate().length();
        let mu = if moving.kind == ShotKind::GuidedMissile {
            Vec2::ZERO
        } else {
            (moving.velocity - still.velocity).truncate()
        };
        let lifetime = moving.lifetime.min(MAX_LIFETIME);
        let ok = k.is_finite() && ms.is_finite() && ms > 1.0e-3 && mu.is_finite() && lifetime > 0.0;
        ok.then_some(Launch {
            centre,
            k,
            ms,
            mu,
            z0: moving.start.z,
            vz: moving.velocity.z,
            lifetime,
            kind: moving.kind,
        })
    }

    /// `|D(t)| − (k + ms·t)`: positive while the target is beyond the shot's reach at time t.
    fn gap(&self, target: &TargetTrack, t: f32) -> (f32, Vec2) {
        let d = target.centre(t).truncate() - self.centre - self.mu * t;
        (d.length() - (self.k + self.ms * t), d)
    }

    /// The earliest time of flight at which the shot can meet the target, within the lifetime.
    fn meeting(&self, target: &TargetTrack) -> Option<(f32, Vec2)> {
        let (g0, d0) = self.gap(target, 0.0);
        if !g0.is_finite() {
            return None;
        }
        if g0 <= 0.0 {
            return Some((0.0, d0));
        }
        let h = self.lifetime / ROOT_SCAN as f32;
        let mut lo = 0.0f32;
        for i in 1..=ROOT_SCAN {
            let t = h * i as f32;
            let (g, _) = self.gap(target, t);
            if !g.is_finite() {
                return None;
            }
            if g <= 0.0 {
                let mut hi = t;
                for _ in 0..ROOT_BISECT {
                    let mid = 0.5 * (lo + hi);
                    if self.gap(target, mid).0 > 0.0 {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                let (_, d) = self.gap(target, hi);
                return Some((hi, d));
            }
            lo = t;
        }
        None
    }

    /// The azimuth that sends the shot along `dir` (a unit vector): `dir` itself for shots that move as the sum
    /// of our velocity and the shell's; for a missile (which flies along the normalised sum at `_shotSpeed`) the
    /// azimuth whose sum points along `dir`.
    fn azimuth_for(&self, dir: Vec2, our_vel: Vec2, speed: f32) -> f32 {
        if self.kind == ShotKind::GuidedMissile && speed > 0.0 {
            let du = dir.dot(our_vel);
            let disc = du * du - our_vel.length_squared() + speed * speed;
            if disc >= 0.0 {
                let lambda = du + disc.sqrt();
                let f = dir * lambda - our_vel;
                if f.length_squared() > 1.0e-9 {
                    return f.y.atan2(f.x);
                }
            }
        }
        dir.y.atan2(dir.x)
    }

    /// Shot position on the straight line at time `t` for azimuth `a`.
    fn at(&self, a: f32, t: f32) -> Vec3 {
        let (s, c) = a.sin_cos();
        let f = Vec2::new(c, s);
        (self.centre + self.mu * t + f * (self.k + self.ms * t)).extend(self.z0 + self.vz * t)
    }

    /// The miss of the straight shot at azimuth `a` against the target linearised at time `t_meet`.
    fn linear_miss(&self, a: f32, t_meet: f32, c: Vec3, v: Vec3) -> f32 {
        let (s, co) = a.sin_cos();
        let f = Vec2::new(co, s);
        let o = self.at(a, 0.0) - (c - v * t_meet);
        let d = (self.mu + f * self.ms).extend(self.vz) - v;
        closest(o, d, self.lifetime).1
    }

    /// The largest azimuth error either way that keeps the linearised miss under `r`.
    fn tolerance(&self, a: f32, t_meet: f32, target: &TargetTrack, r: f32) -> f32 {
        let c = target.centre(t_meet);
        let v = target.velocity(t_meet);
        if self.linear_miss(a, t_meet, c, v) >= r {
            return 0.0;
        }
        let reach = self.k + self.ms * t_meet;
        let step = (0.25 * r / reach.max(r)).clamp(1.0e-4, 0.1);
        let side = |sign: f32| {
            let mut lo = 0.0f32;
            let mut hi = None;
            for i in 1..=64 {
                let x = step * i as f32;
                if self.linear_miss(a + sign * x, t_meet, c, v) >= r {
                    hi = Some(x);
                    break;
                }
                lo = x;
            }
            let Some(mut hi) = hi else { return lo };
            for _ in 0..20 {
                let mid = 0.5 * (lo + hi);
                if self.linear_miss(a + sign * mid, t_meet, c, v) >= r {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            lo
        };
        side(1.0).min(side(-1.0))
    }
}

/// The azimuth tolerance of a path `path_len` long that misses by `miss` (hit radius `r`): reflections keep
/// angles, so an azimuth error δ moves the far end of the path about `path_len · δ` sideways.
fn path_tolerance(r: f32, miss: f32, path_len: f32) -> f32 {
    let t = (r * r - miss * miss).max(0.0).sqrt() / path_len.max(r);
    if t.is_finite() {
        t.min(std::f32::consts::FRAC_PI_2)
    } else {
        0.0
    }
}

/// Ricochets and teleports on `segments[1..=upto]`.
fn path_events(segments: &[ShotSegment], upto: usize) -> (u32, u32) {
    let mut bounces = 0;
    let mut teleports = 0;
    for s in segments.iter().take(upto + 1).skip(1) {
        match s.reason {
            SegmentReason::Ricochet => bounces += 1,
            SegmentReason::Teleport => teleports += 1,
            _ => {}
        }
    }
    (bounces, teleports)
}

/// The direct shot that leads `target`: the azimuth at which a shot fired now from `shooter` meets the target
/// on its predicted line or arc (see the module docs), verified against the real path through `world`.
///
/// `None` when the target cannot be met within the shot's lifetime (out of range, or running away faster than
/// the shot), when the flag's shot does not travel (Shock Wave), or on garbage input. A solution whose path is
/// blocked has `clear == false`; one whose target is out of the shot's height has `reachable == false`; check
/// [`FiringSolution::hits`] before firing.
pub fn lead(shooter: &Shooter, target: &TargetTrack, phys: &Physics, world: &WorldModel) -> Option<FiringSolution> {
    let p = sane3(shooter.muzzle.pos.to_array());
    let to = target.centre(0.0) - p;
    let bearing = to.y.atan2(to.x);
    let l = Launch::of(shooter, bearing, phys)?;
    let (t_meet, d) = l.meeting(target)?;
    let dir = d.normalize_or_zero();
    let our_vel = sane3(shooter.muzzle.vel.to_array()).truncate();
    let azimuth =
        if dir == Vec2::ZERO { bearing } else { wrap_angle(l.azimuth_for(dir, our_vel, l.ms.max(phys.shot_speed))) };
    let track = target.sample(l.lifetime, SAMPLE_STEP);
    let r = track.hit_radius;
    let ideal_impact = l.at(azimuth, t_meet);
    let vertical_gap = target.centre(t_meet).z - ideal_impact.z;
    let real = fire_at(shooter, azimuth, phys, Some(world));
    let segments = flown_path(&real, phys, Some(world));
    let approach = closest_approach(&segments, 0.0, &track);
    let straight = fire_at(shooter, azimuth, phys, None);
    let ideal = closest_approach(&flown_path(&straight, phys, None), 0.0, &track);
    let meet = ideal.and_then(|a| a.contact).unwrap_or(t_meet).min(t_meet);
    // How far the shot flies before anything stops or deflects it (a missile's steps all count as one flight).
    let undeflected = segments.iter().take_while(|s| s.reason == SegmentReason::Initial).last().map_or(0.0, |s| s.t1);
    let clear = undeflected + 1.0e-3 >= meet;
    let before_meeting = segments.iter().take_while(|s| s.t0 < t_meet).count().saturating_sub(1);
    let (flight_time, impact, miss, upto) = match approach {
        Some(a) if a.hits() => (a.time, a.position, a.miss, a.segment),
        Some(a) => (t_meet, ideal_impact, a.miss, before_meeting),
        None => (t_meet, ideal_impact, f32::INFINITY, before_meeting),
    };
    let (bounces, teleports) = path_events(&segments, upto);
    let tolerance = if miss >= r {
        0.0
    } else if clear {
        l.tolerance(azimuth, t_meet, target, r)
    } else {
        path_tolerance(r, miss, l.k + (l.mu + Vec2::new(l.ms, 0.0)).length() * flight_time)
    };
    Some(FiringSolution {
        azimuth,
        flight_time,
        impact,
        miss,
        hit_radius: r,
        bounces,
        teleports,
        clear,
        reachable: vertical_gap.abs() < r,
        vertical_gap,
        tolerance,
    })
}

/// One azimuth of the bank-shot search.
#[derive(Debug, Clone, Copy)]
struct BankTry {
    azimuth: f32,
    /// Closest approach of the indirect part of the path (∞ when the direct part already hits or the indirect
    /// part never comes near).
    metric: f32,
    approach: Option<Approach>,
    bounces: u32,
    teleports: u32,
}

fn bank_try(shooter: &Shooter, azimuth: f32, track: &SampledTrack, phys: &Physics, world: &WorldModel) -> BankTry {
    let azimuth = wrap_angle(azimuth);
    let shot = fire_at(shooter, azimuth, phys, Some(world));
    let mut t = BankTry { azimuth, metric: f32::INFINITY, approach: None, bounces: 0, teleports: 0 };
    let segs = &shot.segments;
    if segs.len() < 2 {
        return t;
    }
    let direct = closest_approach(&segs[..1], 0.0, track);
    if direct.is_some_and(|a| a.hits()) {
        return t;
    }
    if let Some(mut a) = closest_approach(&segs[1..], 0.0, track) {
        a.segment += 1;
        let (b, tp) = path_events(segs, a.segment);
        if b + tp == 0 {
            // Only over an outer wall's top so far: no bank shot.
            return t;
        }
        t.metric = a.miss;
        t.approach = Some(a);
        t.bounces = b;
        t.teleports = tp;
    }
    t
}

/// A shot off the walls: the azimuth whose real path, after at least one ricochet or teleporter, passes
/// closest to `target` (see the module docs), when it hits. At most [`BANK_MAX_PATHS`] paths are simulated.
/// Among paths that hit, the one with the smallest `flight_time + 0.5 s × miss / hit_radius` wins (early and
/// central). `None` when nothing hits, for missiles and shock waves, and in worlds where nothing reflects or
/// teleports a shot.
pub fn bank_shot(
    shooter: &Shooter,
    target: &TargetTrack,
    phys: &Physics,
    world: &WorldModel,
) -> Option<FiringSolution> {
    let p = sane3(shooter.muzzle.pos.to_array());
    let to = target.centre(0.0) - p;
    let bearing = to.y.atan2(to.x);
    let probe = fire_at(shooter, bearing, phys, None);
    if matches!(probe.kind, ShotKind::ShockWave | ShotKind::GuidedMissile)
        || probe.lifetime.is_nan()
        || probe.lifetime <= 0.0
        || probe.velocity.length_squared() <= 0.0
    {
        return None;
    }
    let reflects = phys.all_ricochet()
        || probe.kind == ShotKind::Ricochet
        || world.walls.iter().any(|w| w.ricochet)
        || world.solids.iter().any(|s| s.passable.ricochet)
        || world.faces.iter().any(|f| f.passable.ricochet);
    if !reflects && world.teleporters.is_empty() {
        return None;
    }
    let track = target.sample(probe.lifetime.min(MAX_LIFETIME), SAMPLE_STEP);
    let r = track.hit_radius;
    let h = std::f32::consts::TAU / BANK_COARSE as f32;
    let coarse: Vec<BankTry> =
        (0..BANK_COARSE).map(|i| bank_try(shooter, bearing + h * i as f32, &track, phys, world)).collect();
    let n = coarse.len();
    let mut minima: Vec<usize> = (0..n)
        .filter(|&i| {
            let m = coarse[i].metric;
            m.is_finite() && m <= coarse[(i + n - 1) % n].metric && m <= coarse[(i + 1) % n].metric
        })
        .collect();
    minima.sort_by(|&a, &b| coarse[a].metric.total_cmp(&coarse[b].metric));
    minima.truncate(BANK_REFINE);
    let mut hits: Vec<BankTry> = Vec::with_capacity(BANK_REFINE);
    const INV_PHI: f32 = 0.618_034;
    for &i in &minima {
        // Golden-section search on [a − h, a + h], keeping the best path seen.
        let centre = bearing + h * i as f32;
        let mut best = coarse[i];
        let (mut lo, mut hi) = (centre - h, centre + h);
        let mut x1 = hi - INV_PHI * (hi - lo);
        let mut x2 = lo + INV_PHI * (hi - lo);
        let mut f1 = bank_try(shooter, x1, &track, phys, world);
        let mut f2 = bank_try(shooter, x2, &track, phys, world);
        for f in [f1, f2] {
            if f.metric < best.metric {
                best = f;
            }
        }
        for _ in 2..BANK_REFINE_STEPS {
            if f1.metric <= f2.metric {
                hi = x2;
                x2 = x1;
                f2 = f1;
                x1 = hi - INV_PHI * (hi - lo);
                f1 = bank_try(shooter, x1, &track, phys, world);
                if f1.metric < best.metric {
                    best = f1;
                }
            } else {
                lo = x1;
                x1 = x2;
                f1 = f2;
                x2 = lo + INV_PHI * (hi - lo);
                f2 = bank_try(shooter, x2, &track, phys, world);
                if f2.metric < best.metric {
                    best = f2;
                }
            }
        }
        if best.metric < r && best.approach.is_some_and(|a| a.hits()) {
            hits.push(best);
        }
    }
    let score = |b: &BankTry| b.approach.map_or(f32::INFINITY, |a| a.time + 0.5 * a.miss / r.max(1.0e-3));
    let best = hits.into_iter().min_by(|a, b| score(a).total_cmp(&score(b)))?;
    let a = best.approach?;
    let vertical_gap = target.centre(a.time).z - a.position.z;
    let path_len = (probe.start.truncate() - p.truncate()).length() + probe.velocity.length() * a.time;
    let tolerance = path_tolerance(r, a.miss, path_len);
    Some(FiringSolution {
        azimuth: best.azimuth,
        flight_time: a.time,
        impact: a.position,
        miss: a.miss,
        hit_radius: r,
        bounces: best.bounces,
        teleports: best.teleports,
        clear: true,
        reachable: vertical_gap.abs() < r,
        vertical_gap,
        tolerance,
    })
}

#[cfg(test)]
#[path = "aim_tests.rs"]
pub(crate) mod tests;
