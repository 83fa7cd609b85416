//! The Savage 2 plugin: the reply parser on each datagram, and the engine on arbitrary datagrams in arbitrary timing
//! (input format: `fuzz/common/query.rs`).
//!
//! Header byte: bits 3-4 retries, bit 5 the echo value from the seed (as the host makes it) instead of 1, bit 7
//! the clock starting just below `u64::MAX`.
#![no_main]

#[path = "../common/query.rs"]
mod query;

use libfuzzer_sys::fuzz_target;
use query_abi::collect::Collector;
use query_abi::{QueryConfig, QueryEngine};
use query_savage2::engine::Savage2Engine;
use query_savage2::msg;
use std::net::SocketAddr;

fn parsers(d: &[u8]) {
    let _ = msg::is_info_reply(d);
    if let Ok(i) = msg::parse_info(d) {
        let plain = msg::strip_colours(&i.name);
        assert!(plain.len() <= i.name.len(), "{:?} stripped to {plain:?}", i.name);
        assert!(i.trailing <= d.len());
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((h, steps)) = query::parse(input) else { return };
    let target: SocketAddr = "127.0.0.1:11235".parse().unwrap();
    let config = QueryConfig { retries: u32::from((h >> 3) & 3), seed: u64::from(h), ..QueryConfig::default() };
    let mut c = Collector::new();
    let now = query::start_ms(h & 0x80 != 0);
    let e = if h & 0x20 != 0 {
        Savage2Engine::new("savage2", target, &config, now, &mut c).expect("savage2")
    } else {
        Savage2Engine::with_echo(target, &config, 1, now, &mut c)
    };
    query::drive(e, c, query::Checker::new(target, false, 0), now, &steps, parsers);
});
