//! Geometric primitives of the world model and their exact tests: axis-aligned bounds, convex solids (boxes,
//! bases, pyramids, teleporter posts and crossbars), planar convex polygons (mesh faces) and the oriented tank
//! box. Segment tests are slab/clipping tests; overlap tests are separating-axis tests in which merely touching
//! shapes do not collide (a tank standing on a roof is not inside the building).

use glam::Vec3;
use serde::Serialize;

/// Overlaps thinner than this do not count as collisions (touching is allowed).
pub const TOUCH: f32 = 1.0e-4;

/// An axis-aligned bounding box.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Aabb {
    /// Smallest corner.
    pub min: Vec3,
    /// Largest corner.
    pub max: Vec3,
}

impl Aabb {
    /// The empty box (grows from nothing).
    pub const EMPTY: Aabb = Aabb { min: Vec3::splat(f32::INFINITY), max: Vec3::splat(f32::NEG_INFINITY) };

    /// The bounds of some points.
    pub fn of(points: impl IntoIterator<Item = Vec3>) -> Aabb {
        let mut b = Aabb::EMPTY;
        for p in points {
            b.grow(p);
        }
        b
    }

    /// Includes `p`.
    pub fn grow(&mut self, p: Vec3) {
        self.min = self.min.min(p);
        self.max = self.max.max(p);
    }

    /// The union.
    pub fn union(&self, o: &Aabb) -> Aabb {
        Aabb { min: self.min.min(o.min), max: self.max.max(o.max) }
    }

    /// True when nothing was added.
    pub fn is_empty(&self) -> bool {
        self.min.x > self.max.x || self.min.y > self.max.y || self.min.z > self.max.z
    }

    /// Centre.
    pub fn center(&self) -> Vec3 {
        (self.min + self.max) * 0.5
    }

    /// Surface area (for the BVH cost).
    pub fn area(&self) -> f32 {
        if self.is_empty() {
            return 0.0;
        }
        let d = self.max - self.min;
        2.0 * (d.x * d.y + d.y * d.z + d.z * d.x)
    }

    /// The boxes overlap (closed intervals).
    pub fn overlaps(&self, o: &Aabb) -> bool {
        self.min.x <= o.max.x
            && o.min.x <= self.max.x
            && self.min.y <= o.max.y
            && o.min.y <= self.max.y
            && self.min.z <= o.max.z
            && o.min.z <= self.max.z
    }

    /// The point is inside (closed).
    pub fn contains(&self, p: Vec3) -> bool {
        p.cmpge(self.min).all() && p.cmple(self.max).all()
    }

    /// Entry and exit parameters of the ray `o + t·d` with `1/d` given, clipped to `[t0, t1]`; `None` if it
    /// misses.
    #[inline]
    pub fn ray(&self, o: Vec3, inv_d: Vec3, t0: f32, t1: f32) -> Option<(f32, f32)> {
        let (mut tmin, mut tmax) = (t0, t1);
        for k in 0..3 {
            if inv_d[k].is_infinite() {
                // Parallel to this slab: inside it or a miss (0 · ∞ would be NaN on its boundary).
                if o[k] < self.min[k] || o[k] > self.max[k] {
                    return None;
                }
                continue;
            }
            let a = (self.min[k] - o[k]) * inv_d[k];
            let b = (self.max[k] - o[k]) * inv_d[k];
            tmin = tmin.max(a.min(b));
            tmax = tmax.min(a.max(b));
        }
        (tmin <= tmax).then_some((tmin, tmax))
    }
}

/// A plane `normal · p + d = 0`; the normal is unit length and points out of the solid (or off the front of a
/// face).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Plane {
    /// Unit normal.
    pub normal: Vec3,
    /// Offset.
    pub d: f32,
}

impl Plane {
    /// The plane through `p` with normal `n` (normalised here; a zero normal gives +z).
    pub fn new(n: Vec3, p: Vec3) -> Plane {
        let normal = n.try_normalize().unwrap_or(Vec3::Z);
        Plane { normal, d: -normal.dot(p) }
    }

    /// Signed distance of `p` (positive in front / outside).
    #[inline]
    pub fn distance(&self, p: Vec3) -> f32 {
        self.normal.dot(p) + self.d
    }
}

/// Where a segment first meets a shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RayHit {
    /// Parameter along the segment, 0 at its start and 1 at its end.
    pub t: f32,
    /// Surface normal at the hit (unit, facing the segment's start).
    pub normal: Vec3,
    /// The segment starts inside the solid (then `t` is 0 and the normal is minus the direction).
    pub inside: bool,
}

/// A convex solid with at most 6 faces and 8 corners: an oriented box (box, base, teleporter post or crossbar)
/// or a pyramid (upright or flipped).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Convex {
    planes: [Plane; 6],
    n_planes: u8,
    verts: [Vec3; 8],
    n_verts: u8,
    edges: [Vec3; 6],
    n_edges: u8,
}

impl Convex {
    /// An oriented box: `pos` is the centre of the bottom, `angle` the rotation about +z, `half` the half-width,
    /// half-breadth and the **full** height (BZFlag's `size`). Negative sizes are taken as their absolute value.
    pub fn oriented_box(pos: Vec3, angle: f32, size: Vec3) -> Convex {
        let (s, c) = angle.sin_cos();
        let ax = Vec3::new(c, s, 0.0);
        let ay = Vec3::new(-s, c, 0.0);
        let sz = size.abs();
        let center = pos + Vec3::new(0.0, 0.0, sz.z * 0.5);
        let half = Vec3::new(sz.x, sz.y, sz.z * 0.5);
        let axes = [ax, ay, Vec3::Z];
        let mut planes = [Plane { normal: Vec3::Z, d: 0.0 }; 6];
        for (k, a) in axes.iter().enumerate() {
            planes[2 * k] = Plane::new(*a, center + *a * half[k]);
            planes[2 * k + 1] = Plane::new(-*a, center - *a * half[k]);
        }
        let mut verts = [Vec3::ZERO; 8];
        for (i, v) in verts.iter_mut().enumerate() {
            let sx = if i & 1 == 0 { -1.0 } else { 1.0 };
            let sy = if i & 2 == 0 { -1.0 } else { 1.0 };
            let sz = if i & 4 == 0 { -1.0 } else { 1.0 };
            *v = center + ax * (sx * half.x) + ay * (sy * half.y) + Vec3::Z * (sz * half.z);
        }
        let mut edges = [Vec3::ZERO; 6];
        edges[..3].copy_from_slice(&axes);
        Convex { planes, n_planes: 6, verts, n_verts: 8, edges, n_edges: 3 }
    }

    /// A pyramid on a `2·size.x × 2·size.y` base centred at `pos`, `size.z` high, rotated by `angle`; flipped:
    /// the apex at `pos` and the base on top.
    pub fn pyramid(pos: Vec3, angle: f32, size: Vec3, flipped: bool) -> Convex {
        let (s, c) = angle.sin_cos();
        let ax = Vec3::new(c, s, 0.0);
        let ay = Vec3::new(-s, c, 0.0);
        let sz = size.abs();
        let (base_z, apex_z) = if flipped { (pos.z + sz.z, pos.z) } else { (pos.z, pos.z + sz.z) };
        let base_c = Vec3::new(pos.x, pos.y, base_z);
        let apex = Vec3::new(pos.x, pos.y, apex_z);
        let corners = [
            base_c - ax * sz.x - ay * sz.y,
            base_c + ax * sz.x - ay * sz.y,
            base_c + ax * sz.x + ay * sz.y,
            base_c - ax * sz.x + ay * sz.y,
        ];
        let mut verts = [Vec3::ZERO; 8];
        verts[..4].copy_from_slice(&corners);
        verts[4] = apex;
        let down = if flipped { Vec3::Z } else { -Vec3::Z };
        let mut planes = [Plane { normal: down, d: 0.0 }; 6];
        planes[0] = Plane::new(down, base_c);
        // Side k through corners k, k+1 and the apex; its outward normal in local terms is (±h, 0, w) etc.
        let side_dirs = [(-ay, sz.y), (ax, sz.x), (ay, sz.y), (-ax, sz.x)];
        let vz = if flipped { -1.0 } else { 1.0 };
        for (k, (dir, half)) in side_dirs.iter().enumerate() {
            // Outward normal of a side: horizontal component along `dir` scaled by the height, vertical by the
            // half-extent (pointing up for an upright pyramid, down for a flipped one).
            let n = *dir * sz.z + Vec3::Z * (vz * *half);
            let n = if n.length_squared() > 0.0 { n } else { *dir };
            planes[k + 1] = Plane::new(n, corners[k]);
        }
        let mut edges = [Vec3::ZERO; 6];
        edges[0] = ax;
        edges[1] = ay;
        for k in 0..4 {
            edges[2 + k] = apex - corners[k];
        }
        Convex { planes, n_planes: 5, verts, n_verts: 5, edges, n_edges: 6 }
    }

    /// The face planes.
    pub fn planes(&self) -> &[Plane] {
        &self.planes[..self.n_planes as usize]
    }

    /// The corners.
    pub fn vertices(&self) -> &[Vec3] {
        &self.verts[..self.n_verts as usize]
    }

    /// Bounds.
    pub fn aabb(&self) -> Aabb {
        Aabb::of(self.vertices().iter().copied())
    }

    /// The point is strictly inside (deeper than [`TOUCH`]).
    pub fn contains(&self, p: Vec3) -> bool {
        self.planes().iter().all(|pl| pl.distance(p) < -TOUCH)
    }

    /// First meeting of the segment `o + t·d`, `t ∈ [0, tmax]`, with the solid.
    pub fn ray(&self, o: Vec3, d: Vec3, tmax: f32) -> Option<RayHit> {
        let mut t_enter = 0.0f32;
        let mut t_exit = tmax;
        let mut normal = None;
        for pl in self.planes() {
            let dist = pl.distance(o);
            let denom = pl.normal.dot(d);
            if denom == 0.0 {
                if dist > 0.0 {
                    return None;
                }
                continue;
            }
            let t = -dist / denom;
            if denom < 0.0 {
                if t > t_enter || (normal.is_none() && dist >= 0.0) {
                    t_enter = t.max(0.0);
                    normal = Some(pl.normal);
                }
            } else if t < t_exit {
                t_exit = t;
            }
            if t_enter > t_exit {
                return None;
            }
        }
        match normal {
            Some(n) => Some(RayHit { t: t_enter, normal: n, inside: false }),
            // Inside every plane at the start.
            None => Some(RayHit { t: 0.0, normal: -d.try_normalize().unwrap_or(Vec3::Z), inside: true }),
        }
    }

    /// The solid and the oriented box overlap by more than [`TOUCH`] on every separating axis.
    pub fn overlaps_obb(&self, b: &Obb) -> bool {
        let verts = self.vertices();
        let separated = |axis: Vec3| -> bool {
            let len2 = axis.length_squared();
            if len2 < 1.0e-12 {
                return false;
            }
            let axis = axis / len2.sqrt();
            let (lo, hi) = project(verts, axis);
            let (blo, bhi) = b.project(axis);
            hi - blo <= TOUCH || bhi - lo <= TOUCH
        };
        if self.planes().iter().any(|p| separated(p.normal)) {
            return false;
        }
        if b.axes.iter().any(|&a| separated(a)) {
            return false;
        }
        for e in &self.edges[..self.n_edges as usize] {
            for a in &b.axes {
                if separated(e.cross(*a)) {
                    return false;
                }
            }
        }
        true
    }
}

fn project(verts: &[Vec3], axis: Vec3) -> (f32, f32) {
    let mut lo = f32::INFINITY;
    let mut hi = f32::NEG_INFINITY;
    for v in verts {
        let x = v.dot(axis);
        lo = lo.min(x);
        hi = hi.max(x);
    }
    (lo, hi)
}

/// An oriented box standing upright (rotated about +z only): a tank.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Obb {
    /// Centre.
    pub center: Vec3,
    /// Unit axes: forward, left, up.
    pub axes: [Vec3; 3],
    /// Half extents along the axes.
    pub half: Vec3,
}

impl Obb {
    /// A box with its bottom centre at `pos`, rotated by `angle`, `half_length` × `half_width` × `height`.
    pub fn upright(pos: Vec3, angle: f32, half_length: f32, half_width: f32, height: f32) -> Obb {
        let (s, c) = angle.sin_cos();
        Obb {
            center: pos + Vec3::new(0.0, 0.0, height * 0.5),
            axes: [Vec3::new(c, s, 0.0), Vec3::new(-s, c, 0.0), Vec3::Z],
            half: Vec3::new(half_length.abs(), half_width.abs(), height.abs() * 0.5),
        }
    }

    /// Interval of the box on a unit axis.
    pub fn project(&self, axis: Vec3) -> (f32, f32) {
        let c = self.center.dot(axis);
        let r = self.half.x * self.axes[0].dot(axis).abs()
            + self.half.y * self.axes[1].dot(axis).abs()
            + self.half.z * self.axes[2].dot(axis).abs();
        (c - r, c + r)
    }

    /// Bounds.
    pub fn aabb(&self) -> Aabb {
        let r = Vec3::new(
            self.half.x * self.axes[0].x.abs() + self.half.y * self.axes[1].x.abs(),
            self.half.x * self.axes[0].y.abs() + self.half.y * self.axes[1].y.abs(),
            self.half.z,
        );
        Aabb { min: self.center - r, max: self.center + r }
    }

    /// The eight corners.
    pub fn corners(&self) -> [Vec3; 8] {
        let mut out = [Vec3::ZERO; 8];
        for (i, v) in out.iter_mut().enumerate() {
            let sx = if i & 1 == 0 { -1.0 } else { 1.0 };
            let sy = if i & 2 == 0 { -1.0 } else { 1.0 };
            let sz = if i & 4 == 0 { -1.0 } else { 1.0 };
            *v = self.center
                + self.axes[0] * (sx * self.half.x)
                + self.axes[1] * (sy * self.half.y)
                + self.axes[2] * (sz * self.half.z);
        }
        out
    }
}

/// A planar convex polygon, as BZFlag checks mesh faces (`MeshFace::finalize`): `None` for a degenerate,
/// non-convex or non-planar polygon (the client drops such faces). The plane's normal follows the
/// counter-clockwise winding; faces that are (almost) horizontal get an exactly vertical normal, like the client.
pub fn face_plane(verts: &[Vec3]) -> Option<Plane> {
    let n = verts.len();
    if n < 3 {
        return None;
    }
    // Newell's normal (the area vector): robust and O(n), where the client searches all vertex triples.
    let mut newell = Vec3::ZERO;
    for (k, a) in verts.iter().enumerate() {
        let b = verts[(k + 1) % n];
        newell += Vec3::new((a.y - b.y) * (a.z + b.z), (a.z - b.z) * (a.x + b.x), (a.x - b.x) * (a.y + b.y));
    }
    let len2 = newell.length_squared();
    if !len2.is_finite() || len2 < 1.0e-20 {
        return None;
    }
    let normal = newell / len2.sqrt();
    let centroid = verts.iter().copied().sum::<Vec3>() / n as f32;
    let mut plane = Plane { normal, d: -normal.dot(centroid) };
    // Convex: every turn goes the same way as the normal.
    for k in 0..n {
        let a = verts[(k + 1) % n] - verts[k];
        let b = verts[(k + 2) % n] - verts[(k + 1) % n];
        if a.cross(b).dot(normal) <= 0.0 {
            return None;
        }
    }
    // Planar within 1e-3.
    if verts.iter().any(|v| plane.distance(*v).abs() > 1.0e-3) {
        return None;
    }
    const FUDGE: f32 = 1.0e-5;
    if normal.z.abs() + FUDGE >= 1.0 {
        let z = verts.iter().map(|v| v.z).fold(f32::INFINITY, f32::min);
        plane = if normal.z > 0.0 { Plane { normal: Vec3::Z, d: -z } } else { Plane { normal: -Vec3::Z, d: z } };
    }
    Some(plane)
}

/// The inward-facing edge planes of a convex polygon with plane `plane` (a point is inside the polygon when it
/// is behind all of them): `edge × normal`, as the client builds them.
pub fn edge_planes(verts: &[Vec3], plane: &Plane, out: &mut Vec<Plane>) {
    let n = verts.len();
    for k in 0..n {
        let e = verts[(k + 1) % n] - verts[k];
        out.push(Plane::new(e.cross(plane.normal), verts[k]));
    }
}

/// `MeshFace::intersect` for a segment `o + t·d`, `t ∈ [0, tmax]`: faces are one-sided (only hit from the front)
/// and a hit may lie up to 0.001 outside an edge. `d_len` is the length of `d`.
#[inline]
pub fn face_ray(plane: &Plane, edges: &[Plane], o: Vec3, d: Vec3, d_len: f32, tmax: f32) -> Option<f32> {
    let linedot = plane.normal.dot(d);
    // The client refuses `n·dir >= -0.001` with its (un-normalised, speed 100) shot velocity; scale-free here.
    if linedot >= -1.0e-5 * d_len {
        return None;
    }
    let t = -(plane.d + plane.normal.dot(o)) / linedot;
    if !(0.0..=tmax).contains(&t) {
        return None;
    }
    let p = o + d * t;
    if edges.iter().any(|e| e.distance(p) > 0.001) {
        return None;
    }
    Some(t)
}

/// A convex polygon (with its plane) and the oriented box overlap by more than [`TOUCH`].
pub fn face_overlaps_obb(verts: &[Vec3], plane: &Plane, b: &Obb) -> bool {
    let separated = |axis: Vec3| -> bool {
        let len2 = axis.length_squared();
        if len2 < 1.0e-12 {
            return false;
        }
        let axis = axis / len2.sqrt();
        let (lo, hi) = project(verts, axis);
        let (blo, bhi) = b.project(axis);
        hi - blo <= TOUCH || bhi - lo <= TOUCH
    };
    if separated(plane.normal) || b.axes.iter().any(|&a| separated(a)) {
        return false;
    }
    let n = verts.len();
    for k in 0..n {
        let e = verts[(k + 1) % n] - verts[k];
        for a in &b.axes {
            if separated(e.cross(*a)) {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aabb_rays_on_a_slab_boundary_still_hit() {
        let b = Aabb { min: Vec3::new(0.0, -55.0, 0.0), max: Vec3::new(1.0, -45.0, 10.0) };
        let d = Vec3::new(0.0, 0.0, -20.0);
        assert_eq!(b.ray(Vec3::new(0.5, -55.0, 15.0), d.recip(), 0.0, 1.0), Some((0.25, 0.75)));
        assert_eq!(b.ray(Vec3::new(0.5, -55.1, 15.0), d.recip(), 0.0, 1.0), None);
        assert_eq!(b.ray(Vec3::new(1.0, -45.0, 15.0), d.recip(), 0.0, 1.0), Some((0.25, 0.75)));
    }

    #[test]
    fn box_ray_hits_and_normals() {
        let b = Convex::oriented_box(Vec3::new(10.0, 0.0, 0.0), 0.0, Vec3::new(2.0, 3.0, 4.0));
        let h = b.ray(Vec3::new(0.0, 0.0, 1.0), Vec3::new(20.0, 0.0, 0.0), 1.0).unwrap();
        assert!((h.t - 0.4).abs() < 1e-6 && h.normal == Vec3::new(-1.0, 0.0, 0.0) && !h.inside);
        let h = b.ray(Vec3::new(10.0, 0.0, 10.0), Vec3::new(0.0, 0.0, -10.0), 1.0).unwrap();
        assert!((h.t - 0.6).abs() < 1e-6 && h.normal == Vec3::Z);
        assert!(b.ray(Vec3::new(0.0, 0.0, 5.0), Vec3::new(20.0, 0.0, 0.0), 1.0).is_none());
        assert!(b.ray(Vec3::new(0.0, 0.0, 1.0), Vec3::new(5.0, 0.0, 0.0), 1.0).is_none());
        let h = b.ray(Vec3::new(10.0, 0.0, 1.0), Vec3::new(5.0, 0.0, 0.0), 1.0).unwrap();
        assert!(h.inside && h.t == 0.0);
    }

    #[test]
    fn pyramid_sides_slope() {
        let p = Convex::pyramid(Vec3::ZERO, 0.0, Vec3::new(4.0, 4.0, 8.0), false);
        // Straight down onto the slope at x = 2: height there is 4.
        let h = p.ray(Vec3::new(2.0, 0.0, 10.0), Vec3::new(0.0, 0.0, -10.0), 1.0).unwrap();
        assert!((10.0 - 10.0 * h.t - 4.0).abs() < 1e-5);
        let n = Vec3::new(8.0, 0.0, 4.0).normalize();
        assert!((h.normal - n).length() < 1e-5, "{:?}", h.normal);
        let f = Convex::pyramid(Vec3::ZERO, 0.0, Vec3::new(4.0, 4.0, 8.0), true);
        let h = f.ray(Vec3::new(2.0, 0.0, 10.0), Vec3::new(0.0, 0.0, -10.0), 1.0).unwrap();
        assert!((h.t - 0.2).abs() < 1e-5 && h.normal == Vec3::Z);
        assert!(f.contains(Vec3::new(3.0, 0.0, 7.0)) && !f.contains(Vec3::new(3.0, 0.0, 1.0)));
    }

    #[test]
    fn touching_is_not_colliding() {
        let b = Convex::oriented_box(Vec3::ZERO, 0.0, Vec3::new(5.0, 5.0, 3.0));
        assert!(!b.overlaps_obb(&Obb::upright(Vec3::new(0.0, 0.0, 3.0), 0.3, 3.0, 1.4, 2.05)));
        assert!(b.overlaps_obb(&Obb::upright(Vec3::new(0.0, 0.0, 2.9), 0.3, 3.0, 1.4, 2.05)));
        assert!(!b.overlaps_obb(&Obb::upright(Vec3::new(8.0, 0.0, 0.0), 0.0, 3.0, 1.4, 2.05)));
        assert!(b.overlaps_obb(&Obb::upright(Vec3::new(7.9, 0.0, 0.0), 0.0, 3.0, 1.4, 2.05)));
        // Rotated 45°: the corner reaches 3·cos45 + 1.4·sin45 ≈ 3.11 forward.
        let a = std::f32::consts::FRAC_PI_4;
        assert!(!b.overlaps_obb(&Obb::upright(Vec3::new(8.2, 0.0, 0.0), a, 3.0, 1.4, 2.05)));
        assert!(b.overlaps_obb(&Obb::upright(Vec3::new(8.0, 0.0, 0.0), a, 3.0, 1.4, 2.05)));
    }

    #[test]
    fn faces_validate_like_the_client() {
        let sq = [Vec3::ZERO, Vec3::X, Vec3::new(1.0, 1.0, 0.0), Vec3::Y];
        let p = face_plane(&sq).unwrap();
        assert_eq!((p.normal, p.d), (Vec3::Z, 0.0));
        let mut rev = sq;
        rev.reverse();
        assert_eq!(face_plane(&rev).unwrap().normal, -Vec3::Z);
        assert!(face_plane(&[Vec3::ZERO, Vec3::X, Vec3::X * 2.0]).is_none()); // degenerate
        assert!(face_plane(&[
            Vec3::ZERO,
            Vec3::new(2.0, 0.0, 0.0),
            Vec3::new(1.0, 0.2, 0.0),
            Vec3::new(1.0, 1.0, 0.0)
        ])
        .is_none()); // non-convex
        assert!(face_plane(&[Vec3::ZERO, Vec3::X, Vec3::new(1.0, 1.0, 0.1), Vec3::Y]).is_none()); // non-planar
        let mut e = Vec::new();
        edge_planes(&sq, &p, &mut e);
        // One-sided: from above only.
        assert_eq!(face_ray(&p, &e, Vec3::new(0.5, 0.5, 1.0), Vec3::new(0.0, 0.0, -2.0), 2.0, 1.0), Some(0.5));
        assert_eq!(face_ray(&p, &e, Vec3::new(0.5, 0.5, -1.0), Vec3::new(0.0, 0.0, 2.0), 2.0, 1.0), None);
        assert_eq!(face_ray(&p, &e, Vec3::new(1.5, 0.5, 1.0), Vec3::new(0.0, 0.0, -2.0), 2.0, 1.0), None);
        let tank = Obb::upright(Vec3::new(0.5, 0.5, -1.0), 0.0, 3.0, 1.4, 2.05);
        assert!(face_overlaps_obb(&sq, &p, &tank));
        let tank = Obb::upright(Vec3::new(0.5, 0.5, 0.0), 0.0, 3.0, 1.4, 2.05);
        assert!(!face_overlaps_obb(&sq, &p, &tank));
    }
}
