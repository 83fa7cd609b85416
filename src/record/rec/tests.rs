use super::*;
use crate::bzflag::consts::{PlayerType, Team};
use crate::bzflag::msg::{FlagInfo, GameSettings};
use std::path::Path;
use std::time::Instant;

fn settings_frame() -> Vec<u8> {
    ServerMsg::GameSettings(GameSettings {
        world_size: 800.0,
        game_type: 1,
        game_options: 0,
        max_players: 216,
        max_shots: 1,
        num_flags: 2,
        linear_acceleration: 0.0,
        angular_acceleration: 0.0,
        shake_timeout: 0,
        shake_wins: 0,
        sync_time: 0,
    })
    .encode()
}

fn red_flag() -> FlagInfo {
    FlagInfo {
        abbv: crate::bzflag::msg::Abbv::new("R*"),
        status: crate::bzflag::consts::FlagStatus::OnGround,
        endurance: 0,
        owner: 255,
        position: [1.0, 2.0, 0.0],
        launch: [0.0; 3],
        landing: [0.0; 3],
        flight_time: 0.0,
        flight_end: 0.0,
        initial_velocity: 0.0,
    }
}

fn add(id: u8, team: Team, name: &str) -> ServerMsg {
    ServerMsg::AddPlayer {
        id,
        player_type: PlayerType::Tank,
        team,
        wins: 0,
        losses: 0,
        team_kills: 0,
        callsign: name.into(),
        motto: String::new(),
    }
}

fn header(world: &[u8]) -> RecHeader {
    RecHeader {
        version: REC_VERSION,
        offset: 0,
        file_time_us: 5_000_000,
        player: SERVER_RECORDER,
        callsign: "SERVER".into(),
        motto: String::new(),
        server_version: "BZFS0221".into(),
        app_version: "2.4.26.20230103-MAINT-linux-gnu-SDL2".into(),
        hash: format!("t{}", md5_hex(world)),
        settings: settings_frame(),
        flags: b"R*G*".to_vec(),
        world: world.to_vec(),
        shifted: false,
    }
}

/// A short match as bzfs records it: a state block (variables, teams, a flag, two players, one alive), then a
/// spawn, chat, a kill, a hidden command and a second state block.
fn sample() -> Vec<u8> {
    let world = b"a small pretend world".to_vec();
    let mut out = header(&world).encode();
    let mut pos = out.len() as u64;
    let mut prev = 0;
    let mut t = 1_700_000_000_000_000i64;
    let mut msgs: Vec<(Mode, Option<ServerMsg>)> = vec![
        (Mode::Update, None),
        (Mode::State, Some(ServerMsg::SetVar { vars: vec![("_gravity".into(), "-9.8".into())] })),
        (Mode::State, Some(ServerMsg::FlagUpdate { flags: vec![(0, red_flag())] })),
        (Mode::State, Some(add(0, Team::Red, "alice"))),
        (Mode::State, Some(add(1, Team::Green, "bob"))),
        (Mode::State, Some(ServerMsg::Alive { id: 0, pos: [0.0; 3], azimuth: 0.0 })),
        (Mode::Real, Some(ServerMsg::GameTime { usec: 1 })),
        (Mode::Real, Some(ServerMsg::Alive { id: 1, pos: [10.0, 0.0, 0.0], azimuth: 1.0 })),
        (Mode::Real, Some(ServerMsg::Message { from: 0, to: player::ALL_PLAYERS, kind: 0, text: "hi".into() })),
        (
            Mode::Real,
            Some(ServerMsg::Killed {
                victim: 1,
                killer: 0,
                reason: 1,
                shot_id: 2,
                flag: Default::default(),
                phydrv: None,
            }),
        ),
        (
            Mode::Hidden,
            Some(ServerMsg::Message { from: 0, to: player::SERVER, kind: 0, text: "/record save x".into() }),
        ),
        (Mode::Update, None),
        (Mode::State, Some(add(0, Team::Red, "alice"))),
        (Mode::Real, Some(ServerMsg::Message { from: 1, to: player::ALL_PLAYERS, kind: 0, text: "gg".into() })),
    ];
    for (mode, m) in msgs.drain(..) {
        let (code, body) = match &m {
            Some(m) => (m.code(), m.encode()[4..].to_vec()),
            None => (0, Vec::new()),
        };
        let at = out.len() as u64;
        assert_eq!(at, pos);
        encode_packet(&mut out, pos, prev, mode, code, t, &body);
        prev = pos;
        pos = out.len() as u64;
        t += 250_000;
    }
    out
}

fn replay_bytes(bytes: &[u8]) -> Result<Vec<(Duration, Event)>, RecordError> {
    let (h, r) = RecReader::new(bytes)?;
    let mut events = Vec::new();
    match replay_rec(&h, r, |t, e| events.push((t, e))) {
        (_, Some(e)) => Err(e),
        (_, None) => Ok(events),
    }
}

fn kinds(events: &[(Duration, Event)]) -> Vec<&'static str> {
    events.iter().map(|(_, e)| e.kind()).collect()
}

#[test]
fn a_bzfs_style_recording_replays_as_a_viewer_sees_it() {
    let events = replay_bytes(&sample()).unwrap();
    let k = kinds(&events);
    // The join from the header, then the first state block, then the real packets; the hidden command and the
    // second block's state packets are not played.
    assert_eq!(k.iter().filter(|k| **k == "join").count(), 2, "{k:?}");
    assert_eq!(k.iter().filter(|k| **k == "kill").count(), 1, "{k:?}");
    let chats: Vec<String> = events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Chat { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(chats, ["hi", "gg"]);
    assert!(k.contains(&"world") && k.contains(&"accept"), "{k:?}");
    assert!(!k.contains(&"warning"), "{events:?}");
    // Times from the first packet.
    let kill_t = events.iter().find(|(_, e)| e.kind() == "kill").map(|(t, _)| *t).unwrap();
    assert_eq!(kill_t, Duration::from_millis(9 * 250));
}

#[test]
fn the_header_round_trips_and_the_shifted_2_4_12_header_is_read() {
    let world = b"w".to_vec();
    let h = header(&world);
    let (back, _) = RecReader::new(&h.encode()[..]).unwrap();
    assert_eq!(RecHeader { offset: back.offset, ..h.clone() }, back);
    assert_eq!(back.offset as usize, HEADER_LEN + 4 + 1);
    // bzfs 2.4.12–2.4.14: application version 114 bytes, then the hash and settings, then 14 bytes of junk.
    let mut b = h.encode();
    let mut fixed_part = b[..200].to_vec();
    let mut app = h.app_version.as_bytes().to_vec();
    app.resize(114, 0);
    fixed_part.extend_from_slice(&app);
    let mut hash = h.hash.as_bytes().to_vec();
    hash.resize(64, 0);
    fixed_part.extend_from_slice(&hash);
    fixed_part.extend_from_slice(&h.settings);
    fixed_part.extend_from_slice(&[0xAA; 14]);
    assert_eq!(fixed_part.len(), HEADER_LEN);
    b.splice(..HEADER_LEN, fixed_part);
    let (back, _) = RecReader::new(&b[..]).unwrap();
    assert!(back.shifted);
    assert_eq!(back.hash, h.hash);
    assert_eq!(back.app_version, h.app_version);
    assert_eq!(back.settings, h.settings);
}

#[test]
fn every_cut_replays_up_to_the_cut_without_a_panic() {
    let full = sample();
    let (h, packets) = parse_rec(&full).unwrap();
    let body_start = HEADER_LEN + h.flags.len() + h.world.len();
    let full_events = replay_bytes(&full).unwrap().len();
    let mut last = 0;
    for cut in 0..=full.len() {
        let r = replay_bytes(&full[..cut]);
        if cut < body_start {
            let e = r.expect_err("a cut header is an error");
            assert!(e.to_string().contains("cut short") || e.to_string().contains("magic"), "{e}");
            continue;
        }
        let events = r.unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        // Never fewer events for a longer file, and the packets read are those wholly before the cut.
        assert!(events.len() >= last, "cut at {cut}");
        last = events.len();
        let (_, mut reader) = RecReader::new(&full[..cut]).unwrap();
        let whole = std::iter::from_fn(|| reader.next_packet().unwrap()).count();
        let expect = packets.iter().filter(|p| p.pos as usize + PACKET_HEAD + p.data.len() <= cut).count();
        assert_eq!(whole, expect, "cut at {cut}");
        assert_eq!(reader.truncated(), cut != full.len() && !packets.iter().any(|p| p.pos as usize == cut), "{cut}");
    }
    assert_eq!(last, full_events);
}

#[test]
fn lying_lengths_loops_and_world_bombs_are_errors() {
    let full = sample();
    let (h, packets) = parse_rec(&full).unwrap();
    let p = &packets[3];
    // A packet length past bzfs's limit.
    let mut b = full.clone();
    b[p.pos as usize + 4..p.pos as usize + 8].copy_from_slice(&70_000u32.to_be_bytes());
    let e = parse_rec(&b).unwrap_err().to_string();
    assert!(e.contains("claims 70000 bytes"), "{e}");
    // A next link that points back at the first packet (a loop for a reader that follows links).
    let mut b = full.clone();
    b[p.pos as usize + 8..p.pos as usize + 12].copy_from_slice(&(packets[0].pos as u32).to_be_bytes());
    let e = parse_rec(&b).unwrap_err().to_string();
    assert!(e.contains("loop"), "{e}");
    // A previous link that is wrong.
    let mut b = full.clone();
    b[p.pos as usize + 12..p.pos as usize + 16].copy_from_slice(&7u32.to_be_bytes());
    assert!(parse_rec(&b).unwrap_err().to_string().contains("previous"));
    // A world of 4 GiB announced in a 1 KiB file: refused before anything is read.
    let mut b = full.clone();
    b[28..32].copy_from_slice(&u32::MAX.to_be_bytes());
    let e = parse_rec(&b).unwrap_err().to_string();
    assert!(e.contains("world of 4294967295 bytes"), "{e}");
    // A world of 30 MiB announced (under the cap) in a short file: cut short, memory as the file.
    let mut b = full.clone();
    b[28..32].copy_from_slice(&(30u32 << 20).to_be_bytes());
    assert!(parse_rec(&b).unwrap_err().to_string().contains("world is cut short"));
    // Flag types beyond the cap.
    let mut b = full.clone();
    b[24..28].copy_from_slice(&100_000u32.to_be_bytes());
    assert!(parse_rec(&b).unwrap_err().to_string().contains("flag types"));
    // Settings that are not a settings frame.
    let mut bad = h.clone();
    bad.settings = vec![0; SETTINGS_FRAME_LEN];
    let mut b = bad.encode();
    b.extend_from_slice(&full[HEADER_LEN + h.flags.len() + h.world.len()..]);
    // The packets' positions are unchanged (same header size).
    assert!(replay_bytes(&b).unwrap_err().to_string().contains("MsgGameSettings"));
    // Not a recording at all.
    assert!(parse_rec(b"BZHREC01....").unwrap_err().to_string().contains("rrBZ"));
}

#[test]
fn viewer_state_machine_is_bzfs_s() {
    use Mode::*;
    let mut v = Viewer::None;
    let mut sent = Vec::new();
    for m in [Real, Update, State, Hidden, Real, State, Update, State, Real] {
        let (n, s) = v.step(m);
        v = n;
        sent.push(s);
    }
    assert_eq!(sent, [false, false, true, false, true, false, false, false, true]);
}

/// `fuzz/seeds/rec-match-SYNTHETIC.rec` (the `rec_file` fuzz target's seed) is this sample; `BZHEAD_WRITE_SEEDS=1`
/// writes it again.
#[test]
fn the_fuzz_seed_is_the_sample() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/rec-match-SYNTHETIC.rec");
    if std::env::var_os("BZHEAD_WRITE_SEEDS").is_some() {
        std::fs::write(&path, sample()).unwrap();
    }
    assert_eq!(std::fs::read(&path).unwrap(), sample());
}

/// A server's TCP stream to an observer, as the writer sees it: the hello, the handshake, the world in one chunk,
/// the accept and the join burst at `t0`, then play from 0.6 s on: a spawn, a lag ping, the MOTD to the observer,
/// chat to all, a kill, chat to a team, and a second kill 11 s later (after which a state block is due).
fn observer_stream() -> Vec<(Duration, Vec<u8>)> {
    let world = b"a small pretend world".to_vec();
    let mut out = Vec::new();
    let at = Duration::from_millis;
    let mut hello = SERVER_VERSION.to_vec();
    hello.push(7);
    let mut join = hello;
    for m in [
        ServerMsg::NegotiateFlags { missing: Vec::new() },
        ServerMsg::WantWHash { kind: b't', hash: md5_hex(&world) },
        ServerMsg::GetWorld { bytes_left: 0, data: world.clone() },
        ServerMsg::Accept { id: 7 },
        ServerMsg::SetVar { vars: vec![("_gravity".into(), "-9.8".into())] },
        ServerMsg::FlagUpdate { flags: vec![(0, red_flag())] },
    ] {
        join.extend_from_slice(&m.encode());
    }
    join.splice(9..9, settings_frame());
    for (id, team, name) in [(0, Team::Red, "alice"), (1, Team::Green, "bob"), (7, Team::Observer, "rec")] {
        join.extend_from_slice(&add(id, team, name).encode());
    }
    out.push((at(0), join));
    let kill = |victim, killer| ServerMsg::Killed {
        victim,
        killer,
        reason: 1,
        shot_id: 1,
        flag: Default::default(),
        phydrv: None,
    };
    let chat = |to, text: &str| ServerMsg::Message { from: 0, to, kind: 0, text: text.into() };
    for (t, m) in [
        (600, ServerMsg::Alive { id: 0, pos: [1.0, 2.0, 0.0], azimuth: 0.5 }),
        (700, ServerMsg::LagPing { seq: 1 }),
        (800, ServerMsg::Message { from: player::SERVER, to: 7, kind: 0, text: "welcome (MOTD)".into() }),
        (900, chat(player::ALL_PLAYERS, "hi all")),
        (1000, kill(1, 0)),
        (1100, chat(250, "team only")),
        (12_000, kill(0, 1)),
    ] {
        out.push((at(t), m.encode()));
    }
    out
}

fn write_observer_rec(path: &Path, max_bytes: u64) -> Vec<u8> {
    let start = Instant::now();
    let meta = super::super::Meta::new("127.0.0.1:5154", &SessionConfig::default());
    let mut w = super::super::RecWriter::create(path, &meta, start).unwrap().with_max_bytes(max_bytes);
    for (t, bytes) in observer_stream() {
        // Split in two to check reassembly across reads.
        let (a, b) = bytes.split_at(bytes.len() / 2);
        w.record(super::super::Kind::TcpIn, start + t, a);
        w.record(super::super::Kind::TcpIn, start + t, b);
    }
    w.finish(start + Duration::from_secs(13)).unwrap();
    std::fs::read(path).unwrap()
}

#[test]
fn the_writer_keeps_what_a_viewer_needs_and_leaves_out_what_was_for_the_observer() {
    let path = std::env::temp_dir().join(format!("bzhead-rec-writer-{}.rec", std::process::id()));
    let bytes = write_observer_rec(&path, u64::MAX);
    let _ = std::fs::remove_file(&path);
    let (h, packets) = parse_rec(&bytes).unwrap();
    assert_eq!(h.player, 7);
    assert_eq!(h.world, b"a small pretend world");
    assert_eq!(h.hash, format!("t{}", md5_hex(&h.world)));
    assert_eq!(h.settings, settings_frame());
    assert!(h.flags.is_empty(), "team flags are not listed: {:?}", h.flags);
    assert!(h.file_time_us >= 11_000_000, "{}", h.file_time_us);
    // Two state blocks: the first, and one 10 s later (before the second kill).
    let markers: Vec<usize> =
        packets.iter().enumerate().filter(|(_, p)| p.mode == Mode::Update).map(|(i, _)| i).collect();
    assert_eq!(markers.len(), 2, "{packets:?}");
    assert_eq!(packets[0].mode, Mode::Update);
    let codes = |m: Mode| packets.iter().filter(|p| p.mode == m).map(|p| p.code).collect::<Vec<_>>();
    assert!(!codes(Mode::Real).contains(&code::LAG_PING) && !codes(Mode::Real).contains(&code::ACCEPT));
    assert_eq!(codes(Mode::Hidden), [code::MESSAGE], "team chat is hidden");
    let events = replay_bytes(&bytes).unwrap();
    let chats: Vec<String> = events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Chat { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(chats, ["hi all"], "no MOTD, no team chat");
    assert_eq!(events.iter().filter(|(_, e)| e.kind() == "kill").count(), 2);
    assert_eq!(events.iter().filter(|(_, e)| e.kind() == "join").count(), 3, "{events:?}");
    assert!(!events.iter().any(|(_, e)| e.kind() == "warning"), "{events:?}");
    // The second kill, 11.4 s after the first state block (written at 0.6 s).
    let last_kill = events.iter().rev().find(|(_, e)| e.kind() == "kill").map(|(t, _)| *t).unwrap();
    assert_eq!(last_kill, Duration::from_millis(11_400));
    // A cap: the header and the first state block are written, then it stops at a whole packet.
    let path = std::env::temp_dir().join(format!("bzhead-rec-writer-cap-{}.rec", std::process::id()));
    let capped = write_observer_rec(&path, (bytes.len() / 2) as u64);
    let _ = std::fs::remove_file(&path);
    let first_block_end = packets[markers[1]].pos as usize;
    assert!(capped.len() < first_block_end, "{} of {}", capped.len(), bytes.len());
    assert!(capped.len() > HEADER_LEN, "{} of {}", capped.len(), bytes.len());
    // Whole packets, the first ones of the uncapped file (times aside: each run has its own clock).
    let (_, kept) = parse_rec(&capped).unwrap();
    assert!(!kept.is_empty());
    let key = |p: &RecPacket| (p.mode, p.code, p.pos, p.data.clone());
    assert_eq!(kept.iter().map(key).collect::<Vec<_>>(), packets[..kept.len()].iter().map(key).collect::<Vec<_>>());
    let end = kept.last().map(|p| p.pos as usize + PACKET_HEAD + p.data.len());
    assert_eq!(end, Some(capped.len()));
}
