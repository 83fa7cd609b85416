//! Shot paths as the 2.4 client precomputes them (`SegmentedShotStrategy::makeSegments`, fact sheet §9.5):
//! straight segments until the lifetime is used up (at most 100), each ending at the ground, the first obstacle
//! that stops shots, or a teleporter field. A teleporter continues the shot from the linked face (the choice
//! among several destinations is seeded with the shot id plus the segment number); an obstacle stops the shot
//! unless it ricochets (its own bit, or every obstacle when the shot ricochets: the R flag or the server's `+r`),
//! a ricochet reflecting the velocity about the surface normal; a ricocheting shot over the top of an outer wall
//! flies on; the ground stops a shot or bounces a ricocheting one. Shots that ignore obstacles (SB, PZ) are only
//! stopped by the ground and still teleported.

use glam::Vec3;

use super::model::WorldModel;
use super::spatial::Mask;
use super::types::ObstacleKind;

const EPSILON: f32 = 1.0e-6;
const MAX_SEGMENTS: usize = 100;

/// How a shot treats obstacles.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShotOptions {
    /// Every obstacle reflects the shot (the R flag, or the `+r` server option).
    pub ricochet: bool,
    /// The shot passes through every obstacle (Super Bullet, Phantom Zone).
    pub through: bool,
    /// The shot id (`slot + (salt << 8)`): seeds the choice among several teleporter destinations.
    pub shot_id: u16,
    /// How far behind the start the first segment looks for obstacles (`_muzzleFront`, 4.42 by default): a
    /// tank firing with its muzzle inside a wall hits the wall.
    pub muzzle_front: f32,
}

impl Default for ShotOptions {
    fn default() -> Self {
        ShotOptions { ricochet: false, through: false, shot_id: 0, muzzle_front: 4.42 }
    }
}

/// Why a segment starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentReason {
    /// The first segment.
    Initial,
    /// After bouncing off an obstacle or the ground.
    Ricochet,
    /// After coming out of a teleporter.
    Teleport,
    /// After passing over the top of an outer wall.
    Boundary,
}

/// One straight piece of a shot's path: the shot is at `start + velocity · (t − t0)` for `t0 ≤ t ≤ t1`
/// (seconds after it was fired).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShotSegment {
    /// Position at `t0`.
    pub start: Vec3,
    /// Velocity along the segment.
    pub velocity: Vec3,
    /// Start time.
    pub t0: f32,
    /// End time.
    pub t1: f32,
    /// Why the segment starts.
    pub reason: SegmentReason,
}

impl ShotSegment {
    /// Position at the end.
    pub fn end(&self) -> Vec3 {
        self.start + self.velocity * (self.t1 - self.t0)
    }
}

impl WorldModel {
    /// The path of a shot fired at `start` with `velocity` that lives `lifetime` seconds.
    pub fn shot_path(&self, start: Vec3, velocity: Vec3, lifetime: f32, opts: &ShotOptions) -> Vec<ShotSegment> {
        let mut out = Vec::new();
        let speed = velocity.length();
        if !speed.is_finite() || speed <= 0.0 || !start.is_finite() || lifetime.is_nan() || lifetime <= 0.0 {
            return out;
        }
        let mut time_left = lifetime.min(1.0e4);
        let mut min_time = opts.muzzle_front.max(0.0) / speed;
        let (mut o, mut d) = (start, velocity);
        let mut t_start = 0.0f32;
        let mut reason = SegmentReason::Initial;
        let edge = self.world_size * 0.5 - 0.01;
        for i in 0..MAX_SEGMENTS {
            if time_left <= EPSILON {
                break;
            }
            let mut o2 = o - d * min_time;
            // The first segment starts backed off by the muzzle distance and clamped into the world; a shot that
            // later passed over an outer wall is outside and stays there.
            if i == 0 {
                o2.x = o2.x.clamp(-edge, edge);
                o2.y = o2.y.clamp(-edge, edge);
            }
            let mut t = time_left + min_time;
            // The ground (only when moving down).
            let mut ground = false;
            if d.z < 0.0 {
                let tg = o2.z / -d.z;
                if tg > EPSILON && tg < t {
                    t = tg;
                    ground = true;
                }
            }
            // The first obstacle or teleporter field before that.
            let hit = self.first_hit_after(o2, d, t, !opts.through);
            if let Some(h) = &hit {
                t *= h.t;
                ground = false;
            }
            t -= min_time;
            min_time = 0.0;
            let dt = if t < 0.0 { EPSILON } else { t };
            out.push(ShotSegment { start: o, velocity: d, t0: t_start, t1: t_start + dt, reason });
            t_start += dt;
            time_left -= dt;
            let Some(h) = hit else {
                if ground {
                    if opts.ricochet {
                        o += d * t;
                        d.z = -d.z;
                        reason = SegmentReason::Ricochet;
                        continue;
                    }
                    break;
                }
                continue;
            };
            o += d * t;
            if let Some(entry) = h.teleport {
                let seed = u32::from(opts.shot_id).wrapping_add(i as u32);
                let Some(target) = self.shot_target(entry.face, seed) else { break };
                let Some((p, nd, _)) = self.teleport(entry.face, target, o, d) else { break };
                o = p;
                d = nd;
                reason = SegmentReason::Teleport;
                continue;
            }
            let is_wall = self.obstacle(h.obstacle).is_some_and(|ob| ob.kind == ObstacleKind::Wall);
            if is_wall && opts.ricochet && h.above_wall {
                reason = SegmentReason::Boundary;
                continue;
            }
            if !(opts.ricochet || h.ricochet) {
                break;
            }
            d -= h.normal * (2.0 * d.dot(h.normal));
            reason = SegmentReason::Ricochet;
        }
        out
    }

    /// The first hit on `o + d·[0, t]` that lies beyond [`EPSILON`] (as a fraction of the whole segment). A
    /// segment that starts on a surface (after a ricochet or a teleport) meets that surface at once; the query is
    /// then repeated from a little further on, so that what lies behind is still found.
    fn first_hit_after(&self, o: Vec3, d: Vec3, t: f32, solids: bool) -> Option<super::spatial::Hit> {
        const STEP: f32 = 1.0e-4;
        let mut from = 0.0f32;
        for _ in 0..8 {
            if from >= t {
                return None;
            }
            let mut h = self.first_hit(o + d * from, o + d * t, solids)?;
            let at = from + h.t * (t - from);
            if at > EPSILON {
                h.t = at / t;
                return Some(h);
            }
            from = at.max(from) + STEP;
        }
        None
    }

    /// The first obstacle that stops shots (when `solids`) or teleporter field on the segment.
    fn first_hit(&self, a: Vec3, b: Vec3, solids: bool) -> Option<super::spatial::Hit> {
        if solids {
            self.segment(a, b, Mask::Shots)
        } else {
            self.segment_fields(a, b)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bzflag::world::parse_blob;

    fn model() -> WorldModel {
        let blob = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/bzflag/02-custom-world.bin")).unwrap();
        WorldModel::build(&parse_blob(&blob).unwrap()).unwrap()
    }

    fn close(a: Vec3, b: Vec3) -> bool {
        (a - b).abs().max_element() < 1.0e-3
    }

    #[test]
    fn a_shot_stops_at_a_box_or_ricochets_off_it() {
        let m = model();
        // The plain box at (50, 0) (rotated 30°): entered at x = 40 by a shot along +x at z 4.
        let opts = ShotOptions { muzzle_front: 0.0, ..ShotOptions::default() };
        let p = m.shot_path(Vec3::new(0.0, 0.0, 4.0), Vec3::new(100.0, 0.0, 0.0), 3.5, &opts);
        assert_eq!(p.len(), 1);
        assert!(close(p[0].end(), Vec3::new(40.0, 0.0, 4.0)) && (p[0].t1 - 0.4).abs() < 1e-5);
        // With ricochet it reflects about the side's normal n = (−sin 30°, cos 30°, 0).
        let p = m.shot_path(
            Vec3::new(0.0, 0.0, 4.0),
            Vec3::new(100.0, 0.0, 0.0),
            3.5,
            &ShotOptions { ricochet: true, ..opts },
        );
        assert!(p.len() >= 2);
        assert_eq!(p[1].reason, SegmentReason::Ricochet);
        let n = Vec3::new(-0.5, 3f32.sqrt() / 2.0, 0.0);
        let v = Vec3::new(100.0, 0.0, 0.0);
        assert!(close(p[1].velocity, v - n * (2.0 * v.dot(n))));
        assert!(close(p[1].start, Vec3::new(40.0, 0.0, 4.0)));
        let total: f32 = p.iter().map(|s| s.t1 - s.t0).sum();
        assert!((total - 3.5).abs() < 1e-3, "the whole lifetime is used: {total}");
    }

    #[test]
    fn a_shot_goes_through_alpha_and_out_of_beta() {
        let m = model();
        let opts = ShotOptions { muzzle_front: 0.0, shot_id: 0x0100, ..ShotOptions::default() };
        let p = m.shot_path(Vec3::new(10.0, 60.0, 3.0), Vec3::new(-100.0, 0.0, 0.0), 3.5, &opts);
        assert_eq!(p[1].reason, SegmentReason::Teleport);
        assert!(close(p[1].start, Vec3::new(0.0, -60.56, 3.0)) && close(p[1].velocity, Vec3::new(0.0, -100.0, 0.0)));
        // It then flies south until the outer wall at y = −200 stops it.
        let last = p.last().unwrap();
        assert!(close(last.end(), Vec3::new(0.0, -200.0, 3.0)), "{p:?}");
        // A Super Bullet is teleported too, and then leaves the world (nothing stops it).
        let sb = ShotOptions { through: true, ..opts };
        let p = m.shot_path(Vec3::new(10.0, 60.0, 3.0), Vec3::new(-100.0, 0.0, 0.0), 3.0, &sb);
        assert_eq!(p.len(), 2);
        assert!(close(p[1].end(), Vec3::new(0.0, -60.56 - 100.0 * (3.0 - 0.0944), 3.0)));
    }

    #[test]
    fn ground_and_walls() {
        let m = model();
        let opts = ShotOptions { muzzle_front: 0.0, ..ShotOptions::default() };
        // Falling onto open ground near (−100, 150): stops there, or bounces with ricochet.
        let p = m.shot_path(Vec3::new(-100.0, 150.0, 10.0), Vec3::new(0.0, 10.0, -10.0), 3.0, &opts);
        assert_eq!(p.len(), 1);
        assert!(close(p[0].end(), Vec3::new(-100.0, 160.0, 0.0)));
        let r = ShotOptions { ricochet: true, ..opts };
        let p = m.shot_path(Vec3::new(-100.0, 150.0, 10.0), Vec3::new(0.0, 10.0, -10.0), 3.0, &r);
        assert_eq!(p[1].reason, SegmentReason::Ricochet);
        assert!(close(p[1].velocity, Vec3::new(0.0, 10.0, 10.0)));
        // Over the top of the outer wall (6.15 high) a ricocheting shot flies on; a plain one stops.
        let p = m.shot_path(Vec3::new(-150.0, 190.0, 20.0), Vec3::new(0.0, 100.0, 0.0), 1.0, &r);
        assert_eq!(p[1].reason, SegmentReason::Boundary);
        let p = m.shot_path(Vec3::new(-150.0, 190.0, 20.0), Vec3::new(0.0, 100.0, 0.0), 1.0, &opts);
        assert_eq!(p.len(), 1);
        assert!(close(p[0].end(), Vec3::new(-150.0, 200.0, 20.0)));
    }
}
