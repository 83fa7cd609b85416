//! The Teeworlds UDP master servers' list query: `teeworlds-master` (0.6, port 8300) and `teeworlds7-master` (0.7,
//! port 8283), as `src/mastersrv/mastersrv.h` of Teeworlds defines them.
//!
//! * Requests: `ff ff ff ff r e q 2` (the list) and `ff ff ff ff c o u 2` (its size). 0.6 sends them behind the
//!   connless header `ff`×6; 0.7 first gets a token from the master (the same 520-byte token request as a 0.7
//!   server query), then sends them connless with `21 <master token> <our token>`.
//! * Replies: `ff ff ff ff l i s 2` followed by 18-byte records (16 bytes of IP, IPv4 in its IPv4-mapped IPv6 form,
//!   then the port, big-endian), as many datagrams as needed; `ff ff ff ff s i z 2` followed by the count as a
//!   big-endian u16. The list is complete when as many distinct entries as the count arrived; without a count,
//!   when no page came for a while after the last one.
//! * A trailing partial record is ignored; duplicate entries are reported once; port 0 and unspecified addresses
//!   are skipped. At most [`MAX_ENTRIES`] entries are kept.

use crate::msg;
use query_abi::{Datagram, QueryConfig, RetryTimer, Sink, Status, Value};
use std::collections::HashSet;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

/// The list request.
pub const GETLIST: &[u8; 8] = b"\xff\xff\xff\xffreq2";
/// A list page.
pub const LIST: &[u8; 8] = b"\xff\xff\xff\xfflis2";
/// The count request.
pub const GETCOUNT: &[u8; 8] = b"\xff\xff\xff\xffcou2";
/// The count.
pub const COUNT: &[u8; 8] = b"\xff\xff\xff\xffsiz2";
/// Bytes of one list record.
pub const RECORD: usize = 18;
/// Most entries kept.
pub const MAX_ENTRIES: usize = 1 << 20;
/// How long to wait for more pages once some came.
const PAGE_WAIT_MS: u64 = 400;

/// The 0.6 form of a request: the connless header then the magic.
pub fn request06(magic: &[u8; 8]) -> [u8; 14] {
    let mut r = [0xffu8; 14];
    r[6..].copy_from_slice(magic);
    r
}

/// The 0.7 connless form of a request.
pub fn request07(master_token: [u8; 4], client_token: [u8; 4], magic: &[u8; 8]) -> Vec<u8> {
    let mut r = Vec::with_capacity(17);
    r.push((0x08 << 2) | 1); // CONNLESS, version 1 (0x21)
    r.extend_from_slice(&master_token);
    r.extend_from_slice(&client_token);
    r.extend_from_slice(magic);
    r
}

/// The entries of a `lis2` body (after the magic), in order.
pub fn parse_list(body: &[u8]) -> Vec<SocketAddr> {
    body.chunks_exact(RECORD)
        .filter_map(|rec| {
            let ip: [u8; 16] = rec.get(..16)?.try_into().ok()?;
            let port = u16::from_be_bytes([*rec.get(16)?, *rec.get(17)?]);
            let ip6 = Ipv6Addr::from(ip);
            let ip = match ip6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => IpAddr::V6(ip6),
            };
            (port != 0 && !ip.is_unspecified()).then_some(SocketAddr::new(ip, port))
        })
        .collect()
}

/// A list query of either master.
#[derive(Debug)]
pub struct MasterQuery {
    target: SocketAddr,
    seven: bool,
    client7: [u8; 4],
    master7: Option<[u8; 4]>,
    timer: RetryTimer,
    seen: HashSet<SocketAddr>,
    pages: u32,
    count: Option<u16>,
    done: bool,
}

impl MasterQuery {
    /// Starts the query (sends its first request).
    pub fn new(
        target: SocketAddr,
        seven: bool,
        client7: [u8; 4],
        config: &QueryConfig,
        now_ms: u64,
        sink: &mut dyn Sink,
    ) -> MasterQuery {
        let mut q = MasterQuery {
            target,
            seven,
            client7,
            master7: None,
            timer: RetryTimer::new(config),
            seen: HashSet::new(),
            pages: 0,
            count: None,
            done: false,
        };
        q.send_requests(sink);
        q.timer.arm(now_ms);
        q
    }

    /// When to act next.
    pub fn deadline(&self) -> Option<u64> {
        self.timer.deadline()
    }

    fn send_requests(&mut self, sink: &mut dyn Sink) {
        if !self.seven {
            sink.send(self.target, &request06(GETCOUNT));
            sink.send(self.target, &request06(GETLIST));
            return;
        }
        match self.master7 {
            None => {
                sink.send(self.target, &msg::token_request7(self.client7));
            }
            Some(t) => {
                sink.send(self.target, &request07(t, self.client7, GETCOUNT));
                sink.send(self.target, &request07(t, self.client7, GETLIST));
            }
        }
    }

    /// A datagram from the target.
    pub fn on_datagram(&mut self, now_ms: u64, from: SocketAddr, data: &[u8], sink: &mut dyn Sink) -> Datagram {
        if self.done || from != self.target {
            return Datagram::Ignored;
        }
        let payload = if self.seven {
            if self.master7.is_none() {
                let Some(t) = msg::token_reply7(data, self.client7) else { return Datagram::Ignored };
                self.master7 = Some(t);
                self.send_requests(sink);
                self.timer.arm(now_ms);
                return Datagram::Accepted;
            }
            match msg::connless7(data, self.client7) {
                Some(p) => p,
                None => return Datagram::Ignored,
            }
        } else {
            match data.get(..6) {
                Some(h) if h == [0xff; 6] => data.get(6..).unwrap_or(&[]),
                _ => return Datagram::Ignored,
            }
        };
        let (Some(magic), Some(body)) = (payload.get(..8), payload.get(8..)) else { return Datagram::Ignored };
        if magic == LIST {
            self.pages = self.pages.saturating_add(1);
            for a in parse_list(body) {
                if self.seen.len() >= MAX_ENTRIES {
                    break;
                }
                if self.seen.insert(a) {
                    sink.master_entry(a);
                }
            }
        } else if magic == COUNT {
            let (Some(&hi), Some(&lo)) = (body.first(), body.get(1)) else { return Datagram::Ignored };
            self.count = Some(u16::from_be_bytes([hi, lo]));
        } else {
            return Datagram::Ignored;
        }
        if self.count.is_some_and(|c| self.seen.len() >= usize::from(c)) && (self.pages > 0 || self.count == Some(0)) {
            self.finish(sink);
        } else {
            self.timer.arm_in(now_ms, PAGE_WAIT_MS.max(self.timer.first_wait_ms()));
        }
        Datagram::Accepted
    }

    /// A deadline passed.
    pub fn on_timeout(&mut self, now_ms: u64, sink: &mut dyn Sink) {
        if self.done || self.timer.is_waiting(now_ms) {
            return;
        }
        if self.pages > 0 || self.count == Some(0) {
            return self.finish(sink);
        }
        if self.timer.next_attempt() {
            self.send_requests(sink);
            self.timer.arm(now_ms);
            return;
        }
        self.done = true;
        self.timer.stop();
        let n = self.timer.attempts();
        sink.done(Status::TIMEOUT, &format!("no list from the master after {n} attempt(s)"));
    }

    fn finish(&mut self, sink: &mut dyn Sink) {
        self.done = true;
        self.timer.stop();
        sink.raw("entries", Value::Int(i64::try_from(self.seen.len()).unwrap_or(i64::MAX)));
        sink.raw("pages", Value::Int(i64::from(self.pages)));
        if let Some(c) = self.count {
            sink.raw("count", Value::Int(i64::from(c)));
        }
        sink.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(ip: [u8; 16], port: u16) -> Vec<u8> {
        let mut r = ip.to_vec();
        r.extend_from_slice(&port.to_be_bytes());
        r
    }

    #[test]
    fn list_records() {
        let mut v4 = [0u8; 16];
        v4[10] = 0xff;
        v4[11] = 0xff;
        v4[12..].copy_from_slice(&[192, 0, 2, 1]);
        let mut body = record(v4, 8303);
        body.extend(record([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2], 8304));
        body.extend(record(v4, 0)); // port 0: skipped
        body.extend(record([0; 16], 8303)); // unspecified: skipped
        body.extend_from_slice(&[1, 2, 3]); // a cut record
        let got: Vec<String> = parse_list(&body).iter().map(ToString::to_string).collect();
        assert_eq!(got, ["192.0.2.1:8303", "[2001:db8::2]:8304"]);
        for i in 0..body.len() {
            let _ = parse_list(&body[..i]);
        }
    }
}
