use super::{DecodeError, DecodeErrorKind, DecodeResult};

/// A cursor over a byte slice that reads big-endian values and never panics.
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

    /// The unread part of the buffer.
    pub fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }

    fn truncated(&self, needed: usize) -> DecodeError {
        DecodeError::new(DecodeErrorKind::Truncated { needed, available: self.remaining() }, self.pos)
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

    fn array<const N: usize>(&mut self) -> DecodeResult<[u8; N]> {
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
    /// Reads a big-endian IEEE-754 `f32`. NaN is returned as is; callers that must not see NaN use
    /// [`Reader::f32_finite`].
    pub fn f32(&mut self) -> DecodeResult<f32> {
        Ok(f32::from_be_bytes(self.array()?))
    }
    /// Reads an `f32` and replaces NaN and infinities with 0, as the official unpacker does for NaN.
    pub fn f32_finite(&mut self) -> DecodeResult<f32> {
        let v = self.f32()?;
        Ok(if v.is_finite() { v } else { 0.0 })
    }
    /// Reads three `f32` (x, y, z), non-finite values replaced with 0.
    pub fn vec3(&mut self) -> DecodeResult<[f32; 3]> {
        Ok([self.f32_finite()?, self.f32_finite()?, self.f32_finite()?])
    }

    /// Reads a fixed `n`-byte field holding a NUL-terminated, zero-padded string; returns the text before the
    /// first NUL (lossy UTF-8: BZFlag text is nominally ASCII).
    pub fn fixed_str(&mut self, n: usize) -> DecodeResult<String> {
        let s = self.take(n)?;
        Ok(cstr_lossy(s))
    }

    /// Reads a "std string": `u32` length then that many bytes, no terminator. The length must fit in the rest
    /// of the buffer (checked before anything is allocated).
    pub fn sstr_bytes(&mut self) -> DecodeResult<&'a [u8]> {
        let start = self.pos;
        let n = self.u32()? as usize;
        if n > self.remaining() {
            let e = self.truncated(n);
            self.pos = start;
            return Err(e);
        }
        self.take(n)
    }

    /// [`Reader::sstr_bytes`] as lossy UTF-8 text.
    pub fn sstr(&mut self) -> DecodeResult<String> {
        Ok(String::from_utf8_lossy(self.sstr_bytes()?).into_owned())
    }

    /// Checks a count read from the wire against what the rest of the buffer can hold, given that each element
    /// takes at least `min_elem_size` bytes (use 1 for variable records). Returns the count as `usize` so that it
    /// can size an allocation safely.
    pub fn count(&self, field: &'static str, n: u64, min_elem_size: usize) -> DecodeResult<usize> {
        let max = self.remaining() / min_elem_size.max(1);
        if n > max as u64 {
            return Err(DecodeError::new(
                DecodeErrorKind::TooLong { field, max, got: usize::try_from(n).unwrap_or(usize::MAX) },
                self.pos,
            ));
        }
        Ok(n as usize)
    }

    /// Fails with [`DecodeErrorKind::TrailingBytes`] unless everything has been read.
    pub fn expect_end(&self) -> DecodeResult<()> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(DecodeError::new(DecodeErrorKind::TrailingBytes { count: self.remaining() }, self.pos))
        }
    }

    /// An error of `kind` at the current position.
    pub fn error(&self, kind: DecodeErrorKind) -> DecodeError {
        DecodeError::new(kind, self.pos)
    }
}

/// The bytes before the first NUL of `s`, as lossy UTF-8.
pub(crate) fn cstr_lossy(s: &[u8]) -> String {
    let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
    String::from_utf8_lossy(s.get(..end).unwrap_or(s)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn hostile_lengths_do_not_allocate() {
        let b = [0xff, 0xff, 0xff, 0xff, 1, 2];
        let mut r = Reader::new(&b);
        let e = r.sstr_bytes().unwrap_err();
        assert!(e.is_truncation());
        assert_eq!(r.position(), 0);
        let r = Reader::new(&b);
        assert!(r.count("n", u64::MAX, 8).is_err());
        assert_eq!(r.count("n", 3, 2).unwrap(), 3);
        assert!(r.count("n", 4, 2).is_err());
    }

    #[test]
    fn fixed_strings_stop_at_nul_and_floats_are_sanitized() {
        let mut b = b"abc\0zz".to_vec();
        b.extend_from_slice(&f32::NAN.to_be_bytes());
        let mut r = Reader::new(&b);
        assert_eq!(r.fixed_str(6).unwrap(), "abc");
        assert_eq!(r.f32_finite().unwrap(), 0.0);
    }

    #[test]
    fn display_names_needed_available_and_offset() {
        let e = DecodeError::new(DecodeErrorKind::Truncated { needed: 4, available: 1 }, 7).context("MsgAlive");
        assert_eq!(e.to_string(), "not enough data to decode MsgAlive: 4 byte(s) needed at offset 7, but only 1 left");
    }
}
