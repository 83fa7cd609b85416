//! Deliberately broken plugins, for the host's robustness tests only (feature `misbehave`; used by the
//! `query-misbehave*` crates). Nothing here belongs in a real plugin.
//!
//! * [`send_garbage_reports`] calls every host callback with arguments a conforming host must reject *without
//!   reading through them*: null pointers with non-zero lengths, lengths far beyond any sane cap, text that is not
//!   UTF-8, unknown value kinds and address families, short structs, a second `report_done`. It never passes a
//!   dangling non-null pointer with a plausible length (no host could detect that).
//! * [`crate::export_broken_plugin!`] exports a table the loader must refuse: wrong ABI version, short table, a null
//!   function pointer, a name that is not UTF-8, or a null table.

use crate::safe::{CreateError, Datagram, QueryConfig, QueryEngine, Sink};
use crate::{
    AbiField, AbiPlayer, AbiValue, Addr, Bytes, PluginApi, ProtocolInfo, Status, Str, ABI_VERSION, LOG_ERROR, VALUE_STR,
};
use std::mem::size_of;
use std::net::SocketAddr;
use std::ptr;

static NOT_UTF8: [u8; 4] = [b'b', 0xff, 0xfe, b'd'];
static FIELD: AbiField =
    AbiField { key: Str::from_static("k"), value: AbiValue { kind: VALUE_STR, reserved: 0, int: 0, str: Str::EMPTY } };

const fn not_utf8() -> Str {
    Str { ptr: NOT_UTF8.as_ptr(), len: NOT_UTF8.len() }
}
const fn null_with_len() -> Str {
    Str { ptr: ptr::null(), len: 5 }
}
const fn huge() -> Str {
    // A real pointer with a length no host may trust: it must be refused by its length before any read.
    Str { ptr: NOT_UTF8.as_ptr(), len: usize::MAX / 2 }
}

/// Calls the host's callbacks of `sink` (when it is the export layer's sink) with one kind of garbage each, then
/// `report_done` twice. Returns how many calls were made (0 when `sink` is not backed by a host, e.g. in tests).
pub fn send_garbage_reports(sink: &dyn Sink, target: SocketAddr) -> usize {
    let Some((api, tag)) = sink.raw_host() else { return 0 };
    let ctx = api.ctx;
    let ok_key = Str::from_static("name");
    let ok_val = AbiValue { kind: VALUE_STR, reserved: 0, int: 0, str: Str::from_static("x") };
    let bad_str_val = AbiValue { str: not_utf8(), ..ok_val };
    let null_str_val = AbiValue { str: null_with_len(), ..ok_val };
    let huge_str_val = AbiValue { str: huge(), ..ok_val };
    let bad_kind = AbiValue { kind: 77, ..ok_val };
    let good_player = AbiPlayer {
        struct_size: size_of::<AbiPlayer>() as u32,
        reserved: 0,
        name: Str::from_static("p"),
        score: AbiValue::NULL,
        team: AbiValue::NULL,
        ping: AbiValue::NULL,
        extra: ptr::null(),
        extra_len: 0,
    };
    let short_player = AbiPlayer { struct_size: 4, ..good_player };
    let bad_name_player = AbiPlayer { name: not_utf8(), ..good_player };
    let null_extra = AbiPlayer { extra_len: 3, ..good_player };
    let huge_extra = AbiPlayer { extra: &FIELD, extra_len: usize::MAX / 64, ..good_player };
    let bad_family = Addr { family: 9, ..Addr::from(target) };
    let good_addr = Addr::from(target);
    let data = b"garbage";
    let mut n = 0;
    // SAFETY: this *deliberately* breaks the ABI contract, but only in ways a conforming host detects before
    // dereferencing anything (null pointers, lengths beyond any cap, invalid UTF-8, unknown kinds/families, a short
    // `struct_size`); every non-null pointer points to live data of at least the size the host is allowed to read
    // after its checks. The callback pointers were validated non-null when the table was copied.
    unsafe {
        if let Some(f) = api.report_server {
            for (k, v) in [
                (not_utf8(), &ok_val as *const AbiValue),
                (ok_key, &bad_str_val),
                (ok_key, &null_str_val),
                (ok_key, &huge_str_val),
                (null_with_len(), &ok_val),
                (huge(), &ok_val),
                (ok_key, ptr::null()),
                (ok_key, &bad_kind),
                (Str::from_static("no-such-well-known-key"), &ok_val),
            ] {
                f(ctx, tag, k, v);
                n += 1;
            }
        }
        if let Some(f) = api.report_rule {
            for (k, v) in [(huge(), ok_key), (ok_key, huge()), (not_utf8(), ok_key), (ok_key, null_with_len())] {
                f(ctx, tag, k, v);
                n += 1;
            }
        }
        if let Some(f) = api.report_raw {
            for v in [ptr::null(), &bad_kind as *const AbiValue, &bad_str_val] {
                f(ctx, tag, ok_key, v);
                n += 1;
            }
        }
        if let Some(f) = api.report_player {
            for p in [ptr::null(), &short_player as *const AbiPlayer, &bad_name_player, &null_extra, &huge_extra] {
                f(ctx, tag, p);
                n += 1;
            }
        }
        if let Some(f) = api.report_master_entry {
            for a in [ptr::null(), &bad_family as *const Addr] {
                f(ctx, tag, a);
                n += 1;
            }
        }
        if let Some(f) = api.send_to {
            for (a, d) in [
                (ptr::null(), Bytes::new(data)),
                (&bad_family as *const Addr, Bytes::new(data)),
                (&good_addr, Bytes { ptr: ptr::null(), len: 10 }),
                (&good_addr, Bytes { ptr: data.as_ptr(), len: usize::MAX / 2 }),
            ] {
                f(ctx, tag, a, d);
                n += 1;
            }
        }
        if let Some(f) = api.log {
            f(ctx, tag, 99, not_utf8());
            f(ctx, tag, -5, null_with_len());
            f(ctx, tag, LOG_ERROR, huge());
            n += 3;
        }
        if let Some(f) = api.report_done {
            f(ctx, tag, Status(12345), not_utf8());
            f(ctx, tag, Status::OK, Str::from_static("second done"));
            n += 2;
        }
    }
    n
}

/// An engine that does nothing (the broken tables never get as far as using it).
#[derive(Debug)]
pub struct Inert;

impl QueryEngine for Inert {
    fn new(_: &str, _: SocketAddr, _: &QueryConfig, _: u64, _: &mut dyn Sink) -> Result<Self, CreateError> {
        Ok(Inert)
    }
    fn on_datagram(&mut self, _: u64, _: SocketAddr, _: &[u8], _: &mut dyn Sink) -> Datagram {
        Datagram::Ignored
    }
    fn on_timeout(&mut self, _: u64, _: &mut dyn Sink) {}
    fn next_deadline(&self) -> Option<u64> {
        None
    }
}

/// The ways [`broken_table`] can break a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Broken {
    /// `abi_version` is `ABI_VERSION + 1`.
    WrongAbiVersion,
    /// `struct_size` is smaller than the table (an "old" plugin missing the last fields).
    ShortTable,
    /// `on_timeout` is null.
    NullFunction,
    /// `name` is not UTF-8.
    BadName,
}

/// A table for [`Inert`], broken as `how`.
pub const fn broken_table(how: Broken, protocols: &'static [ProtocolInfo]) -> PluginApi {
    let mut t = PluginApi::for_engine::<Inert>(
        Str::from_static("misbehave-broken"),
        Str::from_static("0.0.0"),
        protocols,
        crate::FLAG_PANIC_UNWIND,
    );
    match how {
        Broken::WrongAbiVersion => t.abi_version = ABI_VERSION + 1,
        Broken::ShortTable => t.struct_size = (size_of::<PluginApi>() - 2 * size_of::<usize>()) as u32,
        Broken::NullFunction => t.on_timeout = None,
        Broken::BadName => t.name = not_utf8(),
    }
    t
}

/// Exports a broken plugin: `export_broken_plugin!(WrongAbiVersion)` (any [`Broken`] variant), or
/// `export_broken_plugin!(NullTable)` for an entry symbol that returns null.
#[macro_export]
macro_rules! export_broken_plugin {
    (NullTable) => {
        /// Entry point that returns no table.
        #[unsafe(no_mangle)]
        pub extern "C" fn bzhead_query_plugin_entry() -> *const $crate::PluginApi {
            ::core::ptr::null()
        }
    };
    ($how:ident) => {
        /// A deliberately broken table.
        #[doc(hidden)]
        pub static BZHEAD_QUERY_PLUGIN_API: $crate::PluginApi = $crate::misbehave::broken_table(
            $crate::misbehave::Broken::$how,
            &[$crate::ProtocolInfo::server("broken", 1, "deliberately broken table")],
        );

        /// Entry point returning the broken table.
        #[unsafe(no_mangle)]
        pub extern "C" fn bzhead_query_plugin_entry() -> *const $crate::PluginApi {
            &BZHEAD_QUERY_PLUGIN_API
        }
    };
}
