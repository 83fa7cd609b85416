//! Parser throughput of the BZFlag side: the world database, the messages, and the session engine on a recorded
//! game. `cargo bench --bench parsers` (the query plugins' engines are in `parsers_<plugin>.rs`, one binary each:
//! every plugin rlib exports the same `bzhead_query_plugin_entry` symbol, so two cannot link into one binary).
//! `bench/parsers.sh` runs them all and prints the table for `docs/benchmarks.md`.
//!
//! Inputs:
//! * `benches/data/big-world.bin`: the 10,907-obstacle world of `tests/it/world.rs` (`big_world_figures`) as the
//!   real `bzfs` 2.4.26 sends it (`-cacheout`, see `benches/data/README.md`), 180,622 bytes.
//! * `testdata/recordings/two-hunters.rec`: 30 s of a real game of two hunter bots, every byte the observer link
//!   received. Its server messages (TCP stream and UDP datagrams, framed as the session frames them) are the
//!   inputs of the message benchmarks, grouped by message kind.
//!
//! Lines starting with `parsers-info:` (printed before the benchmarks) give the input sizes that
//! `bench/parsers.sh` turns the times into rates with.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use bzhead::bzflag::consts::code;
use bzhead::bzflag::msg::{datagram_frames, ClientMsg, FrameBuffer, Message, ServerMsg};
use bzhead::bzflag::world::{inflate_blob, parse_blob, WorldDb, WorldModel};
use bzhead::record::{parse_records, replay, Kind, Meta, Record};
use divan::counter::{BytesCount, ItemsCount};
use divan::Bencher;

const BIG_WORLD: &[u8] = include_bytes!("data/big-world.bin");
const RECORDING: &[u8] = include_bytes!("../testdata/recordings/two-hunters.rec");

fn main() {
    print_info();
    divan::Divan::from_args().main();
}

/// Input sizes, printed once, for the script.
fn print_info() {
    let inflated = inflate_blob(BIG_WORLD).expect("the big world inflates");
    let db = WorldDb::parse(&inflated).expect("the big world parses");
    let model = WorldModel::build(&db).expect("the big world builds");
    println!("parsers-info: world.blob_bytes={}", BIG_WORLD.len());
    println!("parsers-info: world.inflated_bytes={}", inflated.len());
    println!("parsers-info: world.obstacles_sent={}", model.counts.total());
    println!("parsers-info: world.obstacles_expanded={}", model.expanded_counts.total());
    println!("parsers-info: world.bvh_primitives={}", model.primitive_count());
    let c = corpus();
    println!("parsers-info: recording.server_messages={}", c.all.len());
    println!("parsers-info: recording.server_message_bytes={}", c.all.iter().map(|(_, b)| b.len() + 4).sum::<usize>());
    println!("parsers-info: recording.stream_bytes={}", c.stream_bytes);
    println!("parsers-info: recording.game_seconds={:.1}", c.duration.as_secs_f64());
    for (code, bodies) in &c.by_code {
        println!(
            "parsers-info: recording.kind.{}={} messages, {} bytes",
            code_label(*code),
            bodies.len(),
            bodies.iter().map(|b| b.len() + 4).sum::<usize>()
        );
    }
}

fn code_label(c: u16) -> String {
    bzhead::bzflag::consts::code_name(c).map_or_else(|| format!("0x{c:04x}"), str::to_string)
}

/// The server messages of the recording.
struct Corpus {
    /// Every server message in arrival order: (code, body).
    all: Vec<(u16, Vec<u8>)>,
    /// The bodies by code.
    by_code: BTreeMap<u16, Vec<Vec<u8>>>,
    /// TCP + UDP bytes received (hello, world download and framing included).
    stream_bytes: usize,
    /// Time of the last record.
    duration: Duration,
    meta: Meta,
    records: Vec<Record>,
}

fn corpus() -> Corpus {
    let (meta, records) = parse_records(RECORDING).expect("the recording parses");
    let mut all = Vec::new();
    let mut tcp = FrameBuffer::new();
    let mut hello_seen = false;
    let mut stream_bytes = 0;
    for r in &records {
        match r.kind {
            Kind::TcpIn => {
                stream_bytes += r.data.len();
                tcp.push(&r.data);
                if !hello_seen {
                    // "BZFS0221" + our id, as the session takes it before any frame.
                    if tcp.take_raw(9).is_none() {
                        continue;
                    }
                    hello_seen = true;
                }
                while let Ok(Some((code, body))) = tcp.next_frame() {
                    all.push((code, body));
                }
            }
            Kind::UdpIn => {
                stream_bytes += r.data.len();
                let (frames, _) = datagram_frames(&r.data);
                all.extend(frames.iter().map(|f| (f.code, f.body.to_vec())));
            }
            _ => {}
        }
    }
    let mut by_code: BTreeMap<u16, Vec<Vec<u8>>> = BTreeMap::new();
    for (c, b) in &all {
        by_code.entry(*c).or_default().push(b.clone());
    }
    let duration = records.last().map_or(Duration::ZERO, |r| r.t);
    Corpus { all, by_code, stream_bytes, duration, meta, records }
}

/// Parses of a set of frames, with their item and byte counts.
fn frames_of(codes: &[u16]) -> Vec<(u16, Vec<u8>)> {
    let c = corpus();
    let v: Vec<(u16, Vec<u8>)> =
        if codes.is_empty() { c.all } else { c.all.into_iter().filter(|(k, _)| codes.contains(k)).collect() };
    assert!(!v.is_empty(), "the recording has messages of kinds {codes:04x?}");
    v
}

fn bytes_of(v: &[(u16, Vec<u8>)]) -> usize {
    v.iter().map(|(_, b)| b.len() + 4).sum()
}

/// The world database on the 10,907-obstacle world.
mod world {
    use super::*;

    /// `parse_blob`: envelope, zlib inflation and the decode of every record (what a join does with the download).
    /// Counter: compressed (blob) bytes.
    #[divan::bench(sample_count = 30)]
    fn parse_blob_inflate_decode(b: Bencher) {
        b.counter(BytesCount::new(BIG_WORLD.len())).bench(|| parse_blob(black_box(BIG_WORLD)).unwrap());
    }

    /// Inflation alone. Counter: inflated bytes.
    #[divan::bench(sample_count = 30)]
    fn inflate(b: Bencher) {
        let n = inflate_blob(BIG_WORLD).unwrap().len();
        b.counter(BytesCount::new(n)).bench(|| inflate_blob(black_box(BIG_WORLD)).unwrap());
    }

    /// The decode of the inflated database alone. Counter: inflated bytes.
    #[divan::bench(sample_count = 30)]
    fn decode(b: Bencher) {
        let db = inflate_blob(BIG_WORLD).unwrap();
        b.counter(BytesCount::new(db.len())).bench(|| WorldDb::parse(black_box(&db)).unwrap());
    }

    /// `WorldModel::build`: group expansion, tessellation, teleporter links, BVH. Counter: obstacles as sent.
    #[divan::bench(sample_count = 10, sample_size = 1)]
    fn model_build(b: Bencher) {
        let db = parse_blob(BIG_WORLD).unwrap();
        let n = WorldModel::build(&db).unwrap().counts.total();
        b.counter(ItemsCount::new(n)).bench(|| WorldModel::build(black_box(&db)).unwrap());
    }

    /// `WorldDb::to_bytes`: the encoder (fake servers and tests use it). Counter: inflated bytes written.
    #[divan::bench(sample_count = 30)]
    fn encode(b: Bencher) {
        let db = parse_blob(BIG_WORLD).unwrap();
        let n = db.to_bytes().len();
        b.counter(BytesCount::new(n)).bench(|| black_box(&db).to_bytes());
    }
}

/// `ServerMsg::parse` and `Message::encode` on the recording's messages, one benchmark per common kind and one for
/// the whole mix. Each iteration decodes (or encodes) every message of the set; the counters are messages and
/// framed bytes (4-byte header included).
mod messages {
    use super::*;

    const KINDS: &[(&str, &[u16])] = &[
        ("all", &[]),
        ("player_update", &[code::PLAYER_UPDATE, code::PLAYER_UPDATE_SMALL]),
        ("shot_begin", &[code::SHOT_BEGIN]),
        ("shot_end", &[code::SHOT_END]),
        ("killed", &[code::KILLED]),
        ("alive", &[code::ALIVE]),
        ("add_player", &[code::ADD_PLAYER]),
        ("message", &[code::MESSAGE]),
        ("score", &[code::SCORE]),
        ("game_time", &[code::GAME_TIME]),
    ];

    fn kind(name: &str) -> &'static [u16] {
        KINDS.iter().find(|(n, _)| *n == name).map(|(_, c)| *c).unwrap()
    }

    #[divan::bench(args = ["all", "player_update", "shot_begin", "shot_end", "killed", "alive", "add_player", "message", "score", "game_time"])]
    fn decode(b: Bencher, which: &str) {
        let frames = frames_of(kind(which));
        b.counter(ItemsCount::new(frames.len())).counter(BytesCount::new(bytes_of(&frames))).bench(|| {
            for (c, body) in black_box(&frames) {
                black_box(ServerMsg::parse(*c, body).unwrap());
            }
        });
    }

    #[divan::bench(args = ["all", "player_update", "shot_begin", "shot_end", "killed", "alive", "add_player", "message", "score", "game_time"])]
    fn encode(b: Bencher, which: &str) {
        let frames = frames_of(kind(which));
        let msgs: Vec<ServerMsg> = frames.iter().map(|(c, body)| ServerMsg::parse(*c, body).unwrap()).collect();
        b.counter(ItemsCount::new(msgs.len())).counter(BytesCount::new(bytes_of(&frames))).bench(|| {
            for m in black_box(&msgs) {
                black_box(m.encode());
            }
        });
    }

    /// What a bot sends every tick and on every shot: `ClientMsg::PlayerUpdate` (small or full, as captured) and
    /// `ClientMsg::ShotBegin`, built from the recording's updates and shots, encoded.
    #[divan::bench(args = ["player_update", "shot_begin"])]
    fn client_encode(b: Bencher, which: &str) {
        let msgs: Vec<ClientMsg> = frames_of(kind(which))
            .iter()
            .filter_map(|(c, body)| match ServerMsg::parse(*c, body).unwrap() {
                ServerMsg::PlayerUpdate(u) => Some(ClientMsg::PlayerUpdate(u)),
                ServerMsg::ShotBegin(f) => Some(ClientMsg::ShotBegin(f)),
                _ => None,
            })
            .collect();
        let bytes: usize = msgs.iter().map(|m| m.encode().len()).sum();
        b.counter(ItemsCount::new(msgs.len())).counter(BytesCount::new(bytes)).bench(|| {
            for m in black_box(&msgs) {
                black_box(m.encode());
            }
        });
    }
}

/// The session engine on the whole recording (`bzhead replay`'s path without printing): connect, hello, join,
/// the world (parse and model), then 30 s of game, every TCP read and UDP datagram as it arrived, with the
/// engine's dead reckoning, events and replies. Counters: server messages and bytes received.
mod session {
    use super::*;

    #[divan::bench(sample_count = 30)]
    fn replay_recording(b: Bencher) {
        let c = corpus();
        let events = replay(&c.meta, &c.records).len();
        assert!(events > 0);
        b.counter(ItemsCount::new(c.all.len()))
            .counter(BytesCount::new(c.stream_bytes))
            .bench(|| replay(black_box(&c.meta), black_box(&c.records)));
    }
}
