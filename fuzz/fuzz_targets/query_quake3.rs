//! The Quake III family plugin: every reply parser on each datagram, and the engine (`quake3`, `warsow` with each
//! query form, `dpmaster`) on arbitrary datagrams in arbitrary timing (input format: `fuzz/common/query.rs`).
//!
//! Header byte: bits 0-2 the protocol (0-2 `quake3` both/info/status, 3-4 `warsow` both/short, 5-7 `dpmaster`
//! auto/getserversExt/Warsow list without grace period), bits 3-4 retries, bit 5 challenges from the seed (as the
//! host makes them) instead of the captures' ones, bit 6 an IPv6 target, bit 7 the clock starting just below `u64::MAX`.
#![no_main]

#[path = "../common/query.rs"]
mod query;

use libfuzzer_sys::fuzz_target;
use query_abi::collect::Collector;
use query_abi::{QueryConfig, QueryEngine};
use query_quake3::engine::Quake3Engine;
use query_quake3::msg::{self, Reply, MAX_PAIRS, MAX_PLAYERS};
use std::net::SocketAddr;

/// The info string's pairs, checked: bounded, and the same whether split as text or as bytes.
fn infostring(b: &[u8]) {
    let pairs = msg::parse_infostring(b);
    assert!(pairs.len() <= MAX_PAIRS);
    if std::str::from_utf8(b).is_ok() {
        let raw: Vec<(&[u8], &[u8])> = msg::raw_pairs(b).collect();
        let text: Vec<(&[u8], &[u8])> = pairs.iter().map(|(k, v)| (k.as_bytes(), v.as_bytes())).collect();
        assert_eq!(raw, text, "text and byte splitting disagree");
        if let Some((k, v)) = raw.first() {
            assert_eq!(msg::raw_get(b, k), Some(*v));
        }
    }
}

fn names(s: &str) {
    for plain in [msg::strip_q3(s), msg::strip_warsow(s)] {
        assert!(plain.len() <= s.len(), "{s:?} stripped to {plain:?}");
    }
}

fn servers(body: &[u8]) {
    let page = msg::parse_servers(body);
    assert!((page.entries.len() + page.invalid) * 7 <= body.len());
    assert!(page.garbage_at.is_none_or(|at| at <= body.len()));
}

fn status(body: &[u8]) {
    let (info, _) = msg::split_status(body);
    infostring(info);
    let (pairs, players, bad) = msg::parse_status(body);
    assert!(pairs.len() <= MAX_PAIRS && players.len() <= MAX_PLAYERS);
    assert!(players.len() + bad <= body.iter().filter(|&&c| c == b'\n').count());
    for p in &players {
        names(&p.name);
    }
}

fn parsers(d: &[u8]) {
    match msg::classify(d) {
        Some(Reply::Info(body)) => infostring(msg::split_status(body).0),
        Some(Reply::Status(body)) => status(body),
        Some(Reply::ShortInfo(body)) => {
            if let Ok(p) = msg::parse_short_info(body) {
                assert!(p.len() <= MAX_PAIRS);
                if let Some(n) = msg::get(&p, "n") {
                    names(n);
                }
            }
        }
        Some(Reply::Servers { body, .. }) => servers(body),
        None => {}
    }
    // The body parsers on the bare datagram too.
    status(d);
    servers(d);
    let _ = msg::parse_short_info(d);
    if let Ok(s) = std::str::from_utf8(d) {
        names(s);
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((h, steps)) = query::parse(input) else { return };
    let target: SocketAddr = if h & 0x40 != 0 { "[::1]:27960" } else { "127.0.0.1:27960" }.parse().unwrap();
    let config = QueryConfig::default();
    let (protocol, config) = match h & 7 {
        0 => ("quake3", config),
        1 => ("quake3", config.with_param("query", "info")),
        2 => ("quake3", config.with_param("query", "status")),
        3 => ("warsow", config),
        4 => ("warsow", config.with_param("query", "short")),
        5 => ("dpmaster", config.with_param("game_protocol", "71")),
        6 => ("dpmaster", config.with_param("game_protocol", "71").with_param("ext", "1")),
        _ => (
            "dpmaster",
            config.with_param("game", "Warsow").with_param("game_protocol", "22").with_param("eot_grace_ms", "0"),
        ),
    };
    let mut config = config;
    config.retries = u32::from((h >> 3) & 3);
    config.seed = u64::from(h);
    let mut c = Collector::new();
    let now = query::start_ms(h & 0x80 != 0);
    let e = if h & 0x20 != 0 {
        Quake3Engine::new(protocol, target, &config, now, &mut c)
    } else {
        Quake3Engine::with_challenges(protocol, target, &config, "xxx_chal", "yyy_chal", now, &mut c)
    };
    let e = e.expect("a valid protocol and parameters");
    query::drive(e, c, query::Checker::new(target, protocol == "dpmaster", MAX_PLAYERS), now, &steps, parsers);
});
