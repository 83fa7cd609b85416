//! Bytes for the query plugin engines: a panic-free [`Reader`], the [`DecodeError`] it returns, small text helpers
//! ([`text`]) and a deterministic mutator for adversarial tests ([`fuzz`]).
//!
//! Every read checks what is left first; a failed read names the field, where it started, and (for truncation)
//! how many bytes were needed and how many were there. Nothing here indexes a slice directly or can panic on input.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod fuzz;
pub mod text;

use std::fmt;

/// What went wrong while decoding, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// The kind of failure.
    pub kind: ErrorKind,
    /// Byte offset (in the buffer given to the [`Reader`]) where the failing read started.
    pub at: usize,
    /// The field being read.
    pub field: &'static str,
}

/// The kinds of [`DecodeError`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input ended early.
    Truncated {
        /// Bytes the read needed.
        needed: usize,
        /// Bytes that were left.
        available: usize,
    },
    /// A NUL-terminated string ran to the end of the input without its NUL.
    Unterminated,
    /// The bytes are not what the protocol allows here (a magic, a number, a separator).
    BadValue(&'static str),
    /// A count is larger than allowed.
    TooMany {
        /// The largest accepted value.
        max: usize,
        /// The value found.
        got: usize,
    },
}

impl DecodeError {
    /// A [`ErrorKind::BadValue`] error.
    pub fn bad(field: &'static str, at: usize, why: &'static str) -> DecodeError {
        DecodeError { kind: ErrorKind::BadValue(why), at, field }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::Truncated { needed, available } => {
                write!(f, "'{}' at byte {}: {} byte(s) needed, only {} left", self.field, self.at, needed, available)
            }
            ErrorKind::Unterminated => {
                write!(f, "'{}' at byte {}: string without its NUL terminator", self.field, self.at)
            }
            ErrorKind::BadValue(why) => write!(f, "'{}' at byte {}: {}", self.field, self.at, why),
            ErrorKind::TooMany { max, got } => {
                write!(f, "'{}' at byte {}: {} is more than the {} allowed", self.field, self.at, got, max)
            }
        }
    }
}

impl std::error::Error for DecodeError {}

/// Result of a decode step.
pub type DecodeResult<T> = Result<T, DecodeError>;

/// A cursor over a byte slice. Every read checks the remaining length first; a failed read does not move it.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Offset of the next byte.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    /// True when everything has been read.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The unread bytes (without consuming them).
    pub fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }

    /// The next byte without consuming it.
    pub fn peek(&self) -> Option<u8> {
        self.rest().first().copied()
    }

    fn truncated(&self, field: &'static str, needed: usize) -> DecodeError {
        DecodeError { kind: ErrorKind::Truncated { needed, available: self.remaining() }, at: self.pos, field }
    }

    /// Takes the next `n` bytes.
    pub fn take(&mut self, n: usize, field: &'static str) -> DecodeResult<&'a [u8]> {
        let end = self.pos.checked_add(n).ok_or_else(|| self.truncated(field, n))?;
        match self.buf.get(self.pos..end) {
            Some(s) => {
                self.pos = end;
                Ok(s)
            }
            None => Err(self.truncated(field, n)),
        }
    }

    /// Takes everything that is left.
    pub fn take_rest(&mut self) -> &'a [u8] {
        let r = self.rest();
        self.pos = self.buf.len();
        r
    }

    /// Skips `n` bytes.
    pub fn skip(&mut self, n: usize, field: &'static str) -> DecodeResult<()> {
        self.take(n, field).map(|_| ())
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> DecodeResult<[u8; N]> {
        let s = self.take(N, field)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// Reads a byte.
    pub fn u8(&mut self, field: &'static str) -> DecodeResult<u8> {
        Ok(self.array::<1>(field)?[0])
    }
    /// Reads a little-endian `u16`.
    pub fn u16_le(&mut self, field: &'static str) -> DecodeResult<u16> {
        Ok(u16::from_le_bytes(self.array(field)?))
    }
    /// Reads a big-endian `u16`.
    pub fn u16_be(&mut self, field: &'static str) -> DecodeResult<u16> {
        Ok(u16::from_be_bytes(self.array(field)?))
    }
    /// Reads a little-endian `u32`.
    pub fn u32_le(&mut self, field: &'static str) -> DecodeResult<u32> {
        Ok(u32::from_le_bytes(self.array(field)?))
    }
    /// Reads a big-endian `u32`.
    pub fn u32_be(&mut self, field: &'static str) -> DecodeResult<u32> {
        Ok(u32::from_be_bytes(self.array(field)?))
    }
    /// Reads a little-endian `i32`.
    pub fn i32_le(&mut self, field: &'static str) -> DecodeResult<i32> {
        Ok(i32::from_le_bytes(self.array(field)?))
    }
    /// Reads a fixed-size array.
    pub fn bytes<const N: usize>(&mut self, field: &'static str) -> DecodeResult<[u8; N]> {
        self.array(field)
    }

    /// Consumes `expected` if the input starts with it; otherwise a [`ErrorKind::BadValue`] and no move.
    pub fn expect(&mut self, expected: &[u8], field: &'static str) -> DecodeResult<()> {
        if self.rest().starts_with(expected) {
            self.pos += expected.len();
            Ok(())
        } else if self.remaining() < expected.len() && expected.starts_with(self.rest()) {
            Err(self.truncated(field, expected.len()))
        } else {
            Err(DecodeError::bad(field, self.pos, "unexpected bytes"))
        }
    }

    /// Reads a NUL-terminated string and consumes its NUL; the bytes are returned without it.
    pub fn cstr(&mut self, field: &'static str) -> DecodeResult<&'a [u8]> {
        let rest = self.rest();
        match rest.iter().position(|&b| b == 0) {
            Some(n) => {
                self.pos += n + 1;
                Ok(rest.get(..n).unwrap_or(&[]))
            }
            None => Err(DecodeError { kind: ErrorKind::Unterminated, at: self.pos, field }),
        }
    }

    /// Reads a fixed-size `n`-byte text field; the text ends at its first NUL (or fills the field).
    pub fn fixed_cstr(&mut self, n: usize, field: &'static str) -> DecodeResult<&'a [u8]> {
        let f = self.take(n, field)?;
        Ok(text::until_nul(f))
    }

    /// Reads a Teeworlds variable-length integer (`CVariableInt`): first byte `E S D D D D D D` (extend, sign, 6
    /// data bits), then up to four bytes `E D D D D D D D`; a negative value is stored as its bitwise NOT. At most
    /// five bytes, as the games' unpacker reads; bits beyond 32 are dropped the same way.
    pub fn tw_varint(&mut self, field: &'static str) -> DecodeResult<i32> {
        let start = self.pos;
        let first = self.u8(field)?;
        let sign = (first >> 6) & 1;
        let mut v = u32::from(first & 0x3f);
        let mut b = first;
        let mut shift = 6u32;
        let mut n = 1;
        while b & 0x80 != 0 {
            if n == 5 {
                self.pos = start;
                return Err(DecodeError::bad(field, start, "variable-length integer longer than 5 bytes"));
            }
            b = match self.u8(field) {
                Ok(b) => b,
                Err(e) => {
                    self.pos = start;
                    return Err(e);
                }
            };
            v |= u32::from(b & 0x7f).wrapping_shl(shift);
            shift += 7;
            n += 1;
        }
        let v = v as i32;
        Ok(if sign == 1 { !v } else { v })
    }
}

/// Appends `v` as a Teeworlds variable-length integer (see [`Reader::tw_varint`]).
pub fn put_tw_varint(out: &mut Vec<u8>, v: i32) {
    let (sign, mut u) = if v < 0 { (0x40u8, !v as u32) } else { (0, v as u32) };
    let mut b = sign | (u & 0x3f) as u8;
    u >>= 6;
    while u != 0 {
        out.push(b | 0x80);
        b = (u & 0x7f) as u8;
        u >>= 7;
    }
    out.push(b);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_check_length_and_do_not_move_on_failure() {
        let mut r = Reader::new(&[1, 2, 3]);
        assert_eq!(r.u16_le("a").unwrap(), 0x0201);
        let e = r.u32_be("b").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Truncated { needed: 4, available: 1 });
        assert_eq!(e.at, 2);
        assert_eq!(e.to_string(), "'b' at byte 2: 4 byte(s) needed, only 1 left");
        assert_eq!(r.u8("c").unwrap(), 3);
        assert!(r.is_empty());
        assert!(r.take(usize::MAX, "huge").is_err());
    }

    #[test]
    fn cstr_and_fixed() {
        let mut r = Reader::new(b"ab\0\0xy");
        assert_eq!(r.cstr("s").unwrap(), b"ab");
        assert_eq!(r.cstr("s").unwrap(), b"");
        assert_eq!(r.cstr("s").unwrap_err().kind, ErrorKind::Unterminated);
        assert_eq!(r.fixed_cstr(2, "f").unwrap(), b"xy");
        let mut r = Reader::new(b"a\0zz");
        assert_eq!(r.fixed_cstr(4, "f").unwrap(), b"a");
    }

    #[test]
    fn expect_distinguishes_truncated_from_wrong() {
        let mut r = Reader::new(b"\xff\xff");
        assert!(matches!(r.expect(b"\xff\xff\xff\xff", "m").unwrap_err().kind, ErrorKind::Truncated { .. }));
        assert!(matches!(r.expect(b"\xff\x00", "m").unwrap_err().kind, ErrorKind::BadValue(_)));
        r.expect(b"\xff", "m").unwrap();
        assert_eq!(r.pos(), 1);
    }

    #[test]
    fn varints_round_trip_and_match_the_captures() {
        for v in [0, 1, 63, 64, -1, -64, -65, 1234567, -9999, i32::MAX, i32::MIN, 276, 840] {
            let mut b = Vec::new();
            put_tw_varint(&mut b, v);
            assert!(b.len() <= 5);
            assert_eq!(Reader::new(&b).tw_varint("v").unwrap(), v, "{v}");
        }
        let mut b = Vec::new();
        put_tw_varint(&mut b, 1234567);
        assert_eq!(b, [0x87, 0xda, 0x96, 0x01]); // the browser token in the 0.7 captures
        assert_eq!(Reader::new(&[0x40]).tw_varint("v").unwrap(), -1);
        assert!(Reader::new(&[0x80]).tw_varint("v").is_err());
        assert!(Reader::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01]).tw_varint("v").is_err());
    }
}
