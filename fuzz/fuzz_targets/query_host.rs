//! The query host (`src/query/`): the scheduler and the callbacks that validate everything a plugin reports, driving
//! the real plugin libraries (built by `fuzz/run` into `fuzz/target/plugins/debug`, or `$BZHEAD_FUZZ_PLUGIN_DIR`)
//! through the C ABI, with arbitrary datagrams from the target, a second target and strangers, in arbitrary timing
//! (input format: `fuzz/common/query.rs`). Every query must end, none may fail as a misbehaving plugin (our plugins
//! must stay within what the host accepts, whatever a server sends), and each result's JSON line must be the bytes
//! `serde_json` writes for it, of bounded size.
//!
//! Header byte: bits 0-2 the protocol (0 `teeworlds`, 1 `teeworlds7`, 2 `quake3`, 3 `warsow`, 4 `dpmaster` with
//! its servers queried as `quake3`, 5 `savage2`, 6 `srb2`, 7 `warsow` short info), bits 3-4 retries, bit 5 a second
//! target (port + 1, op source 3), bit 6 IPv6 targets, bit 7 a 50 ms timeout instead of 1 s.
#![no_main]

#[path = "../common/query.rs"]
mod query;

use bzhead::query::{ErrorKind, PluginSet, QueryResult, Scan, ScanConfig, ScanEvent, Target};
use libfuzzer_sys::fuzz_target;
use query::Sent;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const LIBS: [&str; 4] = ["bzhead_teeworlds", "bzhead_quake3", "bzhead_savage2", "bzhead_srb2"];

fn plugin_dir() -> PathBuf {
    std::env::var_os("BZHEAD_FUZZ_PLUGIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/target/plugins/debug")))
}

fn lib_path(lib: &str) -> PathBuf {
    plugin_dir().join(format!("{}{lib}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX))
}

thread_local! {
    /// Every plugin, loaded once and kept, so that each input's own load is only a reference count.
    static KEEP: PluginSet = {
        let mut set = PluginSet::default();
        for lib in LIBS {
            set.load_one(&lib_path(lib));
        }
        assert!(
            set.errors().is_empty(),
            "plugins missing or broken (fuzz/run builds them into fuzz/target/plugins): {:?}",
            set.errors()
        );
        set
    };
}

fn check(r: &QueryResult, input_len: usize) {
    if let Err(e) = &r.outcome {
        assert!(e.kind != ErrorKind::Plugin, "{} {}: the host failed the plugin: {e}", r.protocol, r.address);
    }
    let mut line = Vec::new();
    r.write_json(&mut line);
    let reference = serde_json::to_vec(r).expect("serialises");
    assert_eq!(String::from_utf8_lossy(&line), String::from_utf8_lossy(&reference), "write_json differs from serde");
    assert!(line.len() <= 16 * input_len + 4096, "a {}-byte line from {input_len} bytes of input", line.len());
}

/// The scan and what the driver learnt from its datagrams.
struct Host {
    scan: Scan,
    /// Per address: what the requests sent there carried (for patching replies).
    sent: HashMap<SocketAddr, Sent>,
    last_to: SocketAddr,
    results: u64,
    input_len: usize,
}

impl Host {
    /// Takes every datagram to send and every result.
    fn drain(&mut self) {
        while let Some(t) = self.scan.poll_transmit() {
            assert!(t.data.len() <= query::MAX_DATAGRAM);
            self.sent.entry(t.to).or_default().note(&t.data);
            self.last_to = t.to;
        }
        while let Some(ScanEvent::Result(r)) = self.scan.poll_event() {
            if query::debug() {
                eprintln!("{:.2000}", r.to_json_line());
            }
            check(&r, self.input_len);
            self.results += 1;
        }
    }
}

fuzz_target!(|input: &[u8]| {
    KEEP.with(|_| {});
    let Some((h, steps)) = query::parse(input) else { return };
    let (protocol, lib, params, expand): (&str, &str, &[(&str, &str)], _) = match h & 7 {
        0 => ("teeworlds", "query_teeworlds", &[], None),
        1 => ("teeworlds7", "query_teeworlds", &[], None),
        2 => ("quake3", "query_quake3", &[], None),
        3 => ("warsow", "query_quake3", &[], None),
        4 => ("dpmaster", "query_quake3", &[("game_protocol", "71")], Some("quake3")),
        5 => ("savage2", "query_savage2", &[], None),
        6 => ("srb2", "query_srb2", &[], None),
        _ => ("warsow", "query_quake3", &[("query", "short")], None),
    };
    let mut plugins = PluginSet::default();
    plugins.load_one(&lib_path(lib));
    let config = ScanConfig {
        retries: u32::from((h >> 3) & 3),
        timeout: Duration::from_millis(if h & 0x80 != 0 { 50 } else { 1000 }),
        seed: 0x5eed_0000 | u64::from(h),
        rate: 100_000,
        burst: 1000,
        ..ScanConfig::default()
    };
    let base = Instant::now();
    let mut now = base;
    let mut scan = Scan::new(plugins, config, now);
    let target: SocketAddr = if h & 0x40 != 0 { "[::1]:27000" } else { "127.0.0.1:27000" }.parse().unwrap();
    let second = SocketAddr::new(target.ip(), target.port() + 1);
    let owned = |p: &[(&str, &str)]| p.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    let mut t = Target::new(protocol, target);
    t.params = owned(params);
    t.expand = expand.map(|p: &str| (p.to_owned(), Vec::new()));
    scan.add_target(now, t.clone()).expect("first target");
    if h & 0x20 != 0 {
        scan.add_target(now, Target { addr: second, ..t }).expect("second target");
    }

    let mut h = Host { scan, sent: HashMap::new(), last_to: target, results: 0, input_len: input.len() };
    h.drain();
    for s in &steps {
        now += Duration::from_millis(s.op.advance_ms());
        if s.op.spurious() || h.scan.poll_timeout().is_some_and(|t| t <= now) {
            h.scan.handle_timeout(now);
            h.drain();
        }
        let from = query::source(s.op, h.last_to, target);
        let data = match (s.op.patch(), h.sent.get(&from)) {
            (true, Some(sent)) => sent.patch(s.data),
            _ => s.data.to_vec(),
        };
        for _ in 0..if s.op.twice() { 2 } else { 1 } {
            h.scan.handle_datagram(now, from, &data);
            h.drain();
        }
    }
    // Run out: the host's deadlines end every query.
    for _ in 0..1_000_000 {
        if h.scan.is_done() {
            break;
        }
        let t = h.scan.poll_timeout().expect("queries left but no deadline: the scan would hang");
        now = now.max(t);
        h.scan.handle_timeout(now);
        h.drain();
    }
    assert!(h.scan.is_done(), "the scan did not end");
    assert_eq!(h.results, h.scan.stats().targets, "a result per target");
    assert!(now.duration_since(base) < Duration::from_secs(3600), "the scan took {:?}", now.duration_since(base));
});
