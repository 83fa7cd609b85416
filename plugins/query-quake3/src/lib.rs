//! bzhead query plugin for the Quake III family: ioquake3 / OpenArena (`quake3`), Warsow (`warsow`) and dpmaster
//! server lists (`dpmaster`).
//!
//! The state machines are in [`engine`], the message formats in [`msg`]; both are plain safe Rust, tested against
//! real OpenArena and dpmaster captures.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod engine;
pub mod msg;
#[cfg(test)]
mod tests;

query_abi::declare_query_plugin! {
    name: "quake3",
    version: env!("CARGO_PKG_VERSION"),
    engine: engine::Quake3Engine,
    protocols: [
        query_abi::ProtocolInfo::server("quake3", 27960, "Quake III / ioquake3 / OpenArena (getinfo + getstatus)"),
        query_abi::ProtocolInfo::server("warsow", 44400, "Warsow 2.1 (getinfo + getstatus, or the short info query)"),
        query_abi::ProtocolInfo::master("dpmaster", 27950, "dpmaster-compatible master server (getservers / getserversExt)"),
    ],
}
