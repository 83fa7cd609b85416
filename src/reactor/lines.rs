//! The reactor's line-protocol driver: TCP listeners whose connections carry `\n`-terminated text lines (the BZRC
//! gateway, [`crate::bzrc`]), on the same `Poll` as everything else.
//!
//! Pull model, so that every buffer a peer can fill stays bounded in bytes:
//!
//! * Input: each connection reads into a buffer of at most [`LineLimits::max_line`] bytes. The application takes
//!   complete lines with [`Reactor::line_next`]; the socket is read only while the buffer has room, so a client
//!   that sends faster than it is answered meets TCP backpressure. A line longer than the bound is dropped up to
//!   its `\n` and handed out as [`Line::Overlong`].
//! * Output: [`Reactor::line_send`] queues bytes and writes what the socket takes. While more than
//!   [`LineLimits::max_out`] bytes wait, [`Reactor::line_next`] hands out no lines (the client is not reading its
//!   answers, so it gets no more); a connection whose queue passes [`LineLimits::hard_out`] is closed.
//! * Accepts: at most [`LineLimits::max_connections`] per listener; one more is accepted and closed at once.
//!
//! Nagle is off on every accepted connection (`TCP_NODELAY`). Accepted and closed connections are reported by
//! [`Reactor::poll_line_event`]; the application polls its open connections for lines after each turn.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::SocketAddr;

use mio::net::{TcpListener, TcpStream};
use mio::{Interest, Token};
use slab::Slab;
use tracing::debug;

use super::{Reactor, Source};

/// Connections accepted per listener per turn before the other sources get their turn.
pub const LINE_ACCEPT_BUDGET: usize = 16;

/// Identifies a line listener on a reactor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LineListenerId(pub usize);

/// Identifies a line connection: the slab key and a generation, so that a stale id never reaches a newer
/// connection in the same slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LineConnId {
    key: usize,
    generation: u64,
}

/// The bounds of a line listener's connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineLimits {
    /// Longest line kept, in bytes (the `\n` included); longer ones come out as [`Line::Overlong`].
    pub max_line: usize,
    /// Bytes of output queued past which no more lines are handed out.
    pub max_out: usize,
    /// Bytes of output queued past which the connection is closed.
    pub hard_out: usize,
    /// Open connections per listener.
    pub max_connections: usize,
}

impl Default for LineLimits {
    fn default() -> Self {
        LineLimits { max_line: 4096, max_out: 64 * 1024, hard_out: 1 << 20, max_connections: 8 }
    }
}

/// One line taken from a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A complete line without its `\n`.
    Text(Vec<u8>),
    /// A line longer than [`LineLimits::max_line`] (dropped).
    Overlong,
}

/// What the line side reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineEvent {
    /// A new connection.
    Accepted {
        /// Its listener.
        listener: LineListenerId,
        /// The connection.
        conn: LineConnId,
        /// The peer.
        peer: SocketAddr,
    },
    /// A connection closed (by the peer, an error, a full queue or [`Reactor::line_close`]); lines it still had
    /// are gone.
    Closed {
        /// Its listener.
        listener: LineListenerId,
        /// The connection.
        conn: LineConnId,
        /// Why, in words.
        reason: String,
    },
}

pub(super) struct Listener {
    sock: TcpListener,
    token: Token,
    limits: LineLimits,
    open: usize,
}

pub(super) struct Conn {
    listener: usize,
    generation: u64,
    sock: TcpStream,
    token: Token,
    limits: LineLimits,
    inbuf: Vec<u8>,
    /// Dropping bytes up to the next `\n` (the line was too long).
    discarding: bool,
    /// Complete overlong lines not yet handed out (they come out in order with the others: see `lines`).
    lines: VecDeque<Line>,
    out: Vec<u8>,
    out_sent: usize,
    writable_interest: bool,
    read_paused: bool,
    peer_closed: bool,
    closing: bool,
    close_reason: Option<String>,
}

impl Conn {
    fn queued(&self) -> usize {
        self.out.len() - self.out_sent
    }

    /// Splits complete lines off the input buffer into `lines`.
    fn split(&mut self) {
        while let Some(i) = self.inbuf.iter().position(|&b| b == b'\n') {
            let rest = self.inbuf.split_off(i + 1);
            let mut line = std::mem::replace(&mut self.inbuf, rest);
            line.pop();
            if self.discarding {
                self.discarding = false;
                self.lines.push_back(Line::Overlong);
            } else {
                self.lines.push_back(Line::Text(line));
            }
        }
        if self.inbuf.len() >= self.limits.max_line {
            self.inbuf.clear();
            self.discarding = true;
        }
    }

    /// Bytes the input side takes now: none while complete lines wait (they are taken first), else up to the
    /// line bound.
    fn read_room(&self) -> usize {
        if !self.lines.is_empty() || self.closing {
            0
        } else {
            self.limits.max_line.saturating_sub(self.inbuf.len())
        }
    }
}

/// The reactor's line state.
#[derive(Default)]
pub(super) struct LineSide {
    listeners: Slab<Listener>,
    conns: Slab<Conn>,
    generation: u64,
    events: VecDeque<LineEvent>,
}

impl Reactor {
    /// Listens for line connections on `addr` (port 0: any free port); returns the id and the bound address.
    pub fn add_line_listener(
        &mut self,
        addr: SocketAddr,
        limits: LineLimits,
    ) -> io::Result<(LineListenerId, SocketAddr)> {
        let mut sock = TcpListener::bind(addr)?;
        let local = sock.local_addr()?;
        let entry = self.lines.listeners.vacant_entry();
        let id = entry.key();
        let token = Token(self.sources.insert(Source::LineListen(id)));
        if let Err(e) = self.poll.registry().register(&mut sock, token, Interest::READABLE) {
            self.sources.remove(token.0);
            return Err(e);
        }
        entry.insert(Listener { sock, token, limits, open: 0 });
        Ok((LineListenerId(id), local))
    }

    /// The next accept or close, if any.
    pub fn poll_line_event(&mut self) -> Option<LineEvent> {
        self.lines.events.pop_front()
    }

    /// The next complete line of a connection, unless more than [`LineLimits::max_out`] bytes of its output wait
    /// (or it is gone or closing).
    pub fn line_next(&mut self, conn: LineConnId) -> Option<Line> {
        let c = self.lines.conns.get_mut(conn.key).filter(|c| c.generation == conn.generation)?;
        if c.closing || c.queued() > c.limits.max_out {
            return None;
        }
        let line = c.lines.pop_front();
        if c.lines.is_empty() && c.read_paused && !c.peer_closed {
            // Room again: read what waits in the socket (no new edge would come for it).
            c.read_paused = false;
            self.backlog.push(c.token);
        }
        if line.is_none() && c.peer_closed {
            // Every line the peer sent is answered: it is done.
            self.line_after(conn.key);
        }
        line
    }

    /// Queues `bytes` for a connection and writes what the socket takes; a queue past [`LineLimits::hard_out`]
    /// closes the connection. False when the connection is gone or was closed by this.
    pub fn line_send(&mut self, conn: LineConnId, bytes: &[u8]) -> bool {
        let Some(c) = self.line_conn_mut(conn) else { return false };
        if c.closing {
            return false;
        }
        if c.queued() + bytes.len() > c.limits.hard_out {
            c.close_reason = Some("the client does not read its answers".into());
        } else {
            c.out.extend_from_slice(bytes);
        }
        let key = conn.key;
        self.line_after(key);
        self.line_conn_mut(conn).is_some()
    }

    /// Bytes queued for a connection (0 when it is gone).
    pub fn line_queued(&self, conn: LineConnId) -> usize {
        self.lines.conns.get(conn.key).filter(|c| c.generation == conn.generation).map_or(0, Conn::queued)
    }

    /// Closes a connection once its queued output is written (no more lines are handed out).
    pub fn line_close(&mut self, conn: LineConnId) {
        if let Some(c) = self.line_conn_mut(conn) {
            c.closing = true;
        }
        self.line_after(conn.key);
    }

    fn line_conn_mut(&mut self, id: LineConnId) -> Option<&mut Conn> {
        self.lines.conns.get_mut(id.key).filter(|c| c.generation == id.generation)
    }

    pub(super) fn on_line_listener_ready(&mut self, id: usize) {
        for _ in 0..LINE_ACCEPT_BUDGET {
            let Some(l) = self.lines.listeners.get_mut(id) else { return };
            let (mut sock, peer) = match l.sock.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    debug!(error = %e, "line accept failed");
                    return;
                }
            };
            if l.open >= l.limits.max_connections {
                let _ = sock.shutdown(std::net::Shutdown::Both);
                continue;
            }
            let _ = sock.set_nodelay(true);
            let limits = l.limits;
            let entry = self.lines.conns.vacant_entry();
            let key = entry.key();
            let token = Token(self.sources.insert(Source::LineConn(key)));
            if let Err(e) = self.poll.registry().register(&mut sock, token, Interest::READABLE) {
                debug!(error = %e, "cannot register a line connection");
                self.sources.remove(token.0);
                continue;
            }
            self.lines.generation += 1;
            let generation = self.lines.generation;
            entry.insert(Conn {
                listener: id,
                generation,
                sock,
                token,
                limits,
                inbuf: Vec::new(),
                discarding: false,
                lines: VecDeque::new(),
                out: Vec::new(),
                out_sent: 0,
                writable_interest: false,
                read_paused: false,
                peer_closed: false,
                closing: false,
                close_reason: None,
            });
            if let Some(l) = self.lines.listeners.get_mut(id) {
                l.open += 1;
            }
            let conn = LineConnId { key, generation };
            self.lines.events.push_back(LineEvent::Accepted { listener: LineListenerId(id), conn, peer });
            self.backlog.push(token);
        }
        if let Some(l) = self.lines.listeners.get(id) {
            self.backlog.push(l.token);
        }
    }

    pub(super) fn on_line_conn_ready(&mut self, key: usize, readable: bool) {
        let Some(c) = self.lines.conns.get_mut(key) else { return };
        if readable && !c.peer_closed {
            // At most a few reads a turn; each no larger than the room.
            for _ in 0..4 {
                let room = c.read_room().min(self.buf.len());
                if room == 0 {
                    c.read_paused = true;
                    break;
                }
                match c.sock.read(&mut self.buf[..room]) {
                    Ok(0) => {
                        c.peer_closed = true;
                        break;
                    }
                    Ok(n) => {
                        c.inbuf.extend_from_slice(&self.buf[..n]);
                        c.split();
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        c.close_reason = Some(e.to_string());
                        break;
                    }
                }
            }
            if !c.read_paused && !c.peer_closed && c.close_reason.is_none() && c.read_room() > 0 {
                // Budget used with room left: come back next turn for the rest.
                self.backlog.push(c.token);
            }
        }
        self.line_after(key);
    }

    /// After anything happened to a connection: write what is queued, fix the interest, close it when it is over.
    fn line_after(&mut self, key: usize) {
        let Some(c) = self.lines.conns.get_mut(key) else { return };
        while c.queued() > 0 && c.close_reason.is_none() {
            match c.sock.write(&c.out[c.out_sent..]) {
                Ok(0) => break,
                Ok(n) => c.out_sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => c.close_reason = Some(e.to_string()),
            }
        }
        if c.queued() == 0 {
            c.out.clear();
            c.out_sent = 0;
        } else if c.out_sent > 64 * 1024 {
            c.out.drain(..c.out_sent);
            c.out_sent = 0;
        }
        // A peer that closed is done once the lines it sent are taken and answered.
        if c.close_reason.is_none() && c.queued() == 0 {
            if c.closing {
                c.close_reason = Some("closed by the application".into());
            } else if c.peer_closed && c.lines.is_empty() {
                c.close_reason = Some("closed by the peer".into());
            }
        }
        if let Some(reason) = c.close_reason.take() {
            let mut c = self.lines.conns.remove(key);
            let _ = self.poll.registry().deregister(&mut c.sock);
            self.sources.try_remove(c.token.0);
            let _ = c.sock.shutdown(std::net::Shutdown::Write);
            if let Some(l) = self.lines.listeners.get_mut(c.listener) {
                l.open = l.open.saturating_sub(1);
            }
            debug!(%reason, "line connection closed");
            let conn = LineConnId { key, generation: c.generation };
            self.lines.events.push_back(LineEvent::Closed { listener: LineListenerId(c.listener), conn, reason });
            return;
        }
        let want_write = c.queued() > 0;
        if want_write != c.writable_interest {
            let interest = if want_write { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
            if self.poll.registry().reregister(&mut c.sock, c.token, interest).is_ok() {
                c.writable_interest = want_write;
            }
        }
    }
}
