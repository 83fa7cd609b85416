//! A small reader for classic pcap files (the shared BZFlag loopback captures): IPv4 TCP and UDP packets, TCP
//! streams reassembled per connection and direction, and UDP datagrams relative to a server port.
//!
//! Only what the captures need: link types Ethernet (1, the captures' type), BSD loopback (0), raw IP (101) and
//! Linux cooked (113); IPv4 without fragments. Anything else is counted in [`Capture::skipped`].
//!
//! ```ignore
//! let cap = Capture::load(capture_path("01-ctf-session.pcap"));
//! for s in cap.tcp_streams(15154) { println!("{} sent {} bytes", s.client_port, s.to_server.len()); }
//! ```

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::time::Duration;

/// Transport protocol of a [`Packet`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    Tcp,
    Udp,
}

/// The TCP header fields the reassembler uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpHeader {
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
}

impl TcpHeader {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;

    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// One IPv4 TCP or UDP packet.
#[derive(Clone, Debug)]
pub struct Packet {
    /// Time since the first packet of the capture.
    pub time: Duration,
    pub src: SocketAddrV4,
    pub dst: SocketAddrV4,
    pub proto: Proto,
    /// `Some` for TCP.
    pub tcp: Option<TcpHeader>,
    /// The transport payload (TCP segment data or UDP datagram).
    pub payload: Vec<u8>,
}

/// Both directions of one TCP connection to the server, reassembled by sequence number.
#[derive(Clone, Debug, Default)]
pub struct TcpStream {
    /// The client's port (the key of the stream; the server port is fixed per query).
    pub client_port: u16,
    /// When the client's SYN was seen (`None` if the capture started mid-connection).
    pub opened: Option<Duration>,
    /// Every byte the client sent, in order, without duplicates.
    pub to_server: Vec<u8>,
    /// Every byte the server sent.
    pub from_server: Vec<u8>,
    /// The new bytes each client packet delivered, with its time (retransmitted bytes removed).
    pub to_server_segments: Vec<(Duration, Vec<u8>)>,
    /// The new bytes each server packet delivered.
    pub from_server_segments: Vec<(Duration, Vec<u8>)>,
    /// The client sent FIN.
    pub client_fin: bool,
    /// The server sent FIN.
    pub server_fin: bool,
    /// Either side sent RST.
    pub reset: bool,
    /// Segments that never became contiguous (a hole in the capture). 0 for loopback captures.
    pub unfilled_segments: usize,
}

/// A UDP datagram to or from the server port.
#[derive(Clone, Debug)]
pub struct Datagram {
    pub time: Duration,
    pub from_server: bool,
    pub client_port: u16,
    pub payload: Vec<u8>,
}

/// A parsed pcap file.
#[derive(Clone, Debug)]
pub struct Capture {
    pub link_type: u32,
    /// Wall-clock time of the first packet (since the Unix epoch); packet times are relative to it.
    pub start: Duration,
    pub packets: Vec<Packet>,
    /// Records that were not IPv4 TCP/UDP (ARP, IPv6, fragments, truncated records …).
    pub skipped: usize,
}

impl Capture {
    /// Reads and parses `path`; fails the test with a message if it cannot.
    #[track_caller]
    pub fn load(path: impl AsRef<Path>) -> Capture {
        let path = path.as_ref();
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        Capture::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Parses a classic pcap file (either byte order, microsecond or nanosecond timestamps).
    pub fn parse(bytes: &[u8]) -> Result<Capture, String> {
        let header = bytes.get(..24).ok_or_else(|| format!("{} bytes is too short for a pcap header", bytes.len()))?;
        let magic = [header[0], header[1], header[2], header[3]];
        let (big_endian, nanos) = match magic {
            [0xd4, 0xc3, 0xb2, 0xa1] => (false, false),
            [0xa1, 0xb2, 0xc3, 0xd4] => (true, false),
            [0x4d, 0x3c, 0xb2, 0xa1] => (false, true),
            [0xa1, 0xb2, 0x3c, 0x4d] => (true, true),
            [0x0a, 0x0d, 0x0d, 0x0a] => return Err("pcapng is not supported (only classic pcap)".into()),
            _ => return Err(format!("not a pcap file (magic {magic:02x?})")),
        };
        let u32_at = |b: &[u8], at: usize| -> u32 {
            let w = [b[at], b[at + 1], b[at + 2], b[at + 3]];
            if big_endian {
                u32::from_be_bytes(w)
            } else {
                u32::from_le_bytes(w)
            }
        };
        let link_type = u32_at(header, 20) & 0x0fff_ffff; // the upper bits may carry FCS info
        let mut cap = Capture { link_type, start: Duration::ZERO, packets: Vec::new(), skipped: 0 };
        let mut first: Option<Duration> = None;
        let mut at = 24;
        while at < bytes.len() {
            let rec = bytes.get(at..at + 16).ok_or_else(|| format!("truncated record header at byte {at}"))?;
            let (secs, frac, incl) = (u32_at(rec, 0), u32_at(rec, 4), u32_at(rec, 8) as usize);
            let orig = u32_at(rec, 12) as usize;
            let data = bytes.get(at + 16..at + 16 + incl).ok_or_else(|| {
                format!("record at byte {at} claims {incl} bytes, file has {}", bytes.len() - at - 16)
            })?;
            at += 16 + incl;
            let abs = Duration::new(u64::from(secs), if nanos { frac } else { frac.saturating_mul(1000) });
            let start = *first.get_or_insert(abs);
            if incl < orig {
                cap.skipped += 1; // snapped: payload incomplete
                continue;
            }
            match link_payload(link_type, data).and_then(parse_ipv4) {
                Some((src, dst, proto, tcp, payload)) => cap.packets.push(Packet {
                    time: abs.saturating_sub(start),
                    src,
                    dst,
                    proto,
                    tcp,
                    payload: payload.to_vec(),
                }),
                None => cap.skipped += 1,
            }
        }
        cap.start = first.unwrap_or_default();
        Ok(cap)
    }

    /// Every TCP connection with `server_port` on one side, in order of first appearance. A new client SYN on a
    /// port that was used before starts a new stream.
    pub fn tcp_streams(&self, server_port: u16) -> Vec<TcpStream> {
        let mut streams: Vec<(TcpStream, [Direction; 2])> = Vec::new();
        let mut current: HashMap<u16, usize> = HashMap::new(); // client port -> index in `streams`
        for p in &self.packets {
            let Some(tcp) = p.tcp else { continue };
            let to_server = p.dst.port() == server_port;
            if !to_server && p.src.port() != server_port {
                continue;
            }
            let client_port = if to_server { p.src.port() } else { p.dst.port() };
            let new_connection = to_server && tcp.has(TcpHeader::SYN) && !tcp.has(TcpHeader::ACK);
            let idx = match current.get(&client_port) {
                // A retransmitted SYN (same initial sequence number, nothing sent yet) is not a new connection.
                Some(&i) if new_connection => {
                    let (s, dirs) = &streams[i];
                    if s.to_server.is_empty() && dirs[0].next == Some(tcp.seq.wrapping_add(1)) {
                        i
                    } else {
                        streams.push((TcpStream { client_port, ..Default::default() }, Default::default()));
                        streams.len() - 1
                    }
                }
                Some(&i) => i,
                None => {
                    streams.push((TcpStream { client_port, ..Default::default() }, Default::default()));
                    streams.len() - 1
                }
            };
            current.insert(client_port, idx);
            let (stream, dirs) = &mut streams[idx];
            if new_connection && stream.opened.is_none() {
                stream.opened = Some(p.time);
            }
            if tcp.has(TcpHeader::RST) {
                stream.reset = true;
            }
            if tcp.has(TcpHeader::FIN) {
                if to_server {
                    stream.client_fin = true;
                } else {
                    stream.server_fin = true;
                }
            }
            let (dir, data, segments) = if to_server {
                (&mut dirs[0], &mut stream.to_server, &mut stream.to_server_segments)
            } else {
                (&mut dirs[1], &mut stream.from_server, &mut stream.from_server_segments)
            };
            dir.segment(p.time, &tcp, &p.payload, data, segments);
        }
        streams
            .into_iter()
            .map(|(mut s, dirs)| {
                s.unfilled_segments = dirs.iter().map(|d| d.pending.len()).sum();
                s
            })
            .collect()
    }

    /// Every UDP datagram to or from `server_port`, in capture order.
    pub fn udp_datagrams(&self, server_port: u16) -> Vec<Datagram> {
        self.packets
            .iter()
            .filter(|p| p.proto == Proto::Udp)
            .filter_map(|p| {
                let from_server = if p.dst.port() == server_port {
                    false
                } else if p.src.port() == server_port {
                    true
                } else {
                    return None;
                };
                let client_port = if from_server { p.dst.port() } else { p.src.port() };
                Some(Datagram { time: p.time, from_server, client_port, payload: p.payload.clone() })
            })
            .collect()
    }
}

/// Reassembly state of one direction.
#[derive(Clone, Debug, Default)]
struct Direction {
    /// Next expected sequence number; `None` until a SYN or the first data segment.
    next: Option<u32>,
    /// Segments that arrived ahead of `next`: (seq, time, bytes).
    pending: Vec<(u32, Duration, Vec<u8>)>,
}

impl Direction {
    fn segment(
        &mut self,
        time: Duration,
        tcp: &TcpHeader,
        payload: &[u8],
        data: &mut Vec<u8>,
        segments: &mut Vec<(Duration, Vec<u8>)>,
    ) {
        let mut seq = tcp.seq;
        if tcp.has(TcpHeader::SYN) {
            if self.next.is_none() {
                self.next = Some(seq.wrapping_add(1));
            }
            seq = seq.wrapping_add(1); // SYN occupies one sequence number (data on a SYN is rare but legal)
        }
        if payload.is_empty() {
            return; // pure ACK / FIN / RST
        }
        let next = *self.next.get_or_insert(seq);
        let ahead = seq.wrapping_sub(next) as i32;
        if ahead > 0 {
            self.pending.push((seq, time, payload.to_vec()));
            return;
        }
        self.deliver(time, seq, payload, data, segments);
        // Segments waiting for this one may fit now.
        while let Some(i) = self.pending.iter().position(|(s, ..)| s.wrapping_sub(self.next.unwrap_or(*s)) as i32 <= 0)
        {
            let (s, t, bytes) = self.pending.swap_remove(i);
            self.deliver(t, s, &bytes, data, segments);
        }
    }

    /// Appends the part of a segment starting at `seq` (≤ next) that is new.
    fn deliver(
        &mut self,
        time: Duration,
        seq: u32,
        payload: &[u8],
        data: &mut Vec<u8>,
        segments: &mut Vec<(Duration, Vec<u8>)>,
    ) {
        let next = self.next.unwrap_or(seq);
        let overlap = next.wrapping_sub(seq) as usize;
        if overlap >= payload.len() {
            return; // retransmission of bytes we already have
        }
        let fresh = &payload[overlap..];
        data.extend_from_slice(fresh);
        segments.push((time, fresh.to_vec()));
        self.next = Some(next.wrapping_add(fresh.len() as u32));
    }
}

/// The IPv4 packet inside a link-layer frame, or `None` for anything else.
fn link_payload(link_type: u32, frame: &[u8]) -> Option<&[u8]> {
    match link_type {
        // Ethernet: dst(6) src(6) [802.1Q tag(4)] ethertype(2)
        1 => {
            let mut at = 12;
            let mut ethertype = u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]);
            if ethertype == 0x8100 {
                at += 4;
                ethertype = u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]);
            }
            (ethertype == 0x0800).then(|| frame.get(at + 2..)).flatten()
        }
        // BSD loopback: 4-byte address family in host order; AF_INET = 2
        0 => {
            let fam = frame.get(..4)?;
            (fam == [2, 0, 0, 0] || fam == [0, 0, 0, 2]).then(|| &frame[4..])
        }
        // Raw IP
        101 => Some(frame),
        // Linux cooked (SLL): protocol at 14..16
        113 => (frame.get(14..16)? == [0x08, 0x00]).then(|| frame.get(16..)).flatten(),
        _ => None,
    }
}

type Parsed<'a> = (SocketAddrV4, SocketAddrV4, Proto, Option<TcpHeader>, &'a [u8]);

/// An unfragmented IPv4 TCP or UDP packet: addresses, protocol, TCP header, transport payload.
fn parse_ipv4(ip: &[u8]) -> Option<Parsed<'_>> {
    let b = |i: usize| ip.get(i).copied();
    let be16 = |bytes: &[u8], i: usize| Some(u16::from_be_bytes([*bytes.get(i)?, *bytes.get(i + 1)?]));
    let be32 = |bytes: &[u8], i: usize| {
        Some(u32::from_be_bytes([*bytes.get(i)?, *bytes.get(i + 1)?, *bytes.get(i + 2)?, *bytes.get(i + 3)?]))
    };
    let vihl = b(0)?;
    if vihl >> 4 != 4 {
        return None;
    }
    let ihl = usize::from(vihl & 0x0f) * 4;
    let total = usize::from(be16(ip, 2)?);
    let frag = be16(ip, 6)?;
    if frag & 0x3fff != 0 {
        return None; // more-fragments flag or a fragment offset
    }
    let proto = b(9)?;
    let src_ip = Ipv4Addr::new(b(12)?, b(13)?, b(14)?, b(15)?);
    let dst_ip = Ipv4Addr::new(b(16)?, b(17)?, b(18)?, b(19)?);
    // `total` bounds the packet; Ethernet may pad short frames.
    let l4 = ip.get(ihl..total.min(ip.len()))?;
    let (sport, dport) = (be16(l4, 0)?, be16(l4, 2)?);
    let (proto, tcp, payload) = match proto {
        6 => {
            let off = usize::from(*l4.get(12)? >> 4) * 4;
            let hdr = TcpHeader { seq: be32(l4, 4)?, ack: be32(l4, 8)?, flags: *l4.get(13)? };
            (Proto::Tcp, Some(hdr), l4.get(off..)?)
        }
        17 => {
            let len = usize::from(be16(l4, 4)?);
            (Proto::Udp, None, l4.get(8..len.min(l4.len()).max(8))?)
        }
        _ => return None,
    };
    Some((SocketAddrV4::new(src_ip, sport), SocketAddrV4::new(dst_ip, dport), proto, tcp, payload))
}

/// BZFlag framing helpers for checking captures.
pub mod bz {
    /// What a client sends first on TCP.
    pub const CONNECT_HEADER: &[u8; 10] = b"BZFLAG\r\n\r\n";
    /// The server's hello: this version plus one player-id byte.
    pub const VERSION: &[u8; 8] = b"BZFS0221";

    /// Splits `[u16 len][u16 code][len bytes]` messages off the front of `bytes`; returns them as
    /// `(code, payload)` plus the incomplete rest.
    pub fn split_messages(mut bytes: &[u8]) -> (Vec<(u16, &[u8])>, &[u8]) {
        let mut out = Vec::new();
        while let [l0, l1, c0, c1, rest @ ..] = bytes {
            let len = usize::from(u16::from_be_bytes([*l0, *l1]));
            let Some(payload) = rest.get(..len) else { break };
            out.push((u16::from_be_bytes([*c0, *c1]), payload));
            bytes = &rest[len..];
        }
        (out, bytes)
    }
}
