//! [`Reader`]: a cursor over a byte slice whose reads never panic.

use crate::error::{DecodeError, DecodeErrorKind, DecodeResult};
use crate::text;

/// A cursor over a byte slice that reads big-endian values (and little-endian ones, named `_le`) and never panics.
///
/// Every read checks the remaining length first; on failure the cursor does not move.
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

    /// Offset of the next byte to read.
    pub fn position(&self) -> usize {
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

    /// The unread part of the buffer (without consuming it).
    pub fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }

    /// The next byte without consuming it.
    pub fn peek(&self) -> Option<u8> {
        self.rest().first().copied()
    }

    fn truncated(&self, needed: usize) -> DecodeError {
        self.error(DecodeErrorKind::Truncated { needed, available: self.remaining() })
    }

    /// Takes the next `n` bytes.
    pub fn take(&mut self, n: usize) -> DecodeResult<&'a [u8]> {
        let end = self.pos.checked_add(n).ok_or_else(|| self.truncated(n))?;
        match self.buf.get(self.pos..end) {
            Some(s) => {
                self.pos = end;
                Ok(s)
            }
            None => Err(self.truncated(n)),
        }
    }

    /// Takes everything that is left.
    pub fn take_rest(&mut self) -> &'a [u8] {
        let r = self.rest();
        self.pos = self.buf.len();
        r
    }

    /// Skips `n` bytes.
    pub fn skip(&mut self, n: usize) -> DecodeResult<()> {
        self.take(n).map(|_| ())
    }

    /// Reads a fixed-size array of `N` bytes.
    pub fn array<const N: usize>(&mut self) -> DecodeResult<[u8; N]> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// Reads a `u8`.
    pub fn u8(&mut self) -> DecodeResult<u8> {
        Ok(self.array::<1>()?[0])
    }
    /// Reads a big-endian `u16`.
    pub fn u16(&mut self) -> DecodeResult<u16> {
        Ok(u16::from_be_bytes(self.array()?))
    }
    /// Reads a big-endian `i16`.
    pub fn i16(&mut self) -> DecodeResult<i16> {
        Ok(i16::from_be_bytes(self.array()?))
    }
    /// Reads a big-endian `u32`.
    pub fn u32(&mut self) -> DecodeResult<u32> {
        Ok(u32::from_be_bytes(self.array()?))
    }
    /// Reads a big-endian `i32`.
    pub fn i32(&mut self) -> DecodeResult<i32> {
        Ok(i32::from_be_bytes(self.array()?))
    }
    /// Reads a big-endian `u64`.
    pub fn u64(&mut self) -> DecodeResult<u64> {
        Ok(u64::from_be_bytes(self.array()?))
    }
    /// Reads a little-endian `u16` (for the protocols that use it, e.g. SRB2).
    pub fn u16_le(&mut self) -> DecodeResult<u16> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    /// Reads a little-endian `u32`.
    pub fn u32_le(&mut self) -> DecodeResult<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    /// Reads a little-endian `i32`.
    pub fn i32_le(&mut self) -> DecodeResult<i32> {
        Ok(i32::from_le_bytes(self.array()?))
    }
    /// Reads a big-endian IEEE-754 `f32`, NaN and infinities included.
    pub fn f32(&mut self) -> DecodeResult<f32> {
        Ok(f32::from_be_bytes(self.array()?))
    }

    /// Consumes `expected` if the input starts with it. Otherwise the cursor stays, and the error is
    /// [`DecodeErrorKind::Truncated`] when the input ends within a prefix of `expected`, else
    /// [`DecodeErrorKind::Invalid`].
    pub fn expect(&mut self, expected: &[u8]) -> DecodeResult<()> {
        if self.rest().starts_with(expected) {
            self.pos += expected.len();
            Ok(())
        } else if self.remaining() < expected.len() && expected.starts_with(self.rest()) {
            Err(self.truncated(expected.len()))
        } else {
            Err(self.error(DecodeErrorKind::Invalid("unexpected bytes")))
        }
    }

    /// Reads a NUL-terminated string and consumes its NUL; the bytes are returned without it. No NUL before the
    /// end is [`DecodeErrorKind::Unterminated`].
    pub fn cstr(&mut self) -> DecodeResult<&'a [u8]> {
        let rest = self.rest();
        match rest.iter().position(|&b| b == 0) {
            Some(n) => {
                self.pos += n + 1;
                Ok(rest.get(..n).unwrap_or(&[]))
            }
            None => Err(self.error(DecodeErrorKind::Unterminated)),
        }
    }

    /// Reads a fixed-size `n`-byte text field; the text ends at its first NUL (or fills the field).
    pub fn fixed_cstr(&mut self, n: usize) -> DecodeResult<&'a [u8]> {
        self.take(n).map(text::until_nul)
    }

    /// Checks a count read from the wire against what the rest of the buffer can hold, given that each element
    /// takes at least `min_elem_size` bytes (use 1 for variable records). Returns the count as `usize` so that it
    /// can size an allocation safely.
    pub fn count(&self, field: &'static str, n: u64, min_elem_size: usize) -> DecodeResult<usize> {
        let max = self.remaining() / min_elem_size.max(1);
        if n > max as u64 {
            let got = usize::try_from(n).unwrap_or(usize::MAX);
            return Err(self.error(DecodeErrorKind::TooLong { field, max, got }));
        }
        Ok(n as usize)
    }

    /// Fails with [`DecodeErrorKind::TrailingBytes`] unless everything has been read.
    pub fn expect_end(&self) -> DecodeResult<()> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(self.error(DecodeErrorKind::TrailingBytes { count: self.remaining() }))
        }
    }

    /// An error of `kind` at the current position.
    pub fn error(&self, kind: DecodeErrorKind) -> DecodeError {
        DecodeError::new(kind, self.pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ResultExt;

    #[test]
    fn reads_big_endian_and_stops_cleanly() {
        let b = [0x12, 0x34, 0x56, 0x78, 0x9a];
        let mut r = Reader::new(&b);
        assert_eq!(r.u16().unwrap(), 0x1234);
        assert_eq!(r.u16().unwrap(), 0x5678);
        let e = r.u16().unwrap_err();
        assert_eq!(e.kind, DecodeErrorKind::Truncated { needed: 2, available: 1 });
        assert_eq!(e.at, 4);
        assert_eq!(r.position(), 4, "a failed read does not move the cursor");
        assert_eq!(r.u8().unwrap(), 0x9a);
        assert!(r.expect_end().is_ok());
    }

    #[test]
    fn reads_check_length_and_do_not_move_on_failure() {
        let mut r = Reader::new(&[1, 2, 3]);
        assert_eq!(r.u16_le().unwrap(), 0x0201);
        let e = r.u32().context("b").unwrap_err();
        assert_eq!(e.kind, DecodeErrorKind::Truncated { needed: 4, available: 1 });
        assert_eq!(e.at, 2);
        assert_eq!(e.to_string(), "not enough data to decode b: 4 byte(s) needed at offset 2, but only 1 left");
        assert_eq!(r.u8().unwrap(), 3);
        assert!(r.is_empty());
        assert!(r.take(usize::MAX).is_err());
    }

    #[test]
    fn counts_are_bounded_by_the_input() {
        let r = Reader::new(&[0; 6]);
        assert!(r.count("n", u64::MAX, 8).is_err());
        assert_eq!(r.count("n", 3, 2).unwrap(), 3);
        let e = r.count("n", 4, 2).unwrap_err();
        assert_eq!(e.kind, DecodeErrorKind::TooLong { field: "n", max: 3, got: 4 });
    }

    #[test]
    fn cstr_and_fixed() {
        let mut r = Reader::new(b"ab\0\0xy");
        assert_eq!(r.cstr().unwrap(), b"ab");
        assert_eq!(r.cstr().unwrap(), b"");
        assert_eq!(r.cstr().unwrap_err().kind, DecodeErrorKind::Unterminated);
        assert_eq!(r.fixed_cstr(2).unwrap(), b"xy");
        let mut r = Reader::new(b"a\0zz");
        assert_eq!(r.fixed_cstr(4).unwrap(), b"a");
    }

    #[test]
    fn expect_distinguishes_truncated_from_wrong() {
        let mut r = Reader::new(b"\xff\xff");
        assert!(matches!(r.expect(b"\xff\xff\xff\xff").unwrap_err().kind, DecodeErrorKind::Truncated { .. }));
        assert!(matches!(r.expect(b"\xff\x00").unwrap_err().kind, DecodeErrorKind::Invalid(_)));
        r.expect(b"\xff").unwrap();
        assert_eq!(r.position(), 1);
        assert_eq!(r.peek(), Some(0xff));
        assert_eq!(r.array::<1>().unwrap(), [0xff]);
        assert_eq!(r.peek(), None);
    }
}
