//! Inputs found by the `query_host` fuzz target (`fuzz/fuzz_targets/query_host.rs`), replayed exactly: the real
//! plugins behind the real host, in virtual time. Each made the host fail the query as a misbehaving plugin, although
//! only the server was at fault.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bzhead::query::loader::PluginSet;
use bzhead::query::{Answer, QueryResult, Scan, ScanConfig, ScanEvent, Target};

use crate::support::plugins::real_plugin_dir;

/// One query of `protocol` (with `params`) to a fake address; `reply` makes the datagrams to feed from the first
/// request. Returns the result once the host's deadlines have run out.
fn query(protocol: &str, params: &[(&str, &str)], reply: impl Fn(&[u8]) -> Vec<Vec<u8>>) -> QueryResult {
    let dir = real_plugin_dir();
    let set = PluginSet::load_dirs(&[dir.path().to_path_buf()]);
    let mut now = Instant::now();
    let config = ScanConfig { retries: 0, timeout: Duration::from_millis(200), ..ScanConfig::default() };
    let mut scan = Scan::new(set, config, now);
    let server: SocketAddr = "127.0.0.1:27000".parse().unwrap();
    let mut t = Target::new(protocol, server);
    t.params = params.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    scan.add_target(now, t).unwrap();
    let request = scan.poll_transmit().expect("a request").data;
    for d in reply(&request) {
        now += Duration::from_millis(1);
        scan.handle_datagram(now, server, &d);
    }
    for _ in 0..1000 {
        if let Some(ScanEvent::Result(r)) = scan.poll_event() {
            return r;
        }
        now = now.max(scan.poll_timeout().expect("a deadline"));
        scan.handle_timeout(now);
        while scan.poll_transmit().is_some() {}
    }
    panic!("the query did not end");
}

fn answer(r: &QueryResult) -> &Answer {
    r.outcome.as_ref().unwrap_or_else(|e| panic!("{}: {e}", r.protocol))
}

fn cstrs(fields: &[&str]) -> Vec<u8> {
    fields.iter().flat_map(|f| f.bytes().chain([0])).collect()
}

/// A Quake III server name of 40,000 Latin-1 bytes: 80,000 bytes of UTF-8, over the host's 64 KiB per text. The
/// export layer of `query_abi` now cuts text at that limit.
#[test]
fn quake3_latin1_name_longer_than_the_hosts_text_limit() {
    let r = query("quake3", &[("query", "info")], |req| {
        let mut d = b"\xff\xff\xff\xffinfoResponse\n\\hostname\\".to_vec();
        d.extend([0xe9; 40_000]);
        d.extend(b"\\mapname\\q3dm1\\clients\\0\\sv_maxclients\\8\\challenge\\");
        // The request's challenge (`getinfo CHALLENGE`), echoed: a reply without it is refused.
        d.extend(req.rsplit(|&b| b == b' ').next().unwrap_or_default());
        vec![d]
    });
    let a = answer(&r);
    assert_eq!(a.name(), Some("é".repeat(32 * 1024).as_str()));
    assert_eq!(a.map(), Some("q3dm1"));
}

/// A Teeworlds vanilla reply whose server name is 25,000 bytes that are not UTF-8 (75,000 bytes decoded).
#[test]
fn teeworlds_name_of_invalid_utf8_longer_than_the_hosts_text_limit() {
    let r = query("teeworlds", &[("mode", "vanilla")], |req| {
        let mut d = b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffinf3".to_vec();
        d.extend(cstrs(&[&req[14].to_string(), "0.6"])); // the token byte of the request
        d.extend([0xff; 25_000]);
        d.push(0);
        d.extend(cstrs(&["map", "dm", "0", "0", "0", "0", "0"]));
        vec![d]
    });
    assert_eq!(answer(&r).name(), Some("\u{fffd}".repeat(256).as_str()));
}

/// 17 DDNet extended datagrams of 250 client records each: 4,250 players, over the host's 4,096.
#[test]
fn teeworlds_pages_with_more_players_than_the_host_takes() {
    let r = query("teeworlds", &[("mode", "extended")], |req| {
        let token = (u32::from(req[2]) << 16 | u32::from(req[3]) << 8 | u32::from(req[14])).to_string();
        let records = [0u8; 6 * 250];
        let mut d = b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffiext".to_vec();
        d.extend(cstrs(&[&token, "0.6.4", "srv", "map", "0", "0", "DDNet", "0", "4096", "4096", "4096", "4096", ""]));
        d.extend(records);
        let mut out = vec![d];
        for page in 1..17 {
            let mut d = b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffiex+".to_vec();
            d.extend(cstrs(&[&token, &page.to_string(), ""]));
            d.extend(records);
            out.push(d);
        }
        out
    });
    assert_eq!(answer(&r).player_count(), 256);
}
