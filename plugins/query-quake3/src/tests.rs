//! The engines against the OpenArena and dpmaster captures in `testdata/`, plus hand-built Warsow replies (no Warsow
//! server could be run; their layout is from qfusion `warsow_2_1_0` `sv_oob.c`), in virtual time.

use crate::engine::{challenge_from, Quake3Engine, QUAKE3_CHALLENGE_CHARS, WARSOW_CHALLENGE_CHARS};
use bzhead_wire::fuzz::{for_each_mutation, for_each_truncation};
use query_abi::collect::{Collector, OwnedValue, Report};
use query_abi::{keys, Datagram, QueryConfig, QueryEngine, Status};
use serde_json::Value as Json;
use std::collections::HashSet;
use std::net::SocketAddr;

const TARGET: &str = "127.0.0.1:15203";

fn target() -> SocketAddr {
    TARGET.parse().unwrap()
}

macro_rules! cap {
    ($f:literal) => {
        include_bytes!(concat!("../testdata/", $f)).as_slice()
    };
}

struct Run {
    c: Collector,
    e: Quake3Engine,
    now: u64,
}

impl Run {
    fn new(protocol: &str, config: QueryConfig, chals: (&str, &str)) -> Run {
        let mut c = Collector::new();
        let e = Quake3Engine::with_challenges(protocol, target(), &config, chals.0, chals.1, 1000, &mut c).unwrap();
        Run { c, e, now: 1000 }
    }

    fn oa() -> Run {
        Run::new("quake3", QueryConfig::default(), ("xxx_chal", "yyy_chal"))
    }

    fn master(config: QueryConfig) -> Run {
        Run::new("dpmaster", config, ("unused", "unused"))
    }

    fn feed(&mut self, data: &[u8]) -> Datagram {
        self.now += 1;
        self.e.on_datagram(self.now, target(), data, &mut self.c)
    }

    fn sends(&mut self) -> Vec<Vec<u8>> {
        self.c.take_sends().into_iter().map(|(_, d)| d).collect()
    }

    fn run_out(&mut self) -> Report {
        for _ in 0..100 {
            if self.c.done().is_some() {
                return self.c.report();
            }
            let d = self.e.next_deadline().expect("not done but no deadline: the query would hang");
            assert!(d >= self.now);
            self.now = d;
            self.e.on_timeout(d, &mut self.c);
        }
        panic!("query did not end");
    }
}

#[test]
fn openarena_getinfo_and_getstatus() {
    let mut r = Run::oa();
    assert_eq!(r.sends(), vec![cap!("bots4-getinfo.req.bin").to_vec(), cap!("bots4-getstatus.req.bin").to_vec()]);
    assert_eq!(r.feed(cap!("bots4-getstatus.resp.bin")), Datagram::Accepted);
    assert!(r.c.done().is_none(), "waits for getinfo too");
    assert_eq!(r.feed(cap!("bots4-getinfo.resp.bin")), Datagram::Accepted);
    let rep = r.c.report();
    assert!(rep.ok());
    assert_eq!(rep.str(keys::NAME), Some("bzhead OA test"));
    assert_eq!(rep.str(keys::MAP), Some("oa_dm1"));
    assert_eq!(rep.str(keys::GAME_TYPE), Some("0"));
    assert_eq!(rep.int(keys::PLAYERS), Some(4), "clients counts bots");
    assert_eq!(rep.int(keys::MAX_PLAYERS), Some(12));
    assert_eq!(rep.int(keys::BOTS), Some(4), "clients 4 - g_humanplayers 0");
    assert_eq!(rep.bool(keys::PASSWORD), Some(false));
    assert_eq!(rep.str(keys::VERSION), Some("ioq3 1.36+u20221123.70d07d9+dfsg-1/Debian linux-x86_64 Jan  8 2023"));
    assert_eq!(rep.bool(keys::PLAYER_LIST_COMPLETE), Some(true));
    assert_eq!(rep.raw("protocol"), Some(&OwnedValue::from("71")));
    assert_eq!(rep.raw("gamename"), Some(&OwnedValue::from("Quake3Arena")), "getinfo's com_gamename");
    let names: Vec<_> = rep.players.iter().map(|p| (p.name.as_str(), p.score, p.ping)).collect();
    assert_eq!(
        names,
        vec![
            ("Grism", Some(1), Some(0)),
            ("Kyonshi", Some(2), Some(0)),
            ("Sorceress", Some(1), Some(0)),
            ("Dark", Some(1), Some(0))
        ]
    );
    assert!(rep.players.iter().all(|p| p.team == OwnedValue::Null));
    assert_eq!(rep.rule("challenge"), None);
    assert_eq!(rep.rule("gamename"), Some("baseoa"), "the serverinfo cvar");

    // Same rules as qstat reports for this server (qstat keeps getinfo's gamename; we keep the cvar).
    let q: Json = serde_json::from_str(include_str!("../testdata/qstat-2.17-openarenas.json")).unwrap();
    let q = &q[0];
    assert_eq!(rep.str(keys::NAME), q["name"].as_str());
    assert_eq!(rep.str(keys::MAP), q["map"].as_str());
    assert_eq!(rep.int(keys::PLAYERS), q["numplayers"].as_i64());
    assert_eq!(rep.int(keys::MAX_PLAYERS), q["maxplayers"].as_i64());
    for (k, v) in q["rules"].as_object().unwrap() {
        if k != "gamename" {
            assert_eq!(rep.rule(k), v.as_str(), "rule {k}");
        }
    }
    let qn: Vec<_> = q["players"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    let ours: Vec<_> = rep.players.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(ours, qn);
}

#[test]
fn challenges_are_required_unless_optional() {
    let mut r = Run::new("quake3", QueryConfig::default(), ("other1", "other2"));
    assert_eq!(r.feed(cap!("bots4-getinfo.resp.bin")), Datagram::Ignored, "challenge xxx_chal is not ours");
    assert_eq!(r.feed(cap!("bots4-getstatus.resp.bin")), Datagram::Ignored);
    assert_eq!(r.feed(cap!("bots4-getinfo-nochal.resp.bin")), Datagram::Ignored, "a reply must echo ours");
    assert_eq!(r.feed(cap!("bots4-getstatus-nochal.resp.bin")), Datagram::Ignored);
    assert!(r.c.done().is_none());
    let optional = QueryConfig::default().with_param("challenge", "optional");
    let mut r = Run::new("quake3", optional, ("other1", "other2"));
    assert_eq!(r.feed(cap!("bots4-getinfo.resp.bin")), Datagram::Ignored, "a wrong one is never accepted");
    assert_eq!(r.feed(cap!("bots4-getinfo-nochal.resp.bin")), Datagram::Accepted, "old servers echo nothing");
    assert_eq!(r.feed(cap!("bots4-getinfo-nochal.resp.bin")), Datagram::Ignored, "duplicate");
    assert_eq!(r.feed(cap!("bots4-getstatus-nochal.resp.bin")), Datagram::Accepted);
    assert!(r.c.report().ok());
    // Not from the target, or not a reply at all.
    let mut r = Run::oa();
    let other: SocketAddr = "127.0.0.2:15203".parse().unwrap();
    assert_eq!(r.e.on_datagram(1, other, cap!("bots4-getinfo.resp.bin"), &mut r.c), Datagram::Ignored);
    assert_eq!(r.feed(cap!("bots4-getchallenge.resp.bin")), Datagram::Ignored);
    assert_eq!(r.feed(b"\xff\xff\xff\xffprint\nhello"), Datagram::Ignored);
}

#[test]
fn info_only_is_reported_as_players_unknown() {
    let mut r = Run::oa();
    r.feed(cap!("bots4-getinfo.resp.bin"));
    let rep = r.run_out();
    assert!(rep.ok());
    assert_eq!(rep.int(keys::PLAYERS), Some(4));
    assert_eq!(rep.bool(keys::PLAYER_LIST_COMPLETE), Some(false));
    assert!(rep.players.is_empty());
    // The retries asked only for what was missing, with fresh challenges, at least a second apart.
    let sends = r.sends();
    assert_eq!(sends.len(), 4);
    assert_eq!(sends[2], b"\xff\xff\xff\xffgetstatus yyy_chalr1");
    assert_eq!(sends[3], b"\xff\xff\xff\xffgetstatus yyy_chalr2");
}

#[test]
fn status_only_mode_and_late_reply_to_an_earlier_attempt() {
    let config = QueryConfig { timeout_ms: 200, ..QueryConfig::default() }.with_param("query", "status");
    let mut r = Run::new("quake3", config, ("a", "yyy_chal"));
    assert_eq!(r.sends(), vec![cap!("bots4-getstatus.req.bin").to_vec()]);
    let d = r.e.next_deadline().unwrap();
    assert_eq!(d, 2000, "retry spaced by ioq3's 1/s rate limit, not the 200 ms timeout");
    r.now = d;
    r.e.on_timeout(d, &mut r.c);
    assert_eq!(r.sends(), vec![b"\xff\xff\xff\xffgetstatus yyy_chalr1".to_vec()]);
    // The first request's answer arrives late: still ours.
    assert_eq!(r.feed(cap!("bots4-getstatus.resp.bin")), Datagram::Accepted);
    let rep = r.c.report();
    assert!(rep.ok());
    assert_eq!(rep.int(keys::PLAYERS), Some(4), "counted from the lines");
    assert_eq!(rep.int(keys::MAX_PLAYERS), Some(12));
    assert_eq!(rep.server.get(keys::BOTS), None, "unknown without getinfo");
    assert_eq!(rep.str(keys::GAME_TYPE), Some("0"));
}

#[test]
fn silence_times_out() {
    let mut r = Run::oa();
    let rep = r.run_out();
    assert_eq!(rep.done.unwrap().0, Status::TIMEOUT);
    assert_eq!(r.sends().len(), 6);
}

fn oob(s: &str) -> Vec<u8> {
    let mut v = b"\xff\xff\xff\xff".to_vec();
    v.extend_from_slice(s.as_bytes());
    v
}

#[test]
fn warsow_long_replies_with_teams_and_colours() {
    // As SV_LongInfoString builds them: challenge first, g_gametype renamed, bots/clients appended.
    let info = oob("infoResponse\n\\challenge\\c1\\sv_hostname\\^1War^7sow ^^1\\mapname\\wca1\\sv_maxclients\\16\\version\\Warsow 2.1\\g_needpass\\1\\gametype\\ca\\bots\\2\\clients\\5");
    let status = oob("statusResponse\n\\challenge\\c2\\sv_hostname\\^1War^7sow ^^1\\mapname\\wca1\\sv_maxclients\\16\\version\\Warsow 2.1\\g_needpass\\1\\gametype\\ca\\bots\\2\\clients\\5\n12 48 \"^2Alice\" 2\n-1 0 \"[BOT] ^3Bob\" 3\n0 51 \"Carol\" 1\n3 60 \"Dave\" 2\n5 0 \"Eve\" 0\n");
    let mut r = Run::new("warsow", QueryConfig::default(), ("c1", "c2"));
    assert_eq!(r.sends(), vec![oob("getinfo c1"), oob("getstatus c2")]);
    r.feed(&info);
    r.feed(&status);
    let rep = r.c.report();
    assert!(rep.ok());
    assert_eq!(rep.str(keys::NAME), Some("^1War^7sow ^^1"));
    assert_eq!(rep.raw("name_plain"), Some(&OwnedValue::from("Warsow ^1")));
    assert_eq!(rep.str(keys::GAME_TYPE), Some("ca"));
    assert_eq!(rep.int(keys::PLAYERS), Some(5));
    assert_eq!(rep.int(keys::BOTS), Some(2));
    assert_eq!(rep.bool(keys::PASSWORD), Some(true));
    assert_eq!(rep.players.len(), 5);
    assert_eq!(rep.players[0].team, OwnedValue::Int(2));
    assert_eq!(rep.players[0].get("name_plain"), Some(&OwnedValue::from("Alice")));
    assert_eq!(rep.players[1].score, Some(-1));
    assert_eq!(rep.players[1].get("name_plain"), Some(&OwnedValue::from("[BOT] Bob")));

    // Without bots, Warsow sends no `bots` key: zero, not unknown.
    let info = oob("infoResponse\n\\challenge\\c1\\sv_hostname\\x\\clients\\0");
    let mut r = Run::new("warsow", QueryConfig::default().with_param("query", "info"), ("c1", "c2"));
    r.feed(&info);
    assert_eq!(r.c.report().int(keys::BOTS), Some(0));
}

#[test]
fn warsow_short_info_query() {
    let config = QueryConfig::default().with_param("query", "short");
    let mut r = Run::new("warsow", config, ("c", "c"));
    assert_eq!(r.sends(), vec![oob("info 22 full empty")]);
    // SV_ShortInfoString: "\\n\\name\\m\\%8s\\u\\%2i/%2i\\g\\%6s\\s\\%1d\\b\\%2i\\EOT"
    r.feed(&oob("info\n\\\\n\\\\^4Blue server\\\\m\\\\    wca1\\\\u\\\\ 3/14\\\\g\\\\    ca\\\\s\\\\1\\\\p\\\\1\\\\b\\\\ 2\\\\EOT"));
    let rep = r.c.report();
    assert!(rep.ok());
    assert_eq!(rep.str(keys::NAME), Some("^4Blue server"));
    assert_eq!(rep.str(keys::MAP), Some("wca1"));
    assert_eq!(rep.str(keys::GAME_TYPE), Some("ca"));
    assert_eq!(rep.int(keys::PLAYERS), Some(5), "3 humans + 2 bots");
    assert_eq!(rep.int(keys::MAX_PLAYERS), Some(16));
    assert_eq!(rep.bool(keys::PASSWORD), Some(true));
    assert_eq!(rep.bool(keys::PLAYER_LIST_COMPLETE), Some(false));
    // ioq3 ignores the short query (bots4-info-warsow-style had no reply): plain timeout.
    let mut r = Run::new("warsow", QueryConfig::default().with_param("query", "short"), ("c", "c"));
    assert_eq!(r.run_out().done.unwrap().0, Status::TIMEOUT);
    let mut c = Collector::new();
    let bad = QueryConfig::default().with_param("query", "short");
    assert!(Quake3Engine::new("quake3", target(), &bad, 0, &mut c).is_err(), "short is Warsow-only");
}

fn addrs(files: &[&[u8]]) -> Vec<SocketAddr> {
    files
        .iter()
        .flat_map(|f| {
            crate::msg::parse_servers(crate::msg::classify(f).map_or(&[][..], |r| match r {
                crate::msg::Reply::Servers { body, .. } => body,
                _ => &[],
            }))
            .entries
        })
        .collect()
}

#[test]
fn dpmaster_two_pages_until_eot() {
    let j: Json = serde_json::from_str(include_str!("../testdata/dpmaster/dpmaster-decoded.json")).unwrap();
    let config = QueryConfig::default().with_param("game_protocol", "71");
    let mut r = Run::master(config);
    assert_eq!(r.sends(), vec![cap!("dpmaster/getservers-Quake3Arena-71-empty-full.req.bin").to_vec()]);
    r.feed(cap!("dpmaster/getservers-Quake3Arena-71-empty-full.resp0.bin"));
    assert!(r.c.done().is_none());
    r.feed(cap!("dpmaster/getservers-Quake3Arena-71-empty-full.resp1.bin"));
    assert!(r.c.done().is_none(), "short grace for reordered pages");
    assert_eq!(r.e.next_deadline(), Some(r.now + 50));
    let rep = r.run_out();
    assert!(rep.ok());
    assert_eq!(rep.masters.len(), 301);
    let pk = &j["getservers-Quake3Arena-71-empty-full"]["packets"];
    assert_eq!(rep.masters[0].to_string(), pk[0]["first"][0].as_str().unwrap());
    assert_eq!(rep.masters[196].to_string(), pk[1]["first"][0].as_str().unwrap());
    assert_eq!(rep.raw("eot"), Some(&OwnedValue::Bool(true)));
    assert_eq!(rep.raw("pages"), Some(&OwnedValue::Int(2)));
    assert_eq!(rep.raw("entries"), Some(&OwnedValue::Int(301)));
    // Every server qstat found is in our list (qstat used the anonymous form, a subset).
    let ours: HashSet<String> = rep.masters.iter().map(ToString::to_string).collect();
    for line in include_str!("../testdata/dpmaster/qstat-openarenam-outfile.txt").lines() {
        assert!(ours.contains(line.split_whitespace().nth(1).unwrap()), "{line}");
    }
}

#[test]
fn dpmaster_pages_out_of_order_duplicated_or_lost() {
    let p0 = cap!("dpmaster/getservers-Quake3Arena-71-empty-full.resp0.bin");
    let p1 = cap!("dpmaster/getservers-Quake3Arena-71-empty-full.resp1.bin");
    let config = || QueryConfig::default().with_param("game_protocol", "71");
    // EOT page first, the other within the grace period.
    let mut r = Run::master(config());
    r.feed(p1);
    r.feed(p0);
    r.feed(p0);
    let rep = r.run_out();
    assert_eq!(rep.masters.len(), 301);
    assert_eq!(rep.raw("duplicates"), Some(&OwnedValue::Int(196)));
    // The EOT page lost: ask again, keep what we had, stop at the EOT of the second answer.
    let mut r = Run::master(config());
    r.sends();
    r.feed(p0);
    let d = r.e.next_deadline().unwrap();
    r.now = d;
    r.e.on_timeout(d, &mut r.c);
    assert_eq!(r.sends().len(), 1, "asked again");
    r.feed(p0);
    r.feed(p1);
    let rep = r.run_out();
    assert_eq!(rep.masters.len(), 301);
    // Never an EOT: after the retries, what arrived (ok, eot false).
    let mut r = Run::master(config());
    r.feed(p0);
    let rep = r.run_out();
    assert!(rep.ok());
    assert_eq!(rep.masters.len(), 196);
    assert_eq!(rep.raw("eot"), Some(&OwnedValue::Bool(false)));
    // Silence.
    let mut r = Run::master(config());
    assert_eq!(r.run_out().done.unwrap().0, Status::TIMEOUT);
}

#[test]
fn dpmaster_ext_warsow_and_ipv6() {
    // getserversExt Quake3Arena 71 empty full: same 301 servers in Ext framing.
    let config = QueryConfig::default().with_param("game_protocol", "71").with_param("ext", "1");
    let mut r = Run::master(config);
    assert_eq!(r.sends(), vec![cap!("dpmaster/getserversExt-Quake3Arena-71-empty-full.req.bin").to_vec()]);
    r.feed(cap!("dpmaster/getserversExt-Quake3Arena-71-empty-full.resp0.bin"));
    r.feed(cap!("dpmaster/getserversExt-Quake3Arena-71-empty-full.resp1.bin"));
    assert_eq!(r.run_out().masters.len(), 301);

    // The ipv6 filter picks getserversExt by itself; an empty list is just the EOT.
    let config = QueryConfig::default().with_param("game_protocol", "71").with_param("filters", "empty,full,ipv6");
    let mut r = Run::master(config.with_param("eot_grace_ms", "0"));
    assert_eq!(r.sends(), vec![cap!("dpmaster/getserversExt-Quake3Arena-71-ipv6-only.req.bin").to_vec()]);
    r.feed(cap!("dpmaster/getserversExt-Quake3Arena-71-ipv6-only.resp0.bin"));
    let rep = r.c.report();
    assert!(rep.ok(), "grace 0: done at EOT");
    assert!(rep.masters.is_empty());

    // Warsow, both forms: the 40 servers qstat -warsowm found.
    let qstat: HashSet<&str> = include_str!("../testdata/dpmaster/qstat-warsowm-outfile.txt")
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    for (filters, ext, req, resp) in [
        (
            "full empty",
            "0",
            cap!("dpmaster/getservers-Warsow-22-full-empty.req.bin"),
            cap!("dpmaster/getservers-Warsow-22-full-empty.resp0.bin"),
        ),
        ("", "1", cap!("dpmaster/getserversExt-Warsow-22.req.bin"), cap!("dpmaster/getserversExt-Warsow-22.resp0.bin")),
    ] {
        let config = QueryConfig::default()
            .with_param("game", "Warsow")
            .with_param("game_protocol", "22")
            .with_param("filters", filters)
            .with_param("ext", ext);
        let mut r = Run::master(config);
        assert_eq!(r.sends(), vec![req.to_vec()]);
        r.feed(resp);
        let rep = r.run_out();
        let ours: HashSet<String> = rep.masters.iter().map(ToString::to_string).collect();
        assert_eq!(ours.len(), 40);
        assert!(qstat.iter().all(|a| ours.contains(*a)));
    }

    // Hand-built mixed page: IPv4 and IPv6 entries, a port that looks like a separator, a bogus entry.
    let mut page = b"\xff\xff\xff\xffgetserversExtResponse".to_vec();
    page.extend_from_slice(&[b'\\', 10, 0, 0, 1, 0x5c, 0x2f]);
    page.push(b'/');
    page.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0x6d, 0x38]);
    page.extend_from_slice(&[b'/', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x6d, 0x38]);
    page.extend_from_slice(b"\\EOT\0\0\0");
    let mut r = Run::master(QueryConfig::default().with_param("ext", "1"));
    r.feed(&page);
    let rep = r.run_out();
    assert_eq!(rep.masters, addrs(&[&page]));
    assert_eq!(rep.masters.len(), 2);
    assert_eq!(rep.masters[0].to_string(), "10.0.0.1:23599");
    assert_eq!(rep.masters[1].to_string(), "[2001:db8::2]:27960");
    assert_eq!(rep.raw("invalid_entries"), Some(&OwnedValue::Int(1)));
}

#[test]
fn dpmaster_anonymous_and_qstat_forms_parse() {
    // The anonymous form returned a varying subset (228 of 301 here); qstat's LF form 81.
    for (files, n) in [
        (
            vec![
                cap!("dpmaster/getservers-71-empty-full.resp0.bin"),
                cap!("dpmaster/getservers-71-empty-full.resp1.bin"),
            ],
            228,
        ),
        (vec![cap!("dpmaster/getservers-71.resp0.bin"), cap!("dpmaster/getservers-71.resp1.bin")], 223),
        (vec![cap!("dpmaster/qstat-style-getservers-71-empty-full-LF.resp0.bin")], 81),
    ] {
        assert_eq!(addrs(&files).len(), n);
    }
}

#[test]
fn bad_master_params_are_refused() {
    let mut c = Collector::new();
    for (k, v) in
        [("game", "two words"), ("game_protocol", "x"), ("filters", "a\\b"), ("ext", "maybe"), ("eot_grace_ms", "-1")]
    {
        let config = QueryConfig::default().with_param(k, v);
        assert!(Quake3Engine::new("dpmaster", target(), &config, 0, &mut c).is_err(), "{k}={v}");
    }
    assert!(Quake3Engine::new("doom", target(), &QueryConfig::default(), 0, &mut c).is_err());
}

fn survive(protocol: &str, config: &QueryConfig, chals: (&str, &str), prefix: &[&[u8]], data: &[u8]) {
    let mut r = Run::new(protocol, config.clone(), chals);
    for p in prefix {
        r.feed(p);
    }
    r.feed(data);
    assert!(r.run_out().done.is_some());
}

#[test]
#[allow(clippy::type_complexity)]
fn truncations_and_mutations_never_panic() {
    let oa = QueryConfig { retries: 1, ..QueryConfig::default() };
    let m71 = QueryConfig { retries: 1, ..QueryConfig::default() }.with_param("game_protocol", "71");
    let short = QueryConfig { retries: 0, ..QueryConfig::default() }.with_param("query", "short");
    let ws =
        oob("statusResponse\n\\challenge\\c2\\sv_hostname\\^1W\\clients\\2\n12 48 \"^2Alice\" 2\n-1 0 \"Bob\" 3\n");
    let wshort = oob("info\n\\\\n\\\\^4Blue\\\\m\\\\    wca1\\\\u\\\\ 3/14\\\\g\\\\    ca\\\\b\\\\ 2\\\\EOT");
    let cases: Vec<(&str, &QueryConfig, (&str, &str), Vec<&[u8]>, &[u8])> = vec![
        ("quake3", &oa, ("xxx_chal", "yyy_chal"), vec![], cap!("bots4-getstatus.resp.bin")),
        (
            "quake3",
            &oa,
            ("xxx_chal", "yyy_chal"),
            vec![cap!("bots4-getstatus.resp.bin")],
            cap!("bots4-getinfo.resp.bin"),
        ),
        ("warsow", &oa, ("c1", "c2"), vec![], &ws),
        ("warsow", &short, ("c", "c"), vec![], &wshort),
        ("dpmaster", &m71, ("u", "u"), vec![], cap!("dpmaster/getservers-Quake3Arena-71-empty-full.resp1.bin")),
        ("dpmaster", &m71, ("u", "u"), vec![], cap!("dpmaster/getserversExt-Quake3Arena-71-empty-full.resp1.bin")),
    ];
    let mut n = 0;
    for (i, (proto, config, chals, prefix, data)) in cases.iter().enumerate() {
        for_each_truncation(data, |t| {
            survive(proto, config, *chals, prefix, t);
            n += 1;
        });
        for_each_mutation(0xBADC0DE + i as u64, data, 500, |seed, m| {
            let r = std::panic::catch_unwind(|| survive(proto, config, *chals, prefix, m));
            assert!(r.is_ok(), "case {i} mutation seed {seed:#x}");
            n += 1;
        });
    }
    assert!(n > 3000, "{n}");
}

#[test]
fn challenges_carry_the_hosts_random_bytes() {
    let mut random = [0u8; query_abi::RANDOM_LEN];
    for (i, b) in random.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(37).wrapping_add(11);
    }
    let config = QueryConfig { random: Some(random), ..QueryConfig::default() };
    for (protocol, chars) in [("quake3", QUAKE3_CHALLENGE_CHARS), ("warsow", WARSOW_CHALLENGE_CHARS)] {
        let mut c = Collector::new();
        let _e = Quake3Engine::new(protocol, target(), &config, 0, &mut c).unwrap();
        let sends = c.take_sends();
        let first = String::from_utf8_lossy(&sends[0].1).into_owned();
        let chal = first.rsplit(' ').next().unwrap().to_owned();
        assert_eq!(chal, challenge_from(&random, chars), "{first:?}");
        assert_eq!(chal.len(), 3 + chars);
        assert!(crate::msg::valid_challenge(&format!("{chal}r16")), "{chal}");
        // Other bytes, another challenge; the same bytes, the same one.
        let mut other = random;
        other[0] ^= 1;
        assert_ne!(challenge_from(&other, chars), chal);
    }
    const { assert!(QUAKE3_CHALLENGE_CHARS * 6 >= query_abi::RANDOM_LEN * 8, "every random bit is used") };
}
