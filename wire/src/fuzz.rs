//! A deterministic mutator for adversarial tests: no dependencies, no global state, a seed in and the same byte
//! strings out on every run (print the seed when an assertion fails).

/// xorshift64* pseudo-random numbers.
#[derive(Clone, Debug)]
pub struct XorShift64(u64);

impl XorShift64 {
    /// A generator; a zero seed is replaced by a fixed non-zero one.
    pub fn new(seed: u64) -> Self {
        XorShift64(if seed == 0 { 0x9E37_79B9_7F4A_7C15 } else { seed })
    }

    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
}

/// Bytes that parsers tend to care about.
const INTERESTING: &[u8] = &[0, 0xff, 0x7f, 0x80, b'\\', b'/', b'\n', b'"', b' ', b'0', b'9', b'-', b'^', 0x40, 0xc3];

/// One random mutation of `base`: flip bits, overwrite with an interesting byte, insert, delete, truncate,
/// duplicate a chunk, or several of these at once.
pub fn mutate(rng: &mut XorShift64, base: &[u8]) -> Vec<u8> {
    let mut v = base.to_vec();
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        let len = v.len();
        match rng.below(7) {
            0 if len > 0 => {
                let i = rng.below(len);
                if let Some(b) = v.get_mut(i) {
                    *b ^= 1 << rng.below(8);
                }
            }
            1 if len > 0 => {
                let i = rng.below(len);
                let c = INTERESTING.get(rng.below(INTERESTING.len())).copied().unwrap_or(0);
                if let Some(b) = v.get_mut(i) {
                    *b = c;
                }
            }
            2 => {
                let i = rng.below(len + 1);
                let c = INTERESTING.get(rng.below(INTERESTING.len())).copied().unwrap_or(0);
                v.insert(i, c);
            }
            3 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(16));
                v.drain(i..i + n);
            }
            4 => v.truncate(rng.below(len + 1)),
            5 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(64));
                let chunk: Vec<u8> = v.get(i..i + n).map(<[u8]>::to_vec).unwrap_or_default();
                let at = rng.below(len + 1);
                v.splice(at..at, chunk);
            }
            _ if len > 0 => {
                let i = rng.below(len);
                if let Some(b) = v.get_mut(i) {
                    *b = rng.next_u64() as u8;
                }
            }
            _ => v.push(rng.next_u64() as u8),
        }
    }
    v
}

/// Calls `f` with every proper prefix of `data` (lengths `0..data.len()`).
pub fn for_each_truncation(data: &[u8], mut f: impl FnMut(&[u8])) {
    for n in 0..data.len() {
        f(data.get(..n).unwrap_or(&[]));
    }
}

/// Calls `f(seed, mutated)` `count` times with mutations of `data`; each mutation's seed is printed by the caller's
/// assertion to replay it.
pub fn for_each_mutation(seed: u64, data: &[u8], count: usize, mut f: impl FnMut(u64, &[u8])) {
    let mut seeds = XorShift64::new(seed);
    for _ in 0..count {
        let s = seeds.next_u64();
        let m = mutate(&mut XorShift64::new(s), data);
        f(s, &m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic() {
        let a: Vec<Vec<u8>> = {
            let mut v = Vec::new();
            for_each_mutation(7, b"hello world", 50, |_, m| v.push(m.to_vec()));
            v
        };
        let mut b = Vec::new();
        for_each_mutation(7, b"hello world", 50, |_, m| b.push(m.to_vec()));
        assert_eq!(a, b);
        assert!(a.iter().any(|m| m.as_slice() != b"hello world"));
        let mut n = 0;
        for_each_truncation(b"abc", |t| {
            assert!(t.len() < 3);
            n += 1
        });
        assert_eq!(n, 3);
        for_each_mutation(1, b"", 100, |_, _| {});
    }
}
