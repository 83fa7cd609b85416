//! The `quake3` query plugin as a file bzhead loads (`libbzhead_quake3.so`): the one unmangled entry symbol, over the
//! table that `query_quake3` declares. bzhead links `query_quake3` in as a built-in protocol; this file is for
//! `--plugin-dir` and the plugin directories (a file overrides the built-in for its protocols).
// No `unsafe` of its own: the `#[unsafe(no_mangle)]` of the entry symbol is query_abi::export_entry!'s.
#![forbid(unsafe_code)]

query_abi::export_entry!(query_quake3);
