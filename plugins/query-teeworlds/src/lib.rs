//! bzhead query plugin for Teeworlds and DDNet servers.
//!
//! Protocols: `teeworlds` (0.6 family: DDNet extended info with the 24-bit token and paged players, vanilla `inf3`,
//! the 64-player legacy form), `teeworlds7` (Teeworlds 0.7 with its token handshake), and the UDP masters'
//! lists `teeworlds-master` (0.6) and `teeworlds7-master` (0.7) ([`master`]). The state machines are in
//! [`engine`], the message formats in [`msg`] with their variable-length integers in [`varint`]; all plain safe
//! Rust, tested against real captures.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod engine;
pub mod master;
pub mod msg;
#[cfg(test)]
mod tests;
pub mod varint;

query_abi::declare_query_plugin! {
    name: "teeworlds",
    version: env!("CARGO_PKG_VERSION"),
    engine: engine::TeeworldsEngine,
    protocols: [
        query_abi::ProtocolInfo::server("teeworlds", 8303, "Teeworlds 0.6 / DDNet (extended, vanilla, 64-player info)"),
        query_abi::ProtocolInfo::server("teeworlds7", 8303, "Teeworlds 0.7 (token handshake)"),
        query_abi::ProtocolInfo::master("teeworlds-master", 8300, "Teeworlds 0.6 UDP master (req2 / lis2, cou2 / siz2)"),
        query_abi::ProtocolInfo::master("teeworlds7-master", 8283, "Teeworlds 0.7 UDP master (token, then req2 / lis2)"),
    ],
}
