use super::{DecodeErrorKind, DecodeResult, Reader};
use bzhead_wire::text::{lossy, until_nul};

/// BZFlag's encodings, read through the shared [`Reader`]: floats as the official unpacker sanitizes them,
/// vectors, fixed NUL-padded text fields (callsigns, mottos) and "std strings". Bring it into scope with
/// `use bzhead::wire::ReaderExt`.
pub trait ReaderExt<'a> {
    /// Reads an `f32` and replaces NaN and infinities with 0, as the official unpacker does for NaN (callers that
    /// want NaN as is use [`Reader::f32`]).
    fn f32_finite(&mut self) -> DecodeResult<f32>;
    /// Reads three `f32` (x, y, z), non-finite values replaced with 0.
    fn vec3(&mut self) -> DecodeResult<[f32; 3]>;
    /// Reads a fixed `n`-byte field holding a NUL-terminated, zero-padded string; returns the text before the
    /// first NUL (lossy UTF-8: BZFlag text is nominally ASCII).
    fn fixed_str(&mut self, n: usize) -> DecodeResult<String>;
    /// Reads a "std string": `u32` length then that many bytes, no terminator. The length must fit in the rest of
    /// the buffer (checked before anything is allocated); on failure the reader does not move.
    fn sstr_bytes(&mut self) -> DecodeResult<&'a [u8]>;
    /// [`ReaderExt::sstr_bytes`] as lossy UTF-8 text.
    fn sstr(&mut self) -> DecodeResult<String>;
}

impl<'a> ReaderExt<'a> for Reader<'a> {
    fn f32_finite(&mut self) -> DecodeResult<f32> {
        let v = self.f32()?;
        Ok(if v.is_finite() { v } else { 0.0 })
    }

    fn vec3(&mut self) -> DecodeResult<[f32; 3]> {
        Ok([self.f32_finite()?, self.f32_finite()?, self.f32_finite()?])
    }

    fn fixed_str(&mut self, n: usize) -> DecodeResult<String> {
        Ok(lossy(self.fixed_cstr(n)?).into_owned())
    }

    fn sstr_bytes(&mut self) -> DecodeResult<&'a [u8]> {
        // Read on a copy, so that a length the rest cannot hold leaves `self` where it was.
        let mut r = self.clone();
        let n = r.u32()? as usize;
        if n > r.remaining() {
            return Err(r.error(DecodeErrorKind::Truncated { needed: n, available: r.remaining() }));
        }
        let s = r.take(n)?;
        *self = r;
        Ok(s)
    }

    fn sstr(&mut self) -> DecodeResult<String> {
        Ok(lossy(self.sstr_bytes()?).into_owned())
    }
}

/// The bytes before the first NUL of `s`, as lossy UTF-8.
pub(crate) fn cstr_lossy(s: &[u8]) -> String {
    lossy(until_nul(s)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn std_strings_read_their_length_then_the_bytes() {
        let b = [0, 0, 0, 2, b'h', b'i', 0, 0, 0, 3, b'x'];
        let mut r = Reader::new(&b);
        assert_eq!(r.sstr().unwrap(), "hi");
        let e = r.sstr_bytes().unwrap_err();
        assert_eq!((e.kind, e.at), (DecodeErrorKind::Truncated { needed: 3, available: 1 }, 10));
        assert_eq!(r.position(), 6, "a failed read does not move the cursor");
        assert_eq!(cstr_lossy(b"ab\0cd"), "ab");
    }
}
