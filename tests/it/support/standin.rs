//! A scriptable BZFlag server stand-in on loopback, for the hostile-peer tests: it accepts one connection and runs
//! a script that speaks (or abuses) the protocol, with helpers to read the client's messages, answer the official
//! client's join steps (flags, settings, world hash, world chunks, `MsgEnter`) and build server messages.
//!
//! Framing (fact sheet §1): every message is `u16 len`, two ASCII code bytes, `len` payload bytes, big-endian.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::free_port;

/// The 9-byte hello of a 2.4 server giving player id `id`.
pub fn hello(id: u8) -> Vec<u8> {
    let mut v = b"BZFS0221".to_vec();
    v.push(id);
    v
}

/// One framed message: `len`, `code`, `body`.
pub fn frame(code: &[u8; 2], body: &[u8]) -> Vec<u8> {
    let mut m = u16::try_from(body.len()).expect("body fits a u16 length").to_be_bytes().to_vec();
    m.extend_from_slice(code);
    m.extend_from_slice(body);
    m
}

/// A frame header announcing `len` bytes (for frames that lie about their length).
pub fn header(code: &[u8; 2], len: u16) -> Vec<u8> {
    let mut m = len.to_be_bytes().to_vec();
    m.extend_from_slice(code);
    m
}

/// `MsgGameSettings` (30 bytes): an 800-unit FFA world, 1 shot, no flags.
pub fn game_settings() -> Vec<u8> {
    let mut b = 800f32.to_be_bytes().to_vec();
    for v in [0u16, 0x0010, 216, 1, 0] {
        b.extend_from_slice(&v.to_be_bytes());
    }
    b.extend_from_slice(&0f32.to_be_bytes());
    b.extend_from_slice(&0f32.to_be_bytes());
    b.extend_from_slice(&[0; 8]);
    frame(b"gs", &b)
}

/// Server chat (`MsgMessage` from the server, 253, to everybody, 254).
pub fn server_chat(text: &str) -> Vec<u8> {
    let mut b = vec![253, 254, 0];
    b.extend_from_slice(text.as_bytes());
    b.push(0);
    frame(b"mg", &b)
}

/// `MsgAddPlayer` for a tank (type 0) on `team`.
pub fn add_player(id: u8, team: u16, callsign: &str) -> Vec<u8> {
    let mut b = vec![id, 0, 0];
    b.extend_from_slice(&team.to_be_bytes());
    b.extend_from_slice(&[0; 6]);
    let mut name = callsign.as_bytes().to_vec();
    name.resize(32, 0);
    b.extend_from_slice(&name);
    b.extend_from_slice(&[0; 128]);
    frame(b"ap", &b)
}

/// `MsgReject(code, reason)`.
pub fn reject(code: u16, reason: &str) -> Vec<u8> {
    let mut b = code.to_be_bytes().to_vec();
    let mut r = reason.as_bytes().to_vec();
    r.resize(128, 0);
    b.extend_from_slice(&r);
    frame(b"rj", &b)
}

/// The server side of one connection.
pub struct Conn {
    pub stream: TcpStream,
    buf: Vec<u8>,
    /// The client's message codes, in order (also shared with [`StandIn::seen`]).
    seen: Arc<Mutex<Vec<[u8; 2]>>>,
    eof: bool,
}

impl Conn {
    /// A connection read from another thread (a clone of the stream).
    pub fn from_stream(stream: TcpStream) -> Conn {
        Conn { stream, buf: Vec::new(), seen: Arc::default(), eof: false }
    }

    /// True once the client closed its side.
    pub fn closed(&self) -> bool {
        self.eof
    }

    /// Reads the client's 10-byte connect header; false if it did not come.
    pub fn read_header(&mut self) -> bool {
        let mut h = [0u8; 10];
        self.stream.set_read_timeout(Some(Duration::from_secs(5))).ok();
        self.stream.read_exact(&mut h).is_ok() && &h == b"BZFLAG\r\n\r\n"
    }

    /// Writes bytes; false once the client is gone.
    pub fn send(&mut self, bytes: &[u8]) -> bool {
        self.stream.write_all(bytes).is_ok()
    }

    /// The next whole message from the client within `timeout`: `(code, body)`.
    pub fn next(&mut self, timeout: Duration) -> Option<([u8; 2], Vec<u8>)> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.buf.len() >= 4 {
                let len = usize::from(u16::from_be_bytes([self.buf[0], self.buf[1]]));
                if self.buf.len() >= 4 + len {
                    let code = [self.buf[2], self.buf[3]];
                    let body = self.buf[4..4 + len].to_vec();
                    self.buf.drain(..4 + len);
                    if let Ok(mut s) = self.seen.lock() {
                        s.push(code);
                    }
                    return Some((code, body));
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            self.stream.set_read_timeout(Some(left.min(Duration::from_millis(100)))).ok();
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk) {
                Ok(0) => {
                    self.eof = true;
                    return None;
                }
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(_) => {
                    self.eof = true;
                    return None;
                }
            }
        }
    }

    /// Waits for a message with `code` (skipping others); its body.
    pub fn expect(&mut self, code: &[u8; 2], timeout: Duration) -> Option<Vec<u8>> {
        let deadline = Instant::now() + timeout;
        loop {
            let (c, body) = self.next(deadline.saturating_duration_since(Instant::now()))?;
            if &c == code {
                return Some(body);
            }
        }
    }

    /// Answers the official client's join like `bzfs` until its `MsgEnter`: empty `MsgNegotiateFlags`, the
    /// settings, the world hash of `world` and the world in 1016-byte chunks (bytesLeft = total − offset, 0 in the
    /// last chunk). `bzadmin`-style clients send `MsgEnter` straight away, which also ends this. Returns the
    /// `MsgEnter` body, or `None` if the client went away or stalled for 10 s.
    pub fn serve_join(&mut self, world: &[u8]) -> Option<Vec<u8>> {
        let hash = bzhead::bzflag::session::md5_hex(world);
        loop {
            let (code, body) = self.next(Duration::from_secs(10))?;
            let ok = match &code {
                b"nf" => self.send(&frame(b"nf", &[])),
                b"ws" => self.send(&game_settings()),
                b"wh" => {
                    let mut b = b"p".to_vec();
                    b.extend_from_slice(hash.as_bytes());
                    b.push(0);
                    self.send(&frame(b"wh", &b))
                }
                b"gw" => {
                    let offset = body.get(..4).map_or(0, |o| u32::from_be_bytes([o[0], o[1], o[2], o[3]])) as usize;
                    let chunk = world.get(offset..).unwrap_or_default();
                    let chunk = &chunk[..chunk.len().min(1016)];
                    let left = if offset + chunk.len() >= world.len() { 0 } else { (world.len() - offset) as u32 };
                    let mut b = left.to_be_bytes().to_vec();
                    b.extend_from_slice(chunk);
                    self.send(&frame(b"gw", &b))
                }
                b"en" => return Some(body),
                _ => true,
            };
            if !ok {
                return None;
            }
        }
    }

    /// [`Conn::serve_join`], then `MsgAccept(id)`; false if the client did not get that far.
    pub fn accept(&mut self, world: &[u8], id: u8) -> bool {
        self.serve_join(world).is_some() && self.send(&frame(b"ac", &[id]))
    }
}

/// A stand-in listening on 127.0.0.1 (TCP, plus UDP on the same port number when asked for) that runs its script
/// on the first connection. The script thread is detached: it ends when its script does.
pub struct StandIn {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<[u8; 2]>>>,
    thread: Option<JoinHandle<()>>,
}

impl StandIn {
    /// Listens and runs `script` for the first connection.
    pub fn spawn(script: impl FnOnce(Conn) + Send + 'static) -> StandIn {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind a stand-in");
        Self::run(l, script)
    }

    /// Like [`StandIn::spawn`], with a UDP socket bound to the same port, handed to the script (a session's UDP
    /// socket is connected to the server's game port, so only this socket can reach it).
    pub fn spawn_with_udp(script: impl FnOnce(Conn, UdpSocket) + Send + 'static) -> StandIn {
        for _ in 0..100 {
            let port = free_port();
            let Ok(l) = TcpListener::bind(("127.0.0.1", port)) else { continue };
            let Ok(u) = UdpSocket::bind(("127.0.0.1", port)) else { continue };
            return Self::run(l, move |c| script(c, u));
        }
        panic!("no loopback port free for both TCP and UDP");
    }

    fn run(l: TcpListener, script: impl FnOnce(Conn) + Send + 'static) -> StandIn {
        let addr = l.local_addr().expect("local addr");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let seen2 = seen.clone();
        let thread = thread::spawn(move || {
            if let Ok((stream, _)) = l.accept() {
                let _ = stream.set_nodelay(true);
                script(Conn { stream, buf: Vec::new(), seen: seen2, eof: false });
            }
        });
        StandIn { addr, seen, thread: Some(thread) }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The codes of the client's messages read so far (as text, e.g. `"nf"`).
    pub fn seen(&self) -> Vec<String> {
        self.seen
            .lock()
            .map(|s| s.iter().map(|c| String::from_utf8_lossy(c).into_owned()).collect())
            .unwrap_or_default()
    }

    /// Waits (up to `timeout`) for the script to finish.
    pub fn join(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while self.thread.as_ref().is_some_and(|t| !t.is_finished()) {
            if Instant::now() >= deadline {
                return false;
            }
            thread::sleep(Duration::from_millis(10));
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        true
    }
}
