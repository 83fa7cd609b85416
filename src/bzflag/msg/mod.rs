//! Every 2.4 message as a typed value with `parse` and `emit`, and the framing of the TCP stream and UDP datagrams.
//!
//! Messages whose layout differs by direction have two types: [`ServerMsg`] (what a server sends) and
//! [`ClientMsg`] (what a client sends). Both keep unknown codes as a typed `Unknown { code, body }` value.
//!
//! Framing: every message is `u16 len` + `u16 code` + `len` bytes; header plus payload never exceed
//! [`MAX_PACKET_LEN`]. [`FrameBuffer`] reassembles the TCP stream and checks the
//! length before buffering anything; [`datagram_frames`] splits a server datagram (the server batches several
//! messages into one datagram).

mod client;
mod server;
mod types;

pub use client::ClientMsg;
pub use server::{AdminEntry, ScoreEntry, ServerMsg};
pub use types::*;

use super::consts::{code_name, MAX_PACKET_LEN, MAX_PAYLOAD_LEN};
use crate::wire::{DecodeError, DecodeErrorKind, Reader, Writer};

/// One framed message: its code and a borrowed payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// Message code.
    pub code: u16,
    /// Payload (without the 4-byte header).
    pub body: &'a [u8],
}

/// A framing error: the stream cannot be trusted past this point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// A length field larger than the protocol allows.
    TooLong {
        /// The length field's value (payload bytes).
        len: usize,
        /// The code that came with it.
        code: u16,
    },
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::TooLong { len, code } => write!(
                f,
                "message length {len} (code 0x{code:04x}) exceeds the protocol maximum of {MAX_PAYLOAD_LEN} payload bytes"
            ),
        }
    }
}

impl std::error::Error for FrameError {}

/// Writes one framed message (`len`, `code`, `body`) into `out`. Bodies longer than the protocol allows are
/// truncated to [`MAX_PAYLOAD_LEN`] (no emitter in this crate produces one).
pub fn write_frame(out: &mut Vec<u8>, code: u16, body: &[u8]) {
    let body = body.get(..MAX_PAYLOAD_LEN).unwrap_or(body);
    out.extend_from_slice(&(body.len() as u16).to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
    out.extend_from_slice(body);
}

/// Reassembles the TCP byte stream into frames with bounded memory.
///
/// At most one partial message (≤ [`MAX_PACKET_LEN`] bytes) stays buffered between calls; complete frames are
/// handed out as soon as they are whole. Once drained, it keeps at most [`FRAME_BUFFER_KEPT`] bytes of capacity
/// (a large read, such as the burst after a join, is not held for the rest of the session).
#[derive(Debug, Default)]
pub struct FrameBuffer {
    buf: Vec<u8>,
    start: usize,
    failed: Option<FrameError>,
}

/// The capacity a drained [`FrameBuffer`] keeps (a hundred observers in one process each held the largest read
/// they had seen, 10 KB on average).
pub const FRAME_BUFFER_KEPT: usize = 4 * MAX_PACKET_LEN;

impl FrameBuffer {
    /// An empty buffer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Empties the buffer, giving back capacity above [`FRAME_BUFFER_KEPT`].
    fn drained(&mut self) {
        self.buf.clear();
        self.start = 0;
        if self.buf.capacity() > FRAME_BUFFER_KEPT {
            self.buf.shrink_to(FRAME_BUFFER_KEPT);
        }
    }

    /// Appends received bytes. Call [`FrameBuffer::next_frame`] until it returns `Ok(None)` before pushing
    /// more, so that the buffer never holds more than one partial message plus one read.
    pub fn push(&mut self, data: &[u8]) {
        if self.start > 0 && self.start == self.buf.len() {
            self.drained();
        } else if self.start > MAX_PACKET_LEN {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(data);
    }

    /// Bytes held and not yet handed out.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The next complete frame, `Ok(None)` when more bytes are needed, or a sticky error when the stream is
    /// broken (a length over the maximum).
    pub fn next_frame(&mut self) -> Result<Option<(u16, Vec<u8>)>, FrameError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let avail = self.buf.get(self.start..).unwrap_or(&[]);
        let mut r = Reader::new(avail);
        let (Ok(len), Ok(code)) = (r.u16(), r.u16()) else { return Ok(None) };
        let len = len as usize;
        if len > MAX_PAYLOAD_LEN {
            let e = FrameError::TooLong { len, code };
            self.failed = Some(e.clone());
            return Err(e);
        }
        match r.take(len) {
            Ok(body) => {
                let body = body.to_vec();
                self.start += 4 + len;
                if self.start == self.buf.len() {
                    self.drained();
                }
                Ok(Some((code, body)))
            }
            Err(_) => Ok(None),
        }
    }

    /// Takes up to `n` raw bytes from the front (for the 9-byte hello, which has no message header).
    pub fn take_raw(&mut self, n: usize) -> Option<Vec<u8>> {
        if self.buffered() < n {
            return None;
        }
        let out = self.buf.get(self.start..self.start + n)?.to_vec();
        self.start += n;
        Some(out)
    }
}

/// Splits a datagram into frames. Stops at the first frame that does not fit; the error says where.
pub fn datagram_frames(datagram: &[u8]) -> (Vec<Frame<'_>>, Option<DecodeError>) {
    let mut out = Vec::new();
    let mut r = Reader::new(datagram);
    while !r.is_empty() {
        let at = r.position();
        let header = (r.u16(), r.u16());
        let (Ok(len), Ok(code)) = header else {
            return (
                out,
                Some(
                    DecodeError::new(DecodeErrorKind::Truncated { needed: 4, available: datagram.len() - at }, at)
                        .context("datagram frame header"),
                ),
            );
        };
        match r.take(len as usize) {
            Ok(body) => out.push(Frame { code, body }),
            Err(e) => return (out, Some(e.context("datagram frame"))),
        }
    }
    (out, None)
}

/// A human-readable name for a code: the protocol name, or its two ASCII letters, or hex.
pub fn describe_code(code: u16) -> String {
    match code_name(code) {
        Some(n) => n.to_string(),
        None => {
            let b = code.to_be_bytes();
            if b.iter().all(|c| c.is_ascii_graphic()) {
                format!("unknown code '{}{}' (0x{code:04x})", b[0] as char, b[1] as char)
            } else {
                format!("unknown code 0x{code:04x}")
            }
        }
    }
}

/// Refuses a payload longer than one frame carries ([`MAX_PAYLOAD_LEN`]), whatever the message kind: a message
/// parsed from such a body could not be written again unchanged ([`write_frame`] cuts it), and no peer may send one
/// ([`FrameBuffer`] already refuses the length on the TCP stream; a datagram's frames are checked here).
fn check_payload_len(body: &[u8]) -> Result<(), DecodeError> {
    if body.len() > MAX_PAYLOAD_LEN {
        return Err(DecodeError::new(
            DecodeErrorKind::TooLong { field: "message body", max: MAX_PAYLOAD_LEN, got: body.len() },
            MAX_PAYLOAD_LEN,
        ));
    }
    Ok(())
}

/// Common interface of [`ServerMsg`] and [`ClientMsg`].
pub trait Message: Sized {
    /// Parses the payload of a frame with code `code`. Unknown codes give `Ok(Unknown)`. A payload over
    /// [`MAX_PAYLOAD_LEN`] bytes is refused for every code (`TooLong`, field `"message body"`).
    fn parse(code: u16, body: &[u8]) -> Result<Self, DecodeError>;
    /// The message code.
    fn code(&self) -> u16;
    /// Writes the payload.
    fn emit_body(&self, w: &mut Writer);
    /// The framed bytes (header + payload).
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(64);
        self.emit_body(&mut w);
        let mut out = Vec::with_capacity(w.len() + 4);
        write_frame(&mut out, self.code(), w.as_slice());
        out
    }
    /// Parses a framed message (header + payload) that must fill `bytes` exactly.
    fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        let len = r.u16().map_err(|e| e.context("message header"))? as usize;
        let code = r.u16().map_err(|e| e.context("message header"))?;
        let body = r.take(len).map_err(|e| e.context("message body"))?;
        r.expect_end().map_err(|e| e.context("message"))?;
        Self::parse(code, body).map_err(|e| e.add_offset(4))
    }
}

#[cfg(test)]
mod tests;
