//! The server-query host: C-ABI protocol plugins, a sans-IO scheduler, and the shared result shape.
//!
//! * [`loader`]: finds plugin libraries (`--plugin-dir`, `BZHEAD_PLUGIN_PATH`, the user's and the system's plugin
//!   directories, beside the executable) and checks each table before first use, the built-in ones' too.
//! * [`builtin`]: the bundled protocols, linked in, opened through the same C-ABI table and checks.
//! * [`plugin`]: calls into a loaded plugin (instances) and the host callbacks that copy and validate everything a
//!   plugin reports. With [`loader`], the only `unsafe` code of this crate.
//! * [`scan`]: the scheduler ([`scan::Scan`]): concurrency, a global send rate, per-server pace, timeouts, ping,
//!   demultiplexing by source address, master expansion. Sans-IO: the [`crate::reactor::Reactor`] drives it over
//!   one UDP socket per address family, next to BZFlag sessions on the same poll.
//! * [`result`]: the result shape every protocol's answer is printed in; [`bzflag`]: the built-in protocol's answer
//!   in it.
//! * [`targets`]: addresses with default ports, list files.
//! * `addr` (private): the scanner's address keys, in one normal form, and their cheap keyed hasher.
//! * [`filter`]: what a scan takes from a master's list (special-use addresses, ports per host).
//! * [`front`]: the one front door every front end (`query`, `scan`, `monitor`, Python) goes through: default
//!   ports with a typed error, master targets, the configuration (tokens always fresh), and the driver of a scan on
//!   a [`front::ScanHost`] (the reactor).
//!
//! Protocol names: `bzflag` is built in ([`BZFLAG`], run as a TCP session by the reactor); every other name comes
//! from a plugin (`teeworlds`, `teeworlds7`, `quake3`, `warsow`, `dpmaster`, `savage2`, `srb2`).
#![deny(unsafe_code)]

#[forbid(unsafe_code)]
mod addr;
#[forbid(unsafe_code)]
pub mod builtin;
#[forbid(unsafe_code)]
pub mod bzflag;
#[forbid(unsafe_code)]
pub mod filter;
#[forbid(unsafe_code)]
pub mod front;
#[allow(unsafe_code)] // loads libraries and reads their tables (docs/unsafe.md)
pub mod loader;
#[allow(unsafe_code)] // calls into plugins, and the host callbacks they call (docs/unsafe.md)
pub mod plugin;
#[forbid(unsafe_code)]
pub mod result;
#[forbid(unsafe_code)]
pub mod scan;
#[forbid(unsafe_code)]
pub mod targets;

pub use front::{FrontError, MasterSpec, ScanHost, Tick, UnknownProtocol};
pub use loader::{PluginError, PluginLibrary, PluginOrigin, PluginSet, ProtocolDesc, ProtocolKind};
pub use result::{Answer, ErrorKind, QueryError, QueryResult};
pub use scan::{Scan, ScanConfig, ScanEvent, ScanStats, Target};

/// The built-in BZFlag protocol (a TCP query session of the BZFlag engine, run by the reactor).
pub const BZFLAG: &str = "bzflag";

/// Default port of the built-in `bzflag` protocol.
pub const BZFLAG_PORT: u16 = crate::bzflag::consts::DEFAULT_PORT;
