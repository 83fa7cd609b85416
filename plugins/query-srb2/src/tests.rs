//! The SRB2 engine on packets built at the source's struct offsets for each layout (no live server could be run).

use crate::engine::Srb2Engine;
use crate::msg::{self, PT_PLAYERINFO, PT_SERVERINFO};
use bzhead_wire::fuzz::{for_each_mutation, for_each_truncation};
use query_abi::collect::{Collector, OwnedValue, Report};
use query_abi::{keys, Datagram, QueryConfig, QueryEngine, Status};
use std::net::SocketAddr;

const TIME: u32 = 0x1122_3344;

fn target() -> SocketAddr {
    "127.0.0.1:5029".parse().unwrap()
}

fn put(b: &mut [u8], at: usize, v: &[u8]) {
    b[at..at + v.len()].copy_from_slice(v);
}

/// Offsets of the 255-marked layouts, per `packetversion` (2.2.15's are those of `srb2_layout.py offsets`; older
/// versions lack `refusereason` (v2) and `httpsource` (v2-v4)).
struct Off {
    refuse: Option<usize>,
    gametype: usize,
    flags: usize,
    filecount: usize,
    time: usize,
    servername: usize,
    mapname: usize,
    maptitle: usize,
    md5: usize,
    act: usize,
    http: Option<usize>,
    end: usize,
}

fn offsets(pv: u8) -> Off {
    let s = usize::from(pv < 3); // v2 has no refusereason: everything after it moves down a byte
    Off {
        refuse: (pv >= 3).then_some(22),
        gametype: 23 - s,
        flags: 49 - s,
        filecount: 50 - s,
        time: 51 - s,
        servername: 59 - s,
        mapname: 91 - s,
        maptitle: 99 - s,
        md5: 132 - s,
        act: 148 - s,
        http: (pv >= 5).then_some(150),
        end: if pv >= 5 { 406 } else { 150 - s },
    }
}

fn file(pv: u8, name: &str, size: u32) -> Vec<u8> {
    let mut f = vec![0x11];
    if pv >= 4 {
        f.push(0);
    }
    f.extend_from_slice(&size.to_le_bytes());
    f.extend_from_slice(name.as_bytes());
    f.push(0);
    f.extend_from_slice(&[0xab; 16]);
    f
}

fn serverinfo(pv: u8, time: u32, files: &[(&str, u32)]) -> Vec<u8> {
    let o = offsets(pv);
    let mut b = vec![0u8; o.end];
    b[0] = 255;
    b[1] = pv;
    put(&mut b, 2, b"SRB2");
    b[18] = 202;
    b[19] = [0, 0, 2, 9, 13, 15][usize::from(pv)];
    b[20] = 3;
    b[21] = 8;
    if let Some(r) = o.refuse {
        b[r] = 2;
    }
    put(&mut b, o.gametype, b"Match");
    b[o.gametype + 24] = 1; // modifiedgame
    b[o.gametype + 25] = 0; // cheats
    b[o.flags] = if pv >= 4 { msg::SV_DEDICATED | msg::SV_LOTSOFADDONS } else { 1 };
    b[o.filecount] = files.len() as u8;
    put(&mut b, o.time, &time.to_le_bytes());
    put(&mut b, o.time + 4, &(35 * 60u32).to_le_bytes());
    put(&mut b, o.servername, b"\x82My \x80server");
    put(&mut b, o.mapname, b"MAP01");
    put(&mut b, o.maptitle, b"GREENFLOWER");
    put(&mut b, o.md5, &[0x5a; 16]);
    b[o.act] = 1;
    b[o.act + 1] = 1;
    if let Some(h) = o.http {
        put(&mut b, h, b"https://mirror.example/srb2");
    }
    for (n, s) in files {
        b.extend_from_slice(&file(pv, n, *s));
    }
    msg::packet(PT_SERVERINFO, &b)
}

/// 2.2.0: `version` first, numeric game type, `isdedicated`, `adminplayer`.
fn serverinfo_220(time: u32) -> Vec<u8> {
    let mut b = vec![0u8; 109];
    b[0] = 202;
    b[1] = 0;
    b[2] = 2;
    b[3] = 4;
    b[4] = 7; // CTF
    b[7] = 1;
    b[8] = 1;
    b[9] = 0xff; // adminplayer -1
    put(&mut b, 10, &time.to_le_bytes());
    put(&mut b, 18, b"Old server");
    put(&mut b, 50, b"MAP02");
    put(&mut b, 58, b"TECHNO HILL");
    b.extend_from_slice(&file(0, "old.wad", 1234));
    msg::packet(PT_SERVERINFO, &b)
}

fn playerinfo() -> Vec<u8> {
    let mut b = vec![0u8; 32 * 36];
    for (i, rec) in b.chunks_mut(36).enumerate() {
        rec[0] = 255;
        rec[1..].fill(0x41 + i as u8); // stale bytes in empty slots
    }
    let mut set = |slot: usize, name: &[u8], team: u8, data: u8, score: u32, time: u16| {
        let r = &mut b[slot * 36..slot * 36 + 36];
        r.fill(0);
        r[0] = slot as u8;
        r[1..1 + name.len()].copy_from_slice(name);
        r[27] = team;
        r[28] = 3;
        r[29] = data;
        r[30..34].copy_from_slice(&score.to_le_bytes());
        r[34..36].copy_from_slice(&time.to_le_bytes());
    };
    set(0, b"Sonic", 255, 0, 0, 12);
    set(5, b"Knuckles the Echidna!", 1, 0x40, 1500, 300);
    set(31, b"Tails", 2, 0x80, 70000, 65535);
    msg::packet(PT_PLAYERINFO, &b)
}

struct Run {
    c: Collector,
    e: Srb2Engine,
    now: u64,
}

impl Run {
    fn new(config: QueryConfig) -> Run {
        let mut c = Collector::new();
        let e = Srb2Engine::with_time(target(), &config, TIME, 0, &mut c);
        Run { c, e, now: 0 }
    }
    fn feed(&mut self, d: &[u8]) -> Datagram {
        self.now += 1;
        self.e.on_datagram(self.now, target(), d, &mut self.c)
    }
    fn run_out(&mut self) -> Report {
        for _ in 0..100 {
            if self.c.done().is_some() {
                return self.c.report();
            }
            let d = self.e.next_deadline().expect("not done and no deadline");
            self.now = d;
            self.e.on_timeout(d, &mut self.c);
        }
        panic!("query did not end");
    }
}

#[test]
fn serverinfo_and_playerinfo_combined_v5() {
    let mut r = Run::new(QueryConfig::default());
    assert_eq!(
        r.c.take_sends(),
        vec![(target(), include_bytes!("../testdata/srb2-2.2-askinfo-SYNTHETIC.req.bin").to_vec())]
    );
    assert_eq!(r.feed(&serverinfo(5, TIME, &[("addon.pk3", 100), ("music.wad", 2)])), Datagram::Accepted);
    assert!(r.c.done().is_none(), "waits for PT_PLAYERINFO");
    assert_eq!(r.feed(&playerinfo()), Datagram::Accepted);
    let rep = r.c.report();
    assert!(rep.ok());
    assert_eq!(rep.str(keys::NAME), Some("\u{82}My \u{80}server"));
    assert_eq!(rep.raw("name_plain"), Some(&OwnedValue::from("My server")));
    assert_eq!(rep.str(keys::MAP), Some("MAP01"));
    assert_eq!(rep.str(keys::GAME_TYPE), Some("Match"));
    assert_eq!(rep.int(keys::PLAYERS), Some(3));
    assert_eq!(rep.int(keys::MAX_PLAYERS), Some(8));
    assert_eq!(rep.str(keys::VERSION), Some("2.2.15"));
    assert_eq!(rep.bool(keys::PLAYER_LIST_COMPLETE), Some(true));
    assert_eq!(rep.raw("packet_version"), Some(&OwnedValue::Int(5)));
    assert_eq!(rep.raw("application"), Some(&OwnedValue::from("SRB2")));
    assert_eq!(rep.raw("refuse_reason"), Some(&OwnedValue::Int(2)));
    assert_eq!(rep.raw("dedicated"), Some(&OwnedValue::Bool(true)));
    assert_eq!(rep.raw("lots_of_addons"), Some(&OwnedValue::Bool(true)));
    assert_eq!(rep.raw("map_title"), Some(&OwnedValue::from("GREENFLOWER")));
    assert_eq!(rep.raw("map_md5"), Some(&OwnedValue::from("5a".repeat(16).as_str())));
    assert_eq!(rep.raw("http_source"), Some(&OwnedValue::from("https://mirror.example/srb2")));
    assert_eq!(rep.raw("files"), Some(&OwnedValue::from("addon.pk3, music.wad")));
    assert_eq!(rep.raw("level_time_tics"), Some(&OwnedValue::Int(2100)));
    let p: Vec<_> = rep.players.iter().map(|p| (p.name.as_str(), p.score, p.team.clone())).collect();
    assert_eq!(
        p,
        vec![
            ("Sonic", Some(0), OwnedValue::from("spectator")),
            ("Knuckles the Echidna!", Some(1500), OwnedValue::from("red")),
            ("Tails", Some(70000), OwnedValue::from("blue")),
        ],
        "empty slots (num 255) skipped whatever their stale bytes"
    );
    assert_eq!(rep.players[1].get("has_flag"), Some(&OwnedValue::Bool(true)));
    assert_eq!(rep.players[2].get("super"), Some(&OwnedValue::Bool(true)));
    assert_eq!(rep.players[2].get("time_in_server_s"), Some(&OwnedValue::Int(65535)));
    assert_eq!(rep.players[1].get("slot"), Some(&OwnedValue::Int(5)));
}

#[test]
fn players_first_then_server() {
    let mut r = Run::new(QueryConfig::default());
    r.feed(&playerinfo());
    assert!(r.c.done().is_none());
    r.feed(&serverinfo(5, TIME, &[]));
    assert_eq!(r.c.report().players.len(), 3);
}

#[test]
fn every_layout_decodes() {
    for pv in [2u8, 3, 4] {
        let mut r = Run::new(QueryConfig::default());
        r.feed(&serverinfo(pv, TIME, &[("a.wad", 7)]));
        r.feed(&playerinfo());
        let rep = r.c.report();
        assert!(rep.ok(), "v{pv}: {rep:?}");
        assert_eq!(rep.str(keys::NAME), Some("\u{82}My \u{80}server"), "v{pv}");
        assert_eq!(rep.str(keys::MAP), Some("MAP01"), "v{pv}");
        assert_eq!(rep.str(keys::GAME_TYPE), Some("Match"), "v{pv}");
        assert_eq!(rep.raw("files"), Some(&OwnedValue::from("a.wad")), "v{pv}");
        assert_eq!(rep.raw("dedicated"), Some(&OwnedValue::Bool(true)), "v{pv}");
        assert_eq!(rep.raw("refuse_reason"), Some(&if pv >= 3 { OwnedValue::Int(2) } else { OwnedValue::Null }));
        assert_eq!(rep.raw("lots_of_addons"), Some(&if pv >= 4 { OwnedValue::Bool(true) } else { OwnedValue::Null }));
        assert_eq!(rep.raw("http_source"), None);
    }
    let mut r = Run::new(QueryConfig::default());
    r.feed(&serverinfo_220(TIME));
    let rep = r.run_out();
    assert!(rep.ok());
    assert_eq!(rep.str(keys::NAME), Some("Old server"));
    assert_eq!(rep.str(keys::GAME_TYPE), Some("CTF"));
    assert_eq!(rep.str(keys::VERSION), Some("2.2.0"));
    assert_eq!(rep.raw("admin_player"), Some(&OwnedValue::Int(-1)));
    assert_eq!(rep.raw("files"), Some(&OwnedValue::from("old.wad")));
    assert_eq!(rep.raw("map_title"), Some(&OwnedValue::from("TECHNO HILL")));
    assert_eq!(rep.bool(keys::PLAYER_LIST_COMPLETE), Some(false), "no PT_PLAYERINFO came");
}

#[test]
fn echo_checksum_and_source_are_checked() {
    let mut r = Run::new(QueryConfig::default());
    assert_eq!(r.feed(&serverinfo(5, TIME + 1, &[])), Datagram::Ignored, "another query's time");
    let mut bad = serverinfo(5, TIME, &[]);
    bad[40] ^= 1;
    assert_eq!(r.feed(&bad), Datagram::Ignored, "bad checksum");
    assert_eq!(r.feed(&msg::packet(9, b"refused")), Datagram::Ignored);
    assert_eq!(
        r.e.on_datagram(1, "127.0.0.1:5030".parse().unwrap(), &serverinfo(5, TIME, &[]), &mut r.c),
        Datagram::Ignored
    );
    assert!(r.c.done().is_none());
    let rep = r.run_out();
    assert_eq!(rep.done.unwrap().0, Status::TIMEOUT);
    assert_eq!(r.c.take_sends().len(), 3, "first request and two retries");
}

#[test]
fn a_truncated_serverinfo_is_malformed_and_a_cut_file_list_is_not() {
    let full = serverinfo(5, TIME, &[("addon.pk3", 100)]);
    let body = &full[8..];
    // Cut inside the fixed part: malformed.
    let mut r = Run::new(QueryConfig::default());
    r.feed(&msg::packet(PT_SERVERINFO, &body[..300]));
    assert_eq!(r.c.done().map(|d| d.0), Some(Status::MALFORMED));
    // Cut inside the file list: the server info stands, the list is marked.
    let mut r = Run::new(QueryConfig::default());
    r.feed(&msg::packet(PT_SERVERINFO, &body[..body.len() - 5]));
    let rep = r.run_out();
    assert!(rep.ok());
    assert_eq!(rep.raw("files_cut"), Some(&OwnedValue::Bool(true)));
}

#[test]
fn unknown_protocol() {
    let mut c = Collector::new();
    assert!(Srb2Engine::new("savage2", target(), &QueryConfig::default(), 0, &mut c).is_err());
    assert!(Srb2Engine::new("srb2", target(), &QueryConfig::default(), 0, &mut c).is_ok());
}

#[test]
fn truncations_and_mutations_never_panic() {
    let cfg = QueryConfig { retries: 0, ..QueryConfig::default() };
    let bases = [
        serverinfo(5, TIME, &[("a.pk3", 1), ("b.wad", 2)]),
        serverinfo(3, TIME, &[("c", 3)]),
        serverinfo_220(TIME),
        playerinfo(),
    ];
    let mut n = 0;
    for (i, base) in bases.iter().enumerate() {
        let survive = |d: &[u8]| {
            let mut r = Run::new(cfg.clone());
            if i == 3 {
                r.feed(&serverinfo(5, TIME, &[]));
            }
            r.feed(d);
            assert!(r.run_out().done.is_some());
        };
        // Truncated and re-checksummed (a plain cut fails the checksum and proves nothing).
        for_each_truncation(&base[8..], |t| {
            survive(&msg::packet(base[6], t));
            survive(t);
            n += 2;
        });
        for_each_mutation(0x5EB2 + i as u64, &base[8..], 800, |seed, m| {
            let ok = std::panic::catch_unwind(|| {
                survive(&msg::packet(base[6], m));
                survive(m);
            });
            assert!(ok.is_ok(), "base {i} seed {seed:#x}");
            n += 2;
        });
    }
    assert!(n > 3000);
}
