//! The `query-srb2` engine, driven as plain Rust: one benchmark iteration is one whole query (engine created,
//! `PT_ASKINFO` built, `PT_SERVERINFO` and `PT_PLAYERINFO` parsed and reported to a sink that only counts).
//! Counters: reply datagrams and bytes. No SRB2 server could be run (`plugins/query-srb2/testdata/README.md`): the
//! replies are built as the plugin's tests build them, at the 2.2.15 source's struct offsets (PACKETVERSION 5, two
//! add-on files, three players of 32 slots). Part of `bench/parsers.sh`; see `parsers.rs` for why each plugin has
//! its own binary.

#[path = "common/mod.rs"]
mod common;

use common::{bench_query, target, CountingSink};
use divan::Bencher;
use query_abi::QueryConfig;
use query_srb2::engine::Srb2Engine;
use query_srb2::msg::{self, PT_PLAYERINFO, PT_SERVERINFO};

const TIME: u32 = 0x1122_3344;

fn main() {
    divan::Divan::from_args().main();
}

fn put(b: &mut [u8], at: usize, v: &[u8]) {
    b[at..at + v.len()].copy_from_slice(v);
}

/// `PT_SERVERINFO`, PACKETVERSION 5 (2.2.15), with `files` (offsets as in the plugin's tests).
fn serverinfo(files: &[(&str, u32)]) -> Vec<u8> {
    let mut b = vec![0u8; 406];
    b[0] = 255;
    b[1] = 5;
    put(&mut b, 2, b"SRB2");
    b[18] = 202;
    b[19] = 15;
    b[20] = 3;
    b[21] = 8;
    b[22] = 2;
    put(&mut b, 23, b"Match");
    b[23 + 24] = 1;
    b[49] = msg::SV_DEDICATED | msg::SV_LOTSOFADDONS;
    b[50] = files.len() as u8;
    put(&mut b, 51, &TIME.to_le_bytes());
    put(&mut b, 55, &(35 * 60u32).to_le_bytes());
    put(&mut b, 59, b"\x82My \x80server");
    put(&mut b, 91, b"MAP01");
    put(&mut b, 99, b"GREENFLOWER");
    put(&mut b, 132, &[0x5a; 16]);
    b[148] = 1;
    b[149] = 1;
    put(&mut b, 150, b"https://mirror.example/srb2");
    for (name, size) in files {
        b.extend_from_slice(&[0x11, 0]);
        b.extend_from_slice(&size.to_le_bytes());
        b.extend_from_slice(name.as_bytes());
        b.push(0);
        b.extend_from_slice(&[0xab; 16]);
    }
    msg::packet(PT_SERVERINFO, &b)
}

/// `PT_PLAYERINFO`: 32 records, three players.
fn playerinfo() -> Vec<u8> {
    let mut b = vec![0u8; 32 * 36];
    for (i, rec) in b.chunks_mut(36).enumerate() {
        rec[0] = 255;
        rec[1..].fill(0x41 + i as u8);
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

fn start(s: &mut CountingSink) -> Srb2Engine {
    Srb2Engine::with_time(target(), &QueryConfig::default(), TIME, 1000, s)
}

/// `PT_SERVERINFO` (2 files) then `PT_PLAYERINFO` (3 of 32 slots).
#[divan::bench]
fn serverinfo_and_playerinfo(b: Bencher) {
    let si = serverinfo(&[("addon.pk3", 100), ("music.wad", 2)]);
    let pi = playerinfo();
    bench_query(b, start, &[&si, &pi]);
}
