//! The `query-srb2` engine, driven as plain Rust: one benchmark iteration is one whole query (engine created,
//! `PT_ASKINFO` built, `PT_SERVERINFO` and `PT_PLAYERINFO` parsed and reported to a sink that only counts).
//! Counters: reply datagrams and bytes. No SRB2 server could be run (`plugins/query-srb2/testdata/README.md`): the
//! replies are the synthetic fuzz seeds, built as the plugin's tests build them at the 2.2.15 source's struct
//! offsets (PACKETVERSION 5, three players of 32 slots). Part of `bench/parsers.sh`; see `parsers.rs` for why each plugin has
//! its own binary.

#[path = "common/mod.rs"]
mod common;

use common::{bench_query, target, CountingSink};
use divan::Bencher;
use query_abi::QueryConfig;
use query_srb2::engine::Srb2Engine;

const TIME: u32 = 0x1122_3344;

fn main() {
    divan::Divan::from_args().main();
}

/// `PT_SERVERINFO`, PACKETVERSION 5 (2.2.15), and `PT_PLAYERINFO` (3 of 32 slots), as the plugin's tests build
/// them: the synthetic fuzz seeds (`fuzz/seeds/README.md`), `time` [`TIME`].
const SERVERINFO: &[u8] = include_bytes!("../fuzz/seeds/srb2-2.2.15-serverinfo-SYNTHETIC.bin");
const PLAYERINFO: &[u8] = include_bytes!("../fuzz/seeds/srb2-playerinfo-SYNTHETIC.bin");

fn start(s: &mut CountingSink) -> Srb2Engine {
    Srb2Engine::with_time(target(), &QueryConfig::default(), TIME, 1000, s)
}

/// `PT_SERVERINFO` then `PT_PLAYERINFO`.
#[divan::bench]
fn serverinfo_and_playerinfo(b: Bencher) {
    bench_query(b, start, &[SERVERINFO, PLAYERINFO]);
}
