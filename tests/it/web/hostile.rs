//! Hostile HTTP clients against `observe --web` while it watches a real game: each gets a clean refusal (a 4xx or a
//! close), the observer's memory stays bounded, and a client that stops reading does not slow the others.

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use super::{bots, http_get, rss_kb, split_response, web_observer, Spawned};
use crate::http_hostile::{connect_from, flood_measured, get_from, read_until_close};
use crate::support::{bzhead, free_port, Bzfs};

/// Sends `bytes` and reads the answer until the server closes (or 20 s pass).
fn exchange(addr: SocketAddr, bytes: &[u8]) -> (u16, String, Vec<u8>, bool) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    // The server may refuse (and close) before it has read everything: a failed write is part of the test.
    let _ = s.write_all(bytes);
    let mut buf = Vec::new();
    let closed = read_to_close(&mut s, &mut buf);
    let (status, head, body) = split_response(&buf);
    (status, head, body, closed)
}

/// Reads until EOF (true) or a timeout/error (false).
fn read_to_close(s: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 8192];
    loop {
        match s.read(&mut chunk) {
            Ok(0) => return true,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            // A reset after the refusal also ends the connection.
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

fn game() -> (Bzfs, Spawned, Spawned, SocketAddr) {
    let bzfs = Bzfs::builder().ctf().max_players("0,5,5,0,0,6").start();
    let b = bots("hunter", 4, &bzfs);
    let (obs, addr) = web_observer(&[bzfs.host_port()], &[]);
    (bzfs, b, obs, addr)
}

#[test]
fn oversized_unknown_and_upgrade_requests_are_refused_with_bounded_memory() {
    let (_bzfs, _bots, obs, addr) = game();
    let (status, _, body) = http_get(addr, "/");
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&body).contains("bzhead live view"));
    let base = rss_kb(obs.pid());

    // A request line longer than the head limit: 414, then the connection is closed.
    let long = format!("GET /{} HTTP/1.1\r\nHost: localhost\r\n\r\n", "a".repeat(64 * 1024));
    let (status, head, _, closed) = exchange(addr, long.as_bytes());
    assert_eq!(status, 414, "{head}");
    assert!(closed);
    // Headers past the limit (one huge, or too many): 431.
    let big = format!("GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: {}\r\n\r\n", "b".repeat(64 * 1024));
    assert_eq!(exchange(addr, big.as_bytes()).0, 431);
    let many: String = (0..200).map(|i| format!("X-H{i}: v\r\n")).collect();
    assert_eq!(exchange(addr, format!("GET / HTTP/1.1\r\n{many}\r\n").as_bytes()).0, 431);
    // Unknown paths and methods; bodies; not HTTP at all.
    assert_eq!(http_get(addr, "/etc/passwd").0, 404);
    assert_eq!(http_get(addr, "/api/state?server=99").0, 404);
    for m in ["POST", "DELETE", "PUT", "BREW"] {
        let (status, head, _, closed) = exchange(addr, format!("{m} / HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes());
        assert_eq!(status, 405, "{m}: {head}");
        assert!(head.contains("Allow: GET, HEAD") && closed, "{head}");
    }
    assert_eq!(exchange(addr, b"GET / HTTP/1.1\r\nContent-Length: 4\r\n\r\nabcd").0, 413);
    assert_eq!(exchange(addr, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n").0, 400);
    // A WebSocket handshake: refused, the view is read-only.
    let ws = "GET /events HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
              Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
    let (status, head, _, closed) = exchange(addr, ws.as_bytes());
    assert_eq!(status, 400, "{head}");
    assert!(closed && !head.contains("101"));

    // Memory: a thousand oversized requests later, the observer has not grown with them.
    for _ in 0..300 {
        let _ = exchange(addr, long.as_bytes());
        let _ = exchange(addr, big.as_bytes());
    }
    let after = rss_kb(obs.pid());
    eprintln!("observer RSS {base} kB before, {after} kB after 600 oversized requests");
    assert!(after < base + 16 * 1024, "RSS grew from {base} kB to {after} kB");
    // And it still serves.
    assert_eq!(http_get(addr, "/api/servers").0, 200);
}

#[test]
fn frames_from_the_browser_close_the_stream() {
    let (_bzfs, _bots, _obs, addr) = game();
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    s.write_all(b"GET /events?server=0 HTTP/1.1\r\nHost: localhost\r\n\r\n").expect("write");
    let mut buf = vec![0u8; 4096];
    let n = s.read(&mut buf).expect("stream head");
    assert!(String::from_utf8_lossy(&buf[..n]).contains("text/event-stream"));
    // A masked WebSocket text frame ("hello"): the client is not a plain reader any more.
    let _ = s.write_all(&[0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]);
    let mut rest = Vec::new();
    assert!(read_to_close(&mut s, &mut rest), "the stream stayed open after client frames");
}

#[test]
fn slow_and_never_finished_requests_time_out() {
    let (_bzfs, _bots, _obs, addr) = game();
    let start = Instant::now();
    // A request that never finishes: 408 after the request timeout (10 s), then closed.
    let (status, head, _, closed) = exchange(addr, b"GET / HTTP/1.1\r\nHost: localhost\r\n");
    assert_eq!(status, 408, "{head}");
    assert!(closed);
    let took = start.elapsed();
    assert!(took >= Duration::from_secs(9), "refused after {took:?}");
    // A client that drips a byte a second does not get more time.
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_millis(900))).expect("timeout");
    let start = Instant::now();
    let mut answer = Vec::new();
    for b in b"GET / HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".iter().cycle() {
        if s.write_all(&[*b]).is_err() {
            break;
        }
        let mut chunk = [0u8; 1024];
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&chunk[..n]),
            Err(_) => {}
        }
        if answer.windows(4).any(|w| w == b"\r\n\r\n") || start.elapsed() > Duration::from_secs(30) {
            break;
        }
    }
    let (status, head, _) = split_response(&answer);
    assert_eq!(status, 408, "after {:?}: {head}", start.elapsed());
    assert!(start.elapsed() < Duration::from_secs(20));
}

#[test]
fn too_many_connections_get_503_and_the_rest_still_works() {
    let (_bzfs, _bots, obs, addr) = game();
    // The cap is 128 connections; open 140 that send nothing (quickly: an idle connection is closed after the
    // 10 s request timeout), then see which ones were answered. They come from five addresses, 28 each: one
    // address may hold only `MAX_CONNECTIONS_PER_PEER` (32).
    let conns: Vec<TcpStream> = (0..140u8).map(|i| connect_from(Ipv4Addr::new(127, 0, 0, 1 + i / 28), addr)).collect();
    std::thread::sleep(Duration::from_secs(2));
    let mut held = Vec::new();
    let mut refused = 0;
    for mut s in conns {
        s.set_nonblocking(true).expect("nonblocking");
        let mut buf = [0u8; 512];
        match s.read(&mut buf) {
            Ok(n) if n > 0 => {
                let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                assert!(text.starts_with("HTTP/1.1 503 "), "{text}");
                refused += 1;
            }
            _ => held.push(s),
        }
    }
    assert_eq!(held.len(), 128, "held {} connections, {refused} refused", held.len());
    assert_eq!(refused, 12);
    drop(held);
    // Once they are gone, requests are served again.
    let start = Instant::now();
    loop {
        let (status, _, _) = http_get(addr, "/api/servers");
        if status == 200 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "still refused: {status}\n{}", obs.stderr());
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Counts the `event: state` lines a reading stream client sees.
fn read_stream(s: &mut TcpStream, limit: Duration) -> (usize, usize) {
    let start = Instant::now();
    let mut states = 0;
    let mut bytes = 0;
    let mut buf = vec![0u8; 65536];
    let mut tail = Vec::new();
    while start.elapsed() < limit {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                bytes += n;
                tail.extend_from_slice(&buf[..n]);
                states += tail.windows(12).filter(|w| *w == b"event: state").count();
                let keep = tail.len().min(11);
                tail.drain(..tail.len() - keep);
            }
            Err(_) => {}
        }
    }
    (states, bytes)
}

#[test]
fn a_stalled_viewer_is_dropped_and_does_not_slow_the_others() {
    // Twenty bots, so that states come fast enough to fill the stalled viewer's queue (512 KiB) and the kernel's
    // buffers in well under a minute (a state holds only what changed: about 25 KB/s with twenty bots).
    let bzfs = Bzfs::builder().ctf().max_players("0,10,10,0,0,6").start();
    let _bots = bots("hunter,capper", 20, &bzfs);
    let mut cmd = crate::support::bzhead(["observe", "--web", "127.0.0.1:0", "--no-cache", &bzfs.host_port()]);
    cmd.env("BZHEAD_LOG", "bzhead::reactor::http=debug");
    let obs = Spawned::start(cmd);
    assert!(obs.wait_for(false, Duration::from_secs(20), |s| s.contains("web view on http://")), "{}", obs.stderr());
    let err = obs.stderr();
    let addr: SocketAddr =
        err.split("web view on http://").nth(1).and_then(|r| r.split('/').next()).unwrap().parse().unwrap();
    // The stalled viewer: a tiny receive buffer, and it never reads.
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    sock.set_recv_buffer_size(4096).expect("rcvbuf");
    sock.connect(&addr.into()).expect("connect");
    let mut stalled: TcpStream = sock.into();
    stalled.write_all(b"GET /events?server=0 HTTP/1.1\r\nHost: localhost\r\n\r\n").expect("write");
    // A normal viewer that reads.
    let mut reader = TcpStream::connect(addr).expect("connect");
    reader.set_read_timeout(Some(Duration::from_millis(200))).expect("timeout");
    reader.write_all(b"GET /events?server=0 HTTP/1.1\r\nHost: localhost\r\n\r\n").expect("write");
    let base = rss_kb(obs.pid());
    // Until the stalled one is dropped, the reader keeps getting states at the usual pace.
    let start = Instant::now();
    let mut windows = Vec::new();
    while start.elapsed() < Duration::from_secs(95) && !obs.stderr().contains("send queue full") {
        windows.push(read_stream(&mut reader, Duration::from_secs(2)));
    }
    let dropped_after = start.elapsed();
    assert!(obs.stderr().contains("send queue full"), "the stalled viewer was never dropped\n{}", obs.stderr());
    let after = windows.iter().map(|w| w.0).collect::<Vec<_>>();
    let (late_states, late_bytes) = read_stream(&mut reader, Duration::from_secs(4));
    eprintln!(
        "stalled viewer dropped after {dropped_after:?}; the reader's states per 2 s meanwhile: {after:?}; \
         afterwards {late_states} in 4 s ({late_bytes} bytes)"
    );
    // The reader was never starved: every 2-second window had states (the push interval is 50 ms).
    assert!(after.iter().all(|&n| n >= 5), "{after:?}");
    assert!(late_states >= 10);
    let rss = rss_kb(obs.pid());
    assert!(rss < base + 16 * 1024, "RSS {base} kB -> {rss} kB");
    // The stalled socket is closed by the server: reading it now ends (after the bytes that were in flight).
    stalled.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let mut sink = Vec::new();
    assert!(read_to_close(&mut stalled, &mut sink), "the stalled stream is still open");
}

/// Peak resident memory allowed to an observer with a web view that one client floods with pipelined `GET /app.js`
/// it never reads, in KiB: the observer's own size (about 30 MiB in a debug build, with one game) plus what that
/// client may cost (`bzhead::http::MAX_QUEUED_OUT`, one response, the input buffer; `/app.js` itself is shared,
/// not copied), with room to spare. On `main` the same 8 s flood took the observer to 310 MiB.
const FLOOD_PEAK_KIB: u64 = 64 * 1024;

#[test]
fn pipelining_app_js_without_reading_keeps_the_view_bounded_and_it_answers_others() {
    let bzfs = Bzfs::builder().start();
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let cmd = bzhead(["observe", "--web", &addr.to_string(), "--no-cache", "--for", "16", &bzfs.host_port()]);
    let f = flood_measured(cmd, addr, "/app.js", "/api/servers", Duration::from_secs(8), Duration::from_secs(30));
    eprintln!(
        "web view flooded with /app.js: {} bytes of requests taken on {} connection(s); {} other requests answered; \
         peak RSS {} KiB (bound {FLOOD_PEAK_KIB} KiB)",
        f.sent, f.conns, f.answered, f.measured.max_rss_kib
    );
    assert!(f.measured.max_rss_kib < FLOOD_PEAK_KIB, "{}", f.measured.describe());
    assert_eq!(f.conns, 1, "the flood connection was closed");
}

#[test]
fn head_on_the_stream_foreign_hosts_and_the_allow_list() {
    let bzfs = Bzfs::builder().start();
    let (_obs, addr) = web_observer(&[bzfs.host_port()], &["--allow-host", "view.example.org"]);
    // HEAD on the stream: the head, no body.
    let (status, head, body) = get_from(Ipv4Addr::LOCALHOST, addr, "HEAD", "/events?server=0", "localhost");
    assert_eq!(status, 200, "{head}");
    assert!(body.is_empty(), "HEAD got a body: {:?}", String::from_utf8_lossy(&body));
    // A foreign Host on this loopback listener (DNS rebinding): refused; the allowed name is served.
    let (status, head, _) = get_from(Ipv4Addr::LOCALHOST, addr, "GET", "/api/servers", "evil.example");
    assert_eq!(status, 421, "{head}");
    let (status, head, _) = get_from(Ipv4Addr::LOCALHOST, addr, "GET", "/api/servers", "view.example.org:443");
    assert_eq!(status, 200, "{head}");
    // The stream from an allowed name is a stream.
    let mut s = connect_from(Ipv4Addr::LOCALHOST, addr);
    s.write_all(b"GET /events?server=0 HTTP/1.1\r\nHost: view.example.org\r\n\r\n").expect("write");
    let mut buf = Vec::new();
    read_until_close(&mut s, &mut buf, Duration::from_secs(2));
    assert!(String::from_utf8_lossy(&buf).contains("text/event-stream"));
}
