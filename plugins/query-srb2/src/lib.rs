//! bzhead query plugin for Sonic Robo Blast 2 (2.2.x) servers, protocol `srb2`.
//!
//! The packet formats are in [`msg`], the state machine in [`engine`]; both are plain safe Rust. No SRB2 server could
//! be run: the layouts are read from the STJr/SRB2 sources of every 2.2 release and tested with packets built at the
//! source's struct offsets.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod engine;
pub mod msg;
#[cfg(test)]
mod tests;

query_abi::declare_query_plugin! {
    name: "srb2",
    version: env!("CARGO_PKG_VERSION"),
    engine: engine::Srb2Engine,
    protocols: [query_abi::ProtocolInfo::server("srb2", 5029, "Sonic Robo Blast 2 2.2.x (PT_ASKINFO)")],
}
