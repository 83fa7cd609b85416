//! The pcap reader (`support::pcap`) against the three shared BZFlag captures, cross-checked with the decoded
//! listings (`*.txt`, produced by the independent Python decoder `tools/decode_pcap.py`).

use std::collections::HashMap;

use crate::support::capture_path;
use crate::support::pcap::{bz, Capture, Proto, TcpStream};

/// The server port of every shared capture.
const SERVER_PORT: u16 = 15154;

/// Message codes as the listings name them (protocol sheet §5; the listings show the ping codes in hex).
const CODES: &[(u16, &str)] = &[
    (0x6163, "MsgAccept"),
    (0x6169, "MsgAdminInfo"),
    (0x616c, "MsgAlive"),
    (0x6170, "MsgAddPlayer"),
    (0x6175, "MsgAutoPilot"),
    (0x6366, "MsgCaptureFlag"),
    (0x6375, "MsgCacheURL"),
    (0x6466, "MsgDropFlag"),
    (0x656e, "MsgEnter"),
    (0x6578, "MsgExit"),
    (0x6674, "MsgFlagType"),
    (0x6675, "MsgFlagUpdate"),
    (0x6766, "MsgGrabFlag"),
    (0x676d, "MsgGMUpdate"),
    (0x6777, "MsgGetWorld"),
    (0x6773, "MsgGameSettings"),
    (0x6774, "MsgGameTime"),
    (0x6863, "MsgHandicap"),
    (0x6b6c, "MsgKilled"),
    (0x6d67, "MsgMessage"),
    (0x6e52, "MsgNewRabbit"),
    (0x6e66, "MsgNegotiateFlags"),
    (0x7061, "MsgPause"),
    (0x7062, "MsgPlayerInfo"),
    (0x7075, "MsgPlayerUpdate"),
    (0x7073, "MsgPlayerUpdateSmall"),
    (0x7167, "MsgQueryGame"),
    (0x7170, "MsgQueryPlayers"),
    (0x726a, "MsgReject"),
    (0x7270, "MsgRemovePlayer"),
    (0x7362, "MsgShotBegin"),
    (0x7363, "MsgScore"),
    (0x7365, "MsgShotEnd"),
    (0x736b, "MsgSuperKill"),
    (0x7376, "MsgSetVar"),
    (0x746f, "MsgTimeUpdate"),
    (0x7470, "MsgTeleport"),
    (0x7466, "MsgTransferFlag"),
    (0x7475, "MsgTeamUpdate"),
    (0x7768, "MsgWantWHash"),
    (0x7773, "MsgWantSettings"),
    (0x6f66, "MsgUDPLinkRequest"),
    (0x6f67, "MsgUDPLinkEstablished"),
    (0x7069, "MsgLagPing"),
];

fn name(code: u16) -> String {
    CODES.iter().find(|(c, _)| *c == code).map_or_else(|| format!("0x{code:04x}"), |(_, n)| n.to_string())
}

/// One message line of a listing: `(transport, to_server, client_port, name, payload_len)`.
type Listed = (String, bool, u16, String, usize);

/// The message lines of a decoded listing, in order.
fn listing(file: &str) -> Vec<Listed> {
    let text = std::fs::read_to_string(capture_path(file)).expect("listing");
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            // "   0.000 TCP -> client:33690 MsgQueryGame           len=0    (empty)"
            let [_t, transport, arrow, client, name, len, ..] = f.as_slice() else { return None };
            let len = len.strip_prefix("len=")?.parse().ok()?;
            let port = client.strip_prefix("client:")?.parse().ok()?;
            Some((transport.to_string(), *arrow == "->", port, name.to_string(), len))
        })
        .collect()
}

/// The `# message counts` block at the end of a listing: `(transport, arrow, name) -> count`.
fn listed_counts(file: &str) -> HashMap<(String, String, String), usize> {
    let text = std::fs::read_to_string(capture_path(file)).expect("listing");
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.strip_prefix("#")?.split_whitespace().collect();
            let [transport, arrow, name, count] = f.as_slice() else { return None };
            Some(((transport.to_string(), arrow.to_string(), name.to_string()), count.parse().ok()?))
        })
        .collect()
}

/// The messages of one direction of a TCP stream after the connect header / hello, like the Python decoder.
fn tcp_messages(s: &TcpStream, to_server: bool) -> Vec<(u16, usize)> {
    let body = if to_server {
        match s.to_server.strip_prefix(bz::CONNECT_HEADER.as_slice()) {
            Some(rest) => rest,
            None => return Vec::new(), // not a BZFlag client (capture 3, step A)
        }
    } else if s.from_server.starts_with(b"BZFS0221\r\n") || s.from_server.len() < 9 {
        return Vec::new(); // the server's text answer to a non-BZFlag client
    } else {
        &s.from_server[9..]
    };
    let (msgs, rest) = bz::split_messages(body);
    assert!(rest.is_empty(), "client {} to_server={to_server}: {} trailing bytes", s.client_port, rest.len());
    msgs.into_iter().map(|(code, payload)| (code, payload.len())).collect()
}

/// Every message of the capture as the listing would show it, grouped per (transport, direction, client).
fn decoded(cap: &Capture) -> Vec<Listed> {
    let mut out = Vec::new();
    for s in cap.tcp_streams(SERVER_PORT) {
        for to_server in [true, false] {
            for (code, len) in tcp_messages(&s, to_server) {
                out.push(("TCP".to_string(), to_server, s.client_port, name(code), len));
            }
        }
    }
    for d in cap.udp_datagrams(SERVER_PORT) {
        let (msgs, rest) = bz::split_messages(&d.payload);
        assert!(rest.is_empty(), "datagram at {:?}: {} trailing bytes", d.time, rest.len());
        for (code, payload) in msgs {
            out.push(("UDP".to_string(), !d.from_server, d.client_port, name(code), payload.len()));
        }
    }
    out
}

/// The listing's message lines grouped the same way (per stream and direction, original order inside).
fn grouped(mut lines: Vec<Listed>) -> Vec<Listed> {
    // Stable sort by (transport, client, direction) keeps the in-stream order; TCP streams and UDP flows are
    // interleaved in time in the listing but each direction is ordered.
    lines.sort_by_key(|(t, to_server, port, ..)| (t.clone(), *port, !*to_server));
    lines
}

/// Reassembling and framing the pcap gives exactly the listing's messages (names and lengths), per stream.
fn check_against_listing(pcap: &str, txt: &str) {
    let cap = Capture::load(capture_path(pcap));
    assert_eq!(cap.link_type, 1, "Ethernet");
    let ours = grouped(decoded(&cap));
    let theirs = grouped(listing(txt));
    assert_eq!(ours.len(), theirs.len(), "message count");
    for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(a, b, "message #{i} (grouped by stream)");
    }
    // And the totals block agrees too.
    let mut counts: HashMap<(String, String, String), usize> = HashMap::new();
    for (t, to_server, _, name, _) in &ours {
        *counts.entry((t.clone(), if *to_server { "->" } else { "<-" }.to_string(), name.clone())).or_default() += 1;
    }
    assert_eq!(counts, listed_counts(txt));
    for s in cap.tcp_streams(SERVER_PORT) {
        assert_eq!(s.unfilled_segments, 0, "client {}: hole in the stream", s.client_port);
        let joined: Vec<u8> = s.to_server_segments.iter().flat_map(|(_, b)| b.iter().copied()).collect();
        assert_eq!(joined, s.to_server, "segments concatenate to the stream");
        let joined: Vec<u8> = s.from_server_segments.iter().flat_map(|(_, b)| b.iter().copied()).collect();
        assert_eq!(joined, s.from_server);
        assert!(s.to_server_segments.windows(2).all(|w| w[0].0 <= w[1].0), "segment times are ordered");
    }
}

#[test]
fn capture1_matches_its_listing() {
    check_against_listing("01-ctf-session.pcap", "01-ctf-session.txt");
}

#[test]
fn capture2_matches_its_listing() {
    check_against_listing("02-custom-world-session.pcap", "02-custom-world-session.txt");
}

#[test]
fn capture3_matches_its_listing() {
    check_against_listing("03-edge-cases.pcap", "03-edge-cases.txt");
}

#[test]
fn capture1_streams_and_datagrams() {
    let cap = Capture::load(capture_path("01-ctf-session.pcap"));
    assert_eq!(cap.skipped, 0);
    assert!(cap.packets.iter().all(|p| p.src.ip().is_loopback() && p.dst.ip().is_loopback()));
    assert_eq!(cap.packets[0].time, std::time::Duration::ZERO);

    let streams = cap.tcp_streams(SERVER_PORT);
    let ports: Vec<u16> = streams.iter().map(|s| s.client_port).collect();
    assert_eq!(ports, [33690, 33694, 33708, 33712], "bzfquery, bzadmin, alice, bob in order");

    // bzfquery: header, then MsgQueryGame + MsgQueryPlayers; the server's hello gives it id 0.
    let q = &streams[0];
    assert!(q.to_server.starts_with(b"BZFLAG\r\n\r\n"));
    assert_eq!(&q.to_server[10..], [0, 0, b'q', b'g', 0, 0, b'q', b'p']);
    assert!(q.from_server.starts_with(b"BZFS0221\x00"));
    assert!(q.opened.is_some() && q.client_fin && q.server_fin && !q.reset);

    // bzadmin: MsgEnter (247 bytes) right after the header, as observer (team 5) called "watcher".
    let admin = &streams[1];
    let msgs = tcp_messages(admin, true);
    assert_eq!(msgs[0], (0x656e, 247));
    let enter = &admin.to_server[10 + 4..];
    assert_eq!(&enter[..4], [0, 0, 0, 5], "type 0 (human), team 5 (observer)");
    assert!(enter[4..].starts_with(b"watcher\0"));
    let chat = admin.to_server.windows(18).any(|w| w == b"hello from bzadmin");
    assert!(chat, "bzadmin's chat line is in its stream");

    // UDP: only alice and bob (bzadmin has no UDP link); each starts with MsgUDPLinkRequest(own id).
    let udp = cap.udp_datagrams(SERVER_PORT);
    assert!(udp.iter().all(|d| d.client_port == 33708 || d.client_port == 33712));
    let first_alice = udp.iter().find(|d| d.client_port == 33708 && !d.from_server).expect("alice's UDP");
    assert_eq!(first_alice.payload, [0, 1, b'o', b'f', 1], "MsgUDPLinkRequest for player 1");
    let from_server = udp.iter().filter(|d| d.from_server).count();
    let to_server = udp.len() - from_server;
    // Client datagrams carry one message each: 7 + 40 + 1 + 1 + 2 + 2 in the listing's counts.
    assert_eq!(to_server, 53);
    // The server batches (e.g. a shot with another message), so it sent fewer datagrams than messages (81).
    let server_msgs: usize = udp.iter().filter(|d| d.from_server).map(|d| bz::split_messages(&d.payload).0.len()).sum();
    assert_eq!(server_msgs, 81);
    assert!(from_server < server_msgs);
}

#[test]
fn capture2_world_arrives_in_three_chunks() {
    let cap = Capture::load(capture_path("02-custom-world-session.pcap"));
    let carol = cap.tcp_streams(SERVER_PORT).into_iter().find(|s| s.client_port == 38288).expect("carol");
    let (msgs, _) = bz::split_messages(&carol.from_server[9..]);
    // MsgGetWorld replies: u32 bytesLeft, then data.
    let chunks: Vec<(u32, usize)> = msgs
        .iter()
        .filter(|(code, _)| *code == 0x6777)
        .map(|(_, p)| (u32::from_be_bytes([p[0], p[1], p[2], p[3]]), p.len() - 4))
        .collect();
    assert_eq!(chunks, [(2127, 1016), (1111, 1016), (0, 95)]);
    assert_eq!(chunks.iter().map(|c| c.1).sum::<usize>(), 2127, "the whole world blob");
}

#[test]
fn capture3_edge_cases() {
    let cap = Capture::load(capture_path("03-edge-cases.pcap"));
    let streams = cap.tcp_streams(SERVER_PORT);
    // Step A: an HTTP request instead of the header; the server answers with text after 2.5 s and closes.
    let http = streams.iter().find(|s| s.to_server.starts_with(b"GET / HTTP/1.0")).expect("step A");
    assert_eq!(http.from_server, b"BZFS0221\r\n\r\n");
    assert!(http.server_fin);
    // Step B: header and MsgQueryGame in one segment; the server replies hello + MsgQueryGame.
    let pipelined = streams.iter().find(|s| s.to_server == b"BZFLAG\r\n\r\n\x00\x00qg").expect("step B");
    assert_eq!(pipelined.to_server_segments.len(), 1, "one write");
    assert_eq!(tcp_messages(pipelined, false), [(0x7167, 44)]);
    // Some clients were closed with RST after a kick.
    assert!(streams.iter().any(|s| s.reset));
    // Step P: the UDP ping and its 60-byte reply (code 0x0303, "BZFS0221").
    let udp = cap.udp_datagrams(SERVER_PORT);
    assert_eq!(udp[0].payload, [0, 2, 4, 4, 0, 0]);
    assert!(!udp[0].from_server);
    assert_eq!(udp[1].payload.len(), 60);
    assert!(udp[1].from_server && udp[1].payload[2..12] == *b"\x03\x03BZFS0221");
    assert!(cap.packets.iter().any(|p| p.proto == Proto::Udp));
}

#[test]
fn parse_rejects_garbage() {
    assert!(Capture::parse(b"").is_err());
    assert!(Capture::parse(&[0u8; 24]).is_err());
    let mut pcapng = vec![0x0a, 0x0d, 0x0d, 0x0a];
    pcapng.resize(32, 0);
    assert!(Capture::parse(&pcapng).unwrap_err().contains("pcapng"));
    // A valid header followed by a truncated record.
    let bytes = std::fs::read(capture_path("01-ctf-session.pcap")).unwrap();
    let cut = &bytes[..24 + 16 + 10];
    assert!(Capture::parse(cut).unwrap_err().contains("claims"));
    assert_eq!(Capture::parse(&bytes[..24]).unwrap().packets.len(), 0);
}
