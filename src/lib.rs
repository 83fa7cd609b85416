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
//! * [`http`]: a sans-IO HTTP/1.1 server side (requests parsed with `httparse`, responses, Server-Sent Events,
//!   bounded buffers and timeouts) that the reactor serves next to the sessions; [`web`] builds the live web view
//!   of `observe --web` on it.
//! * [`monitor`]: `bzhead monitor`: continuous scans, history in SQLite, change feed, HTTP API and metrics.
//! * [`query`]: the server-query host: C-ABI protocol plugins (loaded with `libloading`), the sans-IO scan
//!   scheduler the reactor drives next to the sessions, and the result shape shared by every protocol.
//! * [`record`]: session recordings (`--record`) and their offline replay through the same engine.
//! * [`observer`]: what the `observe` command prints (bzadmin-style text or JSON lines); [`netwatch`]: its
//!   per-player `netstats` lines and `--reconnect` back-off.
//! * [`cache`]: the on-disk world cache the reactor answers the engine's world requests from.
//! * [`world_cmd`]: the `world` command (fetch a world, print its model as text or JSON, draw an SVG map).
//! * [`text`]: text from peers made safe for a terminal (every text output goes through it).
//! * [`args`]: value parsers that refuse NaN, infinities and out-of-range numbers on the command line.
//!
//! The binary (`src/main.rs`, `src/cli/`) is a thin clap layer over these; its exit codes are documented in the
//! README.
#![warn(missing_docs)]

pub mod args;
pub mod bot;
pub mod bzflag;
pub mod cache;
pub mod http;
pub mod monitor;
pub mod netwatch;
pub mod observer;
pub mod query;
pub mod reactor;
pub mod record;
pub mod text;
pub mod web;
pub mod wire;
pub mod world_cmd;
