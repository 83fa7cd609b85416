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
    c.start_stream(&sse_head(1000));
    let head = c.pending().len();
    c.consumed(now, head);
    assert!(c.push(&[b'x'; 60]));
    assert!(!c.push(&[b'x'; 60]), "past the bound");
    assert_eq!(c.close_reason(), Some(&CloseReason::SendQueueFull));
    assert_eq!(c.queued_out(), 60);

    let mut ws = HttpConn::new(now, l);
    ws.handle_data(now, b"GET /events HTTP/1.1\r\n\r\n");
    let _ = ws.poll_request();
    ws.start_stream(&sse_head(1000));
    ws.handle_data(now, &[0x81, 0x85, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert_eq!(ws.close_reason(), Some(&CloseReason::ClientSentOnStream));
}

#[test]
fn sse_events_split_lines() {
    let e = String::from_utf8(sse_event(Some("state"), Some(7), "a\nb\r\nc")).unwrap();
    assert_eq!(e, "event: state\nid: 7\ndata: a\ndata: b\ndata: c\n\n");
    assert_eq!(html_escape("<b a=\"1\">&'"), "&lt;b a=&quot;1&quot;&gt;&amp;&#39;");
}
