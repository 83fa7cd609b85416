//! Every misbehaving protocol driven through the exported table by a strict test host that validates each callback
//! argument the way bzhead's host must (lengths capped before reading, null pointers, UTF-8, kinds, families,
//! struct sizes). The process must survive all of it. This is also a reference for the host's validation rules.
#![allow(clippy::undocumented_unsafe_blocks)]

use query_abi::*;
use std::cell::RefCell;
use std::ffi::c_void;
use std::mem::size_of;
use std::net::SocketAddr;
use std::ptr;

const MAX_TEXT: usize = 64 * 1024;
const MAX_DATAGRAM: usize = 65_507;
const MAX_EXTRA: usize = 64;

#[derive(Default)]
struct Host {
    accepted: RefCell<usize>,
    rejected: RefCell<Vec<&'static str>>,
    sends: RefCell<usize>,
    players: RefCell<usize>,
    done: RefCell<Vec<Status>>,
    logs: RefCell<Vec<String>>,
}

impl Host {
    fn reject(&self, why: &'static str) -> Status {
        self.rejected.borrow_mut().push(why);
        Status::BAD_INPUT
    }
    fn ok(&self) -> Status {
        *self.accepted.borrow_mut() += 1;
        Status::OK
    }
}

unsafe fn host<'a>(ctx: *mut c_void) -> &'a Host {
    unsafe { &*(ctx as *const Host) }
}

/// Text: length checked before anything is read.
unsafe fn text(s: Str) -> Result<String, &'static str> {
    if s.len > MAX_TEXT {
        return Err("text too long");
    }
    unsafe { s.to_str() }.map(str::to_owned).map_err(|_| "bad text")
}

unsafe fn value(v: *const AbiValue) -> Result<(), &'static str> {
    if v.is_null() {
        return Err("null value");
    }
    let v = unsafe { *v };
    match v.kind {
        VALUE_NULL | VALUE_BOOL | VALUE_INT => Ok(()),
        VALUE_STR => unsafe { text(v.str) }.map(|_| ()),
        _ => Err("unknown value kind"),
    }
}

unsafe fn addr(a: *const Addr) -> Result<SocketAddr, &'static str> {
    if a.is_null() {
        return Err("null address");
    }
    unsafe { *a }.to_socket_addr().ok_or("bad address family")
}

unsafe extern "C" fn send_to(ctx: *mut c_void, _: u64, to: *const Addr, data: Bytes) -> Status {
    let h = unsafe { host(ctx) };
    if let Err(e) = unsafe { addr(to) } {
        return h.reject(e);
    }
    if data.len > MAX_DATAGRAM {
        return h.reject("datagram too long");
    }
    if unsafe { data.as_slice() }.is_err() {
        return h.reject("bad datagram");
    }
    *h.sends.borrow_mut() += 1;
    h.ok()
}
unsafe extern "C" fn report_server(ctx: *mut c_void, _: u64, key: Str, v: *const AbiValue) -> Status {
    let h = unsafe { host(ctx) };
    match unsafe { text(key) } {
        Ok(k) if SERVER_KEYS.contains(&k.as_str()) => {}
        Ok(_) => return h.reject("unknown server key"),
        Err(e) => return h.reject(e),
    }
    match unsafe { value(v) } {
        Ok(()) => h.ok(),
        Err(e) => h.reject(e),
    }
}
unsafe extern "C" fn report_rule(ctx: *mut c_void, _: u64, key: Str, v: Str) -> Status {
    let h = unsafe { host(ctx) };
    match unsafe { (text(key), text(v)) } {
        (Ok(_), Ok(_)) => h.ok(),
        (Err(e), _) | (_, Err(e)) => h.reject(e),
    }
}
unsafe extern "C" fn report_raw(ctx: *mut c_void, _: u64, key: Str, v: *const AbiValue) -> Status {
    let h = unsafe { host(ctx) };
    if let Err(e) = unsafe { text(key) } {
        return h.reject(e);
    }
    match unsafe { value(v) } {
        Ok(()) => h.ok(),
        Err(e) => h.reject(e),
    }
}
unsafe extern "C" fn report_player(ctx: *mut c_void, _: u64, p: *const AbiPlayer) -> Status {
    let h = unsafe { host(ctx) };
    if p.is_null() {
        return h.reject("null player");
    }
    // Read the size first; only then the struct.
    let size = unsafe { p.cast::<u32>().read() };
    if (size as usize) < size_of::<AbiPlayer>() {
        return h.reject("short player struct");
    }
    let p = unsafe { *p };
    if let Err(e) = unsafe { text(p.name) } {
        return h.reject(e);
    }
    for v in [&p.score, &p.team, &p.ping] {
        if let Err(e) = unsafe { value(v) } {
            return h.reject(e);
        }
    }
    if p.extra_len > MAX_EXTRA {
        return h.reject("too many extra fields");
    }
    if p.extra_len > 0 && p.extra.is_null() {
        return h.reject("null extra");
    }
    let extra = if p.extra_len == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(p.extra, p.extra_len) } };
    for f in extra {
        if let Err(e) = unsafe { text(f.key) }.and_then(|_| unsafe { value(&f.value) }) {
            return h.reject(e);
        }
    }
    *h.players.borrow_mut() += 1;
    h.ok()
}
unsafe extern "C" fn report_master_entry(ctx: *mut c_void, _: u64, a: *const Addr) -> Status {
    let h = unsafe { host(ctx) };
    match unsafe { addr(a) } {
        Ok(_) => h.ok(),
        Err(e) => h.reject(e),
    }
}
unsafe extern "C" fn report_done(ctx: *mut c_void, _: u64, st: Status, err: Str) -> Status {
    let h = unsafe { host(ctx) };
    if !h.done.borrow().is_empty() {
        return h.reject("second done");
    }
    h.done.borrow_mut().push(st);
    if unsafe { text(err) }.is_err() {
        return h.reject("bad error text");
    }
    h.ok()
}
unsafe extern "C" fn log(ctx: *mut c_void, _: u64, level: i32, msg: Str) {
    let h = unsafe { host(ctx) };
    if !(LOG_ERROR..=LOG_TRACE).contains(&level) {
        h.reject("bad log level");
        return;
    }
    match unsafe { text(msg) } {
        Ok(m) => h.logs.borrow_mut().push(m),
        Err(e) => {
            h.reject(e);
        }
    }
}

fn api() -> &'static PluginApi {
    &query_misbehave::BZHEAD_QUERY_PLUGIN_API
}

fn host_api(h: &Host) -> HostApi {
    HostApi {
        abi_version: ABI_VERSION,
        struct_size: size_of::<HostApi>() as u32,
        ctx: h as *const Host as *mut c_void,
        send_to: Some(send_to),
        report_server: Some(report_server),
        report_rule: Some(report_rule),
        report_raw: Some(report_raw),
        report_player: Some(report_player),
        report_master_entry: Some(report_master_entry),
        report_done: Some(report_done),
        log: Some(log),
    }
}

fn target() -> Addr {
    Addr::from("127.0.0.1:9".parse::<SocketAddr>().unwrap())
}

fn create(h: &Host, proto: &str) -> (Status, *mut Instance) {
    let hapi = host_api(h);
    let t = target();
    let mut inst = ptr::null_mut();
    let st = unsafe { (api().create.unwrap())(&hapi, Str::new(proto), &t, 1, 0, ptr::null(), &mut inst) };
    (st, inst)
}

#[test]
fn table_lists_every_protocol() {
    let a = api();
    assert_eq!(a.abi_version, ABI_VERSION);
    let protos = unsafe { std::slice::from_raw_parts(a.protocols, a.protocols_len) };
    let names: Vec<_> = protos.iter().map(|p| unsafe { p.name.to_str() }.unwrap()).collect();
    assert!(names.contains(&"garbage") && names.contains(&"panic-on-create") && names.len() == 11);
}

#[test]
fn echo_behaves() {
    let h = Host::default();
    let (st, inst) = create(&h, "echo");
    assert_eq!(st, Status::OK);
    let t = target();
    assert_eq!(unsafe { (api().on_datagram.unwrap())(inst, 1, &t, Bytes::new(b"srv")) }, Status::OK);
    assert_eq!(*h.done.borrow(), vec![Status::OK]);
    assert!(h.rejected.borrow().is_empty());
    unsafe { (api().destroy.unwrap())(inst) };
}

#[test]
fn panics_become_statuses() {
    let a = api();
    let t = target();
    let h = Host::default();
    assert_eq!(create(&h, "panic-on-create"), (Status::PANICKED, ptr::null_mut()));
    assert!(h.logs.borrow().iter().any(|l| l.contains("panic-on-create")));

    let h = Host::default();
    let (_, inst) = create(&h, "panic-on-datagram");
    unsafe {
        assert_eq!((a.on_datagram.unwrap())(inst, 1, &t, Bytes::new(b"x")), Status::PANICKED);
        assert_eq!((a.next_deadline_ms.unwrap())(inst), 0);
        (a.destroy.unwrap())(inst);
    }

    let h = Host::default();
    let (_, inst) = create(&h, "panic-on-timeout");
    unsafe {
        assert_eq!((a.next_deadline_ms.unwrap())(inst), 0);
        assert_eq!((a.on_timeout.unwrap())(inst, 0), Status::PANICKED);
        (a.destroy.unwrap())(inst);
    }

    let h = Host::default();
    let (_, inst) = create(&h, "panic-on-deadline");
    unsafe {
        assert_eq!((a.next_deadline_ms.unwrap())(inst), 0);
        assert_eq!((a.on_timeout.unwrap())(inst, 0), Status::PANICKED);
        (a.destroy.unwrap())(inst);
    }

    let h = Host::default();
    let (st, inst) = create(&h, "panic-on-drop");
    assert_eq!(st, Status::OK);
    assert_eq!(*h.done.borrow(), vec![Status::OK]);
    unsafe { (a.destroy.unwrap())(inst) }; // the destructor panics inside the plugin; we are still here
}

#[test]
fn garbage_is_rejected_without_reading_through_it() {
    let h = Host::default();
    let (st, inst) = create(&h, "garbage");
    assert_eq!(st, Status::OK);
    let rejected = h.rejected.borrow().clone();
    assert!(rejected.len() >= 30, "{rejected:?}");
    for why in [
        "bad text",
        "text too long",
        "null value",
        "unknown value kind",
        "unknown server key",
        "null player",
        "short player struct",
        "too many extra fields",
        "null extra",
        "null address",
        "bad address family",
        "datagram too long",
        "bad datagram",
        "bad log level",
        "second done",
    ] {
        assert!(rejected.contains(&why), "no {why:?} in {rejected:?}");
    }
    assert_eq!(*h.sends.borrow(), 1, "only the well-formed send went out");
    assert_eq!(*h.players.borrow(), 0);
    assert_eq!(h.done.borrow().len(), 1);
    unsafe { (api().destroy.unwrap())(inst) };
}

#[test]
fn hangs_and_floods_are_visible_to_the_host() {
    let a = api();
    let h = Host::default();
    let (_, inst) = create(&h, "never-done");
    assert_eq!(unsafe { (a.next_deadline_ms.unwrap())(inst) }, u64::MAX);
    unsafe { (a.destroy.unwrap())(inst) };

    let h = Host::default();
    let (_, inst) = create(&h, "busy-deadline");
    for now in 0..100 {
        assert_eq!(unsafe { (a.next_deadline_ms.unwrap())(inst) }, now);
        assert_eq!(unsafe { (a.on_timeout.unwrap())(inst, now + 1) }, Status::OK);
    }
    assert!(h.done.borrow().is_empty());
    unsafe { (a.destroy.unwrap())(inst) };

    let h = Host::default();
    let (_, inst) = create(&h, "send-flood");
    assert_eq!(*h.sends.borrow(), 10_000);
    unsafe { (a.destroy.unwrap())(inst) };

    let h = Host::default();
    let (_, inst) = create(&h, "report-flood");
    assert_eq!(*h.players.borrow(), 100_000);
    assert_eq!(*h.done.borrow(), vec![Status::OK]);
    unsafe { (a.destroy.unwrap())(inst) };
}
