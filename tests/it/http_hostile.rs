//! Hostile HTTP clients against the shared HTTP layer, through a real `bzhead monitor --http` (its one game server
//! is an address where nothing answers: the HTTP side is what is tried): a client that pipelines and never reads,
//! pipelined requests past one read, streams held from one address, a stream held forever, `HEAD` on the stream, a
//! foreign `Host` on a loopback listener. Every bound asserted is a named constant of `bzhead::http`, documented in
//! docs/monitor.md and docs/web.md ("HTTP limits").

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use bzhead::http::{MAX_CONNECTIONS_PER_PEER, MAX_STREAMS, MAX_STREAMS_PER_PEER, STREAM_MAX_AGE_ENV};

use crate::monitor::{monitor_command, MonitorProc};
use crate::support::peak::{run_measured, Measured};
use crate::support::plugins::real_plugin_dir;
use crate::support::{free_port, TempDir, WAIT};

/// Peak resident memory allowed to a monitor that one client floods with pipelined requests it never reads, in KiB:
/// the monitor's own size (about 20 MiB in a debug build, the test process's size at the fork included) plus what
/// that client may cost ([`bzhead::http::MAX_QUEUED_OUT`], one response, the input buffer, the kernel's buffers),
/// with room to spare. On `main` the same 10 s flood took the monitor to 44 MiB and growing (19 MB of requests read).
const FLOOD_PEAK_KIB: u64 = 32 * 1024;

/// A `bzhead monitor` command serving HTTP on a free loopback port, one round a second of one server at an address
/// where nothing answers (the discard port: the loop only serves HTTP); its database and plugins live in the
/// returned directories.
fn monitor_cmd(extra: &[&str]) -> (Command, SocketAddr, TempDir, TempDir) {
    let dir = TempDir::new("http-hostile");
    let plugins = real_plugin_dir();
    let http = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let mut args: Vec<String> = ["--interval", "1", "--server", "quake3=127.0.0.1:9"].map(String::from).to_vec();
    args.extend(extra.iter().map(|s| s.to_string()));
    (monitor_command(&dir.join("m.db"), http, &plugins, &args), http, dir, plugins)
}

/// A running monitor (killed on drop) and its directories.
struct Monitor {
    addr: SocketAddr,
    _proc: MonitorProc,
    _dirs: (TempDir, TempDir),
}

impl Monitor {
    fn start(extra: &[&str], env: &[(&str, &str)]) -> Monitor {
        let (mut cmd, addr, dir, plugins) = monitor_cmd(extra);
        cmd.envs(env.iter().copied());
        let proc = MonitorProc::spawn(cmd, addr);
        Monitor { addr: proc.http, _proc: proc, _dirs: (dir, plugins) }
    }
}

/// A connection to `addr` from the loopback address `src` (the whole of 127.0.0.0/8 is this machine).
pub fn connect_from(src: Ipv4Addr, addr: SocketAddr) -> TcpStream {
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    sock.bind(&SocketAddr::from((src, 0)).into()).unwrap_or_else(|e| panic!("bind {src}: {e}"));
    sock.connect_timeout(&addr.into(), WAIT).unwrap_or_else(|e| panic!("connect {addr} from {src}: {e}"));
    sock.into()
}

/// Reads until the server closes or `limit` passes; true when it closed.
pub fn read_until_close(s: &mut TcpStream, buf: &mut Vec<u8>, limit: Duration) -> bool {
    let start = Instant::now();
    s.set_read_timeout(Some(Duration::from_millis(200))).expect("timeout");
    let mut chunk = vec![0u8; 64 * 1024];
    while start.elapsed() < limit {
        match s.read(&mut chunk) {
            Ok(0) => return true,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {}
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
    false
}

/// One request from `src` with `Connection: close`: status, head and body.
pub fn get_from(src: Ipv4Addr, addr: SocketAddr, method: &str, path: &str, host: &str) -> (u16, String, Vec<u8>) {
    let mut s = connect_from(src, addr);
    let req = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).expect("write");
    let mut buf = Vec::new();
    read_until_close(&mut s, &mut buf, WAIT);
    split(&buf)
}

fn split(buf: &[u8]) -> (u16, String, Vec<u8>) {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n").map_or(buf.len(), |p| p + 4);
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, head, buf[end..].to_vec())
}

const LOCAL: Ipv4Addr = Ipv4Addr::LOCALHOST;
const OTHER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

#[test]
fn pipelining_without_reading_keeps_the_monitor_bounded_and_the_loop_answers_others() {
    let (cmd, addr, _dir, _plugins) = monitor_cmd(&[]);
    // Measured to the end: the monitor is killed at the deadline, after the flood.
    let f = flood_measured(cmd, addr, "/api/servers", "/metrics", Duration::from_secs(10), Duration::from_secs(22));
    eprintln!(
        "flood: {} bytes of requests taken on {} connection(s); {} scrapes answered; monitor peak RSS {} KiB (bound \
         {FLOOD_PEAK_KIB} KiB)",
        f.sent, f.conns, f.answered, f.measured.max_rss_kib
    );
    assert!(f.measured.max_rss_kib < FLOOD_PEAK_KIB, "{}", f.measured.describe());
    // Backpressure: one connection, which the kernel buffers and the bounded queues stop after a few MB.
    assert_eq!(f.conns, 1, "the flood connection was closed");
    assert!(f.sent < 16 << 20, "{} bytes were taken: the monitor kept reading", f.sent);
}

/// What [`flood_measured`] saw.
pub struct Flooded {
    /// The process's exit and peak memory.
    pub measured: Measured,
    /// Bytes of requests the flood's sockets took.
    pub sent: u64,
    /// Connections the flood used (a new one each time the server closed one).
    pub conns: usize,
    /// Requests of another client answered `200` meanwhile (every one is asserted).
    pub answered: usize,
}

/// Runs `cmd` (serving HTTP on `addr`) measured to its end or `deadline`, floods it with pipelined `GET path`
/// ([`flood`]) for `flood_for` and meanwhile asks `probe` from another address twice a second, asserting `200`.
pub fn flood_measured(
    mut cmd: Command,
    addr: SocketAddr,
    path: &str,
    probe: &str,
    flood_for: Duration,
    deadline: Duration,
) -> Flooded {
    let run = thread::spawn(move || run_measured(&mut cmd, deadline));
    let start = Instant::now();
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(start.elapsed() < Duration::from_secs(15), "{addr} never listened");
        thread::sleep(Duration::from_millis(50));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let flooding = flood(addr, path, stop.clone());
    let mut answered = 0;
    let flood_start = Instant::now();
    while flood_start.elapsed() < flood_for {
        let asked = Instant::now();
        let (status, head, _) = get_from(OTHER, addr, "GET", probe, "localhost");
        assert_eq!(status, 200, "{probe} during the flood: {head}");
        assert!(asked.elapsed() < WAIT);
        answered += 1;
        thread::sleep(Duration::from_millis(500));
    }
    stop.store(true, Ordering::Relaxed);
    let (sent, conns) = flooding.join().expect("flood thread");
    let measured = run.join().expect("run thread");
    Flooded { measured, sent, conns, answered }
}

/// A client that pipelines `GET path` and never reads, as an attacker would: whole requests in writes of about
/// 4 KiB, 2 ms apart, on one connection (a new one when the server closes it; the old ones stay open, unread) until
/// `stop`. Returns the bytes the sockets took and the connections used.
pub fn flood(addr: SocketAddr, path: &str, stop: Arc<AtomicBool>) -> thread::JoinHandle<(u64, usize)> {
    let one = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let chunk = one.repeat(4096 / one.len()).into_bytes();
    thread::spawn(move || {
        let mut sent = 0u64;
        let mut held = Vec::new();
        while !stop.load(Ordering::Relaxed) && held.len() < 64 {
            let Ok(mut s) = TcpStream::connect(addr) else { break };
            let _ = s.set_nodelay(true);
            let _ = s.set_write_timeout(Some(Duration::from_millis(100)));
            let mut at = 0;
            while !stop.load(Ordering::Relaxed) {
                match s.write(&chunk[at..]) {
                    Ok(n) => {
                        sent += n as u64;
                        at = (at + n) % chunk.len();
                        if at == 0 {
                            thread::sleep(Duration::from_millis(2));
                        }
                    }
                    Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                    Err(_) => break,
                }
            }
            held.push(s);
        }
        (sent, held.len())
    })
}

#[test]
fn more_than_a_request_head_of_pipelined_requests_in_one_write_are_all_answered() {
    let m = Monitor::start(&[], &[]);
    const N: usize = 600;
    let mut reqs = String::new();
    for i in 0..N {
        let close = if i + 1 == N { "Connection: close\r\n" } else { "" };
        reqs += &format!("GET /metrics?n={i} HTTP/1.1\r\nHost: localhost\r\n{close}\r\n");
    }
    assert!(reqs.len() > 3 * bzhead::http::MAX_HEAD, "{} bytes", reqs.len());
    let mut s = connect_from(LOCAL, m.addr);
    s.write_all(reqs.as_bytes()).expect("write");
    let mut buf = Vec::new();
    let closed = read_until_close(&mut s, &mut buf, Duration::from_secs(20));
    let answers = buf.windows(15).filter(|w| *w == b"HTTP/1.1 200 OK").count();
    eprintln!("{} bytes of pipelined requests in one write: {answers} answers", reqs.len());
    assert_eq!(answers, N);
    assert!(closed, "the last request asked to close");
}

#[test]
fn streams_held_from_one_address_leave_room_for_a_scrape_from_it_and_from_others() {
    let m = Monitor::start(&[], &[]);
    // 128 event streams from one address, never closed.
    let mut streams = Vec::new();
    let (mut opened, mut refused) = (0, 0);
    for _ in 0..128 {
        let (s, ok) = ask_stream(LOCAL, m.addr);
        if ok {
            opened += 1;
        } else {
            refused += 1;
        }
        streams.push(s);
    }
    eprintln!("128 streams asked from one address: {opened} opened, {refused} refused");
    assert_eq!(opened, MAX_STREAMS_PER_PEER);
    assert_eq!(refused, 128 - MAX_STREAMS_PER_PEER);
    // A scrape from the same address and from another one.
    for src in [LOCAL, OTHER] {
        let (status, head, body) = get_from(src, m.addr, "GET", "/metrics", "localhost");
        assert_eq!(status, 200, "scrape from {src}: {head}");
        assert!(String::from_utf8_lossy(&body).contains("# TYPE"), "from {src}");
    }
    // Streams from many addresses: the listener's cap, after which short requests still get in.
    let mut more = 0;
    for i in 0..MAX_STREAMS {
        let (s, ok) = ask_stream(Ipv4Addr::new(127, 0, 1, (i / MAX_STREAMS_PER_PEER) as u8), m.addr);
        more += usize::from(ok);
        streams.push(s);
    }
    assert_eq!(opened + more, MAX_STREAMS, "the listener's streams");
    let last = Ipv4Addr::new(127, 0, 2, 1);
    assert!(!ask_stream(last, m.addr).1, "a stream past the listener's {MAX_STREAMS}");
    assert_eq!(get_from(last, m.addr, "GET", "/metrics", "localhost").0, 200, "a scrape with every stream taken");
    // Connections (not streams) from one address are capped too, and the others still get in.
    let held: Vec<TcpStream> = (0..MAX_CONNECTIONS_PER_PEER + 8).map(|_| connect_from(OTHER, m.addr)).collect();
    thread::sleep(Duration::from_millis(500));
    let (status, head, _) = get_from(Ipv4Addr::new(127, 0, 0, 3), m.addr, "GET", "/metrics", "localhost");
    assert_eq!(status, 200, "scrape from a third address: {head}");
    let (status, _, _) = get_from(OTHER, m.addr, "GET", "/metrics", "localhost");
    assert_eq!(status, 503, "the {MAX_CONNECTIONS_PER_PEER} connections of this address are taken");
    drop(held);
    drop(streams);
}

/// Asks `/api/events` from `src`: the connection, and whether it became a stream (`200`; else `503` or closed).
fn ask_stream(src: Ipv4Addr, addr: SocketAddr) -> (TcpStream, bool) {
    let mut s = connect_from(src, addr);
    let _ = s.write_all(b"GET /api/events HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n");
    s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    let mut buf = [0u8; 512];
    let n = match s.read(&mut buf) {
        Ok(n) => n,
        Err(_) => return (s, false),
    };
    let (status, head, _) = split(&buf[..n]);
    match status {
        200 => assert!(head.contains("text/event-stream"), "{head}"),
        0 | 503 => {}
        _ => panic!("stream answered {status}: {head}"),
    }
    (s, status == 200)
}

#[test]
fn an_idle_stream_ends_at_its_age_limit() {
    let m = Monitor::start(&[], &[(STREAM_MAX_AGE_ENV, "2")]);
    let mut s = connect_from(LOCAL, m.addr);
    s.write_all(b"GET /api/events HTTP/1.1\r\nHost: localhost\r\n\r\n").expect("write");
    let start = Instant::now();
    let mut buf = Vec::new();
    let closed = read_until_close(&mut s, &mut buf, Duration::from_secs(15));
    let took = start.elapsed();
    eprintln!("stream with a 2 s age limit closed: {closed}, after {took:?}");
    assert!(closed, "the stream was still open after {took:?}");
    assert!(split(&buf).1.contains("text/event-stream"));
    assert!(took >= Duration::from_millis(1500) && took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn head_on_the_event_stream_gets_the_head_and_no_body() {
    let m = Monitor::start(&[], &[]);
    let mut s = connect_from(LOCAL, m.addr);
    s.write_all(b"HEAD /api/events HTTP/1.1\r\nHost: localhost\r\n\r\n").expect("write");
    let mut buf = Vec::new();
    read_until_close(&mut s, &mut buf, Duration::from_secs(3));
    let (status, head, body) = split(&buf);
    assert_eq!(status, 200, "{head}");
    assert!(head.contains("text/event-stream"), "{head}");
    assert!(body.is_empty(), "HEAD got a body: {:?}", String::from_utf8_lossy(&body));
    // The connection goes on: a next request on it is answered.
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").expect("write");
    let mut more = Vec::new();
    assert!(read_until_close(&mut s, &mut more, WAIT));
    assert_eq!(split(&more).0, 200);
}

#[test]
fn a_foreign_host_is_refused_on_loopback_unless_allowed() {
    let m = Monitor::start(&[], &[]);
    for host in ["evil.example", "evil.example:8080", "127.0.0.1.evil.example"] {
        let (status, head, _) = get_from(LOCAL, m.addr, "GET", "/api/servers", host);
        assert_eq!(status, 421, "Host {host}: {head}");
    }
    for host in ["localhost".to_string(), m.addr.to_string(), format!("[::1]:{}", m.addr.port())] {
        let (status, head, _) = get_from(LOCAL, m.addr, "GET", "/api/servers", &host);
        assert_eq!(status, 200, "Host {host}: {head}");
    }
    drop(m);
    let m = Monitor::start(&["--allow-host", "view.example.org"], &[]);
    let (status, head, _) = get_from(LOCAL, m.addr, "GET", "/api/servers", "view.example.org");
    assert_eq!(status, 200, "an allowed name: {head}");
    assert_eq!(get_from(LOCAL, m.addr, "GET", "/api/servers", "evil.example").0, 421);
}
