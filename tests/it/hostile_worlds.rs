//! Hostile worlds, round two (issue 11): worlds whose teleporter links multiply, whose group-instance names are
//! copied into every obstacle, that stall the event loop while they are modelled, many sessions that each get a
//! large world, a world cache that is full or holds a FIFO, and recordings that would fill the disk.
//!
//! Every world here is made by a generator with a size parameter, so each test covers a class of inputs, and the
//! smallest members of each class are the `world_blob` fuzz seeds (`fuzz/seeds/world-*.bin`; the test
//! `fuzz_seeds_are_the_generators_output` keeps them current, `BZHEAD_WRITE_SEEDS=1` rewrites them).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bzhead::bot::{Bot, BotConfig, BotHost, Control, HostConfig, HostEvent, View};
use bzhead::bzflag::consts::Team;
use bzhead::bzflag::event::Event;
use bzhead::bzflag::session::SessionConfig;
use bzhead::bzflag::world::Envelope;
use bzhead::reactor::{SessionId, SessionOptions};

use crate::support::peak::{run_measured, Measured};
use crate::support::standin::{hello, server_chat, Conn, StandIn};
use crate::support::{bzhead, Bzfs, TempDir, WAIT};

// ------------------------------------------------------------------ world generators

fn sstr(s: &str) -> Vec<u8> {
    let mut v = (s.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(s.as_bytes());
    v
}

/// A group instance of `def` called `name` (an empty transform, no modifiers).
fn instance(def: &str, name: &str) -> Vec<u8> {
    let mut v = sstr(def);
    v.extend(sstr(name));
    v.extend(sstr(""));
    v.extend(0u32.to_be_bytes());
    v.push(0);
    v
}

/// A vertical unnamed teleporter, 1 × 5 × 10 with a border of 1.
fn teleporter() -> Vec<u8> {
    let mut v = sstr("");
    for f in [0f32, 0.0, 0.0, 0.0, 1.0, 5.0, 10.0, 1.0] {
        v.extend(f.to_be_bytes());
    }
    v.extend([0, 0]);
    v
}

/// A group definition with `boxes` unit boxes, `teles` teleporters and the instances `(def, name, count)`.
fn group(name: &str, boxes: u32, teles: u32, children: &[(&str, &str, usize)]) -> Vec<u8> {
    let mut v = sstr(name);
    v.extend(0u32.to_be_bytes()); // walls
    v.extend(boxes.to_be_bytes());
    for _ in 0..boxes {
        for f in [0f32, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0] {
            v.extend(f.to_be_bytes());
        }
        v.push(0);
    }
    v.extend(0u32.to_be_bytes()); // pyramids
    v.extend(0u32.to_be_bytes()); // bases
    v.extend(teles.to_be_bytes());
    for _ in 0..teles {
        v.extend(teleporter());
    }
    for _ in 0..5 {
        v.extend(0u32.to_be_bytes()); // meshes .. tetras
    }
    let n: usize = children.iter().map(|(_, _, c)| c).sum();
    v.extend((n as u32).to_be_bytes());
    for (def, iname, count) in children {
        let one = instance(def, iname);
        for _ in 0..*count {
            v.extend_from_slice(&one);
        }
    }
    v
}

/// A database: the world group, the named groups and the links `(from, to)`; nothing else.
fn database(world: Vec<u8>, named: &[Vec<u8>], links: &[(&str, &str)]) -> Vec<u8> {
    let mut v = Vec::new();
    for _ in 0..5 {
        v.extend(0u32.to_be_bytes());
    }
    v.extend(world);
    v.extend((named.len() as u32).to_be_bytes());
    for g in named {
        v.extend_from_slice(g);
    }
    v.extend((links.len() as u32).to_be_bytes());
    for (from, to) in links {
        v.extend(sstr(from));
        v.extend(sstr(to));
    }
    v.extend((-1f32).to_be_bytes()); // no water
    v.extend(0u32.to_be_bytes()); // weapons
    v.extend(0u32.to_be_bytes()); // zones
    v
}

/// Groups `g0` … `g<depth-1>` nested `fan` wide, the innermost holding `leaf`, the world placing `g0` `fan`
/// times: `fan^(depth+1)` copies of the leaf's contents. Each instance is called `name` (empty: unnamed).
fn nested(depth: usize, fan: usize, name: &str, leaf: (u32, u32), links: &[(&str, &str)]) -> Vec<u8> {
    let mut named = Vec::new();
    for d in 0..depth {
        let (boxes, teles) = if d + 1 == depth { leaf } else { (0, 0) };
        let next = format!("g{}", d + 1);
        let children: Vec<(&str, &str, usize)> = if d + 1 == depth { vec![] } else { vec![(&next, name, fan)] };
        named.push(group(&format!("g{d}"), boxes, teles, &children));
    }
    Envelope::wrap(&database(group("", 0, 0, &[("g0", name, fan)]), &named, links))
}

/// Teleporter links that multiply: `fan^(depth+1)` teleporters from nested groups and one link from every face
/// to every face (`*` to `*`). On `main` the link table grew with faces × targets and its matching with the cube.
pub fn link_bomb(depth: usize, fan: usize) -> Vec<u8> {
    nested(depth, fan, "", (0, 1), &[("*", "*")])
}

/// Links whose patterns are long (`*a*a…*b`, the glob matcher's worst case) over many teleporters: the matching
/// work grows with links × pattern bytes × face-name bytes.
pub fn link_pattern_bomb(teles: usize, links: usize, pattern_len: usize) -> Vec<u8> {
    let pattern: String = "*a".repeat(pattern_len / 2) + "b";
    let sides: Vec<(&str, &str)> = (0..links).map(|_| (pattern.as_str(), pattern.as_str())).collect();
    nested(1, teles, "", (0, 1), &sides)
}

/// Names copied per obstacle: instances called by a `name_len`-byte name, nested `depth` deep, `fan` wide, over
/// one box each: every obstacle's path is `depth` copies of the name.
pub fn name_bomb(depth: usize, fan: usize, name_len: usize) -> Vec<u8> {
    let name = "n".repeat(name_len);
    nested(depth, fan, &name, (1, 0), &[])
}

/// A world that parses fast but takes long to model: `boxes` boxes in one group placed `copies` times.
pub fn slow_world(boxes: u32, copies: usize) -> Vec<u8> {
    let g = group("g", boxes, 0, &[]);
    Envelope::wrap(&database(group("", 0, 0, &[("g", "", copies)]), &[g], &[]))
}

/// The hostile seeds of the `world_blob` fuzz target: the smallest member of each class.
pub fn fuzz_seeds() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("world-link-bomb-SYNTHETIC.bin", link_bomb(4, 10)),
        ("world-link-bomb-wide-SYNTHETIC.bin", link_bomb(1, 2000)),
        ("world-link-pattern-bomb-SYNTHETIC.bin", link_pattern_bomb(1000, 300, 1000)),
        ("world-name-bomb-SYNTHETIC.bin", name_bomb(8, 5, 1000)),
        ("world-name-bomb-deep-SYNTHETIC.bin", name_bomb(18, 2, 400)),
    ]
}

fn seeds_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds")
}

// ------------------------------------------------------------------ helpers

/// Peak memory allowed to `bzhead world --file` on a hostile world (a debug build modelling the captured CTF
/// world stays near 30 MiB).
const WORLD_LIMIT_KIB: u64 = 128 * 1024;

/// `bzhead world --file BLOB`, measured, with the time it took.
fn world_file(dir: &TempDir, name: &str, blob: &[u8]) -> (Measured, Duration) {
    let path = dir.path().join(name);
    std::fs::write(&path, blob).unwrap();
    let start = Instant::now();
    let m = run_measured(&mut bzhead(["world", "--file", path.to_str().unwrap()]), WAIT * 3);
    (m, start.elapsed())
}

#[track_caller]
fn assert_refused(m: &Measured, took: Duration, says: &str, within: Duration) {
    assert!(!m.out.timed_out, "bzhead did not end by itself:\n{}", m.describe());
    assert_eq!(m.out.code, Some(6), "{}", m.describe());
    assert!(m.out.stderr.contains(says), "stderr should say {says:?}:\n{}", m.describe());
    assert!(m.max_rss_kib < WORLD_LIMIT_KIB, "peak memory above {WORLD_LIMIT_KIB} KiB:\n{}", m.describe());
    assert!(took < within, "took {took:?} (safety limit {within:?}):\n{}", m.describe());
}

// ------------------------------------------------------------------ tests

#[test]
fn fuzz_seeds_are_the_generators_output() {
    let dir = seeds_dir();
    let write = std::env::var_os("BZHEAD_WRITE_SEEDS").is_some();
    for (name, blob) in fuzz_seeds() {
        let path = dir.join(name);
        if write {
            std::fs::write(&path, &blob).unwrap();
        }
        let on_disk =
            std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e} (BZHEAD_WRITE_SEEDS=1 writes it)", path.display()));
        assert!(on_disk == blob, "{} is stale: run this test with BZHEAD_WRITE_SEEDS=1", path.display());
    }
}

/// Teleporter links that multiply (one `*` to `*` link over teleporters made by nested group instances, or by
/// many instances side by side) are refused with the world error (exit 6) before any name is matched: the
/// matching work (pattern bytes × face-name bytes) is counted from the group tallies, and the destinations are
/// counted before the table is built. On `main` the 111-byte blob of 10,000 teleporters ran for minutes.
#[test]
fn teleporter_links_that_multiply_are_refused_in_bounded_time_and_memory() {
    let dir = TempDir::new("hostile-links");
    for (depth, fan) in [(4, 10), (1, 2000), (2, 50), (9, 3)] {
        let (m, took) = world_file(&dir, "links.bin", &link_bomb(depth, fan));
        assert_refused(&m, took, "link destinations, over the limit of 1048576", Duration::from_secs(5));
        eprintln!("link bomb {depth}x{fan}: {took:?}, {} KiB", m.max_rss_kib);
    }
    // Long patterns: refused from the group tallies, before anything is expanded.
    for (teles, links, len) in [(1000, 300, 1000), (20_000, 10, 100), (100, 5000, 2000)] {
        let (m, took) = world_file(&dir, "patterns.bin", &link_pattern_bomb(teles, links, len));
        assert_refused(&m, took, "steps of link name matching, over the limit of 268435456", Duration::from_secs(5));
        eprintln!("link pattern bomb {teles}x{links}x{len}: {took:?}, {} KiB", m.max_rss_kib);
    }
    // A bot process facing such a server stops its bots and exits with the world error, saying why.
    let s = world_server(link_bomb(4, 10));
    let a = s.addr().to_string();
    let start = Instant::now();
    let m = run_measured(&mut bzhead(["bot", "sitter", "--for", "20", &a]), WAIT * 3);
    assert_refused(&m, start.elapsed(), "the teleporter links would take", WAIT * 2);
    assert!(m.out.stderr.contains("cannot model the world"), "{}", m.describe());
    // Just under the destination cap: 500 teleporters linked all to all are modelled (a million destinations).
    let (m, _) = world_file(&dir, "links-ok.bin", &link_bomb(2, 22));
    assert_eq!(m.out.code, Some(0), "{}", m.describe());
    assert!(m.out.stdout.contains("teleporter"), "{}", m.describe());
}

/// Names copied per obstacle: a long instance name nested deep would be repeated in every path below it. The
/// paths are stored once per expanded instance (shared by its obstacles) and the bytes the names would take
/// are counted from the group tallies before anything is expanded; past the budget (32 MiB) the world is
/// refused. On `main` the 273-byte blob took 3.2 GB.
#[test]
fn group_instance_names_copied_per_obstacle_are_refused_in_bounded_time_and_memory() {
    let dir = TempDir::new("hostile-names");
    for (depth, fan, len) in [(8, 5, 1000), (18, 2, 400), (3, 60, 4000), (31, 1, 100_000)] {
        let (m, took) = world_file(&dir, "names.bin", &name_bomb(depth, fan, len));
        assert_refused(&m, took, "bytes of names, over the limit of 33554432", Duration::from_secs(5));
        eprintln!("name bomb {depth}x{fan}x{len}: {took:?}, {} KiB", m.max_rss_kib);
    }
    // Long names over few obstacles are fine.
    let (m, _) = world_file(&dir, "names-ok.bin", &name_bomb(4, 3, 2000));
    assert_eq!(m.out.code, Some(0), "{}", m.describe());
}

/// A stand-in that serves `world` to its first client (the bots' observer link), accepts it and keeps the
/// connection open for a minute.
fn world_server(world: Vec<u8>) -> StandIn {
    StandIn::spawn(move |mut c: Conn| {
        if !c.read_header() || !c.send(&hello(1)) {
            return;
        }
        if c.accept(&world, 1) {
            let _ = c.expect(b"ex", Duration::from_secs(60));
        }
    })
}

/// Drives in a circle, so that the server relays its updates to observers.
struct Circler;

impl Bot for Circler {
    fn tick(&mut self, view: &View<'_>, control: &mut Control) {
        if view.me.alive() {
            control.drive(1.0, 0.5);
        }
    }
}

/// Turns `host` until `until` or `done`; returns the observer's updates and the host's ticks in that time.
fn play(host: &mut BotHost, obs: SessionId, until: Instant, mut done: impl FnMut(&BotHost) -> bool) -> (usize, usize) {
    let ticks = host.tick_times_us().len();
    let mut updates = 0;
    while Instant::now() < until && !done(host) {
        host.turn(Some(Duration::from_millis(50))).expect("turn");
        while let Some(e) = host.poll_event() {
            if let HostEvent::Session { session, event: Event::Update(_), .. } = e {
                updates += usize::from(session == obs);
            }
        }
    }
    (updates, host.tick_times_us().len() - ticks)
}

/// A world that takes seconds to model arrives for one server of a bot process: the model is built on the
/// reactor's worker thread, so the bot and the observer on another (real) server in the same process keep their
/// rates, and no turn of the loop works for long. On `main` the model was built inside the turn: every bot and
/// observer of the process froze for the whole build (the longest turn was the build time).
#[test]
fn a_world_that_takes_seconds_to_model_does_not_stall_the_other_sessions_of_the_process() {
    // Safety limit for the longest turn: the design bound is 50 ms (17 ms measured on a quiet machine), but turns
    // are timed on the wall clock, and on a machine with a load average of 10 the loop's thread is descheduled for
    // hundreds of milliseconds at a time (333 ms seen). Before the fix the longest turn was the whole build.
    const TURN_LIMIT: Duration = Duration::from_secs(1);
    let dir = TempDir::new("hostile-stall");
    let bzfs = Bzfs::builder().world(crate::bots::open_world(&dir, 100)).start();
    let mut host = BotHost::new(HostConfig::default()).expect("host");
    host.add_bot(bzfs.addr(), BotConfig { callsign: "circler".into(), ..BotConfig::default() }, Box::new(Circler));
    let config = SessionConfig { callsign: "watcher".into(), team: Team::Observer, ..SessionConfig::default() };
    let obs = host.reactor().add_session(bzfs.addr(), config, SessionOptions::default()).expect("observer");
    // Until the circler's updates reach the observer, then a measured window.
    let warm = Instant::now() + WAIT * 2;
    let mut first = 0;
    while Instant::now() < warm && first == 0 {
        first = play(&mut host, obs, Instant::now() + Duration::from_millis(500), |_| false).0;
    }
    assert!(first > 0, "the observer saw no updates of the circler\n{}", bzfs.log());
    let window = Duration::from_secs(3);
    host.reset_longest_turn();
    let (before_updates, before_ticks) = play(&mut host, obs, Instant::now() + window, |_| false);
    let longest_before = host.longest_turn();

    // The slow world: 2,000 boxes placed 250 times, half a million obstacles.
    let slow = world_server(slow_world(2000, 250));
    let hostile =
        host.add_bot(slow.addr(), BotConfig { callsign: "victim".into(), ..BotConfig::default() }, Box::new(Circler));
    let server = host.server_of(hostile).expect("server");
    host.reset_longest_turn();
    let started = Instant::now();
    let (updates, ticks) =
        play(&mut host, obs, started + Duration::from_secs(180), |h| h.server_world(server).is_some());
    let build = started.elapsed();
    assert!(host.server_world(server).is_some(), "the slow world was not modelled within 180 s");
    let longest = host.longest_turn();
    let rate = |n: usize, t: Duration| n as f64 / t.as_secs_f64();
    eprintln!(
        "slow world modelled in {build:?}; longest turn {longest:?} (before it arrived: {longest_before:?}); \
         observer updates/s {:.1} before, {:.1} during; ticks/s {:.1} before, {:.1} during",
        rate(before_updates, window),
        rate(updates, build),
        rate(before_ticks, window),
        rate(ticks, build)
    );
    assert!(longest < TURN_LIMIT, "a turn took {longest:?} while the world was modelled in {build:?}");
    assert!(build > longest * 4, "the world was modelled too fast ({build:?}) to show anything");
    assert!(
        rate(updates, build) >= rate(before_updates, window) * 0.5,
        "the observer's update rate fell from {before_updates} in {window:?} to {updates} in {build:?}"
    );
    assert!(
        rate(ticks, build) >= rate(before_ticks, window) * 0.5,
        "the bots' tick rate fell from {before_ticks} in {window:?} to {ticks} in {build:?}"
    );
    host.leave_all();
    let _ = host.run_until(Instant::now() + Duration::from_secs(5));
}

/// The world cache: a FIFO planted under the world's name does not hang the session (the file is opened
/// non-blocking and checked with fstat, on the worker), the world is downloaded instead and stored over it, and
/// the cache is trimmed to its byte cap (`--cache-max-mib`), least recently used first. On `main` the open of
/// the FIFO blocked the event loop forever.
#[test]
fn a_fifo_in_the_cache_does_not_hang_and_the_cache_keeps_to_its_byte_cap() {
    let dir = TempDir::new("hostile-cache");
    let cache_dir = dir.path().join("cache");
    std::fs::create_dir_all(&cache_dir).unwrap();
    let world = slow_world(3, 1);
    let hash = bzhead::cache::md5_hex(&world);
    let fifo = cache_dir.join(format!("{hash}.bwc"));
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    // Three old worlds of 600 KiB: with a 1 MiB cap, the two oldest must go once the new world is stored.
    let cache = bzhead::cache::WorldCache::new(&cache_dir);
    let mut old = Vec::new();
    for i in 0..3u8 {
        let blob = vec![i; 600 * 1024];
        let p = cache.store(&bzhead::cache::md5_hex(&blob), &blob).unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        f.set_modified(std::time::SystemTime::now() - Duration::from_secs(300 - u64::from(i) * 100)).unwrap();
        old.push(p);
    }
    let s = world_server(world.clone());
    let a = s.addr().to_string();
    let c = cache_dir.to_str().unwrap();
    let start = Instant::now();
    let m = run_measured(
        &mut bzhead(["observe", "--json", "--cache-dir", c, "--cache-max-mib", "1", "--for", "2", &a]),
        WAIT * 3,
    );
    let took = start.elapsed();
    assert!(!m.out.timed_out, "bzhead hung:\n{}", m.describe());
    assert_eq!(m.out.code, Some(0), "{}", m.describe());
    assert!(m.out.stdout.contains("\"cached\":false"), "the world should have been downloaded:\n{}", m.describe());
    assert!(took < WAIT, "took {took:?}");
    let meta = std::fs::symlink_metadata(&fifo).unwrap();
    assert!(meta.is_file(), "the downloaded world should replace the FIFO");
    assert_eq!(std::fs::read(&fifo).unwrap(), world);
    let present: Vec<bool> = old.iter().map(|p| p.exists()).collect();
    assert_eq!(present, [false, false, true], "the two least recently used worlds should be evicted");
    eprintln!("FIFO in the cache: {took:?}, {} KiB", m.max_rss_kib);
}

/// `--record` has a size cap (`--record-max-mib`, default 256): a server that sends 3 MiB of chat to an observer
/// recording with a 1 MiB cap makes the recording stop at the cap with a clear message (a warning event, and a
/// line on stderr at the end), while the session goes on to its clean leave; the capped file replays up to the
/// cap. On `main` the recording grew with everything the server sent.
#[test]
fn recordings_stop_at_their_size_cap_and_the_session_goes_on() {
    let dir = TempDir::new("hostile-record");
    let s = StandIn::spawn(move |mut c: Conn| {
        if !c.read_header() || !c.send(&hello(1)) || !c.accept(&slow_world(1, 1), 1) {
            return;
        }
        let line = "x".repeat(200);
        let mut burst = Vec::new();
        for _ in 0..100 {
            burst.extend(server_chat(&line));
        }
        for _ in 0..150 {
            if !c.send(&burst) {
                return;
            }
        }
        let _ = c.expect(b"ex", Duration::from_secs(30));
    });
    let rec = dir.path().join("capped.rec");
    let a = s.addr().to_string();
    let r = rec.to_str().unwrap();
    let start = Instant::now();
    let m = run_measured(
        &mut bzhead(["observe", "--no-cache", "--json", "--record", r, "--record-max-mib", "1", "--for", "4", &a]),
        WAIT * 3,
    );
    let took = start.elapsed();
    assert!(!m.out.timed_out, "{}", m.describe());
    assert_eq!(m.out.code, Some(0), "{}", m.describe());
    let says = "the recording reached its size cap of 1 MiB and stopped; the session goes on";
    assert!(m.out.stdout.contains(says), "stdout should say {says:?}:\n{}", m.describe());
    assert!(m.out.stderr.contains(says), "stderr should say {says:?}:\n{}", m.describe());
    // The session went on: chat after the cap was still printed, and the leave was clean.
    let chats = m.out.stdout.lines().filter(|l| l.contains("\"type\":\"chat\"")).count();
    assert!(chats >= 15_000, "only {chats} chat lines after the cap:\n{}", m.describe());
    let size = std::fs::metadata(&rec).unwrap().len();
    assert!(size <= 1 << 20 && size > 1 << 19, "recording of {size} bytes");
    let replay = run_measured(&mut bzhead(["replay", "--json", r]), WAIT);
    assert_eq!(replay.out.code, Some(0), "{}", replay.describe());
    assert!(replay.out.stdout.contains("\"type\":\"chat\""), "{}", replay.describe());
    eprintln!("capped recording: {size} bytes, {took:?}, {} KiB", m.max_rss_kib);
}

/// `replay` streams the file: a 160 MiB recording replays in a few MiB (on `main` it was read whole and every
/// record copied: twice the file's size in memory).
#[test]
fn replay_streams_a_large_recording_in_bounded_memory() {
    const LIMIT_KIB: u64 = 64 * 1024;
    let dir = TempDir::new("hostile-replay");
    let path = dir.path().join("big.rec");
    let meta = bzhead::record::Meta::new("127.0.0.1:5154", &SessionConfig::default());
    let start = Instant::now();
    let mut r = bzhead::record::Recorder::create(&path, &meta, start).unwrap().with_max_bytes(u64::MAX);
    let mut chat = vec![0u8];
    chat.extend(std::iter::repeat_n(b'y', 64 * 1024));
    for i in 0..2560u64 {
        r.record(bzhead::record::Kind::Chat, start + Duration::from_millis(i), &chat);
    }
    r.finish().unwrap();
    drop(r);
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size > 160 << 20);
    let t = Instant::now();
    let m = run_measured(&mut bzhead(["replay", "--json", path.to_str().unwrap()]), WAIT * 6);
    let took = t.elapsed();
    assert_eq!(m.out.code, Some(0), "{}", m.describe());
    assert!(m.max_rss_kib < LIMIT_KIB, "replay of {size} bytes peaked at {} KiB", m.max_rss_kib);
    eprintln!("replay of {size} bytes: {took:?}, {} KiB", m.max_rss_kib);
}

/// A server that hands every connection a new world of `size` bytes (pseudo-random, so nothing shares it):
/// one thread per connection, each serving the join and waiting for the leave.
fn new_world_per_session_server(size: usize) -> std::net::SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let mut base = vec![0u8; size];
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for chunk in base.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let b = x.to_le_bytes();
        chunk.copy_from_slice(&b[..chunk.len()]);
    }
    let base = std::sync::Arc::new(base);
    std::thread::spawn(move || {
        for (k, stream) in l.incoming().enumerate() {
            let Ok(stream) = stream else { return };
            let base = base.clone();
            std::thread::spawn(move || {
                let _ = stream.set_nodelay(true);
                let mut c = Conn::from_stream(stream);
                let mut world = base.to_vec();
                world[..8].copy_from_slice(&(k as u64).to_be_bytes());
                let id = (k % 200) as u8 + 1;
                if c.read_header() && c.send(&hello(id)) && c.accept(&world, id) {
                    drop(world);
                    let _ = c.expect(b"ex", Duration::from_secs(120));
                }
            });
        }
    });
    addr
}

/// Many sessions, each handed a new world (8 MiB here, to keep the test short in a debug build; the bound is the
/// same for 32 MiB, four times larger): at most `MAX_WORLDS_IN_FLIGHT` (4) sessions fetch a world at
/// once (the others' cache lookups wait their turn), the download buffer is one allocation of the announced
/// size, and an observer frees its world once verified, so the process stays within the budget it states (4 ×
/// 32 MiB of worlds in flight) whatever the count. On `main` every session held its world (and a doubling
/// download buffer and a copy for the cache): see docs/testing.md for the figures.
#[test]
fn many_sessions_each_handed_a_new_large_world_stay_within_the_world_budget() {
    const COUNT: usize = 16;
    const WORLD: usize = 8 * 1024 * 1024;
    // 4 worlds in flight of 8 MiB, plus the process itself (a debug build of bzhead observing takes about 10 MiB,
    // 16 sessions' buffers a few more).
    const LIMIT_KIB: u64 = (4 * 8 + 64) * 1024;
    let addr = new_world_per_session_server(WORLD).to_string();
    let count = COUNT.to_string();
    let start = Instant::now();
    let m = run_measured(
        &mut bzhead([
            "observe",
            "--no-cache",
            "--json",
            "--count",
            &count,
            "--stagger-ms",
            "0",
            "--join-timeout",
            "120",
            "--idle-timeout",
            "300",
            "--for",
            "40",
            &addr,
        ]),
        Duration::from_secs(300),
    );
    let took = start.elapsed();
    assert!(!m.out.timed_out, "{}", m.describe());
    assert!(m.out.stdout.contains("\"all_joined\""), "not every observer joined:\n{}", m.describe());
    assert_eq!(m.out.code, Some(0), "{}", m.describe());
    assert!(m.max_rss_kib < LIMIT_KIB, "peak memory {} KiB over {LIMIT_KIB} KiB", m.max_rss_kib);
    eprintln!("{COUNT} sessions x {WORLD} bytes: {took:?}, {} KiB", m.max_rss_kib);
}
