//! The session engine driven in virtual time against scripted server bytes.

use super::*;
use crate::bzflag::consts::{code, RejectCode};
use crate::bzflag::msg::{FrameError, GameSettings, QueryGameInfo, TeamInfo};

const CAPTURED_WORLD: &[u8] =
    include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/bzflag/02-custom-world.bin"));

struct Drive {
    s: Session,
    now: Instant,
    tcp: Vec<ClientMsg>,
    raw: Vec<Vec<u8>>,
    udp: Vec<ClientMsg>,
    events: Vec<Event>,
    requests: Vec<WorldRequest>,
}

impl Drive {
    fn new(config: SessionConfig) -> Drive {
        let mut d = Drive {
            s: Session::new(config),
            now: Instant::now(),
            tcp: vec![],
            raw: vec![],
            udp: vec![],
            events: vec![],
            requests: vec![],
        };
        d.s.handle_connected(d.now);
        d.drain();
        d
    }

    fn drain(&mut self) {
        while let Some(t) = self.s.poll_transmit() {
            match t.channel {
                Channel::Tcp => match ClientMsg::decode(&t.bytes) {
                    Ok(m) => self.tcp.push(m),
                    Err(_) => self.raw.push(t.bytes),
                },
                Channel::Udp => {
                    assert!(t.bytes.len() <= MAX_UDP_PACKET_LEN, "one small message per datagram");
                    self.udp.push(ClientMsg::decode(&t.bytes).expect("one whole message per datagram"));
                }
            }
        }
        while let Some(r) = self.s.poll_world_request() {
            self.requests.push(r);
        }
        while let Some(e) = self.s.poll_event() {
            self.events.push(e);
        }
    }

    fn advance(&mut self, d: Duration) {
        self.now += d;
        if self.s.poll_timeout().is_some_and(|t| t <= self.now) {
            self.s.handle_timeout(self.now);
        }
        self.drain();
    }

    fn bytes(&mut self, b: &[u8]) {
        self.s.handle_tcp(self.now, b);
        self.drain();
    }

    fn send(&mut self, m: ServerMsg) {
        self.bytes(&m.encode());
    }

    fn udp_in(&mut self, m: ServerMsg) {
        self.s.handle_udp(self.now, &m.encode());
        self.drain();
    }

    fn hello(&mut self, id: u8) {
        let mut h = b"BZFS0221".to_vec();
        h.push(id);
        self.bytes(&h);
    }

    fn last_tcp(&self) -> &ClientMsg {
        self.tcp.last().expect("something was sent")
    }

    /// The exit code the command line gives the end (the engine itself has none).
    fn end_code(&self) -> Option<i32> {
        self.s.end().map(|e| i32::from(crate::observer::exit::of(e)))
    }
}

fn settings() -> GameSettings {
    GameSettings {
        world_size: 400.0,
        game_type: 1,
        game_options: 0x1a,
        max_players: 216,
        max_shots: 2,
        num_flags: 4,
        linear_acceleration: 0.0,
        angular_acceleration: 0.0,
        shake_timeout: 0,
        shake_wins: 0,
        sync_time: 0,
    }
}

const CAPTURED_HASH: &str = "707a875438a38b7be00d1df1e3b63dbd";

/// Hello through `MsgWantWHash`, leaving the session waiting for the cache answer.
fn up_to_hash() -> Drive {
    let mut d = Drive::new(SessionConfig::default());
    assert_eq!(d.raw, vec![CLIENT_HEADER.to_vec()], "the connect header goes first");
    d.hello(3);
    assert_eq!(d.s.my_id(), Some(3));
    assert_eq!(d.udp, vec![ClientMsg::UdpLinkRequest { id: 3 }]);
    assert!(matches!(d.last_tcp(), ClientMsg::NegotiateFlags { flags } if flags.len() == 46));
    d.send(ServerMsg::NegotiateFlags { missing: vec![] });
    assert_eq!(d.last_tcp(), &ClientMsg::WantSettings);
    d.send(ServerMsg::GameSettings(settings()));
    assert_eq!(d.last_tcp(), &ClientMsg::WantWHash);
    d.send(ServerMsg::WantWHash { kind: b'p', hash: CAPTURED_HASH.into() });
    assert_eq!(d.requests, vec![WorldRequest::Lookup { hash: CAPTURED_HASH.into() }]);
    d
}

#[test]
fn full_join_downloads_the_world_in_chunks_and_enters() {
    let mut d = up_to_hash();
    d.s.handle_world_cache(d.now, None);
    d.drain();
    assert_eq!(d.last_tcp(), &ClientMsg::GetWorld { offset: 0 });
    // The captured download: bytesLeft 2127 / 1111 / 0 with 1016, 1016 and 95 bytes.
    let (a, rest) = CAPTURED_WORLD.split_at(1016);
    let (b, c) = rest.split_at(1016);
    d.send(ServerMsg::GetWorld { bytes_left: 2127, data: a.to_vec() });
    assert_eq!(d.last_tcp(), &ClientMsg::GetWorld { offset: 1016 });
    d.send(ServerMsg::GetWorld { bytes_left: 1111, data: b.to_vec() });
    assert_eq!(d.last_tcp(), &ClientMsg::GetWorld { offset: 2032 });
    d.send(ServerMsg::GetWorld { bytes_left: 0, data: c.to_vec() });
    assert!(matches!(d.last_tcp(), ClientMsg::Enter { team: Team::Observer, .. }));
    assert_eq!(d.s.world_blob(), Some(CAPTURED_WORLD));
    assert!(d.requests.contains(&WorldRequest::Store { hash: CAPTURED_HASH.into(), blob: CAPTURED_WORLD.to_vec() }));
    assert!(d.events.contains(&Event::World { hash: CAPTURED_HASH.into(), bytes: 2127, cached: false }));

    d.send(ServerMsg::Accept { id: 3 });
    assert!(d.s.is_joined());
    d.send(ServerMsg::SetVar {
        vars: vec![
            ("_shotRange".into(), "350".into()),
            ("_shotSpeed".into(), "100".into()),
            ("_reloadTime".into(), "_shotRange / _shotSpeed".into()),
        ],
    });
    assert_eq!(d.s.game().vars.eval("_reloadTime"), Some(3.5));
    d.send(ServerMsg::LagPing { seq: 7 });
    assert_eq!(d.last_tcp(), &ClientMsg::LagPing { seq: 7 }, "lag pings are echoed over TCP");
    assert_eq!(d.s.warnings(), 0);
}

#[test]
fn a_cached_world_is_not_downloaded_again() {
    let mut d = up_to_hash();
    d.s.handle_world_cache(d.now, Some(CAPTURED_WORLD.to_vec()));
    d.drain();
    assert!(matches!(d.last_tcp(), ClientMsg::Enter { .. }));
    assert!(!d.tcp.iter().any(|m| matches!(m, ClientMsg::GetWorld { .. })));
    assert!(d.events.contains(&Event::World { hash: CAPTURED_HASH.into(), bytes: 2127, cached: true }));
}

#[test]
fn a_stale_cache_entry_is_ignored_and_the_world_downloaded() {
    let mut d = up_to_hash();
    d.s.handle_world_cache(d.now, Some(b"not the world".to_vec()));
    d.drain();
    assert_eq!(d.last_tcp(), &ClientMsg::GetWorld { offset: 0 });
}

#[test]
fn a_corrupt_world_download_is_a_protocol_error() {
    let mut d = up_to_hash();
    d.s.handle_world_cache(d.now, None);
    d.send(ServerMsg::GetWorld { bytes_left: 0, data: vec![1, 2, 3] });
    assert_eq!(d.end_code(), Some(6));
    assert!(d.s.end().unwrap().to_string().contains("corrupt"));
}

#[test]
fn a_world_claiming_gigabytes_is_refused_before_buffering() {
    let mut d = up_to_hash();
    d.s.handle_world_cache(d.now, None);
    d.send(ServerMsg::GetWorld { bytes_left: u32::MAX, data: vec![0; 1016] });
    assert_eq!(d.end_code(), Some(6));
}

#[test]
fn an_empty_chunk_that_is_not_the_last_cannot_loop_forever() {
    let mut d = up_to_hash();
    d.s.handle_world_cache(d.now, None);
    d.send(ServerMsg::GetWorld { bytes_left: 5, data: vec![] });
    assert_eq!(d.end_code(), Some(6));
}

#[test]
fn the_server_closing_mid_world_is_reported() {
    let mut d = up_to_hash();
    d.s.handle_world_cache(d.now, None);
    d.send(ServerMsg::GetWorld { bytes_left: 2127, data: CAPTURED_WORLD[..1016].to_vec() });
    d.s.handle_tcp_closed(d.now);
    d.drain();
    assert_eq!(d.s.end(), Some(&SessionEnd::ServerClosed { during: "the world download" }));
    assert_eq!(d.end_code(), Some(6));
}

#[test]
fn udp_link_comes_up_both_ways() {
    let mut d = up_to_hash();
    d.send(ServerMsg::UdpLinkEstablished);
    assert!(!d.s.udp_up());
    d.udp_in(ServerMsg::UdpLinkRequest);
    assert!(d.s.udp_up());
    assert_eq!(d.udp.last(), Some(&ClientMsg::UdpLinkEstablished));
    assert!(d.events.iter().any(|e| matches!(e, Event::UdpLink { up: true, .. })));
}

#[test]
fn udp_falls_back_to_tcp_when_the_link_does_not_come_up() {
    let mut d = up_to_hash();
    for _ in 0..4 {
        d.advance(Duration::from_secs(1));
    }
    assert_eq!(d.udp.iter().filter(|m| matches!(m, ClientMsg::UdpLinkRequest { .. })).count(), 3);
    assert!(d.events.iter().any(|e| matches!(e, Event::UdpLink { up: false, .. })));
    assert!(!d.s.is_closed(), "no UDP is not fatal");
}

#[test]
fn player_updates_go_over_udp_only_when_the_link_is_up() {
    let mut d = up_to_hash();
    d.s.handle_world_cache(d.now, Some(CAPTURED_WORLD.to_vec()));
    d.send(ServerMsg::Accept { id: 3 });
    let u = crate::bzflag::msg::PlayerUpdate {
        small: true,
        timestamp: 1.0,
        id: 3,
        order: 1,
        status: PlayerStatus::ALIVE,
        pos: [0.0; 3],
        vel: [0.0; 3],
        azimuth: 0.0,
        ang_vel: 0.0,
        jump_jets: 0.0,
        phydrv: -1,
        user_inputs: (0.0, 0.0),
        sounds: 0,
    };
    d.s.send(&ClientMsg::PlayerUpdate(u));
    d.drain();
    assert!(matches!(d.last_tcp(), ClientMsg::PlayerUpdate(_)));
    d.udp_in(ServerMsg::UdpLinkRequest);
    d.s.send(&ClientMsg::PlayerUpdate(u));
    d.drain();
    assert!(matches!(d.udp.last(), Some(ClientMsg::PlayerUpdate(_))));
}

#[test]
fn a_reject_ends_with_its_code_and_reason() {
    let mut d = Drive::new(SessionConfig { full_join: false, udp: false, ..SessionConfig::default() });
    d.hello(0);
    assert!(matches!(d.last_tcp(), ClientMsg::Enter { .. }), "bzadmin-style join enters at once");
    d.send(ServerMsg::Reject {
        code: RejectCode::RepeatCallsign,
        reason: "The callsign specified is already in use.".into(),
    });
    d.send(ServerMsg::SuperKill);
    assert_eq!(d.end_code(), Some(4));
    assert!(d.events.contains(&Event::Reject {
        code: RejectCode::RepeatCallsign,
        reason: "The callsign specified is already in use.".into()
    }));
    assert!(d.s.end().unwrap().to_string().contains("already in use"));
}

#[test]
fn a_kick_carries_the_last_server_message() {
    let mut d = Drive::new(SessionConfig { full_join: false, udp: false, ..SessionConfig::default() });
    d.hello(0);
    d.send(ServerMsg::Accept { id: 0 });
    let mut burst = ServerMsg::Message {
        from: 253,
        to: 0,
        kind: 0,
        text: "Autokick: Player location was outside the playing area.".into(),
    }
    .encode();
    burst.extend(ServerMsg::SuperKill.encode());
    d.bytes(&burst);
    assert_eq!(d.end_code(), Some(5));
    assert!(d
        .events
        .contains(&Event::Kicked { reason: "Autokick: Player location was outside the playing area.".into() }));
}

#[test]
fn a_kick_reason_is_every_line_sent_with_it_and_nothing_older() {
    let mut d = Drive::new(SessionConfig { full_join: false, udp: false, ..SessionConfig::default() });
    d.hello(0);
    d.send(ServerMsg::Accept { id: 3 });
    let line = |to: u8, text: &str| ServerMsg::Message { from: 253, to, kind: 0, text: text.into() };
    d.send(line(3, "You are in observer mode."));
    d.send(ServerMsg::TimeUpdate { seconds: 300 });
    // bzfs's /kick: two lines to the player, one to the admins, then the kill, in one go.
    let mut burst = line(3, "You were kicked off the server").encode();
    burst.extend(line(3, "Reason given: enough").encode());
    burst.extend(line(252, "bot kicked by admin, reason: enough").encode());
    burst.extend(ServerMsg::SuperKill.encode());
    d.bytes(&burst);
    assert_eq!(d.end_code(), Some(5));
    let reason = "You were kicked off the server; Reason given: enough";
    assert!(d.events.contains(&Event::Kicked { reason: reason.into() }), "{:?}", d.events);
}

#[test]
fn a_superkill_alone_is_a_shutdown_not_a_kick_with_an_old_message() {
    // The welcome text, then the game, then bzfs stopping: no reason, so no kick.
    let mut d = Drive::new(SessionConfig { full_join: false, udp: false, ..SessionConfig::default() });
    d.hello(0);
    d.send(ServerMsg::Accept { id: 3 });
    d.send(ServerMsg::Message { from: 253, to: 3, kind: 0, text: "You are in observer mode.".into() });
    d.send(ServerMsg::TimeUpdate { seconds: 300 });
    d.send(ServerMsg::SuperKill);
    assert_eq!(d.s.end(), Some(&SessionEnd::Shutdown));
    assert_eq!(d.end_code(), Some(6));
    assert!(!d.events.iter().any(|e| matches!(e, Event::Kicked { .. })), "{:?}", d.events);

    // A server line that is the last message but long ago is not the reason either.
    let mut d = Drive::new(SessionConfig { full_join: false, udp: false, ..SessionConfig::default() });
    d.hello(0);
    d.send(ServerMsg::Accept { id: 3 });
    d.send(ServerMsg::Message { from: 253, to: 3, kind: 0, text: "Welcome".into() });
    d.advance(Duration::from_secs(5));
    d.send(ServerMsg::SuperKill);
    assert_eq!(d.s.end(), Some(&SessionEnd::Shutdown));
}

#[test]
fn hello_problems_are_typed() {
    let mut d = Drive::new(SessionConfig::default());
    d.bytes(b"HTTP/1.1 400 Bad Request\r\n");
    assert_eq!(d.end_code(), Some(6));
    assert!(d.s.end().unwrap().to_string().contains("not a BZFlag"), "{}", d.s.end().unwrap());

    let mut d = Drive::new(SessionConfig::default());
    d.bytes(b"BZFS0026\x01");
    assert!(d.s.end().unwrap().to_string().contains("incompatible server version"));

    let mut d = Drive::new(SessionConfig::default());
    d.bytes(b"BZFS0221\xff");
    assert_eq!(d.s.end(), Some(&SessionEnd::ServerFull));

    let mut d = Drive::new(SessionConfig::default());
    d.advance(Duration::from_secs(11));
    assert!(matches!(d.s.end(), Some(SessionEnd::Timeout { .. })));
    assert_eq!(d.end_code(), Some(6));
}

#[test]
fn a_server_that_drips_one_byte_a_second_times_out() {
    let mut d = Drive::new(SessionConfig::default());
    let hello = b"BZFS0221\x01";
    for i in 0..40 {
        if d.s.is_closed() {
            break;
        }
        // Bytes arrive every 1.5 s: the ninth would come at 13.5 s.
        if i % 3 == 0 {
            if let Some(b) = hello.get(i / 3) {
                d.bytes(&[*b]);
            }
        }
        d.advance(Duration::from_millis(500));
    }
    assert!(d.s.is_closed(), "the hello deadline is absolute, bytes do not extend it");
    assert!(matches!(d.s.end(), Some(SessionEnd::Timeout { .. })));
}

#[test]
fn a_join_that_never_completes_times_out() {
    let mut d = up_to_hash();
    d.s.handle_world_cache(d.now, None);
    for _ in 0..80 {
        d.advance(Duration::from_secs(1));
    }
    assert!(matches!(d.s.end(), Some(SessionEnd::Timeout { during: "the world download" })));
}

#[test]
fn oversized_frames_are_fatal_and_sticky() {
    let mut d = Drive::new(SessionConfig { full_join: false, ..SessionConfig::default() });
    d.hello(0);
    d.bytes(&[0xff, 0xff, 0x6d, 0x67]);
    assert_eq!(d.end_code(), Some(6));
    assert!(d.s.end().unwrap().to_string().contains("exceeds the protocol maximum"));
    let n = d.events.len();
    d.bytes(&[0; 100]);
    assert_eq!(d.events.len(), n, "a closed session is inert");
}

#[test]
fn malformed_bodies_and_unknown_codes_are_warnings() {
    let mut d = Drive::new(SessionConfig { full_join: false, udp: false, ..SessionConfig::default() });
    d.hello(0);
    d.send(ServerMsg::Accept { id: 0 });
    let mut bad = vec![0, 2];
    bad.extend(code::ADD_PLAYER.to_be_bytes());
    bad.extend([1, 2]);
    d.bytes(&bad);
    d.send(ServerMsg::Unknown { code: 0x7a7a, body: vec![1] });
    assert_eq!(d.s.warnings(), 2);
    assert!(d.s.is_joined());
}

#[test]
fn a_stream_fed_one_byte_at_a_time_gives_the_same_events() {
    let mut stream = b"BZFS0221\x00".to_vec();
    let msgs = vec![
        ServerMsg::Accept { id: 0 },
        ServerMsg::TeamUpdate { teams: vec![TeamInfo { team: Team::Red, size: 1, wins: 0, losses: 0 }] },
        ServerMsg::AddPlayer {
            id: 1,
            player_type: PlayerType::Tank,
            team: Team::Red,
            wins: 0,
            losses: 0,
            team_kills: 0,
            callsign: "alice".into(),
            motto: "".into(),
        },
        ServerMsg::Message { from: 1, to: 254, kind: 0, text: "hi".into() },
    ];
    for m in &msgs {
        stream.extend(m.encode());
    }
    let config = SessionConfig { full_join: false, udp: false, ..SessionConfig::default() };
    let mut whole = Drive::new(config.clone());
    whole.bytes(&stream);
    let mut drip = Drive::new(config);
    for b in &stream {
        drip.bytes(&[*b]);
    }
    assert_eq!(whole.events, drip.events);
    assert!(whole.events.iter().any(|e| matches!(e, Event::Chat { from_callsign, .. } if from_callsign == "alice")));
}

#[test]
fn roster_flags_and_kills_are_kept() {
    let mut d = Drive::new(SessionConfig { full_join: false, udp: false, ..SessionConfig::default() });
    d.hello(0);
    d.send(ServerMsg::Accept { id: 0 });
    for (id, name, team) in [(1, "alice", Team::Red), (2, "bob", Team::Green)] {
        d.send(ServerMsg::AddPlayer {
            id,
            player_type: PlayerType::Tank,
            team,
            wins: 0,
            losses: 0,
            team_kills: 0,
            callsign: name.into(),
            motto: "".into(),
        });
    }
    d.send(ServerMsg::Alive { id: 1, pos: [1.0, 2.0, 0.0], azimuth: 0.5 });
    assert!(d.s.game().player(1).unwrap().alive);
    let mut flag = crate::bzflag::msg::FlagInfo {
        abbv: Abbv::new("G*"),
        status: crate::bzflag::consts::FlagStatus::OnTank,
        endurance: 0,
        owner: 1,
        position: [0.0; 3],
        launch: [0.0; 3],
        landing: [0.0; 3],
        flight_time: 0.0,
        flight_end: 0.0,
        initial_velocity: 0.0,
    };
    d.send(ServerMsg::GrabFlag { player: 1, index: 1, flag });
    assert_eq!(d.s.game().player(1).unwrap().flag, Some(1));
    flag.status = crate::bzflag::consts::FlagStatus::OnGround;
    d.send(ServerMsg::DropFlag { player: 1, index: 1, flag });
    d.send(ServerMsg::CaptureFlag { player: 1, index: 1, team: Team::Red });
    assert!(d.events.iter().any(|e| matches!(e, Event::Capture { callsign, .. } if callsign == "alice")));
    d.send(ServerMsg::Killed { victim: 1, killer: 2, reason: 1, shot_id: 0x100, flag: Abbv::NONE, phydrv: None });
    assert!(!d.s.game().player(1).unwrap().alive);
    assert!(d.events.iter().any(|e| matches!(e,
        Event::Kill { victim_callsign, killer_callsign, reason: "shot", .. }
            if victim_callsign == "alice" && killer_callsign == "bob")));
    d.send(ServerMsg::RemovePlayer { id: 2 });
    assert!(d.events.contains(&Event::Leave { id: 2, callsign: "bob".into() }));
    assert!(d.s.game().player(2).is_none());
}

#[test]
fn out_of_order_updates_are_dropped() {
    let mut d = Drive::new(SessionConfig { full_join: false, udp: false, ..SessionConfig::default() });
    d.hello(0);
    d.send(ServerMsg::Accept { id: 0 });
    d.send(ServerMsg::AddPlayer {
        id: 1,
        player_type: PlayerType::Tank,
        team: Team::Red,
        wins: 0,
        losses: 0,
        team_kills: 0,
        callsign: "alice".into(),
        motto: "".into(),
    });
    let mk = |order, x| crate::bzflag::msg::PlayerUpdate {
        small: false,
        timestamp: 1.0,
        id: 1,
        order,
        status: PlayerStatus::ALIVE,
        pos: [x, 0.0, 0.0],
        vel: [0.0; 3],
        azimuth: 0.0,
        ang_vel: 0.0,
        jump_jets: 0.0,
        phydrv: -1,
        user_inputs: (0.0, 0.0),
        sounds: 0,
    };
    d.send(ServerMsg::PlayerUpdate(mk(5, 10.0)));
    d.send(ServerMsg::PlayerUpdate(mk(4, 20.0)));
    let (u, _) = d.s.game().player(1).unwrap().last_update.unwrap();
    assert_eq!(u.pos[0], 10.0);
}

#[test]
fn a_query_answers_like_bzfquery_and_closes() {
    let mut d = Drive::new(SessionConfig { query_only: true, ..SessionConfig::default() });
    d.hello(0);
    assert_eq!(d.tcp, vec![ClientMsg::QueryGame, ClientMsg::QueryPlayers]);
    let info = QueryGameInfo { game_type: 1, max_players: 20, ..Default::default() };
    d.send(ServerMsg::QueryGame(info));
    d.send(ServerMsg::QueryPlayers { num_teams: 8, num_players: 0 });
    d.send(ServerMsg::TeamUpdate { teams: vec![TeamInfo { team: Team::Rogue, size: 0, wins: 0, losses: 0 }] });
    assert!(d.events.iter().any(|e| matches!(e, Event::QueryResult { game, .. } if game.max_players == 20)));
    assert_eq!(d.end_code(), Some(0));
}

#[test]
fn leaving_sends_exit_and_closes_cleanly() {
    let mut d = Drive::new(SessionConfig { full_join: false, udp: false, ..SessionConfig::default() });
    d.hello(0);
    d.send(ServerMsg::Accept { id: 0 });
    d.s.send_chat(254, &"x".repeat(300));
    d.drain();
    assert!(matches!(d.last_tcp(), ClientMsg::Message { text, .. } if text.len() == 127));
    d.s.leave(d.now);
    d.drain();
    assert_eq!(d.last_tcp(), &ClientMsg::Exit);
    assert_eq!(d.end_code(), Some(0));
}

#[test]
fn world_only_sessions_close_once_the_world_is_verified() {
    let mut d = Drive::new(SessionConfig { world_only: true, ..SessionConfig::default() });
    d.hello(1);
    d.send(ServerMsg::NegotiateFlags { missing: vec![] });
    d.send(ServerMsg::GameSettings(settings()));
    d.send(ServerMsg::WantWHash { kind: b'p', hash: CAPTURED_HASH.into() });
    d.s.handle_world_cache(d.now, Some(CAPTURED_WORLD.to_vec()));
    d.drain();
    assert!(!d.tcp.iter().any(|m| matches!(m, ClientMsg::Enter { .. })));
    assert_eq!(d.s.world_blob(), Some(CAPTURED_WORLD));
    assert_eq!(d.end_code(), Some(0));
}

/// Player `id`'s first update: alive, standing at (3, 0, 0).
fn alive_update(id: u8) -> crate::bzflag::msg::PlayerUpdate {
    crate::bzflag::msg::PlayerUpdate {
        small: false,
        timestamp: 1.0,
        id,
        order: 1,
        status: PlayerStatus::ALIVE,
        pos: [3.0, 0.0, 0.0],
        vel: [0.0; 3],
        azimuth: 0.0,
        ang_vel: 0.0,
        jump_jets: 0.0,
        phydrv: -1,
        user_inputs: (0.0, 0.0),
        sounds: 0,
    }
}

#[test]
fn lean_sessions_skip_relayed_updates_and_shots_but_keep_the_rest() {
    for lean in [false, true] {
        let mut d = Drive::new(SessionConfig { full_join: false, udp: false, lean, ..SessionConfig::default() });
        d.hello(0);
        d.send(ServerMsg::Accept { id: 0 });
        d.send(ServerMsg::AddPlayer {
            id: 1,
            player_type: PlayerType::Tank,
            team: Team::Red,
            wins: 0,
            losses: 0,
            team_kills: 0,
            callsign: "alice".into(),
            motto: "".into(),
        });
        d.send(ServerMsg::PlayerUpdate(alive_update(1)));
        let shot = crate::bzflag::msg::FiringInfo {
            time_sent: 0.0,
            shooter: 1,
            shot_id: 0x100,
            pos: [0.0; 3],
            vel: [100.0, 0.0, 0.0],
            dt: 0.0,
            team: Team::Red,
            flag: Abbv::NONE,
            lifetime: 3.5,
        };
        d.send(ServerMsg::ShotBegin(shot));
        d.send(ServerMsg::Killed { victim: 1, killer: 1, reason: 5, shot_id: -1, flag: Abbv::NONE, phydrv: None });
        let updates = d.events.iter().filter(|e| matches!(e, Event::Update(_) | Event::ShotBegin(_))).count();
        assert_eq!(updates, if lean { 0 } else { 2 }, "lean {lean}");
        assert_eq!(d.s.game().player(1).unwrap().last_update.is_none(), lean);
        assert_eq!(d.s.game().shots.is_empty(), lean);
        // Everything else still arrives.
        assert!(d.events.iter().any(|e| matches!(e, Event::Kill { victim: 1, .. })), "lean {lean}");
        assert_eq!(d.s.warnings(), 0);
    }
}

#[test]
fn observers_keep_no_network_figures_and_a_drained_queue_gives_back_the_join_burst() {
    for net_stats in [true, false] {
        let mut d = Drive::new(SessionConfig { full_join: false, udp: false, ..SessionConfig::default() });
        d.s.set_net_stats(net_stats);
        d.hello(0);
        d.send(ServerMsg::Accept { id: 0 });
        // A crowd of observers, and one tank: one read, a burst of events.
        let mut burst = Vec::new();
        for id in 1..=120u8 {
            let team = if id == 120 { Team::Red } else { Team::Observer };
            let m = ServerMsg::AddPlayer {
                id,
                player_type: PlayerType::Tank,
                team,
                wins: 0,
                losses: 0,
                team_kills: 0,
                callsign: format!("p{id}"),
                motto: "".into(),
            };
            burst.extend(m.encode());
        }
        d.s.handle_tcp(d.now, &burst);
        assert!(d.s.events.capacity() >= 120);
        d.drain();
        assert_eq!(d.events.iter().filter(|e| matches!(e, Event::Join { .. })).count(), 120);
        assert!(d.s.events.capacity() <= EVENTS_KEPT, "{}", d.s.events.capacity());
        // Figures for the tank only, and none at all when they are off.
        assert_eq!(d.s.net_stats().ids(), if net_stats { vec![120] } else { vec![] });
        d.send(ServerMsg::PlayerUpdate(alive_update(120)));
        assert!(d.events.iter().any(|e| matches!(e, Event::Update(_))), "the update is still reported");
        let updates = d.s.net_stats().player(120, d.now).map(|p| p.updates);
        assert_eq!(updates, net_stats.then_some(1), "net_stats {net_stats}");
    }
}

/// A bzadmin-style session that is in the game, with an idle limit of `limit`.
fn joined_with_idle_limit(limit: Option<Duration>) -> Drive {
    let mut d = Drive::new(SessionConfig { full_join: false, udp: false, ..SessionConfig::default() });
    let now = d.now;
    d.s.set_idle_timeout(now, limit);
    d.hello(0);
    d.send(ServerMsg::Accept { id: 0 });
    assert!(d.s.is_joined());
    d
}

#[test]
fn a_server_that_goes_quiet_after_the_accept_ends_at_the_idle_limit() {
    let mut d = joined_with_idle_limit(Some(Duration::from_secs(5)));
    d.advance(Duration::from_secs(4));
    d.send(ServerMsg::GameTime { usec: 1 });
    d.advance(Duration::from_secs(4));
    assert!(d.s.is_joined(), "a message 4 s in puts the limit off to 9 s");
    d.advance(Duration::from_millis(1001));
    assert_eq!(d.end_code(), Some(6));
    assert_eq!(d.s.end(), Some(&SessionEnd::Timeout { during: IDLE_TIMEOUT_DURING }));
    assert!(d.s.end().unwrap().to_string().contains("the server stopped sending"), "{}", d.s.end().unwrap());
}

#[test]
fn without_an_idle_limit_a_quiet_game_goes_on() {
    let mut d = joined_with_idle_limit(None);
    for _ in 0..100 {
        d.advance(Duration::from_secs(60));
    }
    assert!(d.s.is_joined());
    assert_eq!(d.s.poll_timeout(), None);
}

#[test]
fn a_flood_does_not_move_the_idle_timer_and_a_drip_does_not_feed_it() {
    let mut d = joined_with_idle_limit(Some(Duration::from_secs(5)));
    let armed = d.s.poll_timeout();
    for _ in 0..1000 {
        d.send(ServerMsg::GameTime { usec: 7 });
    }
    assert_eq!(d.s.poll_timeout(), armed, "the timer is put off lazily, not re-armed per message");
    // One byte a second of a message that never completes is not a message.
    let mut partial = ServerMsg::Message { from: 253, to: 254, kind: 0, text: "x".repeat(100) }.encode();
    partial.truncate(50);
    for b in partial.iter().take(6) {
        d.advance(Duration::from_secs(1));
        d.bytes(&[*b]);
    }
    assert_eq!(d.end_code(), Some(6), "{:?}", d.s.end());
}

#[test]
fn ends_are_typed_and_read_as_before() {
    use std::error::Error as _;
    let mut d = up_to_hash();
    d.s.handle_world_cache(d.now, None);
    d.send(ServerMsg::GetWorld { bytes_left: 0, data: vec![1, 2, 3] });
    let end = d.s.end().unwrap();
    let Some(SessionEnd::Protocol(ProtocolError::World(WorldError::Corrupt { bytes: 3, md5, .. }))) = d.s.end() else {
        panic!("{end:?}")
    };
    assert_eq!(md5, &md5_hex(&[1, 2, 3]));
    let cause = end.source().expect("a protocol end has a source");
    assert!(matches!(cause.downcast_ref::<ProtocolError>(), Some(ProtocolError::World(_))));

    let mut d = Drive::new(SessionConfig { full_join: false, ..SessionConfig::default() });
    d.hello(0);
    d.bytes(&[0xff, 0xff, 0x6d, 0x67]);
    let end = d.s.end().unwrap();
    assert!(matches!(
        end,
        SessionEnd::Protocol(ProtocolError::Frame(FrameError::TooLong { len: 0xffff, code: 0x6d67 }))
    ));
    let frame = end.source().and_then(|e| e.source()).and_then(|e| e.downcast_ref::<FrameError>());
    assert!(frame.is_some(), "the frame error is the protocol error's source");

    let mut d = Drive::new(SessionConfig::default());
    d.bytes(b"BZFS0026\x01");
    assert_eq!(d.s.end(), Some(&SessionEnd::Protocol(HelloError::version(b"BZFS0026").into())));
    assert_eq!(
        d.s.end().unwrap().to_string(),
        "protocol error: incompatible server version \"BZFS0026\" (bzhead speaks BZFS0221)"
    );
    let mut d = Drive::new(SessionConfig::default());
    d.bytes(b"HTTP/1.1 400 Bad Request\r\n");
    assert_eq!(d.s.end(), Some(&SessionEnd::Protocol(HelloError::not_bzflag(b"HTTP/1.1 ").into())));
    let mut d = Drive::new(SessionConfig::default());
    d.bytes(b"HTTP");
    assert_eq!(d.s.end(), Some(&SessionEnd::Protocol(HelloError::bad_start(b"HTTP").into())));
    assert_eq!(
        d.s.end().unwrap().to_string(),
        "protocol error: not a BZFlag 2.4 server: its hello starts with \"HTTP\""
    );

    // The words users saw when these were strings.
    let server: std::net::SocketAddr = "127.0.0.1:5154".parse().unwrap();
    let timed_out = SessionEnd::ConnectFailed(ConnectError::TimedOut { server, after: Duration::from_secs(5) });
    assert_eq!(timed_out.to_string(), "cannot connect: no answer from 127.0.0.1:5154 within 5s");
    let io = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
    let refused = ConnectError::from_io(server, &io);
    assert!(matches!(refused, ConnectError::Refused { .. }) && !refused.is_timeout());
    assert_eq!(SessionEnd::ConnectFailed(refused).to_string(), format!("cannot connect: 127.0.0.1:5154: {io}"));
    let unreachable = ConnectError::from_io(server, &std::io::Error::from(std::io::ErrorKind::HostUnreachable));
    assert!(matches!(unreachable, ConnectError::Io { kind: std::io::ErrorKind::HostUnreachable, .. }));
    let rejected = SessionEnd::Rejected { code: RejectCode::RepeatCallsign, reason: "taken".into() };
    assert_eq!(rejected.to_string(), "rejected by the server (callsign in use, code 7): taken");
    let odd = SessionEnd::Rejected { code: RejectCode::from_u16(99), reason: "?".into() };
    assert_eq!(odd.to_string(), "rejected by the server (unknown reason, code 99): ?");
    assert!(rejected.source().is_none());
}

#[test]
fn reject_codes_round_trip_and_have_one_remedy() {
    use crate::bzflag::consts::RejectRemedy;
    for n in (0..=40).chain([0x7fff, 0xffff]) {
        let c = RejectCode::from_u16(n);
        assert_eq!(c.to_u16(), n);
        assert_eq!(matches!(c, RejectCode::Other(_)), n > 11, "{n}");
        let bytes = ServerMsg::Reject { code: c, reason: "r".into() }.encode();
        assert_eq!(ServerMsg::decode(&bytes), Ok(ServerMsg::Reject { code: c, reason: "r".into() }));
    }
    assert_eq!(serde_json::to_string(&RejectCode::TeamFull).unwrap(), "4");
    let remedies: Vec<RejectRemedy> = (0..=12).map(|n| RejectCode::from_u16(n).remedy()).collect();
    use RejectRemedy::*;
    assert_eq!(
        remedies,
        [GiveUp, GiveUp, GiveUp, GiveUp, Wait, Wait, Rename, Rename, Wait, GiveUp, GiveUp, GiveUp, GiveUp]
    );
    assert!(
        RejectCode::TeamFull.is_full() && RejectCode::ServerFull.is_full() && !RejectCode::RejoinWaitTime.is_full()
    );
    assert!(RejectCode::RejoinWaitTime.is_retryable() && !RejectCode::IpBanned.is_retryable());
}
