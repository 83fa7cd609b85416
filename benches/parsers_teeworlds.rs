//! The `query-teeworlds` engine on its captured replies (DDNet 16.4 and Teeworlds 0.7.5 on loopback, in
//! `plugins/query-teeworlds/testdata/`), driven as plain Rust: one benchmark iteration is one whole query (engine
//! created, request built, every reply datagram parsed and reported to a sink that only counts). Counters: reply
//! datagrams and bytes. Part of `bench/parsers.sh`; see `parsers.rs` for why each plugin has its own binary.

#[path = "common/mod.rs"]
mod common;

use common::{bench_query, target, CountingSink};
use divan::Bencher;
use query_abi::QueryConfig;
use query_teeworlds::engine::{TeeworldsEngine, Tokens};

macro_rules! cap {
    ($f:literal) => {
        include_bytes!(concat!("../plugins/query-teeworlds/testdata/", $f)).as_slice()
    };
}

fn main() {
    divan::Divan::from_args().main();
}

fn start(protocol: &'static str, tokens: Tokens, config: QueryConfig) -> impl Fn(&mut CountingSink) -> TeeworldsEngine {
    move |s: &mut CountingSink| TeeworldsEngine::with_tokens(protocol, target(), &config, tokens, 1000, s).unwrap()
}

fn six(t: u32) -> Tokens {
    Tokens { six: t, client7: [1, 2, 3, 4], browser7: 5 }
}

fn seven(client7: [u8; 4]) -> Tokens {
    Tokens { six: 1, client7, browser7: 1234567 }
}

/// DDNet extended info, 60 players in two datagrams (`iext` + `iex+`).
#[divan::bench]
fn ddnet_extended_60_players(b: Bencher) {
    let replies = [cap!("players60-ddnet-xe-gie3.resp0.bin"), cap!("players60-ddnet-xe-gie3.resp1.bin")];
    bench_query(b, start("teeworlds", six(0x123456), QueryConfig::default()), &replies);
}

/// Vanilla 0.6 `inf3` from the same server (16 of 60 players).
#[divan::bench]
fn vanilla_06_inf3(b: Bencher) {
    let replies = [cap!("players60-06-gie3.resp.bin")];
    bench_query(b, start("teeworlds", six(42), QueryConfig::default().with_param("mode", "vanilla")), &replies);
}

/// The 64-player legacy form, three `dtsf` pages.
#[divan::bench]
fn legacy64_60_players(b: Bencher) {
    let replies = [
        cap!("players60-64legacy-fstd.resp2.bin"),
        cap!("players60-64legacy-fstd.resp0.bin"),
        cap!("players60-64legacy-fstd.resp1.bin"),
    ];
    bench_query(b, start("teeworlds", six(7), QueryConfig::default().with_param("mode", "legacy64")), &replies);
}

/// Teeworlds 0.7 protocol against DDNet: the token handshake, then packed-int `inf3` with 60 players.
#[divan::bench]
fn teeworlds7_60_players(b: Bencher) {
    let replies = [cap!("players60-07-token-request.resp.bin"), cap!("players60-07-gie3.resp.bin")];
    bench_query(b, start("teeworlds7", seven([0xb0, 0xe0, 0x94, 0xfc]), QueryConfig::default()), &replies);
}
