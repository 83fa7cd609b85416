//! A shared library that is not a query plugin: it exports no `bzhead_query_plugin_entry`. For bzhead's host tests.
#![forbid(unsafe_code)]

/// Something harmless, so the library is not empty.
pub fn not_a_plugin() -> u32 {
    42
}
