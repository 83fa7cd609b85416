//! Found by the `query_host` fuzz target (`fuzz/`): text decoded from a server can be longer than the host accepts
//! (64 KiB; a 40,000-byte Latin-1 Quake III name decodes to 80,000 bytes), and the host then failed the query as a
//! misbehaving plugin. The export layer now cuts every text at the host's limit, on a character boundary.
#![allow(clippy::undocumented_unsafe_blocks)]

use query_abi::export::MAX_TEXT;
use query_abi::*;
use std::cell::RefCell;
use std::ffi::c_void;
use std::net::SocketAddr;
use std::ptr;

/// Reports every kind of text, each 100,000 bytes of three-byte characters (so the cut falls inside one).
struct Long;

impl QueryEngine for Long {
    fn new(_: &str, target: SocketAddr, _: &QueryConfig, _: u64, sink: &mut dyn Sink) -> Result<Self, CreateError> {
        let long = "€".repeat(100_000 / 3);
        sink.server(keys::NAME, Value::Str(&long));
        sink.rule(&long, &long);
        sink.raw(&long, Value::Str(&long));
        sink.player(&Player { extra: &[(&long, Value::Str(&long))], ..Player::named(&long) });
        sink.log(Level::Error, &long);
        sink.done(Status::MALFORMED, &long);
        let _ = target;
        Ok(Long)
    }
    fn on_datagram(&mut self, _: u64, _: SocketAddr, _: &[u8], _: &mut dyn Sink) -> Datagram {
        Datagram::Ignored
    }
    fn on_timeout(&mut self, _: u64, _: &mut dyn Sink) {}
    fn next_deadline(&self) -> Option<u64> {
        None
    }
}

export_query_plugin! {
    name: "long",
    version: "0.0.0",
    engine: Long,
    protocols: [ProtocolInfo::server("long", 1, "long texts")],
}

thread_local! {
    /// Every text the host received.
    static TEXTS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

unsafe fn take(s: Str) {
    let t = unsafe { s.to_str() }.expect("the host gets UTF-8").to_owned();
    TEXTS.with(|v| v.borrow_mut().push(t));
}
unsafe fn take_value(v: &AbiValue) {
    if v.kind == VALUE_STR {
        unsafe { take(v.str) };
    }
}

unsafe extern "C" fn send_to(_: *mut c_void, _: u64, _: *const Addr, _: Bytes) -> Status {
    Status::OK
}
unsafe extern "C" fn report_server(_: *mut c_void, _: u64, _key: Str, v: *const AbiValue) -> Status {
    unsafe { take_value(&*v) };
    Status::OK
}
unsafe extern "C" fn report_raw(_: *mut c_void, _: u64, key: Str, v: *const AbiValue) -> Status {
    unsafe { take(key) };
    unsafe { take_value(&*v) };
    Status::OK
}
unsafe extern "C" fn report_rule(_: *mut c_void, _: u64, key: Str, v: Str) -> Status {
    unsafe { take(key) };
    unsafe { take(v) };
    Status::OK
}
unsafe extern "C" fn report_player(_: *mut c_void, _: u64, p: *const AbiPlayer) -> Status {
    let p = unsafe { &*p };
    unsafe { take(p.name) };
    for f in unsafe { std::slice::from_raw_parts(p.extra, p.extra_len) } {
        unsafe { take(f.key) };
        unsafe { take_value(&f.value) };
    }
    Status::OK
}
unsafe extern "C" fn report_master_entry(_: *mut c_void, _: u64, _: *const Addr) -> Status {
    Status::OK
}
unsafe extern "C" fn report_done(_: *mut c_void, _: u64, _: Status, err: Str) -> Status {
    unsafe { take(err) };
    Status::OK
}
unsafe extern "C" fn log(_: *mut c_void, _: u64, _: i32, msg: Str) {
    unsafe { take(msg) };
}

#[test]
fn text_longer_than_the_host_accepts_is_cut_on_a_character_boundary() {
    let host = HostApi {
        abi_version: ABI_VERSION,
        struct_size: std::mem::size_of::<HostApi>() as u32,
        ctx: ptr::NonNull::<u8>::dangling().as_ptr().cast(), // never read
        send_to: Some(send_to),
        report_server: Some(report_server),
        report_rule: Some(report_rule),
        report_raw: Some(report_raw),
        report_player: Some(report_player),
        report_master_entry: Some(report_master_entry),
        report_done: Some(report_done),
        log: Some(log),
    };
    let api = &BZHEAD_QUERY_PLUGIN_API;
    let target = Addr::from("127.0.0.1:1".parse::<SocketAddr>().unwrap());
    let mut inst: *mut Instance = ptr::null_mut();
    let st = unsafe { (api.create.unwrap())(&host, Str::new("long"), &target, 1, 0, ptr::null(), &mut inst) };
    assert_eq!(st, Status::OK);
    unsafe { (api.destroy.unwrap())(inst) };
    let texts = TEXTS.with(|v| v.take());
    // Server name; rule key and value; raw key and value; player name, extra key and value; log; done.
    assert_eq!(texts.len(), 10);
    let cut = "€".repeat(MAX_TEXT / 3);
    for t in &texts {
        assert_eq!(t.len(), MAX_TEXT - MAX_TEXT % 3);
        assert_eq!(t, &cut);
    }
}
