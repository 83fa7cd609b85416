use super::*;

fn t0() -> Instant {
    Instant::now()
}

fn text(c: &HttpConn) -> String {
    String::from_utf8_lossy(c.pending()).into_owned()
}

#[test]
fn a_request_in_pieces_is_partial_then_complete() {
    let l = Limits::default();
    let full = b"GET /api/state?server=1&x=%41+b HTTP/1.1\r\nHost: a\r\nX-Y: z\r\n\r\n";
    for cut in 0..full.len() {
        assert_eq!(parse_request(&full[..cut], &l), Ok(Parsed::Partial), "cut {cut}");
    }
    let Ok(Parsed::Complete(r, n)) = parse_request(full, &l) else { panic!() };
    assert_eq!(n, full.len());
    assert_eq!(r.method, Method::Get);
    assert_eq!(r.path, "/api/state");
    assert_eq!(r.query_param("server").as_deref(), Some("1"));
    assert_eq!(r.query_param("x").as_deref(), Some("A b"));
    assert_eq!(r.query_param("nope"), None);
    assert_eq!(r.header("x-y"), Some("z"));
    assert!(r.keep_alive());
}

#[test]
fn refusals_have_their_status() {
    let l = Limits { max_head: 64, max_headers: 2, ..Limits::default() };
    let long_line = format!("GET /{} HTTP/1.1\r\n", "a".repeat(100));
    assert_eq!(parse_request(long_line.as_bytes(), &l), Err(RequestError::UriTooLong));
    let many = b"GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
    assert_eq!(parse_request(many, &l), Err(RequestError::HeadTooLarge));
    let big_head = format!("GET / HTTP/1.1\r\nA: {}\r\n", "x".repeat(80));
    assert_eq!(parse_request(big_head.as_bytes(), &l), Err(RequestError::HeadTooLarge));
    assert_eq!(parse_request(b"POST / HTTP/1.1\r\n\r\n", &l).unwrap_err().status(), 405);
    assert_eq!(parse_request(b"GET / HTTP/1.1\r\nContent-Length: 5\r\n\r\n", &l).unwrap_err().status(), 413);
    assert_eq!(parse_request(b"\x16\x03\x01garbage\r\n\r\n", &l).unwrap_err().status(), 400);
}

#[test]
fn a_connection_answers_keeps_alive_and_reads_pipelined_requests() {
    let now = t0();
    let mut c = HttpConn::new(now, Limits::default());
    c.handle_data(now, b"GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(c.poll_request().map(|r| r.path).as_deref(), Some("/a"));
    assert_eq!(c.poll_request(), None, "one request at a time");
    c.respond(now, &Response::json("{}"), false);
    assert_eq!(c.poll_request().map(|r| r.path).as_deref(), Some("/b"));
    c.respond(now, &Response::json("[]"), false);
    let out = text(&c);
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    assert!(out.contains("Connection: keep-alive") && out.ends_with("Connection: close\r\n\r\n[]"), "{out}");
    let n = c.pending().len();
    c.consumed(now, n);
    assert_eq!(c.close_reason(), Some(&CloseReason::Done));
}

#[test]
fn a_bad_request_is_answered_then_closed() {
    let now = t0();
    let mut c = HttpConn::new(now, Limits::default());
    c.handle_data(now, b"DELETE / HTTP/1.1\r\n\r\n");
    assert!(text(&c).starts_with("HTTP/1.1 405 Method Not Allowed\r\n"), "{}", text(&c));
    assert!(text(&c).contains("Allow: GET, HEAD"));
    assert_eq!(c.close_reason(), None, "the refusal is written first");
    let n = c.pending().len();
    c.consumed(now, n);
    assert!(matches!(c.close_reason(), Some(CloseReason::Refused(_))));
}

#[test]
fn an_endless_head_stays_bounded_and_is_refused() {
    let now = t0();
    let l = Limits::default();
    let mut c = HttpConn::new(now, l);
    c.handle_data(now, b"GET / HTTP/1.1\r\n");
    for _ in 0..1000 {
        c.handle_data(now, b"X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
        assert!(c.buffered_in() <= l.max_head + 1);
    }
    assert!(text(&c).starts_with("HTTP/1.1 431 "), "{}", text(&c));
}

#[test]
fn slow_requests_and_idle_connections_time_out() {
    let now = t0();
    let l = Limits::default();
    let mut c = HttpConn::new(now, l);
    c.handle_data(now, b"GET / HT");
    assert_eq!(c.deadline(), Some(now + l.request_timeout));
    c.handle_timeout(now + l.request_timeout - Duration::from_millis(1));
    assert!(c.pending().is_empty());
    c.handle_timeout(now + l.request_timeout);
    assert!(text(&c).starts_with("HTTP/1.1 408 "), "{}", text(&c));
    // Nobody reads the refusal: the linger ends it.
    let later = now + l.request_timeout + l.linger + l.linger;
    c.handle_timeout(later);
    assert!(c.close_reason().is_some());

    let mut idle = HttpConn::new(now, l);
    idle.handle_data(now, b"GET / HTTP/1.1\r\n\r\n");
    let _ = idle.poll_request();
    idle.respond(now, &Response::json("{}"), false);
    assert_eq!(idle.deadline(), Some(now + l.idle_timeout));
    idle.handle_timeout(now + l.idle_timeout);
    assert_eq!(idle.close_reason(), Some(&CloseReason::Idle));
}

#[test]
fn streams_refuse_client_bytes_and_drop_a_reader_that_stopped() {
    let now = t0();
    let l = Limits { max_stream_queue: 100, ..Limits::default() };
    let mut c = HttpConn::new(now, l);
    c.handle_data(now, b"GET /events HTTP/1.1\r\n\r\n");
    assert!(c.poll_request().is_some());
    c.start_stream(now, &sse_head(1000), false);
    let head = c.pending().len();
    c.consumed(now, head);
    assert!(c.push(now, &[b'x'; 60]));
    assert!(!c.push(now, &[b'x'; 60]), "past the bound");
    assert_eq!(c.close_reason(), Some(&CloseReason::SendQueueFull));
    assert_eq!(c.queued_out(), 60);

    let mut ws = HttpConn::new(now, l);
    ws.handle_data(now, b"GET /events HTTP/1.1\r\n\r\n");
    let _ = ws.poll_request();
    ws.start_stream(now, &sse_head(1000), false);
    ws.handle_data(now, &[0x81, 0x85, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert_eq!(ws.close_reason(), Some(&CloseReason::ClientSentOnStream));
}

#[test]
fn sse_events_split_lines() {
    let e = String::from_utf8(sse_event(Some("state"), Some(7), "a\nb\r\nc")).unwrap();
    assert_eq!(e, "event: state\nid: 7\ndata: a\ndata: b\ndata: c\n\n");
    assert_eq!(html_escape("<b a=\"1\">&'"), "&lt;b a=&quot;1&quot;&gt;&amp;&#39;");
}

/// Writes everything pending, as a socket that takes it all would.
fn drain(c: &mut HttpConn, now: Instant) -> Vec<u8> {
    let mut out = Vec::new();
    while !c.pending().is_empty() {
        let n = c.pending().len();
        out.extend_from_slice(c.pending());
        c.consumed(now, n);
    }
    out
}

/// Answers every request the connection hands out with `body`, without writing anything.
fn answer_all(c: &mut HttpConn, now: Instant, body: &Body) -> usize {
    let mut n = 0;
    while let Some(r) = c.poll_request() {
        c.respond(now, &Response::shared(200, "text/plain", body.clone()), r.method == Method::Head);
        n += 1;
    }
    n
}

#[test]
fn pipelined_requests_stop_being_parsed_while_the_output_is_past_its_bound() {
    let now = t0();
    let l = Limits::default();
    let mut c = HttpConn::new(now, l);
    let body = Body::from(vec![b'x'; 20 * 1024]);
    let one = b"GET /api/servers HTTP/1.1\r\nHost: localhost\r\n\r\n";
    let all: Vec<u8> = one.iter().copied().cycle().take(one.len() * 1000).collect();
    // The client sends everything and reads nothing: the connection takes what it has room for, answers until its
    // output passes the bound, then takes nothing more.
    let mut offered = &all[..];
    let mut answered = 0;
    for _ in 0..1000 {
        let room = c.read_room();
        if room == 0 || offered.is_empty() {
            break;
        }
        let taken = c.handle_data(now, &offered[..offered.len().min(room)]);
        assert!(taken <= room);
        offered = &offered[taken..];
        answered += answer_all(&mut c, now, &body);
        assert!(c.buffered_in() <= l.max_head + 1);
    }
    assert_eq!(c.read_room(), 0, "not read while the output is past the bound");
    assert!(c.queued_out() <= MAX_QUEUED_OUT + 20 * 1024 + 256, "{} bytes queued", c.queued_out());
    assert!(c.queued_out() > MAX_QUEUED_OUT);
    assert_eq!(answered, 4, "64 KiB of 20 KiB answers, and the one that passes the bound");
    assert_eq!(c.poll_request(), None);
    // The client reads: the rest is parsed, and every request is answered in the end, none lost.
    while !offered.is_empty() || c.state() == ConnState::Answering || !c.pending().is_empty() {
        drain(&mut c, now);
        answered += answer_all(&mut c, now, &body);
        let room = c.read_room();
        if room > 0 && !offered.is_empty() {
            let taken = c.handle_data(now, &offered[..offered.len().min(room)]);
            offered = &offered[taken..];
            answered += answer_all(&mut c, now, &body);
        }
    }
    assert_eq!(answered, 1000);
    assert_eq!(c.close_reason(), None);
}

#[test]
fn more_than_a_head_of_pipelined_requests_in_one_read_are_all_answered() {
    let now = t0();
    let mut c = HttpConn::new(now, Limits::default());
    let reqs: Vec<u8> = (0..800).flat_map(|i| format!("GET /r{i} HTTP/1.1\r\n\r\n").into_bytes()).collect();
    assert!(reqs.len() > 2 * MAX_HEAD, "{}", reqs.len());
    let mut offered = &reqs[..];
    let mut paths = Vec::new();
    while paths.len() < 800 {
        let taken = c.handle_data(now, offered);
        assert!(taken <= MAX_HEAD + 1, "the input buffer is bounded");
        offered = &offered[taken..];
        while let Some(r) = c.poll_request() {
            paths.push(r.path);
            c.respond(now, &Response::json("{}"), false);
            drain(&mut c, now);
        }
    }
    assert_eq!(paths.len(), 800);
    assert_eq!(paths[799], "/r799");
    assert!(offered.is_empty());
}

#[test]
fn a_reader_that_reads_nothing_is_closed_after_the_idle_time() {
    let now = t0();
    let l = Limits::default();
    let mut c = HttpConn::new(now, l);
    c.handle_data(now, b"GET / HTTP/1.1\r\n\r\n");
    let _ = c.poll_request();
    c.respond(now, &Response::new(200, "text/plain", vec![0u8; 100_000]), false);
    c.consumed(now, 1000);
    let later = now + Duration::from_secs(5);
    c.consumed(later, 1000);
    // Progress moves the deadline; none for the idle time closes the connection.
    assert_eq!(c.deadline(), Some(later + l.idle_timeout));
    c.handle_timeout(later + l.idle_timeout - Duration::from_millis(1));
    assert_eq!(c.close_reason(), None);
    c.handle_timeout(later + l.idle_timeout);
    assert_eq!(c.close_reason(), Some(&CloseReason::Idle), "between requests: idle");

    // A stream whose reader stopped is judged by its queue (dropped when full) and ended by its age, not timed.
    let mut s = HttpConn::new(now, l);
    s.handle_data(now, b"GET /events HTTP/1.1\r\n\r\n");
    let _ = s.poll_request();
    assert!(s.start_stream(now, &sse_head(1000), false));
    drain(&mut s, now);
    assert!(s.push(later, b": keepalive\n\n"));
    assert_eq!(s.deadline(), Some(now + l.max_stream_age));
    s.handle_timeout(later + l.idle_timeout);
    assert_eq!(s.close_reason(), None);
}

#[test]
fn a_stream_ends_at_its_age_and_head_gets_no_body() {
    let now = t0();
    let l = Limits { max_stream_age: Duration::from_secs(3), ..Limits::default() };
    let mut c = HttpConn::new(now, l);
    c.handle_data(now, b"GET /events HTTP/1.1\r\n\r\n");
    let _ = c.poll_request();
    assert!(c.start_stream(now, &sse_head(1000), false));
    drain(&mut c, now);
    assert!(c.push(now, b"data: 1\n\n"));
    drain(&mut c, now);
    assert_eq!(c.deadline(), Some(now + Duration::from_secs(3)));
    c.handle_timeout(now + Duration::from_secs(3));
    assert_eq!(c.close_reason(), Some(&CloseReason::StreamAge));

    let mut h = HttpConn::new(now, l);
    h.handle_data(now, b"HEAD /events HTTP/1.1\r\n\r\nGET /next HTTP/1.1\r\n\r\n");
    let _ = h.poll_request();
    assert!(!h.start_stream(now, &sse_head(1000), true), "HEAD is not a stream");
    let out = String::from_utf8(drain(&mut h, now)).unwrap();
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n") && out.ends_with("\r\n\r\n"), "{out:?}");
    assert!(!out.contains("retry:"));
    assert!(!h.push(now, b"data: x\n\n"));
    assert_eq!(h.poll_request().map(|r| r.path).as_deref(), Some("/next"), "the connection goes on");
}

#[test]
fn a_shared_body_is_queued_without_a_copy() {
    let now = t0();
    let big: std::sync::Arc<[u8]> = vec![7u8; 1 << 20].into();
    let mut c = HttpConn::new(now, Limits::default());
    c.handle_data(now, b"GET /map.svg HTTP/1.1\r\n\r\n");
    let _ = c.poll_request();
    c.respond(now, &Response::shared(200, "image/svg+xml", big.clone()), false);
    assert_eq!(std::sync::Arc::strong_count(&big), 2, "the connection holds the body itself");
    assert_eq!(c.queued_out() - (1 << 20), c.pending().len(), "the head, then the body");
    let out = drain(&mut c, now);
    assert!(out.ends_with(&big[big.len() - 10..]));
    assert_eq!(std::sync::Arc::strong_count(&big), 1);
    assert_eq!(Response::new(200, "a", "b").body, Body::from_static(b"b"));
}

#[test]
fn host_check_allows_loopback_names_and_the_allow_list() {
    for h in ["localhost", "LOCALHOST:8080", "127.0.0.1", "127.1.2.3:80", "[::1]", "[::1]:8080", "localhost."] {
        assert!(host_is_loopback(h), "{h}");
        assert!(host_allowed(Some(h), &[]), "{h}");
    }
    for h in ["evil.example", "evil.example:8080", "127.0.0.1.evil.example", "[::2]", "10.0.0.1", "", "localhostx"] {
        assert!(!host_allowed(Some(h), &[]), "{h}");
    }
    assert!(host_allowed(None, &[]), "HTTP/1.0 without Host");
    let allow = vec!["View.Example.org".to_string()];
    assert!(host_allowed(Some("view.example.org:443"), &allow));
    assert!(!host_allowed(Some("other.example.org"), &allow));
    assert!(host_allowed(Some("anything"), &["*".to_string()]));
}

#[test]
fn peers_count_by_address_and_ipv6_by_its_64() {
    let a: IpAddr = "2001:db8:1:2:3:4:5:6".parse().unwrap();
    let b: IpAddr = "2001:db8:1:2:ffff::1".parse().unwrap();
    assert_eq!(peer_key(a), peer_key(b));
    let mapped: IpAddr = "::ffff:10.1.2.3".parse().unwrap();
    assert_eq!(peer_key(mapped), "10.1.2.3".parse::<IpAddr>().unwrap());
    // Streams cannot take every connection of a listener nor of a peer: short requests keep room.
    let l = Limits::default();
    assert!(l.max_streams < l.max_connections && l.max_streams_per_peer < l.max_connections_per_peer);
    assert!(l.max_connections_per_peer < l.max_connections);
}

#[test]
fn bodies_only_on_body_routes_and_bounded() {
    let l = Limits { max_body: 16, body_routes: &["/db"], ..Limits::default() };
    let post = b"POST /db/?nocache=1 HTTP/1.1\r\nContent-Length: 10\r\n\r\naction=ADD";
    for cut in 0..post.len() {
        assert_eq!(parse_request(&post[..cut], &l), Ok(Parsed::Partial), "cut {cut}");
    }
    let Ok(Parsed::Complete(r, n)) = parse_request(post, &l) else { panic!() };
    assert_eq!((r.method, n, r.form_param("action").as_deref()), (Method::Post, post.len(), Some("ADD")));
    assert_eq!(r.form_param("nocache").as_deref(), Some("1"));
    // Too large, chunked, elsewhere, or POST elsewhere: refused.
    let big = b"POST /db/ HTTP/1.1\r\nContent-Length: 17\r\n\r\n";
    assert_eq!(parse_request(big, &l).unwrap_err().status(), 413);
    let chunked = b"POST /db/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_eq!(parse_request(chunked, &l).unwrap_err().status(), 413);
    assert_eq!(parse_request(b"GET /api HTTP/1.1\r\nContent-Length: 2\r\n\r\nab", &l).unwrap_err().status(), 413);
    assert_eq!(parse_request(b"POST /api HTTP/1.1\r\n\r\n", &l).unwrap_err().status(), 405);
    // The connection holds a head and a body, no more.
    let mut c = HttpConn::new(t0(), l);
    assert_eq!(c.read_room(), l.max_head + l.max_body + 1);
    c.handle_data(t0(), post);
    assert_eq!(c.poll_request().map(|r| r.body), Some(b"action=ADD".to_vec()));
}
