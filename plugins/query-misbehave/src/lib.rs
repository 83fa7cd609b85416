//! A query plugin that misbehaves on purpose, for the host's robustness tests. Not for real use (`publish = false`).
//!
//! Protocols (the target address is only used as the destination of sends):
//!
//! | protocol | behaviour | the host should |
//! |---|---|---|
//! | `echo` | sends `ping`; the first datagram becomes the server name, then done OK | work normally (control case) |
//! | `panic-on-create` | panics in `create` | get `PANICKED` and no instance |
//! | `panic-on-datagram` | sends `ping`, panics on the first datagram | get `PANICKED`, destroy, fail the query |
//! | `panic-on-timeout` | deadline = now, panics in `on_timeout` | get `PANICKED` |
//! | `panic-on-deadline` | panics in `next_deadline` | read deadline 0, then `PANICKED` from `on_timeout` |
//! | `panic-on-drop` | done OK at once; its destructor panics | survive `destroy` |
//! | `garbage` | sends `garbage`, then calls every host callback with invalid arguments (null pointers with lengths, huge lengths, invalid UTF-8, unknown value kinds and address families, a short player struct), then `report_done` twice | reject each without reading through it, fail the query |
//! | `never-done` | no send, no deadline, never done | end it with its own per-query timeout |
//! | `busy-deadline` | deadline always "now", never done | bound the calls, end it with its timeout |
//! | `send-flood` | 10 000 datagrams from `create`, then done OK | cap or rate-limit, not queue without bound |
//! | `report-flood` | 100 000 players with 4 KiB names and 100 000 rules, then done OK | cap what it keeps |
//!
//! Broken *tables* (wrong ABI version, short table, null function, non-UTF-8 name, null table, no entry symbol) are
//! the sibling crates `query-misbehave-*`; see `plugins/README.md`.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod engine;

query_abi::export_query_plugin! {
    name: "misbehave",
    version: env!("CARGO_PKG_VERSION"),
    engine: engine::Misbehave,
    protocols: [
        query_abi::ProtocolInfo::server("echo", 1, "well-behaved control case"),
        query_abi::ProtocolInfo::server("panic-on-create", 1, "panics in create"),
        query_abi::ProtocolInfo::server("panic-on-datagram", 1, "panics on the first datagram"),
        query_abi::ProtocolInfo::server("panic-on-timeout", 1, "panics in on_timeout"),
        query_abi::ProtocolInfo::server("panic-on-deadline", 1, "panics in next_deadline"),
        query_abi::ProtocolInfo::server("panic-on-drop", 1, "panics in destroy"),
        query_abi::ProtocolInfo::server("garbage", 1, "reports invalid data through every callback"),
        query_abi::ProtocolInfo::server("never-done", 1, "never finishes, no deadline"),
        query_abi::ProtocolInfo::server("busy-deadline", 1, "always due, never finishes"),
        query_abi::ProtocolInfo::server("send-flood", 1, "sends 10 000 datagrams"),
        query_abi::ProtocolInfo::server("report-flood", 1, "reports 100 000 players and rules"),
    ],
}
