//! Teleporter links resolved the way the 2.4 client does it (`LinkManager::doLinking`, `findTelesByName`,
//! `getTeleportTarget`).
//!
//! Faces are numbered `2·i` (front, `name:f`, the +x side) and `2·i + 1` (back, `name:b`) where `i` is the
//! teleporter's index in the final teleporter list. A link's names are glob patterns (`*`, `?`, case-sensitive
//! except that a trailing `F`/`B` is lowered; a leading `:` is ignored). Every face matched by `from` gets every
//! face matched by `to` (no duplicates, in link order); a face that no link sends anywhere leads to the opposite
//! face of its own teleporter. A link whose side matches nothing is broken and ignored.

use serde::Serialize;

use super::types::Link;

/// One face's destinations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FaceLinks {
    /// Destination faces, in the order the client tries them.
    pub targets: Vec<u32>,
    /// True when some link named this face (false: the default pass-through to the opposite face).
    pub explicit: bool,
}

/// All faces' destinations.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LinkTable {
    /// Indexed by face number.
    pub faces: Vec<FaceLinks>,
    /// Indices (into the world's link list) of links with a side that matched no face.
    pub broken: Vec<usize>,
}

/// The most name-matching work [`LinkTable::resolve`] takes on: the sum over links of (pattern bytes) × (face
/// name bytes), the worst case of the glob matcher. The 2.4 client matches every link side against every face, so
/// a world with many teleporters and many links makes this grow with their product; real worlds stay below a
/// few million.
pub const MAX_LINK_MATCH_WORK: u64 = 1 << 28;

/// The most destinations the link table may hold before duplicates are dropped (each takes 4 bytes): the sum over
/// links of (faces matched by `from`) × (faces matched by `to`). One `*` to `*` link over 512 teleporters makes a
/// million; real worlds name their links and hold a few hundred.
pub const MAX_LINK_TARGETS: u64 = 1 << 20;

/// Why the links could not be resolved: they would take more work or memory than allowed. Counted before the
/// work is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkLimitError {
    /// What there would be too much of: "steps of link name matching" or "link destinations".
    pub what: &'static str,
    /// How much there would be (saturated at `u64::MAX`).
    pub count: u64,
    /// The cap.
    pub limit: u64,
}

impl std::fmt::Display for LinkLimitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the teleporter links would take {} {}, over the limit of {}", self.count, self.what, self.limit)
    }
}

impl std::error::Error for LinkLimitError {}

/// The worst-case matching work of `links` against faces whose names take `face_bytes` in all (each face's name
/// plus its `:f`/`:b`), as [`MAX_LINK_MATCH_WORK`] counts it.
pub fn match_work(links: &[Link], face_bytes: u64) -> u64 {
    let pattern_bytes =
        links.iter().fold(0u64, |acc, l| acc.saturating_add(l.from.len() as u64 + l.to.len() as u64 + 2));
    pattern_bytes.saturating_mul(face_bytes)
}

/// The bytes of every face name of teleporters called `names` (`name:f` and `name:b`).
pub fn face_bytes(names: &[String]) -> u64 {
    names.iter().fold(0u64, |acc, n| acc.saturating_add(2 * (n.len() as u64 + 2)))
}

impl LinkTable {
    /// Resolves `links` against teleporter names in final order, within [`MAX_LINK_MATCH_WORK`] and
    /// [`MAX_LINK_TARGETS`].
    pub fn resolve(links: &[Link], names: &[String]) -> Result<LinkTable, LinkLimitError> {
        LinkTable::resolve_within(links, names, MAX_LINK_MATCH_WORK, MAX_LINK_TARGETS)
    }

    /// [`LinkTable::resolve`] with other caps: the matching work is counted before any name is matched, the
    /// destinations before the table is built; past either cap nothing more is done.
    pub fn resolve_within(
        links: &[Link],
        names: &[String],
        max_work: u64,
        max_targets: u64,
    ) -> Result<LinkTable, LinkLimitError> {
        let work = match_work(links, face_bytes(names));
        if work > max_work {
            return Err(LinkLimitError { what: "steps of link name matching", count: work, limit: max_work });
        }
        let nfaces = names.len() * 2;
        let mut matched = Vec::with_capacity(links.len());
        let mut targets = 0u64;
        for link in links {
            let src = find_faces(&link.from, names);
            let dst = find_faces(&link.to, names);
            targets = targets.saturating_add((src.len() as u64).saturating_mul(dst.len() as u64));
            if targets > max_targets {
                return Err(LinkLimitError { what: "link destinations", count: targets, limit: max_targets });
            }
            matched.push((src, dst));
        }
        let mut faces: Vec<FaceLinks> = vec![FaceLinks { targets: Vec::new(), explicit: false }; nfaces];
        let mut broken = Vec::new();
        for (k, (src, dst)) in matched.iter().enumerate() {
            if src.is_empty() || dst.is_empty() {
                broken.push(k);
                continue;
            }
            for &s in src {
                if let Some(f) = faces.get_mut(s as usize) {
                    f.explicit = true;
                    f.targets.extend_from_slice(dst);
                }
            }
        }
        // Duplicates dropped, first occurrence kept, in one pass: `stamp[d]` is the last face that listed `d`.
        let mut stamp = vec![u32::MAX; nfaces];
        for (i, f) in faces.iter_mut().enumerate() {
            f.targets.retain(|&d| match stamp.get_mut(d as usize) {
                Some(s) if *s == i as u32 => false,
                Some(s) => {
                    *s = i as u32;
                    true
                }
                None => false,
            });
            f.targets.shrink_to_fit();
            if f.targets.is_empty() {
                f.explicit = false;
                f.targets.push(((i / 2) * 2 + (1 - i % 2)) as u32);
            }
        }
        Ok(LinkTable { faces, broken })
    }

    /// Where a shot entering `face` goes (`getTeleportTarget(source, seed)`): with several destinations the
    /// choice is `((seed · 1103515245 + 12345) >> 8) mod n` in 32-bit arithmetic, where the client's seed is
    /// the shot id plus the segment number.
    pub fn shot_target(&self, face: u32, seed: u32) -> Option<u32> {
        let t = &self.faces.get(face as usize)?.targets;
        match t.len() {
            0 => None,
            1 => t.first().copied(),
            n => {
                let s = (seed.wrapping_mul(1103515245).wrapping_add(12345)) >> 8;
                t.get(s as usize % n).copied()
            }
        }
    }

    /// The destinations of `face` (a tank picks one at random).
    pub fn targets(&self, face: u32) -> &[u32] {
        self.faces.get(face as usize).map_or(&[], |f| &f.targets)
    }
}

/// `findTelesByName`: the faces whose `name:f` / `name:b` match the pattern.
pub fn find_faces(pattern: &str, names: &[String]) -> Vec<u32> {
    let mut glob: Vec<u8> = pattern.as_bytes().to_vec();
    if glob.is_empty() {
        return Vec::new();
    }
    if glob.first() == Some(&b':') {
        glob.remove(0);
    }
    if let Some(last) = glob.last_mut() {
        if *last == b'F' || *last == b'B' {
            *last = last.to_ascii_lowercase();
        }
    }
    let mut out = Vec::new();
    let mut name = Vec::new();
    for (i, n) in names.iter().enumerate() {
        for (suffix, face) in [(b":f", 0u32), (b":b", 1u32)] {
            name.clear();
            name.extend_from_slice(n.as_bytes());
            name.extend_from_slice(suffix);
            if glob_match(&glob, &name) {
                out.push(i as u32 * 2 + face);
            }
        }
    }
    out
}

/// `*` matches any run (also empty), `?` exactly one byte, anything else itself.
pub fn glob_match(pattern: &[u8], s: &[u8]) -> bool {
    let (mut p, mut i) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, i));
                p += 1;
            }
            Some(&c) if c == b'?' || c == s[i] => {
                p += 1;
                i += 1;
            }
            _ => match star {
                Some((sp, si)) => {
                    p = sp + 1;
                    i = si + 1;
                    star = Some((sp, si + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p.min(pattern.len())..].iter().all(|&c| c == b'*')
}

/// glibc's `qsort` (a top-down merge sort) with a comparator that returns "less" or "greater" but never
/// "equal", as `compareHeights` does: the client and bzfs sort the teleporter list by top height this way, and
/// the face numbers in `MsgTeleport` depend on the resulting order.
pub fn glibc_msort<T: Copy>(v: &mut [T], greater: &impl Fn(&T, &T) -> bool) {
    let n = v.len();
    if n <= 1 {
        return;
    }
    let n1 = n / 2;
    let (a, b) = v.split_at_mut(n1);
    glibc_msort(a, greater);
    glibc_msort(b, greater);
    let mut out = Vec::with_capacity(n);
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        // `cmp(b1, b2) <= 0` takes from the left run.
        if !greater(&a[i], &b[j]) {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    v.copy_from_slice(&out);
}

/// The teleporter order the client ends with: `GroupDefinitionMgr::makeWorld` sorts every obstacle list ten
/// times (once per obstacle type, each time all lists) with `compareHeights` (taller first; ties report
/// "greater"). `tops` are the teleporters' top heights in expansion order; the result is the permutation.
pub fn client_teleporter_order(tops: &[f32]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..tops.len()).collect();
    // compareHeights(a, b) = -1 if top(a) > top(b) else +1; "greater" means +1.
    let greater = |a: &usize, b: &usize| !matches!(tops[*a].partial_cmp(&tops[*b]), Some(std::cmp::Ordering::Greater));
    for _ in 0..10 {
        glibc_msort(&mut idx, &greater);
    }
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn globs() {
        assert!(glob_match(b"*", b""));
        assert!(glob_match(b"a*:f", b"alpha:f"));
        assert!(!glob_match(b"a*:f", b"alpha:b"));
        assert!(glob_match(b"?eta:?", b"beta:b"));
        assert!(glob_match(b"*t*", b"/t3:f"));
        assert!(glob_match(b"a**b", b"ab"));
        assert!(!glob_match(b"a?b", b"ab"));
        assert!(glob_match(b"/hut/*:/t0:f", b"/hut/1:/t0:f"));
    }

    #[test]
    fn resolution_follows_the_client() {
        let n = names(&["alpha", "beta", "/t2"]);
        let links = vec![
            Link { from: "alpha:f".into(), to: "beta:b".into() },
            Link { from: "beta:*".into(), to: "alpha:F".into() },
            Link { from: ":alpha:f".into(), to: "*:b".into() },
            Link { from: "nothing".into(), to: "alpha:f".into() },
        ];
        let t = LinkTable::resolve(&links, &n).unwrap();
        assert_eq!(t.targets(0), &[3, 1, 5]); // alpha:f → beta:b, then every back face (no duplicates)
        assert_eq!(t.targets(1), &[0]); // alpha:b unlinked → alpha:f
        assert!(!t.faces[1].explicit);
        assert_eq!(t.targets(2), &[0]);
        assert_eq!(t.targets(3), &[0]);
        assert_eq!(t.targets(4), &[5]); // /t2:f → /t2:b
        assert_eq!(t.targets(5), &[4]);
        assert_eq!(t.broken, vec![3]);
        assert_eq!(t.shot_target(0, 0), Some([3, 1, 5][(12345u32 >> 8) as usize % 3]));
        assert_eq!(t.shot_target(4, 99), Some(5));
        assert_eq!(t.shot_target(77, 0), None);
    }

    #[test]
    fn work_and_destinations_are_capped_before_they_are_spent() {
        let n: Vec<String> = (0..100).map(|i| format!("t{i}")).collect();
        let all = vec![Link { from: "*".into(), to: "*".into() }];
        // 200 faces to 200 faces: 40,000 destinations.
        let t = LinkTable::resolve_within(&all, &n, u64::MAX, 40_000).unwrap();
        assert_eq!(t.targets(7).len(), 200);
        let e = LinkTable::resolve_within(&all, &n, u64::MAX, 39_999).unwrap_err();
        assert_eq!((e.what, e.count, e.limit), ("link destinations", 40_000, 39_999));
        // Duplicates from repeated links count against the cap but are stored once.
        let twice = vec![all[0].clone(), all[0].clone()];
        assert!(LinkTable::resolve_within(&twice, &n, u64::MAX, 40_000).is_err());
        assert_eq!(LinkTable::resolve_within(&twice, &n, u64::MAX, 80_000).unwrap().targets(0).len(), 200);
        // Matching work: (1 + 1 + 2) pattern bytes × the face names' bytes.
        let work = match_work(&all, face_bytes(&n));
        assert_eq!(work, 4 * face_bytes(&n));
        let e = LinkTable::resolve_within(&all, &n, work - 1, u64::MAX).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "the teleporter links would take {work} steps of link name matching, over the limit of {}",
                work - 1
            )
        );
    }

    #[test]
    fn client_order_is_glibcs() {
        // Equal heights: each sort reverses, ten sorts give the original order back.
        assert_eq!(client_teleporter_order(&[10.0; 5]), vec![0, 1, 2, 3, 4]);
        assert_eq!(client_teleporter_order(&[1.0, 3.0, 2.0]), vec![1, 2, 0]);
        let mut v = vec![0usize, 1, 2];
        glibc_msort(&mut v, &|_: &usize, _: &usize| true);
        assert_eq!(v, vec![2, 1, 0]);
    }
}
