//! The engine on the real server bytes of the three loopback captures: every message parses, and whole
//! connections replayed through a `Session` give the events the real programs saw, without a warning.

use std::time::{Duration, Instant};

use bzhead::bzflag::consts::{code, Team};
use bzhead::bzflag::event::Event;
use bzhead::bzflag::msg::{datagram_frames, ClientMsg, FrameBuffer, Message, ServerMsg};
use bzhead::bzflag::session::{Session, SessionConfig, WorldRequest};
use bzhead::observer::text_line;

use crate::support::capture_path;
use crate::support::pcap::{Capture, TcpStream};

const PORT: u16 = 15154;
const CAPTURES: [&str; 3] = ["01-ctf-session.pcap", "02-custom-world-session.pcap", "03-edge-cases.pcap"];

/// The framed part of a server stream (after the 9-byte hello), or None for connections that are not BZFlag
/// sessions (the HTTP probe of capture 3 gets a text answer).
fn server_frames(s: &TcpStream) -> Option<Vec<(u16, Vec<u8>)>> {
    if !s.to_server.starts_with(b"BZFLAG\r\n\r\n") || s.from_server.get(8) == Some(&b'\r') {
        return None;
    }
    let mut fb = FrameBuffer::new();
    fb.push(s.from_server.get(9..)?);
    let mut out = vec![];
    while let Some(f) = fb.next_frame().expect("captured frames are well formed") {
        out.push(f);
    }
    assert_eq!(fb.buffered(), 0, "stream of client port {} ends mid-message", s.client_port);
    Some(out)
}

#[test]
fn every_captured_server_message_parses() {
    let mut total = 0;
    for name in CAPTURES {
        let cap = Capture::load(capture_path(name));
        for s in cap.tcp_streams(PORT) {
            let Some(frames) = server_frames(&s) else { continue };
            for (c, body) in frames {
                let m = ServerMsg::parse(c, &body).unwrap_or_else(|e| panic!("{name} port {}: {e}", s.client_port));
                assert!(!matches!(m, ServerMsg::Unknown { .. }), "{name}: unknown {c:#06x}");
                // The reject reason field is a reused 128-byte buffer: bytes after its NUL are stale server memory.
                if !matches!(m, ServerMsg::Reject { .. }) {
                    assert_eq!(m.encode()[4..], body[..], "{name}: {m:?} re-encodes differently");
                }
                total += 1;
            }
        }
        for d in cap.udp_datagrams(PORT).into_iter().filter(|d| d.from_server) {
            let (frames, err) = datagram_frames(&d.payload);
            assert!(err.is_none(), "{name}: {err:?}");
            for f in frames {
                if f.code == code::PING_CODE_REPLY {
                    continue; // LAN discovery reply, not a session message
                }
                let m = ServerMsg::parse(f.code, f.body).unwrap_or_else(|e| panic!("{name} udp: {e}"));
                assert!(!matches!(m, ServerMsg::Unknown { .. }));
                total += 1;
            }
        }
    }
    assert!(total > 500, "only {total} messages checked");
}

#[test]
fn every_captured_client_message_parses() {
    for name in CAPTURES {
        let cap = Capture::load(capture_path(name));
        for s in cap.tcp_streams(PORT) {
            let Some(rest) = s.to_server.strip_prefix(b"BZFLAG\r\n\r\n") else { continue };
            let mut fb = FrameBuffer::new();
            fb.push(rest);
            while let Ok(Some((c, body))) = fb.next_frame() {
                let m = ClientMsg::parse(c, &body).unwrap_or_else(|e| panic!("{name}: {e}"));
                // Capture 3 sends an unknown code on purpose (step K).
                if let ClientMsg::Unknown { code, .. } = m {
                    assert_eq!(code, 0x7a7a, "{name}");
                }
            }
        }
    }
}

/// Replays one captured connection through a fresh session: the server's TCP bytes and UDP datagrams to that
/// client, in time order, with timeouts fired as virtual time passes.
fn replay_connection(cap: &Capture, s: &TcpStream, config: SessionConfig) -> (Session, Vec<Event>) {
    let base = Instant::now();
    let mut inputs: Vec<(Duration, bool, Vec<u8>)> =
        s.from_server_segments.iter().map(|(t, b)| (*t, true, b.clone())).collect();
    for d in cap.udp_datagrams(PORT) {
        if d.from_server && d.client_port == s.client_port {
            inputs.push((d.time, false, d.payload));
        }
    }
    inputs.sort_by_key(|(t, ..)| *t);
    let mut session = Session::new(config);
    let mut events = vec![];
    let t0 = s.opened.unwrap_or_default();
    session.handle_connected(base + t0);
    for (t, tcp, bytes) in inputs {
        let now = base + t;
        if session.poll_timeout().is_some_and(|d| d <= now) {
            session.handle_timeout(now);
        }
        if tcp {
            session.handle_tcp(now, &bytes);
        } else {
            session.handle_udp(now, &bytes);
        }
        while session.poll_transmit().is_some() {}
        while let Some(r) = session.poll_world_request() {
            if let WorldRequest::Lookup { .. } = r {
                session.handle_world_cache(now, None);
            }
        }
        while let Some(e) = session.poll_event() {
            events.push(e);
        }
    }
    (session, events)
}

fn enter_of(s: &TcpStream) -> Option<(String, Team, bool)> {
    let rest = s.to_server.strip_prefix(b"BZFLAG\r\n\r\n")?;
    let mut fb = FrameBuffer::new();
    fb.push(rest);
    let mut full = false;
    while let Ok(Some((c, body))) = fb.next_frame() {
        match ClientMsg::parse(c, &body).ok()? {
            ClientMsg::NegotiateFlags { .. } => full = true,
            ClientMsg::Enter { callsign, team, .. } => return Some((callsign, team, full)),
            _ => {}
        }
    }
    None
}

#[test]
fn whole_captured_connections_replay_without_a_warning() {
    let mut replayed = 0;
    for name in ["01-ctf-session.pcap", "02-custom-world-session.pcap"] {
        let cap = Capture::load(capture_path(name));
        for s in cap.tcp_streams(PORT) {
            let Some((callsign, team, full)) = enter_of(&s) else { continue };
            let config =
                SessionConfig { callsign: callsign.clone(), team, full_join: full, ..SessionConfig::default() };
            let (session, events) = replay_connection(&cap, &s, config);
            assert_eq!(session.warnings(), 0, "{name} {callsign}: {events:#?}");
            assert!(events.iter().any(|e| matches!(e, Event::Accept { .. })), "{name} {callsign}");
            if full {
                assert!(
                    events.iter().any(|e| matches!(e, Event::World { cached: false, .. })),
                    "{name} {callsign} downloads and verifies the world"
                );
            }
            replayed += 1;
        }
    }
    assert!(replayed >= 4, "{replayed}");
}

#[test]
fn what_bzadmin_printed_in_capture_1_we_print_too() {
    let cap = Capture::load(capture_path("01-ctf-session.pcap"));
    let s = cap.tcp_streams(PORT).into_iter().find(|s| enter_of(s).is_some_and(|(c, ..)| c == "watcher")).unwrap();
    let config = SessionConfig { callsign: "watcher".into(), full_join: false, udp: false, ..SessionConfig::default() };
    let (_, events) = replay_connection(&cap, &s, config);
    let ours: Vec<String> = events.iter().map(text_line).collect();
    let bzadmin = std::fs::read_to_string(capture_path("01-ctf-bzadmin.log")).unwrap();
    for line in bzadmin.lines().filter(|l| !l.starts_with("Connecting to")) {
        assert!(ours.iter().any(|l| l == line), "bzadmin printed {line:?}; we printed:\n{}", ours.join("\n"));
    }
}
