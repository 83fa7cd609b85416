//! What a scan takes from a master's list: a master is untrusted, and the addresses it lists are where the scan
//! sends its queries. Left alone, a master could turn a scan into a port scan of the scanning host's own network
//! (loopback, private, link-local addresses) or into a flood of one third party (one address on every port).
//!
//! [`special_use`] says whether an address is one of the special-use blocks of the IANA IPv4 and IPv6
//! special-purpose registries (RFC 6890 and its updates) that a public game server cannot have, and which;
//! [`EntryFilter`] applies a [`MasterPolicy`] to a list entry by entry and counts what it drops. Both are pure (no
//! I/O, no clock), so any code that reads a list from a master can reuse them.
//!
//! Addresses the user gave (a list file, the command line) are trusted as they are and never go through this.

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Default [`MasterPolicy::max_ports_per_host`]: most real hosts run one to a handful of servers.
pub const DEFAULT_MAX_PORTS_PER_HOST: u32 = 4;

/// Which special-use block an address is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpecialUse {
    /// `0.0.0.0/8` (this network), `::/128`.
    Unspecified,
    /// `127.0.0.0/8`, `::1/128`.
    Loopback,
    /// `10/8`, `172.16/12`, `192.168/16`.
    Private,
    /// `100.64/10` (carrier-grade NAT, shared address space).
    SharedCgnat,
    /// `169.254/16`, `fe80::/10` (and the deprecated site-local `fec0::/10`).
    LinkLocal,
    /// `224/4`, `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// `192.0.2/24`, `198.51.100/24`, `203.0.113/24`, `2001:db8::/32`, `3fff::/20`.
    Documentation,
    /// `198.18/15`, `2001:2::/48`.
    Benchmarking,
    /// `fc00::/7` (unique local addresses).
    UniqueLocal,
    /// `240/4` (but broadcast), `192.0.0/24`, `192.88.99/24`, IPv6 outside `2000::/3`, the IETF protocol block
    /// `2001::/23`, discard-only `100::/64`, local-use NAT64 `64:ff9b:1::/48`, SRv6 `5f00::/16`, and the deprecated
    /// IPv4-compatible `::/96`.
    Reserved,
}

impl SpecialUse {
    /// A short name for messages and JSON.
    pub fn name(self) -> &'static str {
        match self {
            SpecialUse::Unspecified => "unspecified",
            SpecialUse::Loopback => "loopback",
            SpecialUse::Private => "private",
            SpecialUse::SharedCgnat => "shared (CGNAT)",
            SpecialUse::LinkLocal => "link-local",
            SpecialUse::Multicast => "multicast",
            SpecialUse::Broadcast => "broadcast",
            SpecialUse::Documentation => "documentation",
            SpecialUse::Benchmarking => "benchmarking",
            SpecialUse::UniqueLocal => "unique local",
            SpecialUse::Reserved => "reserved",
        }
    }
}

impl fmt::Display for SpecialUse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `a` is in `net/len`.
fn in4(a: u32, net: [u8; 4], len: u32) -> bool {
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    a & mask == u32::from_be_bytes(net) & mask
}

/// `a` is in `net/len`.
fn in6(a: u128, net: u128, len: u32) -> bool {
    let mask = if len == 0 { 0 } else { u128::MAX << (128 - len) };
    a & mask == net & mask
}

/// The special-use block of an IPv4 address, if any.
pub fn special_use_v4(ip: Ipv4Addr) -> Option<SpecialUse> {
    use SpecialUse::*;
    let a = u32::from(ip);
    const TABLE: &[([u8; 4], u32, SpecialUse)] = &[
        ([0, 0, 0, 0], 8, Unspecified),
        ([10, 0, 0, 0], 8, Private),
        ([100, 64, 0, 0], 10, SharedCgnat),
        ([127, 0, 0, 0], 8, Loopback),
        ([169, 254, 0, 0], 16, LinkLocal),
        ([172, 16, 0, 0], 12, Private),
        ([192, 0, 0, 0], 24, Reserved),
        ([192, 0, 2, 0], 24, Documentation),
        ([192, 88, 99, 0], 24, Reserved),
        ([192, 168, 0, 0], 16, Private),
        ([198, 18, 0, 0], 15, Benchmarking),
        ([198, 51, 100, 0], 24, Documentation),
        ([203, 0, 113, 0], 24, Documentation),
        ([224, 0, 0, 0], 4, Multicast),
        ([255, 255, 255, 255], 32, Broadcast),
        ([240, 0, 0, 0], 4, Reserved),
    ];
    TABLE.iter().find(|(net, len, _)| in4(a, *net, *len)).map(|&(_, _, k)| k)
}

/// The special-use block of an IPv6 address, if any. Forms that embed an IPv4 address (IPv4-mapped `::ffff:0:0/96`,
/// NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are judged by the IPv4 address they lead to: `::ffff:127.0.0.1` is
/// loopback, and Linux delivers `::ffff:0.0.0.0` to this host.
pub fn special_use_v6(ip: Ipv6Addr) -> Option<SpecialUse> {
    use SpecialUse::*;
    let a = u128::from(ip);
    let embedded = |shift: u32| Ipv4Addr::from(((a >> shift) & 0xffff_ffff) as u32);
    if a == 0 {
        return Some(Unspecified);
    }
    if a == 1 {
        return Some(Loopback);
    }
    if in6(a, 0xffff_0000_0000, 96) {
        return special_use_v4(embedded(0));
    }
    if in6(a, 0x0064_ff9b << 96, 96) {
        return special_use_v4(embedded(0));
    }
    if in6(a, 0x2002 << 112, 16) {
        // 6to4: the IPv4 address is bits 16..48; one that is special makes the whole address so.
        return special_use_v4(embedded(80));
    }
    const TABLE: &[(u128, u32, SpecialUse)] = &[
        (0, 96, Reserved),                      // IPv4-compatible (deprecated)
        (0x0064_ff9b_0001 << 80, 48, Reserved), // local-use NAT64
        (0x0100 << 112, 64, Reserved),          // discard-only
        (0x2001_0002 << 96, 48, Benchmarking),  // 2001:2::/48
        (0x2001_0db8 << 96, 32, Documentation), // 2001:db8::/32
        (0x2001 << 112, 23, Reserved),          // IETF protocol assignments (Teredo, ORCHID...)
        (0x3fff << 112, 20, Documentation),     // 3fff::/20
        (0x5f00 << 112, 16, Reserved),          // SRv6 SIDs
        (0xfc00 << 112, 7, UniqueLocal),        // fc00::/7
        (0xfe80 << 112, 10, LinkLocal),         // fe80::/10
        (0xfec0 << 112, 10, LinkLocal),         // site-local (deprecated)
        (0xff00 << 112, 8, Multicast),          // ff00::/8
    ];
    if let Some(&(_, _, k)) = TABLE.iter().find(|(net, len, _)| in6(a, *net, *len)) {
        return Some(k);
    }
    // Only 2000::/3 is allocated for global unicast; the rest is reserved by the IETF.
    (!in6(a, 0x2000 << 112, 3)).then_some(Reserved)
}

/// The special-use block of an address, if any (see [`special_use_v4`] and [`special_use_v6`]).
pub fn special_use(ip: IpAddr) -> Option<SpecialUse> {
    match ip {
        IpAddr::V4(v4) => special_use_v4(v4),
        IpAddr::V6(v6) => special_use_v6(v6),
    }
}

/// What a scan takes from a master's list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MasterPolicy {
    /// Take special-use addresses ([`special_use`]) too (a LAN's own master); by default they are dropped.
    pub allow_special_use: bool,
    /// Most ports taken per host (an IPv4 address, or an IPv6 /64, which is one link); later entries for the same
    /// host are dropped. At least 1.
    pub max_ports_per_host: u32,
}

impl Default for MasterPolicy {
    fn default() -> Self {
        MasterPolicy { allow_special_use: false, max_ports_per_host: DEFAULT_MAX_PORTS_PER_HOST }
    }
}

/// Why [`EntryFilter::check`] dropped an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dropped {
    /// A special-use address.
    SpecialUse(SpecialUse),
    /// Port zero, which no server listens on.
    PortZero,
    /// The host already has [`MasterPolicy::max_ports_per_host`] entries.
    PortsPerHost,
}

impl fmt::Display for Dropped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dropped::SpecialUse(k) => write!(f, "{k} address"),
            Dropped::PortZero => f.write_str("port 0"),
            Dropped::PortsPerHost => f.write_str("too many ports on one host"),
        }
    }
}

/// Counts of what an [`EntryFilter`] saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FilterCounts {
    /// Entries taken.
    pub accepted: u64,
    /// Entries dropped for a special-use address (or port 0).
    pub special_use: u64,
    /// Entries dropped over the per-host limit.
    pub ports_per_host: u64,
}

impl FilterCounts {
    /// Entries dropped, for any reason.
    pub fn dropped(&self) -> u64 {
        self.special_use + self.ports_per_host
    }

    /// Adds `o`'s counts to these.
    pub fn add(&mut self, o: &FilterCounts) {
        self.accepted += o.accepted;
        self.special_use += o.special_use;
        self.ports_per_host += o.ports_per_host;
    }
}

/// Applies a [`MasterPolicy`] to the entries of one list (or of several lists that should share the per-host
/// limit), in order. Memory: one counter per distinct host seen (a list is already bounded by its reader).
#[derive(Debug, Clone, Default)]
pub struct EntryFilter {
    policy: MasterPolicy,
    per_host: HashMap<u128, u32>,
    counts: FilterCounts,
}

impl EntryFilter {
    /// A filter with `policy` and nothing seen yet.
    pub fn new(policy: MasterPolicy) -> EntryFilter {
        EntryFilter { policy, per_host: HashMap::new(), counts: FilterCounts::default() }
    }

    /// The policy.
    pub fn policy(&self) -> MasterPolicy {
        self.policy
    }

    /// What was taken and dropped so far.
    pub fn counts(&self) -> FilterCounts {
        self.counts
    }

    /// Takes (`Ok`) or drops (`Err`, counted) the next entry. The same address given twice counts twice against its
    /// host: remove duplicates first.
    pub fn check(&mut self, addr: SocketAddr) -> Result<(), Dropped> {
        let ip = match addr.ip() {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
            v4 => v4,
        };
        if !self.policy.allow_special_use {
            let why = match special_use(ip) {
                Some(k) => Some(Dropped::SpecialUse(k)),
                None if addr.port() == 0 => Some(Dropped::PortZero),
                None => None,
            };
            if let Some(why) = why {
                self.counts.special_use += 1;
                return Err(why);
            }
        }
        let host = match ip {
            IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
            IpAddr::V6(v6) => u128::from(v6) & (u128::MAX << 64),
        };
        let n = self.per_host.entry(host).or_insert(0);
        if *n >= self.policy.max_ports_per_host.max(1) {
            self.counts.ports_per_host += 1;
            return Err(Dropped::PortsPerHost);
        }
        *n += 1;
        self.counts.accepted += 1;
        Ok(())
    }

    /// The entries of `list` this filter takes, in order (the counts say what it dropped).
    pub fn apply(&mut self, list: &[SocketAddr]) -> Vec<SocketAddr> {
        list.iter().copied().filter(|&a| self.check(a).is_ok()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use SpecialUse::*;

    fn class(s: &str) -> Option<SpecialUse> {
        special_use(s.parse().unwrap())
    }

    #[test]
    fn special_use_blocks_of_both_families() {
        let cases = [
            ("0.0.0.0", Some(Unspecified)),
            ("0.1.2.3", Some(Unspecified)),
            ("127.0.0.1", Some(Loopback)),
            ("127.255.255.254", Some(Loopback)),
            ("10.1.2.3", Some(Private)),
            ("172.16.0.1", Some(Private)),
            ("172.31.255.255", Some(Private)),
            ("172.32.0.1", None),
            ("192.168.1.1", Some(Private)),
            ("100.64.0.1", Some(SharedCgnat)),
            ("100.127.255.255", Some(SharedCgnat)),
            ("100.128.0.1", None),
            ("169.254.1.1", Some(LinkLocal)),
            ("224.0.0.1", Some(Multicast)),
            ("239.255.255.250", Some(Multicast)),
            ("255.255.255.255", Some(Broadcast)),
            ("240.0.0.1", Some(Reserved)),
            ("192.0.0.8", Some(Reserved)),
            ("192.0.2.1", Some(Documentation)),
            ("198.51.100.7", Some(Documentation)),
            ("203.0.113.9", Some(Documentation)),
            ("198.18.0.1", Some(Benchmarking)),
            ("198.19.255.255", Some(Benchmarking)),
            ("8.8.8.8", None),
            ("1.1.1.1", None),
            ("::", Some(Unspecified)),
            ("::1", Some(Loopback)),
            ("::ffff:0.0.0.0", Some(Unspecified)),
            ("::ffff:127.0.0.1", Some(Loopback)),
            ("::ffff:10.0.0.1", Some(Private)),
            ("::ffff:8.8.8.8", None),
            ("::127.0.0.1", Some(Reserved)),
            ("::8.8.8.8", Some(Reserved)),
            ("64:ff9b::7f00:1", Some(Loopback)),
            ("64:ff9b::808:808", None),
            ("64:ff9b:1::1", Some(Reserved)),
            ("2002:7f00:1::1", Some(Loopback)),
            ("2002:c0a8:101::1", Some(Private)),
            ("2002:808:808::1", None),
            ("fc00::1", Some(UniqueLocal)),
            ("fd12:3456::1", Some(UniqueLocal)),
            ("fe80::1", Some(LinkLocal)),
            ("febf::1", Some(LinkLocal)),
            ("fec0::1", Some(LinkLocal)),
            ("ff02::1", Some(Multicast)),
            ("2001:db8::1", Some(Documentation)),
            ("3fff::1", Some(Documentation)),
            ("2001:2::1", Some(Benchmarking)),
            ("2001::1", Some(Reserved)),
            ("100::1", Some(Reserved)),
            ("4000::1", Some(Reserved)),
            ("2a00:1450:4001::1", None),
            ("2606:4700::1111", None),
        ];
        for (ip, want) in cases {
            assert_eq!(class(ip), want, "{ip}");
        }
    }

    #[test]
    fn the_filter_drops_special_use_and_extra_ports_and_counts_them() {
        let mut f = EntryFilter::new(MasterPolicy::default());
        let mut list: Vec<SocketAddr> = (1..=10).map(|p| SocketAddr::from(([8, 8, 8, 8], 27960 + p))).collect();
        list.push("127.0.0.1:27960".parse().unwrap());
        list.push("[::ffff:0.0.0.0]:27960".parse().unwrap());
        list.push("[fe80::1]:27960".parse().unwrap());
        list.push("1.1.1.1:0".parse().unwrap());
        // Two addresses of one IPv6 /64 share a host; another /64 is another host.
        for i in 1..=5u16 {
            list.push(SocketAddr::new(format!("2a00:1450:4001::{i}").parse().unwrap(), 27960));
        }
        list.push("[2a00:1450:4002::1]:27960".parse().unwrap());
        let taken = f.apply(&list);
        assert_eq!(taken.len(), 4 + 4 + 1, "{taken:?}");
        assert_eq!(f.counts(), FilterCounts { accepted: 9, special_use: 4, ports_per_host: 6 + 1 });
        assert_eq!(f.counts().dropped(), 11);

        let mut lan = EntryFilter::new(MasterPolicy { allow_special_use: true, max_ports_per_host: 100 });
        assert_eq!(lan.apply(&list).len(), list.len());
        assert_eq!(lan.counts().dropped(), 0);
    }
}
