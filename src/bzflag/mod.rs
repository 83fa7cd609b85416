//! The sans-IO BZFlag 2.4 (`BZFS0221`) engine.
//!
//! # Contract
//!
//! Nothing in this module touches a socket, a file or the clock. Inputs are bytes received on the TCP stream,
//! datagrams received from the server's UDP port, and `now: Instant` supplied by the caller; outputs are events,
//! bytes to send (on TCP or UDP) and the next deadline. The same engine therefore runs live on the
//! [`crate::reactor`] and offline on a recording ([`crate::record`]), and every test can drive it in virtual time.
//!
//! `now` must never go backwards between calls on one engine.
//!
//! # Layout
//!
//! * [`consts`]: codes, teams, limits and the other enumerations of the protocol.
//! * [`msg`]: every message as a typed value with `parse` and `emit`, and the TCP/UDP framing.
//! * [`vars`]: the server variable store (`MsgSetVar`) with lazily evaluated expressions.
//! * [`flight`]: the flag flight arc.
//! * [`world`]: the world database carried by `MsgGetWorld`.
//! * [`scene`]: one follower of a game's scene (tanks reckoned, shots and guided missiles flown) for every reader
//!   of a game: the bots, the web view, replays.
pub mod consts;
pub mod event;
pub mod flight;
pub mod game;
pub mod msg;
pub mod netstats;
pub mod play;
pub mod scene;
pub mod server_info;
pub mod session;
pub mod vars;
pub mod world;
