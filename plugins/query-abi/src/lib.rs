//! The C ABI between bzhead's server-query host and its protocol plugins.
//!
//! A query plugin is a `cdylib` that exports one symbol, [`ENTRY_SYMBOL`] (`bzhead_query_plugin_entry`), returning a
//! pointer to a static [`PluginApi`] table. The host (bzhead's query scheduler) loads it with `libloading`, checks
//! [`PluginApi::abi_version`] and [`PluginApi::struct_size`] before touching anything else, and then creates one
//! plugin *instance* per query. Everything that crosses the boundary is `repr(C)`: fixed-width integers, borrowed
//! `(ptr, len)` views ([`Str`], [`Bytes`]), addresses without std types ([`Addr`]) and function pointers.
//!
//! # The contract
//!
//! * **Plugins are pure state machines.** They never own a socket, a clock or a thread. Time comes in as `now_ms`,
//!   monotonic milliseconds since an epoch the host chose; datagrams come in through
//!   [`PluginApi::on_datagram`]; the plugin asks the host to send through [`HostApi::send_to`] and reports results
//!   through the other [`HostApi`] callbacks. Randomness (tokens, challenges) comes from [`QueryOptions::seed`]
//!   and [`QueryOptions::random`], which the host fills from the operating system's random source per query.
//! * **Thread rule.** Every function of both tables is called on the host's reactor thread, one call at a time.
//!   Instances are never shared between threads. A host callback must not call back into the plugin (no
//!   re-entrancy): in particular, the host must not destroy an instance from inside one of its callbacks; it notes
//!   the outcome and destroys the instance after the plugin call returned.
//! * **Ownership.** Nothing is freed across the boundary. Data passed to a call ([`Str`], [`Bytes`], `*const Addr`,
//!   `*const AbiPlayer`...) is *borrowed for the duration of that call only*; the receiver copies what it keeps. An
//!   instance created by [`PluginApi::create`] is owned by the host and released only by the same plugin's
//!   [`PluginApi::destroy`]. Static plugin data ([`PluginApi`], its names, its [`ProtocolInfo`] array) lives as long
//!   as the library stays loaded; the host never unloads a library while it holds anything from it.
//! * **Untrusted both ways.** The host validates everything a plugin reports (null pointers, lengths, UTF-8,
//!   counts) before copying it. The plugin side validates every argument the host passes ([`export`] does it).
//! * **Panics never cross the boundary.** A panic unwinding out of an `extern "C"` function aborts the process, and
//!   the host cannot catch it. [`export_query_plugin!`] wraps every exported function in a null check and
//!   `std::panic::catch_unwind`; a panic becomes [`Status::PANICKED`], the instance is poisoned, and the host drops
//!   that query. Plugins built with `panic = "abort"` cannot do this; they say so by leaving
//!   [`FLAG_PANIC_UNWIND`] out of [`PluginApi::flags`].
//! * **Versioning.** Each table starts with `abi_version: u32` (or `struct_size` for argument structs) then
//!   `struct_size: u32`. Fields are only ever appended; a reader accepts `struct_size >= size_of::<its struct>()`.
//!   Any other change (the layout of [`Addr`], [`AbiValue`], [`ProtocolInfo`]...) bumps [`ABI_VERSION`].
//!
//! # Writing a plugin
//!
//! Plugin authors write no `unsafe`. They implement [`QueryEngine`] (a sans-IO state machine that gets a
//! [`Sink`] to send datagrams and report results) and call [`export_query_plugin!`] once in their `lib.rs`:
//!
//! ```ignore
//! query_abi::export_query_plugin! {
//!     name: "example",
//!     version: env!("CARGO_PKG_VERSION"),
//!     engine: engine::ExampleEngine,
//!     protocols: [query_abi::ProtocolInfo::server("example", 27960, "Example game")],
//! }
//! ```
//!
//! The engine is tested as plain Rust with [`collect::Collector`] as its sink.
//!
//! The crate is published as `bzhead-query-abi`; its library is called `query_abi`
//! (`query-abi = { package = "bzhead-query-abi", version = "0.1" }` or `bzhead-query-abi = "0.1"` both give
//! `query_abi::...`). A plugin that a host should also be able to link in, as bzhead links its bundled ones, calls
//! [`declare_query_plugin!`] in its library crate instead and makes its file with a one-line `cdylib` crate,
//! [`export_entry!`]`(its_library)`.
//!
//! # Result shape
//!
//! The host turns the reports of one query into `{"v":1,"protocol","address","ok","ping_ms","name","map",
//! "game_type","players","max_players","bots","password","version","player_list":[{"name","score","team","ping",
//! ...}],"rules":{...},"raw":{...}}`: [`HostApi::report_server`] fills the well-known top-level fields (see
//! [`keys`]), [`HostApi::report_player`] one `player_list` entry (its `extra` fields flattened into the entry),
//! [`HostApi::report_rule`] the `rules` object and [`HostApi::report_raw`] the protocol-specific `raw` object.
//! `ping_ms` is measured by the host. [`HostApi::report_done`] ends the query, with `ok` true for [`Status::OK`].
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

use core::ffi::c_void;
use core::marker::{PhantomData, PhantomPinned};
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

#[cfg(feature = "std")]
#[forbid(unsafe_code)]
mod safe;
#[cfg(feature = "std")]
pub use safe::*;

#[cfg(feature = "std")]
#[forbid(unsafe_code)]
pub mod collect;
#[cfg(feature = "std")]
pub mod export;
#[cfg(feature = "misbehave")]
pub mod misbehave;

/// The ABI version this crate describes. The host refuses a plugin whose [`PluginApi::abi_version`] differs, and the
/// plugin side refuses a [`HostApi`] whose version differs.
pub const ABI_VERSION: u32 = 1;

/// Name of the one symbol a plugin exports, of type [`EntryFn`].
pub const ENTRY_SYMBOL: &str = "bzhead_query_plugin_entry";

/// [`ENTRY_SYMBOL`] with its NUL terminator, as `libloading::Library::get` wants it.
pub const ENTRY_SYMBOL_NUL: &[u8] = b"bzhead_query_plugin_entry\0";

/// Type of the exported entry symbol. It takes no arguments, has no side effects, may be called any number of times
/// and returns a pointer to a static [`PluginApi`] that stays valid until the library is unloaded (or null if the
/// plugin cannot work in this process).
pub type EntryFn = unsafe extern "C" fn() -> *const PluginApi;

/// A fixed-width status code. Not a Rust enum: any `i32` is a valid value, and unknown codes must be handled
/// (treat unknown negative codes as [`Status::ERROR`], unknown positive ones as [`Status::IGNORED`]).
///
/// Zero is success, negative values are failures, positive values are informational.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Status(pub i32);

impl Status {
    /// Success.
    pub const OK: Status = Status(0);
    /// `on_datagram`: the datagram is not for this query (wrong magic, token or challenge, or the query already
    /// finished). Nothing changed; the host counts it as unsolicited and drops it.
    pub const IGNORED: Status = Status(1);
    /// A failure without a more precise code; the accompanying error text or log line says what.
    pub const ERROR: Status = Status(-1);
    /// The plugin panicked. The instance is poisoned: every later call returns `PANICKED` without running plugin
    /// code (except `destroy`, which frees it). The host should destroy it and fail the query.
    pub const PANICKED: Status = Status(-2);
    /// An argument was invalid: a null pointer, a `len` without data, text that is not UTF-8, an unknown address
    /// family, a re-entrant call.
    pub const BAD_INPUT: Status = Status(-3);
    /// `create`: this plugin does not speak the requested protocol.
    pub const UNKNOWN_PROTOCOL: Status = Status(-4);
    /// `report_done`: the server did not answer in time.
    pub const TIMEOUT: Status = Status(-5);
    /// `report_done`: the server answered with something that could not be decoded.
    pub const MALFORMED: Status = Status(-6);
    /// `report_done`/`send_to`: the server or the network refused (ICMP unreachable, an explicit refusal).
    pub const REFUSED: Status = Status(-7);
    /// `create`/`report_done`: the request cannot be served with these options.
    pub const UNSUPPORTED: Status = Status(-8);
    /// `create`: the other side's table has another ABI version or is shorter than this version's.
    pub const ABI_MISMATCH: Status = Status(-9);

    /// True for [`Status::OK`].
    pub const fn is_ok(self) -> bool {
        self.0 == 0
    }

    /// The constant's name ("OK", "TIMEOUT"...), or "UNKNOWN".
    pub const fn name(self) -> &'static str {
        match self.0 {
            0 => "OK",
            1 => "IGNORED",
            -1 => "ERROR",
            -2 => "PANICKED",
            -3 => "BAD_INPUT",
            -4 => "UNKNOWN_PROTOCOL",
            -5 => "TIMEOUT",
            -6 => "MALFORMED",
            -7 => "REFUSED",
            -8 => "UNSUPPORTED",
            -9 => "ABI_MISMATCH",
            _ => "UNKNOWN",
        }
    }
}

impl core::fmt::Debug for Status {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}({})", self.name(), self.0)
    }
}

impl core::fmt::Display for Status {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a borrowed view could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewError {
    /// `ptr` is null but `len` is not zero.
    NullWithLength,
    /// `len` is larger than any allocation can be (over `isize::MAX`).
    TooLong,
    /// The bytes are not UTF-8 (for [`Str`]).
    NotUtf8,
}

impl core::fmt::Display for ViewError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            ViewError::NullWithLength => "null pointer with a non-zero length",
            ViewError::TooLong => "length larger than isize::MAX",
            ViewError::NotUtf8 => "text is not valid UTF-8",
        })
    }
}

/// Borrowed bytes: `len` bytes at `ptr`. Valid only during the call it is passed to (or, inside a static table,
/// while the library is loaded). `ptr` may be null only when `len` is 0. The receiver never frees it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Bytes {
    /// First byte; null allowed when `len == 0`.
    pub ptr: *const u8,
    /// Number of bytes.
    pub len: usize,
}

/// Borrowed UTF-8 text, not NUL-terminated: `len` bytes at `ptr`. Same validity and ownership rules as [`Bytes`].
/// A receiver must check the UTF-8 (plugins may be buggy or hostile).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Str {
    /// First byte; null allowed when `len == 0`.
    pub ptr: *const u8,
    /// Number of bytes.
    pub len: usize,
}

// SAFETY: a `Str` is an address and a length; sharing or sending one does nothing by itself (dereferencing it is
// `unsafe` and governed by the validity rules above). Static tables of `Str` pointing at `'static` string literals
// must be `Sync` to live in a `static`.
unsafe impl Sync for Str {}
// SAFETY: as above.
unsafe impl Send for Str {}

unsafe fn view<'a>(ptr: *const u8, len: usize) -> Result<&'a [u8], ViewError> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(ViewError::NullWithLength);
    }
    if len > isize::MAX as usize {
        return Err(ViewError::TooLong);
    }
    // SAFETY: non-null, length checked against the allocation limit; the caller promises that `ptr..ptr+len` is
    // readable and unchanged for `'a` (the call's duration, per the ABI contract).
    Ok(unsafe { core::slice::from_raw_parts(ptr, len) })
}

impl Bytes {
    /// No bytes (null pointer, zero length).
    pub const EMPTY: Bytes = Bytes { ptr: core::ptr::null(), len: 0 };

    /// A view of `b`. The view does not carry the lifetime: it must not be used after `b` is gone.
    pub const fn new(b: &[u8]) -> Bytes {
        Bytes { ptr: b.as_ptr(), len: b.len() }
    }

    /// The bytes, after checking null pointer and length.
    ///
    /// # Safety
    /// Unless `len` is 0 or `ptr` is null, `ptr` must point to `len` readable bytes that stay unchanged for `'a`.
    pub unsafe fn as_slice<'a>(self) -> Result<&'a [u8], ViewError> {
        // SAFETY: forwarded to the caller.
        unsafe { view(self.ptr, self.len) }
    }
}

impl Str {
    /// Empty text (null pointer, zero length).
    pub const EMPTY: Str = Str { ptr: core::ptr::null(), len: 0 };

    /// A view of a string literal or other `'static` text; usable in `static` tables.
    pub const fn from_static(s: &'static str) -> Str {
        Str { ptr: s.as_ptr(), len: s.len() }
    }

    /// A view of `s`. The view does not carry the lifetime: it must not be used after `s` is gone.
    pub const fn new(s: &str) -> Str {
        Str { ptr: s.as_ptr(), len: s.len() }
    }

    /// The raw bytes, after checking null pointer and length (not UTF-8).
    ///
    /// # Safety
    /// As [`Bytes::as_slice`].
    pub unsafe fn as_bytes<'a>(self) -> Result<&'a [u8], ViewError> {
        // SAFETY: forwarded to the caller.
        unsafe { view(self.ptr, self.len) }
    }

    /// The text, after checking null pointer, length and UTF-8.
    ///
    /// # Safety
    /// As [`Bytes::as_slice`].
    pub unsafe fn to_str<'a>(self) -> Result<&'a str, ViewError> {
        // SAFETY: forwarded to the caller.
        let b = unsafe { view(self.ptr, self.len) }?;
        core::str::from_utf8(b).map_err(|_| ViewError::NotUtf8)
    }
}

/// [`Addr::family`] of an IPv4 address.
pub const FAMILY_IPV4: u8 = 4;
/// [`Addr::family`] of an IPv6 address.
pub const FAMILY_IPV6: u8 = 6;

/// A UDP endpoint without std types: `family` is [`FAMILY_IPV4`] (address in `ip[0..4]`, the rest zero) or
/// [`FAMILY_IPV6`] (all 16 bytes, network order). `port` is a plain number in the machine's byte order, not network
/// order. IPv6 scope and flow information do not cross the boundary.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Addr {
    /// [`FAMILY_IPV4`] or [`FAMILY_IPV6`]; anything else is invalid.
    pub family: u8,
    /// Zero. Makes the padding explicit so no byte of the struct is uninitialised.
    pub reserved: u8,
    /// UDP port, native byte order.
    pub port: u16,
    /// Address bytes in network order.
    pub ip: [u8; 16],
}

impl Addr {
    /// The address of `sa` (scope id and flow info are dropped).
    pub const fn from_socket_addr(sa: SocketAddr) -> Addr {
        match sa {
            SocketAddr::V4(v4) => {
                let o = v4.ip().octets();
                let mut ip = [0u8; 16];
                ip[0] = o[0];
                ip[1] = o[1];
                ip[2] = o[2];
                ip[3] = o[3];
                Addr { family: FAMILY_IPV4, reserved: 0, port: v4.port(), ip }
            }
            SocketAddr::V6(v6) => Addr { family: FAMILY_IPV6, reserved: 0, port: v6.port(), ip: v6.ip().octets() },
        }
    }

    /// The socket address, or `None` for an unknown family.
    pub fn to_socket_addr(&self) -> Option<SocketAddr> {
        match self.family {
            FAMILY_IPV4 => {
                let ip = Ipv4Addr::new(self.ip[0], self.ip[1], self.ip[2], self.ip[3]);
                Some(SocketAddr::new(IpAddr::V4(ip), self.port))
            }
            FAMILY_IPV6 => {
                let b = &self.ip;
                let seg = |i: usize| ((b[2 * i] as u16) << 8) | b[2 * i + 1] as u16;
                let ip = Ipv6Addr::new(seg(0), seg(1), seg(2), seg(3), seg(4), seg(5), seg(6), seg(7));
                Some(SocketAddr::new(IpAddr::V6(ip), self.port))
            }
            _ => None,
        }
    }
}

impl From<SocketAddr> for Addr {
    fn from(sa: SocketAddr) -> Addr {
        Addr::from_socket_addr(sa)
    }
}

/// [`AbiValue::kind`]: no value (unknown). Rendered as JSON `null`.
pub const VALUE_NULL: u32 = 0;
/// [`AbiValue::kind`]: a boolean in `int` (0 false, anything else true).
pub const VALUE_BOOL: u32 = 1;
/// [`AbiValue::kind`]: a signed integer in `int`.
pub const VALUE_INT: u32 = 2;
/// [`AbiValue::kind`]: text in `str`.
pub const VALUE_STR: u32 = 3;

/// A typed value: `kind` says which of `int` and `str` is meaningful; the other is zero/empty. Unknown kinds must be
/// rejected by the receiver. Borrowed like [`Str`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AbiValue {
    /// One of [`VALUE_NULL`], [`VALUE_BOOL`], [`VALUE_INT`], [`VALUE_STR`].
    pub kind: u32,
    /// Zero (explicit padding).
    pub reserved: u32,
    /// The number for [`VALUE_BOOL`] and [`VALUE_INT`].
    pub int: i64,
    /// The text for [`VALUE_STR`].
    pub str: Str,
}

impl AbiValue {
    /// The null value.
    pub const NULL: AbiValue = AbiValue { kind: VALUE_NULL, reserved: 0, int: 0, str: Str::EMPTY };
}

/// One named value: a key/value pair of [`AbiPlayer::extra`]. Borrowed like [`Str`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AbiField {
    /// Field name (UTF-8, short, `snake_case`).
    pub key: Str,
    /// Field value.
    pub value: AbiValue,
}

/// One player of the server's player list, passed to [`HostApi::report_player`]. Borrowed for that call.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AbiPlayer {
    /// `size_of::<AbiPlayer>()` as the plugin knows it; later fields are appended.
    pub struct_size: u32,
    /// Zero (explicit padding).
    pub reserved: u32,
    /// The name as the server sent it (colour codes kept), decoded to UTF-8.
    pub name: Str,
    /// Score (frags, points, or a time for race modes); [`VALUE_NULL`] when the protocol has none.
    pub score: AbiValue,
    /// Team number or name; [`VALUE_NULL`] when the protocol has none.
    pub team: AbiValue,
    /// Ping in milliseconds as the server reports it; [`VALUE_NULL`] when the protocol has none.
    pub ping: AbiValue,
    /// Protocol-specific fields (`clan`, `country`, `name_plain`...), `extra_len` entries; may be null when 0.
    pub extra: *const AbiField,
    /// Number of entries at `extra`.
    pub extra_len: usize,
}

/// One query parameter (`game`, `game_protocol`, `filters`...), a key/value pair of [`QueryOptions::params`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AbiParam {
    /// Parameter name.
    pub key: Str,
    /// Parameter value.
    pub value: Str,
}

/// Log levels of [`HostApi::log`] (and the threshold [`QueryOptions::max_log_level`]).
pub const LOG_ERROR: i32 = 1;
/// Warning.
pub const LOG_WARN: i32 = 2;
/// Information.
pub const LOG_INFO: i32 = 3;
/// Debugging detail (hostile or odd input goes here).
pub const LOG_DEBUG: i32 = 4;
/// Per-packet detail.
pub const LOG_TRACE: i32 = 5;

/// Default [`QueryOptions::timeout_ms`] when the host passes no options.
pub const DEFAULT_TIMEOUT_MS: u32 = 1000;
/// Default [`QueryOptions::retries`] when the host passes no options.
pub const DEFAULT_RETRIES: u32 = 2;

/// How one query should run; passed to [`PluginApi::create`] (borrowed for that call; the plugin copies it).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct QueryOptions {
    /// `size_of::<QueryOptions>()` as the host knows it; later fields are appended.
    pub struct_size: u32,
    /// How long to wait for the answer to one request before re-sending it, in ms (0 = [`DEFAULT_TIMEOUT_MS`]).
    /// Engines wait `timeout_ms`, then twice, then four times as long (capped) on successive attempts, and may
    /// wait longer where a server's own rate limit demands it.
    pub timeout_ms: u32,
    /// How many times an unanswered request may be re-sent.
    pub retries: u32,
    /// Highest level passed to [`HostApi::log`] (e.g. [`LOG_INFO`]); plugins skip formatting above it.
    pub max_log_level: i32,
    /// Random seed for tokens and challenges, filled by the host from a good random source (tests use fixed ones).
    pub seed: u64,
    /// Protocol-specific parameters, `params_len` entries; may be null when 0.
    pub params: *const AbiParam,
    /// Number of entries at `params`.
    pub params_len: usize,
    // ---- appended in bzhead 0.1 (ABI version 1 still): present when `struct_size >= size_of::<QueryOptions>()`
    // of this crate; a reader finds the end of the first layout at [`QUERY_OPTIONS_V1_SIZE`].
    /// [`RANDOM_LEN`] bytes from the operating system's random source, fresh for this query, for tokens and
    /// challenges longer than the 64 bits of `seed` allows; all zero when the host has none to give (a test with a
    /// fixed seed), in which case a plugin derives its bytes from `seed` ([`QueryConfig::random_bytes`] does it).
    pub random: [u8; RANDOM_LEN],
}

/// Length of [`QueryOptions::random`].
pub const RANDOM_LEN: usize = 64;

/// `struct_size` of the first [`QueryOptions`] layout (up to `params_len`): hosts built before
/// [`QueryOptions::random`] was appended pass this; readers accept it and treat the random bytes as absent.
pub const QUERY_OPTIONS_V1_SIZE: usize = core::mem::offset_of!(QueryOptions, random);

/// The host's callbacks, passed to [`PluginApi::create`]. The plugin copies the table (and validates
/// `abi_version`, `struct_size` and every pointer) at `create`; `ctx` must stay valid until every instance created
/// with it is destroyed.
///
/// All callbacks are called on the reactor thread, only during a call into the plugin (never later), never
/// concurrently. Every pointer argument is borrowed for the duration of the callback; the host copies what it keeps
/// and never frees it. The host must treat all arguments as untrusted: reject null pointers with non-zero lengths,
/// lengths over its own caps, non-UTF-8 text and unknown value kinds, and must not unwind out of a callback (wrap
/// each in `catch_unwind`). `tag` is the value the host gave to `create`; it identifies the query.
///
/// Return values: [`Status::OK`] when accepted; anything else tells the plugin the host refused (the plugin may
/// stop sending or reporting, and must not retry the same call in a loop).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HostApi {
    /// Must be [`ABI_VERSION`].
    pub abi_version: u32,
    /// `size_of::<HostApi>()` as the host knows it.
    pub struct_size: u32,
    /// Opaque host context passed back to every callback. Owned by the host.
    pub ctx: *mut c_void,
    /// Send `data` as one UDP datagram to `to`. The host may pace or queue it but should send promptly; it decides
    /// the source socket. `to` is borrowed (non-null), `data` borrowed.
    pub send_to: Option<unsafe extern "C" fn(ctx: *mut c_void, tag: u64, to: *const Addr, data: Bytes) -> Status>,
    /// A well-known server field (see [`keys`]): `key` borrowed text, `value` borrowed (non-null).
    pub report_server:
        Option<unsafe extern "C" fn(ctx: *mut c_void, tag: u64, key: Str, value: *const AbiValue) -> Status>,
    /// One server rule (cvar/setting) as text: both borrowed.
    pub report_rule: Option<unsafe extern "C" fn(ctx: *mut c_void, tag: u64, key: Str, value: Str) -> Status>,
    /// One protocol-specific raw field: `key` borrowed, `value` borrowed (non-null).
    pub report_raw:
        Option<unsafe extern "C" fn(ctx: *mut c_void, tag: u64, key: Str, value: *const AbiValue) -> Status>,
    /// One player: `player` borrowed (non-null), including everything it points to.
    pub report_player: Option<unsafe extern "C" fn(ctx: *mut c_void, tag: u64, player: *const AbiPlayer) -> Status>,
    /// One server address from a master server's list: `addr` borrowed (non-null).
    pub report_master_entry: Option<unsafe extern "C" fn(ctx: *mut c_void, tag: u64, addr: *const Addr) -> Status>,
    /// The query is finished: [`Status::OK`] (the reports form the answer) or an error code with `error` text
    /// (borrowed). Called at most once per instance; afterwards the instance ignores datagrams and has no deadline,
    /// and the host should destroy it.
    pub report_done: Option<unsafe extern "C" fn(ctx: *mut c_void, tag: u64, status: Status, error: Str) -> Status>,
    /// A log line at `level` ([`LOG_ERROR`]..[`LOG_TRACE`]): `msg` borrowed.
    pub log: Option<unsafe extern "C" fn(ctx: *mut c_void, tag: u64, level: i32, msg: Str)>,
}

/// An opaque plugin instance (one query). Created by [`PluginApi::create`], owned by the host, released only by the
/// same plugin's [`PluginApi::destroy`]. Never dereferenced by the host.
#[repr(C)]
pub struct Instance {
    _opaque: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

/// [`ProtocolInfo::kind`]: queries one game server.
pub const KIND_SERVER: u16 = 0;
/// [`ProtocolInfo::kind`]: queries a master server for a list of game servers ([`HostApi::report_master_entry`]).
pub const KIND_MASTER: u16 = 1;

/// One protocol a plugin speaks. Static plugin data (valid while the library is loaded). Layout fixed for an ABI
/// version.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ProtocolInfo {
    /// Protocol name as given to `create` and on the command line (`teeworlds`, `quake3`, `dpmaster`...).
    pub name: Str,
    /// One line for `bzhead plugins`.
    pub description: Str,
    /// UDP port used when an address has none.
    pub default_port: u16,
    /// [`KIND_SERVER`] or [`KIND_MASTER`].
    pub kind: u16,
    /// Zero.
    pub reserved: u32,
}

// SAFETY: contains only `Str` views of `'static` text and plain integers; see the `Str` impls.
unsafe impl Sync for ProtocolInfo {}

impl ProtocolInfo {
    /// A game-server protocol.
    pub const fn server(name: &'static str, default_port: u16, description: &'static str) -> ProtocolInfo {
        ProtocolInfo {
            name: Str::from_static(name),
            description: Str::from_static(description),
            default_port,
            kind: KIND_SERVER,
            reserved: 0,
        }
    }

    /// A master-server protocol.
    pub const fn master(name: &'static str, default_port: u16, description: &'static str) -> ProtocolInfo {
        ProtocolInfo { kind: KIND_MASTER, ..ProtocolInfo::server(name, default_port, description) }
    }
}

/// [`PluginApi::flags`]: the plugin was built with `panic = "unwind"`, so its export wrappers can catch panics. A
/// plugin without it aborts the whole process on a panic; the host may refuse to load it or warn.
pub const FLAG_PANIC_UNWIND: u64 = 1;

/// The plugin's table, returned by the entry symbol. Static data, valid while the library is loaded; the host never
/// writes to it or frees it.
///
/// The host checks, in order: `abi_version == ABI_VERSION`, `struct_size >= size_of::<PluginApi>()`, every function
/// pointer non-null, `name`, `version` and every protocol name valid UTF-8.
#[repr(C)]
#[derive(Debug)]
pub struct PluginApi {
    /// [`ABI_VERSION`] the plugin was built against. Read first.
    pub abi_version: u32,
    /// `size_of::<PluginApi>()` as the plugin knows it.
    pub struct_size: u32,
    /// [`FLAG_PANIC_UNWIND`] and future flags.
    pub flags: u64,
    /// Plugin name (`teeworlds`, `quake3`...).
    pub name: Str,
    /// Plugin version (the crate version).
    pub version: Str,
    /// The protocols, `protocols_len` entries (static).
    pub protocols: *const ProtocolInfo,
    /// Number of entries at `protocols`.
    pub protocols_len: usize,
    /// Create an instance for one query of `protocol` (borrowed text) to `target` (borrowed, non-null) and write it
    /// to `*out` (non-null; set to null on failure). `host` must be non-null and stay valid (with its `ctx`) until
    /// the instance is destroyed; the plugin copies the table. `options` is borrowed and may be null (defaults).
    /// The instance may already call `send_to` (and even `report_done`) from inside `create`. Returns
    /// [`Status::OK`], [`Status::UNKNOWN_PROTOCOL`], [`Status::BAD_INPUT`], [`Status::UNSUPPORTED`],
    /// [`Status::ABI_MISMATCH`] or [`Status::PANICKED`].
    #[allow(clippy::type_complexity)]
    pub create: Option<
        unsafe extern "C" fn(
            host: *const HostApi,
            protocol: Str,
            target: *const Addr,
            tag: u64,
            now_ms: u64,
            options: *const QueryOptions,
            out: *mut *mut Instance,
        ) -> Status,
    >,
    /// Release an instance (null is a no-op). The pointer is invalid afterwards. Must not be called from inside a
    /// host callback of the same instance (the plugin then leaks it rather than free memory in use).
    pub destroy: Option<unsafe extern "C" fn(inst: *mut Instance)>,
    /// A datagram from `from` (borrowed, non-null) for this query, received at `now_ms`; `data` borrowed. Returns
    /// [`Status::OK`] (consumed), [`Status::IGNORED`] (not for this query), [`Status::BAD_INPUT`] or
    /// [`Status::PANICKED`].
    pub on_datagram:
        Option<unsafe extern "C" fn(inst: *mut Instance, now_ms: u64, from: *const Addr, data: Bytes) -> Status>,
    /// Called when `now_ms` reached the instance's deadline (spurious early or late calls are harmless). Returns
    /// [`Status::OK`], [`Status::BAD_INPUT`] or [`Status::PANICKED`].
    pub on_timeout: Option<unsafe extern "C" fn(inst: *mut Instance, now_ms: u64) -> Status>,
    /// The next time (in the host's `now_ms` clock) the instance wants `on_timeout`, or `u64::MAX` for none. Ask
    /// again after every call into the instance. A poisoned instance answers 0 so that the host calls it and sees
    /// [`Status::PANICKED`].
    pub next_deadline_ms: Option<unsafe extern "C" fn(inst: *const Instance) -> u64>,
}

// SAFETY: a `PluginApi` is immutable static data: integers, `Str` views of `'static` text, a pointer to a static
// `ProtocolInfo` array, and function pointers. Sharing it between threads does nothing by itself.
unsafe impl Sync for PluginApi {}

/// Well-known keys of [`HostApi::report_server`]: the top-level fields of the result.
pub mod keys {
    /// Server name as sent (colour codes kept), text.
    pub const NAME: &str = "name";
    /// Current map, text.
    pub const MAP: &str = "map";
    /// Game type or mode, text.
    pub const GAME_TYPE: &str = "game_type";
    /// Connected clients (players and spectators, bots included where the protocol counts them), int.
    pub const PLAYERS: &str = "players";
    /// Client slots, int.
    pub const MAX_PLAYERS: &str = "max_players";
    /// Bots among `players`, int (only when the protocol tells).
    pub const BOTS: &str = "bots";
    /// Password required, bool.
    pub const PASSWORD: &str = "password";
    /// Server or game version, text.
    pub const VERSION: &str = "version";
    /// Bool: false when the reply did not carry the whole player list (rate-limited short reply, a lost packet of a
    /// multi-packet list): `player_list` is then unknown or partial. Default true.
    pub const PLAYER_LIST_COMPLETE: &str = "player_list_complete";
}

/// Every well-known server key, in result order.
pub const SERVER_KEYS: &[&str] = &[
    keys::NAME,
    keys::MAP,
    keys::GAME_TYPE,
    keys::PLAYERS,
    keys::MAX_PLAYERS,
    keys::BOTS,
    keys::PASSWORD,
    keys::VERSION,
    keys::PLAYER_LIST_COMPLETE,
];

#[cfg(test)]
mod layout_tests {
    use super::*;
    use core::mem::{align_of, offset_of, size_of};

    #[test]
    fn layouts_are_what_the_docs_say() {
        assert_eq!(size_of::<Status>(), 4);
        assert_eq!(size_of::<Addr>(), 20);
        assert_eq!(align_of::<Addr>(), 2);
        assert_eq!(offset_of!(Addr, port), 2);
        assert_eq!(offset_of!(Addr, ip), 4);
        assert_eq!(offset_of!(PluginApi, abi_version), 0);
        assert_eq!(offset_of!(PluginApi, struct_size), 4);
        assert_eq!(offset_of!(HostApi, abi_version), 0);
        assert_eq!(offset_of!(HostApi, struct_size), 4);
        assert_eq!(offset_of!(AbiValue, int), 8);
        assert_eq!(size_of::<AbiValue>(), 8 + 8 + 2 * size_of::<usize>());
    }

    #[test]
    fn addr_round_trips() {
        for s in ["1.2.3.4:8303", "[2001:db8::1]:27950", "0.0.0.0:0", "[::ffff:1.2.3.4]:1"] {
            let sa: SocketAddr = s.parse().unwrap();
            assert_eq!(Addr::from(sa).to_socket_addr(), Some(sa));
        }
        let bad = Addr { family: 9, reserved: 0, port: 1, ip: [0; 16] };
        assert_eq!(bad.to_socket_addr(), None);
    }

    #[test]
    fn views_check_null_and_length() {
        // SAFETY: null/zero and null/non-zero never dereference.
        unsafe {
            assert_eq!(Str::EMPTY.to_str(), Ok(""));
            assert_eq!(Str { ptr: core::ptr::null(), len: 3 }.to_str(), Err(ViewError::NullWithLength));
            let b = [0xffu8, 0xfe];
            assert_eq!(Str { ptr: b.as_ptr(), len: 2 }.to_str(), Err(ViewError::NotUtf8));
            assert_eq!(Bytes { ptr: b.as_ptr(), len: usize::MAX }.as_slice(), Err(ViewError::TooLong));
            assert_eq!(Bytes::new(&b).as_slice(), Ok(&b[..]));
        }
    }
}
