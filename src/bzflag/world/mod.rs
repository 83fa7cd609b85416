//! The world database carried by `MsgGetWorld` (protocol fact sheet §7).
//!
//! The server sends the world as one blob, in 1016-byte chunks: an `'he'` … `'ed'` [`Envelope`] around a zlib
//! stream of the database. The database is ten sections (dynamic colours, texture matrices, materials, physics
//! drivers, transforms, obstacles as group definitions, teleporter links, water, weapons, zones) with no per-record
//! framing, so every record must be decoded to reach the next; [`WorldDb::parse`] decodes all of it into typed
//! records and insists on ending exactly at the end of the buffer.
//!
//! ```no_run
//! # fn demo(blob: &[u8]) -> Result<(), bzhead::bzflag::world::WorldError> {
//! let world = bzhead::bzflag::world::parse_blob(blob)?;
//! println!("{}", world.counts()); // "4 wall, 24 box, 28 pyramid, 4 base"
//! # Ok(()) }
//! ```
//!
//! Nothing here panics on any input, and memory use is bounded: the inflated size is capped
//! ([`MAX_WORLD_SIZE`]) and checked while inflating, every count is checked against the bytes left before
//! anything is allocated for it, every list, string and byte block the decoded database owns is charged to a
//! budget before it is filled ([`MAX_DECODED_SIZE`], so records that are a few bytes on the wire and a hundred
//! in memory cannot add up to more), and group instances, the records that cost the most memory for their size
//! and multiply the world, are capped ([`MAX_GROUP_INSTANCES`]).
//!
//! What is kept is what was sent: group instances are not expanded, arcs/cones/spheres/tetras are not turned
//! into meshes. [`WorldDb::to_bytes`] writes a database back out (byte-identical for the captured worlds), which
//! tests and fake servers use.
//!
//! [`WorldModel::build`] turns a database into collision geometry: groups expanded, shapes tessellated like
//! the client, teleporters ordered and linked, everything in a BVH, with the queries a bot needs (segment hits,
//! line of sight, tank collisions, ground height, bases, teleporter transport). [`report`] prints it as text,
//! JSON or an SVG map.
#![forbid(unsafe_code)]

pub mod bvh;
mod emit;
mod envelope;
pub mod geometry;
pub mod links;
mod model;
mod parse;
pub mod report;
mod shots;
mod spatial;
pub mod tessellate;
mod types;
pub mod xform;

#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod tests;

pub use envelope::{
    inflate_blob, Envelope, ENVELOPE_OVERHEAD, MAP_VERSION, MAX_WORLD_SIZE, WORLD_CODE_END, WORLD_CODE_HEADER,
    WORLD_HEADER_LEN,
};
pub use links::{FaceLinks, LinkTable};
pub use model::{
    BaseModel, Face, Geometry, ModelError, ModelLimits, ModelObstacle, ObstacleId, Passability, Solid, TeleporterModel,
    WallModel, WorldModel, MAX_EXTENT,
};
pub use parse::{MAX_DECODED_SIZE, MAX_GROUP_INSTANCES};
pub use shots::{SegmentReason, ShotOptions, ShotSegment};
pub use spatial::{FieldEntry, Ground, Hit, Mask, TankBox};
pub use types::*;

use crate::wire::DecodeError;
use std::fmt;

/// Why a world blob could not be turned into a [`WorldDb`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorldError {
    /// The envelope is wrong: truncated, wrong codes or map version, bytes after the end record, or a declared
    /// size above the cap.
    Envelope(DecodeError),
    /// The zlib stream is corrupt, ends early, or is followed by extra bytes.
    Inflate(String),
    /// The stream inflated to a different size than the envelope declared.
    SizeMismatch {
        /// Size in the envelope.
        declared: usize,
        /// Size the stream inflated to.
        actual: usize,
    },
    /// The stream inflates to more than the declared size (inflation was stopped there).
    Overflow {
        /// Size in the envelope.
        declared: usize,
    },
    /// The database holds more records of a kind than the decoder allows (see [`MAX_GROUP_INSTANCES`]); refused
    /// when the count is read, before anything is decoded for them.
    TooMany {
        /// What there are too many of, e.g. "group instances".
        what: &'static str,
        /// How many the database holds up to where it was refused.
        count: usize,
        /// The cap.
        limit: usize,
        /// Offset of the count in the decompressed database.
        at: usize,
        /// Where in the database, outermost first, e.g. `world group, group instance count`.
        location: String,
    },
    /// The decoded database would take more memory than the decoder's budget ([`MAX_DECODED_SIZE`], or the
    /// one given to [`WorldDb::parse_with_budget`]); refused when the list or string that would go over it is
    /// read, before it is decoded.
    OverBudget {
        /// Bytes the decoded database would take with that list or string (counted as
        /// [`WorldDb::parse_with_budget`] says).
        needed: usize,
        /// The budget, in bytes.
        limit: usize,
        /// Offset of that list's count (or of that string) in the decompressed database.
        at: usize,
        /// Where in the database, outermost first, e.g. `texture matrices` or `world group, mesh count`.
        location: String,
    },
    /// The database itself is malformed.
    Database {
        /// What failed, at which offset of the decompressed database.
        error: DecodeError,
        /// Where in the database, outermost first, e.g. `world group, mesh #3, face 2`.
        location: String,
    },
}

impl fmt::Display for WorldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorldError::Envelope(e) => write!(f, "bad world envelope: {e}"),
            WorldError::Inflate(why) => write!(f, "cannot decompress the world: {why}"),
            WorldError::SizeMismatch { declared, actual } => {
                write!(f, "the world decompresses to {actual} bytes but the server announced {declared} bytes")
            }
            WorldError::Overflow { declared } => {
                write!(f, "the world decompresses to more than the {declared} bytes the server announced")
            }
            WorldError::TooMany { what, count, limit, at, location } => write!(
                f,
                "the world database holds {count} {what}, over the limit of {limit} ({location}, offset {at})"
            ),
            WorldError::OverBudget { needed, limit, at, location } => write!(
                f,
                "decoding the world database would take at least {needed} bytes of memory, over the {limit}-byte \
                 ({} MiB) limit for a decoded world ({location}, offset {at})",
                limit / (1024 * 1024)
            ),
            WorldError::Database { error, location } if location.is_empty() => {
                write!(f, "malformed world database: {error}")
            }
            WorldError::Database { error, location } => write!(f, "malformed world database ({location}): {error}"),
        }
    }
}

impl std::error::Error for WorldError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WorldError::Envelope(e) | WorldError::Database { error: e, .. } => Some(e),
            _ => None,
        }
    }
}

/// Parses a whole `MsgGetWorld` blob (the bytes whose MD5 is the world hash): envelope, inflation (capped at
/// [`MAX_WORLD_SIZE`]) and database.
pub fn parse_blob(blob: &[u8]) -> Result<WorldDb, WorldError> {
    parse_blob_with_cap(blob, MAX_WORLD_SIZE)
}

/// [`parse_blob`] with another cap on the inflated size. The decoded [`WorldDb`] typically takes two to three
/// times the inflated size in memory; a pathological database of millions of empty records would take more
/// (empty meshes: 21 bytes on the wire, about 170 in memory; texture matrices, 5 and about 100), but whatever the
/// cap the decoded database is refused beyond [`MAX_DECODED_SIZE`] ([`WorldError::OverBudget`]).
pub fn parse_blob_with_cap(blob: &[u8], cap: usize) -> Result<WorldDb, WorldError> {
    let db = Envelope::parse(blob)?.inflate(cap)?;
    WorldDb::parse(&db)
}
