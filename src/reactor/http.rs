//! The reactor's HTTP driver: listeners and connections on the same `Poll` as the BZFlag sessions and the scans.
//!
//! Each listener ([`Reactor::add_http_listener`]) accepts up to its [`Limits::max_connections`]; one more
//! connection gets a `503` written straight away (one non-blocking write, nothing kept) and is closed. Every
//! connection is a sans-IO [`HttpConn`] in a slab: bytes read go to it (at most [`HTTP_READ_BUDGET`] reads a turn),
//! its pending bytes are written as the socket takes them, with `WRITABLE` interest registered only while bytes are
//! queued, and its deadline (a request that never finishes, an idle keep-alive connection) is part of the poll
//! timeout. Complete requests come out of [`Reactor::poll_http_event`]; the application answers with
//! [`Reactor::http_respond`], or starts a Server-Sent Events stream with [`Reactor::http_stream`] and pushes to it
//! with [`Reactor::http_push`], which never blocks: a stream whose queue would pass [`Limits::max_stream_queue`] is
//! dropped (its reader stopped reading), so the game and the other viewers never wait for it.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::time::Instant;

use mio::net::{TcpListener, TcpStream};
use mio::{Interest, Token};
use slab::Slab;
use tracing::debug;

use super::{Reactor, Source};
use crate::http::{CloseReason, ConnState, HttpConn, Limits, Method, Request, Response};

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
        entry.insert(Listener { sock, token, limits, open: 0, refused: 0 });
        Ok((HttpListenerId(id), local))
    }

    /// The next request or close, if any.
    pub fn poll_http_event(&mut self) -> Option<HttpEvent> {
        self.http.events.pop_front()
    }

    /// Open connections of a listener.
    pub fn http_connections(&self, listener: HttpListenerId) -> usize {
        self.http.listeners.get(listener.0).map_or(0, |l| l.open)
    }

    /// Connections a listener refused with `503` because it was at its cap.
    pub fn http_refused(&self, listener: HttpListenerId) -> u64 {
        self.http.listeners.get(listener.0).map_or(0, |l| l.refused)
    }

    /// Bytes queued for a connection (0 when it is gone).
    pub fn http_queued(&self, conn: HttpConnId) -> usize {
        self.http_conn(conn).map_or(0, |c| c.http.queued_out())
    }

    /// Answers the request of `conn` (`HEAD` gets the head only).
    pub fn http_respond(&mut self, conn: HttpConnId, resp: &Response) {
        let now = Instant::now();
        if let Some(c) = self.http_conn_mut(conn) {
            let head_only = c.method == Method::Head;
            c.http.respond(now, resp, head_only);
        }
        self.http_after(conn.key, now);
    }

    /// Turns the request of `conn` into a stream, writing `head` (for example [`crate::http::sse_head`]).
    pub fn http_stream(&mut self, conn: HttpConnId, head: &[u8]) {
        let now = Instant::now();
        if let Some(c) = self.http_conn_mut(conn) {
            c.http.start_stream(head);
        }
        self.http_after(conn.key, now);
    }

    /// Pushes bytes to a stream. Never blocks: returns false, and drops the connection, when they would pass the
    /// stream's bound (the reader stopped reading); false too when the connection is gone.
    pub fn http_push(&mut self, conn: HttpConnId, bytes: &[u8]) -> bool {
        let now = Instant::now();
        let ok = match self.http_conn_mut(conn) {
            Some(c) => c.http.push(bytes),
            None => return false,
        };
        self.http_after(conn.key, now);
        ok
    }

    /// Closes a connection.
    pub fn http_close(&mut self, conn: HttpConnId) {
        let now = Instant::now();
        if let Some(c) = self.http_conn_mut(conn) {
            c.http.close();
        }
        self.http_after(conn.key, now);
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
            if l.open >= l.limits.max_connections {
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
            });
            l_open(&mut self.http.listeners, id, 1);
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
                match c.sock.read(&mut self.buf) {
                    Ok(0) => {
                        c.http.handle_peer_closed();
                        break;
                    }
                    Ok(n) => {
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

    /// After anything happened to a connection: hand out its request, write what is queued, fix the interest, and
    /// close it when it is over.
    fn http_after(&mut self, key: usize, now: Instant) {
        let Some(c) = self.http.conns.get_mut(key) else { return };
        if c.http.state() == ConnState::Answering {
            if let Some(request) = c.http.poll_request() {
                c.method = request.method;
                c.announced = true;
                self.http.events.push_back(HttpEvent::Request {
                    listener: HttpListenerId(c.listener),
                    conn: HttpConnId { key, generation: c.generation },
                    request,
                });
            }
        }
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
        if let Some(reason) = c.http.close_reason().cloned() {
            let mut c = self.http.conns.remove(key);
            let _ = self.poll.registry().deregister(&mut c.sock);
            self.sources.try_remove(c.token.0);
            // Closing with unread bytes sends a reset, which can destroy a refusal still in flight: shut down the
            // write side only, and let the kernel finish.
            let _ = c.sock.shutdown(std::net::Shutdown::Write);
            l_open(&mut self.http.listeners, c.listener, -1);
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
    }
}

fn l_open(listeners: &mut Slab<Listener>, id: usize, delta: isize) {
    if let Some(l) = listeners.get_mut(id) {
        l.open = l.open.saturating_add_signed(delta);
    }
}
