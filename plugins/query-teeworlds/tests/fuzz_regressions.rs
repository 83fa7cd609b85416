//! Inputs found by the `query_teeworlds` and `query_host` fuzz targets (`fuzz/`), replayed exactly.

use query_abi::collect::{Collector, Report};
use query_abi::{keys, QueryConfig, QueryEngine};
use query_teeworlds::engine::{TeeworldsEngine, Tokens};
use query_teeworlds::msg::{MAX_CLIENTS, MAX_FIELD};
use std::net::SocketAddr;

fn target() -> SocketAddr {
    "127.0.0.1:8303".parse().unwrap()
}

/// NUL-terminated strings.
fn cstrs(fields: &[&str]) -> Vec<u8> {
    fields.iter().flat_map(|f| f.bytes().chain([0])).collect()
}

/// An extended client record (6 strings) whose name is `name`.
fn record(name: &[u8]) -> Vec<u8> {
    let mut r = name.to_vec();
    r.extend([0; 6]);
    r
}

/// An `iext` datagram claiming 4096 clients of 4096 slots, with `records` empty client records (6 NULs each).
fn iext(token: u32, records: usize) -> Vec<u8> {
    iext_with(token, &record(b"").repeat(records))
}

fn iext_with(token: u32, records: &[u8]) -> Vec<u8> {
    let mut d = b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffiext".to_vec();
    let t = token.to_string();
    d.extend(cstrs(&[&t, "0.6.4", "srv", "map", "0", "0", "DDNet", "0", "4096", "4096", "4096", "4096", ""]));
    d.extend(records);
    d
}

/// An `iex+` datagram, page `page`, with `records` empty client records.
fn iex_more(token: u32, page: u32, records: usize) -> Vec<u8> {
    iex_more_with(token, page, &record(b"").repeat(records))
}

fn iex_more_with(token: u32, page: u32, records: &[u8]) -> Vec<u8> {
    let mut d = b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffiex+".to_vec();
    d.extend(cstrs(&[&token.to_string(), &page.to_string(), ""]));
    d.extend(records);
    d
}

/// A `dtsf` (64-player legacy) datagram with client offset `offset` and `records` empty records.
fn dtsf(token: u8, offset: u8, records: usize) -> Vec<u8> {
    let mut d = b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffdtsf".to_vec();
    d.extend(cstrs(&[&token.to_string(), "0.6.4", "srv", "map", "DDNet", "0", "4096", "4096", "4096", "4096"]));
    d.push(offset); // the offset varint (values below 64 are one byte)
    d.extend(std::iter::repeat_n(0, 5 * records));
    d
}

/// Feeds `datagrams` one millisecond apart, then fires deadlines until the query ends.
fn run(protocol: &str, mode: &str, datagrams: &[Vec<u8>]) -> Report {
    let tokens = Tokens { six: 0x12_3456, client7: [1, 2, 3, 4], browser7: 5 };
    let config = QueryConfig { retries: 0, ..QueryConfig::default() }.with_param("mode", mode);
    let mut c = Collector::new();
    let mut e = TeeworldsEngine::with_tokens(protocol, target(), &config, tokens, 1000, &mut c).unwrap();
    let mut now = 1000;
    for d in datagrams {
        now += 1;
        e.on_datagram(now, target(), d, &mut c);
    }
    for _ in 0..100 {
        if c.done().is_some() {
            break;
        }
        now = now.max(e.next_deadline().expect("a deadline while not done"));
        e.on_timeout(now, &mut c);
    }
    c.report()
}

/// `query_teeworlds`: an `iext` page and one `iex+` page of 200 records each, from a server that claims 4096 clients.
/// The engine reported all 400 players, more than the `MAX_CLIENTS` it means to keep for one server; over enough
/// pages (17 of 250 records, 26 KB, the `query_host` case below) it passed the host's 4096-player limit, and the host
/// failed the query as a misbehaving plugin instead of reporting the server.
#[test]
fn extended_pages_beyond_max_clients_are_cut() {
    let t = 0x12_3456;
    let rep = run("teeworlds", "extended", &[iext(t, 200), iex_more(t, 1, 200)]);
    assert!(rep.ok());
    assert_eq!(rep.players.len(), MAX_CLIENTS);
    assert_eq!(rep.bool(keys::PLAYER_LIST_COMPLETE), Some(false));
}

/// `query_host`: 17 datagrams of 250 records each (4250 players) made the host drop the query.
#[test]
fn extended_pages_beyond_the_hosts_player_limit_are_cut() {
    let t = 0x12_3456;
    let mut pages = vec![iext(t, 250)];
    pages.extend((1..17).map(|p| iex_more(t, p, 250)));
    let rep = run("teeworlds", "auto", &pages);
    assert!(rep.ok());
    assert_eq!(rep.players.len(), MAX_CLIENTS);
    assert_eq!(rep.bool(keys::PLAYER_LIST_COMPLETE), Some(false));
}

/// The same through the 64-player legacy pages (`dtsf`, one page per client offset).
#[test]
fn legacy_pages_beyond_max_clients_are_cut() {
    let low = 0x56;
    let pages: Vec<Vec<u8>> = (0..20).map(|o| dtsf(low, o, 250)).collect();
    let rep = run("teeworlds", "legacy64", &pages);
    assert!(rep.ok());
    assert_eq!(rep.players.len(), MAX_CLIENTS);
    assert_eq!(rep.bool(keys::PLAYER_LIST_COMPLETE), Some(false));
}

/// `query_host`: a vanilla reply whose server name is 25,000 bytes that are not UTF-8 (75,000 bytes once decoded, over
/// the host's 64 KiB per text): the host failed the query as a misbehaving plugin. Fields are now cut at
/// `MAX_FIELD` bytes before decoding (and `query_abi`'s export layer cuts any text at the host's limit).
#[test]
fn a_huge_server_name_is_cut() {
    let mut d = b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffinf3".to_vec();
    d.extend(cstrs(&["86", "0.6"])); // 86: the low byte of the token
    d.extend([0xff; 25_000]);
    d.push(0);
    d.extend(cstrs(&["map", "dm", "0", "0", "0", "0", "0"]));
    let rep = run("teeworlds", "vanilla", &[d]);
    assert!(rep.ok());
    let name = rep.str(keys::NAME).unwrap();
    assert_eq!(name, "\u{fffd}".repeat(MAX_FIELD));
}

/// `query_host`: 64 pages of four clients with 16,000-byte names (not UTF-8): 12 MB of text in the final report,
/// over the host's 8 MiB per call, so the host failed the query as a misbehaving plugin.
#[test]
fn huge_names_over_all_pages_stay_within_the_hosts_budget() {
    let t = 0x12_3456;
    let clients = record(&[0xff; 16_000]).repeat(4);
    let mut pages = vec![iext_with(t, &clients)];
    pages.extend((1..64).map(|p| iex_more_with(t, p, &clients)));
    let rep = run("teeworlds", "extended", &pages);
    assert!(rep.ok());
    assert_eq!(rep.players.len(), MAX_CLIENTS);
    let text: usize = rep.players.iter().map(|p| p.name.len()).sum();
    assert!(text <= MAX_CLIENTS * 3 * MAX_FIELD, "{text} bytes of names");
    assert!(rep.players.iter().all(|p| p.name.len() <= 3 * MAX_FIELD));
}
