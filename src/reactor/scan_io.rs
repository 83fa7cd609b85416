//! The scans' I/O on the reactor: [`Scan`]s on the same `Poll` as the BZFlag sessions.
//!
//! Each scan gets one unconnected UDP socket per address family (opened on its first datagram to that family),
//! shared by all of its queries; replies are read in batches (one `recvmmsg` for up to 32 datagrams on Linux, see
//! [`batch`]) until the socket is empty or [`QUERY_READ_BUDGET`] datagrams were read this turn, and handed to the
//! scan, which demultiplexes them by source address. The scan's datagrams go out in batches too (`sendmmsg`), straight
//! from its buffer; those the kernel cannot take right away wait in a bounded queue per socket
//! ([`MAX_QUERY_UDP_QUEUE`]) with `WRITABLE` interest registered only while the queue is not empty. The scan's
//! deadline is part of the reactor's poll timeout.
//!
//! **Replies wait while nothing can start.** While the scan's rate limit holds back its waiting queries
//! ([`Scan::quiet_until`]), a reply can only end its query: no new one starts before the bucket has a batch of tokens
//! again. So the sockets leave the poll until then (at most [`MAX_READ_HOLD`]), and every reply that came meanwhile
//! is read in one go when the scan wakes to send its next batch, or before any of its deadlines is handled (so that
//! no retry or timeout overtakes a reply that was already there). A rate-limited scan then wakes once per batch of
//! sends instead of once per reply, which shares a wake-up's cost among the batch (see `docs/scanning.md`). Pings stay
//! honest: each datagram's time is the kernel's receive time (`SO_TIMESTAMPNS`, see [`batch`]), not the read's.
//! Replies wait only where that time is given (Linux) and once a datagram has shown that the kernel stamps them as
//! they arrive (right after the first socket of a system asks for receive times, Linux stamps them when they are read
//! for a moment, which would count the wait in the ping), only while the kernel's receive buffer has room for two
//! replies of 2 KiB for every running query ([`HOLD_BYTES_PER_QUERY`]), and never again in a scan once the kernel
//! reported a datagram dropped for a full buffer (`SO_RXQ_OVFL`).
//!
//! Built-in TCP queries (`bzflag`) run as ordinary query-only
//! sessions on the reactor whose outcome goes back to the scan instead of to [`Reactor::poll_event`].

use std::collections::VecDeque;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant, SystemTime};

use mio::net::UdpSocket;
use mio::{Interest, Registry, Token};
use slab::Slab;
use tracing::debug;

use super::{Reactor, SessionId, SessionOptions, Source};
use crate::bzflag::event::Event;
use crate::bzflag::session::{SessionConfig, SessionEnd};
use crate::query::result::{ErrorKind, QueryError, QueryResult};
use crate::query::scan::{Scan, ScanEvent, TcpQueryId};
use batch::{ask_receive_info, send_batch, RecvBatch, BATCH};

#[allow(unsafe_code)] // the batched socket calls: the reactor's only unsafe (docs/unsafe.md)
mod batch;

/// Most datagrams waiting for one query socket while the kernel buffer is full; beyond it the oldest are dropped
/// (their queries retry or time out).
pub const MAX_QUERY_UDP_QUEUE: usize = 4096;

/// Datagrams read from one query socket per turn before the reactor's other sources (and the scan's own timers and
/// output) get their turn; the rest are read on the next turn, which comes at once.
pub const QUERY_READ_BUDGET: usize = 2 * BATCH;

/// Longest that a rate-limited scan's replies wait unread (see the module documentation): it bounds how late a result
/// comes out, not its ping, which is taken from the kernel's receive time.
pub const MAX_READ_HOLD: Duration = Duration::from_millis(100);

/// Receive-buffer room, as the kernel accounts it, that replies may wait unread only if there is this much of it for
/// every running query: two replies of up to 2 KiB (a datagram's accounted size is its payload and some 700 bytes).
pub const HOLD_BYTES_PER_QUERY: usize = 4096;

/// Identifies a scan on a reactor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScanId(pub usize);

/// Which scan query a (built-in TCP) session answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Owner {
    pub(super) scan: ScanId,
    pub(super) query: TcpQueryId,
    pub(super) answered: bool,
}

struct QuerySock {
    sock: UdpSocket,
    token: Token,
    queue: VecDeque<(SocketAddr, Vec<u8>)>,
    /// On the poll (readable, and writable while `queue` has datagrams); off it while replies wait unread.
    registered: bool,
    writable_interest: bool,
    /// The kernel was asked for each datagram's receive time.
    stamps: bool,
    /// A datagram came with a receive time from before the read that got it: the kernel stamps datagrams as they
    /// arrive. (Right after a system's first socket asks, it may stamp them only when they are read, for a moment.)
    stamps_seen: bool,
    /// The receive buffer the kernel granted, in bytes as it accounts them.
    recv_buffer: usize,
    /// When a read last found the socket empty (or it was opened): no datagram read later arrived before it.
    emptied_at: Instant,
    /// The kernel's count of datagrams dropped for a full receive buffer, as last reported.
    drops: u32,
}

pub(super) struct ScanConn {
    scan: Scan,
    v4: Option<QuerySock>,
    v6: Option<QuerySock>,
    /// Why a family's socket could not be opened (every datagram to it then fails its query).
    open_error: [Option<String>; 2],
    dropped: u64,
    /// Receive slots, shared by the scan's sockets (made at the first read).
    recv: Option<Box<RecvBatch>>,
    /// Replies wait unread until then (the sockets are off the poll).
    hold: Option<Instant>,
    /// The kernel dropped a datagram for a full receive buffer: replies are read at once from then on.
    no_hold: bool,
}

impl ScanConn {
    pub(super) fn next_deadline(&mut self) -> Option<Instant> {
        match (self.scan.poll_timeout(), self.hold) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Until when replies may wait unread, if they may (see the module documentation).
    fn hold_until(&self, now: Instant) -> Option<Instant> {
        if self.no_hold {
            return None;
        }
        let mut room = usize::MAX;
        let mut any = false;
        for s in [self.v4.as_ref(), self.v6.as_ref()].into_iter().flatten() {
            if !s.stamps_seen || !s.queue.is_empty() {
                return None;
            }
            room = room.min(s.recv_buffer);
            any = true;
        }
        if !any || self.scan.running().saturating_mul(HOLD_BYTES_PER_QUERY) > room {
            return None;
        }
        let until = self.scan.quiet_until().filter(|t| *t > now)?;
        Some(until.min(now + MAX_READ_HOLD))
    }

    /// Reads what waits on the scan's sockets into the scan (at most [`QUERY_READ_BUDGET`] datagrams a socket);
    /// returns the sockets where more is left.
    fn read(&mut self, which: [bool; 2], now: Instant, clock: &super::Clock) -> [bool; 2] {
        let ScanConn { scan, v4, v6, recv, no_hold, .. } = self;
        let batch = recv.get_or_insert_with(|| Box::new(RecvBatch::new()));
        let mut left = [false; 2];
        for (fam, s) in [v4.as_mut(), v6.as_mut()].into_iter().enumerate() {
            if let (Some(s), true) = (s, which[fam]) {
                left[fam] = read_query_socket(scan, s, batch, no_hold, now, clock);
            }
        }
        left
    }

    fn is_done(&self) -> bool {
        self.scan.is_done()
            && self.v4.as_ref().is_none_or(|s| s.queue.is_empty())
            && self.v6.as_ref().is_none_or(|s| s.queue.is_empty())
    }
}

/// The reactor runs the scans of the query layer's front door ([`crate::query::front`]).
impl crate::query::ScanHost for Reactor {
    type Id = ScanId;
    fn add_scan(&mut self, scan: Scan) -> ScanId {
        Reactor::add_scan(self, scan)
    }
    fn scan(&self, id: ScanId) -> Option<&Scan> {
        Reactor::scan(self, id)
    }
    fn poll_scan_event(&mut self) -> Option<(ScanId, Instant, ScanEvent)> {
        Reactor::poll_scan_event(self)
    }
    fn recycle_scan_result(&mut self, id: ScanId, result: QueryResult) {
        Reactor::recycle_scan_result(self, id, result);
    }
    fn is_scan_done(&self, id: ScanId) -> bool {
        Reactor::is_scan_done(self, id)
    }
    fn remove_scan(&mut self, id: ScanId) -> Option<Scan> {
        Reactor::remove_scan(self, id)
    }
}

impl Reactor {
    /// Puts a scan on the reactor. Its sockets open when it first sends.
    pub fn add_scan(&mut self, scan: Scan) -> ScanId {
        let id = ScanId(self.scans.insert(ScanConn {
            scan,
            v4: None,
            v6: None,
            open_error: [None, None],
            dropped: 0,
            recv: None,
            hold: None,
            no_hold: false,
        }));
        self.pump_scan(id, self.clock.now());
        id
    }

    /// The scan, if it is on the reactor.
    pub fn scan(&self, id: ScanId) -> Option<&Scan> {
        self.scans.get(id.0).map(|s| &s.scan)
    }

    /// Runs `f` on a scan (e.g. to add targets), then sends what it produced.
    pub fn with_scan<R>(&mut self, id: ScanId, f: impl FnOnce(&mut Scan, Instant) -> R) -> Option<R> {
        let now = self.clock.now();
        let r = self.scans.get_mut(id.0).map(|s| f(&mut s.scan, now));
        self.pump_scan(id, now);
        r
    }

    /// True when the scan has nothing waiting, running or queued to send (its events may still be queued).
    pub fn is_scan_done(&self, id: ScanId) -> bool {
        self.scans.get(id.0).is_none_or(ScanConn::is_done)
    }

    /// Datagrams of the scan dropped because a socket's queue was full.
    pub fn scan_udp_dropped(&self, id: ScanId) -> u64 {
        self.scans.get(id.0).map_or(0, |s| s.dropped)
    }

    /// The next finished query of any scan, with the scan and the time.
    pub fn poll_scan_event(&mut self) -> Option<(ScanId, Instant, ScanEvent)> {
        self.scan_out.pop_front()
    }

    /// Gives a result read from [`Reactor::poll_scan_event`] back to its scan for reuse ([`Scan::recycle`]).
    pub fn recycle_scan_result(&mut self, id: ScanId, result: QueryResult) {
        if let Some(s) = self.scans.get_mut(id.0) {
            s.scan.recycle(result);
        }
    }

    /// Takes a scan off the reactor, closing its sockets (its built-in TCP queries run to their end unheard).
    pub fn remove_scan(&mut self, id: ScanId) -> Option<Scan> {
        if !self.scans.contains(id.0) {
            return None;
        }
        let mut sc = self.scans.remove(id.0);
        for s in [sc.v4.take(), sc.v6.take()].into_iter().flatten() {
            let mut s = s;
            let _ = self.poll.registry().deregister(&mut s.sock);
            self.sources.try_remove(s.token.0);
        }
        Some(sc.scan)
    }

    /// Ids of every scan on the reactor.
    pub fn scan_ids(&self) -> Vec<ScanId> {
        self.scans.iter().map(|(k, _)| ScanId(k)).collect()
    }

    pub(super) fn all_scans_done(&self) -> bool {
        self.scans.iter().all(|(_, s)| s.is_done())
    }

    /// The earliest scan deadline.
    pub(super) fn scans_deadline(&mut self) -> Option<Instant> {
        self.scans.iter_mut().filter_map(|(_, s)| s.next_deadline()).min()
    }

    /// A scan's socket is ready.
    pub(super) fn on_query_udp_ready(&mut self, id: ScanId, v6: bool, now: Instant, readable: bool, writable: bool) {
        let clock = self.clock;
        let Some(sc) = self.scans.get_mut(id.0) else { return };
        if readable {
            let left = sc.read([!v6, v6], now, &clock);
            let token = if v6 { sc.v6.as_ref() } else { sc.v4.as_ref() }.map(|s| s.token);
            if let (true, Some(t)) = (left[usize::from(v6)], token) {
                self.backlog.push(t);
            }
        }
        if writable {
            self.flush_scan(id, now);
        }
        self.pump_scan(id, now);
    }

    /// Fires the due scan deadlines; returns nothing (scans are pumped here).
    pub(super) fn fire_scan_timers(&mut self, now: Instant) {
        let clock = self.clock;
        let due: Vec<usize> = self
            .scans
            .iter_mut()
            .filter_map(|(k, s)| s.next_deadline().is_some_and(|t| t <= now).then_some(k))
            .collect();
        for k in due {
            if let Some(s) = self.scans.get_mut(k) {
                // Replies that waited unread come first: no deadline may overtake a reply that was already there.
                let mut more = false;
                if s.hold.take().is_some() {
                    let left = s.read([true, true], now, &clock);
                    for (fam, sock) in [s.v4.as_ref(), s.v6.as_ref()].into_iter().enumerate() {
                        if let (true, Some(sock)) = (left[fam], sock) {
                            self.backlog.push(sock.token);
                            more = true;
                        }
                    }
                }
                // With more left to read (the next turn comes at once), the deadlines wait for that turn.
                if !more {
                    s.scan.handle_timeout(now);
                }
            }
            self.pump_scan(ScanId(k), now);
        }
    }

    /// An owned (built-in TCP query) session produced an event: route it to its scan.
    pub(super) fn scan_session_event(&mut self, key: usize, now: Instant, ev: Event) {
        let Some(c) = self.conns.get_mut(key) else { return };
        let Some(owner) = c.owner.as_mut() else { return };
        let (scan, query) = (owner.scan, owner.query);
        let outcome = match ev {
            Event::QueryResult { game, teams, players } => {
                owner.answered = true;
                let rtt = c.connected_at.map(|t| t.saturating_duration_since(c.started));
                Some((Ok(crate::query::bzflag::answer(&game, &teams, &players)), rtt))
            }
            Event::Closed { .. } if !owner.answered => {
                owner.answered = true;
                let err = match c.session.end() {
                    Some(SessionEnd::ConnectFailed(why)) if why.is_timeout() => {
                        QueryError::new(ErrorKind::Timeout, why.to_string())
                    }
                    Some(SessionEnd::ConnectFailed(why)) => QueryError::new(ErrorKind::Refused, why.to_string()),
                    Some(e @ SessionEnd::Timeout { .. }) => QueryError::new(ErrorKind::Timeout, e.to_string()),
                    Some(e @ SessionEnd::Protocol(_)) => QueryError::new(ErrorKind::Malformed, e.to_string()),
                    Some(e @ (SessionEnd::Rejected { .. } | SessionEnd::ServerFull | SessionEnd::Kicked { .. })) => {
                        QueryError::new(ErrorKind::Refused, e.to_string())
                    }
                    Some(e) => QueryError::new(ErrorKind::Error, e.to_string()),
                    None => QueryError::new(ErrorKind::Error, "the query session ended"),
                };
                Some((Err(err), None))
            }
            _ => None,
        };
        if let Some((outcome, ping)) = outcome {
            if let Some(sc) = self.scans.get_mut(scan.0) {
                sc.scan.handle_tcp_result(now, query, outcome, ping);
                self.pump_scan(scan, now);
            }
        }
    }

    /// Drains a scan's outputs: datagrams to the sockets, TCP queries to new sessions, events to the queue; then
    /// flushes the sockets and updates their interest.
    pub(super) fn pump_scan(&mut self, id: ScanId, now: Instant) {
        loop {
            let Some(sc) = self.scans.get_mut(id.0) else { return };
            let mut progressed = false;
            let mut send_errors = Vec::new();
            let registry = self.poll.registry();
            progressed |= send_datagrams(sc, id, &mut self.sources, registry, &mut send_errors);
            for (to, e) in send_errors {
                progressed = true;
                sc.scan.handle_send_error(now, to, &e);
            }
            let mut tcp = Vec::new();
            while let Some(q) = sc.scan.poll_tcp_query() {
                progressed = true;
                tcp.push(q);
            }
            while let Some(ev) = sc.scan.poll_event() {
                progressed = true;
                self.scan_out.push_back((id, now, ev));
            }
            for q in tcp {
                let config = SessionConfig {
                    query_only: true,
                    hello_timeout: q.timeout,
                    join_timeout: q.timeout,
                    ..SessionConfig::default()
                };
                match self.add_session(q.addr, config, SessionOptions::default()) {
                    Ok(sid) => {
                        if let Some(c) = self.conns.get_mut(sid.0) {
                            c.owner = Some(Owner { scan: id, query: q.id, answered: false });
                        }
                    }
                    Err(e) => {
                        if let Some(sc) = self.scans.get_mut(id.0) {
                            let kind = if e.kind() == io::ErrorKind::ConnectionRefused {
                                ErrorKind::Refused
                            } else {
                                ErrorKind::Error
                            };
                            let err = QueryError::new(kind, format!("cannot connect to {}: {e}", q.addr));
                            sc.scan.handle_tcp_result(now, q.id, Err(err), None);
                        }
                    }
                }
            }
            if !progressed {
                break;
            }
        }
        let Some(sc) = self.scans.get_mut(id.0) else { return };
        sc.hold = sc.hold_until(now);
        let registry = self.poll.registry();
        for s in [sc.v4.as_mut(), sc.v6.as_mut()].into_iter().flatten() {
            if sc.hold.is_some() {
                // Off the poll until the hold ends (its send queue is empty: holds need that).
                if s.registered && registry.deregister(&mut s.sock).is_ok() {
                    s.registered = false;
                }
                continue;
            }
            let want = !s.queue.is_empty();
            let interest = if want { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
            if !s.registered {
                // Back on the poll: a datagram that came since the last read raises an event at once.
                if registry.register(&mut s.sock, s.token, interest).is_ok() {
                    s.registered = true;
                    s.writable_interest = want;
                }
            } else if want != s.writable_interest && registry.reregister(&mut s.sock, s.token, interest).is_ok() {
                s.writable_interest = want;
            }
        }
    }

    /// Called when the scan's socket became writable.
    pub(super) fn flush_scan(&mut self, id: ScanId, now: Instant) {
        let Some(sc) = self.scans.get_mut(id.0) else { return };
        let mut errors = Vec::new();
        for s in [sc.v4.as_mut(), sc.v6.as_mut()].into_iter().flatten() {
            flush_query(s, &mut errors);
        }
        for (to, e) in errors {
            sc.scan.handle_send_error(now, to, &e);
        }
    }

    /// Removes finished sessions that belonged to scans.
    pub(super) fn reap_scan_sessions(&mut self) {
        let done: Vec<usize> = self.conns.iter().filter(|(_, c)| c.owner.is_some() && c.done).map(|(k, _)| k).collect();
        for k in done {
            self.remove_session(SessionId(k));
        }
    }
}

/// Sends what the scan has waiting, in order, in batches of one address family (straight from the scan's buffer);
/// what the kernel cannot take now waits in the socket's queue, behind anything already there. Opens a family's
/// socket at its first datagram. Returns whether there was anything to send; failed sends go to `errors`.
fn send_datagrams(
    sc: &mut ScanConn,
    id: ScanId,
    sources: &mut Slab<Source>,
    registry: &Registry,
    errors: &mut Vec<(SocketAddr, io::Error)>,
) -> bool {
    let ScanConn { scan, v4, v6, open_error, dropped, .. } = sc;
    let mut any = false;
    loop {
        let Some(first) = scan.pending_transmits().next().map(|(to, _)| to) else { break };
        any = true;
        let is_v6 = first.is_ipv6();
        let fam = usize::from(is_v6);
        let slot = if is_v6 { &mut *v6 } else { &mut *v4 };
        if slot.is_none() && open_error[fam].is_none() {
            match open_query_socket(is_v6) {
                Ok((mut sock, recv_buffer)) => {
                    let token = Token(sources.insert(Source::QueryUdp(id, is_v6)));
                    match registry.register(&mut sock, token, Interest::READABLE) {
                        Ok(()) => {
                            let stamps = ask_receive_info(&sock);
                            *slot = Some(QuerySock {
                                sock,
                                token,
                                queue: VecDeque::new(),
                                registered: true,
                                writable_interest: false,
                                stamps,
                                stamps_seen: false,
                                recv_buffer,
                                emptied_at: Instant::now(),
                                drops: 0,
                            })
                        }
                        Err(e) => {
                            sources.remove(token.0);
                            open_error[fam] = Some(format!("cannot register the query socket: {e}"));
                        }
                    }
                }
                Err(e) => {
                    let fam_name = if is_v6 { "IPv6" } else { "IPv4" };
                    open_error[fam] = Some(format!("cannot open an {fam_name} UDP socket: {e}"));
                }
            }
        }
        let Some(s) = slot.as_mut() else {
            let why = open_error[fam].clone().unwrap_or_default();
            errors.push((first, io::Error::new(io::ErrorKind::AddrNotAvailable, why)));
            scan.consume_transmits(1);
            continue;
        };
        // The next run of datagrams to this family, up to a batch.
        let mut run: [(SocketAddr, &[u8]); BATCH] = [(first, &[]); BATCH];
        let mut n = 0;
        for (slot, t) in run.iter_mut().zip(scan.pending_transmits().take_while(|(to, _)| to.is_ipv6() == is_v6)) {
            *slot = t;
            n += 1;
        }
        let run = &run[..n];
        // Sent at once while the kernel takes them, so ping starts when the request leaves; behind older ones when
        // some already wait.
        let sent = if s.queue.is_empty() { send_batch(&s.sock, run) } else { Err(io::ErrorKind::WouldBlock.into()) };
        match sent {
            Ok(k) if k > 0 => scan.consume_transmits(k),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() != io::ErrorKind::WouldBlock => {
                // The first datagram of the run failed (no route...); the others are tried again.
                errors.push((first, e));
                scan.consume_transmits(1);
            }
            // The kernel's buffer is full, or older datagrams wait: the run waits behind them.
            _ => {
                for &(to, data) in run {
                    if s.queue.len() >= MAX_QUERY_UDP_QUEUE {
                        s.queue.pop_front();
                        *dropped += 1;
                    }
                    s.queue.push_back((to, data.to_vec()));
                }
                scan.consume_transmits(n);
                flush_query(s, errors);
            }
        }
    }
    any
}

fn flush_query(s: &mut QuerySock, errors: &mut Vec<(SocketAddr, io::Error)>) {
    while let Some((to, data)) = s.queue.front() {
        match s.sock.send_to(data, *to) {
            Ok(_) => {
                s.queue.pop_front();
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let to = *to;
                s.queue.pop_front();
                errors.push((to, e));
            }
        }
    }
}

/// Receive buffer asked for a query socket: a scan's replies come in bursts (a few hundred servers answering within a
/// millisecond), and a default-sized buffer (about 200 KiB, a few hundred datagrams) overflows and turns answers into
/// retries. The system caps it (`net.core.rmem_max`); failing to get it is not an error.
pub const QUERY_RECV_BUFFER: usize = 4 << 20;
/// Send buffer asked for a query socket.
pub const QUERY_SEND_BUFFER: usize = 1 << 20;

/// Opens a query socket; returns it and the receive buffer the kernel granted (0 when it does not say).
fn open_query_socket(v6: bool) -> io::Result<(UdpSocket, usize)> {
    use socket2::{Domain, Protocol, Socket, Type};
    let any: SocketAddr = if v6 { (Ipv6Addr::UNSPECIFIED, 0).into() } else { (Ipv4Addr::UNSPECIFIED, 0).into() };
    let s = Socket::new(if v6 { Domain::IPV6 } else { Domain::IPV4 }, Type::DGRAM, Some(Protocol::UDP))?;
    if v6 {
        // IPv4 targets go through the IPv4 socket; this one stays IPv6-only.
        let _ = s.set_only_v6(true);
    }
    if let Err(e) = s.set_recv_buffer_size(QUERY_RECV_BUFFER) {
        debug!(error = %e, "query socket receive buffer");
    }
    if let Err(e) = s.set_send_buffer_size(QUERY_SEND_BUFFER) {
        debug!(error = %e, "query socket send buffer");
    }
    let recv_buffer = s.recv_buffer_size().unwrap_or(0);
    s.set_nonblocking(true)?;
    s.bind(&any.into())?;
    Ok((UdpSocket::from_std(s.into()), recv_buffer))
}

/// Reads what waits on one query socket into the scan (at `now`, the turn's time), at most [`QUERY_READ_BUDGET`]
/// datagrams; returns true when the budget ran out before the socket was empty. Each datagram goes in with its
/// receive time: the kernel's (converted to the monotonic clock by the clocks' difference right after the read, and
/// never before the socket was last found empty, so that a step of the system clock cannot make it older than it
/// can be), or the read's.
fn read_query_socket(
    scan: &mut Scan,
    s: &mut QuerySock,
    batch: &mut RecvBatch,
    no_hold: &mut bool,
    now: Instant,
    clock: &super::Clock,
) -> bool {
    let mut read = 0;
    loop {
        if read >= QUERY_READ_BUDGET {
            return true;
        }
        // Receive times from before the call prove that the kernel stamps datagrams as they arrive.
        let before = if s.stamps && !s.stamps_seen { Some(SystemTime::now()) } else { None };
        match batch.recv(&s.sock) {
            Ok(n) => {
                let (mono, wall) = (Instant::now(), s.stamps.then(SystemTime::now));
                read += n;
                if let Some(d) = batch.overflow.filter(|d| *d > s.drops) {
                    debug!(dropped = d - s.drops, "query socket receive buffer overflowed; replies are read at once");
                    s.drops = d;
                    *no_hold = true;
                }
                let oldest = mono.saturating_duration_since(s.emptied_at);
                for i in 0..n {
                    let Some((from, data, truncated)) = batch.get(i) else { break };
                    if truncated {
                        // Cannot happen with full-size slots; never parse a cut datagram.
                        debug!(%from, len = data.len(), "truncated datagram dropped");
                        continue;
                    }
                    let at = batch.received_at(i);
                    if let (Some(b), Some(at)) = (before, at) {
                        s.stamps_seen |= at < b;
                    }
                    let age = match (wall, at) {
                        (Some(w), Some(at)) => w.duration_since(at).unwrap_or(Duration::ZERO).min(oldest),
                        _ => Duration::ZERO,
                    };
                    // `mono` and `age` are real time; the scan is on the reactor's (game) time.
                    let game = clock.at(mono);
                    scan.handle_datagram_received(
                        now,
                        game.checked_sub(clock.to_game(age)).unwrap_or(game),
                        from,
                        data,
                    );
                }
                // A short batch means the socket was empty; every later datagram raises a new event.
                if n < BATCH {
                    s.emptied_at = mono;
                    return false;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                s.emptied_at = Instant::now();
                return false;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // Errors queued on the socket (e.g. ICMP reports where the system passes them on) are not fatal to the
            // socket; stop reading for this event.
            Err(e) => {
                debug!(error = %e, "query socket recv error");
                return false;
            }
        }
    }
}
