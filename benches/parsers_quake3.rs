//! The `query-quake3` engine on its captured replies (OpenArena / ioquake3 and dpmaster on loopback, in
//! `plugins/query-quake3/testdata/`), driven as plain Rust: one benchmark iteration is one whole query (engine
//! created, requests built, every reply datagram parsed and reported to a sink that only counts). Counters: reply
//! datagrams and bytes. Part of `bench/parsers.sh`; see `parsers.rs` for why each plugin has its own binary.

#[path = "common/mod.rs"]
mod common;

use common::{bench_query, target, CountingSink};
use divan::Bencher;
use query_abi::QueryConfig;
use query_quake3::engine::Quake3Engine;

macro_rules! cap {
    ($f:literal) => {
        include_bytes!(concat!("../plugins/query-quake3/testdata/", $f)).as_slice()
    };
}

fn main() {
    divan::Divan::from_args().main();
}

fn start(
    protocol: &'static str,
    config: QueryConfig,
    chals: (&'static str, &'static str),
) -> impl Fn(&mut CountingSink) -> Quake3Engine {
    move |s: &mut CountingSink| {
        Quake3Engine::with_challenges(protocol, target(), &config, chals.0, chals.1, 1000, s).unwrap()
    }
}

/// OpenArena, getinfo + getstatus (4 bots): the default `quake3` query.
#[divan::bench]
fn openarena_info_and_status(b: Bencher) {
    let replies = [cap!("bots4-getstatus.resp.bin"), cap!("bots4-getinfo.resp.bin")];
    bench_query(b, start("quake3", QueryConfig::default(), ("xxx_chal", "yyy_chal")), &replies);
}

/// OpenArena, getstatus only (`--param query=status`).
#[divan::bench]
fn openarena_status_only(b: Bencher) {
    let replies = [cap!("bots4-getstatus.resp.bin")];
    let config = QueryConfig::default().with_param("query", "status");
    bench_query(b, start("quake3", config, ("a", "yyy_chal")), &replies);
}

/// dpmaster `getservers`, two pages, 301 servers, ended at the EOT (grace 0).
#[divan::bench]
fn dpmaster_getservers_301(b: Bencher) {
    let replies = [
        cap!("dpmaster/getservers-Quake3Arena-71-empty-full.resp0.bin"),
        cap!("dpmaster/getservers-Quake3Arena-71-empty-full.resp1.bin"),
    ];
    let config = QueryConfig::default().with_param("game_protocol", "71").with_param("eot_grace_ms", "0");
    bench_query(b, start("dpmaster", config, ("unused", "unused")), &replies);
}
