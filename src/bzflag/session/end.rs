//! Why a session ended: [`SessionEnd`], with typed causes a caller can match ([`ConnectError`],
//! [`ProtocolError`], [`RejectCode`]) instead of reading text.
//!
//! Every type here implements `Display` with the words shown to users, and the error types implement
//! [`std::error::Error`]. A `Display` already includes the text of its cause, so print the outer error alone;
//! [`std::error::Error::source`] is there to reach the typed cause, not to print it again.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use super::MAX_WORLD_BYTES;
use crate::bzflag::consts::{RejectCode, SERVER_VERSION};
use crate::bzflag::msg::FrameError;

/// Why a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionEnd {
    /// We left (`MsgExit`).
    Left,
    /// The TCP connection could not be made.
    ConnectFailed(ConnectError),
    /// The server refused the join.
    Rejected {
        /// Reject code.
        code: RejectCode,
        /// The server's reason.
        reason: String,
    },
    /// The server dropped us (`MsgSuperKill`) after telling us why: the server messages sent to us right before
    /// it (bzfs 2.4.26 sends "You were kicked off the server", then "Reason given: WHY", then the kill).
    Kicked {
        /// The server's messages that came with the kick, joined with "; ".
        reason: String,
    },
    /// The server dropped everybody without a word (`MsgSuperKill` with no server message right before it): bzfs
    /// does that to every player when it is stopped (SIGTERM, SIGINT, `/shutdownserver`) or restarted. Unlike a
    /// kick, coming back later is the right thing to do.
    Shutdown,
    /// The server has no free slot (hello id 0xFF).
    ServerFull,
    /// The server closed the connection.
    ServerClosed {
        /// What we were doing.
        during: &'static str,
    },
    /// A step did not finish in time.
    Timeout {
        /// Which step.
        during: &'static str,
    },
    /// The peer does not speak the protocol (wrong hello, broken frame, bad world).
    Protocol(ProtocolError),
}

impl fmt::Display for SessionEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionEnd::Left => write!(f, "left the game"),
            SessionEnd::ConnectFailed(e) => write!(f, "cannot connect: {e}"),
            SessionEnd::Rejected { code, reason } => write!(f, "rejected by the server ({code}): {reason}"),
            SessionEnd::Kicked { reason } if reason.is_empty() => write!(f, "kicked by the server"),
            SessionEnd::Kicked { reason } => write!(f, "kicked by the server: {reason}"),
            SessionEnd::Shutdown => write!(f, "the server shut down (MsgSuperKill with no reason)"),
            SessionEnd::ServerFull => write!(f, "the server is full (no free player slot)"),
            SessionEnd::ServerClosed { during } => write!(f, "the server closed the connection during {during}"),
            SessionEnd::Timeout { during } => write!(f, "timed out during {during}"),
            SessionEnd::Protocol(e) => write!(f, "protocol error: {e}"),
        }
    }
}

impl std::error::Error for SessionEnd {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SessionEnd::ConnectFailed(e) => Some(e),
            SessionEnd::Protocol(e) => Some(e),
            _ => None,
        }
    }
}

/// Why the TCP connection to the server could not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectError {
    /// The server did not answer within the connect timeout.
    TimedOut {
        /// The server.
        server: SocketAddr,
        /// The timeout.
        after: Duration,
    },
    /// The server's host refused the connection (nothing listens on the port).
    Refused {
        /// The server.
        server: SocketAddr,
        /// The system's words for it.
        detail: String,
    },
    /// Another I/O error (no route, network down, ...).
    Io {
        /// The server.
        server: SocketAddr,
        /// Its kind.
        kind: io::ErrorKind,
        /// The system's words for it.
        detail: String,
    },
    /// A failure read back from a recording, which keeps its words only.
    Recorded {
        /// The recorded words.
        detail: String,
    },
}

impl ConnectError {
    /// The failure an I/O error means (connection refused, or another kind).
    pub fn from_io(server: SocketAddr, e: &io::Error) -> ConnectError {
        match e.kind() {
            io::ErrorKind::ConnectionRefused => ConnectError::Refused { server, detail: e.to_string() },
            kind => ConnectError::Io { server, kind, detail: e.to_string() },
        }
    }

    /// True when the server did not answer in time ([`ConnectError::TimedOut`]).
    pub fn is_timeout(&self) -> bool {
        matches!(self, ConnectError::TimedOut { .. })
    }
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectError::TimedOut { server, after } => write!(f, "no answer from {server} within {after:?}"),
            ConnectError::Refused { server, detail } | ConnectError::Io { server, detail, .. } => {
                write!(f, "{server}: {detail}")
            }
            ConnectError::Recorded { detail } => f.write_str(detail),
        }
    }
}

impl std::error::Error for ConnectError {}

/// How the peer broke the protocol. Malformed messages in a good stream are not fatal (they are skipped with
/// a warning); these are.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProtocolError {
    /// The TCP stream's framing broke (a length over the protocol's maximum).
    Frame(FrameError),
    /// The server's hello was not a BZFlag 2.4 hello.
    Hello(HelloError),
    /// The world download went wrong.
    World(WorldError),
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::Frame(e) => e.fmt(f),
            ProtocolError::Hello(e) => e.fmt(f),
            ProtocolError::World(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ProtocolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProtocolError::Frame(e) => Some(e),
            ProtocolError::Hello(e) => Some(e),
            ProtocolError::World(e) => Some(e),
        }
    }
}

impl From<FrameError> for ProtocolError {
    fn from(e: FrameError) -> Self {
        ProtocolError::Frame(e)
    }
}

impl From<HelloError> for ProtocolError {
    fn from(e: HelloError) -> Self {
        ProtocolError::Hello(e)
    }
}

impl From<WorldError> for ProtocolError {
    fn from(e: WorldError) -> Self {
        ProtocolError::World(e)
    }
}

/// The most bytes of a bad hello kept (and shown).
const HELLO_BYTES_KEPT: usize = 32;

/// What was wrong with the server's hello. The bytes kept are the first 32 at most.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HelloError {
    /// The server closed the connection after sending less than a hello, and not its start.
    Closed {
        /// What it sent.
        sent: Vec<u8>,
    },
    /// The first bytes cannot start a 2.4 hello (a web server, an old server).
    BadStart {
        /// The bytes so far.
        head: Vec<u8>,
    },
    /// A BZFlag server of another protocol version.
    Version {
        /// Its 8-byte version string (`BZFS0026`, ...).
        version: Vec<u8>,
    },
    /// Nine bytes that are not a BZFlag hello.
    NotBzflag {
        /// The hello.
        hello: Vec<u8>,
    },
}

impl HelloError {
    /// A [`HelloError::Closed`] keeping at most 32 bytes.
    pub fn closed(sent: &[u8]) -> Self {
        HelloError::Closed { sent: keep(sent) }
    }
    /// A [`HelloError::BadStart`] keeping at most 32 bytes.
    pub fn bad_start(head: &[u8]) -> Self {
        HelloError::BadStart { head: keep(head) }
    }
    /// A [`HelloError::Version`] keeping at most 32 bytes.
    pub fn version(version: &[u8]) -> Self {
        HelloError::Version { version: keep(version) }
    }
    /// A [`HelloError::NotBzflag`] keeping at most 32 bytes.
    pub fn not_bzflag(hello: &[u8]) -> Self {
        HelloError::NotBzflag { hello: keep(hello) }
    }
}

fn keep(b: &[u8]) -> Vec<u8> {
    b.get(..HELLO_BYTES_KEPT).unwrap_or(b).to_vec()
}

impl fmt::Display for HelloError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HelloError::Closed { sent } => write!(f, "not a BZFlag 2.4 server: it sent {}", show_bytes(sent)),
            HelloError::BadStart { head } => {
                write!(f, "not a BZFlag 2.4 server: its hello starts with {}", show_bytes(head))
            }
            HelloError::Version { version } => write!(
                f,
                "incompatible server version {:?} (bzhead speaks {})",
                String::from_utf8_lossy(version),
                String::from_utf8_lossy(SERVER_VERSION)
            ),
            HelloError::NotBzflag { hello } => write!(f, "not a BZFlag server: its hello is {}", show_bytes(hello)),
        }
    }
}

impl std::error::Error for HelloError {}

/// What was wrong with the world download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorldError {
    /// The server announced a world larger than [`MAX_WORLD_BYTES`].
    Announced {
        /// The size announced.
        total: usize,
    },
    /// A chunk with no bytes while more were announced.
    EmptyChunk {
        /// Where it should have started.
        offset: usize,
        /// The bytes still announced.
        bytes_left: u32,
    },
    /// The chunks add up to more than [`MAX_WORLD_BYTES`].
    TooLarge,
    /// The download's MD5 is not the hash the server announced.
    Corrupt {
        /// Its size.
        bytes: usize,
        /// Its MD5 (32 hex digits).
        md5: String,
        /// The announced hash.
        announced: String,
    },
}

impl fmt::Display for WorldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorldError::Announced { total } => {
                write!(f, "the server announced a {total}-byte world, more than the {MAX_WORLD_BYTES} bytes allowed")
            }
            WorldError::EmptyChunk { offset, bytes_left } => {
                write!(f, "the server sent an empty world chunk at offset {offset} with {bytes_left} bytes left")
            }
            WorldError::TooLarge => write!(f, "the world is larger than the {MAX_WORLD_BYTES} bytes allowed"),
            WorldError::Corrupt { bytes, md5, announced } => write!(
                f,
                "the world download is corrupt: {bytes} bytes with MD5 {md5}, but the server announced {announced}"
            ),
        }
    }
}

impl std::error::Error for WorldError {}

/// At most 32 bytes as a quoted string when they are text, else as hex.
fn show_bytes(b: &[u8]) -> String {
    let b = b.get(..HELLO_BYTES_KEPT).unwrap_or(b);
    if b.iter().all(|c| c.is_ascii_graphic() || *c == b' ' || *c == b'\r' || *c == b'\n') {
        format!("{:?}", String::from_utf8_lossy(b))
    } else {
        b.iter().map(|c| format!("{c:02x}")).collect::<Vec<_>>().join(" ")
    }
}
