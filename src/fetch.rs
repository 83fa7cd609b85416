//! Fetching a server's world with a world-only session on a reactor of its own (what `bzhead world` does).
//!
//! The session says hello, negotiates flags, reads the settings and the world hash, then takes the world from the
//! cache or the server (MD5-checked), and closes without joining.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::bzflag::event::Event;
use crate::bzflag::session::{md5_hex, SessionConfig, SessionEnd};
use crate::cache::WorldCache;
use crate::observer::exit;
use crate::reactor::{Reactor, SessionOptions};

/// A fetched world.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// MD5 of the blob, 32 hex digits.
    pub hash: String,
    /// The blob.
    pub blob: Vec<u8>,
    /// It came from the cache.
    pub cached: bool,
}

/// Why a fetch failed: the exit code and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchError {
    /// [`exit::CONNECT`] or [`exit::PROTOCOL`] (the game commands' codes, [`crate::observer::exit`]).
    pub code: u8,
    /// What went wrong.
    pub message: String,
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FetchError {}

/// Fetches the world of the server at `addr` with a world-only session (from `cache` when it has it),
/// giving up after `timeout`.
pub fn world(addr: SocketAddr, cache: Option<WorldCache>, timeout: Duration) -> Result<Fetched, FetchError> {
    let protocol = |message: String| FetchError { code: exit::PROTOCOL, message };
    let mut reactor = Reactor::new().map_err(|e| protocol(format!("cannot start the event loop: {e}")))?;
    let config = SessionConfig {
        world_only: true,
        udp: false,
        join_timeout: timeout,
        hello_timeout: timeout.min(Duration::from_secs(10)),
        ..SessionConfig::default()
    };
    let id = reactor
        .add_session(addr, config, SessionOptions { record: None, rec: None, cache, record_max_bytes: None })
        .map_err(|e| FetchError { code: exit::CONNECT, message: format!("cannot connect to {addr}: {e}") })?;
    let deadline = Instant::now() + timeout + Duration::from_secs(1);
    let done = reactor.run_until_done(deadline).map_err(|e| protocol(format!("event loop failed: {e}")))?;
    let mut cached = false;
    let mut closed: Option<SessionEnd> = None;
    while let Some((_, _, ev)) = reactor.poll_event() {
        match ev {
            Event::World { cached: c, .. } => cached = c,
            Event::Closed { reason } => closed = Some(reason),
            _ => {}
        }
    }
    if let Some(blob) = reactor.session(id).and_then(|s| s.world_blob()) {
        return Ok(Fetched { hash: md5_hex(blob), blob: blob.to_vec(), cached });
    }
    match closed {
        Some(reason) => {
            let code = if matches!(reason, SessionEnd::ConnectFailed(_)) { exit::CONNECT } else { exit::PROTOCOL };
            Err(FetchError { code, message: reason.to_string() })
        }
        None if !done => Err(protocol(format!("no world from {addr} within {timeout:?}"))),
        None => Err(protocol(format!("{addr} closed the session without sending a world"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreachable_server() {
        // Port 1 (tcpmux): nobody listens there, connection refused.
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let e = world(addr, None, Duration::from_secs(5)).unwrap_err();
        assert_eq!(e.code, exit::CONNECT, "{e}");
    }
}
