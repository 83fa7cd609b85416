use byteorder::{BigEndian, WriteBytesExt};

/// Appends big-endian values to a `Vec<u8>`. Writing to a vector cannot fail, so no method returns an error.
#[derive(Debug, Default, Clone)]
pub struct Writer {
    buf: Vec<u8>,
}

// Writing into a Vec<u8> through io::Write never fails; the results below are therefore ignored on purpose.
impl Writer {
    /// An empty writer.
    pub fn new() -> Self {
        Writer { buf: Vec::new() }
    }
    /// An empty writer with room for `n` bytes.
    pub fn with_capacity(n: usize) -> Self {
        Writer { buf: Vec::with_capacity(n) }
    }
    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    /// True if nothing was written.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
    /// The bytes written.
    pub fn as_slice(&self) -> &[u8] {
        &self.buf
    }
    /// Takes the bytes.
    pub fn into_vec(self) -> Vec<u8> {
        self.buf
    }
    /// Writes a `u8`.
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.buf.push(v);
        self
    }
    /// Writes a big-endian `u16`.
    pub fn u16(&mut self, v: u16) -> &mut Self {
        let _ = self.buf.write_u16::<BigEndian>(v);
        self
    }
    /// Writes a big-endian `i16`.
    pub fn i16(&mut self, v: i16) -> &mut Self {
        let _ = self.buf.write_i16::<BigEndian>(v);
        self
    }
    /// Writes a big-endian `u32`.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        let _ = self.buf.write_u32::<BigEndian>(v);
        self
    }
    /// Writes a big-endian `i32`.
    pub fn i32(&mut self, v: i32) -> &mut Self {
        let _ = self.buf.write_i32::<BigEndian>(v);
        self
    }
    /// Writes a big-endian `u64`.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        let _ = self.buf.write_u64::<BigEndian>(v);
        self
    }
    /// Writes a little-endian `u16`.
    pub fn u16_le(&mut self, v: u16) -> &mut Self {
        let _ = self.buf.write_u16::<byteorder::LittleEndian>(v);
        self
    }
    /// Writes a little-endian `u32`.
    pub fn u32_le(&mut self, v: u32) -> &mut Self {
        let _ = self.buf.write_u32::<byteorder::LittleEndian>(v);
        self
    }
    /// Writes a big-endian `f32`.
    pub fn f32(&mut self, v: f32) -> &mut Self {
        let _ = self.buf.write_f32::<BigEndian>(v);
        self
    }
    /// Writes three `f32`.
    pub fn vec3(&mut self, v: [f32; 3]) -> &mut Self {
        self.f32(v[0]).f32(v[1]).f32(v[2])
    }
    /// Writes raw bytes.
    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(b);
        self
    }
    /// Writes `s` into a fixed `n`-byte field: truncated to `n - 1` bytes, NUL-terminated, zero-padded.
    pub fn fixed_str(&mut self, s: &str, n: usize) -> &mut Self {
        if n == 0 {
            return self;
        }
        let b = s.as_bytes();
        let k = b.len().min(n - 1);
        self.buf.extend_from_slice(&b[..k]);
        self.buf.resize(self.buf.len() + (n - k), 0);
        self
    }
    /// Writes a "std string": `u32` length then the bytes.
    pub fn sstr(&mut self, b: &[u8]) -> &mut Self {
        self.u32(b.len() as u32).bytes(b)
    }
    /// Overwrites a big-endian `u16` at `at` (for length fields filled in after the body). Out-of-range offsets
    /// are ignored.
    pub fn patch_u16(&mut self, at: usize, v: u16) {
        if let Some(s) = self.buf.get_mut(at..at + 2) {
            s.copy_from_slice(&v.to_be_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Reader, ReaderExt};

    #[test]
    fn round_trips_through_reader() {
        let mut w = Writer::new();
        w.u8(1).u16(2).i16(-3).u32(4).i32(-5).f32(1.5).fixed_str("callsign", 32).sstr(b"xy");
        let b = w.into_vec();
        assert_eq!(b.len(), 1 + 2 + 2 + 4 + 4 + 4 + 32 + 6);
        let mut r = Reader::new(&b);
        assert_eq!(r.u8().unwrap(), 1);
        assert_eq!(r.u16().unwrap(), 2);
        assert_eq!(r.i16().unwrap(), -3);
        assert_eq!(r.u32().unwrap(), 4);
        assert_eq!(r.i32().unwrap(), -5);
        assert_eq!(r.f32().unwrap(), 1.5);
        assert_eq!(r.fixed_str(32).unwrap(), "callsign");
        assert_eq!(r.sstr().unwrap(), "xy");
        r.expect_end().unwrap();
    }

    #[test]
    fn fixed_str_truncates_and_terminates() {
        let mut w = Writer::new();
        w.fixed_str("abcdef", 4);
        assert_eq!(w.as_slice(), b"abc\0");
    }
}
