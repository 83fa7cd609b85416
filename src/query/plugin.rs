//! Calling a loaded plugin: instances, and the host callbacks that copy and validate what plugins report.
//!
//! This file and [`super::loader`] hold the only `unsafe` code of the root crate. The rules it follows (see
//! `docs/plugins.md` and the `query_abi` crate docs):
//!
//! * **One call at a time, one thread.** Every call into a plugin goes through `&mut` [`PluginInstance`] (or
//!   [`PluginInstance::create`]), and the callbacks only run during such a call. [`PluginHost`] and
//!   [`PluginInstance`] are `!Send` (they hold `Rc`s), so they stay on the thread that made them.
//! * **Attribution.** Before each call the host notes which instance (tag) it is calling; a callback carrying
//!   another tag is refused. Everything a call reports goes to the host's [`CallOutput`] ([`PluginHost::output`]):
//!   answer data straight into the query's answer, which the caller lends for the call, the rest as [`Report`]s
//!   whose text and datagrams are copied back to back into buffers reused from call to call.
//! * **Untrusted input.** Each callback checks, in order: lengths against caps *before* reading, null pointers,
//!   UTF-8, value kinds (and which kind each well-known key takes), address families, `AbiPlayer::struct_size`, and
//!   a per-call budget (datagrams, reports, bytes). A failed check appends [`Report::Rejected`] and returns
//!   `BAD_INPUT` to the plugin without reading further; the scheduler then fails that query. Each callback runs in
//!   `catch_unwind`, so a bug on the host side cannot unwind into the plugin.
//! * **Ownership.** Nothing is freed across the boundary: the host copies what it keeps; an instance is released
//!   only by the plugin's `destroy`, exactly once, when the [`PluginInstance`] is dropped. The [`HostApi`] table and
//!   its `ctx` live in an `Rc` that every instance holds, so they outlive every instance created with them.

use std::cell::{RefCell, RefMut};
use std::ffi::c_void;
use std::fmt;
use std::mem::size_of;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::rc::Rc;

use query_abi::{
    keys, AbiField, AbiParam, AbiPlayer, AbiValue, Addr, Bytes, HostApi, Instance, QueryOptions, Status, Str,
    ABI_VERSION, LOG_ERROR, LOG_TRACE, VALUE_BOOL, VALUE_INT, VALUE_NULL, VALUE_STR,
};

use super::loader::PluginLibrary;
use super::result::{Answer, FieldValue, ServerField, MAX_ANSWER_TEXT, MAX_FIELDS, MAX_PLAYERS};

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

/// Where a call's copy of some text sits in its [`CallOutput`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TextSpan {
    start: u32,
    len: u32,
}

impl TextSpan {
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Where a call's copy of a datagram sits in its [`CallOutput`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ByteSpan {
    start: u32,
    len: u32,
}

impl ByteSpan {
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Something a plugin did during one call besides answer data (which goes straight into [`CallOutput::answer`]),
/// copied out of its borrowed arguments into the call's [`CallOutput`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Report {
    /// Send a datagram.
    Send {
        /// Destination.
        to: SocketAddr,
        /// Payload.
        data: ByteSpan,
    },
    /// `player_list_complete`: whether the player list is whole (false: unknown or partial).
    ListComplete(bool),
    /// A server address from a master list.
    MasterEntry(SocketAddr),
    /// The query is finished.
    Done {
        /// `OK` or why not.
        status: Status,
        /// Error text.
        error: TextSpan,
    },
    /// A log line.
    Log {
        /// `query_abi::LOG_*` level.
        level: i32,
        /// Text.
        msg: TextSpan,
    },
    /// The plugin passed invalid data to a callback; the value says what was wrong. The query must be failed.
    Rejected(&'static str),
    /// The answer would hold more than the host keeps for one query (`max` of `what`). The query must be failed.
    TooMany {
        /// What (`rules`, `raw fields`, `players`, `bytes of text`).
        what: &'static str,
        /// The most kept.
        max: usize,
    },
}

/// What the last call into a plugin produced: the answer data it reported (straight into [`CallOutput::answer`],
/// which the caller lends for the call: the query's own answer), the other reports in order, and the text and
/// datagrams those point to, copied back to back. The [`PluginHost`] keeps one ([`PluginHost::output`]) and clears it
/// at the start of every call, so reporting allocates nothing once its buffers have grown to the size of a typical
/// call, and nothing is moved around per call.
#[derive(Debug, Default)]
pub struct CallOutput {
    /// The reports other than answer data, in order.
    pub reports: Vec<Report>,
    /// The answer being built, lent for the call (the query's own, boxed so that lending moves a pointer; `None`
    /// until its first data, which makes it). Answer data reported while [`CallOutput::lent`] is false is counted in
    /// [`CallOutput::data_reports`] and dropped.
    pub answer: Option<Box<Answer>>,
    /// True while a query's answer is lent (even one not made yet).
    pub lent: bool,
    /// Room given to an empty answer at its first data (text bytes, fields, players).
    pub answer_hint: (usize, usize, usize),
    /// How many answer data reports (server fields, rules, raw fields, players) the call made.
    pub data_reports: usize,
    /// Empty answers whose buffers are reused for new ones (see [`super::Scan::recycle`]).
    pub spare: Vec<Box<Answer>>,
    text: String,
    bytes: Vec<u8>,
}

impl CallOutput {
    /// Forgets every report, keeping the room (the lent answer and the hint are the caller's business).
    fn clear(&mut self) {
        self.reports.clear();
        self.data_reports = 0;
        self.text.clear();
        self.bytes.clear();
    }

    /// Copied text.
    pub fn text(&self, s: TextSpan) -> &str {
        // Spans are only made by `push_text` over whole `&str`s of this output, so they are in range and on char
        // boundaries; `clear` invalidates spans only together with the reports holding them.
        self.text.get(s.start as usize..s.start as usize + s.len as usize).unwrap_or("")
    }

    /// A copied datagram.
    pub fn bytes(&self, s: ByteSpan) -> &[u8] {
        self.bytes.get(s.start as usize..s.start as usize + s.len as usize).unwrap_or(&[])
    }

    /// Copies `s` (its length was checked against [`MAX_TEXT`], and a call's total against
    /// [`MAX_BYTES_PER_CALL`], so offsets fit in 32 bits).
    fn push_text(&mut self, s: &str) -> TextSpan {
        let start = self.text.len();
        self.text.push_str(s);
        TextSpan { start: start as u32, len: s.len() as u32 }
    }

    fn push_bytes(&mut self, b: &[u8]) -> ByteSpan {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(b);
        ByteSpan { start: start as u32, len: b.len() as u32 }
    }

    /// Applies answer data to the lent answer (given its room at the first data); `Err` when it does not fit.
    fn apply_to_answer(
        &mut self,
        text: usize,
        f: impl FnOnce(&mut Answer) -> Result<(), Report>,
    ) -> Result<(), Report> {
        self.data_reports += 1;
        if !self.lent {
            return Ok(());
        }
        let hint = self.answer_hint;
        let spare = &mut self.spare;
        let answer = self.answer.get_or_insert_with(|| match spare.pop() {
            Some(a) => a,
            None => Box::new(Answer::with_capacity(hint.0, hint.1, hint.2)),
        });
        if !answer.can_hold(text) {
            return Err(Report::TooMany { what: "bytes of text", max: MAX_ANSWER_TEXT });
        }
        f(answer)
    }
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
    /// Random bytes for long tokens and challenges (`None`: zeros, and the plugin derives them from `seed`).
    pub random: Option<[u8; query_abi::RANDOM_LEN]>,
    /// Protocol parameters.
    pub params: &'a [(String, String)],
}

#[derive(Default)]
struct CallState {
    /// Tag of the instance being called; callbacks outside a call, or with another tag, are refused.
    current: Option<u64>,
    /// Where the calls' reports go (cleared at the start of each call).
    out: CallOutput,
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

    /// What the last call into a plugin reported, and where the caller lends the answer for the next one. Borrowed
    /// until the guard is dropped: drop it before the next call into a plugin (which would panic on the borrow).
    pub fn output(&self) -> RefMut<'_, CallOutput> {
        RefMut::map(self.inner.ctx.state.borrow_mut(), |st| &mut st.out)
    }
}

impl HostInner {
    /// Runs one call into the plugin with `tag` as the current instance; its reports replace the last call's in the
    /// output (the lent answer and the hint stay).
    fn call<R>(&self, tag: u64, f: impl FnOnce() -> R) -> R {
        {
            let mut st = self.ctx.state.borrow_mut();
            let st = &mut *st;
            st.current = Some(tag);
            (st.sends, st.reports, st.bytes, st.done, st.flooded) = (0, 0, 0, false, false);
            st.out.clear();
        }
        let r = f();
        self.ctx.state.borrow_mut().current = None;
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
    /// finish from inside `create`: its reports are in the host's output whether or not an instance results.
    #[allow(clippy::too_many_arguments)]
    pub fn create(
        host: &PluginHost,
        lib: &Rc<PluginLibrary>,
        protocol: &str,
        target: SocketAddr,
        tag: u64,
        now_ms: u64,
        options: &InstanceOptions<'_>,
    ) -> Result<PluginInstance, CallError> {
        let Some(create) = lib.api().create else { return Err(CallError::NoInstance) };
        // A few parameters (the usual case) go in an array on the stack.
        let mut few = [AbiParam { key: Str::EMPTY, value: Str::EMPTY }; 8];
        let many: Vec<AbiParam>;
        let params: &[AbiParam] = if options.params.len() <= few.len() {
            for (slot, (k, v)) in few.iter_mut().zip(options.params) {
                *slot = AbiParam { key: Str::new(k), value: Str::new(v) };
            }
            &few[..options.params.len()]
        } else {
            many = options.params.iter().map(|(k, v)| AbiParam { key: Str::new(k), value: Str::new(v) }).collect();
            &many
        };
        let opts = QueryOptions {
            struct_size: size_of::<QueryOptions>() as u32,
            timeout_ms: options.timeout_ms,
            retries: options.retries,
            max_log_level: options.max_log_level,
            seed: options.seed,
            params: if params.is_empty() { ptr::null() } else { params.as_ptr() },
            params_len: params.len(),
            random: options.random.unwrap_or([0; query_abi::RANDOM_LEN]),
        };
        let addr = Addr::from(target);
        let mut inst: *mut Instance = ptr::null_mut();
        let hinner = &host.inner;
        let status = hinner.call(tag, || {
            // SAFETY: `create` was checked non-null at load and the library is loaded (`lib`). Every pointer
            // argument borrows a local (`opts`, `params`, `addr`, `inst`) or the host table, which lives in
            // `host.inner` (an `Rc` each instance keeps) and so outlives every instance created with it. The
            // `Str` views borrow `protocol` and `options`, alive for the call.
            unsafe { create(&hinner.api, Str::new(protocol), &addr, tag, now_ms, &opts, &mut inst) }
        });
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
    pub fn on_datagram(&mut self, now_ms: u64, from: SocketAddr, data: &[u8]) -> Result<Handled, CallError> {
        let Some(f) = self.lib.api().on_datagram else { return Err(CallError::NoInstance) };
        let addr = Addr::from(from);
        let inst = self.inst.as_ptr();
        // SAFETY: `f` checked non-null at load, library alive (`self.lib`); `inst` is live (destroyed only in
        // `drop`); `addr` and `data` are borrowed for the call; `&mut self` means no other call is in progress.
        let status = self.host.call(self.tag, || unsafe { f(inst, now_ms, &addr, Bytes::new(data)) });
        match status {
            Status::OK => Ok(Handled::Accepted),
            Status::PANICKED => Err(CallError::Panicked { function: "on_datagram" }),
            s if s.0 > 0 => Ok(Handled::Ignored),
            status => Err(CallError::Status { function: "on_datagram", status }),
        }
    }

    /// Tells the instance its deadline passed.
    pub fn on_timeout(&mut self, now_ms: u64) -> Result<(), CallError> {
        let Some(f) = self.lib.api().on_timeout else { return Err(CallError::NoInstance) };
        let inst = self.inst.as_ptr();
        // SAFETY: as in `on_datagram`.
        let status = self.host.call(self.tag, || unsafe { f(inst, now_ms) });
        match status {
            Status::OK => Ok(()),
            Status::PANICKED => Err(CallError::Panicked { function: "on_timeout" }),
            s if s.0 > 0 => Ok(()),
            status => Err(CallError::Status { function: "on_timeout", status }),
        }
    }

    /// The instance's next deadline (`None`: none). A poisoned instance answers 0, i.e. "now".
    pub fn next_deadline_ms(&mut self) -> Option<u64> {
        let f = self.lib.api().next_deadline_ms?;
        let inst = self.inst.as_ptr();
        // SAFETY: as in `on_datagram`; the plugin may not report from here, but if it does, it is attributed and
        // validated like any other call.
        let d = self.host.call(self.tag, || unsafe { f(inst) });
        (d != u64::MAX).then_some(d)
    }
}

impl Drop for PluginInstance {
    fn drop(&mut self) {
        let Some(f) = self.lib.api().destroy else { return };
        let inst = self.inst.as_ptr();
        // SAFETY: `f` checked non-null at load, library alive (`self.lib` is dropped after this); `inst` came from
        // this plugin's `create` and is destroyed exactly once, here, outside any other call into the plugin.
        self.host.call(self.tag, || unsafe { f(inst) });
    }
}

// ------------------------------------------------------------------------------------------------ callbacks

/// What a callback body accepted: a report for [`CallOutput::reports`] (or none, for answer data already in
/// [`CallOutput::answer`]) and its size against the call's byte budget.
struct Accepted {
    report: Option<Report>,
    size: usize,
}

impl Accepted {
    fn report(report: Report, size: usize) -> Result<Accepted, &'static str> {
        Ok(Accepted { report: Some(report), size })
    }

    /// Answer data (already applied), or the reason it was not kept.
    fn data(applied: Result<(), Report>, size: usize) -> Result<Accepted, &'static str> {
        Ok(Accepted { report: applied.err(), size })
    }
}

/// Runs a callback body against the host state, refusing calls outside a plugin call, with a foreign tag, or after
/// the call's budget ran out; catches any panic of the host code. The body copies what it accepts into the call's
/// [`CallOutput`] (answer data straight into its answer); text and datagrams it copied are taken back when it refuses
/// the report or the report breaks the budget, so a call's output never holds more than its budget. (Answer data of
/// a refused report may stay in the answer: a refusal fails the query, and its answer is dropped.)
///
/// # Safety
/// `ctx` must be the `ctx` of a [`PluginHost`] table (the plugin passes back what it was given; a plugin that
/// passes something else breaks the ABI in a way no host can detect).
unsafe fn with_state(
    ctx: *mut c_void,
    tag: u64,
    f: impl FnOnce(&mut CallState) -> Result<Accepted, &'static str>,
) -> Status {
    let r = catch_unwind(AssertUnwindSafe(|| {
        if ctx.is_null() {
            return Status::BAD_INPUT;
        }
        // SAFETY: per this function's contract `ctx` points to the `HostCtx` boxed in a live `HostInner` (every
        // instance keeps an `Rc` to it).
        let host = unsafe { &*ctx.cast::<HostCtx>() };
        let Ok(mut st) = host.state.try_borrow_mut() else { return Status::ERROR };
        let st = &mut *st;
        if st.current != Some(tag) {
            if st.current.is_some() && !st.flooded {
                st.out.reports.push(Report::Rejected("callback with another instance's tag"));
            }
            return Status::BAD_INPUT;
        }
        if st.flooded {
            return Status::BAD_INPUT;
        }
        st.reports += 1;
        if st.reports > MAX_REPORTS_PER_CALL {
            st.flooded = true;
            st.out.reports.push(Report::Rejected("more reports in one call than the host accepts"));
            return Status::BAD_INPUT;
        }
        let mark = (st.out.text.len(), st.out.bytes.len());
        let rollback = |out: &mut CallOutput| {
            out.text.truncate(mark.0);
            out.bytes.truncate(mark.1);
        };
        match f(st) {
            Ok(Accepted { report, size }) => {
                st.bytes += size;
                if st.bytes > MAX_BYTES_PER_CALL {
                    st.flooded = true;
                    rollback(&mut st.out);
                    st.out.reports.push(Report::Rejected("more data in one call than the host accepts"));
                    return Status::BAD_INPUT;
                }
                if let Some(r) = report {
                    st.out.reports.push(r);
                }
                Status::OK
            }
            Err(why) => {
                rollback(&mut st.out);
                st.out.reports.push(Report::Rejected(why));
                Status::BAD_INPUT
            }
        }
    }));
    r.unwrap_or(Status::ERROR)
}

/// Checks borrowed text: length capped before any read, then null and UTF-8 checks.
///
/// # Safety
/// `s` must be null/0 or readable for `s.len` bytes during the call (ABI contract); the cap is checked first, so a
/// huge length is refused without touching memory.
unsafe fn text<'a>(s: Str) -> Result<&'a str, &'static str> {
    if s.len > MAX_TEXT {
        return Err("text longer than the host accepts");
    }
    // SAFETY: forwarded to the caller; the view checks null with a length.
    let bytes = unsafe { s.as_bytes() }.map_err(|_| "text pointer is null with a length")?;
    utf8(bytes).ok_or("text is not UTF-8")
}

/// `bytes` as text when it is UTF-8. Nearly every report is short ASCII (keys, numbers, names), for which one pass
/// of word-sized ORs is several times cheaper than the general validator's set-up; anything else goes to it.
fn utf8(bytes: &[u8]) -> Option<&str> {
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut words = bytes.chunks_exact(8);
    let mut acc = 0u64;
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        acc |= u64::from_ne_bytes(b);
    }
    let tail = words.remainder().iter().fold(0u8, |a, &c| a | c);
    if acc & HIGHS == 0 && tail < 0x80 {
        // SAFETY: every byte is below 0x80: ASCII, which is UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(bytes) })
    } else {
        std::str::from_utf8(bytes).ok()
    }
}

/// Checks a borrowed value (its text as [`text`] checks it); returns it with its size against the byte budget.
///
/// # Safety
/// `v.str` must follow [`text`]'s contract.
unsafe fn value_of<'a>(v: &AbiValue) -> Result<(FieldValue<'a>, usize), &'static str> {
    match v.kind {
        VALUE_NULL => Ok((FieldValue::Null, 8)),
        VALUE_BOOL => Ok((FieldValue::Bool(v.int != 0), 8)),
        VALUE_INT => Ok((FieldValue::Int(v.int), 8)),
        // SAFETY: the view is borrowed for the call (ABI contract); `text` caps the length before reading.
        VALUE_STR => unsafe { text(v.str) }.map(|t| (FieldValue::Str(t), t.len())),
        _ => Err("unknown value kind"),
    }
}

/// Reads a borrowed value through its pointer.
///
/// # Safety
/// `v` must be null or point to a readable `AbiValue` whose `str` follows [`text`]'s contract.
unsafe fn value<'a>(v: *const AbiValue) -> Result<(FieldValue<'a>, usize), &'static str> {
    if v.is_null() {
        return Err("value pointer is null");
    }
    if !v.is_aligned() {
        return Err("value pointer is misaligned");
    }
    // SAFETY: non-null, aligned, borrowed for the call.
    let v = unsafe { v.read() };
    // SAFETY: forwarded to the caller.
    unsafe { value_of(&v) }
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

/// The well-known key `k` (`None` inside: `player_list_complete`, which is a report, not answer data), with the
/// value kinds it takes.
fn server_key(k: &str) -> Option<(Option<ServerField>, &'static [u32])> {
    const TEXT: &[u32] = &[VALUE_STR, VALUE_NULL];
    const INT: &[u32] = &[VALUE_INT, VALUE_NULL];
    const BOOL: &[u32] = &[VALUE_BOOL, VALUE_NULL];
    if k == keys::PLAYER_LIST_COMPLETE {
        return Some((None, BOOL));
    }
    let f = ServerField::from_key(k)?;
    let kinds = match f {
        ServerField::Name | ServerField::Map | ServerField::GameType | ServerField::Version => TEXT,
        ServerField::Players | ServerField::MaxPlayers | ServerField::Bots => INT,
        ServerField::Password => BOOL,
    };
    Some((Some(f), kinds))
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
            Accepted::report(Report::Send { to, data: st.out.push_bytes(data) }, data.len())
        })
    }
}

unsafe extern "C" fn cb_report_server(ctx: *mut c_void, tag: u64, key: Str, v: *const AbiValue) -> Status {
    // SAFETY: see `with_state`; `text`/`value` check lengths and pointers before reading.
    unsafe {
        with_state(ctx, tag, |st| {
            let k = text(key)?;
            let Some((key, kinds)) = server_key(k) else { return Err("unknown server key") };
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
            let (value, size) = value_of(&raw)?;
            let Some(field) = key else {
                return Accepted::report(Report::ListComplete(value != FieldValue::Bool(false)), size);
            };
            let applied = st.out.apply_to_answer(size, |a| {
                a.set_server(field, value);
                Ok(())
            });
            Accepted::data(applied, size)
        })
    }
}

unsafe extern "C" fn cb_report_rule(ctx: *mut c_void, tag: u64, key: Str, v: Str) -> Status {
    // SAFETY: see `with_state`.
    unsafe {
        with_state(ctx, tag, |st| {
            let (k, v) = (text(key)?, text(v)?);
            let size = k.len() + v.len();
            let applied = st.out.apply_to_answer(size, |a| {
                if a.rules().len() >= MAX_FIELDS {
                    return Err(Report::TooMany { what: "rules", max: MAX_FIELDS });
                }
                a.set_rule(k, FieldValue::Str(v));
                Ok(())
            });
            Accepted::data(applied, size)
        })
    }
}

unsafe extern "C" fn cb_report_raw(ctx: *mut c_void, tag: u64, key: Str, v: *const AbiValue) -> Status {
    // SAFETY: see `with_state`.
    unsafe {
        with_state(ctx, tag, |st| {
            let k = text(key)?;
            let (v, vsize) = value(v)?;
            let size = k.len() + vsize;
            let applied = st.out.apply_to_answer(size, |a| {
                if a.raw().len() >= MAX_FIELDS {
                    return Err(Report::TooMany { what: "raw fields", max: MAX_FIELDS });
                }
                a.set_raw(k, v);
                Ok(())
            });
            Accepted::data(applied, size)
        })
    }
}

unsafe extern "C" fn cb_report_player(ctx: *mut c_void, tag: u64, p: *const AbiPlayer) -> Status {
    // SAFETY: see `with_state`; the struct size is read (4 bytes) before the struct, the extra count is capped
    // before the array is touched.
    unsafe {
        with_state(ctx, tag, |st| {
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
            let ((score, s1), (team, s2), (ping, s3)) = (value_of(&p.score)?, value_of(&p.team)?, value_of(&p.ping)?);
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
            // Every field is checked before the player is added (a few on the stack, more in a vector).
            let mut size = name.len() + s1 + s2 + s3;
            let mut field = |f: &AbiField| -> Result<(&str, FieldValue<'_>), &'static str> {
                let k = text(f.key)?;
                let (v, vsize) = value_of(&f.value)?;
                size += k.len() + vsize;
                Ok((k, v))
            };
            let mut few = [("", FieldValue::Null); 8];
            let many: Vec<(&str, FieldValue<'_>)>;
            let extra: &[(&str, FieldValue<'_>)] = if extra_fields.len() <= few.len() {
                for (slot, f) in few.iter_mut().zip(extra_fields) {
                    *slot = field(f)?;
                }
                &few[..extra_fields.len()]
            } else {
                many = extra_fields.iter().map(&mut field).collect::<Result<_, _>>()?;
                &many
            };
            let applied = st.out.apply_to_answer(size, |a| {
                if a.player_count() >= MAX_PLAYERS {
                    return Err(Report::TooMany { what: "players", max: MAX_PLAYERS });
                }
                a.push_player(name, score, team, ping, extra.iter().copied());
                Ok(())
            });
            Accepted::data(applied, size)
        })
    }
}

unsafe extern "C" fn cb_report_master_entry(ctx: *mut c_void, tag: u64, a: *const Addr) -> Status {
    // SAFETY: see `with_state`.
    unsafe { with_state(ctx, tag, |_| Accepted::report(Report::MasterEntry(address(a)?), 20)) }
}

unsafe extern "C" fn cb_report_done(ctx: *mut c_void, tag: u64, status: Status, error: Str) -> Status {
    // SAFETY: see `with_state`.
    unsafe {
        with_state(ctx, tag, |st| {
            if st.done {
                return Err("report_done called twice");
            }
            st.done = true;
            let error = text(error)?;
            Accepted::report(Report::Done { status, error: st.out.push_text(error) }, error.len())
        })
    }
}

unsafe extern "C" fn cb_log(ctx: *mut c_void, tag: u64, level: i32, msg: Str) {
    // SAFETY: see `with_state`.
    unsafe {
        with_state(ctx, tag, |st| {
            if !(LOG_ERROR..=LOG_TRACE).contains(&level) {
                return Err("log level out of range");
            }
            let msg = text(msg)?;
            Accepted::report(Report::Log { level, msg: st.out.push_text(msg) }, msg.len())
        });
    }
}
