use super::*;
use crate::bzflag::consts::{code, FlagStatus, PlayerStatus, PlayerType, RejectCode, Team};
use crate::wire::DecodeErrorKind;

fn flag() -> FlagInfo {
    FlagInfo {
        abbv: Abbv::new("SW"),
        status: FlagStatus::InAir,
        endurance: 1,
        owner: 3,
        position: [1.0, 2.0, 3.0],
        launch: [4.0, 5.0, 6.0],
        landing: [7.0, 8.0, 0.0],
        flight_time: 0.5,
        flight_end: 3.0,
        initial_velocity: 14.5,
    }
}

fn update(small: bool, status: PlayerStatus) -> PlayerUpdate {
    PlayerUpdate {
        small,
        timestamp: 8.25,
        id: 1,
        order: 42,
        status,
        pos: [-325.5, 12.75, 0.5],
        vel: [19.75, 3.25, 0.0],
        azimuth: 0.25,
        ang_vel: 0.5,
        jump_jets: if status.contains(PlayerStatus::JUMP_JETS) { 0.5 } else { 0.0 },
        phydrv: if status.contains(PlayerStatus::ON_DRIVER) { 7 } else { -1 },
        user_inputs: if status.contains(PlayerStatus::USER_INPUTS) { (12.5, 0.25) } else { (0.0, 0.0) },
        sounds: if status.contains(PlayerStatus::PLAY_SOUND) { 1 } else { 0 },
    }
}

fn firing() -> FiringInfo {
    FiringInfo {
        time_sent: 7.942,
        shooter: 2,
        shot_id: 0x0100,
        pos: [-300.466, 16.995, 1.57],
        vel: [-98.749, -15.766, 0.0],
        dt: 0.0,
        team: Team::Green,
        flag: Abbv::NONE,
        lifetime: 3.5,
    }
}

fn shot_update() -> ShotUpdate {
    ShotUpdate { shooter: 253, shot_id: 4, pos: [1.0, 2.0, 3.0], vel: [4.0, 5.0, 6.0], dt: 0.25, team: Team::Rogue }
}

/// A world cache's address (`MsgCacheURL`).
const WORLD_URL: &str = "http://example.invalid/world.bwc";
/// A resource's address (`MsgFetchResources`).
const RESOURCE_URL: &str = "http://x.invalid/a.png";

/// One of every message a server sends (of every form, for the messages that have several), in code groups.
pub(crate) fn all_server_msgs() -> Vec<ServerMsg> {
    [join_msgs(), roster_msgs(), world_msgs(), play_msgs()].concat()
}

/// The join's answers.
fn join_msgs() -> Vec<ServerMsg> {
    use ServerMsg as M;
    vec![
        M::Accept { id: 7 },
        M::Reject { code: RejectCode::RepeatCallsign, reason: "The callsign specified is already in use.".into() },
        M::SuperKill,
    ]
}

/// The roster: variables, teams, flags, players, scores and the clock.
fn roster_msgs() -> Vec<ServerMsg> {
    use ServerMsg as M;
    vec![
        M::SetVar {
            vars: vec![("_tankSpeed".into(), "25.0".into()), ("_reloadTime".into(), "_shotRange / _shotSpeed".into())],
        },
        M::TeamUpdate {
            teams: vec![
                TeamInfo { team: Team::Rogue, size: 0, wins: 0, losses: 0 },
                TeamInfo { team: Team::Red, size: 1, wins: 2, losses: 3 },
            ],
        },
        M::FlagUpdate { flags: vec![(4, flag()), (5, FlagInfo { abbv: Abbv::new("R*"), ..flag() })] },
        M::AddPlayer {
            id: 1,
            player_type: PlayerType::Tank,
            team: Team::Red,
            wins: 1,
            losses: 2,
            team_kills: 3,
            callsign: "alice".into(),
            motto: "bzhead capture".into(),
        },
        M::RemovePlayer { id: 2 },
        M::PlayerInfo { players: vec![(0, 0), (1, 3)] },
        M::AdminInfo { players: vec![server::AdminEntry { id: 1, ip_version: 4, addr: vec![127, 0, 0, 1] }] },
        M::Score { scores: vec![server::ScoreEntry { id: 1, wins: 5, losses: 6, team_kills: 1 }] },
        M::Handicap { players: vec![(1, -5), (2, 30)] },
        M::ScoreOver { player: 255, team: Team::Red },
        M::TimeUpdate { seconds: -1 },
        M::GameTime { usec: 1_795_301_902_953_719 },
    ]
}

/// Settings, the world, and flag types.
fn world_msgs() -> Vec<ServerMsg> {
    use ServerMsg as M;
    vec![
        M::GameSettings(GameSettings {
            world_size: 800.0,
            game_type: 1,
            game_options: 0x3a,
            max_players: 216,
            max_shots: 3,
            num_flags: 11,
            linear_acceleration: 0.0,
            angular_acceleration: 0.0,
            shake_timeout: 0,
            shake_wins: 0,
            sync_time: 0,
        }),
        M::WantWHash { kind: b't', hash: "a4f58da93d7bf49df9ef31cee06c2c59".into() },
        M::CacheUrl { url: WORLD_URL.into() },
        M::GetWorld { bytes_left: 2127, data: vec![1, 2, 3, 4, 5] },
        M::NegotiateFlags { missing: vec![Abbv::new("XX"), Abbv::new("Y")] },
        M::FlagType { abbv: Abbv::new("CF"), quality: 0, shot_type: 1, name: "Custom".into(), help: "help".into() },
    ]
}

/// Play: spawns, kills, flags, moves, shots, chat, queries and the rest.
fn play_msgs() -> Vec<ServerMsg> {
    use ServerMsg as M;
    let all = PlayerStatus::ALIVE
        | PlayerStatus::FALLING
        | PlayerStatus::JUMP_JETS
        | PlayerStatus::ON_DRIVER
        | PlayerStatus::USER_INPUTS
        | PlayerStatus::PLAY_SOUND;
    vec![
        M::Alive { id: 1, pos: [-362.081, 7.157, 0.0], azimuth: 0.158 },
        M::Killed { victim: 1, killer: 2, reason: 1, shot_id: 256, flag: Abbv::NONE, phydrv: None },
        M::Killed { victim: 1, killer: 1, reason: 0x7064, shot_id: -1, flag: Abbv::NONE, phydrv: Some(3) },
        M::GrabFlag { player: 1, index: 1, flag: flag() },
        M::DropFlag { player: 1, index: 4, flag: flag() },
        M::CaptureFlag { player: 1, index: 1, team: Team::Red },
        M::TransferFlag { from: 1, to: 2, index: 3, flag: flag() },
        M::NearFlag { pos: [1.0, 2.0, 3.0], name: "Shock Wave".into() },
        M::Teleport { player: 0, from: 0, to: 3 },
        M::Message { from: 253, to: 0, kind: 0, text: "You are in observer mode.".into() },
        M::Pause { player: 2, paused: true },
        M::AutoPilot { player: 2, on: false },
        M::NewRabbit { id: 4 },
        M::LagPing { seq: 1 },
        M::UdpLinkRequest,
        M::UdpLinkEstablished,
        M::PlayerUpdate(update(false, PlayerStatus::ALIVE)),
        M::PlayerUpdate(update(false, all)),
        M::PlayerUpdate(update(true, PlayerStatus::ALIVE)),
        M::PlayerUpdate(update(true, all)),
        M::ShotBegin(firing()),
        M::ShotEnd { shooter: 2, shot_id: 0x0100, reason: 1 },
        M::GmUpdate { shot: shot_update(), target: 255 },
        M::QueryGame(QueryGameInfo {
            game_type: 1,
            game_options: 0x3a,
            max_players: 20,
            team_max: [4; 6],
            ..Default::default()
        }),
        M::QueryPlayers { num_teams: 8, num_players: 0 },
        M::FetchResources { items: vec![(0, RESOURCE_URL.into())] },
        M::CustomSound { kind: 1, name: "boom".into() },
        M::ReplayReset { last_player: 3 },
        M::Reserved { code: code::LAG_STATE, body: vec![1, 2] },
        M::Unknown { code: 0x7a7a, body: vec![9, 9, 9] },
    ]
}

pub(crate) fn all_client_msgs() -> Vec<ClientMsg> {
    use ClientMsg as M;
    vec![
        M::Enter {
            player_type: PlayerType::Tank,
            team: Team::Observer,
            callsign: "watcher".into(),
            motto: "bzadmin".into(),
            token: "".into(),
            version: "2.4.26.20230103-MAINT-linux-gnu-SDL2".into(),
        },
        M::Exit,
        M::NegotiateFlags { flags: crate::bzflag::consts::KNOWN_FLAGS.iter().map(|f| Abbv::new(f)).collect() },
        M::WantSettings,
        M::WantWHash,
        M::GetWorld { offset: 1016 },
        M::QueryGame,
        M::QueryPlayers,
        M::Alive,
        M::Killed { killer: 2, reason: 1, shot_id: 256, flag: Abbv::NONE, phydrv: None },
        M::Killed { killer: 1, reason: 0x7064, shot_id: -1, flag: Abbv::NONE, phydrv: Some(2) },
        M::GrabFlag { index: 1 },
        M::DropFlag { pos: [1.0, 2.0, 0.0] },
        M::CaptureFlag { team: Team::Red },
        M::TransferFlag { from: 1, to: 253 },
        M::Teleport { from: 0, to: 3 },
        M::Message { to: 254, text: "hello from bzhead".into() },
        M::Pause { paused: true },
        M::AutoPilot { on: true },
        M::NewRabbit,
        M::LagPing { seq: 3 },
        M::UdpLinkRequest { id: 1 },
        M::UdpLinkEstablished,
        M::PlayerUpdate(update(false, PlayerStatus::ALIVE | PlayerStatus::ON_DRIVER)),
        M::PlayerUpdate(update(true, PlayerStatus::ALIVE | PlayerStatus::JUMP_JETS | PlayerStatus::PLAY_SOUND)),
        M::ShotBegin(firing()),
        M::ShotEnd { shooter: 2, shot_id: 256, reason: 1 },
        M::GmUpdate { shot: shot_update(), target: 1 },
        M::Unknown { code: 0x7a7a, body: vec![] },
    ]
}

/// emit → parse → emit gives the same bytes, and parse gives the same value (small player updates are
/// quantized, so for them the bytes are the reference).
fn check_round_trip<M: Message + PartialEq + std::fmt::Debug + Clone>(m: &M, exact: bool) {
    let bytes = m.encode();
    assert!(bytes.len() <= crate::bzflag::consts::MAX_PACKET_LEN);
    let parsed = M::decode(&bytes).unwrap_or_else(|e| panic!("{m:?}: {e}"));
    assert_eq!(parsed.encode(), bytes, "{m:?}");
    if exact {
        assert_eq!(&parsed, m);
    }
}

/// Player updates carry fixed-point fields (user inputs, jump jets, the whole small form), so their bytes are the
/// reference rather than their float values.
fn is_quantized(m: &ServerMsg) -> bool {
    matches!(m, ServerMsg::PlayerUpdate(_))
}

#[test]
fn every_server_message_round_trips() {
    let msgs = all_server_msgs();
    // Every 2.4 code a server sends is covered.
    for m in &msgs {
        check_round_trip(m, !is_quantized(m));
    }
}

#[test]
fn every_client_message_round_trips() {
    for m in &all_client_msgs() {
        check_round_trip(m, !matches!(m, ClientMsg::PlayerUpdate(_)));
    }
}

#[test]
fn every_truncation_is_a_typed_error() {
    for m in all_server_msgs() {
        let bytes = m.encode();
        let body = &bytes[4..];
        for cut in 0..body.len() {
            match ServerMsg::parse(m.code(), &body[..cut]) {
                // Variable-length texts and raw bodies may legitimately end anywhere.
                Ok(_) => assert!(
                    matches!(
                        m,
                        ServerMsg::Message { .. }
                            | ServerMsg::Reject { .. }
                            | ServerMsg::WantWHash { .. }
                            | ServerMsg::CacheUrl { .. }
                            | ServerMsg::GetWorld { .. }
                            | ServerMsg::NegotiateFlags { .. }
                            | ServerMsg::Reserved { .. }
                            | ServerMsg::Unknown { .. }
                            | ServerMsg::UdpLinkRequest
                            | ServerMsg::Killed { .. }
                    ),
                    "{m:?} cut at {cut} parsed"
                ),
                Err(e) => {
                    assert!(
                        matches!(
                            e.kind,
                            DecodeErrorKind::Truncated { .. }
                                | DecodeErrorKind::TooLong { .. }
                                | DecodeErrorKind::TrailingBytes { .. }
                        ),
                        "{m:?} cut at {cut}: {e}"
                    );
                    assert!(e.context.is_some());
                }
            }
        }
    }
    for m in all_client_msgs() {
        let bytes = m.encode();
        let body = &bytes[4..];
        for cut in 0..body.len() {
            if let Err(e) = ClientMsg::parse(m.code(), &body[..cut]) {
                assert!(
                    matches!(e.kind, DecodeErrorKind::Truncated { .. } | DecodeErrorKind::TrailingBytes { .. }),
                    "{m:?} cut at {cut}: {e}"
                );
            }
        }
    }
}

#[test]
fn a_killed_message_cut_before_its_driver_index_is_an_error() {
    let m = ServerMsg::Killed { victim: 1, killer: 1, reason: 0x7064, shot_id: -1, flag: Abbv::NONE, phydrv: Some(3) };
    let b = m.encode();
    assert!(ServerMsg::parse(code::KILLED, &b[4..b.len() - 1]).is_err());
}

#[test]
fn trailing_bytes_are_reported() {
    let e = ServerMsg::parse(code::ACCEPT, &[1, 2]).unwrap_err();
    assert_eq!(e.kind, DecodeErrorKind::TrailingBytes { count: 1 });
}

#[test]
fn enter_is_247_bytes_like_the_official_client() {
    let m = &all_client_msgs()[0];
    assert_eq!(m.encode().len(), 4 + 247);
    // The server-side 246-byte form parses too.
    let b = m.encode();
    assert!(ClientMsg::parse(code::ENTER, &b[4..b.len() - 1]).is_ok());
}

#[test]
fn small_update_packs_like_the_official_client() {
    // Truncation toward zero in 2 cm steps: 0.039 → 1 step, -0.039 → -1 step; 4.0 stays 4.0 with the official
    // f32 constants.
    let mut u = update(true, PlayerStatus::ALIVE);
    u.pos = [0.039, -0.039, 4.0];
    let m = ClientMsg::PlayerUpdate(u);
    let bytes = m.encode();
    assert_eq!(&bytes[4 + 11..4 + 17], &[0, 1, 0xff, 0xff, 0, 200]);
    let ClientMsg::PlayerUpdate(back) = ClientMsg::decode(&bytes).unwrap() else { panic!() };
    assert!((back.pos[0] - 0.02).abs() < 1e-4, "{}", back.pos[0]);
    assert!((back.pos[2] - 4.0).abs() < 1e-4);
    assert_eq!(m.encode().len(), 4 + 27);
    // Out-of-range values clamp instead of wrapping.
    u.pos = [10_000.0, 0.0, 0.0];
    assert!(!u.fits_small());
}

#[test]
fn frame_buffer_reassembles_and_rejects_oversized_lengths() {
    let mut stream = Vec::new();
    for m in all_server_msgs() {
        stream.extend(m.encode());
    }
    // Feed in awkward pieces.
    let mut fb = FrameBuffer::new();
    let mut got = Vec::new();
    for piece in stream.chunks(7) {
        fb.push(piece);
        while let Some((code, body)) = fb.next_frame().unwrap() {
            got.push(ServerMsg::parse(code, &body).unwrap());
            assert!(fb.buffered() <= crate::bzflag::consts::MAX_PACKET_LEN);
        }
    }
    assert_eq!(got.len(), all_server_msgs().len());

    let mut fb = FrameBuffer::new();
    fb.push(&[0x04, 0x01, 0x6d, 0x67]);
    assert_eq!(fb.next_frame(), Err(FrameError::TooLong { len: 1025, code: 0x6d67 }));
    // Sticky.
    fb.push(&[0, 0, 0, 0]);
    assert!(fb.next_frame().is_err());
}

#[test]
fn datagrams_are_message_streams() {
    let mut d = ServerMsg::ShotBegin(firing()).encode();
    d.extend(ServerMsg::GmUpdate { shot: shot_update(), target: 255 }.encode());
    let (frames, err) = datagram_frames(&d);
    assert!(err.is_none());
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[1].code, code::GM_UPDATE);
    let (frames, err) = datagram_frames(&d[..d.len() - 3]);
    assert_eq!(frames.len(), 1);
    assert!(err.is_some());
}

#[test]
fn unknown_codes_are_described() {
    assert_eq!(describe_code(0x7a7a), "unknown code 'zz' (0x7a7a)");
    assert_eq!(describe_code(code::ENTER), "MsgEnter");
}

#[test]
fn set_var_keeps_to_one_message_and_parses_back() {
    // 40 variables of 50 bytes each: more than one message holds (found by the fuzzer: the frame cut the body).
    let vars: Vec<(String, String)> =
        (0..40).map(|i| (format!("_var{i:02}{}", "x".repeat(20)), "y".repeat(24))).collect();
    let m = ServerMsg::SetVar { vars: vars.clone() };
    let bytes = m.encode();
    assert!(bytes.len() <= crate::bzflag::consts::MAX_PACKET_LEN, "{}", bytes.len());
    match ServerMsg::decode(&bytes).expect("parses back") {
        ServerMsg::SetVar { vars: back } => {
            assert!(back.len() < vars.len() && back.len() >= 19, "{}", back.len());
            assert_eq!(back[..], vars[..back.len()]);
        }
        other => panic!("{other:?}"),
    }
}

/// True when `e` is the refusal of a payload over one frame.
fn is_payload_too_long(e: &DecodeError) -> bool {
    matches!(e.kind, DecodeErrorKind::TooLong { field: "message body", max, got } if max == MAX_PAYLOAD_LEN && got > max)
}

#[test]
fn every_kind_refuses_a_payload_over_one_frame() {
    let mut codes: Vec<u16> = all_server_msgs().iter().map(Message::code).collect();
    codes.extend(all_client_msgs().iter().map(Message::code));
    codes.extend([0x7a7a, 0, u16::MAX]); // unknown codes too
    for code in codes {
        for body in [vec![0u8; MAX_PAYLOAD_LEN + 1], vec![b'x'; MAX_PAYLOAD_LEN + 1], vec![0u8; 65_535]] {
            let e = ServerMsg::parse(code, &body).expect_err("server message over one frame");
            assert!(is_payload_too_long(&e), "{}: {e:?}", describe_code(code));
            let e = ClientMsg::parse(code, &body).expect_err("client message over one frame");
            assert!(is_payload_too_long(&e), "{}: {e:?}", describe_code(code));
        }
        // At the limit the length is no reason to refuse (the layout may still be).
        let body = vec![0u8; MAX_PAYLOAD_LEN];
        if let Err(e) = ServerMsg::parse(code, &body) {
            assert!(!is_payload_too_long(&e), "{}: {e:?}", describe_code(code));
        }
        if let Err(e) = ClientMsg::parse(code, &body) {
            assert!(!is_payload_too_long(&e), "{}: {e:?}", describe_code(code));
        }
    }
}

#[test]
fn a_full_frame_parses_and_one_byte_more_does_not() {
    // Bodies that parse at exactly MAX_PAYLOAD_LEN, and the same layouts one byte longer (which would otherwise
    // parse too, and be cut when written again).
    let set_var = |last_value: usize| {
        let vars = [("n".repeat(255), "v".repeat(255)), ("m".repeat(255), "w".repeat(last_value))];
        let mut w = Writer::with_capacity(MAX_PAYLOAD_LEN + 1);
        w.u16(2);
        for (n, v) in &vars {
            w.u8(n.len() as u8).bytes(n.as_bytes()).u8(v.len() as u8).bytes(v.as_bytes());
        }
        w.as_slice().to_vec()
    };
    let text = |len: usize| {
        let mut b = ServerMsg::Message { from: 253, to: 254, kind: 0, text: String::new() }.encode()[4..].to_vec();
        b.resize(len, b'a');
        b
    };
    type BodyOfLen = Box<dyn Fn(usize) -> Vec<u8>>;
    let cases: [(u16, BodyOfLen); 3] = [
        // Count, one variable of 2 + 255 + 255 bytes, and one of 2 + 255 + the rest.
        (code::SET_VAR, Box::new(move |n| set_var(n - (2 + 512 + 257)))),
        (code::MESSAGE, Box::new(text)),
        (0x7a7a, Box::new(|n| vec![7u8; n])),
    ];
    for (code, body) in &cases {
        let full = body(MAX_PAYLOAD_LEN);
        assert_eq!(full.len(), MAX_PAYLOAD_LEN);
        let m = ServerMsg::parse(*code, &full).unwrap_or_else(|e| panic!("{}: {e:?}", describe_code(*code)));
        if *code != code::MESSAGE {
            // (A text is written up to its NUL; the rest of that body is padding.)
            assert_eq!(m.encode()[4..], full[..], "{} is written again unchanged", describe_code(*code));
        }
        let over = body(MAX_PAYLOAD_LEN + 1);
        assert_eq!(over.len(), MAX_PAYLOAD_LEN + 1);
        let e = ServerMsg::parse(*code, &over).expect_err("one byte over");
        assert!(is_payload_too_long(&e), "{}: {e:?}", describe_code(*code));
        assert_eq!(e.context, Some(crate::bzflag::consts::code_name(*code).unwrap_or("unknown message")));
    }
    assert!(matches!(ClientMsg::parse(0x7a7a, &[1; MAX_PAYLOAD_LEN]), Ok(ClientMsg::Unknown { .. })));
}

#[test]
fn a_drained_frame_buffer_gives_back_a_large_read() {
    // One 64 KiB read of whole messages (the burst after a join), then the small reads of a game.
    let chat = ServerMsg::Message { from: 253, to: 254, kind: 0, text: "x".repeat(100) }.encode();
    let burst: Vec<u8> = chat.iter().copied().cycle().take(chat.len() * (64 * 1024 / chat.len())).collect();
    let mut fb = FrameBuffer::new();
    fb.push(&burst);
    assert!(fb.buf.capacity() >= burst.len());
    let mut n = 0;
    while let Some((code, _)) = fb.next_frame().unwrap() {
        assert_eq!(code, code::MESSAGE);
        n += 1;
    }
    assert_eq!(n, burst.len() / chat.len());
    assert!(fb.buf.capacity() <= FRAME_BUFFER_KEPT, "{}", fb.buf.capacity());
    // A partial message is kept across the shrink.
    fb.push(&chat[..10]);
    assert_eq!(fb.next_frame(), Ok(None));
    fb.push(&chat[10..]);
    assert!(matches!(fb.next_frame(), Ok(Some((code::MESSAGE, _)))));
}
