//! A bounding volume hierarchy over the model's primitives: binned surface-area-heuristic build, ordered
//! front-to-back segment traversal with early termination, and box-overlap traversal. Built once per world;
//! queries take `&self` and allocate nothing.

use glam::Vec3;

use super::geometry::Aabb;

/// Leaves hold at most this many primitives (unless the depth limit forces more).
const MAX_LEAF: usize = 4;
/// Depth limit of the build; the traversal stack is sized from it.
const MAX_DEPTH: usize = 48;
const BINS: usize = 16;

#[derive(Debug, Clone, Copy)]
struct Node {
    bounds: Aabb,
    /// Interior: index of the left child (the right one follows it). Leaf: first entry of `order`.
    first: u32,
    /// 0 for interior nodes.
    count: u32,
}

/// The hierarchy. Primitives are referred to by their index in the slice given to [`Bvh::build`].
#[derive(Debug, Clone, Default)]
pub struct Bvh {
    nodes: Vec<Node>,
    order: Vec<u32>,
}

impl Bvh {
    /// Builds the hierarchy over primitive bounds (non-finite bounds must have been filtered out).
    pub fn build(bounds: &[Aabb]) -> Bvh {
        let n = bounds.len().min(u32::MAX as usize);
        let mut order: Vec<u32> = (0..n as u32).collect();
        let centers: Vec<Vec3> = bounds.iter().map(Aabb::center).collect();
        let mut nodes = Vec::with_capacity(2 * n / MAX_LEAF + 1);
        if n == 0 {
            return Bvh { nodes, order };
        }
        nodes.push(Node { bounds: Aabb::EMPTY, first: 0, count: 0 });
        // (node, start, end, depth)
        let mut work = vec![(0usize, 0usize, n, 0usize)];
        while let Some((node, start, end, depth)) = work.pop() {
            let slice = &mut order[start..end];
            let nb = slice.iter().fold(Aabb::EMPTY, |b, &i| b.union(&bounds[i as usize]));
            let count = end - start;
            let leaf = |nodes: &mut Vec<Node>| {
                nodes[node] = Node { bounds: nb, first: start as u32, count: count as u32 };
            };
            if count <= 1 || depth >= MAX_DEPTH {
                leaf(&mut nodes);
                continue;
            }
            let cb = Aabb::of(slice.iter().map(|&i| centers[i as usize]));
            let ext = cb.max - cb.min;
            let axis = if ext.x >= ext.y && ext.x >= ext.z {
                0
            } else if ext.y >= ext.z {
                1
            } else {
                2
            };
            let mid = if ext[axis] <= 1.0e-6 {
                if count <= MAX_LEAF {
                    leaf(&mut nodes);
                    continue;
                }
                count / 2 // all centres coincide: split the list in halves
            } else {
                match sah_split(slice, bounds, &centers, axis, cb.min[axis], ext[axis], nb.area(), count) {
                    Some(m) => m,
                    None if count <= MAX_LEAF => {
                        leaf(&mut nodes);
                        continue;
                    }
                    None => {
                        slice.select_nth_unstable_by(count / 2, |&a, &b| {
                            centers[a as usize][axis].total_cmp(&centers[b as usize][axis])
                        });
                        count / 2
                    }
                }
            };
            let left = nodes.len();
            nodes.push(Node { bounds: Aabb::EMPTY, first: 0, count: 0 });
            nodes.push(Node { bounds: Aabb::EMPTY, first: 0, count: 0 });
            nodes[node] = Node { bounds: nb, first: left as u32, count: 0 };
            work.push((left, start, start + mid, depth + 1));
            work.push((left + 1, start + mid, end, depth + 1));
        }
        Bvh { nodes, order }
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Heap memory held, in bytes.
    pub fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>() + self.order.capacity() * 4
    }

    /// Visits the primitives whose bounds the segment `o + t·d`, `t ∈ [0, tmax]`, may meet, nearest boxes
    /// first. `visit(prim, t_best)` returns a new, smaller `t_best` when it found a hit there; boxes beyond
    /// `t_best` are skipped.
    pub fn ray(&self, o: Vec3, d: Vec3, tmax: f32, mut visit: impl FnMut(u32, f32) -> Option<f32>) {
        if self.nodes.is_empty() {
            return;
        }
        let inv = d.recip();
        let mut best = tmax;
        let mut stack = [(0u32, 0.0f32); MAX_DEPTH + 2];
        let mut sp = 0;
        let Some((t0, _)) = self.nodes[0].bounds.ray(o, inv, 0.0, best) else { return };
        stack[sp] = (0, t0);
        sp += 1;
        while sp > 0 {
            sp -= 1;
            let (ni, tn) = stack[sp];
            if tn > best {
                continue;
            }
            let node = &self.nodes[ni as usize];
            if node.count > 0 {
                let first = node.first as usize;
                for &p in &self.order[first..first + node.count as usize] {
                    if let Some(t) = visit(p, best) {
                        best = best.min(t);
                    }
                }
                continue;
            }
            let (l, r) = (node.first, node.first + 1);
            let hl = self.nodes[l as usize].bounds.ray(o, inv, 0.0, best);
            let hr = self.nodes[r as usize].bounds.ray(o, inv, 0.0, best);
            match (hl, hr) {
                (Some((tl, _)), Some((tr, _))) => {
                    // Push the far child first so the near one is popped next.
                    let (near, far) = if tl <= tr { ((l, tl), (r, tr)) } else { ((r, tr), (l, tl)) };
                    stack[sp] = far;
                    stack[sp + 1] = near;
                    sp += 2;
                }
                (Some((tl, _)), None) => {
                    stack[sp] = (l, tl);
                    sp += 1;
                }
                (None, Some((tr, _))) => {
                    stack[sp] = (r, tr);
                    sp += 1;
                }
                (None, None) => {}
            }
        }
    }

    /// Visits the primitives whose bounds overlap `b`; stops early when `visit` returns true.
    pub fn overlap(&self, b: &Aabb, mut visit: impl FnMut(u32) -> bool) {
        if self.nodes.is_empty() {
            return;
        }
        let mut stack = [0u32; MAX_DEPTH + 2];
        let mut sp = 1;
        while sp > 0 {
            sp -= 1;
            let node = &self.nodes[stack[sp] as usize];
            if !node.bounds.overlaps(b) {
                continue;
            }
            if node.count > 0 {
                let first = node.first as usize;
                for &p in &self.order[first..first + node.count as usize] {
                    if visit(p) {
                        return;
                    }
                }
            } else {
                stack[sp] = node.first;
                stack[sp + 1] = node.first + 1;
                sp += 2;
            }
        }
    }
}

/// Partitions `slice` at the cheapest of the bin boundaries along `axis`; `None` when no split beats a leaf
/// or every primitive fell on one side.
#[allow(clippy::too_many_arguments)]
fn sah_split(
    slice: &mut [u32],
    bounds: &[Aabb],
    centers: &[Vec3],
    axis: usize,
    cmin: f32,
    cext: f32,
    node_area: f32,
    count: usize,
) -> Option<usize> {
    let scale = BINS as f32 / cext;
    let bin_of = |i: u32| (((centers[i as usize][axis] - cmin) * scale) as usize).min(BINS - 1);
    let mut bin_box = [Aabb::EMPTY; BINS];
    let mut bin_n = [0usize; BINS];
    for &i in slice.iter() {
        let b = bin_of(i);
        bin_n[b] += 1;
        bin_box[b] = bin_box[b].union(&bounds[i as usize]);
    }
    // Right-to-left sweep of areas and counts.
    let mut right_area = [0.0f32; BINS];
    let mut right_n = [0usize; BINS];
    let (mut acc, mut n) = (Aabb::EMPTY, 0);
    for k in (1..BINS).rev() {
        acc = acc.union(&bin_box[k]);
        n += bin_n[k];
        right_area[k] = acc.area();
        right_n[k] = n;
    }
    let (mut acc, mut n) = (Aabb::EMPTY, 0);
    let mut best = (f32::INFINITY, 0usize);
    for k in 1..BINS {
        acc = acc.union(&bin_box[k - 1]);
        n += bin_n[k - 1];
        if n == 0 || right_n[k] == 0 {
            continue;
        }
        let cost = acc.area() * n as f32 + right_area[k] * right_n[k] as f32;
        if cost < best.0 {
            best = (cost, k);
        }
    }
    let leaf_cost = node_area * count as f32;
    if best.1 == 0 || (count <= MAX_LEAF && best.0 >= leaf_cost) {
        return None;
    }
    // Partition in place.
    let mut lo = 0;
    for j in 0..slice.len() {
        if bin_of(slice[j]) < best.1 {
            slice.swap(lo, j);
            lo += 1;
        }
    }
    (lo > 0 && lo < slice.len()).then_some(lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boxes(n: usize) -> Vec<Aabb> {
        // A deterministic scatter of unit boxes.
        let mut s = 12345u32;
        let mut rnd = || {
            s = s.wrapping_mul(1103515245).wrapping_add(12345);
            (s >> 8) as f32 / (1 << 24) as f32
        };
        (0..n)
            .map(|_| {
                let c = Vec3::new(rnd() * 400.0 - 200.0, rnd() * 400.0 - 200.0, rnd() * 20.0);
                Aabb { min: c - Vec3::splat(1.0), max: c + Vec3::splat(1.0) }
            })
            .collect()
    }

    #[test]
    fn overlap_and_ray_find_what_a_scan_finds() {
        let b = boxes(3000);
        let bvh = Bvh::build(&b);
        let q = Aabb { min: Vec3::new(-30.0, -30.0, 0.0), max: Vec3::new(30.0, 30.0, 5.0) };
        let mut found = Vec::new();
        bvh.overlap(&q, |i| {
            if b[i as usize].overlaps(&q) {
                found.push(i);
            }
            false
        });
        found.sort();
        let scan: Vec<u32> = (0..b.len() as u32).filter(|&i| b[i as usize].overlaps(&q)).collect();
        assert_eq!(found, scan);

        let (o, d) = (Vec3::new(-250.0, -3.0, 2.0), Vec3::new(500.0, 7.0, 3.0));
        let inv = d.recip();
        let mut first = None;
        bvh.ray(o, d, 1.0, |i, best| {
            let (t, _) = b[i as usize].ray(o, inv, 0.0, best)?;
            first = Some(i);
            Some(t)
        });
        let scan = (0..b.len())
            .filter_map(|i| b[i].ray(o, inv, 0.0, 1.0).map(|(t, _)| (t, i as u32)))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|x| x.1);
        assert_eq!(first, scan);
    }

    #[test]
    fn degenerate_inputs() {
        let bvh = Bvh::build(&[]);
        bvh.ray(Vec3::ZERO, Vec3::X, 1.0, |_, _| panic!("no primitives"));
        let same = vec![Aabb { min: Vec3::ZERO, max: Vec3::ONE }; 1000];
        let bvh = Bvh::build(&same);
        let mut n = 0;
        bvh.overlap(&same[0], |_| {
            n += 1;
            false
        });
        assert_eq!(n, 1000);
    }
}
