//! The export layer: the `extern "C"` functions behind [`crate::export_query_plugin!`], generic over a
//! [`QueryEngine`].
//!
//! Every function here:
//! * runs its whole body inside `std::panic::catch_unwind`, so no panic ever unwinds into the host;
//! * null-checks and validates every pointer, length, UTF-8 text, address family and table version it gets;
//! * refuses re-entrant calls on an instance that is already inside a call (a host callback calling back in), instead
//!   of creating a second `&mut` to it;
//! * poisons an instance whose engine panicked: later calls return [`Status::PANICKED`] (or deadline 0) without
//!   running engine code, and `destroy` still frees it.
//!
//! Plugin authors do not call these directly; the macro puts them in the plugin's [`PluginApi`].

use crate::safe::{Level, Player, QueryConfig, QueryEngine, Sink, Value};
use crate::{
    AbiField, AbiParam, AbiPlayer, AbiValue, Addr, Bytes, Datagram, HostApi, Instance, PluginApi, ProtocolInfo,
    QueryOptions, Status, Str, ABI_VERSION, DEFAULT_TIMEOUT_MS, LOG_ERROR, VALUE_BOOL, VALUE_INT, VALUE_NULL,
    VALUE_STR,
};
use std::any::Any;
use std::cell::{Cell, UnsafeCell};
use std::mem::size_of;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

/// Most [`QueryOptions::params`] entries a plugin accepts.
pub const MAX_PARAMS: usize = 256;

/// Exports a [`QueryEngine`] as a query plugin: [`crate::declare_query_plugin!`] (the static [`PluginApi`] table) plus
/// [`crate::export_entry!`] (the `bzhead_query_plugin_entry` symbol). Call it exactly once, at the crate root of a
/// `cdylib` crate.
///
/// ```ignore
/// query_abi::export_query_plugin! {
///     name: "teeworlds",
///     version: env!("CARGO_PKG_VERSION"),
///     engine: engine::TeeworldsEngine,
///     protocols: [
///         query_abi::ProtocolInfo::server("teeworlds", 8303, "Teeworlds 0.6 / DDNet"),
///         query_abi::ProtocolInfo::server("teeworlds7", 8303, "Teeworlds 0.7"),
///     ],
/// }
/// ```
///
/// The table records whether the plugin was built with `panic = "unwind"` ([`crate::FLAG_PANIC_UNWIND`]).
///
/// The entry symbol has one fixed, unmangled name, so a crate that calls this macro cannot be linked into one
/// binary next to another such crate. A plugin that should also be linkable into a host (as bzhead links its
/// bundled plugins) is split in two: a library crate that calls [`crate::declare_query_plugin!`] (the table and a mangled
/// entry function, nothing unmangled) and a `cdylib` crate of one line, `query_abi::export_entry!(engine_crate)`.
#[macro_export]
macro_rules! export_query_plugin {
    (
        name: $name:expr,
        version: $version:expr,
        engine: $engine:ty,
        protocols: [ $( $proto:expr ),* $(,)? ] $(,)?
    ) => {
        $crate::declare_query_plugin! {
            name: $name,
            version: $version,
            engine: $engine,
            protocols: [ $( $proto ),* ],
        }
        $crate::export_entry!(self);
    };
}

/// Declares a plugin's table without exporting any unmangled symbol: the static `BZHEAD_QUERY_PLUGIN_API` (a
/// [`PluginApi`]) and `pub extern "C" fn query_plugin_entry()`, an [`crate::EntryFn`] returning it. Any number of
/// crates that call this can be linked into one binary; a host opens each through its entry function exactly as it
/// opens a loaded plugin's `bzhead_query_plugin_entry`. Same arguments as [`crate::export_query_plugin!`].
#[macro_export]
macro_rules! declare_query_plugin {
    (
        name: $name:expr,
        version: $version:expr,
        engine: $engine:ty,
        protocols: [ $( $proto:expr ),* $(,)? ] $(,)?
    ) => {
        /// This plugin's function table (see `query_abi::PluginApi`); also usable in-process.
        pub static BZHEAD_QUERY_PLUGIN_API: $crate::PluginApi = $crate::PluginApi::for_engine::<$engine>(
            $crate::Str::from_static($name),
            $crate::Str::from_static($version),
            &[ $( $proto ),* ],
            if cfg!(panic = "unwind") { $crate::FLAG_PANIC_UNWIND } else { 0 },
        );

        /// This plugin's entry function (a `query_abi::EntryFn`, mangled: safe to link next to other plugins):
        /// a pointer to its static table.
        pub extern "C" fn query_plugin_entry() -> *const $crate::PluginApi {
            &BZHEAD_QUERY_PLUGIN_API
        }
    };
}

/// Exports `bzhead_query_plugin_entry`, the one unmangled symbol of a plugin `cdylib`, returning the table of the
/// module or crate `$m` (which called [`crate::declare_query_plugin!`]): `query_abi::export_entry!(query_teeworlds);` is
/// the whole source of the Teeworlds plugin's `cdylib` crate.
#[macro_export]
macro_rules! export_entry {
    ($($m:ident)::+) => {
        /// The plugin's entry point: a pointer to its static `query_abi::PluginApi` table.
        #[unsafe(no_mangle)]
        pub extern "C" fn bzhead_query_plugin_entry() -> *const $crate::PluginApi {
            $($m::)+query_plugin_entry()
        }
    };
}

impl PluginApi {
    /// The table for engine `E` (used by [`crate::export_query_plugin!`]).
    pub const fn for_engine<E: QueryEngine>(
        name: Str,
        version: Str,
        protocols: &'static [ProtocolInfo],
        flags: u64,
    ) -> PluginApi {
        PluginApi {
            abi_version: ABI_VERSION,
            struct_size: size_of::<PluginApi>() as u32,
            flags,
            name,
            version,
            protocols: protocols.as_ptr(),
            protocols_len: protocols.len(),
            create: Some(create::<E>),
            destroy: Some(destroy::<E>),
            on_datagram: Some(on_datagram::<E>),
            on_timeout: Some(on_timeout::<E>),
            next_deadline_ms: Some(next_deadline_ms::<E>),
        }
    }
}

/// Longest text the host accepts in one report (`docs/plugins.md`, "What the host checks").
pub const MAX_TEXT: usize = 64 * 1024;

/// `s` as the host takes it. Text from a server can be longer than [`MAX_TEXT`] (a 65 KB datagram decoded as Latin-1
/// or lossy UTF-8 grows up to threefold), and the host would fail the query as the plugin's fault: it is cut at the
/// last character boundary within the limit.
fn host_text(s: &str) -> Str {
    let mut end = s.len().min(MAX_TEXT);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Str::new(s.get(..end).unwrap_or(""))
}

/// The [`Sink`] over the host's callbacks, one per instance.
pub(crate) struct HostSink {
    api: HostApi,
    tag: u64,
    max_level: i32,
    done: bool,
    /// Scratch for [`AbiPlayer::extra`], reused so that reporting a player does not allocate.
    fields: Vec<AbiField>,
}

fn abi_value(v: Value<'_>) -> AbiValue {
    match v {
        Value::Null => AbiValue { kind: VALUE_NULL, ..AbiValue::NULL },
        Value::Bool(b) => AbiValue { kind: VALUE_BOOL, int: i64::from(b), ..AbiValue::NULL },
        Value::Int(i) => AbiValue { kind: VALUE_INT, int: i, ..AbiValue::NULL },
        Value::Str(s) => AbiValue { kind: VALUE_STR, str: host_text(s), ..AbiValue::NULL },
    }
}

fn opt_int(v: Option<i64>) -> AbiValue {
    abi_value(v.map_or(Value::Null, Value::Int))
}

// Every callback pointer below was checked non-null when the table was copied (`read_host`), `ctx` stays valid until
// the instance is destroyed (contract of `PluginApi::create`), and every pointer we pass borrows a local or the
// engine's data that outlives the call. The `let Some(..) else` arms are unreachable but cost nothing.
impl Sink for HostSink {
    fn send(&mut self, to: SocketAddr, data: &[u8]) -> Status {
        let Some(f) = self.api.send_to else { return Status::ERROR };
        if self.done {
            return Status::ERROR;
        }
        let addr = Addr::from(to);
        // SAFETY: see the comment above this impl.
        unsafe { f(self.api.ctx, self.tag, &addr, Bytes::new(data)) }
    }

    fn server(&mut self, key: &str, value: Value<'_>) {
        let Some(f) = self.api.report_server else { return };
        if self.done {
            return;
        }
        let v = abi_value(value);
        // SAFETY: see the comment above this impl.
        unsafe { f(self.api.ctx, self.tag, host_text(key), &v) };
    }

    fn rule(&mut self, key: &str, value: &str) {
        let Some(f) = self.api.report_rule else { return };
        if self.done {
            return;
        }
        // SAFETY: see the comment above this impl.
        unsafe { f(self.api.ctx, self.tag, host_text(key), host_text(value)) };
    }

    fn raw(&mut self, key: &str, value: Value<'_>) {
        let Some(f) = self.api.report_raw else { return };
        if self.done {
            return;
        }
        let v = abi_value(value);
        // SAFETY: see the comment above this impl.
        unsafe { f(self.api.ctx, self.tag, host_text(key), &v) };
    }

    fn player(&mut self, p: &Player<'_>) {
        let Some(f) = self.api.report_player else { return };
        if self.done {
            return;
        }
        let field = |(k, v): &(&str, Value<'_>)| AbiField { key: host_text(k), value: abi_value(*v) };
        // A few fields (the usual case) go in an array on the stack, more in the reused vector.
        let mut few = [AbiField { key: Str::EMPTY, value: AbiValue::NULL }; 4];
        let fields: &[AbiField] = if p.extra.len() <= few.len() {
            for (slot, f) in few.iter_mut().zip(p.extra) {
                *slot = field(f);
            }
            few.get(..p.extra.len()).unwrap_or(&[])
        } else {
            self.fields.clear();
            self.fields.extend(p.extra.iter().map(field));
            &self.fields
        };
        let abi = AbiPlayer {
            struct_size: size_of::<AbiPlayer>() as u32,
            reserved: 0,
            name: host_text(p.name),
            score: opt_int(p.score),
            team: abi_value(p.team),
            ping: opt_int(p.ping),
            extra: if fields.is_empty() { ptr::null() } else { fields.as_ptr() },
            extra_len: fields.len(),
        };
        // SAFETY: see the comment above this impl; `fields` is not touched until the call returns.
        unsafe { f(self.api.ctx, self.tag, &abi) };
        // The scratch entries point into `p`; drop them now so nothing stale survives the call.
        self.fields.clear();
    }

    fn master_entry(&mut self, addr: SocketAddr) {
        let Some(f) = self.api.report_master_entry else { return };
        if self.done {
            return;
        }
        let a = Addr::from(addr);
        // SAFETY: see the comment above this impl.
        unsafe { f(self.api.ctx, self.tag, &a) };
    }

    fn done(&mut self, status: Status, error: &str) {
        let Some(f) = self.api.report_done else { return };
        if self.done {
            return;
        }
        self.done = true;
        // SAFETY: see the comment above this impl.
        unsafe { f(self.api.ctx, self.tag, status, host_text(error)) };
    }

    fn log(&mut self, level: Level, msg: &str) {
        let Some(f) = self.api.log else { return };
        if level.as_i32() > self.max_level {
            return;
        }
        // SAFETY: see the comment above this impl.
        unsafe { f(self.api.ctx, self.tag, level.as_i32(), host_text(msg)) };
    }

    fn log_enabled(&self, level: Level) -> bool {
        level.as_i32() <= self.max_level
    }

    fn raw_host(&self) -> Option<(HostApi, u64)> {
        Some((self.api, self.tag))
    }
}

enum State {
    Running,
    Done,
    Poisoned,
}

struct Inner<E> {
    engine: E,
    state: State,
    sink: HostSink,
}

/// What an [`Instance`] pointer really points to.
struct Slot<E> {
    /// Set while a call is inside the instance; a second (re-entrant) call is refused.
    busy: Cell<bool>,
    inner: UnsafeCell<Inner<E>>,
}

fn panic_message(payload: Box<dyn Any + Send>) -> String {
    let msg = if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    };
    // Dropping a payload can itself panic; never let that escape, and leak a payload of that payload.
    if let Err(inner) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(inner);
    }
    msg
}

/// Runs `f`, turning a panic into `on_panic`.
fn guard<R>(on_panic: R, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let _ = panic_message(p);
            on_panic
        }
    }
}

impl<E: QueryEngine> Inner<E> {
    /// Runs engine code, poisoning the instance if it panics.
    fn run<R>(&mut self, f: impl FnOnce(&mut E, &mut HostSink) -> R) -> Option<R> {
        let Inner { engine, state, sink } = self;
        match catch_unwind(AssertUnwindSafe(|| f(engine, sink))) {
            Ok(r) => {
                if sink.done {
                    *state = State::Done;
                }
                Some(r)
            }
            Err(p) => {
                *state = State::Poisoned;
                let msg = panic_message(p);
                sink.log(Level::Error, &format!("plugin panicked: {msg}"));
                None
            }
        }
    }
}

/// Enters the instance behind `inst` for one call, or returns `on_bad` for null or re-entrant calls.
///
/// # Safety
/// `inst` must be null or a pointer returned by `create::<E>` of this plugin and not yet destroyed.
unsafe fn enter<E: QueryEngine, R>(inst: *const Instance, on_bad: R, f: impl FnOnce(&mut Inner<E>) -> R) -> R {
    if inst.is_null() {
        return on_bad;
    }
    // SAFETY: per this function's contract `inst` came from `Box::into_raw(Box<Slot<E>>)` and is still alive.
    let slot = unsafe { &*inst.cast::<Slot<E>>() };
    if slot.busy.replace(true) {
        return on_bad;
    }
    struct Release<'a>(&'a Cell<bool>);
    impl Drop for Release<'_> {
        fn drop(&mut self) {
            self.0.set(false);
        }
    }
    let _release = Release(&slot.busy);
    // SAFETY: `busy` was false and all calls happen on one thread (the ABI's thread rule), so no other reference to
    // `inner` exists until `_release` clears the flag.
    let inner = unsafe { &mut *slot.inner.get() };
    f(inner)
}

/// Copies and validates the host table.
///
/// # Safety
/// `host` must be null or point to a readable table of at least its own `struct_size` bytes.
unsafe fn read_host(host: *const HostApi) -> Result<HostApi, Status> {
    if host.is_null() || !host.is_aligned() {
        return Err(Status::BAD_INPUT);
    }
    // SAFETY: non-null and aligned; every ABI version of the table starts with `abi_version: u32, struct_size: u32`.
    let [version, size] = unsafe { host.cast::<[u32; 2]>().read() };
    if version != ABI_VERSION || (size as usize) < size_of::<HostApi>() {
        return Err(Status::ABI_MISMATCH);
    }
    // SAFETY: the host says the table is at least as large as ours.
    let api = unsafe { host.read() };
    let complete = api.send_to.is_some()
        && api.report_server.is_some()
        && api.report_rule.is_some()
        && api.report_raw.is_some()
        && api.report_player.is_some()
        && api.report_master_entry.is_some()
        && api.report_done.is_some()
        && api.log.is_some();
    if complete {
        Ok(api)
    } else {
        Err(Status::BAD_INPUT)
    }
}

/// Copies and validates the query options.
///
/// # Safety
/// `options` must be null or point to a readable `QueryOptions` of at least its own `struct_size` bytes whose
/// `params` (if `params_len > 0`) point to `params_len` readable entries, each with readable views.
unsafe fn read_options(options: *const QueryOptions) -> Result<QueryConfig, &'static str> {
    if options.is_null() {
        return Ok(QueryConfig::default());
    }
    if !options.is_aligned() {
        return Err("misaligned options");
    }
    // SAFETY: non-null, aligned; `struct_size` is the first field of every version.
    let size = unsafe { options.cast::<u32>().read() };
    if (size as usize) < size_of::<QueryOptions>() {
        return Err("options struct_size too small");
    }
    // SAFETY: at least as large as ours.
    let o = unsafe { options.read() };
    if o.params_len > MAX_PARAMS {
        return Err("too many params");
    }
    let params: &[AbiParam] = if o.params_len == 0 {
        &[]
    } else if o.params.is_null() || !o.params.is_aligned() {
        return Err("params pointer null or misaligned");
    } else {
        // SAFETY: non-null, aligned, count bounded; readable per this function's contract.
        unsafe { std::slice::from_raw_parts(o.params, o.params_len) }
    };
    let mut out = Vec::with_capacity(params.len());
    for p in params {
        // SAFETY: views borrowed for this call per the contract; checked for null/length/UTF-8.
        let (k, v) = unsafe { (p.key.to_str(), p.value.to_str()) };
        match (k, v) {
            (Ok(k), Ok(v)) => out.push((k.to_owned(), v.to_owned())),
            _ => return Err("param is not valid UTF-8 text"),
        }
    }
    Ok(QueryConfig {
        timeout_ms: if o.timeout_ms == 0 { DEFAULT_TIMEOUT_MS } else { o.timeout_ms },
        retries: o.retries,
        seed: o.seed,
        max_log_level: o.max_log_level,
        params: out,
    })
}

/// [`PluginApi::create`] for engine `E`.
///
/// # Safety
/// The arguments must follow [`PluginApi::create`]'s contract; every pointer is still checked for null.
pub unsafe extern "C" fn create<E: QueryEngine>(
    host: *const HostApi,
    protocol: Str,
    target: *const Addr,
    tag: u64,
    now_ms: u64,
    options: *const QueryOptions,
    out: *mut *mut Instance,
) -> Status {
    guard(Status::PANICKED, || {
        if out.is_null() || !out.is_aligned() {
            return Status::BAD_INPUT;
        }
        // SAFETY: non-null, aligned, writable per the contract.
        unsafe { out.write(ptr::null_mut()) };
        // SAFETY: contract of `create`.
        let api = match unsafe { read_host(host) } {
            Ok(api) => api,
            Err(s) => return s,
        };
        let mut sink = HostSink { api, tag, max_level: LOG_ERROR, done: false, fields: Vec::new() };
        // SAFETY: contract of `create`.
        let config = match unsafe { read_options(options) } {
            Ok(c) => c,
            Err(e) => {
                sink.log(Level::Error, &format!("create: {e}"));
                return Status::BAD_INPUT;
            }
        };
        sink.max_level = config.max_log_level;
        // SAFETY: borrowed view, checked.
        let protocol = match unsafe { protocol.to_str() } {
            Ok(p) => p,
            Err(e) => {
                sink.log(Level::Error, &format!("create: protocol name: {e}"));
                return Status::BAD_INPUT;
            }
        };
        let target = if target.is_null() || !target.is_aligned() {
            None
        } else {
            // SAFETY: non-null, aligned, borrowed for this call.
            unsafe { target.read() }.to_socket_addr()
        };
        let Some(target) = target else {
            sink.log(Level::Error, "create: target address is null or of an unknown family");
            return Status::BAD_INPUT;
        };
        let created = catch_unwind(AssertUnwindSafe(|| E::new(protocol, target, &config, now_ms, &mut sink)));
        match created {
            Ok(Ok(engine)) => {
                let state = if sink.done { State::Done } else { State::Running };
                let slot =
                    Box::new(Slot { busy: Cell::new(false), inner: UnsafeCell::new(Inner { engine, state, sink }) });
                // SAFETY: `out` checked above.
                unsafe { out.write(Box::into_raw(slot).cast::<Instance>()) };
                Status::OK
            }
            Ok(Err(e)) => {
                sink.log(Level::Warn, &format!("create {protocol}: {e}"));
                e.status()
            }
            Err(p) => {
                let msg = panic_message(p);
                sink.log(Level::Error, &format!("plugin panicked in create: {msg}"));
                Status::PANICKED
            }
        }
    })
}

/// [`PluginApi::destroy`] for engine `E`.
///
/// # Safety
/// `inst` must be null or come from `create::<E>` of this plugin and not be destroyed yet.
pub unsafe extern "C" fn destroy<E: QueryEngine>(inst: *mut Instance) {
    guard((), || {
        if inst.is_null() {
            return;
        }
        // SAFETY: contract of `destroy`.
        let slot = unsafe { &*inst.cast::<Slot<E>>() };
        if slot.busy.get() {
            // Re-entrant destroy from inside a host callback: leak rather than free memory that is in use.
            return;
        }
        // SAFETY: created by `Box::into_raw` in `create::<E>`; the host destroys it once.
        drop(unsafe { Box::from_raw(inst.cast::<Slot<E>>()) });
    })
}

/// [`PluginApi::on_datagram`] for engine `E`.
///
/// # Safety
/// The arguments must follow [`PluginApi::on_datagram`]'s contract; every pointer is still checked for null.
pub unsafe extern "C" fn on_datagram<E: QueryEngine>(
    inst: *mut Instance,
    now_ms: u64,
    from: *const Addr,
    data: Bytes,
) -> Status {
    guard(Status::PANICKED, || {
        // SAFETY: contract of `on_datagram`.
        unsafe {
            enter::<E, _>(inst, Status::BAD_INPUT, |inner| {
                match inner.state {
                    State::Poisoned => return Status::PANICKED,
                    State::Done => return Status::IGNORED,
                    State::Running => {}
                }
                let from = if from.is_null() || !from.is_aligned() {
                    None
                } else {
                    // SAFETY: non-null, aligned, borrowed for this call.
                    from.read().to_socket_addr()
                };
                let Some(from) = from else { return Status::BAD_INPUT };
                // SAFETY: borrowed for this call, checked for null and length.
                let Ok(data) = data.as_slice() else { return Status::BAD_INPUT };
                match inner.run(|e, s| e.on_datagram(now_ms, from, data, s)) {
                    Some(Datagram::Accepted) => Status::OK,
                    Some(Datagram::Ignored) => Status::IGNORED,
                    None => Status::PANICKED,
                }
            })
        }
    })
}

/// [`PluginApi::on_timeout`] for engine `E`.
///
/// # Safety
/// `inst` must be null or come from `create::<E>` of this plugin and not be destroyed yet.
pub unsafe extern "C" fn on_timeout<E: QueryEngine>(inst: *mut Instance, now_ms: u64) -> Status {
    guard(Status::PANICKED, || {
        // SAFETY: contract of `on_timeout`.
        unsafe {
            enter::<E, _>(inst, Status::BAD_INPUT, |inner| match inner.state {
                State::Poisoned => Status::PANICKED,
                State::Done => Status::OK,
                State::Running => match inner.run(|e, s| e.on_timeout(now_ms, s)) {
                    Some(()) => Status::OK,
                    None => Status::PANICKED,
                },
            })
        }
    })
}

/// [`PluginApi::next_deadline_ms`] for engine `E`.
///
/// # Safety
/// `inst` must be null or come from `create::<E>` of this plugin and not be destroyed yet.
pub unsafe extern "C" fn next_deadline_ms<E: QueryEngine>(inst: *const Instance) -> u64 {
    guard(0, || {
        // SAFETY: contract of `next_deadline_ms`.
        unsafe {
            enter::<E, _>(inst, u64::MAX, |inner| match inner.state {
                State::Poisoned => 0,
                State::Done => u64::MAX,
                State::Running => match inner.run(|e, _| e.next_deadline()) {
                    Some(d) => d.unwrap_or(u64::MAX),
                    None => 0,
                },
            })
        }
    })
}
