//! A small sans-IO HTTP/1.1 server side, for read-only views served by the one reactor.
//!
//! This module never touches a socket or the clock. [`HttpConn`] is the state machine of one connection: bytes read
//! from the peer go in with [`HttpConn::handle_data`] (parsed with `httparse`: complete, partial or invalid), a
//! complete request comes out of [`HttpConn::poll_request`], the application answers it with
//! [`HttpConn::respond`] (a whole [`Response`]) or turns the connection into a Server-Sent Events stream with
//! [`HttpConn::start_stream`] and [`HttpConn::push`], and the bytes to write come out of
//! [`HttpConn::pending`] / [`HttpConn::consumed`]. [`HttpConn::deadline`] says when the connection must be closed
//! if nothing happens (a request that never finishes, an idle keep-alive connection).
//!
//! The reactor (`crate::reactor`, its `http` part) owns the listener and the streams, registers `WRITABLE` only
//! while [`HttpConn::pending`] is not empty, caps the number of connections and hands requests to the application
//! as [`crate::reactor::HttpEvent`]s.
//!
//! Everything a peer controls is bounded ([`Limits`]): the request head (line and headers together), the number of
//! headers, the time a request may take, and the bytes queued for a stream whose reader stopped reading (the
//! connection is dropped, never waited for). Requests with a body are refused (the views are read-only), and so
//! is any byte a client sends on a stream (for example WebSocket frames): the stream is closed.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// Bounds of the HTTP side; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most connections open at once; one more is answered `503` and closed at once.
    pub max_connections: usize,
    /// Most bytes of a request head (request line and headers); beyond it: `414` when the request line alone is
    /// longer, else `431`.
    pub max_head: usize,
    /// Most headers of a request (`431` beyond).
    pub max_headers: usize,
    /// Time allowed for a whole request head, from its first byte (or from the accept); then `408` and close.
    pub request_timeout: Duration,
    /// Time an idle keep-alive connection stays open between requests.
    pub idle_timeout: Duration,
    /// Most bytes queued for a stream; a push beyond it drops the connection (its reader stopped reading).
    pub max_stream_queue: usize,
    /// Time a connection closing after an error response may take to flush it.
    pub linger: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 128,
            max_head: 8 * 1024,
            max_headers: 32,
            request_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            max_stream_queue: 512 * 1024,
            linger: Duration::from_secs(2),
        }
    }
}

/// The request methods a read-only view answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `GET`.
    Get,
    /// `HEAD` (answered like `GET`, without the body).
    Head,
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
}

impl Request {
    /// The first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The value of query parameter `key` (`?server=1&x=2`), percent-decoded; `None` when absent.
    pub fn query_param(&self, key: &str) -> Option<String> {
        self.query
            .split('&')
            .filter_map(|kv| kv.split_once('=').or(Some((kv, ""))))
            .find_map(|(k, v)| (percent_decode(k) == key).then(|| percent_decode(v)))
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
    /// A request with a body (`413`): the views are read-only.
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
            RequestError::MethodNotAllowed(m) => write!(f, "method {m:?} not allowed (only GET and HEAD)"),
            RequestError::BodyNotAllowed => write!(f, "request bodies are not accepted"),
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

/// Parses a request head from `buf` (complete, partial or invalid), within `limits`.
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
    let method = match req.method.unwrap_or("") {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        m => return Err(RequestError::MethodNotAllowed(m.chars().take(32).collect())),
    };
    let target = req.path.unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|h| (h.name.to_ascii_lowercase(), String::from_utf8_lossy(h.value).into_owned()))
        .collect();
    let request =
        Request { method, path: path.to_string(), query: query.to_string(), headers, http10: req.version == Some(0) };
    let has_body = request.header("content-length").is_some_and(|v| v.trim() != "0")
        || request.header("transfer-encoding").is_some();
    if has_body {
        return Err(RequestError::BodyNotAllowed);
    }
    Ok(Parsed::Complete(request, n))
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
        414 => "URI Too Long",
        426 => "Upgrade Required",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
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
    pub body: Vec<u8>,
    /// Close the connection after this response even when the client asked to keep it alive.
    pub close: bool,
}

impl Response {
    /// A response with this status, content type and body.
    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Response {
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

    /// The bytes on the wire; without the body for `HEAD`.
    pub fn to_bytes(&self, keep_alive: bool, head_only: bool) -> Vec<u8> {
        let mut s = format!("HTTP/1.1 {} {}\r\n", self.status, reason(self.status));
        for (n, v) in &self.headers {
            // Header values are ours; strip line breaks anyway so that nothing can split the head.
            let v: String = v.chars().filter(|c| *c != '\r' && *c != '\n').collect();
            let _ = write!(s, "{n}: {v}\r\n");
        }
        let _ = write!(s, "Content-Length: {}\r\n", self.body.len());
        s.push_str(if keep_alive { "Connection: keep-alive\r\n\r\n" } else { "Connection: close\r\n\r\n" });
        let mut out = s.into_bytes();
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
    inbuf: Vec<u8>,
    out: Vec<u8>,
    out_sent: usize,
    /// When the request being read started (or the connection was accepted / went idle).
    since: Instant,
    /// A request head has started arriving (else the connection is idle).
    started: bool,
    requests: VecDeque<Request>,
    keep_alive: bool,
    close: Option<CloseReason>,
    close_when_flushed: Option<CloseReason>,
    closing_deadline: Option<Instant>,
}

impl HttpConn {
    /// A connection accepted at `now`.
    pub fn new(now: Instant, limits: Limits) -> HttpConn {
        HttpConn {
            limits,
            state: ConnState::Reading,
            inbuf: Vec::new(),
            out: Vec::new(),
            out_sent: 0,
            since: now,
            started: true,
            requests: VecDeque::new(),
            keep_alive: true,
            close: None,
            close_when_flushed: None,
            closing_deadline: None,
        }
    }

    /// The connection's state.
    pub fn state(&self) -> ConnState {
        self.state
    }

    /// Bytes read and not yet parsed (bounded by [`Limits::max_head`]).
    pub fn buffered_in(&self) -> usize {
        self.inbuf.len()
    }

    /// Bytes queued to write.
    pub fn queued_out(&self) -> usize {
        self.out.len() - self.out_sent
    }

    /// Bytes the peer sent: parsed when a request is awaited, refused on a stream.
    pub fn handle_data(&mut self, now: Instant, data: &[u8]) {
        if self.close.is_some() {
            return;
        }
        match self.state {
            ConnState::Streaming => {
                if !data.is_empty() {
                    self.close = Some(CloseReason::ClientSentOnStream);
                }
                return;
            }
            ConnState::Closing => return,
            ConnState::Reading | ConnState::Answering => {}
        }
        if !self.started && !data.is_empty() {
            self.started = true;
            self.since = now;
        }
        let room = self.limits.max_head.saturating_add(1).saturating_sub(self.inbuf.len());
        self.inbuf.extend_from_slice(&data[..data.len().min(room)]);
        self.parse();
    }

    /// The peer closed its side.
    pub fn handle_peer_closed(&mut self) {
        if self.close.is_none() {
            self.close = Some(CloseReason::PeerClosed);
        }
    }

    fn parse(&mut self) {
        if self.state != ConnState::Reading || self.inbuf.is_empty() {
            if self.state == ConnState::Answering && self.inbuf.len() > self.limits.max_head {
                self.refuse(RequestError::HeadTooLarge);
            }
            return;
        }
        match parse_request(&self.inbuf, &self.limits) {
            Ok(Parsed::Partial) => {}
            Ok(Parsed::Complete(req, n)) => {
                self.inbuf.drain(..n);
                self.keep_alive = req.keep_alive();
                self.requests.push_back(req);
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
        self.queue(&resp.to_bytes(false, false));
        self.state = ConnState::Closing;
        self.close_when_flushed = Some(CloseReason::Refused(e));
        self.closing_deadline = None;
    }

    /// The next complete request, once (the application must then answer it).
    pub fn poll_request(&mut self) -> Option<Request> {
        self.requests.pop_front()
    }

    /// Answers the request handed out; the connection then reads the next one (keep-alive) or closes.
    pub fn respond(&mut self, now: Instant, resp: &Response, head_only: bool) {
        if self.state != ConnState::Answering || self.close.is_some() {
            return;
        }
        self.keep_alive &= !resp.close;
        self.queue(&resp.to_bytes(self.keep_alive, head_only));
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

    /// Turns the connection into a stream: `head` (see [`sse_head`]) is written, then whatever is pushed.
    pub fn start_stream(&mut self, head: &[u8]) {
        if self.state != ConnState::Answering || self.close.is_some() {
            return;
        }
        self.queue(head);
        self.state = ConnState::Streaming;
        if !self.inbuf.is_empty() {
            // Pipelined bytes after a stream request: the client is not a plain reader.
            self.close = Some(CloseReason::ClientSentOnStream);
        }
    }

    /// Queues bytes on a stream. When they would pass [`Limits::max_stream_queue`], nothing is queued and the
    /// connection is to be closed: returns false.
    pub fn push(&mut self, bytes: &[u8]) -> bool {
        if self.state != ConnState::Streaming || self.close.is_some() {
            return false;
        }
        if self.queued_out() + bytes.len() > self.limits.max_stream_queue {
            self.close = Some(CloseReason::SendQueueFull);
            return false;
        }
        self.queue(bytes);
        true
    }

    /// Closes the connection (after nothing more is written).
    pub fn close(&mut self) {
        if self.close.is_none() {
            self.close = Some(CloseReason::Closed);
        }
    }

    fn queue(&mut self, bytes: &[u8]) {
        if self.out_sent > 0 && self.out_sent * 2 >= self.out.len() {
            self.out.drain(..self.out_sent);
            self.out_sent = 0;
        }
        self.out.extend_from_slice(bytes);
    }

    /// The bytes waiting to be written.
    pub fn pending(&self) -> &[u8] {
        &self.out[self.out_sent..]
    }

    /// `n` bytes of [`HttpConn::pending`] were written.
    pub fn consumed(&mut self, now: Instant, n: usize) {
        self.out_sent = (self.out_sent + n).min(self.out.len());
        if self.out_sent == self.out.len() {
            self.out.clear();
            self.out_sent = 0;
            if let Some(r) = self.close_when_flushed.take() {
                self.close = Some(r);
            }
        }
        if self.state == ConnState::Closing && self.closing_deadline.is_none() {
            self.closing_deadline = Some(now + self.limits.linger);
        }
    }

    /// When the connection must be closed if nothing happens before.
    pub fn deadline(&self) -> Option<Instant> {
        match self.state {
            ConnState::Reading if self.started => Some(self.since + self.limits.request_timeout),
            ConnState::Reading => Some(self.since + self.limits.idle_timeout),
            ConnState::Closing => self.closing_deadline.or(Some(self.since + self.limits.request_timeout)),
            ConnState::Answering | ConnState::Streaming => None,
        }
    }

    /// Deadlines that passed at `now` take effect.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.close.is_some() || self.deadline().is_none_or(|d| d > now) {
            return;
        }
        match self.state {
            ConnState::Reading if self.started => self.refuse(RequestError::Timeout),
            ConnState::Reading => self.close = Some(CloseReason::Idle),
            ConnState::Closing => {
                self.close = self.close_when_flushed.take().or(Some(CloseReason::Done));
            }
            _ => {}
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
