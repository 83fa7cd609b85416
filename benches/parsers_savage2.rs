//! The `query-savage2` engine on the two real replies in `plugins/query-savage2/testdata/`, driven as plain Rust:
//! one benchmark iteration is one whole query (engine created, request built, the reply parsed and reported to a
//! sink that only counts). Counters: reply datagrams and bytes. Part of `bench/parsers.sh`; see `parsers.rs` for
//! why each plugin has its own binary.

#[path = "common/mod.rs"]
mod common;

use common::{bench_query, target, CountingSink};
use divan::Bencher;
use query_abi::QueryConfig;
use query_savage2::engine::Savage2Engine;

fn main() {
    divan::Divan::from_args().main();
}

fn start(s: &mut CountingSink) -> Savage2Engine {
    Savage2Engine::with_echo(target(), &QueryConfig::default(), 1, 1000, s)
}

#[divan::bench(args = [1, 2])]
fn info_reply(b: Bencher, which: u32) {
    let reply: &[u8] = match which {
        1 => include_bytes!("../plugins/query-savage2/testdata/savage2-reply1.bin"),
        _ => include_bytes!("../plugins/query-savage2/testdata/savage2-reply2.bin"),
    };
    bench_query(b, start, &[reply]);
}
