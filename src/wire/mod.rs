//! Bytes only: a panic-free big-endian [`Reader`], an infallible [`Writer`] and the [`DecodeError`] they share.
//!
//! Every protocol in bzhead (BZFlag messages, the world database, the query engines of the core) reads through
//! [`Reader`]. It never indexes a slice directly: each read checks what is left first and returns
//! [`DecodeErrorKind::Truncated`] with how many bytes were needed, how many were there, and where. Counts read from
//! the wire that size an allocation go through [`Reader::count`], which refuses a count the rest of the buffer
//! cannot possibly hold, so a hostile length can never make us allocate more than the input itself.
//!
//! Writing goes through [`Writer`], a thin layer over `byteorder::WriteBytesExt` on a `Vec<u8>` (which cannot fail).
#![forbid(unsafe_code)]

mod reader;
mod writer;

pub(crate) use reader::cstr_lossy as reader_cstr;
pub use reader::Reader;
pub use writer::Writer;

use std::fmt;

/// What went wrong while decoding, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// The kind of failure, with its numbers.
    pub kind: DecodeErrorKind,
    /// Byte offset into the decoded buffer where the failing read started.
    pub at: usize,
    /// What was being decoded ("MsgAddPlayer", "world: mesh face", ...), if known.
    pub context: Option<&'static str>,
}

/// The kinds of [`DecodeError`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// The input ended early.
    Truncated {
        /// Bytes the read needed.
        needed: usize,
        /// Bytes that were left.
        available: usize,
    },
    /// A field holds a value the protocol does not allow.
    BadValue {
        /// Field name.
        field: &'static str,
        /// The offending value (as a number, or 0 where not numeric).
        value: i64,
    },
    /// A length or count exceeds what is allowed or what the input can hold.
    TooLong {
        /// Field name.
        field: &'static str,
        /// The largest value that would have been accepted.
        max: usize,
        /// The value found.
        got: usize,
    },
    /// Bytes were left over after a complete record.
    TrailingBytes {
        /// How many.
        count: usize,
    },
    /// Anything else, described in words.
    Invalid(&'static str),
}

impl DecodeError {
    /// A new error at `at`.
    pub fn new(kind: DecodeErrorKind, at: usize) -> Self {
        DecodeError { kind, at, context: None }
    }

    /// Names what was being decoded, keeping an inner (more precise) context if one is set.
    #[must_use]
    pub fn context(mut self, ctx: &'static str) -> Self {
        if self.context.is_none() {
            self.context = Some(ctx);
        }
        self
    }

    /// Shifts the offset by `base`, for errors bubbling out of a sub-buffer.
    #[must_use]
    pub fn add_offset(mut self, base: usize) -> Self {
        self.at += base;
        self
    }

    /// True when more input might have made the decode succeed.
    pub fn is_truncation(&self) -> bool {
        matches!(self.kind, DecodeErrorKind::Truncated { .. })
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = self.context.unwrap_or("data");
        match &self.kind {
            DecodeErrorKind::Truncated { needed, available } => write!(
                f,
                "not enough data to decode {what}: {needed} byte(s) needed at offset {}, but only {available} left",
                self.at
            ),
            DecodeErrorKind::BadValue { field, value } => {
                write!(f, "bad value {value} in field '{field}' of {what} at offset {}", self.at)
            }
            DecodeErrorKind::TooLong { field, max, got } => {
                write!(f, "'{field}' of {what} at offset {} is {got}, more than the {max} allowed", self.at)
            }
            DecodeErrorKind::TrailingBytes { count } => {
                write!(f, "{count} unexpected byte(s) after {what} at offset {}", self.at)
            }
            DecodeErrorKind::Invalid(why) => write!(f, "invalid {what} at offset {}: {why}", self.at),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Shorthand for decode results.
pub type DecodeResult<T> = Result<T, DecodeError>;
