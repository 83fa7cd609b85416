//! The macro-generated table, called the way a host calls it: through the entry symbol and raw function pointers,
//! with a test host recording its callbacks.
#![allow(clippy::undocumented_unsafe_blocks)]

use query_abi::collect::OwnedValue;
use query_abi::*;
use std::cell::RefCell;
use std::ffi::c_void;
use std::net::SocketAddr;
use std::ptr;

/// A small engine whose behaviour depends on the protocol name.
struct TestEngine {
    target: SocketAddr,
    deadline: Option<u64>,
    tries: u32,
    panic_in_deadline: bool,
    param: Option<String>,
}

impl QueryEngine for TestEngine {
    fn new(
        protocol: &str,
        target: SocketAddr,
        config: &QueryConfig,
        now_ms: u64,
        sink: &mut dyn Sink,
    ) -> Result<Self, CreateError> {
        match protocol {
            "echo" | "panic-deadline" => {}
            "panic-create" => panic!("boom in create"),
            "needs-param" if config.param("game").is_none() => {
                return Err(CreateError::BadConfig("game missing".into()))
            }
            "needs-param" => {}
            _ => return Err(CreateError::UnknownProtocol),
        }
        sink.send(target, b"hello");
        Ok(TestEngine {
            target,
            deadline: Some(now_ms + 100),
            tries: 0,
            panic_in_deadline: protocol == "panic-deadline",
            param: config.param("game").map(str::to_owned),
        })
    }

    fn on_datagram(&mut self, _now: u64, from: SocketAddr, data: &[u8], sink: &mut dyn Sink) -> Datagram {
        if from != self.target {
            return Datagram::Ignored;
        }
        if data == b"panic" {
            panic!("boom in on_datagram");
        }
        if data == b"reenter" {
            sink.send(from, b"reenter");
            return Datagram::Accepted;
        }
        let text = String::from_utf8_lossy(data);
        sink.server(keys::NAME, Value::Str(&text));
        sink.server(keys::PLAYERS, Value::Int(1));
        sink.server(keys::PASSWORD, Value::Bool(false));
        sink.rule("mode", "ctf");
        sink.raw("game", self.param.as_deref().into());
        sink.player(&Player {
            name: "p1",
            score: Some(7),
            team: Value::Null,
            ping: Some(30),
            extra: &[("clan", Value::Str("[BZ]"))],
        });
        sink.master_entry("10.0.0.1:27960".parse().unwrap());
        sink.finish();
        sink.server(keys::NAME, Value::Str("after done: must be dropped"));
        Datagram::Accepted
    }

    fn on_timeout(&mut self, now: u64, sink: &mut dyn Sink) {
        if self.deadline.is_some_and(|d| now < d) {
            return;
        }
        self.tries += 1;
        if self.tries > 1 {
            self.deadline = None;
            sink.done(Status::TIMEOUT, "no reply");
        } else {
            sink.send(self.target, b"hello again");
            self.deadline = Some(now + 200);
        }
    }

    fn next_deadline(&self) -> Option<u64> {
        if self.panic_in_deadline {
            panic!("boom in next_deadline");
        }
        self.deadline
    }
}

export_query_plugin! {
    name: "test",
    version: "1.2.3",
    engine: TestEngine,
    protocols: [
        ProtocolInfo::server("echo", 1234, "echo test"),
        ProtocolInfo::master("needs-param", 27950, "needs a param"),
    ],
}

#[derive(Debug, PartialEq)]
enum Ev {
    Send(SocketAddr, Vec<u8>),
    Server(String, OwnedValue),
    Rule(String, String),
    Raw(String, OwnedValue),
    Player(String, Option<i64>, Option<i64>, Vec<(String, OwnedValue)>),
    Master(SocketAddr),
    Done(Status, String),
    Log(i32, String),
    Reentered(Status),
}

#[derive(Default)]
struct Host {
    events: RefCell<Vec<Ev>>,
    /// When set, `send_to` of the datagram "reenter" calls back into this instance.
    reenter: RefCell<Option<*mut Instance>>,
}

unsafe fn host<'a>(ctx: *mut c_void) -> &'a Host {
    unsafe { &*(ctx as *const Host) }
}
unsafe fn text(s: Str) -> String {
    unsafe { s.to_str() }.expect("plugin sent invalid text").to_owned()
}
unsafe fn value(v: *const AbiValue) -> OwnedValue {
    let v = unsafe { &*v };
    match v.kind {
        VALUE_NULL => OwnedValue::Null,
        VALUE_BOOL => OwnedValue::Bool(v.int != 0),
        VALUE_INT => OwnedValue::Int(v.int),
        VALUE_STR => OwnedValue::Str(unsafe { text(v.str) }),
        k => panic!("bad kind {k}"),
    }
}
fn int(v: AbiValue) -> Option<i64> {
    (v.kind == VALUE_INT).then_some(v.int)
}

unsafe extern "C" fn send_to(ctx: *mut c_void, _tag: u64, to: *const Addr, data: Bytes) -> Status {
    let h = unsafe { host(ctx) };
    let data = unsafe { data.as_slice() }.unwrap().to_vec();
    let to = unsafe { *to }.to_socket_addr().unwrap();
    if data == b"reenter" {
        if let Some(inst) = *h.reenter.borrow() {
            let a = Addr::from(to);
            let api = &BZHEAD_QUERY_PLUGIN_API;
            let st = unsafe { (api.on_datagram.unwrap())(inst, 0, &a, Bytes::new(b"x")) };
            h.events.borrow_mut().push(Ev::Reentered(st));
        }
    }
    h.events.borrow_mut().push(Ev::Send(to, data));
    Status::OK
}
unsafe extern "C" fn report_server(ctx: *mut c_void, _tag: u64, key: Str, v: *const AbiValue) -> Status {
    let e = unsafe { Ev::Server(text(key), value(v)) };
    unsafe { host(ctx) }.events.borrow_mut().push(e);
    Status::OK
}
unsafe extern "C" fn report_rule(ctx: *mut c_void, _tag: u64, key: Str, v: Str) -> Status {
    let e = unsafe { Ev::Rule(text(key), text(v)) };
    unsafe { host(ctx) }.events.borrow_mut().push(e);
    Status::OK
}
unsafe extern "C" fn report_raw(ctx: *mut c_void, _tag: u64, key: Str, v: *const AbiValue) -> Status {
    let e = unsafe { Ev::Raw(text(key), value(v)) };
    unsafe { host(ctx) }.events.borrow_mut().push(e);
    Status::OK
}
unsafe extern "C" fn report_player(ctx: *mut c_void, _tag: u64, p: *const AbiPlayer) -> Status {
    let p = unsafe { &*p };
    assert!(p.struct_size as usize >= std::mem::size_of::<AbiPlayer>());
    let extra = unsafe { std::slice::from_raw_parts(p.extra, p.extra_len) };
    let extra = extra.iter().map(|f| unsafe { (text(f.key), value(&f.value)) }).collect();
    let e = Ev::Player(unsafe { text(p.name) }, int(p.score), int(p.ping), extra);
    unsafe { host(ctx) }.events.borrow_mut().push(e);
    Status::OK
}
unsafe extern "C" fn report_master_entry(ctx: *mut c_void, _tag: u64, a: *const Addr) -> Status {
    let a = unsafe { *a }.to_socket_addr().unwrap();
    unsafe { host(ctx) }.events.borrow_mut().push(Ev::Master(a));
    Status::OK
}
unsafe extern "C" fn report_done(ctx: *mut c_void, _tag: u64, st: Status, err: Str) -> Status {
    let e = Ev::Done(st, unsafe { text(err) });
    unsafe { host(ctx) }.events.borrow_mut().push(e);
    Status::OK
}
unsafe extern "C" fn log(ctx: *mut c_void, _tag: u64, level: i32, msg: Str) {
    let e = Ev::Log(level, unsafe { text(msg) });
    unsafe { host(ctx) }.events.borrow_mut().push(e);
}

fn host_api(h: &Host) -> HostApi {
    HostApi {
        abi_version: ABI_VERSION,
        struct_size: std::mem::size_of::<HostApi>() as u32,
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

fn api() -> &'static PluginApi {
    &BZHEAD_QUERY_PLUGIN_API
}

#[test]
fn the_entry_symbol_returns_the_table() {
    assert!(std::ptr::eq(bzhead_query_plugin_entry(), &BZHEAD_QUERY_PLUGIN_API));
}

const TARGET: &str = "127.0.0.1:4000";

fn target() -> Addr {
    Addr::from(TARGET.parse::<SocketAddr>().unwrap())
}

fn create(h: &Host, proto: &str, options: *const QueryOptions) -> (Status, *mut Instance) {
    let hapi = host_api(h);
    let mut inst = ptr::dangling_mut::<Instance>(); // must be overwritten (with null on failure)
    let t = target();
    let st = unsafe { (api().create.unwrap())(&hapi, Str::new(proto), &t, 7, 1000, options, &mut inst) };
    (st, inst)
}

#[test]
fn table_header_is_complete_and_versioned() {
    let a = api();
    assert_eq!(a.abi_version, ABI_VERSION);
    assert_eq!(a.struct_size as usize, std::mem::size_of::<PluginApi>());
    assert_eq!(a.flags & FLAG_PANIC_UNWIND, FLAG_PANIC_UNWIND, "tests run with panic=unwind");
    assert_eq!(unsafe { a.name.to_str() }, Ok("test"));
    assert_eq!(unsafe { a.version.to_str() }, Ok("1.2.3"));
    let protos = unsafe { std::slice::from_raw_parts(a.protocols, a.protocols_len) };
    assert_eq!(protos.len(), 2);
    assert_eq!(unsafe { protos[0].name.to_str() }, Ok("echo"));
    assert_eq!(protos[0].default_port, 1234);
    assert_eq!(protos[0].kind, KIND_SERVER);
    assert_eq!(protos[1].kind, KIND_MASTER);
    assert!(a.create.is_some() && a.destroy.is_some() && a.on_datagram.is_some());
    assert!(a.on_timeout.is_some() && a.next_deadline_ms.is_some());
}

#[test]
fn a_query_runs_through_the_table() {
    let h = Host::default();
    let (st, inst) = create(&h, "echo", ptr::null());
    assert_eq!(st, Status::OK);
    assert!(!inst.is_null());
    let a = api();
    assert_eq!(h.events.borrow()[0], Ev::Send(TARGET.parse().unwrap(), b"hello".to_vec()));
    assert_eq!(unsafe { (a.next_deadline_ms.unwrap())(inst) }, 1100);

    // Early timeout: harmless. Then a real one: a resend.
    assert_eq!(unsafe { (a.on_timeout.unwrap())(inst, 1050) }, Status::OK);
    assert_eq!(h.events.borrow().len(), 1);
    assert_eq!(unsafe { (a.on_timeout.unwrap())(inst, 1100) }, Status::OK);
    assert_eq!(h.events.borrow()[1], Ev::Send(TARGET.parse().unwrap(), b"hello again".to_vec()));

    // A datagram from elsewhere is ignored; the right one completes the query.
    let other = Addr::from("127.0.0.1:4001".parse::<SocketAddr>().unwrap());
    assert_eq!(unsafe { (a.on_datagram.unwrap())(inst, 1200, &other, Bytes::new(b"x")) }, Status::IGNORED);
    let t = target();
    assert_eq!(unsafe { (a.on_datagram.unwrap())(inst, 1201, &t, Bytes::new(b"srv")) }, Status::OK);
    let ev = h.events.borrow();
    assert_eq!(ev[2], Ev::Server("name".into(), OwnedValue::Str("srv".into())));
    assert_eq!(ev[3], Ev::Server("players".into(), OwnedValue::Int(1)));
    assert_eq!(ev[4], Ev::Server("password".into(), OwnedValue::Bool(false)));
    assert_eq!(ev[5], Ev::Rule("mode".into(), "ctf".into()));
    assert_eq!(ev[6], Ev::Raw("game".into(), OwnedValue::Null));
    assert_eq!(
        ev[7],
        Ev::Player("p1".into(), Some(7), Some(30), vec![("clan".into(), OwnedValue::Str("[BZ]".into()))])
    );
    assert_eq!(ev[8], Ev::Master("10.0.0.1:27960".parse().unwrap()));
    assert_eq!(ev[9], Ev::Done(Status::OK, String::new()));
    assert_eq!(ev.len(), 10, "reports after done are dropped");
    drop(ev);

    // Finished: ignores datagrams, no deadline, timeouts are no-ops.
    assert_eq!(unsafe { (a.on_datagram.unwrap())(inst, 1300, &t, Bytes::new(b"srv")) }, Status::IGNORED);
    assert_eq!(unsafe { (a.next_deadline_ms.unwrap())(inst) }, u64::MAX);
    assert_eq!(unsafe { (a.on_timeout.unwrap())(inst, 5000) }, Status::OK);
    assert_eq!(h.events.borrow().len(), 10);
    unsafe { (a.destroy.unwrap())(inst) };
}

#[test]
fn timeout_path_reports_done_once() {
    let h = Host::default();
    let (_, inst) = create(&h, "echo", ptr::null());
    let a = api();
    unsafe {
        (a.on_timeout.unwrap())(inst, 1100);
        (a.on_timeout.unwrap())(inst, 1300);
        (a.on_timeout.unwrap())(inst, 1500);
    }
    let dones = h.events.borrow().iter().filter(|e| matches!(e, Ev::Done(..))).count();
    assert_eq!(dones, 1);
    assert!(h.events.borrow().contains(&Ev::Done(Status::TIMEOUT, "no reply".into())));
    unsafe { (a.destroy.unwrap())(inst) };
}

#[test]
fn bad_arguments_are_refused_not_trusted() {
    let h = Host::default();
    let a = api();
    let hapi = host_api(&h);
    let t = target();
    let mut inst: *mut Instance = ptr::null_mut();
    let create = a.create.unwrap();
    unsafe {
        // Null host, null target, null out, bad UTF-8 protocol, null text with a length.
        assert_eq!(create(ptr::null(), Str::new("echo"), &t, 1, 0, ptr::null(), &mut inst), Status::BAD_INPUT);
        assert_eq!(create(&hapi, Str::new("echo"), ptr::null(), 1, 0, ptr::null(), &mut inst), Status::BAD_INPUT);
        assert_eq!(create(&hapi, Str::new("echo"), &t, 1, 0, ptr::null(), ptr::null_mut()), Status::BAD_INPUT);
        let bad = [0xffu8, 0xfe];
        assert_eq!(
            create(&hapi, Str { ptr: bad.as_ptr(), len: 2 }, &t, 1, 0, ptr::null(), &mut inst),
            Status::BAD_INPUT
        );
        assert_eq!(
            create(&hapi, Str { ptr: ptr::null(), len: 4 }, &t, 1, 0, ptr::null(), &mut inst),
            Status::BAD_INPUT
        );
        // Unknown address family.
        let fam = Addr { family: 5, ..t };
        assert_eq!(create(&hapi, Str::new("echo"), &fam, 1, 0, ptr::null(), &mut inst), Status::BAD_INPUT);
        // Host table of another version, or too short, or with a null callback.
        let old = HostApi { abi_version: ABI_VERSION + 1, ..hapi };
        assert_eq!(create(&old, Str::new("echo"), &t, 1, 0, ptr::null(), &mut inst), Status::ABI_MISMATCH);
        let short = HostApi { struct_size: 16, ..hapi };
        assert_eq!(create(&short, Str::new("echo"), &t, 1, 0, ptr::null(), &mut inst), Status::ABI_MISMATCH);
        let holes = HostApi { report_rule: None, ..hapi };
        assert_eq!(create(&holes, Str::new("echo"), &t, 1, 0, ptr::null(), &mut inst), Status::BAD_INPUT);
        // Unknown protocol.
        assert_eq!(create(&hapi, Str::new("nope"), &t, 1, 0, ptr::null(), &mut inst), Status::UNKNOWN_PROTOCOL);
        assert!(inst.is_null());

        // Null instances everywhere.
        assert_eq!((a.on_datagram.unwrap())(ptr::null_mut(), 0, &t, Bytes::EMPTY), Status::BAD_INPUT);
        assert_eq!((a.on_timeout.unwrap())(ptr::null_mut(), 0), Status::BAD_INPUT);
        assert_eq!((a.next_deadline_ms.unwrap())(ptr::null()), u64::MAX);
        (a.destroy.unwrap())(ptr::null_mut());

        // Bad datagram arguments on a live instance.
        assert_eq!(create(&hapi, Str::new("echo"), &t, 1, 0, ptr::null(), &mut inst), Status::OK);
        assert_eq!((a.on_datagram.unwrap())(inst, 0, ptr::null(), Bytes::EMPTY), Status::BAD_INPUT);
        assert_eq!((a.on_datagram.unwrap())(inst, 0, &fam, Bytes::EMPTY), Status::BAD_INPUT);
        assert_eq!((a.on_datagram.unwrap())(inst, 0, &t, Bytes { ptr: ptr::null(), len: 3 }), Status::BAD_INPUT);
        assert_eq!(
            (a.on_datagram.unwrap())(inst, 0, &t, Bytes { ptr: bad.as_ptr(), len: usize::MAX }),
            Status::BAD_INPUT
        );
        (a.destroy.unwrap())(inst);
    }
}

#[test]
fn options_and_params_reach_the_engine() {
    let h = Host::default();
    let params = [AbiParam { key: Str::new("game"), value: Str::new("Warsow") }];
    let opts = QueryOptions {
        struct_size: std::mem::size_of::<QueryOptions>() as u32,
        timeout_ms: 0,
        retries: 1,
        max_log_level: LOG_DEBUG,
        seed: 42,
        params: params.as_ptr(),
        params_len: 1,
    };
    let (st, inst) = create(&h, "needs-param", &opts);
    assert_eq!(st, Status::OK);
    let t = target();
    let a = api();
    unsafe { (a.on_datagram.unwrap())(inst, 1, &t, Bytes::new(b"s")) };
    assert!(h.events.borrow().contains(&Ev::Raw("game".into(), OwnedValue::Str("Warsow".into()))));
    unsafe { (a.destroy.unwrap())(inst) };

    // Missing param: refused with UNSUPPORTED and a log line saying why.
    let h = Host::default();
    let (st, inst) = create(&h, "needs-param", ptr::null());
    assert_eq!(st, Status::UNSUPPORTED);
    assert!(inst.is_null());
    assert!(h.events.borrow().iter().any(|e| matches!(e, Ev::Log(_, m) if m.contains("game missing"))));

    // Options that lie about their params.
    let h = Host::default();
    let bad = QueryOptions { params: ptr::null(), params_len: 3, ..opts };
    assert_eq!(create(&h, "echo", &bad).0, Status::BAD_INPUT);
    let bad = QueryOptions { params_len: 1_000_000, ..opts };
    assert_eq!(create(&h, "echo", &bad).0, Status::BAD_INPUT);
    let bad = QueryOptions { struct_size: 8, ..opts };
    assert_eq!(create(&h, "echo", &bad).0, Status::BAD_INPUT);
}

#[test]
fn a_panicking_engine_returns_panicked_and_is_poisoned() {
    let a = api();
    let t = target();

    // Panic in create: PANICKED, no instance, a log line.
    let h = Host::default();
    let (st, inst) = create(&h, "panic-create", ptr::null());
    assert_eq!(st, Status::PANICKED);
    assert!(inst.is_null());
    assert!(h.events.borrow().iter().any(|e| matches!(e, Ev::Log(LOG_ERROR, m) if m.contains("boom in create"))));

    // Panic in on_datagram: PANICKED, then every call reports the poison, destroy still frees.
    let h = Host::default();
    let (_, inst) = create(&h, "echo", ptr::null());
    unsafe {
        assert_eq!((a.on_datagram.unwrap())(inst, 5, &t, Bytes::new(b"panic")), Status::PANICKED);
        assert_eq!((a.on_datagram.unwrap())(inst, 6, &t, Bytes::new(b"fine")), Status::PANICKED);
        assert_eq!((a.on_timeout.unwrap())(inst, 7), Status::PANICKED);
        assert_eq!((a.next_deadline_ms.unwrap())(inst), 0);
        (a.destroy.unwrap())(inst);
    }
    assert!(h.events.borrow().iter().any(|e| matches!(e, Ev::Log(LOG_ERROR, m) if m.contains("boom in on_datagram"))));
    assert!(!h.events.borrow().iter().any(|e| matches!(e, Ev::Server(..))));

    // Panic in next_deadline: deadline 0 (call me now), then on_timeout says PANICKED.
    let h = Host::default();
    let (_, inst) = create(&h, "panic-deadline", ptr::null());
    unsafe {
        assert_eq!((a.next_deadline_ms.unwrap())(inst), 0);
        assert_eq!((a.on_timeout.unwrap())(inst, 7), Status::PANICKED);
        (a.destroy.unwrap())(inst);
    }
}

#[test]
fn reentrant_calls_are_refused() {
    let h = Host::default();
    let (_, inst) = create(&h, "echo", ptr::null());
    *h.reenter.borrow_mut() = Some(inst);
    let t = target();
    let a = api();
    assert_eq!(unsafe { (a.on_datagram.unwrap())(inst, 5, &t, Bytes::new(b"reenter")) }, Status::OK);
    assert!(h.events.borrow().contains(&Ev::Reentered(Status::BAD_INPUT)));
    // The instance still works afterwards.
    assert_eq!(unsafe { (a.on_datagram.unwrap())(inst, 6, &t, Bytes::new(b"ok")) }, Status::OK);
    unsafe { (a.destroy.unwrap())(inst) };
}
