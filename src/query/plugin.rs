//! Calling a loaded plugin: instances, and the host callbacks that copy and validate what plugins report.
//!
//! This file and [`super::loader`] hold the only `unsafe` code of the root crate. The rules it follows (see
//! `docs/plugins.md` and the `query_abi` crate docs):
//!
//! * **One call at a time, one thread.** Every call into a plugin goes through `&mut` [`PluginInstance`] (or
//!   [`PluginInstance::create`]), and the callbacks only run during such a call. [`PluginHost`] and
//!   [`PluginInstance`] are `!Send` (they hold `Rc`s), so they stay on the thread that made them.
//! * **Attribution.** Before each call the host notes which instance (tag) it is calling; a callback carrying
//!   another tag is refused. Everything a call reports is appended to the caller's `Vec<Report>`.
//! * **Untrusted input.** Each callback checks, in order: lengths against caps *before* reading, null pointers,
//!   UTF-8, value kinds (and which kind each well-known key takes), address families, `AbiPlayer::struct_size`, and
//!   a per-call budget (datagrams, reports, bytes). A failed check appends [`Report::Rejected`] and returns
//!   `BAD_INPUT` to the plugin without reading further; the scheduler then fails that query. Each callback runs in
//!   `catch_unwind`, so a bug on the host side cannot unwind into the plugin.
//! * **Ownership.** Nothing is freed across the boundary: the host copies what it keeps; an instance is released
//!   only by the plugin's `destroy`, exactly once, when the [`PluginInstance`] is dropped. The [`HostApi`] table and
//!   its `ctx` live in an `Rc` that every instance holds, so they outlive every instance created with them.

use std::cell::RefCell;
use std::ffi::c_void;
use std::fmt;
use std::mem::size_of;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::rc::Rc;

use query_abi::{
    keys, AbiParam, AbiPlayer, AbiValue, Addr, Bytes, HostApi, Instance, QueryOptions, Status, Str, ABI_VERSION,
    LOG_ERROR, LOG_TRACE, VALUE_BOOL, VALUE_INT, VALUE_NULL, VALUE_STR,
};

use super::loader::PluginLibrary;

/// Longest text (name, key, value, log line, error) accepted from a plugin, in bytes.
pub const MAX_TEXT: usize = 64 * 1024;
/// Longest datagram a plugin may ask to send (the UDP payload limit).
pub const MAX_DATAGRAM: usize = 65_507;
/// Most `extra` fields of one player.
pub const MAX_EXTRA: usize = 64;
/// Most datagrams one call may ask to send.
pub const MAX_SENDS_PER_CALL: usize = 64;
/// Most reports (of any kind, sends and logs included) one call may make.
pub const MAX_REPORTS_PER_CALL: usize = 262_144;
/// Most bytes of text and data one call may report.
pub const MAX_BYTES_PER_CALL: usize = 8 * 1024 * 1024;

/// A value a plugin reported, copied and validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Val {
    /// Unknown.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// Text.
    Str(String),
}

impl Val {
    /// As JSON.
    pub fn into_json(self) -> serde_json::Value {
        match self {
            Val::Null => serde_json::Value::Null,
            Val::Bool(b) => serde_json::Value::Bool(b),
            Val::Int(i) => serde_json::Value::from(i),
            Val::Str(s) => serde_json::Value::String(s),
        }
    }

    fn size(&self) -> usize {
        match self {
            Val::Str(s) => s.len(),
            _ => 8,
        }
    }
}

/// One player a plugin reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlayerReport {
    /// Name as sent.
    pub name: String,
    /// Score.
    pub score: Val,
    /// Team.
    pub team: Val,
    /// Ping (ms) as the server reports it.
    pub ping: Val,
    /// Protocol-specific fields (already as JSON values: they go to the result as they are).
    pub extra: Vec<(String, serde_json::Value)>,
}

/// Something a plugin did during one call, copied out of its borrowed arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// Send a datagram.
    Send {
        /// Destination.
        to: SocketAddr,
        /// Payload.
        data: Vec<u8>,
    },
    /// A well-known server field (the key is one of `query_abi::SERVER_KEYS`; its kind was checked).
    Server {
        /// Key.
        key: &'static str,
        /// Value.
        value: Val,
    },
    /// A rule.
    Rule {
        /// Key.
        key: String,
        /// Value.
        value: String,
    },
    /// A raw protocol field.
    Raw {
        /// Key.
        key: String,
        /// Value.
        value: Val,
    },
    /// A player.
    Player(PlayerReport),
    /// A server address from a master list.
    MasterEntry(SocketAddr),
    /// The query is finished.
    Done {
        /// `OK` or why not.
        status: Status,
        /// Error text.
        error: String,
    },
    /// A log line.
    Log {
        /// `query_abi::LOG_*` level.
        level: i32,
        /// Text.
        msg: String,
    },
    /// The plugin passed invalid data to a callback; the value says what was wrong. The query must be failed.
    Rejected(&'static str),
}

/// Why a call into a plugin failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallError {
    /// The plugin panicked (its wrapper caught it; the instance is poisoned).
    Panicked {
        /// The function that panicked.
        function: &'static str,
    },
    /// `create` does not know the protocol.
    UnknownProtocol,
    /// `create` refused the options.
    Unsupported,
    /// Another failure status from the plugin.
    Status {
        /// The function.
        function: &'static str,
        /// Its status.
        status: Status,
    },
    /// `create` returned OK without an instance.
    NoInstance,
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Panicked { function } => write!(f, "the plugin panicked in {function}"),
            CallError::UnknownProtocol => f.write_str("the plugin does not speak this protocol"),
            CallError::Unsupported => f.write_str("the plugin refused the query parameters"),
            CallError::Status { function, status } => write!(f, "{function} failed with status {status:?}"),
            CallError::NoInstance => f.write_str("create returned OK but no instance"),
        }
    }
}

impl std::error::Error for CallError {}

/// What a plugin made of a datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handled {
    /// Consumed.
    Accepted,
    /// Not for this query.
    Ignored,
}

/// Options of one instance (copied into the plugin at `create`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InstanceOptions<'a> {
    /// Wait for a first answer (ms); 0 = the plugin's default.
    pub timeout_ms: u32,
    /// Re-sends allowed.
    pub retries: u32,
    /// Highest log level wanted (`query_abi::LOG_*`).
    pub max_log_level: i32,
    /// Seed for tokens and challenges.
    pub seed: u64,
    /// Protocol parameters.
    pub params: &'a [(String, String)],
}

#[derive(Default)]
struct CallState {
    /// Tag of the instance being called; callbacks outside a call, or with another tag, are refused.
    current: Option<u64>,
    /// Where this call's reports go (taken from the caller's vector, handed back after the call).
    out: Vec<Report>,
    sends: usize,
    reports: usize,
    bytes: usize,
    done: bool,
    /// Set after the first budget overrun: later reports of the call are dropped without a look.
    flooded: bool,
}

/// The host side of the ABI: its callback table and the context the callbacks see.
struct HostCtx {
    state: RefCell<CallState>,
}

/// The host's callback table and context, shared (through an `Rc`) by every instance created with it.
pub struct PluginHost {
    inner: Rc<HostInner>,
}

struct HostInner {
    ctx: Box<HostCtx>,
    api: HostApi,
}

impl Default for PluginHost {
    fn default() -> Self {
        PluginHost::new()
    }
}

impl fmt::Debug for PluginHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PluginHost")
    }
}

impl PluginHost {
    /// A host table whose callbacks validate and copy everything.
    pub fn new() -> PluginHost {
        let ctx = Box::new(HostCtx { state: RefCell::new(CallState::default()) });
        let api = HostApi {
            abi_version: ABI_VERSION,
            struct_size: size_of::<HostApi>() as u32,
            ctx: (&*ctx as *const HostCtx).cast_mut().cast::<c_void>(),
            send_to: Some(cb_send_to),
            report_server: Some(cb_report_server),
            report_rule: Some(cb_report_rule),
            report_raw: Some(cb_report_raw),
            report_player: Some(cb_report_player),
            report_master_entry: Some(cb_report_master_entry),
            report_done: Some(cb_report_done),
            log: Some(cb_log),
        };
        PluginHost { inner: Rc::new(HostInner { ctx, api }) }
    }
}

impl HostInner {
    /// Runs one call into the plugin with `tag` as the current instance, collecting its reports into `out`.
    fn call<R>(&self, tag: u64, out: &mut Vec<Report>, f: impl FnOnce() -> R) -> R {
        {
            let mut st = self.ctx.state.borrow_mut();
            *st = CallState { current: Some(tag), out: std::mem::take(out), ..CallState::default() };
        }
        let r = f();
        let mut st = self.ctx.state.borrow_mut();
        st.current = None;
        *out = std::mem::take(&mut st.out);
        r
    }
}

/// One plugin instance (one query). Destroyed through the plugin when dropped.
pub struct PluginInstance {
    lib: Rc<PluginLibrary>,
    host: Rc<HostInner>,
    inst: NonNull<Instance>,
    tag: u64,
}

impl fmt::Debug for PluginInstance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginInstance").field("plugin", &self.lib.name()).field("tag", &self.tag).finish()
    }
}

impl PluginInstance {
    /// Creates an instance of `lib` for one query of `protocol` to `target`. The plugin may already send and even
    /// finish from inside `create`: its reports are appended to `out` whether or not an instance results.
    #[allow(clippy::too_many_arguments)]
    pub fn create(
        host: &PluginHost,
        lib: &Rc<PluginLibrary>,
        protocol: &str,
        target: SocketAddr,
        tag: u64,
        now_ms: u64,
        options: &InstanceOptions<'_>,
        out: &mut Vec<Report>,
    ) -> Result<PluginInstance, CallError> {
        let Some(create) = lib.api().create else { return Err(CallError::NoInstance) };
        let params: Vec<AbiParam> =
            options.params.iter().map(|(k, v)| AbiParam { key: Str::new(k), value: Str::new(v) }).collect();
        let opts = QueryOptions {
            struct_size: size_of::<QueryOptions>() as u32,
            timeout_ms: options.timeout_ms,
            retries: options.retries,
            max_log_level: options.max_log_level,
            seed: options.seed,
            params: if params.is_empty() { ptr::null() } else { params.as_ptr() },
            params_len: params.len(),
        };
        let addr = Addr::from(target);
        let mut inst: *mut Instance = ptr::null_mut();
        let hinner = &host.inner;
        let status = hinner.call(tag, out, || {
            // SAFETY: `create` was checked non-null at load and the library is loaded (`lib`). Every pointer
            // argument borrows a local (`opts`, `params`, `addr`, `inst`) or the host table, which lives in
            // `host.inner` (an `Rc` each instance keeps) and so outlives every instance created with it. The
            // `Str` views borrow `protocol` and `options`, alive for the call.
            unsafe { create(&hinner.api, Str::new(protocol), &addr, tag, now_ms, &opts, &mut inst) }
        });
        drop(params);
        match status {
            Status::OK => match NonNull::new(inst) {
                Some(inst) => Ok(PluginInstance { lib: lib.clone(), host: hinner.clone(), inst, tag }),
                None => Err(CallError::NoInstance),
            },
            s => {
                // A failed create must not have produced an instance; if a broken plugin returned one anyway, it is
                // leaked rather than freed through a path the plugin says failed.
                Err(match s {
                    Status::PANICKED => CallError::Panicked { function: "create" },
                    Status::UNKNOWN_PROTOCOL => CallError::UnknownProtocol,
                    Status::UNSUPPORTED => CallError::Unsupported,
                    status => CallError::Status { function: "create", status },
                })
            }
        }
    }

    /// The plugin this instance belongs to.
    pub fn plugin(&self) -> &Rc<PluginLibrary> {
        &self.lib
    }

    /// Passes a datagram from `from` to the instance.
    pub fn on_datagram(
        &mut self,
        now_ms: u64,
        from: SocketAddr,
        data: &[u8],
        out: &mut Vec<Report>,
    ) -> Result<Handled, CallError> {
        let Some(f) = self.lib.api().on_datagram else { return Err(CallError::NoInstance) };
        let addr = Addr::from(from);
        let inst = self.inst.as_ptr();
        // SAFETY: `f` checked non-null at load, library alive (`self.lib`); `inst` is live (destroyed only in
        // `drop`); `addr` and `data` are borrowed for the call; `&mut self` means no other call is in progress.
        let status = self.host.call(self.tag, out, || unsafe { f(inst, now_ms, &addr, Bytes::new(data)) });
        match status {
            Status::OK => Ok(Handled::Accepted),
            Status::PANICKED => Err(CallError::Panicked { function: "on_datagram" }),
            s if s.0 > 0 => Ok(Handled::Ignored),
            status => Err(CallError::Status { function: "on_datagram", status }),
        }
    }

    /// Tells the instance its deadline passed.
    pub fn on_timeout(&mut self, now_ms: u64, out: &mut Vec<Report>) -> Result<(), CallError> {
        let Some(f) = self.lib.api().on_timeout else { return Err(CallError::NoInstance) };
        let inst = self.inst.as_ptr();
        // SAFETY: as in `on_datagram`.
        let status = self.host.call(self.tag, out, || unsafe { f(inst, now_ms) });
        match status {
            Status::OK => Ok(()),
            Status::PANICKED => Err(CallError::Panicked { function: "on_timeout" }),
            s if s.0 > 0 => Ok(()),
            status => Err(CallError::Status { function: "on_timeout", status }),
        }
    }

    /// The instance's next deadline (`None`: none). A poisoned instance answers 0, i.e. "now".
    pub fn next_deadline_ms(&mut self, out: &mut Vec<Report>) -> Option<u64> {
        let f = self.lib.api().next_deadline_ms?;
        let inst = self.inst.as_ptr();
        // SAFETY: as in `on_datagram`; the plugin may not report from here, but if it does, it is attributed and
        // validated like any other call.
        let d = self.host.call(self.tag, out, || unsafe { f(inst) });
        (d != u64::MAX).then_some(d)
    }
}

impl Drop for PluginInstance {
    fn drop(&mut self) {
        let Some(f) = self.lib.api().destroy else { return };
        let inst = self.inst.as_ptr();
        let mut discard = Vec::new();
        // SAFETY: `f` checked non-null at load, library alive (`self.lib` is dropped after this); `inst` came from
        // this plugin's `create` and is destroyed exactly once, here, outside any other call into the plugin.
        self.host.call(self.tag, &mut discard, || unsafe { f(inst) });
    }
}

// ------------------------------------------------------------------------------------------------ callbacks

/// Runs a callback body against the host state, refusing calls outside a plugin call, with a foreign tag, or after
/// the call's budget ran out; catches any panic of the host code.
///
/// # Safety
/// `ctx` must be the `ctx` of a [`PluginHost`] table (the plugin passes back what it was given; a plugin that
/// passes something else breaks the ABI in a way no host can detect).
unsafe fn with_state(
    ctx: *mut c_void,
    tag: u64,
    f: impl FnOnce(&mut CallState) -> Result<Report, &'static str>,
) -> Status {
    let r = catch_unwind(AssertUnwindSafe(|| {
        if ctx.is_null() {
            return Status::BAD_INPUT;
        }
        // SAFETY: per this function's contract `ctx` points to the `HostCtx` boxed in a live `HostInner` (every
        // instance keeps an `Rc` to it).
        let host = unsafe { &*ctx.cast::<HostCtx>() };
        let Ok(mut st) = host.state.try_borrow_mut() else { return Status::ERROR };
        if st.current != Some(tag) {
            if st.current.is_some() && !st.flooded {
                st.out.push(Report::Rejected("callback with another instance's tag"));
            }
            return Status::BAD_INPUT;
        }
        if st.flooded {
            return Status::BAD_INPUT;
        }
        st.reports += 1;
        if st.reports > MAX_REPORTS_PER_CALL {
            st.flooded = true;
            st.out.push(Report::Rejected("more reports in one call than the host accepts"));
            return Status::BAD_INPUT;
        }
        match f(&mut st) {
            Ok(report) => {
                st.bytes += report_size(&report);
                if st.bytes > MAX_BYTES_PER_CALL {
                    st.flooded = true;
                    st.out.push(Report::Rejected("more data in one call than the host accepts"));
                    return Status::BAD_INPUT;
                }
                st.out.push(report);
                Status::OK
            }
            Err(why) => {
                st.out.push(Report::Rejected(why));
                Status::BAD_INPUT
            }
        }
    }));
    r.unwrap_or(Status::ERROR)
}

fn json_size(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::String(s) => s.len(),
        _ => 8,
    }
}

fn report_size(r: &Report) -> usize {
    match r {
        Report::Send { data, .. } => data.len(),
        Report::Server { value, .. } => value.size(),
        Report::Rule { key, value } => key.len() + value.len(),
        Report::Raw { key, value } => key.len() + value.size(),
        Report::Player(p) => {
            p.name.len()
                + p.score.size()
                + p.team.size()
                + p.ping.size()
                + p.extra.iter().map(|(k, v)| k.len() + json_size(v)).sum::<usize>()
        }
        Report::MasterEntry(_) => 20,
        Report::Done { error, .. } => error.len(),
        Report::Log { msg, .. } => msg.len(),
        Report::Rejected(_) => 0,
    }
}

/// Copies borrowed text: length capped before any read, then null and UTF-8 checks.
///
/// # Safety
/// `s` must be null/0 or readable for `s.len` bytes during the call (ABI contract); the cap is checked first, so a
/// huge length is refused without touching memory.
unsafe fn text(s: Str) -> Result<String, &'static str> {
    if s.len > MAX_TEXT {
        return Err("text longer than the host accepts");
    }
    // SAFETY: forwarded to the caller; the view checks null with a length.
    match unsafe { s.to_str() } {
        Ok(t) => Ok(t.to_owned()),
        Err(query_abi::ViewError::NotUtf8) => Err("text is not UTF-8"),
        Err(_) => Err("text pointer is null with a length"),
    }
}

/// Copies a borrowed value.
///
/// # Safety
/// `v` must be null or point to a readable `AbiValue` whose `str` follows [`text`]'s contract.
unsafe fn value(v: *const AbiValue) -> Result<Val, &'static str> {
    if v.is_null() {
        return Err("value pointer is null");
    }
    if !v.is_aligned() {
        return Err("value pointer is misaligned");
    }
    // SAFETY: non-null, aligned, borrowed for the call.
    let v = unsafe { v.read() };
    value_of(&v)
}

fn value_of(v: &AbiValue) -> Result<Val, &'static str> {
    match v.kind {
        VALUE_NULL => Ok(Val::Null),
        VALUE_BOOL => Ok(Val::Bool(v.int != 0)),
        VALUE_INT => Ok(Val::Int(v.int)),
        // SAFETY: the view is borrowed for the call (ABI contract); `text` caps the length before reading.
        VALUE_STR => unsafe { text(v.str) }.map(Val::Str),
        _ => Err("unknown value kind"),
    }
}

/// Copies a borrowed address.
///
/// # Safety
/// `a` must be null or point to a readable `Addr`.
unsafe fn address(a: *const Addr) -> Result<SocketAddr, &'static str> {
    if a.is_null() {
        return Err("address pointer is null");
    }
    if !a.is_aligned() {
        return Err("address pointer is misaligned");
    }
    // SAFETY: non-null, aligned, borrowed for the call.
    unsafe { a.read() }.to_socket_addr().ok_or("unknown address family")
}

/// The well-known key `k` as a static string, with the value kinds it takes.
fn server_key(k: &str) -> Option<(&'static str, &'static [u32])> {
    const TEXT: &[u32] = &[VALUE_STR, VALUE_NULL];
    const INT: &[u32] = &[VALUE_INT, VALUE_NULL];
    const BOOL: &[u32] = &[VALUE_BOOL, VALUE_NULL];
    Some(match k {
        keys::NAME => (keys::NAME, TEXT),
        keys::MAP => (keys::MAP, TEXT),
        keys::GAME_TYPE => (keys::GAME_TYPE, TEXT),
        keys::PLAYERS => (keys::PLAYERS, INT),
        keys::MAX_PLAYERS => (keys::MAX_PLAYERS, INT),
        keys::BOTS => (keys::BOTS, INT),
        keys::PASSWORD => (keys::PASSWORD, BOOL),
        keys::VERSION => (keys::VERSION, TEXT),
        keys::PLAYER_LIST_COMPLETE => (keys::PLAYER_LIST_COMPLETE, BOOL),
        _ => return None,
    })
}

unsafe extern "C" fn cb_send_to(ctx: *mut c_void, tag: u64, to: *const Addr, data: Bytes) -> Status {
    // SAFETY: `ctx` is what the host gave the plugin; see `with_state`.
    unsafe {
        with_state(ctx, tag, |st| {
            let to = address(to)?;
            if data.len > MAX_DATAGRAM {
                return Err("datagram longer than UDP allows");
            }
            let data = data.as_slice().map_err(|_| "datagram pointer is null with a length")?;
            st.sends += 1;
            if st.sends > MAX_SENDS_PER_CALL {
                st.flooded = true;
                return Err("more datagrams in one call than the host accepts");
            }
            Ok(Report::Send { to, data: data.to_vec() })
        })
    }
}

unsafe extern "C" fn cb_report_server(ctx: *mut c_void, tag: u64, key: Str, v: *const AbiValue) -> Status {
    // SAFETY: see `with_state`; `text`/`value` check lengths and pointers before reading.
    unsafe {
        with_state(ctx, tag, |_| {
            let k = text(key)?;
            let Some((key, kinds)) = server_key(&k) else { return Err("unknown server key") };
            if v.is_null() {
                return Err("value pointer is null");
            }
            if !v.is_aligned() {
                return Err("value pointer is misaligned");
            }
            let raw = v.read();
            if !kinds.contains(&raw.kind) {
                return Err(if raw.kind > VALUE_STR { "unknown value kind" } else { "wrong value kind for the key" });
            }
            Ok(Report::Server { key, value: value_of(&raw)? })
        })
    }
}

unsafe extern "C" fn cb_report_rule(ctx: *mut c_void, tag: u64, key: Str, v: Str) -> Status {
    // SAFETY: see `with_state`.
    unsafe { with_state(ctx, tag, |_| Ok(Report::Rule { key: text(key)?, value: text(v)? })) }
}

unsafe extern "C" fn cb_report_raw(ctx: *mut c_void, tag: u64, key: Str, v: *const AbiValue) -> Status {
    // SAFETY: see `with_state`.
    unsafe { with_state(ctx, tag, |_| Ok(Report::Raw { key: text(key)?, value: value(v)? })) }
}

unsafe extern "C" fn cb_report_player(ctx: *mut c_void, tag: u64, p: *const AbiPlayer) -> Status {
    // SAFETY: see `with_state`; the struct size is read (4 bytes) before the struct, the extra count is capped
    // before the array is touched.
    unsafe {
        with_state(ctx, tag, |_| {
            if p.is_null() {
                return Err("player pointer is null");
            }
            if !p.is_aligned() {
                return Err("player pointer is misaligned");
            }
            let size = p.cast::<u32>().read();
            if (size as usize) < size_of::<AbiPlayer>() {
                return Err("player struct shorter than this ABI's");
            }
            let p = p.read();
            let name = text(p.name)?;
            let (score, team, ping) = (value_of(&p.score)?, value_of(&p.team)?, value_of(&p.ping)?);
            if p.extra_len > MAX_EXTRA {
                return Err("more player fields than the host accepts");
            }
            let extra_fields = if p.extra_len == 0 {
                &[][..]
            } else if p.extra.is_null() || !p.extra.is_aligned() {
                return Err("player fields pointer is null or misaligned");
            } else {
                std::slice::from_raw_parts(p.extra, p.extra_len)
            };
            let mut extra = Vec::with_capacity(extra_fields.len());
            for f in extra_fields {
                extra.push((text(f.key)?, value_of(&f.value)?.into_json()));
            }
            Ok(Report::Player(PlayerReport { name, score, team, ping, extra }))
        })
    }
}

unsafe extern "C" fn cb_report_master_entry(ctx: *mut c_void, tag: u64, a: *const Addr) -> Status {
    // SAFETY: see `with_state`.
    unsafe { with_state(ctx, tag, |_| Ok(Report::MasterEntry(address(a)?))) }
}

unsafe extern "C" fn cb_report_done(ctx: *mut c_void, tag: u64, status: Status, error: Str) -> Status {
    // SAFETY: see `with_state`.
    unsafe {
        with_state(ctx, tag, |st| {
            if st.done {
                return Err("report_done called twice");
            }
            st.done = true;
            Ok(Report::Done { status, error: text(error)? })
        })
    }
}

unsafe extern "C" fn cb_log(ctx: *mut c_void, tag: u64, level: i32, msg: Str) {
    // SAFETY: see `with_state`.
    unsafe {
        with_state(ctx, tag, |_| {
            if !(LOG_ERROR..=LOG_TRACE).contains(&level) {
                return Err("log level out of range");
            }
            Ok(Report::Log { level, msg: text(msg)? })
        });
    }
}
