//! The `'he'` … `'ed'` envelope around the zlib-compressed world database (fact sheet §7.1).
//!
//! ```text
//! 0    u16 10        length of the header record
//! 2    u16 0x6865    'he'
//! 4    u16 1         map version
//! 6    u32           uncompressed size
//! 10   u32 C         compressed size
//! 14   C bytes       zlib stream
//! 14+C u16 0, u16 0x6564 'ed'
//! ```

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

use super::WorldError;
use crate::wire::{DecodeError, DecodeErrorKind, Reader, Writer};

/// `'he'`, the code of the header record.
pub const WORLD_CODE_HEADER: u16 = 0x6865;
/// `'ed'`, the code of the end record.
pub const WORLD_CODE_END: u16 = 0x6564;
/// The length field of the header record.
pub const WORLD_HEADER_LEN: u16 = 10;
/// The only map version a 2.4 client accepts.
pub const MAP_VERSION: u16 = 1;
/// Bytes of envelope around the zlib stream (14 before, 4 after).
pub const ENVELOPE_OVERHEAD: usize = 18;
/// Default cap on the uncompressed database: 64 MiB (real worlds are a few hundred KiB at most).
pub const MAX_WORLD_SIZE: usize = 64 * 1024 * 1024;

/// The parsed envelope of a world blob; the zlib stream is borrowed from the blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope<'a> {
    /// Map version (always [`MAP_VERSION`] once parsed).
    pub map_version: u16,
    /// Declared size of the database after inflation.
    pub uncompressed_size: u32,
    /// The zlib stream (RFC 1950).
    pub compressed: &'a [u8],
}

impl<'a> Envelope<'a> {
    /// Parses and checks the envelope: header length, codes, map version, sizes and the end record, with nothing
    /// after it. The zlib stream is not inflated yet.
    pub fn parse(blob: &'a [u8]) -> Result<Envelope<'a>, WorldError> {
        let c = |e: DecodeError| WorldError::Envelope(e.context("world envelope"));
        let mut r = Reader::new(blob);
        let bad = |r: &Reader<'_>, field: &'static str, value: u64, width: usize| {
            c(DecodeError::new(
                DecodeErrorKind::BadValue { field, value: i64::try_from(value).unwrap_or(i64::MAX) },
                r.position().saturating_sub(width),
            ))
        };
        let len = r.u16().map_err(c)?;
        if len != WORLD_HEADER_LEN {
            return Err(bad(&r, "header length", len.into(), 2));
        }
        let code = r.u16().map_err(c)?;
        if code != WORLD_CODE_HEADER {
            return Err(bad(&r, "header code", code.into(), 2));
        }
        let map_version = r.u16().map_err(c)?;
        if map_version != MAP_VERSION {
            return Err(bad(&r, "map version", map_version.into(), 2));
        }
        let uncompressed_size = r.u32().map_err(c)?;
        let compressed_size = r.u32().map_err(c)?;
        let compressed = r.take(compressed_size as usize).map_err(c)?;
        let len = r.u16().map_err(c)?;
        if len != 0 {
            return Err(bad(&r, "end record length", len.into(), 2));
        }
        let code = r.u16().map_err(c)?;
        if code != WORLD_CODE_END {
            return Err(bad(&r, "end code", code.into(), 2));
        }
        r.expect_end().map_err(c)?;
        Ok(Envelope { map_version, uncompressed_size, compressed })
    }

    /// Inflates the zlib stream into exactly `uncompressed_size` bytes, refusing a declared size above `cap`.
    ///
    /// Never holds more than `uncompressed_size + 1` bytes of output, whatever the stream would expand to: a
    /// stream that produces more than declared fails with [`WorldError::Overflow`], one that produces less with
    /// [`WorldError::SizeMismatch`]. Bytes after the end of the zlib stream are refused too.
    pub fn inflate(&self, cap: usize) -> Result<Vec<u8>, WorldError> {
        let declared = self.uncompressed_size as usize;
        if declared > cap {
            return Err(WorldError::Envelope(
                DecodeError::new(DecodeErrorKind::TooLong { field: "uncompressed size", max: cap, got: declared }, 6)
                    .context("world envelope"),
            ));
        }
        let limit = declared.saturating_add(1);
        let mut out: Vec<u8> = Vec::with_capacity(limit.min(64 * 1024));
        let mut z = Decompress::new(true);
        loop {
            if out.len() > declared {
                return Err(WorldError::Overflow { declared });
            }
            if out.len() == out.capacity() {
                let want = out.capacity().saturating_mul(2).max(4096).min(limit);
                out.reserve_exact(want.saturating_sub(out.len()));
            }
            let consumed = usize::try_from(z.total_in()).unwrap_or(usize::MAX);
            let input = self.compressed.get(consumed..).unwrap_or(&[]);
            let (in_before, out_before) = (z.total_in(), z.total_out());
            let status = z
                .decompress_vec(input, &mut out, FlushDecompress::None)
                .map_err(|e| WorldError::Inflate(format!("corrupt zlib stream: {e}")))?;
            match status {
                Status::StreamEnd => break,
                Status::Ok | Status::BufError => {
                    if z.total_in() == in_before && z.total_out() == out_before {
                        if input.is_empty() {
                            return Err(WorldError::Inflate(format!(
                                "zlib stream ends early: all {} compressed bytes used, {} of {} bytes inflated",
                                self.compressed.len(),
                                out.len(),
                                declared
                            )));
                        }
                        if out.len() < out.capacity() {
                            return Err(WorldError::Inflate("zlib stream makes no progress".into()));
                        }
                    }
                }
            }
        }
        if out.len() > declared {
            return Err(WorldError::Overflow { declared });
        }
        if out.len() != declared {
            return Err(WorldError::SizeMismatch { declared, actual: out.len() });
        }
        let used = usize::try_from(z.total_in()).unwrap_or(usize::MAX);
        if used != self.compressed.len() {
            return Err(WorldError::Inflate(format!(
                "{} byte(s) after the end of the zlib stream",
                self.compressed.len().saturating_sub(used)
            )));
        }
        Ok(out)
    }

    /// Wraps a database in an envelope (zlib level 9, like `bzfs`). The compressed bytes may differ from a real
    /// server's (different deflate implementation) but inflate to the same database.
    pub fn wrap(db: &[u8]) -> Vec<u8> {
        let mut z = Compress::new(Compression::best(), true);
        let mut compressed: Vec<u8> = Vec::with_capacity(db.len() / 2 + 64);
        loop {
            if compressed.len() == compressed.capacity() {
                compressed.reserve(compressed.capacity().max(64));
            }
            let consumed = usize::try_from(z.total_in()).unwrap_or(usize::MAX);
            let input = db.get(consumed..).unwrap_or(&[]);
            match z.compress_vec(input, &mut compressed, FlushCompress::Finish) {
                Ok(Status::StreamEnd) => break,
                Ok(_) => {}
                // Compressing into a Vec with spare room cannot fail; stop rather than loop.
                Err(_) => break,
            }
        }
        let mut w = Writer::with_capacity(compressed.len() + ENVELOPE_OVERHEAD);
        w.u16(WORLD_HEADER_LEN).u16(WORLD_CODE_HEADER).u16(MAP_VERSION);
        w.u32(db.len() as u32).u32(compressed.len() as u32).bytes(&compressed);
        w.u16(0).u16(WORLD_CODE_END);
        w.into_vec()
    }
}

/// Parses the envelope of `blob` and inflates it (cap [`MAX_WORLD_SIZE`]).
pub fn inflate_blob(blob: &[u8]) -> Result<Vec<u8>, WorldError> {
    Envelope::parse(blob)?.inflate(MAX_WORLD_SIZE)
}
