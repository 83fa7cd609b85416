//! The Teeworlds / DDNet plugin: every reply parser on each datagram, and the engine (`teeworlds` in each mode,
//! `teeworlds7`) on arbitrary datagrams in arbitrary timing (input format: `fuzz/common/query.rs`).
//!
//! Header byte: bits 0-2 the protocol and mode (0 auto, 1 extended, 2 vanilla, 3 legacy64, 4-7 `teeworlds7`),
//! bits 3-4 retries, bit 5 tokens from the seed (as the host makes them) instead of the captures' tokens, bit 6 a
//! 50 ms timeout instead of 1 s, bit 7 the clock starting just below `u64::MAX`. At most `MAX_CLIENTS` players may
//! be reported, the most the plugin means to keep for one server.
#![no_main]

#[path = "../common/query.rs"]
mod query;

use libfuzzer_sys::fuzz_target;
use query_abi::collect::Collector;
use query_abi::{QueryConfig, QueryEngine};
use query_teeworlds::engine::{TeeworldsEngine, Tokens};
use query_teeworlds::msg::{self, Kind06, MAX_CLIENTS};
use std::net::SocketAddr;

/// The tokens of the DDNet captures (`players60-ddnet-xe-gie3`, `empty-07-*`).
const CAPTURE_TOKENS: Tokens = Tokens { six: 0x12_3456, client7: [0x86, 0x88, 0xd2, 0x63], browser7: 1_234_567 };

fn parsers(d: &[u8]) {
    if let Some((kind, body)) = msg::classify06(d) {
        let _ = msg::token06(body);
        if kind == Kind06::ExtendedMore {
            if let Ok(m) = msg::parse_extended_more(body) {
                assert!(m.clients.len() <= MAX_CLIENTS && (1..64).contains(&m.packet_no));
            }
        } else if let Ok(i) = msg::parse_info06(kind, body) {
            assert!(i.clients.len() <= MAX_CLIENTS);
            let _ = msg::name_suffix(&i.server.name);
        }
    }
    // 0.7, with the token the datagram itself carries, so that the parsers behind the token checks are reached.
    if let Some(tok) = d.get(3..7).and_then(|t| <[u8; 4]>::try_from(t).ok()) {
        let _ = msg::token_reply7(d, tok);
    }
    if let Some(tok) = d.get(1..5).and_then(|t| <[u8; 4]>::try_from(t).ok()) {
        if let Some(p) = msg::connless7(d, tok) {
            let _ = msg::token07(p);
            if let Ok(i) = msg::parse_info07(p) {
                assert!(i.clients.len() <= MAX_CLIENTS);
                let _ = msg::name_suffix(&i.server.name);
            }
        }
    }
    // The body parsers on the bare datagram too.
    for k in [Kind06::Vanilla, Kind06::Extended, Kind06::Legacy64] {
        if let Ok(i) = msg::parse_info06(k, d) {
            assert!(i.clients.len() <= MAX_CLIENTS);
        }
    }
    if let Ok(m) = msg::parse_extended_more(d) {
        assert!(m.clients.len() <= MAX_CLIENTS);
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((h, steps)) = query::parse(input) else { return };
    let target: SocketAddr = "127.0.0.1:8303".parse().unwrap();
    let (protocol, mode) = match h & 7 {
        0 => ("teeworlds", "auto"),
        1 => ("teeworlds", "extended"),
        2 => ("teeworlds", "vanilla"),
        3 => ("teeworlds", "legacy64"),
        _ => ("teeworlds7", "auto"),
    };
    let mut config = QueryConfig::default().with_param("mode", mode);
    config.retries = u32::from((h >> 3) & 3);
    config.seed = u64::from(h);
    if h & 0x40 != 0 {
        config.timeout_ms = 50;
    }
    let mut c = Collector::new();
    let now = query::start_ms(h & 0x80 != 0);
    let e = if h & 0x20 != 0 {
        TeeworldsEngine::new(protocol, target, &config, now, &mut c)
    } else {
        TeeworldsEngine::with_tokens(protocol, target, &config, CAPTURE_TOKENS, now, &mut c)
    };
    let e = e.expect("a valid protocol and mode");
    query::drive(e, c, query::Checker::new(target, false, MAX_CLIENTS), now, &steps, parsers);
});
