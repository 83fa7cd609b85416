//! What the plugin benchmarks (`parsers_<plugin>.rs`) share: a sink that only counts, and the driver of one query.

#![allow(dead_code)]

use std::hint::black_box;
use std::net::SocketAddr;

use divan::counter::{BytesCount, ItemsCount};
use divan::Bencher;
use query_abi::{Datagram, Level, Player, QueryEngine, Sink, Status, Value};

/// Counts what an engine reports and keeps nothing (the host's checks and its answer buffers are not measured).
#[derive(Default)]
pub struct CountingSink {
    pub sends: usize,
    pub fields: usize,
    pub players: usize,
    pub entries: usize,
    pub done: Option<Status>,
}

impl Sink for CountingSink {
    fn send(&mut self, _to: SocketAddr, data: &[u8]) -> Status {
        black_box(data);
        self.sends += 1;
        Status::OK
    }
    fn server(&mut self, key: &str, value: Value<'_>) {
        black_box((key, value));
        self.fields += 1;
    }
    fn rule(&mut self, key: &str, value: &str) {
        black_box((key, value));
        self.fields += 1;
    }
    fn raw(&mut self, key: &str, value: Value<'_>) {
        black_box((key, value));
        self.fields += 1;
    }
    fn player(&mut self, player: &Player<'_>) {
        black_box(player);
        self.players += 1;
    }
    fn master_entry(&mut self, addr: SocketAddr) {
        black_box(addr);
        self.entries += 1;
    }
    fn done(&mut self, status: Status, error: &str) {
        black_box(error);
        self.done.get_or_insert(status);
    }
    fn log(&mut self, level: Level, msg: &str) {
        black_box((level, msg));
    }
    fn log_enabled(&self, _level: Level) -> bool {
        false
    }
}

pub fn target() -> SocketAddr {
    "127.0.0.1:15201".parse().unwrap()
}

/// One query of a captured exchange: the engine is created (it builds and "sends" its first request), then fed
/// every reply datagram in order, and must end with `Status::OK` on the last one.
pub fn query<E: QueryEngine>(start: &impl Fn(&mut CountingSink) -> E, replies: &[&[u8]]) -> CountingSink {
    let mut sink = CountingSink::default();
    let mut e = start(&mut sink);
    let mut now = 1000;
    for r in replies {
        now += 1;
        let d = e.on_datagram(now, target(), r, &mut sink);
        debug_assert_eq!(d, Datagram::Accepted);
    }
    // A list that ends with a grace period (dpmaster) ends at its deadline.
    for _ in 0..4 {
        match (sink.done, e.next_deadline()) {
            (None, Some(d)) => e.on_timeout(d.max(now), &mut sink),
            _ => break,
        }
    }
    sink
}

/// Benchmarks whole queries of one captured exchange. Counters: reply datagrams and their bytes (per query).
pub fn bench_query<E: QueryEngine>(b: Bencher, start: impl Fn(&mut CountingSink) -> E, replies: &[&[u8]]) {
    let check = query(&start, replies);
    assert_eq!(check.done, Some(Status::OK), "the captured exchange ends the query");
    assert!(check.fields > 0, "the replies were reported");
    let bytes: usize = replies.iter().map(|r| r.len()).sum();
    b.counter(ItemsCount::new(replies.len())).counter(BytesCount::new(bytes)).bench_local(|| {
        let s = query(&start, black_box(replies));
        black_box(s.done)
    });
}
