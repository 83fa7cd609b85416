//! bzhead query plugin for Teeworlds and DDNet servers.
//!
//! Protocols: `teeworlds` (0.6 family: DDNet extended info with the 24-bit token and paged players, vanilla `inf3`,
//! the 64-player legacy form) and `teeworlds7` (Teeworlds 0.7 with its token handshake). The state machines are in
//! [`engine`], the message formats in [`msg`]; both are plain safe Rust, tested against real captures.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod engine;
pub mod msg;
#[cfg(test)]
mod tests;

query_abi::declare_query_plugin! {
    name: "teeworlds",
    version: env!("CARGO_PKG_VERSION"),
    engine: engine::TeeworldsEngine,
    protocols: [
        query_abi::ProtocolInfo::server("teeworlds", 8303, "Teeworlds 0.6 / DDNet (extended, vanilla, 64-player info)"),
        query_abi::ProtocolInfo::server("teeworlds7", 8303, "Teeworlds 0.7 (token handshake)"),
    ],
}
