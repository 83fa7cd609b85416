//! [`DecodeError`]: what went wrong while decoding, and where.

use std::fmt;

/// What went wrong while decoding, and where: the kind (with its numbers, such as the bytes needed and available),
/// the offset and, once a caller named it, what was being decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// The kind of failure, with its numbers.
    pub kind: DecodeErrorKind,
    /// Byte offset, in the buffer given to the [`crate::Reader`], where the failing read started.
    pub at: usize,
    /// What was being decoded: a field (`"score"`) or a whole record (`"MsgAddPlayer"`, `"world: mesh face"`), if
    /// known. The innermost name given wins ([`DecodeError::context`]).
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
    /// A NUL-terminated string ran to the end of the input without its NUL.
    Unterminated,
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

    /// A [`DecodeErrorKind::Invalid`] error at `at`: the bytes are not what the protocol allows there (`why`).
    pub fn invalid(why: &'static str, at: usize) -> Self {
        DecodeError::new(DecodeErrorKind::Invalid(why), at)
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

    /// True when the input ended early ([`DecodeErrorKind::Truncated`]): more input might have made the decode
    /// succeed.
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
            DecodeErrorKind::Unterminated => {
                write!(f, "{what} at offset {} is a string without its NUL terminator", self.at)
            }
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

/// [`DecodeError::context`] on a result: `r.u8().context("players")?` names the field a failed read was for.
pub trait ResultExt: Sized {
    /// Names what was being decoded if this is an error (an inner context already set wins).
    #[must_use]
    fn context(self, ctx: &'static str) -> Self;
}

impl<T> ResultExt for DecodeResult<T> {
    fn context(self, ctx: &'static str) -> Self {
        self.map_err(|e| e.context(ctx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_needed_available_and_offset() {
        let e = DecodeError::new(DecodeErrorKind::Truncated { needed: 4, available: 1 }, 7).context("MsgAlive");
        assert_eq!(e.to_string(), "not enough data to decode MsgAlive: 4 byte(s) needed at offset 7, but only 1 left");
    }

    #[test]
    fn the_innermost_context_wins() {
        let r: DecodeResult<()> = Err(DecodeError::invalid("not an info reply (02)", 7));
        let e = r.context("command").context("info reply").unwrap_err();
        assert_eq!(e.context, Some("command"));
        assert_eq!(e.to_string(), "invalid command at offset 7: not an info reply (02)");
        assert_eq!(e.add_offset(8).at, 15);
        let e = DecodeError::new(DecodeErrorKind::Unterminated, 3).context("name");
        assert_eq!(e.to_string(), "name at offset 3 is a string without its NUL terminator");
        assert!(!e.is_truncation());
    }
}
