//! What peers send that reaches a terminal or aims a scan (issue 11): `bzhead::text::for_terminal` on any text
//! (nothing unsafe survives, clean text is kept as it is, the output never grows) and the master-list filter on any
//! list of addresses (every entry is taken or counted, a host never gets more than its ports).
//!
//! Input: the bytes as text (lossy UTF-8), and the same bytes read as master entries (18 bytes each: a 16-byte IPv6
//! address, IPv4-mapped ones included, and a port); the first byte sets the per-host limit (1-8) and whether
//! special-use addresses are allowed.
#![no_main]

use bzhead::query::filter::{special_use, EntryFilter, MasterPolicy};
use bzhead::text::{for_terminal, is_unsafe};
use libfuzzer_sys::fuzz_target;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let clean = for_terminal(&text);
    assert!(!clean.chars().any(is_unsafe), "{text:?} -> {clean:?}");
    assert!(clean.len() <= text.len());
    if !text.chars().any(is_unsafe) {
        assert_eq!(clean, text);
    }

    let Some((&h, rest)) = data.split_first() else { return };
    let policy = MasterPolicy { allow_special_use: h & 0x80 != 0, max_ports_per_host: u32::from(h & 7) + 1 };
    let mut f = EntryFilter::new(policy);
    let list: Vec<SocketAddr> = rest
        .chunks_exact(18)
        .map(|c| {
            let mut ip = [0u8; 16];
            ip.copy_from_slice(&c[..16]);
            let v6 = Ipv6Addr::from(ip);
            let ip = v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4);
            SocketAddr::new(ip, u16::from_be_bytes([c[16], c[17]]))
        })
        .collect();
    let taken = f.apply(&list);
    let n = f.counts();
    assert_eq!(n.accepted as usize, taken.len());
    assert_eq!(n.accepted + n.dropped(), list.len() as u64);
    let mut per_host: HashMap<u128, u32> = HashMap::new();
    for a in &taken {
        if !policy.allow_special_use {
            assert!(special_use(a.ip()).is_none() && a.port() != 0, "{a} taken");
        }
        let host = match a.ip() {
            IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
            IpAddr::V6(v6) => u128::from(v6) & (u128::MAX << 64),
        };
        let k = per_host.entry(host).or_default();
        *k += 1;
        assert!(*k <= policy.max_ports_per_host);
    }
});
