//! The engines against the captures in `testdata/` (DDNet 16.4 and Teeworlds 0.7.5 on loopback), in virtual time.

use crate::engine::{TeeworldsEngine, Tokens};
use bzhead_wire::fuzz::{for_each_mutation, for_each_truncation};
use query_abi::collect::{Collector, OwnedPlayer, OwnedValue, Report};
use query_abi::{keys, Datagram, QueryConfig, QueryEngine, Status};
use serde_json::Value as Json;
use std::net::SocketAddr;

const TARGET: &str = "127.0.0.1:15201";

fn target() -> SocketAddr {
    TARGET.parse().unwrap()
}

macro_rules! cap {
    ($f:literal) => {
        include_bytes!(concat!("../testdata/", $f)).as_slice()
    };
}

fn json(text: &str) -> Json {
    serde_json::from_str(text).unwrap()
}

/// One query in virtual time.
struct Run {
    c: Collector,
    e: TeeworldsEngine,
    now: u64,
}

fn six_tokens(six: u32) -> Tokens {
    Tokens { six, client7: [1, 2, 3, 4], browser7: 5 }
}

fn seven_tokens(client7: [u8; 4]) -> Tokens {
    Tokens { six: 1, client7, browser7: 1234567 }
}

impl Run {
    fn new(protocol: &str, tokens: Tokens, config: QueryConfig) -> Run {
        let mut c = Collector::new();
        let e = TeeworldsEngine::with_tokens(protocol, target(), &config, tokens, 1000, &mut c).unwrap();
        Run { c, e, now: 1000 }
    }

    fn six(token: u32) -> Run {
        Run::new("teeworlds", six_tokens(token), QueryConfig::default())
    }

    fn feed(&mut self, data: &[u8]) -> Datagram {
        self.now += 1;
        self.e.on_datagram(self.now, target(), data, &mut self.c)
    }

    fn sends(&mut self) -> Vec<Vec<u8>> {
        self.c
            .take_sends()
            .into_iter()
            .map(|(a, d)| {
                assert_eq!(a, target());
                d
            })
            .collect()
    }

    /// Fires deadlines until the query ends; a query that never ends fails the test.
    fn run_out(&mut self) -> Report {
        for _ in 0..100 {
            if self.c.done().is_some() {
                return self.c.report();
            }
            let d = self.e.next_deadline().expect("not done but no deadline: the query would hang");
            assert!(d >= self.now, "deadline in the past");
            self.now = d;
            self.e.on_timeout(d, &mut self.c);
        }
        panic!("query did not end after 100 timeouts");
    }
}

fn players_match(got: &[OwnedPlayer], want: &Json, seven: bool) {
    let want = want.as_array().unwrap();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g.name, w["name"].as_str().unwrap());
        assert_eq!(g.get("clan").and_then(OwnedValue::as_str), w["clan"].as_str());
        assert_eq!(g.get("country").and_then(OwnedValue::as_int), w["country"].as_i64());
        assert_eq!(g.score, w["score"].as_i64());
        let is_player = if seven { w["player_flags"].as_i64().unwrap() & 1 == 0 } else { w["is_player"] == 1 };
        assert_eq!(g.get("is_player").and_then(OwnedValue::as_bool), Some(is_player));
        assert_eq!(g.team, OwnedValue::Null);
        assert_eq!(g.ping, None);
    }
}

#[test]
fn ddnet_extended_60_players_in_two_pages() {
    let j = json(include_str!("../testdata/players60-decoded.json"));
    let mut r = Run::six(0x123456);
    assert_eq!(r.sends(), vec![cap!("players60-ddnet-xe-gie3.req.bin").to_vec()]);
    assert_eq!(r.feed(cap!("players60-ddnet-xe-gie3.resp0.bin")), Datagram::Accepted);
    assert!(r.c.done().is_none(), "43 of 60 players: wait for iex+");
    assert_eq!(r.feed(cap!("players60-ddnet-xe-gie3.resp1.bin")), Datagram::Accepted);
    let rep = r.c.report();
    assert!(rep.ok());
    let main = &j["ddnet-xe-gie3"]["packets"][0]["decoded"];
    assert_eq!(rep.str(keys::NAME), main["name"].as_str());
    assert_eq!(rep.str(keys::MAP), Some("Tutorial"));
    assert_eq!(rep.str(keys::GAME_TYPE), Some("TestDDraceNetwor"));
    assert_eq!(rep.str(keys::VERSION), Some("0.6.4, 16.4"));
    assert_eq!(rep.int(keys::PLAYERS), Some(60));
    assert_eq!(rep.int(keys::MAX_PLAYERS), Some(64));
    assert_eq!(rep.bool(keys::PASSWORD), Some(false));
    assert_eq!(rep.bool(keys::PLAYER_LIST_COMPLETE), Some(true));
    assert_eq!(rep.server.get(keys::BOTS), None, "0.6 does not tell bots");
    assert_eq!(rep.raw("map_crc"), Some(&OwnedValue::Int(-1924373370)));
    assert_eq!(rep.raw("map_size"), Some(&OwnedValue::Int(1082711)));
    assert_eq!(rep.raw("token"), Some(&OwnedValue::Int(1193046)));
    assert_eq!(rep.raw("format"), Some(&OwnedValue::from("extended")));
    let mut want: Vec<Json> = main["players"].as_array().unwrap().clone();
    want.extend(j["ddnet-xe-gie3"]["packets"][1]["decoded"]["players"].as_array().unwrap().iter().cloned());
    players_match(&rep.players, &Json::Array(want), false);
    assert_eq!(rep.players[1].name, "日本語テス");
    assert_eq!(rep.players[59].name, "bzbot-59");
    assert_eq!(r.e.next_deadline(), None);
    // A late duplicate is not for a finished query.
    assert_eq!(r.feed(cap!("players60-ddnet-xe-gie3.resp1.bin")), Datagram::Ignored);
}

#[test]
fn ddnet_pages_out_of_order_and_duplicated() {
    let mut r = Run::six(0x123456);
    r.feed(cap!("players60-ddnet-xe-gie3.resp1.bin"));
    r.feed(cap!("players60-ddnet-xe-gie3.resp1.bin"));
    assert!(r.c.done().is_none());
    r.feed(cap!("players60-ddnet-xe-gie3.resp0.bin"));
    let rep = r.c.report();
    assert!(rep.ok());
    assert_eq!(rep.players.len(), 60, "the duplicate page counted once");
    assert_eq!(rep.players[0].name, "Ünïcödé tee", "pages ordered by packet number");
}

#[test]
fn ddnet_lost_page_is_asked_again_then_reported_partial() {
    // Retry: the second answer brings the missing page.
    let mut r = Run::six(0x123456);
    r.sends();
    r.feed(cap!("players60-ddnet-xe-gie3.resp0.bin"));
    let d = r.e.next_deadline().unwrap();
    assert!(d <= r.now + 400, "waits briefly for the next page");
    r.now = d;
    r.e.on_timeout(d, &mut r.c);
    assert_eq!(r.sends(), vec![cap!("players60-ddnet-xe-gie3.req.bin").to_vec()]);
    r.feed(cap!("players60-ddnet-xe-gie3.resp0.bin"));
    r.feed(cap!("players60-ddnet-xe-gie3.resp1.bin"));
    assert_eq!(r.c.report().players.len(), 60);

    // No retries left: the 43 players we have, marked incomplete.
    let mut r = Run::new("teeworlds", six_tokens(0x123456), QueryConfig { retries: 0, ..QueryConfig::default() });
    r.feed(cap!("players60-ddnet-xe-gie3.resp0.bin"));
    let rep = r.run_out();
    assert!(rep.ok());
    assert_eq!(rep.players.len(), 43);
    assert_eq!(rep.int(keys::PLAYERS), Some(60));
    assert_eq!(rep.bool(keys::PLAYER_LIST_COMPLETE), Some(false));
}

#[test]
fn ddnet_rate_limited_reply_means_players_unknown() {
    let mut r = Run::six(258);
    assert_eq!(r.sends(), vec![cap!("ratelimited-ddnet-xe-gie3.req.bin").to_vec()]);
    r.feed(cap!("ratelimited-ddnet-xe-gie3.short-resp.bin"));
    let rep = r.c.report();
    assert!(rep.ok());
    assert_eq!(rep.int(keys::PLAYERS), Some(60));
    assert_eq!(rep.bool(keys::PLAYER_LIST_COMPLETE), Some(false));
    assert!(rep.players.is_empty());
    assert_eq!(rep.raw("rate_limited"), Some(&OwnedValue::Bool(true)));
}

#[test]
fn ddnet_empty_and_preauth_servers() {
    let j = json(include_str!("../testdata/empty-decoded.json"));
    for reply in [cap!("empty-ddnet-xe-gie3.resp.bin"), cap!("preauth60-ddnet-xe-gie3.resp.bin")] {
        let mut r = Run::six(0x123456);
        r.feed(reply);
        let rep = r.c.report();
        assert!(rep.ok());
        assert_eq!(rep.str(keys::NAME), j["ddnet-xe-gie3"]["packets"][0]["decoded"]["name"].as_str());
        assert_eq!(rep.int(keys::PLAYERS), Some(0));
        assert_eq!(rep.int(keys::MAX_PLAYERS), Some(64));
        assert_eq!(rep.bool(keys::PLAYER_LIST_COMPLETE), Some(true));
        assert!(rep.players.is_empty());
    }
}

#[test]
fn wrong_token_or_source_is_ignored() {
    let mut r = Run::six(0x123457);
    assert_eq!(r.feed(cap!("players60-ddnet-xe-gie3.resp0.bin")), Datagram::Ignored);
    assert_eq!(r.feed(cap!("players60-ddnet-xe-gie3.resp1.bin")), Datagram::Ignored);
    assert_eq!(r.feed(cap!("players60-06-gie3.resp.bin")), Datagram::Ignored, "low byte 0x57 is not 42");
    assert_eq!(r.feed(b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffinf3"), Datagram::Ignored);
    assert_eq!(r.feed(b"garbage"), Datagram::Ignored);
    let mut r = Run::six(0x123456);
    let other: SocketAddr = "127.0.0.1:15202".parse().unwrap();
    assert_eq!(r.e.on_datagram(5, other, cap!("empty-ddnet-xe-gie3.resp.bin"), &mut r.c), Datagram::Ignored);
    assert!(r.c.done().is_none());
}

#[test]
fn vanilla_reply_from_ddnet_uses_the_name_suffix() {
    let j = json(include_str!("../testdata/players60-decoded.json"));
    let config = QueryConfig::default().with_param("mode", "vanilla");
    let mut r = Run::new("teeworlds", six_tokens(42), config);
    assert_eq!(r.sends(), vec![cap!("players60-06-gie3.req.bin").to_vec()]);
    r.feed(cap!("players60-06-gie3.resp.bin"));
    let rep = r.c.report();
    assert!(rep.ok());
    let d = &j["06-gie3"]["decoded"];
    assert_eq!(rep.str(keys::NAME), Some("bzhead DDNet test [60/64]"));
    assert_eq!(rep.int(keys::PLAYERS), Some(60), "from the [60/64] suffix, not the clamped 15");
    assert_eq!(rep.int(keys::MAX_PLAYERS), Some(64));
    assert_eq!(rep.raw("num_clients"), Some(&OwnedValue::Int(15)));
    assert_eq!(rep.bool(keys::PLAYER_LIST_COMPLETE), Some(false), "16 records of 60");
    players_match(&rep.players, &d["players"], false);
}

#[test]
fn legacy64_pages_assemble_by_offset() {
    let j = json(include_str!("../testdata/players60-decoded.json"));
    let config = QueryConfig::default().with_param("mode", "legacy64");
    let mut r = Run::new("teeworlds", six_tokens(7), config);
    assert_eq!(r.sends(), vec![cap!("players60-64legacy-fstd.req.bin").to_vec()]);
    r.feed(cap!("players60-64legacy-fstd.resp2.bin"));
    r.feed(cap!("players60-64legacy-fstd.resp0.bin"));
    assert!(r.c.done().is_none());
    r.feed(cap!("players60-64legacy-fstd.resp1.bin"));
    let rep = r.c.report();
    assert!(rep.ok());
    assert_eq!(rep.raw("format"), Some(&OwnedValue::from("legacy64")));
    let want: Vec<Json> = (0..3)
        .flat_map(|i| j["64legacy-fstd"]["packets"][i]["decoded"]["players"].as_array().unwrap().clone())
        .collect();
    players_match(&rep.players, &Json::Array(want), false);
    assert_eq!(rep.bool(keys::PLAYER_LIST_COMPLETE), Some(true));

    let mut r = Run::new("teeworlds", six_tokens(7), QueryConfig::default().with_param("mode", "legacy64"));
    r.feed(cap!("empty-64legacy-fstd.resp.bin"));
    assert_eq!(r.c.report().int(keys::PLAYERS), Some(0));
}

/// Rewrites the token string of a 0.6-family reply (the captures were made with different tokens per request).
fn retoken(reply: &[u8], token: &str) -> Vec<u8> {
    let body = &reply[14..];
    let nul = body.iter().position(|&b| b == 0).unwrap();
    let mut v = reply[..14].to_vec();
    v.extend_from_slice(token.as_bytes());
    v.extend_from_slice(&body[nul..]);
    v
}

#[test]
fn auto_mode_falls_back_to_vanilla_then_legacy64() {
    // A server that answers xe with inf3 (vanilla 0.6 does) and announces more than 16 clients in its name.
    let mut r = Run::six(0x000007);
    assert_eq!(r.sends()[0][..2], *b"xe");
    r.feed(&retoken(cap!("players60-06-gie3.resp.bin"), "7"));
    assert_eq!(r.sends(), vec![cap!("players60-64legacy-fstd.req.bin").to_vec()], "asks for the 64-player form");
    assert!(r.c.done().is_none());
    for f in [cap!("players60-64legacy-fstd.resp0.bin"), cap!("players60-64legacy-fstd.resp1.bin")] {
        r.feed(f);
    }
    assert!(r.c.done().is_none());
    r.feed(cap!("players60-64legacy-fstd.resp2.bin"));
    let rep = r.c.report();
    assert_eq!(rep.players.len(), 60);
    assert_eq!(rep.raw("format"), Some(&OwnedValue::from("legacy64")));

    // No legacy answer: the vanilla reply is the result.
    let mut r = Run::six(0x000007);
    r.feed(&retoken(cap!("players60-06-gie3.resp.bin"), "7"));
    let rep = r.run_out();
    assert!(rep.ok());
    assert_eq!(rep.players.len(), 16);
    assert_eq!(rep.raw("format"), Some(&OwnedValue::from("vanilla")));

    // A small vanilla server: done at once.
    let mut r = Run::six(42);
    r.feed(cap!("empty-06-gie3.resp.bin"));
    assert!(r.c.report().ok());
    assert!(r.sends().len() == 1, "no legacy request");
}

#[test]
fn silence_retries_alternating_forms_then_times_out() {
    let mut r = Run::six(0x123456);
    let rep = r.run_out();
    assert_eq!(rep.done.as_ref().map(|d| d.0), Some(Status::TIMEOUT));
    let sends = r.sends();
    assert_eq!(sends.len(), 3);
    assert_eq!(sends[0], cap!("players60-ddnet-xe-gie3.req.bin"));
    assert_eq!(sends[1][..6], [0xff; 6], "second try: plain vanilla request");
    assert_eq!(sends[2][..2], *b"xe");
    assert_eq!(r.now, 1000 + 1000 + 2000 + 4000, "waits double per retry");
}

#[test]
fn teeworlds7_handshake_against_teeworlds_075() {
    let j = json(include_str!("../testdata/tw07/clients3-decoded.json"));
    let mut r = Run::new("teeworlds7", seven_tokens([0x77, 0x1c, 0xb8, 0x74]), QueryConfig::default());
    assert_eq!(r.sends(), vec![cap!("tw07/clients3-07-token-request.req.bin").to_vec()]);
    assert_eq!(r.feed(cap!("tw07/clients3-07-token-request.resp.bin")), Datagram::Accepted);
    assert_eq!(r.sends(), vec![cap!("tw07/clients3-07-gie3.req.bin").to_vec()]);
    assert_eq!(r.feed(cap!("tw07/clients3-07-gie3.resp.bin")), Datagram::Accepted);
    let rep = r.c.report();
    assert!(rep.ok());
    let d = &j["07-handshake"]["decoded"];
    assert_eq!(rep.str(keys::NAME), Some("bzhead TW07 test"));
    assert_eq!(rep.str(keys::MAP), Some("dm1"));
    assert_eq!(rep.str(keys::GAME_TYPE), Some("DM"));
    assert_eq!(rep.str(keys::VERSION), Some("0.7.5"));
    assert_eq!(rep.int(keys::PLAYERS), Some(3));
    assert_eq!(rep.int(keys::MAX_PLAYERS), Some(8));
    assert_eq!(rep.int(keys::BOTS), Some(0));
    assert_eq!(rep.raw("skill_level"), Some(&OwnedValue::Int(1)));
    assert_eq!(rep.raw("hostname"), Some(&OwnedValue::from("")));
    players_match(&rep.players, &d["players"], true);
    assert_eq!(rep.players[0].get("bot"), Some(&OwnedValue::Bool(false)));
}

#[test]
fn teeworlds7_against_ddnet_and_empty_servers() {
    let j = json(include_str!("../testdata/players60-decoded.json"));
    let mut r = Run::new("teeworlds7", seven_tokens([0xb0, 0xe0, 0x94, 0xfc]), QueryConfig::default());
    r.sends();
    r.feed(cap!("players60-07-token-request.resp.bin"));
    assert_eq!(r.sends(), vec![cap!("players60-07-gie3.req.bin").to_vec()]);
    r.feed(cap!("players60-07-gie3.resp.bin"));
    let rep = r.c.report();
    assert!(rep.ok());
    assert_eq!(rep.str(keys::VERSION), Some("0.7↔0.6.4, 16.4"));
    assert_eq!(rep.raw("time_score"), Some(&OwnedValue::Bool(true)));
    assert_eq!(rep.int(keys::PLAYERS), Some(60));
    players_match(&rep.players, &j["07-handshake"]["decoded"]["players"], true);

    for (tok, resp_token, resp_info) in [
        ([0x86, 0x88, 0xd2, 0x63], cap!("empty-07-token-request.resp.bin"), cap!("empty-07-gie3.resp.bin")),
        ([0xe8, 0x88, 0x3f, 0x14], cap!("tw07/empty-07-token-request.resp.bin"), cap!("tw07/empty-07-gie3.resp.bin")),
        ([0x25, 0xc2, 0xb0, 0x58], cap!("preauth60-07-token-request.resp.bin"), cap!("preauth60-07-gie3.resp.bin")),
    ] {
        let mut r = Run::new("teeworlds7", seven_tokens(tok), QueryConfig::default());
        r.feed(resp_token);
        r.feed(resp_info);
        let rep = r.c.report();
        assert!(rep.ok(), "{rep:?}");
        assert_eq!(rep.int(keys::PLAYERS), Some(0));
    }
}

#[test]
fn teeworlds7_ignores_others_and_retries() {
    let mut r = Run::new("teeworlds7", seven_tokens([0x77, 0x1c, 0xb8, 0x75]), QueryConfig::default());
    r.sends();
    assert_eq!(r.feed(cap!("tw07/clients3-07-token-request.resp.bin")), Datagram::Ignored, "not our token");
    assert_eq!(r.feed(cap!("tw07/clients3-07-gie3.resp.bin")), Datagram::Ignored);
    assert_eq!(r.feed(cap!("players60-06-gie3.resp.bin")), Datagram::Ignored, "0.6 reply");
    let rep = r.run_out();
    assert_eq!(rep.done.unwrap().0, Status::TIMEOUT);
    let sends = r.sends();
    assert_eq!(sends.len(), 2, "two retries after the first request");
    assert!(sends.iter().all(|s| s.len() == 520));

    // Token answered, info lost once: the info request is repeated with the same server token.
    let mut r = Run::new("teeworlds7", seven_tokens([0x77, 0x1c, 0xb8, 0x74]), QueryConfig::default());
    r.sends();
    r.feed(cap!("tw07/clients3-07-token-request.resp.bin"));
    let first = r.sends();
    let d = r.e.next_deadline().unwrap();
    r.e.on_timeout(d, &mut r.c);
    assert_eq!(r.sends(), first);
    r.feed(cap!("tw07/clients3-07-gie3.resp.bin"));
    assert!(r.c.report().ok());
}

#[test]
fn tokens_from_the_seed_are_valid() {
    for seed in 0..2000u64 {
        let t = Tokens::from_config(&QueryConfig { seed, ..QueryConfig::default() });
        assert!(t.six <= 0xff_ffff);
        assert_ne!(t.client7, [0xff; 4]);
        assert!((0..1 << 24).contains(&t.browser7));
    }
    let a = Tokens::from_config(&QueryConfig { seed: 1, ..QueryConfig::default() });
    let b = Tokens::from_config(&QueryConfig { seed: 2, ..QueryConfig::default() });
    assert_ne!(a, b);
}

#[test]
fn unknown_protocol_and_bad_mode_are_refused() {
    let mut c = Collector::new();
    assert!(TeeworldsEngine::new("quake3", target(), &QueryConfig::default(), 0, &mut c).is_err());
    let bad = QueryConfig::default().with_param("mode", "fast");
    assert!(TeeworldsEngine::new("teeworlds", target(), &bad, 0, &mut c).is_err());
}

/// Feeds `prefix` originals then `data` to a fresh query and runs it out: whatever `data` is, the query must end
/// (a result, an error, or a timeout) without panicking.
fn survive(protocol: &str, tokens: Tokens, config: &QueryConfig, prefix: &[&[u8]], data: &[u8]) {
    let mut r = Run::new(protocol, tokens, config.clone());
    for p in prefix {
        r.feed(p);
    }
    r.feed(data);
    let rep = r.run_out();
    assert!(rep.done.is_some());
}

#[test]
#[allow(clippy::type_complexity)]
fn truncations_and_mutations_never_panic() {
    let six = |t| (six_tokens(t), QueryConfig { retries: 1, ..QueryConfig::default() });
    let legacy =
        |t| (six_tokens(t), QueryConfig { retries: 1, ..QueryConfig::default() }.with_param("mode", "legacy64"));
    let cases: Vec<(&str, (Tokens, QueryConfig), Vec<&[u8]>, &[u8])> = vec![
        ("teeworlds", six(0x123456), vec![], cap!("players60-ddnet-xe-gie3.resp0.bin")),
        (
            "teeworlds",
            six(0x123456),
            vec![cap!("players60-ddnet-xe-gie3.resp0.bin")],
            cap!("players60-ddnet-xe-gie3.resp1.bin"),
        ),
        ("teeworlds", six(258), vec![], cap!("ratelimited-ddnet-xe-gie3.short-resp.bin")),
        ("teeworlds", six(42), vec![], cap!("players60-06-gie3.resp.bin")),
        ("teeworlds", legacy(7), vec![], cap!("players60-64legacy-fstd.resp1.bin")),
        ("teeworlds", legacy(7), vec![], cap!("empty-64legacy-fstd.resp.bin")),
        (
            "teeworlds7",
            (seven_tokens([0xb0, 0xe0, 0x94, 0xfc]), QueryConfig::default()),
            vec![cap!("players60-07-token-request.resp.bin")],
            cap!("players60-07-gie3.resp.bin"),
        ),
        (
            "teeworlds7",
            (seven_tokens([0x77, 0x1c, 0xb8, 0x74]), QueryConfig::default()),
            vec![],
            cap!("tw07/clients3-07-token-request.resp.bin"),
        ),
        (
            "teeworlds7",
            (seven_tokens([0x77, 0x1c, 0xb8, 0x74]), QueryConfig::default()),
            vec![cap!("tw07/clients3-07-token-request.resp.bin")],
            cap!("tw07/clients3-07-gie3.resp.bin"),
        ),
    ];
    let mut n = 0;
    for (i, (proto, (tokens, config), prefix, data)) in cases.iter().enumerate() {
        for_each_truncation(data, |t| {
            survive(proto, *tokens, config, prefix, t);
            n += 1;
        });
        for_each_mutation(0xC0FFEE + i as u64, data, 400, |seed, m| {
            let r = std::panic::catch_unwind(|| survive(proto, *tokens, config, prefix, m));
            assert!(r.is_ok(), "case {i} mutation seed {seed:#x}");
            n += 1;
        });
    }
    assert!(n > 3000, "{n}");
}
