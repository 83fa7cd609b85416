//! Mesh transforms as matrices (BZFlag's `MeshTransform::Tool`).
//!
//! A [`MeshTransform`] is a list of steps applied in order: the matrix is `Tn · … · T2 · T1`. Shear is BZFlag's
//! own (x += s.x·z, y += s.y·z, z += s.z·x); spin is a right-handed rotation about a normalised axis (a zero axis
//! is ignored, as in the client); an index step splices in a named transform (followed at most
//! [`MAX_INDEX_DEPTH`] deep, where the client would recurse forever on a cycle).

use glam::{Affine3A, Mat3A, Vec3, Vec3A};

use super::types::{MeshTransform, TransformOp};

/// How deep [`TransformOp::Index`] references are followed.
pub const MAX_INDEX_DEPTH: usize = 16;

/// A transform ready to apply: the affine matrix plus whether it had any step at all (an empty transform
/// leaves old-style obstacles untouched, even their angle, exactly like the client).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Xform {
    /// The matrix.
    pub m: Affine3A,
    /// No step at all (not even an ineffective one).
    pub empty: bool,
}

impl Default for Xform {
    fn default() -> Self {
        Xform::IDENTITY
    }
}

/// What [`Xform::modify_old_style`] gives for a box, pyramid, base or teleporter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OldStyle {
    /// New position (centre of the bottom).
    pub pos: Vec3,
    /// New size.
    pub size: Vec3,
    /// New rotation about +z, radians.
    pub angle: f32,
    /// The z axis was turned upside down (the position has been moved down by the height).
    pub flipped: bool,
}

impl Xform {
    /// No transform.
    pub const IDENTITY: Xform = Xform { m: Affine3A::IDENTITY, empty: true };

    /// The matrix of `t`, resolving index steps through `named` (the world's section 5). Also returns false
    /// when an index step was dropped (out of range or nested deeper than [`MAX_INDEX_DEPTH`]).
    pub fn from_transform(t: &MeshTransform, named: &[MeshTransform]) -> (Xform, bool) {
        let mut m = Affine3A::IDENTITY;
        let mut ok = true;
        apply_ops(&mut m, &t.ops, named, 0, &mut ok);
        (Xform { m, empty: t.ops.is_empty() }, ok)
    }

    /// `self` first, then `outer` (the client's `prepend`/`append` of step lists).
    pub fn then(self, outer: Xform) -> Xform {
        if self.empty {
            return outer;
        }
        if outer.empty {
            return self;
        }
        Xform { m: outer.m * self.m, empty: false }
    }

    /// Transforms a point.
    pub fn point(&self, p: Vec3) -> Vec3 {
        if self.empty {
            p
        } else {
            self.m.transform_point3(p)
        }
    }

    /// True when the transform mirrors (negative determinant): face windings must then be reversed.
    pub fn is_inverted(&self) -> bool {
        !self.empty && self.m.matrix3.determinant() < 0.0
    }

    /// BZFlag's `modifyOldStyle`: moves the position, scales the size by the lengths of the transformed axes,
    /// takes the angle from the transformed x axis, and reports a flipped z axis (then the position is moved
    /// down by the new height).
    pub fn modify_old_style(&self, pos: Vec3, size: Vec3, angle: f32) -> OldStyle {
        if self.empty {
            return OldStyle { pos, size, angle, flipped: false };
        }
        let mut pos = self.point(pos);
        let (s, c) = angle.sin_cos();
        let m: Mat3A = self.m.matrix3;
        let x = m * Vec3A::new(c, s, 0.0);
        let y = m * Vec3A::new(-s, c, 0.0);
        let z = m.z_axis;
        let size = Vec3::new(size.x * x.length(), size.y * y.length(), size.z * z.length());
        let angle = x.y.atan2(x.x);
        let flipped = z.z < 0.0;
        if flipped {
            pos.z -= size.z;
        }
        OldStyle { pos, size, angle, flipped }
    }
}

fn apply_ops(m: &mut Affine3A, ops: &[TransformOp], named: &[MeshTransform], depth: usize, ok: &mut bool) {
    for op in ops {
        let t = match *op {
            TransformOp::Shift(v) => Affine3A::from_translation(v),
            TransformOp::Scale(v) => Affine3A::from_scale(v),
            TransformOp::Shear(v) => Affine3A::from_mat3(glam::Mat3::from_cols(
                Vec3::new(1.0, 0.0, v.z),
                Vec3::new(0.0, 1.0, 0.0),
                Vec3::new(v.x, v.y, 1.0),
            )),
            TransformOp::Spin { axis, angle } => {
                let len2 = axis.length_squared();
                if !len2.is_finite() || len2 <= 0.0 {
                    continue;
                }
                Affine3A::from_axis_angle(axis / len2.sqrt(), angle)
            }
            TransformOp::Index(i) => {
                match usize::try_from(i).ok().and_then(|i| named.get(i)) {
                    Some(t) if depth < MAX_INDEX_DEPTH => apply_ops(m, &t.ops, named, depth + 1, ok),
                    _ => *ok = false,
                }
                continue;
            }
        };
        *m = t * *m;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x(ops: Vec<TransformOp>) -> Xform {
        Xform::from_transform(&MeshTransform { name: String::new(), ops }, &[]).0
    }

    fn close(a: Vec3, b: Vec3) -> bool {
        (a - b).abs().max_element() < 1e-4
    }

    #[test]
    fn steps_apply_in_list_order() {
        let t = x(vec![TransformOp::Shift(Vec3::X), TransformOp::Scale(Vec3::splat(2.0))]);
        assert!(close(t.point(Vec3::ZERO), Vec3::new(2.0, 0.0, 0.0)));
        let t = x(vec![
            TransformOp::Spin { axis: Vec3::Z, angle: std::f32::consts::FRAC_PI_2 },
            TransformOp::Shift(Vec3::new(10.0, 0.0, 0.0)),
        ]);
        assert!(close(t.point(Vec3::X), Vec3::new(10.0, 1.0, 0.0)));
    }

    #[test]
    fn shear_is_bzflags() {
        let t = x(vec![TransformOp::Shear(Vec3::new(1.0, 2.0, 3.0))]);
        assert!(close(t.point(Vec3::new(1.0, 0.0, 1.0)), Vec3::new(2.0, 2.0, 4.0)));
    }

    #[test]
    fn old_style_rotates_scales_and_flips() {
        let t = x(vec![
            TransformOp::Spin { axis: Vec3::Z, angle: std::f32::consts::FRAC_PI_4 },
            TransformOp::Scale(Vec3::new(2.0, 2.0, -1.0)),
        ]);
        let o = t.modify_old_style(Vec3::new(1.0, 0.0, 0.0), Vec3::new(3.0, 4.0, 5.0), 0.0);
        assert!((o.angle - std::f32::consts::FRAC_PI_4).abs() < 1e-5);
        assert!(close(o.size, Vec3::new(6.0, 8.0, 5.0)));
        assert!(o.flipped);
        assert!(close(o.pos, Vec3::new(2f32.sqrt(), 2f32.sqrt(), -5.0)));
        assert!(t.is_inverted());
    }

    #[test]
    fn index_cycles_stop() {
        let named = vec![MeshTransform { name: "a".into(), ops: vec![TransformOp::Index(0)] }];
        let (t, ok) =
            Xform::from_transform(&MeshTransform { name: String::new(), ops: vec![TransformOp::Index(0)] }, &named);
        assert!(!ok);
        assert_eq!(t.m, Affine3A::IDENTITY);
        let (_, ok) =
            Xform::from_transform(&MeshTransform { name: String::new(), ops: vec![TransformOp::Index(7)] }, &named);
        assert!(!ok);
    }
}
