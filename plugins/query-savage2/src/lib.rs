//! bzhead query plugin for Savage 2: A Tortured Soul (K2 engine) servers, protocol `savage2`.
//!
//! The message format is in [`msg`], the state machine in [`engine`]; both are plain safe Rust, tested against the
//! two real replies that exist.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod engine;
pub mod msg;

query_abi::declare_query_plugin! {
    name: "savage2",
    version: env!("CARGO_PKG_VERSION"),
    engine: engine::Savage2Engine,
    protocols: [query_abi::ProtocolInfo::server("savage2", 11235, "Savage 2 (K2 engine info request)")],
}
