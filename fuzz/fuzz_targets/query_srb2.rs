//! The SRB2 plugin: the packet check and both reply parsers on each datagram, and the engine on arbitrary datagrams
//! in arbitrary timing (input format: `fuzz/common/query.rs`; patched steps get the live `time` and a good
//! checksum).
//!
//! Header byte: bits 3-4 retries, bit 5 `time` from the seed (as the host makes it) instead of the seeds' one, bit
//! 7 the clock starting just below `u64::MAX`.
#![no_main]

#[path = "../common/query.rs"]
mod query;

use libfuzzer_sys::fuzz_target;
use query_abi::collect::Collector;
use query_abi::{QueryConfig, QueryEngine};
use query_srb2::engine::Srb2Engine;
use query_srb2::msg;
use std::net::SocketAddr;

fn parsers(d: &[u8]) {
    let _ = msg::open(d);
    // The bodies whatever the checksum says.
    let body = d.get(8..).unwrap_or(&[]);
    if let Ok(s) = msg::parse_serverinfo(body) {
        assert!(s.files.len() <= usize::from(s.file_count));
        let plain = msg::strip_colours(&s.name);
        assert!(plain.len() <= s.name.len());
    }
    let (players, leftover) = msg::parse_playerinfo(body);
    assert!(players.len() <= 4 * msg::MAX_PLAYERS && leftover < msg::PLAYER_RECORD);
}

fuzz_target!(|input: &[u8]| {
    let Some((h, steps)) = query::parse(input) else { return };
    let target: SocketAddr = "127.0.0.1:5029".parse().unwrap();
    let config = QueryConfig { retries: u32::from((h >> 3) & 3), seed: u64::from(h), ..QueryConfig::default() };
    let mut c = Collector::new();
    let now = query::start_ms(h & 0x80 != 0);
    let e = if h & 0x20 != 0 {
        Srb2Engine::new("srb2", target, &config, now, &mut c).expect("srb2")
    } else {
        Srb2Engine::with_time(target, &config, u32::from_le_bytes(query::SRB2_SEED_TIME), now, &mut c)
    };
    query::drive(e, c, query::Checker::new(target, false, 4 * msg::MAX_PLAYERS), now, &steps, parsers);
});
