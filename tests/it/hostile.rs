//! Hostile BZFlag servers: stand-ins on loopback that lie, stall, drip, truncate, flood or serve worlds that claim
//! gigabytes. Each case runs the built `bzhead` with a deadline and checks the documented exit code (3 connect,
//! 4 rejected, 5 kicked, 6 protocol), a message that says what happened, and the process's peak memory.
//!
//! Already covered elsewhere and not repeated here: nothing listening, a web server's answer, silence after the
//! TCP accept, a hello dripped one byte a second, an oversized length right after the hello, random garbage after
//! the hello and a close in the middle of the world download (`observe::hostile_servers_end_with_a_clear_message_and_exit_code`);
//! a flooding server next to a real join on one reactor (`reactor::a_flooding_server_does_not_starve_the_other_sessions`).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use bzhead::bzflag::consts::{FlagStatus, PlayerStatus, Team};
use bzhead::bzflag::msg::{Abbv, FiringInfo, FlagInfo, Message, PlayerUpdate, ServerMsg};
use bzhead::bzflag::world::Envelope;
use serde_json::Value;

use crate::support::peak::{run_measured, Measured};
use crate::support::standin::{add_player, frame, header, hello, reject, server_chat, Conn, StandIn};
use crate::support::{bzhead, Bzfs, TempDir, WAIT};

/// Peak resident memory allowed to a `bzhead` process facing a hostile server (a debug build observing a real
/// server stays around 10 MiB).
const MEMORY_LIMIT_KIB: u64 = 128 * 1024;

/// `bzhead observe --no-cache --json` with short hello and join deadlines against `addr`, measured.
fn observe(addr: SocketAddr, extra: &[&str]) -> Measured {
    let mut args = vec!["observe", "--no-cache", "--json", "--hello-timeout", "2", "--join-timeout", "3"];
    args.extend_from_slice(extra);
    let a = addr.to_string();
    args.push(&a);
    run_measured(&mut bzhead(args), WAIT)
}

/// [`observe`] with `--for SECONDS`, allowed that long plus [`WAIT`].
fn observe_for(addr: SocketAddr, time: Duration, extra: &[&str]) -> Measured {
    let mut args = vec!["observe", "--no-cache", "--json", "--hello-timeout", "2", "--join-timeout", "3"];
    args.extend_from_slice(extra);
    let secs = time.as_secs_f64().to_string();
    let a = addr.to_string();
    args.extend(["--for", &secs, &a]);
    run_measured(&mut bzhead(args), time + WAIT)
}

#[track_caller]
fn assert_ends(m: &Measured, code: i32, says: &str) {
    assert!(!m.out.timed_out, "bzhead did not end by itself:\n{}", m.describe());
    assert_eq!(m.out.code, Some(code), "{}", m.describe());
    assert!(m.out.stderr.contains(says), "stderr should say {says:?}:\n{}", m.describe());
    assert!(m.max_rss_kib < MEMORY_LIMIT_KIB, "peak memory above {MEMORY_LIMIT_KIB} KiB:\n{}", m.describe());
}

fn events(m: &Measured) -> Vec<Value> {
    m.out.stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

// ------------------------------------------------------------------ worlds

fn sstr(s: &str) -> Vec<u8> {
    let mut v = (s.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(s.as_bytes());
    v
}

/// A group instance of `def` (no name, an empty transform, no modifiers): 17 bytes plus the name.
fn instance(def: &str) -> Vec<u8> {
    let mut v = sstr(def);
    v.extend(sstr(""));
    v.extend(sstr(""));
    v.extend(0u32.to_be_bytes());
    v.push(0);
    v
}

/// A group definition with `boxes` unit boxes and instances of `children` (each `count` times).
fn group(name: &str, boxes: u32, children: &[(&str, usize)]) -> Vec<u8> {
    let mut v = sstr(name);
    v.extend(0u32.to_be_bytes()); // walls
    v.extend(boxes.to_be_bytes());
    for _ in 0..boxes {
        for f in [0f32, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0] {
            v.extend(f.to_be_bytes());
        }
        v.push(0);
    }
    for _ in 0..8 {
        v.extend(0u32.to_be_bytes()); // pyramids .. tetras
    }
    let n: usize = children.iter().map(|(_, c)| c).sum();
    v.extend((n as u32).to_be_bytes());
    for (def, count) in children {
        let one = instance(def);
        for _ in 0..*count {
            v.extend_from_slice(&one);
        }
    }
    v
}

/// A database: no colours, texture matrices, materials, drivers or transforms; the world group and the named
/// groups; no links, no water, no weapons, no zones.
fn database(world: Vec<u8>, named: &[Vec<u8>]) -> Vec<u8> {
    let mut v = Vec::new();
    for _ in 0..5 {
        v.extend(0u32.to_be_bytes());
    }
    v.extend(world);
    v.extend((named.len() as u32).to_be_bytes());
    for g in named {
        v.extend_from_slice(g);
    }
    v.extend(0u32.to_be_bytes()); // links
    v.extend((-1f32).to_be_bytes()); // no water
    v.extend(0u32.to_be_bytes()); // weapons
    v.extend(0u32.to_be_bytes()); // zones
    v
}

/// The envelope around `db`, compressed fast (a 64 MiB database at level 9 takes long in a debug build).
fn envelope(db: &[u8], declared: u32) -> Vec<u8> {
    use std::io::Write;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(db).unwrap();
    let c = z.finish().unwrap();
    let mut v = Vec::new();
    for x in [10u16, 0x6865, 1] {
        v.extend(x.to_be_bytes());
    }
    v.extend(declared.to_be_bytes());
    v.extend((c.len() as u32).to_be_bytes());
    v.extend(c);
    v.extend(0u16.to_be_bytes());
    v.extend(0x6564u16.to_be_bytes());
    v
}

/// A small valid world: one box.
fn small_world() -> Vec<u8> {
    Envelope::wrap(&database(group("", 1, &[]), &[]))
}

/// 64 MiB of group instances (the most the client inflates), each a copy of a one-box group: a 100-odd KiB blob
/// whose database holds 3.9 million records and expands to as many obstacles.
fn instance_bomb() -> Vec<u8> {
    const CAP: usize = 64 * 1024 * 1024;
    let named = [group("g", 1, &[])];
    let base = database(group("", 0, &[]), &named).len();
    let n = (CAP - base) / instance("g").len();
    let db = database(group("", 0, &[("g", n)]), &named);
    assert!(db.len() <= CAP);
    envelope(&db, db.len() as u32)
}

/// Groups nested nine deep, ten instances each: a blob of about 120 bytes claiming a billion boxes.
fn nested_bomb() -> Vec<u8> {
    let depth = 9;
    let mut named = Vec::new();
    for d in 0..depth - 1 {
        named.push(group(&format!("g{d}"), 0, &[(&format!("g{}", d + 1), 10)]));
    }
    named.push(group(&format!("g{}", depth - 1), 1, &[]));
    let db = database(group("", 0, &[("g0", 10)]), &named);
    envelope(&db, db.len() as u32)
}

/// An envelope that declares a 4 GiB database.
fn envelope_claiming_4_gib() -> Vec<u8> {
    envelope(&database(group("", 1, &[]), &[]), 0xFFFF_FFF0)
}

/// A database whose material count claims four billion records.
fn count_claiming_4_billion() -> Vec<u8> {
    let mut db = database(group("", 1, &[]), &[]);
    db[8..12].copy_from_slice(&u32::MAX.to_be_bytes());
    envelope(&db, db.len() as u32)
}

/// A stand-in that serves `world` to one client and accepts it (id 1), then keeps the connection open until the
/// client leaves.
fn world_server(world: Vec<u8>) -> StandIn {
    StandIn::spawn(move |mut c: Conn| {
        if !c.read_header() || !c.send(&hello(1)) {
            return;
        }
        if c.accept(&world, 1) {
            let _ = c.expect(b"ex", Duration::from_secs(20));
        }
    })
}

// ------------------------------------------------------------------ tests

#[test]
fn wrong_hellos_rejects_and_kicks_give_their_exit_codes_and_say_why() {
    // An older protocol generation.
    let s = StandIn::spawn(|mut c| {
        if c.read_header() {
            c.send(b"BZFS0026\x01");
            thread::sleep(Duration::from_secs(3));
        }
    });
    assert_ends(&observe(s.addr(), &[]), 6, "incompatible server version \"BZFS0026\"");

    // A ban notice in place of the hello (the legacy form; 2.4 servers use MsgReject).
    let s = StandIn::spawn(|mut c| {
        if c.read_header() {
            c.send(b"REFUSED:banned for spamming by admin");
        }
    });
    assert_ends(&observe(s.addr(), &[]), 4, "banned for spamming by admin");

    // No free player slot (id 0xFF in the hello).
    let s = StandIn::spawn(|mut c| {
        if c.read_header() {
            c.send(&hello(0xFF));
            thread::sleep(Duration::from_secs(3));
        }
    });
    assert_ends(&observe(s.addr(), &[]), 4, "the server is full");

    // MsgReject at the join, then MsgSuperKill, as bzfs does.
    let s = StandIn::spawn(|mut c| {
        if c.read_header() && c.send(&hello(1)) && c.serve_join(&small_world()).is_some() {
            let mut b = reject(5, "This game is full.  Try again later.");
            b.extend(frame(b"sk", &[]));
            c.send(&b);
            thread::sleep(Duration::from_secs(3));
        }
    });
    let m = observe(s.addr(), &[]);
    assert_ends(&m, 4, "rejected by the server");
    assert!(m.out.stderr.contains("This game is full."), "{}", m.describe());

    // A kick in the game: the last server message, then MsgSuperKill.
    let s = StandIn::spawn(|mut c| {
        if c.read_header() && c.send(&hello(1)) && c.accept(&small_world(), 1) {
            let mut b = server_chat("You were kicked off the server by admin");
            b.extend(frame(b"sk", &[]));
            c.send(&b);
            thread::sleep(Duration::from_secs(3));
        }
    });
    assert_ends(&observe(s.addr(), &[]), 5, "kicked by the server: You were kicked off the server by admin");
}

#[test]
fn oversized_lengths_later_in_the_stream_are_fatal_but_the_largest_legal_message_is_not() {
    // During the join, in place of the settings.
    let s = StandIn::spawn(|mut c| {
        if c.read_header() && c.send(&hello(1)) && c.expect(b"nf", WAIT).is_some() {
            c.send(&frame(b"nf", &[]));
            if c.expect(b"ws", WAIT).is_some() {
                c.send(&header(b"gs", 0xFFFF));
                thread::sleep(Duration::from_secs(3));
            }
        }
    });
    let m = observe(s.addr(), &["--no-udp"]);
    assert_ends(&m, 6, "exceeds the protocol maximum");

    // In the game: a 1020-byte message (the most a frame may carry; an unknown code, skipped with a warning),
    // a chat line that must still arrive, then a 1021-byte length.
    let s = StandIn::spawn(|mut c| {
        if c.read_header() && c.send(&hello(1)) && c.accept(&small_world(), 1) {
            let mut b = frame(b"zz", &[7; 1020]);
            b.extend(server_chat("still in sync"));
            b.extend(header(b"mg", 1021));
            b.extend([0; 1021]);
            c.send(&b);
            thread::sleep(Duration::from_secs(3));
        }
    });
    let m = observe(s.addr(), &["--no-udp"]);
    assert_ends(&m, 6, "exceeds the protocol maximum");
    let ev = events(&m);
    let chat = ev.iter().position(|e| e["type"] == "chat" && e["text"] == "still in sync");
    let warning = ev.iter().position(|e| e["type"] == "warning");
    assert!(warning.is_some() && chat.is_some() && warning < chat, "{}", m.describe());
}

#[test]
fn truncated_frames_end_at_the_join_deadline_or_at_the_close_and_truncated_bodies_are_skipped() {
    // A frame that announces 200 bytes and delivers 10, then silence: the join deadline (3 s).
    let s = StandIn::spawn(|mut c| {
        if c.read_header() && c.send(&hello(1)) && c.expect(b"nf", WAIT).is_some() {
            let mut b = header(b"nf", 200);
            b.extend([0; 10]);
            c.send(&b);
            thread::sleep(Duration::from_secs(6));
        }
    });
    let started = Instant::now();
    let m = observe(s.addr(), &["--no-udp"]);
    assert_ends(&m, 6, "timed out during flag negotiation");
    eprintln!("a truncated frame and silence ended after {:?}", started.elapsed());

    // The same, then the server closes: the close in the middle of a message is reported.
    let s = StandIn::spawn(|mut c| {
        if c.read_header() && c.send(&hello(1)) && c.accept(&small_world(), 1) {
            let mut b = header(b"mg", 200);
            b.extend([0; 10]);
            c.send(&b);
            thread::sleep(Duration::from_millis(200));
        }
    });
    assert_ends(&observe(s.addr(), &["--no-udp"]), 6, "closed the connection during the game");

    // Whole frames with truncated bodies (settings of 3 bytes, an empty MsgAddPlayer, a 1-byte MsgTeamUpdate) are
    // skipped with a warning each; the join goes on and the session leaves cleanly.
    let s = StandIn::spawn(|mut c| {
        if !(c.read_header() && c.send(&hello(1)) && c.expect(b"nf", WAIT).is_some()) {
            return;
        }
        c.send(&frame(b"nf", &[]));
        if c.expect(b"ws", WAIT).is_none() {
            return;
        }
        let mut b = frame(b"gs", &[1, 2, 3]);
        b.extend(crate::support::standin::game_settings());
        c.send(&b);
        if c.accept(&small_world(), 1) {
            let mut b = frame(b"ap", &[]);
            b.extend(frame(b"tu", &[5]));
            b.extend(server_chat("after the broken ones"));
            c.send(&b);
            let _ = c.expect(b"ex", WAIT);
        }
    });
    let m = observe(s.addr(), &["--no-udp", "--for", "1"]);
    assert_eq!(m.out.code, Some(0), "{}", m.describe());
    let ev = events(&m);
    let warnings = ev.iter().filter(|e| e["type"] == "warning").count();
    assert!(warnings >= 3, "one warning per truncated body:\n{}", m.describe());
    assert!(ev.iter().any(|e| e["type"] == "chat" && e["text"] == "after the broken ones"), "{}", m.describe());
    assert!(m.max_rss_kib < MEMORY_LIMIT_KIB, "{}", m.describe());
}

#[test]
fn garbage_after_the_accept_ends_with_a_protocol_error_that_says_so() {
    let s = StandIn::spawn(|mut c| {
        if c.read_header() && c.send(&hello(1)) && c.accept(&small_world(), 1) {
            let mut x: u32 = 0x9e37_79b9;
            let garbage: Vec<u8> = (0..8192)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x as u8
                })
                .collect();
            c.send(&garbage);
            thread::sleep(Duration::from_secs(5));
        }
    });
    let m = observe(s.addr(), &["--no-udp"]);
    assert_ends(&m, 6, "protocol error");
    let closed: Vec<Value> = events(&m).into_iter().filter(|e| e["type"] == "closed").collect();
    assert_eq!(closed.len(), 1, "{}", m.describe());
    assert_eq!(closed[0]["exit_code"], 6);
}

#[test]
fn a_server_that_drips_one_byte_a_second_after_the_hello_hits_the_join_deadline() {
    // The flag negotiation answer (a server chat line, then the reply) comes one byte a second: every byte is
    // progress, but the join deadline is absolute.
    let s = StandIn::spawn(|mut c| {
        if c.read_header() && c.send(&hello(1)) && c.expect(b"nf", WAIT).is_some() {
            let mut b = server_chat("welcome, slowly");
            b.extend(frame(b"nf", &[]));
            for byte in b {
                if !c.send(&[byte]) {
                    return;
                }
                thread::sleep(Duration::from_secs(1));
            }
        }
    });
    assert_ends(&observe(s.addr(), &["--no-udp"]), 6, "timed out during flag negotiation");
}

#[test]
fn silence_or_a_drip_after_the_accept_ends_at_the_idle_limit_and_a_quiet_real_server_does_not() {
    // Accepted, then nothing at all with the connection open.
    let s = StandIn::spawn(|mut c| {
        if c.read_header() && c.send(&hello(1)) && c.accept(&small_world(), 1) {
            thread::sleep(Duration::from_secs(8));
        }
    });
    let m = observe(s.addr(), &["--no-udp", "--idle-timeout", "2"]);
    assert_ends(&m, 6, "the server stopped sending");
    assert!(events(&m).iter().any(|e| e["type"] == "accept"), "{}", m.describe());

    // Accepted, then one byte a second of a message that never completes.
    let s = StandIn::spawn(|mut c| {
        if c.read_header() && c.send(&hello(1)) && c.accept(&small_world(), 1) {
            for byte in server_chat(&"z".repeat(100)) {
                if !c.send(&[byte]) {
                    return;
                }
                thread::sleep(Duration::from_secs(1));
            }
        }
    });
    assert_ends(&observe(s.addr(), &["--no-udp", "--idle-timeout", "2"]), 6, "the server stopped sending");

    // A real bzfs with nobody else on it sends an observer the game time (1 s, then every 1.25 times longer, up
    // to 10 s) and lag pings: a 6 s limit does not fire in 15 s.
    let bzfs = Bzfs::start();
    let m = run_measured(
        &mut bzhead(["observe", "--no-cache", "--idle-timeout", "6", "--for", "15", &bzfs.host_port()]),
        WAIT * 3,
    );
    assert_eq!(m.out.code, Some(0), "{}", m.describe());
}

#[test]
fn worlds_that_claim_gigabytes_end_cleanly_in_bounded_memory() {
    // A first chunk that announces a 4 GiB world.
    let s = StandIn::spawn(|mut c| {
        if c.read_header() && c.send(&hello(1)) {
            let fake = small_world();
            // Answer every step but the world, whose first chunk lies about its size.
            let hash = bzhead::bzflag::session::md5_hex(&fake);
            while let Some((code, _)) = c.next(WAIT) {
                let ok = match &code {
                    b"nf" => c.send(&frame(b"nf", &[])),
                    b"ws" => c.send(&crate::support::standin::game_settings()),
                    b"wh" => {
                        let mut b = b"p".to_vec();
                        b.extend(hash.as_bytes());
                        b.push(0);
                        c.send(&frame(b"wh", &b))
                    }
                    b"gw" => {
                        let mut b = u32::MAX.to_be_bytes().to_vec();
                        b.extend([0x55; 1016]);
                        c.send(&frame(b"gw", &b))
                    }
                    _ => true,
                };
                if !ok {
                    return;
                }
            }
        }
    });
    let m = observe(s.addr(), &["--no-udp"]);
    assert_ends(&m, 6, "the server announced a 4294967295-byte world");

    // The observer does not model the world: the zlib bombs are downloaded (MD5-checked) and the game is watched.
    for (name, blob) in [("instance bomb", instance_bomb()), ("nested bomb", nested_bomb())] {
        let s = world_server(blob.clone());
        let m = observe(s.addr(), &["--no-udp", "--for", "1"]);
        assert_eq!(m.out.code, Some(0), "{name}: {}", m.describe());
        let ev = events(&m);
        assert!(
            ev.iter().any(|e| e["type"] == "world" && e["bytes"] == blob.len()),
            "{name} was downloaded:\n{}",
            m.describe()
        );
        assert!(m.max_rss_kib < MEMORY_LIMIT_KIB, "{name}: {}", m.describe());
    }

    // `bzhead world` parses what it fetched: sizes and counts that claim gigabytes are refused before anything
    // is allocated for them.
    for (blob, says) in
        [(envelope_claiming_4_gib(), "uncompressed size"), (count_claiming_4_billion(), "material count")]
    {
        let s = world_server(blob);
        let a = s.addr().to_string();
        let m = run_measured(&mut bzhead(["world", "--no-cache", "--timeout", "5", &a]), WAIT);
        assert_ends(&m, 6, says);
    }
}

/// World bombs that the observer downloads (above) are refused by the commands that model the world, in
/// bounded memory, with exit code 6. The 64 MiB of group instances is refused by the parser as it reads the
/// instance count, before decoding any (a database may hold at most `MAX_GROUP_INSTANCES`, 2^17; decoded, each
/// would take about 200 bytes, twelve times its size on the wire). The 120-byte blob of nested groups parses
/// in a few hundred bytes, and the model counts what its instances would expand to (a billion boxes) before
/// expanding any and refuses it ("group instances would expand the world to 1000000000 obstacles, over the
/// limit of ..."). `bzhead bot` stops its bots and exits with 6, saying the world cannot be modelled, instead
/// of waiting for a world it can play on.
#[test]
fn world_bombs_are_refused_by_the_world_command_and_the_bots_in_bounded_memory() {
    const LIMIT_KIB: u64 = 256 * 1024;
    let mut failures = Vec::new();
    for (name, blob) in [("instance bomb", instance_bomb()), ("nested bomb", nested_bomb())] {
        let s = world_server(blob.clone());
        let a = s.addr().to_string();
        let m = run_measured(&mut bzhead(["world", "--no-cache", "--timeout", "10", &a]), WAIT * 3);
        if m.out.code != Some(6) || m.max_rss_kib >= LIMIT_KIB {
            failures.push(format!("bzhead world, {name}: {}", m.describe()));
        }
        let s = world_server(blob);
        let a = s.addr().to_string();
        let m = run_measured(&mut bzhead(["bot", "sitter", "--for", "10", &a]), WAIT * 3);
        if m.out.code != Some(6) || m.max_rss_kib >= LIMIT_KIB || !m.out.stderr.contains("world") {
            failures.push(format!("bzhead bot, {name}: {}", m.describe()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// 64 MiB of empty texture matrices (the most the client inflates): 13.4 million records of 5 bytes, a 300 KiB
/// blob. Decoded, each would take about 100 bytes, 1.3 GB in all.
fn texture_matrix_bomb() -> Vec<u8> {
    const CAP: usize = 64 * 1024 * 1024;
    let db = database(group("", 0, &[]), &[]);
    let n = (CAP - db.len()) / 5;
    let mut v = db[..4].to_vec(); // no dynamic colours
    v.extend((n as u32).to_be_bytes());
    v.resize(v.len() + 5 * n, 0); // each an empty name and no matrices
    v.extend_from_slice(&db[8..]);
    assert!(v.len() <= CAP);
    envelope(&v, v.len() as u32)
}

/// Records that are a few bytes on the wire and a hundred in memory are refused by the decoder's budget for the
/// decoded world (`MAX_DECODED_SIZE`, 128 MiB) when their count is read, before any is decoded: `bzhead world`
/// exits with 6 saying so, in bounded memory (before the budget it decoded this blob in 1.3 GB and printed it).
#[test]
fn world_texture_matrix_bomb_is_refused_at_the_decoded_size_limit_in_bounded_memory() {
    const LIMIT_KIB: u64 = 256 * 1024;
    let s = world_server(texture_matrix_bomb());
    let a = s.addr().to_string();
    let m = run_measured(&mut bzhead(["world", "--no-cache", "--timeout", "10", &a]), WAIT * 3);
    assert!(!m.out.timed_out, "bzhead did not end by itself:\n{}", m.describe());
    assert_eq!(m.out.code, Some(6), "{}", m.describe());
    assert!(m.max_rss_kib < LIMIT_KIB, "peak memory above {LIMIT_KIB} KiB:\n{}", m.describe());
    for says in ["over the 134217728-byte (128 MiB) limit for a decoded world", "(texture matrices, offset 4)"] {
        assert!(m.out.stderr.contains(says), "stderr should say {says:?}:\n{}", m.describe());
    }
}

/// How long the flood test floods.
const FLOOD: Duration = Duration::from_secs(10);

#[test]
fn a_flood_of_messages_over_tcp_and_udp_keeps_memory_bounded_and_the_leave_clean() {
    let left = Arc::new(AtomicBool::new(false));
    let left2 = left.clone();
    let s = StandIn::spawn_with_udp(move |mut c, udp| {
        if !(c.read_header() && c.send(&hello(1))) {
            return;
        }
        // Bring up the UDP link: the client's MsgUDPLinkRequest, our TCP MsgUDPLinkEstablished and UDP probe.
        udp.set_read_timeout(Some(Duration::from_secs(5))).ok();
        let mut buf = [0u8; 64];
        let Ok((_, client_udp)) = udp.recv_from(&mut buf) else { return };
        c.send(&frame(b"og", &[]));
        let _ = udp.send_to(&frame(b"of", &[]), client_udp);
        if !c.accept(&small_world(), 1) {
            return;
        }
        // A reader that notices the client's MsgExit while we write.
        let mut reader = Conn::from_stream(c.stream.try_clone().expect("clone"));
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let left3 = left2.clone();
        thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                match reader.next(Duration::from_millis(200)) {
                    Some((code, _)) if &code == b"ex" => {
                        left3.store(true, Ordering::Relaxed);
                        stop2.store(true, Ordering::Relaxed);
                    }
                    Some(_) => {}
                    None if reader.closed() => stop2.store(true, Ordering::Relaxed),
                    None => {}
                }
            }
        });
        // UDP: shots with endless lifetimes and updates for every player id.
        let stop_udp = stop.clone();
        thread::spawn(move || {
            let mut i: u32 = 0;
            while !stop_udp.load(Ordering::Relaxed) {
                i = i.wrapping_add(1);
                let shot = ServerMsg::ShotBegin(FiringInfo {
                    time_sent: 1.0,
                    shooter: (i % 200) as u8,
                    shot_id: (i % 65_536) as u16,
                    pos: [0.0, 0.0, 1.0],
                    vel: [100.0, 0.0, 0.0],
                    dt: 0.0,
                    team: Team::Red,
                    flag: Abbv::NONE,
                    lifetime: 1.0e9,
                });
                let _ = udp.send_to(&shot.encode(), client_udp);
                let update = ServerMsg::PlayerUpdate(PlayerUpdate {
                    small: false,
                    timestamp: i as f32,
                    id: (i % 200) as u8,
                    order: i as i32,
                    status: PlayerStatus::ALIVE,
                    pos: [1.0, 2.0, 0.0],
                    vel: [0.0; 3],
                    azimuth: 0.0,
                    ang_vel: 0.0,
                    jump_jets: 0.0,
                    phydrv: -1,
                    user_inputs: (0.0, 0.0),
                    sounds: 0,
                });
                let _ = udp.send_to(&update.encode(), client_udp);
            }
        });
        // TCP: joins and leaves of every id, new variables, flags at every index, chat, unknown codes.
        let mut i: u32 = 0;
        let deadline = Instant::now() + FLOOD + WAIT;
        while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
            let mut b = Vec::with_capacity(64 * 1024);
            for _ in 0..64 {
                i = i.wrapping_add(1);
                let id = (i % 250) as u8;
                b.extend(add_player(id, 1, &format!("flood{i}")));
                b.extend(ServerMsg::SetVar { vars: vec![(format!("_flood{i}"), format!("{i} * 2"))] }.encode());
                let flag = FlagInfo {
                    abbv: Abbv::new("GM"),
                    status: FlagStatus::OnGround,
                    endurance: 1,
                    owner: 255,
                    position: [i as f32, 0.0, 0.0],
                    launch: [0.0; 3],
                    landing: [0.0; 3],
                    flight_time: 0.0,
                    flight_end: 0.0,
                    initial_velocity: 0.0,
                };
                b.extend(ServerMsg::FlagUpdate { flags: vec![((i % 65_536) as u16, flag)] }.encode());
                b.extend(server_chat(&format!("flood line {i}")));
                b.extend(frame(b"zz", &[1, 2, 3]));
                b.extend(frame(b"rp", &[id]));
            }
            if !c.send(&b) {
                break;
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    // Ten seconds, long enough for a flood to show memory that grows with its length: the reactor used to read a
    // flooded socket once more every turn (its backlog gained an entry each turn), so the events of a turn, and the
    // event queues holding them, grew with the flood (82 MB after 10 s in a debug build; now about 13 MB whatever
    // the length).
    let m = observe_for(s.addr(), FLOOD, &[]);
    assert_eq!(m.out.code, Some(0), "{}", m.describe());
    let ev = events(&m);
    let lines = ev.iter().filter(|e| e["type"] == "chat").count();
    assert!(lines > 1000, "the flood reached the output ({lines} chat lines):\n{}", m.out.stderr);
    assert!(ev.iter().any(|e| e["type"] == "udp_link" && e["up"] == true), "the UDP link came up");
    assert!(m.max_rss_kib < MEMORY_LIMIT_KIB, "peak {} KiB after {lines} chat lines", m.max_rss_kib);
    let deadline = Instant::now() + WAIT;
    while !left.load(Ordering::Relaxed) && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    assert!(left.load(Ordering::Relaxed), "the stand-in saw MsgExit despite the flood");
    eprintln!("flood: {lines} chat lines printed, peak {} KiB", m.max_rss_kib);
}

#[test]
fn the_world_cache_directory_is_never_escaped_by_a_hostile_hash() {
    // The hash names the cache file: a server that sends a path instead of 32 hex digits gets the world
    // downloaded and nothing written outside the cache directory.
    let dir = TempDir::new("hostile-cache");
    let cache = dir.join("cache");
    let outside = dir.join("escaped");
    let world = small_world();
    let evil = format!("../escaped/{}", "a".repeat(22));
    let s = StandIn::spawn(move |mut c| {
        if !(c.read_header() && c.send(&hello(1))) {
            return;
        }
        while let Some((code, body)) = c.next(WAIT) {
            let ok = match &code {
                b"nf" => c.send(&frame(b"nf", &[])),
                b"ws" => c.send(&crate::support::standin::game_settings()),
                b"wh" => {
                    let mut b = b"p".to_vec();
                    b.extend(evil.as_bytes());
                    b.push(0);
                    c.send(&frame(b"wh", &b))
                }
                b"gw" => {
                    let offset = u32::from_be_bytes([body[0], body[1], body[2], body[3]]) as usize;
                    let chunk = &world[offset.min(world.len())..];
                    let chunk = &chunk[..chunk.len().min(1016)];
                    let left = if offset + chunk.len() >= world.len() { 0 } else { (world.len() - offset) as u32 };
                    let mut b = left.to_be_bytes().to_vec();
                    b.extend(chunk);
                    c.send(&frame(b"gw", &b))
                }
                b"en" => c.send(&frame(b"ac", &[1])),
                b"ex" => return,
                _ => true,
            };
            if !ok {
                return;
            }
        }
    });
    let a = s.addr().to_string();
    let m = run_measured(
        &mut bzhead(["observe", "--json", "--no-udp", "--for", "1", "--cache-dir", cache.to_str().unwrap(), &a]),
        WAIT,
    );
    assert_eq!(m.out.code, Some(0), "{}", m.describe());
    assert!(events(&m).iter().any(|e| e["type"] == "warning"), "the bad hash is warned about:\n{}", m.describe());
    assert!(!outside.exists(), "something was written to {}", outside.display());
}
