//! A small sans-IO HTTP/1.1 server side, for read-only views served by the one reactor.
//!
//! This module never touches a socket or the clock. [`HttpConn`] is the state machine of one connection: bytes read
//! from the peer go in with [`HttpConn::handle_data`] (parsed with `httparse`: complete, partial or invalid), a
//! complete request comes out of [`HttpConn::poll_request`], the application answers it with
//! [`HttpConn::respond`] (a whole [`Response`]) or turns the connection into a Server-Sent Events stream with
//! [`HttpConn::start_stream`] and [`HttpConn::push`], and the bytes to write come out of
//! [`HttpConn::pending`] / [`HttpConn::consumed`]. [`HttpConn::deadline`] says when the connection must be closed
//! if nothing happens (a request that never finishes, an idle keep-alive connection, a reader that stopped reading,
//! a stream at its age limit).
//!
//! The reactor (`crate::reactor`, its `http` part) owns the listener and the streams, reads a connection only as
//! far as [`HttpConn::read_room`] allows (nothing while it is 0: the client meets TCP backpressure, no byte is ever
//! dropped), registers `WRITABLE` only while [`HttpConn::pending`] is not empty, caps connections and streams per
//! listener and per peer address, checks `Host` on loopback listeners ([`host_allowed`]) and hands requests to the
//! application as [`crate::reactor::HttpEvent`]s.
//!
//! Everything a peer controls is bounded ([`Limits`], defaults in the constants below):
//! - the request head (line and headers together, [`MAX_HEAD`] bytes) and the number of headers
//!   ([`MAX_HEADERS`]); the input buffer holds at most [`MAX_HEAD`] + 1 bytes, pipelined requests included, and
//!   the socket is not read while it is full;
//! - the output of one connection: no next pipelined request is parsed, and the socket is not read, while more than
//!   [`MAX_QUEUED_OUT`] bytes wait to be written. What a client that does not read costs is therefore at most
//!   [`MAX_HEAD`] + 1 + [`MAX_QUEUED_OUT`] bytes plus one response (a [`Body::shared`] body is shared between all
//!   the connections sending it, not copied), plus the kernel's send buffer; and after [`Limits::idle_timeout`]
//!   without a byte read by the client, the connection is closed ([`CloseReason::Stalled`]; a stream is judged by
//!   its queue instead);
//! - a stream's queue ([`MAX_STREAM_QUEUE`]; a push beyond it drops the connection) and its age
//!   ([`MAX_STREAM_AGE`], then it is closed: browsers reconnect by themselves, with `Last-Event-ID`);
//! - the time a request may take ([`REQUEST_TIMEOUT`]) and an idle keep-alive connection may stay
//!   ([`IDLE_TIMEOUT`]);
//! - connections and streams per listener ([`MAX_CONNECTIONS`], [`MAX_STREAMS`]) and per peer address
//!   ([`MAX_CONNECTIONS_PER_PEER`], [`MAX_STREAMS_PER_PEER`]; an IPv6 peer counts by its /64): streams take at most
//!   half of the connections, so one address holding streams leaves room for short requests (a scrape) from it and
//!   from everyone else.
//!
//! Requests with a body are refused (the views are read-only) except on the routes a listener names in
//! [`Limits::body_routes`] (the masters' registration endpoints): there `POST` is accepted with a body of at most
//! [`Limits::max_body`] bytes, sent with a `Content-Length` (a chunked body is refused), and the input buffer is
//! then at most [`Limits::max_head`] + [`Limits::max_body`] + 1 bytes. Any byte a client sends on a stream (for
//! example WebSocket frames) is refused too: the stream is closed. `HEAD` on a stream gets the stream's head and no body.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Default [`Limits::max_connections`]: connections open at once per listener.
pub const MAX_CONNECTIONS: usize = 128;
/// Default [`Limits::max_connections_per_peer`]: connections open at once from one peer address.
pub const MAX_CONNECTIONS_PER_PEER: usize = 32;
/// Default [`Limits::max_streams`]: streams at once per listener (half the connections: the rest stay for short
/// requests).
pub const MAX_STREAMS: usize = 64;
/// Default [`Limits::max_streams_per_peer`]: streams at once from one peer address.
pub const MAX_STREAMS_PER_PEER: usize = 8;
/// Default [`Limits::max_head`]: bytes of a request head; also the input buffer (plus one byte).
pub const MAX_HEAD: usize = 8 * 1024;
/// Default [`Limits::max_headers`].
pub const MAX_HEADERS: usize = 32;
/// Default [`Limits::max_queued_out`]: bytes queued for a connection past which no next request is parsed and the
/// socket is not read.
pub const MAX_QUEUED_OUT: usize = 64 * 1024;
/// Default [`Limits::max_stream_queue`].
pub const MAX_STREAM_QUEUE: usize = 512 * 1024;
/// Default [`Limits::max_stream_age`]: a stream is closed this long after it started.
pub const MAX_STREAM_AGE: Duration = Duration::from_secs(10 * 60);
/// Default [`Limits::request_timeout`].
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Default [`Limits::idle_timeout`] (also the time a client may go without reading a queued byte).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Default [`Limits::linger`].
pub const LINGER: Duration = Duration::from_secs(2);
/// The environment variable that overrides [`Limits::max_stream_age`] in [`Limits::from_env`] (seconds, a
/// positive number; meant for tests and for operators whose proxies cut streams sooner).
pub const STREAM_MAX_AGE_ENV: &str = "BZHEAD_HTTP_STREAM_MAX_AGE";
/// Default [`Limits::max_body`]: no request body at all.
pub const MAX_BODY: usize = 0;

/// Bounds of the HTTP side; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most connections open at once; one more is answered `503` and closed at once.
    pub max_connections: usize,
    /// Most connections open at once from one peer address (IPv6: one /64); one more is answered `503`.
    pub max_connections_per_peer: usize,
    /// Most streams at once; one more stream request is answered `503`.
    pub max_streams: usize,
    /// Most streams at once from one peer address; one more stream request is answered `503`.
    pub max_streams_per_peer: usize,
    /// Most bytes of a request head (request line and headers); beyond it: `414` when the request line alone is
    /// longer, else `431`.
    pub max_head: usize,
    /// Most headers of a request (`431` beyond).
    pub max_headers: usize,
    /// Bytes queued for a connection past which it parses no next request and is not read.
    pub max_queued_out: usize,
    /// Time allowed for a whole request head, from its first byte (or from the accept); then `408` and close.
    pub request_timeout: Duration,
    /// Time an idle keep-alive connection stays open between requests, and time a client may go without reading
    /// any of the bytes queued for it (then the connection is closed).
    pub idle_timeout: Duration,
    /// Most bytes queued for a stream; a push beyond it drops the connection (its reader stopped reading).
    pub max_stream_queue: usize,
    /// A stream is closed this long after it started.
    pub max_stream_age: Duration,
    /// Time a connection closing after an error response may take to flush it.
    pub linger: Duration,
    /// Most bytes of a request body on [`Limits::body_routes`] (`413` beyond); 0: none anywhere.
    pub max_body: usize,
    /// Path prefixes where `POST` and a body (of at most [`Limits::max_body`] bytes) are accepted; every other
    /// path refuses bodies (`413`) and `POST` (`405`).
    pub body_routes: &'static [&'static str],
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: MAX_CONNECTIONS,
            max_connections_per_peer: MAX_CONNECTIONS_PER_PEER,
            max_streams: MAX_STREAMS,
            max_streams_per_peer: MAX_STREAMS_PER_PEER,
            max_head: MAX_HEAD,
            max_headers: MAX_HEADERS,
            max_queued_out: MAX_QUEUED_OUT,
            request_timeout: REQUEST_TIMEOUT,
            idle_timeout: IDLE_TIMEOUT,
            max_stream_queue: MAX_STREAM_QUEUE,
            max_stream_age: MAX_STREAM_AGE,
            linger: LINGER,
            max_body: MAX_BODY,
            body_routes: &[],
        }
    }
}

impl Limits {
    /// The defaults, with [`Limits::max_stream_age`] taken from [`STREAM_MAX_AGE_ENV`] when it is set to a
    /// positive number of seconds (anything else is ignored).
    pub fn from_env() -> Limits {
        let age = std::env::var(STREAM_MAX_AGE_ENV).ok().and_then(|v| v.trim().parse::<f64>().ok());
        let mut l = Limits::default();
        if let Some(secs) = age.filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9) {
            l.max_stream_age = Duration::from_secs_f64(secs);
        }
        l
    }
}

/// What a connection counts under for [`Limits::max_connections_per_peer`] and
/// [`Limits::max_streams_per_peer`]: an IPv4 address (IPv4-mapped IPv6 included) or an IPv6 /64.
pub fn peer_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

/// The host name of a `Host` header value, without the port, lower-cased, without a trailing dot; an IPv6 literal
/// keeps its brackets.
fn host_name(host: &str) -> String {
    let host = host.trim();
    let name = if host.starts_with('[') {
        host.split_inclusive(']').next().unwrap_or(host)
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            _ => host,
        }
    };
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// True when a `Host` value names this machine's loopback: `localhost` (or a `.localhost` name), an address of
/// 127.0.0.0/8, or `[::1]`, with or without a port.
pub fn host_is_loopback(host: &str) -> bool {
    let name = host_name(host);
    if name == "localhost" || name.ends_with(".localhost") {
        return true;
    }
    if let Some(v6) = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        return v6.parse::<Ipv6Addr>().is_ok_and(|a| a.is_loopback());
    }
    name.parse::<Ipv4Addr>().is_ok_and(|a| a.is_loopback())
}

/// The `Host` check of a loopback listener (the defence against DNS rebinding: a page of another site whose name
/// was made to point at 127.0.0.1 sends its own name): allowed when absent (HTTP/1.0 clients), when a loopback name
/// ([`host_is_loopback`]), or when its name (port left out, case ignored) is one of `extra` (`*` allows any).
pub fn host_allowed(host: Option<&str>, extra: &[String]) -> bool {
    let Some(host) = host else { return true };
    if host_is_loopback(host) {
        return true;
    }
    let name = host_name(host);
    extra.iter().any(|e| e == "*" || host_name(e) == name)
}

/// The request methods a read-only view answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `GET`.
    Get,
    /// `HEAD` (answered like `GET`, without the body).
    Head,
    /// `POST`, only on [`Limits::body_routes`].
    Post,
}

/// A parsed request head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The method.
    pub method: Method,
    /// The path, without the query (`/api/state`), percent-encoding left as sent.
    pub path: String,
    /// The query string without `?` (empty when none).
    pub query: String,
    /// Headers, names lower-cased, values as sent (non-UTF-8 bytes replaced).
    pub headers: Vec<(String, String)>,
    /// HTTP/1.0 (no keep-alive unless asked).
    pub http10: bool,
    /// The body (empty except on [`Limits::body_routes`]; at most [`Limits::max_body`] bytes).
    pub body: Vec<u8>,
}

impl Request {
    /// The first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The value of query parameter `key` (`?server=1&x=2`), percent-decoded; `None` when absent.
    pub fn query_param(&self, key: &str) -> Option<String> {
        form_value(&self.query, key)
    }

    /// The value of form field `key` in an `application/x-www-form-urlencoded` body, else in the query string,
    /// percent-decoded; `None` when absent.
    pub fn form_param(&self, key: &str) -> Option<String> {
        form_value(&String::from_utf8_lossy(&self.body), key).or_else(|| self.query_param(key))
    }

    /// True when the client asks to keep the connection open after the response.
    pub fn keep_alive(&self) -> bool {
        let conn = self.header("connection").unwrap_or("").to_ascii_lowercase();
        if self.http10 {
            conn.contains("keep-alive")
        } else {
            !conn.contains("close")
        }
    }
}

/// The value of `key` in `k=v&k=v` text (a query string or a form body), percent-decoded.
pub fn form_value(text: &str, key: &str) -> Option<String> {
    text.split('&')
        .filter_map(|kv| kv.split_once('=').or(Some((kv, ""))))
        .find_map(|(k, v)| (percent_decode(k.trim()) == key).then(|| percent_decode(v.trim())))
}

/// Decodes `%XX` and `+` (as a space) in a query component; bad escapes stay as sent.
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let hex = |c: Option<&u8>| c.and_then(|&c| (c as char).to_digit(16));
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'%' => match (hex(b.get(i + 1)), hex(b.get(i + 2))) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                }
                _ => {
                    out.push(b'%');
                    i += 1;
                }
            },
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Why a request was refused before the application saw it; each maps to a status code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestError {
    /// The request line alone is longer than [`Limits::max_head`] (`414`).
    UriTooLong,
    /// The head is longer than [`Limits::max_head`], or has more than [`Limits::max_headers`] headers (`431`).
    HeadTooLarge,
    /// Not HTTP (`400`), with what `httparse` said.
    Malformed(String),
    /// A method other than GET or HEAD (`405`).
    MethodNotAllowed(String),
    /// A request with a body (`413`): the views are read-only, and a body route takes at most
    /// [`Limits::max_body`] bytes with a `Content-Length`.
    BodyNotAllowed,
    /// The head did not arrive within [`Limits::request_timeout`] (`408`).
    Timeout,
}

impl RequestError {
    /// The status code of the refusal.
    pub fn status(&self) -> u16 {
        match self {
            RequestError::UriTooLong => 414,
            RequestError::HeadTooLarge => 431,
            RequestError::Malformed(_) => 400,
            RequestError::MethodNotAllowed(_) => 405,
            RequestError::BodyNotAllowed => 413,
            RequestError::Timeout => 408,
        }
    }
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestError::UriTooLong => write!(f, "request line too long"),
            RequestError::HeadTooLarge => write!(f, "request head too large"),
            RequestError::Malformed(why) => write!(f, "malformed request: {why}"),
            RequestError::MethodNotAllowed(m) => write!(f, "method {m:?} not allowed here"),
            RequestError::BodyNotAllowed => write!(f, "request body not accepted (or too large)"),
            RequestError::Timeout => write!(f, "request not complete in time"),
        }
    }
}

impl std::error::Error for RequestError {}

/// One step of parsing a request head.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A whole head, and how many bytes of the input it took.
    Complete(Request, usize),
    /// More bytes are needed.
    Partial,
}

/// True when `path` is on one of `limits`' body routes.
fn body_route(limits: &Limits, path: &str) -> bool {
    limits.max_body > 0 && limits.body_routes.iter().any(|r| path.starts_with(r))
}

/// Parses a request head (and, on a body route, its body) from `buf` (complete, partial or invalid), within
/// `limits`.
pub fn parse_request(buf: &[u8], limits: &Limits) -> Result<Parsed, RequestError> {
    let mut headers = vec![httparse::EMPTY_HEADER; limits.max_headers];
    let mut req = httparse::Request::new(&mut headers);
    let n = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            if buf.len() >= limits.max_head {
                let line_len = buf.iter().position(|&c| c == b'\n').unwrap_or(buf.len());
                return Err(if line_len >= limits.max_head {
                    RequestError::UriTooLong
                } else {
                    RequestError::HeadTooLarge
                });
            }
            return Ok(Parsed::Partial);
        }
        Err(httparse::Error::TooManyHeaders) => return Err(RequestError::HeadTooLarge),
        Err(e) => return Err(RequestError::Malformed(e.to_string())),
    };
    if n > limits.max_head {
        let line_len = buf.iter().position(|&c| c == b'\n').unwrap_or(n);
        return Err(if line_len > limits.max_head { RequestError::UriTooLong } else { RequestError::HeadTooLarge });
    }
    let target = req.path.unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let bodied = body_route(limits, path);
    let method = match req.method.unwrap_or("") {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" if bodied => Method::Post,
        m => return Err(RequestError::MethodNotAllowed(m.chars().take(32).collect())),
    };
    let headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|h| (h.name.to_ascii_lowercase(), String::from_utf8_lossy(h.value).into_owned()))
        .collect();
    let mut request = Request {
        method,
        path: path.to_string(),
        query: query.to_string(),
        headers,
        http10: req.version == Some(0),
        body: Vec::new(),
    };
    if request.header("transfer-encoding").is_some() {
        return Err(RequestError::BodyNotAllowed);
    }
    let len = match request.header("content-length").map(|v| v.trim().parse::<usize>()) {
        None => 0,
        Some(Ok(len)) => len,
        Some(Err(_)) => return Err(RequestError::Malformed("bad Content-Length".into())),
    };
    if len == 0 {
        return Ok(Parsed::Complete(request, n));
    }
    if !bodied || len > limits.max_body {
        return Err(RequestError::BodyNotAllowed);
    }
    match buf.get(n..n + len) {
        Some(body) => {
            request.body = body.to_vec();
            Ok(Parsed::Complete(request, n + len))
        }
        None => Ok(Parsed::Partial),
    }
}

/// The reason phrase of a status code.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        421 => "Misdirected Request",
        414 => "URI Too Long",
        426 => "Upgrade Required",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    }
}

/// The bytes of a response body: owned, static, or shared between responses (an [`Arc`]: a big cached answer is
/// queued on every connection that asks for it without being copied).
#[derive(Debug, Clone)]
pub struct Body(BodyRepr);

#[derive(Debug, Clone)]
enum BodyRepr {
    Owned(Vec<u8>),
    Static(&'static [u8]),
    Shared(Arc<[u8]>),
}

impl Body {
    /// A body shared with its other holders (cloning it clones the `Arc`, not the bytes).
    pub fn shared(bytes: Arc<[u8]>) -> Body {
        Body(BodyRepr::Shared(bytes))
    }

    /// The body of a constant.
    pub fn from_static(bytes: &'static [u8]) -> Body {
        Body(BodyRepr::Static(bytes))
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        match &self.0 {
            BodyRepr::Owned(v) => v,
            BodyRepr::Static(s) => s,
            BodyRepr::Shared(a) => a,
        }
    }

    /// True when cloning this body copies no bytes (static or shared).
    pub fn is_shared(&self) -> bool {
        !matches!(self.0, BodyRepr::Owned(_))
    }
}

impl std::ops::Deref for Body {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl PartialEq for Body {
    fn eq(&self, other: &Body) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Body {}

impl From<Vec<u8>> for Body {
    fn from(v: Vec<u8>) -> Body {
        Body(BodyRepr::Owned(v))
    }
}

impl From<Arc<[u8]>> for Body {
    fn from(a: Arc<[u8]>) -> Body {
        Body::shared(a)
    }
}

impl From<&'static [u8]> for Body {
    fn from(s: &'static [u8]) -> Body {
        Body::from_static(s)
    }
}

impl From<&'static str> for Body {
    fn from(s: &'static str) -> Body {
        Body::from_static(s.as_bytes())
    }
}

/// A whole response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers besides `Content-Length` and `Connection`, which are added when written.
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: Body,
    /// Close the connection after this response even when the client asked to keep it alive.
    pub close: bool,
}

impl Response {
    /// A response with this status, content type and body (copied into each connection that is sent it; see
    /// [`Response::shared`] for big answers).
    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Response {
        Response::shared(status, content_type, Body::from(body.into()))
    }

    /// A response with this status, content type and body; a static or [`Arc`] body is not copied per request.
    pub fn shared(status: u16, content_type: &str, body: impl Into<Body>) -> Response {
        Response {
            status,
            headers: vec![
                ("Content-Type".into(), content_type.into()),
                ("Cache-Control".into(), "no-store".into()),
                ("X-Content-Type-Options".into(), "nosniff".into()),
            ],
            body: body.into(),
            close: false,
        }
    }

    /// `200` with a JSON body.
    pub fn json(body: impl Into<Vec<u8>>) -> Response {
        Response::new(200, "application/json", body)
    }

    /// An error: the status with a one-line plain-text body.
    pub fn error(status: u16, message: &str) -> Response {
        Response::new(status, "text/plain; charset=utf-8", format!("{status} {}: {message}\n", reason(status)))
    }

    /// Closes the connection after this response.
    pub fn closing(mut self) -> Response {
        self.close = true;
        self
    }

    /// Adds a header.
    pub fn with_header(mut self, name: &str, value: &str) -> Response {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The status line and headers on the wire.
    pub fn head_bytes(&self, keep_alive: bool) -> Vec<u8> {
        let mut s = format!("HTTP/1.1 {} {}\r\n", self.status, reason(self.status));
        for (n, v) in &self.headers {
            // Header values are ours; strip line breaks anyway so that nothing can split the head.
            let v: String = v.chars().filter(|c| *c != '\r' && *c != '\n').collect();
            let _ = write!(s, "{n}: {v}\r\n");
        }
        let _ = write!(s, "Content-Length: {}\r\n", self.body.len());
        s.push_str(if keep_alive { "Connection: keep-alive\r\n\r\n" } else { "Connection: close\r\n\r\n" });
        s.into_bytes()
    }

    /// The bytes on the wire; without the body for `HEAD`.
    pub fn to_bytes(&self, keep_alive: bool, head_only: bool) -> Vec<u8> {
        let mut out = self.head_bytes(keep_alive);
        if !head_only {
            out.extend_from_slice(&self.body);
        }
        out
    }
}

/// The head of a Server-Sent Events stream (`text/event-stream`), with a first `retry:` telling the browser how
/// soon to reconnect when the stream drops.
pub fn sse_head(retry_ms: u32) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n\
         X-Content-Type-Options: nosniff\r\nConnection: keep-alive\r\n\r\nretry: {retry_ms}\n\n"
    )
    .into_bytes()
}

/// One Server-Sent Event: optional `event:` name and `id:`, then `data` split into `data:` lines (so that a line
/// break in the data cannot end the event early).
pub fn sse_event(event: Option<&str>, id: Option<u64>, data: &str) -> Vec<u8> {
    let mut s = String::with_capacity(data.len() + 32);
    if let Some(e) = event {
        let e: String = e.chars().filter(|c| *c != '\r' && *c != '\n').collect();
        let _ = writeln!(s, "event: {e}");
    }
    if let Some(id) = id {
        let _ = writeln!(s, "id: {id}");
    }
    for line in data.split('\n') {
        let _ = writeln!(s, "data: {}", line.trim_end_matches('\r'));
    }
    s.push('\n');
    s.into_bytes()
}

/// An SSE comment line, to keep a quiet stream alive through proxies.
pub fn sse_comment(text: &str) -> Vec<u8> {
    format!(": {}\n\n", text.replace(['\r', '\n'], " ")).into_bytes()
}

/// Where a connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnState {
    /// Reading a request head (or idle between keep-alive requests).
    Reading,
    /// A request was handed out; waiting for the application's answer.
    Answering,
    /// A Server-Sent Events stream: the application pushes, the client only reads.
    Streaming,
    /// Flushing a last response, then closing.
    Closing,
}

/// Why a connection is to be closed now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseReason {
    /// The peer closed.
    PeerClosed,
    /// Its stream's send queue passed [`Limits::max_stream_queue`] (the reader stopped reading).
    SendQueueFull,
    /// Bytes were queued for it (not a stream) and it read none of them for [`Limits::idle_timeout`].
    Stalled,
    /// Its stream reached [`Limits::max_stream_age`].
    StreamAge,
    /// The client sent bytes on a stream (a read-only view accepts none: WebSocket frames, a second request).
    ClientSentOnStream,
    /// A refused request (the error response was queued first).
    Refused(RequestError),
    /// The last response is written and the connection is not kept alive.
    Done,
    /// Idle past [`Limits::idle_timeout`].
    Idle,
    /// The application closed it.
    Closed,
    /// A socket error.
    Io(String),
}

impl std::fmt::Display for CloseReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CloseReason::PeerClosed => write!(f, "peer closed"),
            CloseReason::SendQueueFull => write!(f, "send queue full (the client stopped reading)"),
            CloseReason::Stalled => write!(f, "the client read nothing of its queued bytes in time"),
            CloseReason::StreamAge => write!(f, "stream at its age limit"),
            CloseReason::ClientSentOnStream => write!(f, "client sent data on a read-only stream"),
            CloseReason::Refused(e) => write!(f, "refused: {e}"),
            CloseReason::Done => write!(f, "done"),
            CloseReason::Idle => write!(f, "idle"),
            CloseReason::Closed => write!(f, "closed by the application"),
            CloseReason::Io(e) => write!(f, "I/O error: {e}"),
        }
    }
}

/// The sans-IO state of one HTTP connection; see the module documentation.
#[derive(Debug)]
pub struct HttpConn {
    limits: Limits,
    state: ConnState,
    /// Bytes read and not parsed yet: at most [`Limits::max_head`] + [`Limits::max_body`] + 1.
    inbuf: Vec<u8>,
    /// What is to be written, in order: response heads, bodies (shared ones not copied), stream bytes.
    out: VecDeque<Body>,
    /// Bytes of the front of `out` already written.
    out_sent: usize,
    /// Bytes in `out` not written yet.
    out_len: usize,
    /// When the request being read started (or the connection was accepted / went idle).
    since: Instant,
    /// A request head has started arriving (else the connection is idle).
    started: bool,
    /// The request handed out (or to be handed out) and not answered yet.
    request: Option<Request>,
    keep_alive: bool,
    close: Option<CloseReason>,
    close_when_flushed: Option<CloseReason>,
    closing_deadline: Option<Instant>,
    /// Since when queued bytes wait without the client reading any (none while nothing is queued).
    stalled_since: Option<Instant>,
    /// When the stream started.
    stream_since: Option<Instant>,
}

impl HttpConn {
    /// A connection accepted at `now`.
    pub fn new(now: Instant, limits: Limits) -> HttpConn {
        HttpConn {
            limits,
            state: ConnState::Reading,
            inbuf: Vec::new(),
            out: VecDeque::new(),
            out_sent: 0,
            out_len: 0,
            since: now,
            started: true,
            request: None,
            keep_alive: true,
            close: None,
            close_when_flushed: None,
            closing_deadline: None,
            stalled_since: None,
            stream_since: None,
        }
    }

    /// The connection's state.
    pub fn state(&self) -> ConnState {
        self.state
    }

    /// Bytes read and not yet parsed (at most [`Limits::max_head`] + [`Limits::max_body`] + 1).
    pub fn buffered_in(&self) -> usize {
        self.inbuf.len()
    }

    /// Bytes queued to write.
    pub fn queued_out(&self) -> usize {
        self.out_len
    }

    /// The input buffer's bound: a head and a body (see [`Limits::max_body`]) and one byte.
    fn in_bound(&self) -> usize {
        self.limits.max_head.saturating_add(self.limits.max_body).saturating_add(1)
    }

    /// Bytes of a shared body in the queue count here too, though they are not this connection's own memory.
    fn over_out_bound(&self) -> bool {
        self.out_len > self.limits.max_queued_out
    }

    /// How many bytes the connection takes now: 0 while its output is past [`Limits::max_queued_out`] or its
    /// input buffer is full (the reader must then leave the socket alone: the client meets TCP backpressure).
    /// [`HttpConn::handle_data`] takes at most this many.
    pub fn read_room(&self) -> usize {
        if self.close.is_some() {
            return 0;
        }
        match self.state {
            // Bytes on a stream end it, bytes after a refusal are dropped: any amount does.
            ConnState::Streaming | ConnState::Closing => self.limits.max_head.saturating_add(1),
            ConnState::Reading | ConnState::Answering if self.over_out_bound() => 0,
            ConnState::Reading | ConnState::Answering => self.in_bound().saturating_sub(self.inbuf.len()),
        }
    }

    /// Bytes the peer sent: parsed when a request is awaited, refused on a stream. Returns how many were taken:
    /// never more than [`HttpConn::read_room`] said before the call (bytes past it must be offered again later,
    /// nothing is dropped).
    pub fn handle_data(&mut self, now: Instant, data: &[u8]) -> usize {
        if self.close.is_some() {
            return 0;
        }
        match self.state {
            ConnState::Streaming => {
                if !data.is_empty() {
                    self.close = Some(CloseReason::ClientSentOnStream);
                }
                return data.len();
            }
            ConnState::Closing => return data.len(),
            ConnState::Reading | ConnState::Answering => {}
        }
        let room = self.in_bound().saturating_sub(self.inbuf.len());
        let take = data.len().min(room);
        if !self.started && take > 0 && self.state == ConnState::Reading {
            self.started = true;
            self.since = now;
        }
        self.inbuf.extend_from_slice(&data[..take]);
        self.parse();
        take
    }

    /// The peer closed its side.
    pub fn handle_peer_closed(&mut self) {
        if self.close.is_none() {
            self.close = Some(CloseReason::PeerClosed);
        }
    }

    /// Parses the next request when one is awaited and the output is within its bound.
    fn parse(&mut self) {
        if self.state != ConnState::Reading || self.inbuf.is_empty() || self.over_out_bound() {
            return;
        }
        match parse_request(&self.inbuf, &self.limits) {
            Ok(Parsed::Partial) => {}
            Ok(Parsed::Complete(req, n)) => {
                self.inbuf.drain(..n);
                self.keep_alive = req.keep_alive();
                self.request = Some(req);
                self.state = ConnState::Answering;
            }
            Err(e) => self.refuse(e),
        }
    }

    fn refuse(&mut self, e: RequestError) {
        let mut resp = Response::error(e.status(), &e.to_string());
        if e.status() == 405 {
            resp = resp.with_header("Allow", "GET, HEAD");
        }
        self.inbuf.clear();
        let now = self.since;
        self.queue(now, Body::from(resp.to_bytes(false, false)));
        self.state = ConnState::Closing;
        self.close_when_flushed = Some(CloseReason::Refused(e));
        self.closing_deadline = None;
    }

    /// The next complete request, once (the application must then answer it).
    pub fn poll_request(&mut self) -> Option<Request> {
        if self.state == ConnState::Answering {
            self.request.take()
        } else {
            None
        }
    }

    /// Answers the request handed out; the connection then reads the next one (keep-alive) or closes. The body is
    /// queued as it is: a shared one is not copied.
    pub fn respond(&mut self, now: Instant, resp: &Response, head_only: bool) {
        if self.state != ConnState::Answering || self.close.is_some() {
            return;
        }
        self.keep_alive &= !resp.close;
        self.queue(now, Body::from(resp.head_bytes(self.keep_alive)));
        if !head_only && !resp.body.is_empty() {
            self.queue(now, resp.body.clone());
        }
        self.answered(now);
    }

    /// After an answer: read the next request (keep-alive) or close once it is written.
    fn answered(&mut self, now: Instant) {
        if self.keep_alive {
            self.state = ConnState::Reading;
            self.started = !self.inbuf.is_empty();
            self.since = now;
            self.parse();
        } else {
            self.state = ConnState::Closing;
            self.close_when_flushed = Some(CloseReason::Done);
        }
    }

    /// Turns the connection into a stream: `head` (see [`sse_head`]) is written, then whatever is pushed. For a
    /// `HEAD` request (`head_only`) only the response head is written (up to its blank line) and the connection
    /// goes on as after any answer: returns false, as it does when there was no request to answer.
    pub fn start_stream(&mut self, now: Instant, head: &[u8], head_only: bool) -> bool {
        if self.state != ConnState::Answering || self.close.is_some() {
            return false;
        }
        if head_only {
            let end = head.windows(4).position(|w| w == b"\r\n\r\n").map_or(head.len(), |p| p + 4);
            self.queue(now, Body::from(head[..end].to_vec()));
            self.answered(now);
            return false;
        }
        self.queue(now, Body::from(head.to_vec()));
        self.state = ConnState::Streaming;
        self.stream_since = Some(now);
        if !self.inbuf.is_empty() {
            // Pipelined bytes after a stream request: the client is not a plain reader.
            self.close = Some(CloseReason::ClientSentOnStream);
        }
        true
    }

    /// Queues bytes on a stream. When they would pass [`Limits::max_stream_queue`], nothing is queued and the
    /// connection is to be closed: returns false.
    pub fn push(&mut self, now: Instant, bytes: &[u8]) -> bool {
        if self.state != ConnState::Streaming || self.close.is_some() {
            return false;
        }
        if self.queued_out() + bytes.len() > self.limits.max_stream_queue {
            self.close = Some(CloseReason::SendQueueFull);
            return false;
        }
        if !bytes.is_empty() {
            self.queue(now, Body::from(bytes.to_vec()));
        }
        true
    }

    /// Closes the connection (after nothing more is written).
    pub fn close(&mut self) {
        if self.close.is_none() {
            self.close = Some(CloseReason::Closed);
        }
    }

    fn queue(&mut self, now: Instant, bytes: Body) {
        if bytes.is_empty() {
            return;
        }
        if self.out_len == 0 {
            self.stalled_since = Some(now);
        }
        self.out_len += bytes.len();
        // Small pieces go together, so that a stream of small events is written in few calls.
        if let (Some(Body(BodyRepr::Owned(last))), false) = (self.out.back_mut(), bytes.is_shared()) {
            if last.len() < 16 * 1024 {
                last.extend_from_slice(&bytes);
                return;
            }
        }
        self.out.push_back(bytes);
    }

    /// The bytes waiting to be written next (a part of what is queued: write, call [`HttpConn::consumed`], ask
    /// again).
    pub fn pending(&self) -> &[u8] {
        self.out.front().map_or(&[], |b| b.get(self.out_sent..).unwrap_or(&[]))
    }

    /// `n` bytes of [`HttpConn::pending`] were written.
    pub fn consumed(&mut self, now: Instant, n: usize) {
        let mut n = n.min(self.out_len);
        if n > 0 {
            self.stalled_since = Some(now);
        }
        while n > 0 {
            let Some(front) = self.out.front() else { break };
            let left = front.len() - self.out_sent;
            if n < left {
                self.out_sent += n;
                self.out_len -= n;
                break;
            }
            n -= left;
            self.out_len -= left;
            self.out.pop_front();
            self.out_sent = 0;
        }
        if self.out_len == 0 {
            self.stalled_since = None;
            if let Some(r) = self.close_when_flushed.take() {
                self.close = Some(r);
            }
            if self.state == ConnState::Reading {
                // The keep-alive and request clocks start when the answer is out.
                self.since = now;
            }
        }
        if self.state == ConnState::Closing && self.closing_deadline.is_none() {
            self.closing_deadline = Some(now + self.limits.linger);
        }
        // Back under the bound: the next pipelined request may be parsed.
        self.parse();
    }

    /// When the connection must be closed if nothing happens before.
    pub fn deadline(&self) -> Option<Instant> {
        // A stream's reader is judged by its queue (and the stream by its age), not by the time.
        let stall =
            self.stalled_since.filter(|_| self.state != ConnState::Streaming).map(|t| t + self.limits.idle_timeout);
        let own = match self.state {
            // While an answer is still being written, only the client's reading counts.
            ConnState::Reading if self.out_len > 0 => None,
            ConnState::Reading if self.started => Some(self.since + self.limits.request_timeout),
            ConnState::Reading => Some(self.since + self.limits.idle_timeout),
            ConnState::Closing => return self.closing_deadline.or(Some(self.since + self.limits.request_timeout)),
            ConnState::Streaming => self.stream_since.map(|t| t + self.limits.max_stream_age),
            ConnState::Answering => None,
        };
        match (own, stall) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Deadlines that passed at `now` take effect.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.close.is_some() || self.deadline().is_none_or(|d| d > now) {
            return;
        }
        let stalled = self.stalled_since.is_some_and(|t| t + self.limits.idle_timeout <= now);
        if stalled && !matches!(self.state, ConnState::Closing | ConnState::Streaming) {
            // Between requests, a client that reads nothing and sends nothing is idle.
            let idle = self.state == ConnState::Reading && !self.started;
            self.close = Some(if idle { CloseReason::Idle } else { CloseReason::Stalled });
            return;
        }
        match self.state {
            ConnState::Reading if self.started => self.refuse(RequestError::Timeout),
            ConnState::Reading => self.close = Some(CloseReason::Idle),
            ConnState::Closing => {
                self.close = self.close_when_flushed.take().or(Some(CloseReason::Done));
            }
            ConnState::Streaming => self.close = Some(CloseReason::StreamAge),
            ConnState::Answering => {}
        }
        if self.state == ConnState::Closing && self.closing_deadline.is_none() {
            self.closing_deadline = Some(now + self.limits.linger);
        }
    }

    /// Why the connection is to be closed now, if it is.
    pub fn close_reason(&self) -> Option<&CloseReason> {
        self.close.as_ref()
    }

    /// Marks the connection as failed on a socket error.
    pub fn handle_io_error(&mut self, e: &std::io::Error) {
        if self.close.is_none() {
            self.close = Some(CloseReason::Io(e.to_string()));
        }
    }
}

/// Escapes text for HTML (element content and quoted attribute values).
pub fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests;
