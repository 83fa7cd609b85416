//! Bytes for BZFlag: the shared panic-free [`Reader`] and its [`DecodeError`] (from the `bzhead-wire` crate, which
//! the query plugins read through too), BZFlag's own encodings on top of it ([`ReaderExt`]: vectors, fixed
//! callsign fields, `u32`-length strings) and an infallible [`Writer`].
//!
//! Every protocol in bzhead (BZFlag messages, the world database) reads through [`Reader`]. It never indexes a
//! slice directly: each read checks what is left first and returns [`DecodeErrorKind::Truncated`] with how many
//! bytes were needed, how many were there, and where. Counts read from the wire that size an allocation go through
//! [`Reader::count`], which refuses a count the rest of the buffer cannot possibly hold, so a hostile length can
//! never make us allocate more than the input itself.
//!
//! Writing goes through [`Writer`], a thin layer over `byteorder::WriteBytesExt` on a `Vec<u8>` (which cannot fail).

mod reader;
mod writer;

pub use bzhead_wire::{DecodeError, DecodeErrorKind, DecodeResult, Reader, ResultExt};
pub(crate) use reader::cstr_lossy as reader_cstr;
pub use reader::ReaderExt;
pub use writer::Writer;
