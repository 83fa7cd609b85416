//! bzhead: a headless BZFlag 2.4 client core and a server-query plugin host that share one `mio` event loop.
//!
//! Architecture (each layer only depends on those above it):
//!
//! * [`wire`]: bytes only. A panic-free reader and a writer.
//! * [`bzflag`]: the sans-IO BZFlag 2.4 (`BZFS0221`) engine. Messages, the session state machine, the roster,
//!   flags and server variables, the world (parser, model, BVH queries, shot paths) and play (tank physics, dead
//!   reckoning, shots, hits). It takes bytes, datagrams and `now: Instant`, and gives back events, bytes to send
//!   and its next deadline. It never touches a socket or the clock.
//! * [`reactor`]: the only code that does I/O. One `mio::Poll` owns every socket and timer, for any number of
//!   sessions and query scans.
//! * [`query`]: the server-query host: C-ABI protocol plugins (loaded with `libloading`), the sans-IO scan
//!   scheduler the reactor drives next to the sessions, and the result shape shared by every protocol.
//! * [`record`]: session recordings (`--record`) and their offline replay through the same engine.
//! * [`observer`]: what the `observe` command prints (bzadmin-style text or JSON lines).
//! * [`cache`]: the on-disk world cache the reactor answers the engine's world requests from.
//! * [`world_cmd`]: the `world` command (fetch a world, print its model as text or JSON, draw an SVG map).
//!
//! The binary (`src/main.rs`, `src/cli/`) is a thin clap layer over these; its exit codes are documented in the
//! README.
#![warn(missing_docs)]

#[forbid(unsafe_code)]
pub mod bot;
#[forbid(unsafe_code)]
pub mod bzflag;
#[forbid(unsafe_code)]
pub mod cache;
#[forbid(unsafe_code)]
pub mod observer;
pub mod query;
pub mod reactor;
#[forbid(unsafe_code)]
pub mod record;
#[forbid(unsafe_code)]
pub mod wire;
#[forbid(unsafe_code)]
pub mod world_cmd;
