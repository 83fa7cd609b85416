//! The monitor as a master: the lists other masters serve, served back in each game's own master protocol.
//!
//! * [`bzfls`]: the BZFlag list server (`/db/`: `ADD` with the connect-back check, `REMOVE`, `LIST`).
//! * [`ddnet`]: DDNet's HTTP master (`/ddnet/15/register` with the UDP challenge, `/ddnet/15/servers.json`).
//! * [`registry`]: the merged list with provenance: the upstream masters the monitor reads (its `[[master]]`
//!   sources), mirrored, and the servers registered directly.
//!
//! Each is sans-IO (fields and Unix seconds in, answers out); the command (`src/cli/monitor.rs`) routes the HTTP
//! requests to them, runs the BZFlag connect-back checks on the reactor's worker and sends the DDNet challenges.

pub mod bzfls;
pub mod ddnet;
pub mod registry;

/// Most bytes of a request body on the masters' routes (`/db/`, `/ddnet/15/register`): a bzfs `ADD` is well under
/// 1 KiB; a DDNet register carries the server info with its client list (about 10 KiB for 64 clients).
pub const MAX_BODY: usize = 32 * 1024;

/// The HTTP routes that take a body (see [`crate::http::Limits::body_routes`]).
pub const BODY_ROUTES: &[&str] = &["/db", "/ddnet/15/register"];
