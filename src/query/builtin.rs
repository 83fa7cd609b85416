//! The bundled query protocols, linked into the library (and so into the `bzhead` binary and anything else built
//! on the library), so that an installed bzhead speaks them with no plugin file anywhere.
//!
//! Each bundled protocol crate declares its table with `query_abi::declare_query_plugin!`, which emits the static
//! `PluginApi` and a mangled entry function but no unmangled symbol, so the four link side by side. The host opens a
//! built-in through that entry function and runs exactly the checks it runs on a loaded file
//! ([`super::loader::load_builtin`]): ABI version first, table size, every function pointer, every name. The
//! `cdylib` builds of the same tables (`plugins/cdylib-*`, `libbzhead_<name>.so`) are the same code as files; a file
//! found in a plugin directory overrides the built-in for the protocols it declares, and `bzhead plugins` says so.

use query_abi::EntryFn;

/// One bundled plugin.
#[derive(Debug, Clone, Copy)]
pub struct Builtin {
    /// The crate it comes from (shown by `bzhead plugins`).
    pub crate_name: &'static str,
    /// Its entry function: the same contract as a plugin file's `bzhead_query_plugin_entry`.
    pub entry: EntryFn,
}

/// Every bundled plugin, in the order they are offered (after every plugin file).
pub const BUILTINS: &[Builtin] = &[
    Builtin { crate_name: "bzhead-query-teeworlds", entry: query_teeworlds::query_plugin_entry },
    Builtin { crate_name: "bzhead-query-quake3", entry: query_quake3::query_plugin_entry },
    Builtin { crate_name: "bzhead-query-savage2", entry: query_savage2::query_plugin_entry },
    Builtin { crate_name: "bzhead-query-srb2", entry: query_srb2::query_plugin_entry },
];
