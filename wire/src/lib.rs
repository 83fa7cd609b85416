//! bzhead's byte reader: a panic-free [`Reader`], the [`DecodeError`] it returns, small text helpers ([`text`]) and
//! a deterministic mutator for adversarial tests ([`fuzz`]).
//!
//! Every protocol in bzhead reads bytes through this crate: the BZFlag messages and world database of the core
//! (whose `bzhead::wire` adds BZFlag's own encodings on top: vectors, callsign fields, length-prefixed strings) and
//! the query plugins' engines. Nothing here indexes a slice directly or can panic on input: each read checks what
//! is left first and a failed read does not move the cursor. Its error says how many bytes were needed, how many
//! were available, at which offset, and (once the caller names it with [`DecodeError::context`] or
//! [`ResultExt::context`]) what was being read:
//!
//! ```
//! use bzhead_wire::{Reader, ResultExt};
//!
//! let mut r = Reader::new(&[0x12, 0x34, 0x56]);
//! assert_eq!(r.u16().unwrap(), 0x1234);
//! let e = r.u32().context("score").unwrap_err();
//! assert_eq!(e.to_string(), "not enough data to decode score: 4 byte(s) needed at offset 2, but only 1 left");
//! assert_eq!(r.position(), 2);
//! ```
//!
//! Counts read from the wire that size an allocation go through [`Reader::count`], which refuses a count the rest
//! of the buffer cannot possibly hold, so a hostile length never makes a parser allocate more than its input.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod error;
pub mod fuzz;
mod reader;
pub mod text;

pub use error::{DecodeError, DecodeErrorKind, DecodeResult, ResultExt};
pub use reader::Reader;
