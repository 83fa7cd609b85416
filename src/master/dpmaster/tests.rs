use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use query_quake3::msg::parse_servers;

use super::*;

fn addr(i: u32, port: u16) -> SocketAddr {
    // Public addresses (the documentation blocks are special-use).
    SocketAddr::from((Ipv4Addr::from(0x0800_0000 + i), port))
}

fn oob(s: &str) -> Vec<u8> {
    let mut v = OOB.to_vec();
    v.extend_from_slice(s.as_bytes());
    v
}

/// Sends a heartbeat and returns the challenge of the `getinfo` answer.
fn heartbeat(m: &mut Dpmaster, now: Instant, from: SocketAddr, tag: &str) -> Option<String> {
    m.handle_datagram(now, 0, from, &oob(&format!("heartbeat {tag}\n")));
    let mut got = None;
    while let Some(t) = m.poll_transmit() {
        assert_eq!(t.to, from);
        got = Some(String::from_utf8(t.bytes.strip_prefix(OOB).unwrap().to_vec()).unwrap());
    }
    let g = got?;
    Some(g.strip_prefix("getinfo ").expect("a getinfo").to_owned())
}

fn info(challenge: &str, clients: u32, extra: &str) -> Vec<u8> {
    oob(&format!(
        "infoResponse\n\\sv_maxclients\\8\\clients\\{clients}\\protocol\\71\\gamename\\Quake3Arena{extra}\\challenge\\{challenge}"
    ))
}

fn register(m: &mut Dpmaster, now: Instant, from: SocketAddr, clients: u32) {
    let c = heartbeat(m, now, from, "QuakeArena-1").expect("challenge");
    m.handle_datagram(now, 0, from, &info(&c, clients, ""));
}

/// The entries of a reply's datagrams; checks the split and the EOT.
fn list(m: &mut Dpmaster, now: Instant, from: SocketAddr, request: &str) -> Vec<SocketAddr> {
    m.handle_datagram(now, 0, from, &oob(request));
    let mut pages = Vec::new();
    while let Some(t) = m.poll_transmit() {
        assert!(t.bytes.len() <= MAX_DATAGRAM_OUT, "{} bytes", t.bytes.len());
        pages.push(t.bytes);
    }
    let mut entries = Vec::new();
    let n = pages.len();
    for (i, p) in pages.iter().enumerate() {
        let body = p.strip_prefix(OOB).unwrap();
        let body = body
            .strip_prefix(b"getserversExtResponse".as_slice())
            .or_else(|| body.strip_prefix(b"getserversResponse".as_slice()))
            .unwrap();
        let page = parse_servers(body);
        assert_eq!(page.eot, i + 1 == n, "EOT only in the last of {n} datagrams");
        assert_eq!(page.garbage_at, None);
        entries.extend(page.entries);
    }
    entries
}

#[test]
fn a_server_is_listed_after_a_valid_info_response_only() {
    let now = Instant::now();
    let mut m = Dpmaster::new(Config::default());
    let s = addr(1, 27960);
    let c = heartbeat(&mut m, now, s, "QuakeArena-1").unwrap();
    assert_eq!(c.len(), CHALLENGE_LEN);
    assert!(query_quake3::msg::valid_challenge(&c), "{c}");
    assert!(list(&mut m, now, addr(101, 1), "getservers Quake3Arena 71 empty full").is_empty());
    // A second heartbeat while the challenge is valid gets the same challenge.
    assert_eq!(heartbeat(&mut m, now, s, "QuakeArena-1").unwrap(), c);
    m.handle_datagram(now, 0, s, &info(&c, 3, ""));
    assert_eq!(m.counters().registrations, 1);
    assert_eq!(list(&mut m, now, addr(102, 1), "getservers Quake3Arena 71"), vec![s]);
    assert_eq!(list(&mut m, now, addr(103, 1), "getservers 71"), vec![s], "anonymous: the game of its heartbeat");
    assert_eq!(list(&mut m, now, addr(104, 1), "getserversExt Quake3Arena 71 ipv4"), vec![s]);
    assert!(list(&mut m, now, addr(105, 1), "getserversExt Quake3Arena 71 ipv6").is_empty());
    assert!(list(&mut m, now, addr(106, 1), "getservers Quake3Arena 68").is_empty());
    assert!(list(&mut m, now, addr(107, 1), "getservers Quake3Arena 71 ctf").is_empty());
    assert_eq!(list(&mut m, now, addr(108, 1), "getservers Quake3Arena 71 ffa"), vec![s]);
    assert_eq!(m.counters().list_requests, 8);
}

#[test]
fn challenges_are_single_use_and_bound_to_the_heartbeat_source() {
    let now = Instant::now();
    let mut m = Dpmaster::new(Config::default());
    let s = addr(1, 27960);
    let c = heartbeat(&mut m, now, s, "QuakeArena-1").unwrap();
    // From another address (a forger who guessed the challenge): unknown server.
    m.handle_datagram(now, 0, addr(2, 27960), &info(&c, 1, ""));
    // A wrong challenge does not spend the right one.
    m.handle_datagram(now, 0, s, &info("wrong", 1, ""));
    assert_eq!(m.counters().challenges_failed, 2);
    m.handle_datagram(now, 0, s, &info(&c, 1, ""));
    assert_eq!(m.counters().registrations, 1);
    // Replayed: refused, the lease is not renewed.
    m.handle_datagram(now + Duration::from_secs(1), 0, s, &info(&c, 1, ""));
    assert_eq!(m.counters().registrations, 1);
    assert_eq!(m.counters().challenges_failed, 3);
    // Too late.
    let c2 = heartbeat(&mut m, now, s, "QuakeArena-1").unwrap();
    assert_ne!(c2, c);
    m.handle_datagram(now + CHALLENGE_TIMEOUT + Duration::from_millis(1), 0, s, &info(&c2, 1, ""));
    assert_eq!(m.counters().registrations, 1);
}

#[test]
fn leases_and_pending_servers_expire() {
    let t0 = Instant::now();
    let lease = Duration::from_secs(5);
    let mut m = Dpmaster::new(Config { lease, ..Config::default() });
    let s = addr(1, 27960);
    register(&mut m, t0, s, 1);
    let _ = heartbeat(&mut m, t0, addr(2, 27960), "QuakeArena-1").unwrap(); // never answered
    assert_eq!(m.poll_timeout(), Some(t0 + CHALLENGE_TIMEOUT));
    m.handle_timeout(t0 + CHALLENGE_TIMEOUT);
    let c = m.counters();
    assert_eq!((c.listed, c.pending, c.challenges_failed), (1, 0, 1));
    // Renewed at t0+3 by a new valid reply: the first deadline is stale.
    register(&mut m, t0 + Duration::from_secs(3), s, 1);
    m.handle_timeout(t0 + lease);
    assert_eq!(m.counters().listed, 1);
    m.handle_timeout(t0 + Duration::from_secs(8));
    let c = m.counters();
    assert_eq!((c.listed, c.leases_expired), (0, 1));
    assert_eq!(m.poll_timeout(), None);
}

#[test]
fn replies_are_split_at_1400_bytes_with_eot_in_the_last() {
    let now = Instant::now();
    let cfg = Config { max_per_address: 10_000, max_servers: 10_000, flood_throttle: 0, ..Config::default() };
    let mut m = Dpmaster::new(cfg);
    for n in [0usize, 1, 196, 197, 198, 600] {
        let listed = m.counters().listed as usize;
        for i in listed..n {
            register(&mut m, now, addr(1, 1000 + i as u16), 1);
        }
        let mut got = list(&mut m, now, addr(9, 1), "getservers Quake3Arena 71");
        got.sort();
        assert_eq!(got.len(), n);
        got.dedup();
        assert_eq!(got.len(), n, "no entry twice");
    }
}

#[test]
fn policies_and_caps_refuse_and_count() {
    let now = Instant::now();
    let mut m = Dpmaster::new(Config { max_per_address: 2, max_servers: 3, ..Config::default() });
    // Special-use addresses are refused.
    assert!(heartbeat(&mut m, now, "127.0.0.1:27960".parse().unwrap(), "QuakeArena-1").is_none());
    assert!(heartbeat(&mut m, now, "192.168.1.2:27960".parse().unwrap(), "DarkPlaces").is_none());
    // Unknown and flatline tags.
    assert!(heartbeat(&mut m, now, addr(1, 1), "Bogus-1").is_none());
    assert!(heartbeat(&mut m, now, addr(1, 1), "ETFlatline-1").is_none());
    // Per address, then in all.
    assert!(heartbeat(&mut m, now, addr(1, 1), "QuakeArena-1").is_some());
    assert!(heartbeat(&mut m, now, addr(1, 2), "QuakeArena-1").is_some());
    assert!(heartbeat(&mut m, now, addr(1, 3), "QuakeArena-1").is_none());
    assert!(heartbeat(&mut m, now, addr(2, 1), "QuakeArena-1").is_some());
    assert!(heartbeat(&mut m, now, addr(3, 1), "QuakeArena-1").is_none());
    assert_eq!(m.counters().refused, 5);
    // Oversized and foreign datagrams.
    m.handle_datagram(now, 0, addr(4, 1), &vec![0xff; 65_000]);
    m.handle_datagram(now, 0, addr(4, 1), b"hello");
    assert_eq!(m.counters().refused, 7);
    assert!(m.poll_transmit().is_none());
    // A game policy.
    let mut m = Dpmaster::new(Config { policy: GamePolicy::Reject(vec!["Quake3Arena".into()]), ..Config::default() });
    assert!(heartbeat(&mut m, now, addr(1, 1), "QuakeArena-1").is_none());
    let c = heartbeat(&mut m, now, addr(1, 1), "DarkPlaces").unwrap();
    m.handle_datagram(now, 0, addr(1, 1), &info(&c, 1, ""));
    assert_eq!(m.counters().registrations, 0);
}

#[test]
fn list_requests_are_throttled_per_address() {
    let now = Instant::now();
    let mut m = Dpmaster::new(Config::default());
    let mut answered = 0;
    for _ in 0..100 {
        m.handle_datagram(now, 0, addr(9, 1), &oob("getservers Quake3Arena 71"));
        answered += std::iter::from_fn(|| m.poll_transmit()).count();
    }
    assert_eq!(answered, DEFAULT_FLOOD_THROTTLE as usize);
    assert_eq!(m.counters().throttled, 100 - u64::from(DEFAULT_FLOOD_THROTTLE));
    // Another client is answered; the first again after the decay.
    assert_eq!(list(&mut m, now, addr(10, 1), "getservers Quake3Arena 71"), vec![]);
    m.handle_datagram(now + FP_DECAY, 0, addr(9, 1), &oob("getservers Quake3Arena 71"));
    assert!(m.poll_transmit().is_some());
}

#[test]
fn a_heartbeat_flood_from_one_address_stays_bounded() {
    let now = Instant::now();
    let mut m = Dpmaster::new(Config::default());
    let mut sent = 0;
    for i in 0..100_000u32 {
        let from = addr(1, (i % 60_000) as u16 + 1);
        m.handle_datagram(now, 0, from, &oob("heartbeat QuakeArena-1\n"));
        sent += std::iter::from_fn(|| m.poll_transmit()).count();
    }
    assert!(m.servers.len() <= DEFAULT_MAX_PER_ADDRESS);
    assert!(sent <= 2 * DEFAULT_MAX_PER_ADDRESS, "{sent} getinfo sent");
    // Another server still registers.
    register(&mut m, now, addr(2, 27960), 1);
    assert_eq!(m.counters().registrations, 1);
}

#[test]
fn info_responses_are_checked() {
    let now = Instant::now();
    let mut m = Dpmaster::new(Config::default());
    let s = addr(1, 27960);
    for bad in ["\\sv_maxclients\\0", "\\gamename\\Other", "\\gametype\\a b"] {
        let c = heartbeat(&mut m, now, s, "QuakeArena-1").unwrap();
        // Earlier keys win (as dpmaster's search does), so the bad value goes first.
        let body = format!("infoResponse\n{bad}\\sv_maxclients\\8\\clients\\1\\protocol\\71\\challenge\\{c}");
        m.handle_datagram(now, 0, s, &oob(&body));
        assert_eq!(m.counters().registrations, 0, "{bad}");
    }
    let c = heartbeat(&mut m, now, s, "DarkPlaces").unwrap();
    m.handle_datagram(
        now,
        0,
        s,
        &oob(&format!("infoResponse\n\\sv_maxclients\\8\\clients\\1\\protocol\\3\\challenge\\{c}")),
    );
    assert_eq!(m.counters().registrations, 0, "DarkPlaces without a gamename");
    let c = heartbeat(&mut m, now, s, "DarkPlaces").unwrap();
    m.handle_datagram(
        now,
        0,
        s,
        &oob(&format!(
        "infoResponse\n\\sv_maxclients\\8\\clients\\8\\protocol\\3\\gamename\\Xonotic\\gametype\\dm\\challenge\\{c}"
    )),
    );
    assert_eq!(m.counters().registrations, 1);
    let l = m.listed(now);
    assert_eq!((l[0].game.as_str(), l[0].gametype.as_str(), l[0].clients), ("Xonotic", "dm", 8));
    assert!(list(&mut m, now, addr(9, 1), "getservers Xonotic 3").is_empty(), "full");
    assert_eq!(list(&mut m, now, addr(9, 2), "getservers Xonotic 3 full gametype=dm"), vec![s]);
    assert!(list(&mut m, now, addr(9, 3), "getservers 3 full").is_empty(), "DarkPlaces servers are not anonymous");
    // A multi-byte character across the cut of a game type filter.
    let long = format!("getservers Xonotic 3 full gametype={}é", "x".repeat(GAMETYPE_MAX - 1));
    assert!(list(&mut m, now, addr(9, 4), &long).is_empty());
}

#[test]
fn game_properties_change_as_dpmaster_s() {
    let mut g = builtin_games();
    apply_property(&mut g, "Quake3Arena", "protocols+=71").unwrap();
    assert_eq!(g[0].protocols, vec![66, 67, 68, 71]);
    apply_property(&mut g, "et", "options-=send-full-servers").unwrap();
    assert!(g[2].send_empty && !g[2].send_full);
    apply_property(&mut g, "Q3Rally", "heartbeat=Q3Rally-1").unwrap();
    assert_eq!(g[3].heartbeat.as_deref(), Some("Q3Rally-1"));
    apply_property(&mut g, "wolfmp", "protocols-=50").unwrap();
    assert_eq!(g[1].protocols, vec![59, 60]);
    assert!(apply_property(&mut g, "et", "colour=red").is_err());
    assert!(apply_property(&mut g, "et", "protocols=x").is_err());
    assert!(apply_property(&mut g, "a b", "protocols=1").is_err());
}

#[test]
fn ipv6_servers_only_in_extended_replies() {
    let now = Instant::now();
    let mut m = Dpmaster::new(Config::default());
    let v6: SocketAddr = "[2001:4860::1]:27960".parse().unwrap();
    let v4 = addr(1, 27960);
    register(&mut m, now, v6, 1);
    register(&mut m, now, v4, 1);
    assert_eq!(list(&mut m, now, addr(9, 1), "getservers Quake3Arena 71"), vec![v4]);
    let mut both = list(&mut m, now, addr(9, 2), "getserversExt Quake3Arena 71");
    both.sort();
    assert_eq!(both, vec![v4, v6]);
    assert_eq!(list(&mut m, now, addr(9, 3), "getserversExt Quake3Arena 71 ipv6"), vec![v6]);
    // The per-address quota counts an IPv6 /64 as one address.
    let mut m2 = Dpmaster::new(Config { max_per_address: 2, ..Config::default() });
    for (i, expect) in [(1, true), (2, true), (3, false)] {
        let a: SocketAddr = format!("[2001:4860::{i}]:27960").parse().unwrap();
        assert_eq!(heartbeat(&mut m2, now, a, "QuakeArena-1").is_some(), expect, "{a}");
    }
    assert!(heartbeat(&mut m2, now, "[2001:4860:0:1::1]:27960".parse().unwrap(), "QuakeArena-1").is_some());
    // An IPv4-mapped source is its IPv4 address.
    let mapped: SocketAddr = "[::ffff:8.0.0.7]:5".parse().unwrap();
    assert!(heartbeat(&mut m, now, mapped, "QuakeArena-1").is_some());
    assert!(m.find(addr(7, 5)).is_some());
}

#[test]
fn a_server_is_one_72_byte_record() {
    // The memory per listed server (docs/benchmarks.md) rests on it.
    assert!(std::mem::size_of::<Server>() <= 72, "{} bytes", std::mem::size_of::<Server>());
    for a in [addr(1, 27960), "[2001:4860::1]:5".parse().unwrap()] {
        assert_eq!(address(&record(a)), a);
    }
}

/// Registers `from` with a `DarkPlaces` heartbeat as game `game`, type `gametype`.
fn register_as(m: &mut Dpmaster, now: Instant, from: SocketAddr, game: &str, gametype: &str) -> bool {
    let before = m.counters().registrations;
    let c = heartbeat(m, now, from, "DarkPlaces").expect("challenge");
    let body = format!(
        "infoResponse\n\\sv_maxclients\\8\\clients\\1\\protocol\\3\\gamename\\{game}\\gametype\\{gametype}\\challenge\\{c}"
    );
    m.handle_datagram(now, 0, from, &oob(&body));
    m.counters().registrations == before + 1
}

#[test]
fn game_names_and_types_are_bounded_and_freed_with_their_last_server() {
    let t0 = Instant::now();
    let lease = Duration::from_secs(60);
    let n = MAX_NAMES as u32;
    let cfg = Config { max_servers: 3 * MAX_NAMES, max_per_address: 1, flood_throttle: 0, lease, ..Config::default() };
    let mut m = Dpmaster::new(cfg);
    for i in 0..n {
        assert!(register_as(&mut m, t0, addr(i, 1), &format!("g{i}"), "dm"), "{i}");
    }
    // A new game name past the bound is refused; a known one, or a known type, still registers.
    assert!(!register_as(&mut m, t0, addr(n, 1), "another", "dm"));
    assert!(register_as(&mut m, t0, addr(n + 1, 1), "g7", "dm"));
    assert_eq!(list(&mut m, t0, addr(9, 9), "getservers g7 3"), vec![addr(7, 1), addr(n + 1, 1)]);
    // Game types too ("dm" is one).
    for i in 0..n - 1 {
        assert!(register_as(&mut m, t0, addr(n + 2 + i, 1), "g0", &format!("t{i}")), "{i}");
    }
    assert!(!register_as(&mut m, t0, addr(2 * n + 2, 1), "g0", "t-new"));
    assert_eq!(list(&mut m, t0, addr(9, 10), "getservers g0 3 gametype=t5"), vec![addr(n + 7, 1)]);
    assert!(list(&mut m, t0, addr(9, 11), "getservers g0 3 gametype=t-new").is_empty());
    // A renewal under another name lets the old one go.
    assert!(register_as(&mut m, t0, addr(n + 1, 1), "g0", "dm"));
    assert_eq!(list(&mut m, t0, addr(9, 12), "getservers g7 3"), vec![addr(7, 1)]);
    // The leases end: every name is let go, and new ones are taken.
    m.handle_timeout(t0 + lease);
    assert_eq!(m.counters().listed, 0);
    assert!(m.games.ids.is_empty() && m.types.ids.is_empty());
    assert!(register_as(&mut m, t0 + lease, addr(1, 1), "another", "t-new"));
    assert_eq!(m.listed(t0 + lease)[0].game, "another");
}

#[test]
fn removals_keep_the_index_right_and_sweeps_are_spaced() {
    let t0 = Instant::now();
    let lease = Duration::from_secs(10);
    let cfg = Config { max_servers: 1000, max_per_address: 1000, flood_throttle: 0, lease, ..Config::default() };
    let mut m = Dpmaster::new(cfg);
    m.handle_timeout(t0); // the first input: the table's times start here (a later one may not go back before it)
                          // Every third server registers a second later: the others' leases end first, from all over the table.
    for i in 0..300u32 {
        let at = if i % 3 == 0 { t0 + Duration::from_secs(1) } else { t0 };
        register(&mut m, at, addr(i, 2), 1);
    }
    assert_eq!(m.poll_timeout(), Some(t0 + CHALLENGE_TIMEOUT), "the first pending deadline");
    m.handle_timeout(t0 + CHALLENGE_TIMEOUT);
    assert_eq!(m.poll_timeout(), Some(t0 + lease));
    m.handle_timeout(t0 + lease);
    assert_eq!(m.counters().leases_expired, 200);
    assert_eq!(m.servers.len(), 100);
    for (i, s) in m.servers.iter().enumerate() {
        assert_eq!(m.index.get(&s.rec), Some(&(i as u32)));
    }
    for i in (0..300u32).step_by(3) {
        assert!(m.find(addr(i, 2)).is_some(), "{i}");
    }
    let mut got = list(&mut m, t0 + lease, addr(9, 1), "getservers Quake3Arena 71");
    got.sort();
    assert_eq!(got, (0..300).step_by(3).map(|i| addr(i, 2)).collect::<Vec<_>>());
    // The next sweep waits SWEEP_EVERY after this one even if a deadline comes sooner.
    let _ = heartbeat(&mut m, t0 + lease, addr(500, 1), "QuakeArena-1").unwrap();
    let _ = heartbeat(&mut m, t0 + lease + Duration::from_millis(1), addr(501, 1), "QuakeArena-1").unwrap();
    m.handle_timeout(t0 + lease + CHALLENGE_TIMEOUT);
    assert_eq!(m.counters().pending, 1);
    assert_eq!(m.poll_timeout(), Some(t0 + lease + CHALLENGE_TIMEOUT + SWEEP_EVERY));
    m.handle_timeout(t0 + lease + CHALLENGE_TIMEOUT + SWEEP_EVERY);
    assert_eq!(m.counters().pending, 0);
    // The other leases ended by then (at t0 + 11 s) too.
    assert_eq!((m.counters().listed, m.counters().leases_expired), (0, 300));
    assert!(m.servers.is_empty() && m.index.is_empty() && m.per_ip.is_empty());
    assert_eq!(m.poll_timeout(), None);
}

#[test]
fn mirrored_servers_are_listed_under_the_same_filters_once() {
    let mut m = Dpmaster::new(Config { flood_throttle: 0, ..Config::default() });
    let now = Instant::now();
    let client = addr(9, 40000);
    let mirror = |a: SocketAddr, clients: u32, gametype: &str| Listed {
        addr: a,
        game: "Quake3Arena".into(),
        protocol: 71,
        gametype: gametype.into(),
        clients,
        max_clients: 8,
    };
    // Only mirrored servers: an anonymous request takes their game (known by its heartbeat tag).
    m.set_mirrored(vec![
        mirror(addr(1, 27960), 2, "0"),
        mirror(addr(2, 27960), 0, "4"),
        mirror(addr(3, 27960), 8, "0"),
    ]);
    assert_eq!(list(&mut m, now, client, "getservers 71"), [addr(1, 27960)]);
    assert_eq!(list(&mut m, now, client, "getservers Quake3Arena 71 empty full").len(), 3);
    assert_eq!(list(&mut m, now, client, "getservers Quake3Arena 71 empty ctf"), [addr(2, 27960)]);
    assert!(list(&mut m, now, client, "getservers Quake3Arena 68 empty full").is_empty());
    assert!(list(&mut m, now, client, "getservers OtherGame 71 empty full").is_empty());
    // Registered too: listed once, with its own listing (1 client, not empty).
    register(&mut m, now, addr(2, 27960), 1);
    let mut got = list(&mut m, now, client, "getservers Quake3Arena 71");
    got.sort();
    assert_eq!(got, [addr(1, 27960), addr(2, 27960)]);
    // At most max_servers kept.
    let mut small = Dpmaster::new(Config { max_servers: 2, flood_throttle: 0, ..Config::default() });
    small.set_mirrored((0..10).map(|i| mirror(addr(100 + i, 27960), 1, "0")).collect());
    assert_eq!(list(&mut small, now, client, "getservers 71").len(), 2);
}
