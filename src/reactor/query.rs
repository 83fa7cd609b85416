//! The reactor's query driver: [`Scan`]s on the same `Poll` as the BZFlag sessions.
//!
//! Each scan gets one unconnected UDP socket per address family (opened on its first datagram to that family),
//! shared by all of its queries; replies are read in batches (one `recvmmsg` for up to 32 datagrams on Linux, see
//! [`batch`]) until the socket is empty or [`QUERY_READ_BUDGET`] datagrams were read this turn, and handed to the
//! scan, which demultiplexes them by source address. The scan's datagrams go out in batches too (`sendmmsg`), straight
//! from its buffer; those the kernel cannot take right away wait in a bounded queue per socket
//! ([`MAX_QUERY_UDP_QUEUE`]) with `WRITABLE` interest registered only while the queue is not empty. The scan's
//! deadline is part of the reactor's poll timeout. Built-in TCP queries (`bzflag`) run as ordinary query-only
//! sessions on the reactor whose outcome goes back to the scan instead of to [`Reactor::poll_event`].

use std::collections::VecDeque;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Instant;

use mio::net::UdpSocket;
use mio::{Interest, Registry, Token};
use slab::Slab;
use tracing::debug;

use super::{Reactor, SessionId, SessionOptions, Source};
use crate::bzflag::event::Event;
use crate::bzflag::session::{SessionConfig, SessionEnd};
use crate::query::result::{ErrorKind, QueryError, QueryResult};
use crate::query::scan::{Scan, ScanEvent, TcpQueryId};
use batch::{send_batch, RecvBatch, BATCH};

#[allow(unsafe_code)] // the batched socket calls: the reactor's only unsafe (docs/unsafe.md)
mod batch;

/// Most datagrams waiting for one query socket while the kernel buffer is full; beyond it the oldest are dropped
/// (their queries retry or time out).
pub const MAX_QUERY_UDP_QUEUE: usize = 4096;

/// Datagrams read from one query socket per turn before the reactor's other sources (and the scan's own timers and
/// output) get their turn; the rest are read on the next turn, which comes at once.
pub const QUERY_READ_BUDGET: usize = 2 * BATCH;

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
    writable_interest: bool,
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
}

impl ScanConn {
    pub(super) fn next_deadline(&mut self) -> Option<Instant> {
        self.scan.poll_timeout()
    }

    fn is_done(&self) -> bool {
        self.scan.is_done()
            && self.v4.as_ref().is_none_or(|s| s.queue.is_empty())
            && self.v6.as_ref().is_none_or(|s| s.queue.is_empty())
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
        }));
        self.pump_scan(id, Instant::now());
        id
    }

    /// The scan, if it is on the reactor.
    pub fn scan(&self, id: ScanId) -> Option<&Scan> {
        self.scans.get(id.0).map(|s| &s.scan)
    }

    /// Runs `f` on a scan (e.g. to add targets), then sends what it produced.
    pub fn with_scan<R>(&mut self, id: ScanId, f: impl FnOnce(&mut Scan, Instant) -> R) -> Option<R> {
        let now = Instant::now();
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
        let Some(sc) = self.scans.get_mut(id.0) else { return };
        if readable {
            let ScanConn { scan, v4, v6: s6, recv, .. } = sc;
            let Some(s) = (if v6 { s6.as_mut() } else { v4.as_mut() }) else { return };
            let batch = recv.get_or_insert_with(|| Box::new(RecvBatch::new()));
            let mut read = 0;
            loop {
                if read >= QUERY_READ_BUDGET {
                    self.backlog.push(s.token);
                    break;
                }
                match batch.recv(&s.sock) {
                    Ok(n) => {
                        read += n;
                        for i in 0..n {
                            let Some((from, data, truncated)) = batch.get(i) else { break };
                            if truncated {
                                // Cannot happen with full-size slots; never parse a cut datagram.
                                debug!(%from, len = data.len(), "truncated datagram dropped");
                                continue;
                            }
                            scan.handle_datagram(now, from, data);
                        }
                        // A short batch means the socket was empty; every later datagram raises a new event.
                        if n < BATCH {
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    // Errors queued on the socket (e.g. ICMP reports where the system passes them on) are not
                    // fatal to the socket; stop reading for this event.
                    Err(e) => {
                        debug!(error = %e, "query socket recv error");
                        break;
                    }
                }
            }
        }
        if writable {
            self.flush_scan(id, now);
        }
        self.pump_scan(id, now);
    }

    /// Fires the due scan deadlines; returns nothing (scans are pumped here).
    pub(super) fn fire_scan_timers(&mut self, now: Instant) {
        let due: Vec<usize> = self
            .scans
            .iter_mut()
            .filter_map(|(k, s)| s.next_deadline().is_some_and(|t| t <= now).then_some(k))
            .collect();
        for k in due {
            if let Some(s) = self.scans.get_mut(k) {
                s.scan.handle_timeout(now);
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
                Some((Ok(crate::bzflag::server_info::answer(&game, &teams, &players)), rtt))
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
        for s in [sc.v4.as_mut(), sc.v6.as_mut()].into_iter().flatten() {
            let want = !s.queue.is_empty();
            if want != s.writable_interest {
                let interest = if want { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
                if self.poll.registry().reregister(&mut s.sock, s.token, interest).is_ok() {
                    s.writable_interest = want;
                }
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
                Ok(mut sock) => {
                    let token = Token(sources.insert(Source::QueryUdp(id, is_v6)));
                    match registry.register(&mut sock, token, Interest::READABLE) {
                        Ok(()) => {
                            *slot = Some(QuerySock { sock, token, queue: VecDeque::new(), writable_interest: false })
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

fn open_query_socket(v6: bool) -> io::Result<UdpSocket> {
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
    s.set_nonblocking(true)?;
    s.bind(&any.into())?;
    Ok(UdpSocket::from_std(s.into()))
}
