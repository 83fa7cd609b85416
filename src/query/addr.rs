//! The scanner's address keys: addresses in one normal form ([`normalize`]), as compact hash keys ([`AddrKey`]),
//! hashed with a cheap keyed hasher ([`AddrHash`]).
//!
//! A scan looks its maps up several times per query (the running query of a source address, the end time of the
//! last query to it, every (protocol, address) queued so far, a master's entries), so these keys are what a lookup
//! costs: an IP as one 128-bit word and a port, hashed in a few multiplications instead of feeding a `SocketAddr`
//! piece by piece to SipHash.

use std::hash::{BuildHasher, Hash, Hasher};
use std::net::SocketAddr;

/// An address in the one form the scanner keys by: an IPv4-mapped IPv6 address becomes its IPv4 address, and IPv6
/// flow information and scope are dropped (replies are matched by address and port only).
pub(crate) fn normalize(a: SocketAddr) -> SocketAddr {
    match a {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(v4.into(), v6.port()),
            None => SocketAddr::new((*v6.ip()).into(), v6.port()),
        },
        v4 => v4,
    }
}

/// A normalised address as a hash key: the IP as 128 bits (IPv4 as its IPv4-mapped IPv6 form, which [`normalize`]
/// never leaves as an IPv6 address) and the port, hashed in two writes. Hashing a `SocketAddr` itself feeds the
/// (DoS-resistant, keyed) hasher piece by piece and costs a few times more; the maps are looked up several times per
/// query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AddrKey {
    ip: u128,
    port: u16,
}

impl AddrKey {
    /// The key of an address that went through [`normalize`] (IPv6 flow and scope are zero there).
    pub(crate) fn new(a: SocketAddr) -> AddrKey {
        let ip = match a {
            SocketAddr::V4(v4) => u128::from(v4.ip().to_ipv6_mapped()),
            SocketAddr::V6(v6) => u128::from(*v6.ip()),
        };
        AddrKey { ip, port: a.port() }
    }
}

impl Hash for AddrKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_u128(self.ip);
        h.write_u16(self.port);
    }
}

/// The hasher of the scheduler's address maps: a keyed multiply-and-fold over the few words of an [`AddrKey`] (and a
/// protocol index), with a key drawn per map from the standard library's random source, so that the layout of a
/// map cannot be predicted from a list of addresses. The standard (SipHash) hasher costs several times more, and
/// the maps are looked up several times per query.
#[derive(Clone, Copy)]
pub(crate) struct AddrHash {
    key: [u64; 2],
}

impl Default for AddrHash {
    fn default() -> AddrHash {
        let r = std::collections::hash_map::RandomState::new();
        AddrHash { key: [r.hash_one(0x5a17_u64), r.hash_one(0xb0b5_u64)] }
    }
}

impl BuildHasher for AddrHash {
    type Hasher = AddrHasher;

    fn build_hasher(&self) -> AddrHasher {
        AddrHasher { h: self.key[0], k: self.key[1] }
    }
}

/// See [`AddrHash`].
pub(crate) struct AddrHasher {
    h: u64,
    k: u64,
}

/// The high and low halves of the full product, folded.
fn fold_mul(a: u64, b: u64) -> u64 {
    let p = u128::from(a).wrapping_mul(u128::from(b));
    (p as u64) ^ ((p >> 64) as u64)
}

impl AddrHasher {
    fn mix(&mut self, w: u64) {
        self.h = fold_mul(self.h ^ w, self.k ^ 0x9E37_79B9_7F4A_7C15);
    }
}

impl Hasher for AddrHasher {
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b.get_mut(..c.len()).unwrap_or(&mut []).copy_from_slice(c);
            self.mix(u64::from_le_bytes(b) ^ ((c.len() as u64) << 59));
        }
    }

    fn write_u16(&mut self, n: u16) {
        self.mix(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.mix(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.mix(n as u64);
    }

    fn write_u128(&mut self, n: u128) {
        self.mix(n as u64);
        self.mix((n >> 64) as u64);
    }

    fn finish(&self) -> u64 {
        fold_mul(self.h, self.k | 1)
    }
}
