//! The reactor's HTTP driver: listeners and connections on the same `Poll` as the BZFlag sessions and the scans.
//!
//! Each listener ([`Reactor::add_http_listener`]) accepts up to its [`Limits::max_connections`], and up to
//! [`Limits::max_connections_per_peer`] from one peer address ([`crate::http::peer_key`]); one more connection gets
//! a `503` written straight away (one non-blocking write, nothing kept) and is closed. Every connection is a sans-IO
//! [`HttpConn`] in a slab: bytes read go to it (at most [`HTTP_READ_BUDGET`] reads a turn, each no larger than
//! [`HttpConn::read_room`]: while the connection's output is past its bound or its input buffer is full, the socket
//! is left unread and the client meets TCP backpressure; reading resumes when room opens), its pending bytes are
//! written as the socket takes them, with `WRITABLE` interest registered only while bytes are queued, and its
//! deadline (a request that never finishes, an idle keep-alive connection, a client that reads nothing, a stream at
//! its age limit) is part of the poll timeout. A listener bound to a loopback address answers `421` to a request
//! whose `Host` is not a loopback name nor one of [`Reactor::http_allow_hosts`] (DNS rebinding). Complete requests come out of [`Reactor::poll_http_event`]; the application answers with
//! [`Reactor::http_respond`], or starts a Server-Sent Events stream with [`Reactor::http_stream`] and pushes to it
//! with [`Reactor::http_push`], which never blocks: a stream whose queue would pass [`Limits::max_stream_queue`] is
//! dropped (its reader stopped reading), so the game and the other viewers never wait for it. A stream past
//! [`Limits::max_streams`] or [`Limits::max_streams_per_peer`] is refused with `503` (the other connections stay
//! for short requests), and `HEAD` on a stream gets its head only.

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use mio::net::{TcpListener, TcpStream};
use mio::{Interest, Token};
use slab::Slab;
use tracing::debug;

use super::{Reactor, Source};
use crate::http::{host_allowed, peer_key, CloseReason, ConnState, HttpConn, Limits, Method, Request, Response};

/// Reads (of up to 64 KiB) of one HTTP connection per turn; a request head is at most [`Limits::max_head`] bytes,
/// so a client that sends more is refused within the first reads anyway.
pub const HTTP_READ_BUDGET: usize = 2;
/// The kernel send buffer of an HTTP connection (the kernel doubles it for its bookkeeping).
pub const HTTP_SEND_BUFFER: usize = 128 * 1024;
/// Connections accepted per listener per turn before the other sources get their turn.
pub const HTTP_ACCEPT_BUDGET: usize = 64;

/// Identifies an HTTP listener on a reactor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HttpListenerId(pub usize);

/// Identifies an HTTP connection on a reactor: the slab key and a generation, so that an id kept after its
/// connection closed never reaches a newer connection in the same slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HttpConnId {
    key: usize,
    generation: u64,
}

/// What the HTTP side reports to the application.
#[derive(Debug)]
pub enum HttpEvent {
    /// A complete request: answer it with [`Reactor::http_respond`] or [`Reactor::http_stream`].
    Request {
        /// The listener it came to.
        listener: HttpListenerId,
        /// The connection.
        conn: HttpConnId,
        /// The request.
        request: Request,
    },
    /// A connection the application had been given a request of is closed (streams included).
    Closed {
        /// The listener.
        listener: HttpListenerId,
        /// The connection.
        conn: HttpConnId,
        /// Why.
        reason: CloseReason,
    },
}

pub(super) struct Listener {
    sock: TcpListener,
    token: Token,
    limits: Limits,
    open: usize,
    refused: u64,
    /// Streams open.
    streams: usize,
    /// Connections and streams open per peer ([`peer_key`]); an entry goes with its last connection, so there are
    /// at most [`Limits::max_connections`] entries.
    peers: HashMap<IpAddr, PeerUse>,
    /// `Some` on a loopback listener: the `Host` names allowed besides the loopback ones.
    hosts: Option<Vec<String>>,
}

#[derive(Default)]
struct PeerUse {
    conns: usize,
    streams: usize,
}

pub(super) struct Conn {
    listener: usize,
    generation: u64,
    http: HttpConn,
    sock: TcpStream,
    token: Token,
    writable_interest: bool,
    /// The method of the request being answered (HEAD gets no body).
    method: Method,
    /// A request was handed to the application (so it hears of the close).
    announced: bool,
    /// What it counts under in its listener's `peers`.
    peer: IpAddr,
    /// The peer's own address (a master takes registrations for it).
    remote: SocketAddr,
    /// It is a stream (counted in its listener's streams).
    stream: bool,
    /// Reading stopped because [`HttpConn::read_room`] was 0: the socket may hold bytes no new edge will announce.
    read_paused: bool,
}

/// The reactor's HTTP state.
#[derive(Default)]
pub(super) struct HttpSide {
    listeners: Slab<Listener>,
    conns: Slab<Conn>,
    generation: u64,
    events: VecDeque<HttpEvent>,
}

impl Reactor {
    /// Listens for HTTP on `addr` (port 0: any free port) with these limits; returns the id and the bound address.
    pub fn add_http_listener(&mut self, addr: SocketAddr, limits: Limits) -> io::Result<(HttpListenerId, SocketAddr)> {
        let mut sock = TcpListener::bind(addr)?;
        let local = sock.local_addr()?;
        let entry = self.http.listeners.vacant_entry();
        let id = entry.key();
        let token = Token(self.sources.insert(Source::HttpListen(id)));
        if let Err(e) = self.poll.registry().register(&mut sock, token, Interest::READABLE) {
            self.sources.remove(token.0);
            return Err(e);
        }
        let hosts = local.ip().is_loopback().then(Vec::new);
        entry.insert(Listener { sock, token, limits, open: 0, refused: 0, streams: 0, peers: HashMap::new(), hosts });
        Ok((HttpListenerId(id), local))
    }

    /// Names a loopback listener accepts in `Host` besides the loopback ones (`localhost`, 127.0.0.0/8, `[::1]`),
    /// for example the name a reverse proxy forwards; `*` accepts any. Other listeners check no `Host`.
    pub fn http_allow_hosts(&mut self, listener: HttpListenerId, names: &[String]) {
        if let Some(hosts) = self.http.listeners.get_mut(listener.0).and_then(|l| l.hosts.as_mut()) {
            hosts.extend(names.iter().cloned());
        }
    }

    /// Streams open on a listener.
    pub fn http_streams(&self, listener: HttpListenerId) -> usize {
        self.http.listeners.get(listener.0).map_or(0, |l| l.streams)
    }

    /// The next request or close, if any.
    pub fn poll_http_event(&mut self) -> Option<HttpEvent> {
        self.http.events.pop_front()
    }

    /// Open connections of a listener.
    pub fn http_connections(&self, listener: HttpListenerId) -> usize {
        self.http.listeners.get(listener.0).map_or(0, |l| l.open)
    }

    /// Connections and streams a listener refused with `503` because it (or the peer) was at its cap.
    pub fn http_refused(&self, listener: HttpListenerId) -> u64 {
        self.http.listeners.get(listener.0).map_or(0, |l| l.refused)
    }

    /// Bytes queued for a connection (0 when it is gone).
    pub fn http_queued(&self, conn: HttpConnId) -> usize {
        self.http_conn(conn).map_or(0, |c| c.http.queued_out())
    }

    /// Answers the request of `conn` (`HEAD` gets the head only).
    pub fn http_respond(&mut self, conn: HttpConnId, resp: &Response) {
        let now = self.clock.now();
        if let Some(c) = self.http_conn_mut(conn) {
            let head_only = c.method == Method::Head;
            c.http.respond(now, resp, head_only);
        }
        self.http_after(conn.key, now);
    }

    /// Turns the request of `conn` into a stream, writing `head` (for example [`crate::http::sse_head`]). Returns
    /// true when it is a stream: false for a `HEAD` request (answered with the head alone), for a stream past the
    /// listener's or the peer's cap (answered `503` and closed), and for a connection that is gone.
    pub fn http_stream(&mut self, conn: HttpConnId, head: &[u8]) -> bool {
        let now = self.clock.now();
        let Some(c) = self.http.conns.get_mut(conn.key).filter(|c| c.generation == conn.generation) else {
            return false;
        };
        let head_only = c.method == Method::Head;
        let started = match self.http.listeners.get_mut(c.listener) {
            Some(l) if !head_only && c.http.state() == ConnState::Answering && !c.stream => {
                let peer = l.peers.entry(c.peer).or_default();
                if l.streams >= l.limits.max_streams || peer.streams >= l.limits.max_streams_per_peer {
                    l.refused += 1;
                    debug!(peer = %c.peer, "http stream refused: at the cap");
                    let resp = Response::error(503, "too many streams").with_header("Retry-After", "10").closing();
                    c.http.respond(now, &resp, false);
                    false
                } else {
                    let started = c.http.start_stream(now, head, false);
                    if started {
                        l.streams += 1;
                        peer.streams += 1;
                        c.stream = true;
                    }
                    started
                }
            }
            _ => c.http.start_stream(now, head, head_only),
        };
        self.http_after(conn.key, now);
        started
    }

    /// Pushes bytes to a stream. Never blocks: returns false, and drops the connection, when they would pass the
    /// stream's bound (the reader stopped reading); false too when the connection is gone.
    pub fn http_push(&mut self, conn: HttpConnId, bytes: &[u8]) -> bool {
        let now = self.clock.now();
        let ok = match self.http_conn_mut(conn) {
            Some(c) => c.http.push(now, bytes),
            None => return false,
        };
        self.http_after(conn.key, now);
        ok
    }

    /// Closes a connection.
    pub fn http_close(&mut self, conn: HttpConnId) {
        let now = self.clock.now();
        if let Some(c) = self.http_conn_mut(conn) {
            c.http.close();
        }
        self.http_after(conn.key, now);
    }

    /// The peer address of a connection (`None` once it is gone).
    pub fn http_peer(&self, conn: HttpConnId) -> Option<SocketAddr> {
        self.http_conn(conn).map(|c| c.remote)
    }

    fn http_conn(&self, id: HttpConnId) -> Option<&Conn> {
        self.http.conns.get(id.key).filter(|c| c.generation == id.generation)
    }

    fn http_conn_mut(&mut self, id: HttpConnId) -> Option<&mut Conn> {
        self.http.conns.get_mut(id.key).filter(|c| c.generation == id.generation)
    }

    pub(super) fn http_deadline(&self) -> Option<Instant> {
        self.http.conns.iter().filter_map(|(_, c)| c.http.deadline()).min()
    }

    pub(super) fn on_http_listener_ready(&mut self, id: usize, now: Instant) {
        for _ in 0..HTTP_ACCEPT_BUDGET {
            let Some(l) = self.http.listeners.get_mut(id) else { return };
            let (mut sock, peer) = match l.sock.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // EMFILE and the like: try again on the next edge rather than spin.
                    debug!(error = %e, "http accept failed");
                    return;
                }
            };
            let peer_ip = peer_key(peer.ip());
            let from_peer = l.peers.get(&peer_ip).map_or(0, |p| p.conns);
            if l.open >= l.limits.max_connections || from_peer >= l.limits.max_connections_per_peer {
                l.refused += 1;
                let resp = Response::error(503, "too many connections").to_bytes(false, false);
                let _ = sock.write(&resp);
                let _ = sock.shutdown(std::net::Shutdown::Both);
                debug!(%peer, "http connection refused: at the cap");
                continue;
            }
            let _ = sock.set_nodelay(true);
            // A bounded kernel send buffer too (no autotuning to megabytes): a client that stops reading fills its
            // stream's own queue soon, and is dropped, instead of parking megabytes in the kernel.
            let _ = socket2::SockRef::from(&sock).set_send_buffer_size(HTTP_SEND_BUFFER);
            let limits = l.limits;
            let entry = self.http.conns.vacant_entry();
            let key = entry.key();
            let token = Token(self.sources.insert(Source::HttpConn(key)));
            if let Err(e) = self.poll.registry().register(&mut sock, token, Interest::READABLE) {
                debug!(error = %e, "cannot register an http connection");
                self.sources.remove(token.0);
                continue;
            }
            self.http.generation += 1;
            entry.insert(Conn {
                listener: id,
                generation: self.http.generation,
                http: HttpConn::new(now, limits),
                sock,
                token,
                writable_interest: false,
                method: Method::Get,
                announced: false,
                peer: peer_ip,
                remote: peer,
                stream: false,
                read_paused: false,
            });
            if let Some(l) = self.http.listeners.get_mut(id) {
                l.open += 1;
                l.peers.entry(peer_ip).or_default().conns += 1;
            }
            // Data may already be there (edge-triggered: no new edge would come for it).
            self.backlog.push(token);
        }
        // Budget used up: come back next turn for the rest of the accept queue.
        if let Some(l) = self.http.listeners.get(id) {
            self.backlog.push(l.token);
        }
    }

    pub(super) fn on_http_conn_ready(&mut self, key: usize, now: Instant, readable: bool, writable: bool) {
        let Some(c) = self.http.conns.get_mut(key) else { return };
        if readable {
            let mut budget = HTTP_READ_BUDGET;
            loop {
                if budget == 0 {
                    self.backlog.push(c.token);
                    break;
                }
                budget -= 1;
                // Never more than the connection takes: what it cannot take yet stays in the socket.
                let room = c.http.read_room().min(self.buf.len());
                if room == 0 {
                    c.read_paused = true;
                    break;
                }
                match c.sock.read(&mut self.buf[..room]) {
                    Ok(0) => {
                        c.http.handle_peer_closed();
                        break;
                    }
                    Ok(n) => {
                        // Takes all `n` (at most its room): nothing read is dropped.
                        c.http.handle_data(now, &self.buf[..n]);
                        if c.http.close_reason().is_some() || c.http.state() == ConnState::Closing {
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        c.http.handle_io_error(&e);
                        break;
                    }
                }
            }
        }
        let _ = writable;
        self.http_after(key, now);
    }

    pub(super) fn fire_http_timers(&mut self, now: Instant) {
        let due: Vec<usize> = self
            .http
            .conns
            .iter()
            .filter(|(_, c)| c.http.deadline().is_some_and(|d| d <= now))
            .map(|(k, _)| k)
            .collect();
        for key in due {
            if let Some(c) = self.http.conns.get_mut(key) {
                c.http.handle_timeout(now);
            }
            self.http_after(key, now);
        }
    }

    /// Hands out the request of a connection, if it has one: to the application, or refused here when its `Host`
    /// is not allowed on a loopback listener.
    fn http_hand_out(&mut self, key: usize, now: Instant) {
        let Some(c) = self.http.conns.get_mut(key) else { return };
        let Some(request) = c.http.poll_request() else { return };
        c.method = request.method;
        let allowed = self
            .http
            .listeners
            .get(c.listener)
            .and_then(|l| l.hosts.as_ref())
            .is_none_or(|extra| host_allowed(request.header("host"), extra));
        if !allowed {
            debug!(host = ?request.header("host"), "http request refused: Host not allowed on a loopback listener");
            let why = "this Host is not served here (the listener is on loopback; see --allow-host)";
            c.http.respond(now, &Response::error(421, why).closing(), request.method == Method::Head);
            return;
        }
        c.announced = true;
        self.http.events.push_back(HttpEvent::Request {
            listener: HttpListenerId(c.listener),
            conn: HttpConnId { key, generation: c.generation },
            request,
        });
    }

    /// After anything happened to a connection: hand out its request, write what is queued, fix the interest,
    /// resume reading when it has room again, and close it when it is over.
    fn http_after(&mut self, key: usize, now: Instant) {
        self.http_hand_out(key, now);
        let Some(c) = self.http.conns.get_mut(key) else { return };
        // Write what the socket takes.
        while !c.http.pending().is_empty() && c.http.close_reason().is_none_or(|r| *r == CloseReason::PeerClosed) {
            match c.sock.write(c.http.pending()) {
                Ok(0) => break,
                Ok(n) => c.http.consumed(now, n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    c.http.handle_io_error(&e);
                    break;
                }
            }
        }
        if c.http.close_reason().is_none() && c.http.state() == ConnState::Answering {
            // Writing made room for the next pipelined request.
            self.http_hand_out(key, now);
        }
        let Some(c) = self.http.conns.get_mut(key) else { return };
        if let Some(reason) = c.http.close_reason().cloned() {
            let mut c = self.http.conns.remove(key);
            let _ = self.poll.registry().deregister(&mut c.sock);
            self.sources.try_remove(c.token.0);
            // Closing with unread bytes sends a reset, which can destroy a refusal still in flight: shut down the
            // write side only, and let the kernel finish.
            let _ = c.sock.shutdown(std::net::Shutdown::Write);
            if let Some(l) = self.http.listeners.get_mut(c.listener) {
                l.open = l.open.saturating_sub(1);
                l.streams = l.streams.saturating_sub(usize::from(c.stream));
                if let Some(p) = l.peers.get_mut(&c.peer) {
                    p.conns = p.conns.saturating_sub(1);
                    p.streams = p.streams.saturating_sub(usize::from(c.stream));
                    if p.conns == 0 {
                        l.peers.remove(&c.peer);
                    }
                }
            }
            debug!(%reason, "http connection closed");
            if c.announced {
                self.http.events.push_back(HttpEvent::Closed {
                    listener: HttpListenerId(c.listener),
                    conn: HttpConnId { key, generation: c.generation },
                    reason,
                });
            }
            return;
        }
        let want_write = !c.http.pending().is_empty();
        if want_write != c.writable_interest {
            let interest = if want_write { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
            if self.poll.registry().reregister(&mut c.sock, c.token, interest).is_ok() {
                c.writable_interest = want_write;
            }
        }
        if c.read_paused && c.http.read_room() > 0 {
            // Room again: read what waits in the socket (no new edge would come for it).
            c.read_paused = false;
            self.backlog.push(c.token);
        }
    }
}
