//! bzhead: a headless BZFlag 2.4 client core and a server-query plugin host that share one `mio` event loop.
//!
//! Architecture (each layer only depends on those above it):
//!
//! * [`wire`]: bytes only. The panic-free reader the query plugins share (the `bzhead-wire` crate), BZFlag's
//!   encodings on top of it, and a writer.
//! * [`bzflag`]: the sans-IO BZFlag 2.4 (`BZFS0221`) engine. Messages, the session state machine, the roster,
//!   flags and server variables, the world (parser, model, BVH queries, shot paths) and play (tank physics, dead
//!   reckoning, shots, hits). It takes bytes, datagrams and `now: Instant`, and gives back events, bytes to send
//!   and its next deadline. It never touches a socket or the clock.
//! * [`reactor`]: the only code that does I/O. One `mio::Poll` owns every socket and timer, for any number of
//!   sessions and query scans.
//! * [`http`]: a sans-IO HTTP/1.1 server side (requests parsed with `httparse`, responses, Server-Sent Events,
//!   bounded buffers and timeouts) that the reactor serves next to the sessions; [`web`] builds the live web view
//!   of `observe --web` on it.
//! * [`monitor`]: `bzhead monitor`: continuous scans, history in SQLite, change feed, HTTP API and metrics.
//! * [`master`]: the master servers the monitor serves (dpmaster's UDP protocol), sans-IO engines on the reactor.
//! * [`query`]: the server-query host: C-ABI protocol plugins (loaded with `libloading`), the sans-IO scan
//!   scheduler the reactor drives next to the sessions, and the result shape shared by every protocol.
//! * [`record`]: session recordings (`--record`) and their offline replay through the same engine.
//! * [`observer`]: what the `observe` command prints (bzadmin-style text or JSON lines); [`netwatch`]: its
//!   per-player `netstats` lines and `--reconnect` back-off.
//! * [`cache`]: the on-disk world cache the reactor answers the engine's world requests from.
//! * [`fetch`]: a server's world fetched with a world-only session (what the `world` command prints and draws).
//! * [`text`]: text from peers made safe for a terminal (every text output goes through it).
//! * [`args`]: value parsers that refuse NaN, infinities and out-of-range numbers on the command line.
//!
//! The binary is a thin clap layer over these: `src/main.rs` parses and dispatches to one module per command in
//! `src/cli/` (observe, replay, query, scan, world, monitor, bot); its exit codes are documented in the README.
//!
//! Vectors in the public API are [`glam`]'s (`Vec2`, `Vec3`, and `Affine3A` in world transforms), re-exported here
//! ([`Vec2`], [`Vec3`], [`Affine3A`], and the crate itself as [`glam`]) so that users need no `glam` dependency of
//! their own, nor one of the same version.
//!
//! # Stability
//!
//! bzhead is 0.x: before 1.0 a minor release (0.1 → 0.2) may change the public API, and the changelog says what
//! changed. What already holds within 0.x: the exit codes, the JSON shapes (`"v":1` in every line, described by
//! `docs/schemas/`; fields may be added, none removed or retyped without a new `v`), the plugin ABI
//! (`query_abi::ABI_VERSION`, checked at load; a change bumps it) and the `--record` file format. Everything else
//! (module layout, type and function names, which internals are public) may still move; `docs/stability.md` lists
//! what is expected to.
#![warn(missing_docs)]

/// The `glam` crate bzhead's public API uses.
pub use glam;
/// Vectors and transforms of the public API (from [`glam`]).
pub use glam::{Affine3A, Vec2, Vec3};

#[forbid(unsafe_code)]
pub mod args;
#[forbid(unsafe_code)]
pub mod bot;
#[forbid(unsafe_code)]
pub mod bzflag;
#[forbid(unsafe_code)]
pub mod cache;
#[forbid(unsafe_code)]
pub mod fetch;
#[forbid(unsafe_code)]
pub mod http;
#[forbid(unsafe_code)]
pub mod master;
#[forbid(unsafe_code)]
pub mod monitor;
#[forbid(unsafe_code)]
pub mod netwatch;
#[forbid(unsafe_code)]
pub mod observer;
pub mod query;
pub mod reactor;
#[forbid(unsafe_code)]
pub mod record;
#[forbid(unsafe_code)]
pub mod text;
#[forbid(unsafe_code)]
pub mod web;
#[forbid(unsafe_code)]
pub mod wire;
