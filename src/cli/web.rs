//! `observe --web ADDR HOST[:PORT]...`: one observer per server and the live web view, all on one reactor.
//!
//! Events are printed as `observe` prints them (with several servers, text lines start with `[HOST:PORT]` and JSON
//! lines carry `"server":N`, N counting from 0 in the order given). The web view ([`bzhead::web::WebView`]) is
//! served on ADDR by the same reactor; its URL goes to stderr.

use std::io::{self, BufWriter, StdoutLock, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use bzhead::bzflag::consts::{player, DEFAULT_PORT};
use bzhead::bzflag::event::Event;
use bzhead::bzflag::session::SessionConfig;
use bzhead::http::Limits;
use bzhead::netwatch::{reconnected_line, reconnecting_line, NetstatsClock, NetstatsDue, Reconnect};
use bzhead::observer::{Filter, Stamp};
use bzhead::reactor::{Reactor, SessionId};
use bzhead::web::{Status, WebView};

use super::observe::{netstats_block, Controls, ObserveArgs, Typed};
use super::{exit, secs};

/// How often the page's lag figures are refreshed (`/lagstats`) when `--netstats` is 0 (no lines printed).
pub const LAG_REFRESH: Duration = Duration::from_secs(10);

/// Parses the `--web` address: `HOST:PORT`, `[V6]:PORT`, or a bare `PORT` (bound on 127.0.0.1).
pub fn web_addr(s: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    s.parse::<SocketAddr>().map_err(|_| format!("--web wants ADDR:PORT or PORT (e.g. 127.0.0.1:8080), not {s:?}"))
}

struct Server {
    label: String,
    addr: SocketAddr,
    session: Option<SessionId>,
    /// When to connect again (with --reconnect).
    retry_at: Option<Instant>,
    backoff: Reconnect,
    /// When to ask /lagstats and print the netstats lines.
    net_clock: Option<NetstatsClock>,
    /// Over for good.
    finished: bool,
    exit_code: Option<u8>,
}

/// Runs `observe --web`; returns the exit code.
pub fn run(a: ObserveArgs) -> u8 {
    let filter = match super::event_filter(&a.show, &a.hide) {
        Ok(f) => f,
        Err(code) => return code,
    };
    match &a.web {
        Some(web) => observe_web(&a, web, &filter, a.reconnect),
        None => super::observe::run(a),
    }
}

fn observe_web(a: &ObserveArgs, web: &str, filter: &Filter, reconnect: bool) -> u8 {
    let bind = match web_addr(web) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("bzhead: {e}");
            return exit::USAGE;
        }
    };
    if a.count > 1 {
        eprintln!("bzhead: --count cannot be combined with --web");
        return exit::USAGE;
    }
    let mut servers = Vec::new();
    for s in &a.servers {
        match super::resolve_or_exit(s, DEFAULT_PORT) {
            Ok(addr) => servers.push(Server {
                label: s.clone(),
                addr,
                session: None,
                retry_at: None,
                backoff: Reconnect::new(),
                net_clock: None,
                finished: false,
                exit_code: None,
            }),
            Err(code) => return code,
        }
    }
    match WebObservers::start(a, filter, reconnect, bind, servers) {
        Ok(w) => w.run(),
        Err(code) => code,
    }
}

/// One observer per server and the web view, on one reactor.
struct WebObservers<'a> {
    a: &'a ObserveArgs,
    filter: &'a Filter,
    reconnect: bool,
    /// Several servers: lines say which one they are about.
    multi: bool,
    config: SessionConfig,
    reactor: Reactor,
    view: WebView,
    servers: Vec<Server>,
    start: Instant,
    /// The netstats lines are printed (--netstats is not 0).
    print_netstats: bool,
    controls: Controls,
    out: BufWriter<StdoutLock<'static>>,
    /// Something was written this turn (flushed at its end).
    printed: bool,
    /// /quit, --for or a signal: every observer is leaving.
    left: bool,
    next_tick: Instant,
}

impl<'a> WebObservers<'a> {
    /// Starts the reactor and the web view on `bind` and connects an observer to each server; `Err` is the exit
    /// code.
    fn start(
        a: &'a ObserveArgs,
        filter: &'a Filter,
        reconnect: bool,
        bind: SocketAddr,
        mut servers: Vec<Server>,
    ) -> Result<WebObservers<'a>, u8> {
        let mut reactor = super::new_reactor()?;
        let (listener, local) = reactor.add_http_listener(bind, Limits::from_env()).map_err(|e| {
            eprintln!("bzhead: cannot serve the web view on {bind}: {e}");
            exit::USAGE
        })?;
        reactor.http_allow_hosts(listener, &a.allow_host);
        let start = Instant::now();
        // The netstats lines as without --web; the page's lag figures want /lagstats now and then even without them.
        let print_netstats = secs(a.netstats) > Duration::ZERO;
        let net_every = if print_netstats { secs(a.netstats) } else { LAG_REFRESH };
        for s in servers.iter_mut() {
            s.net_clock = NetstatsClock::new(net_every, start);
        }
        let labels: Vec<(String, SocketAddr)> = servers.iter().map(|s| (s.label.clone(), s.addr)).collect();
        let view = WebView::new(&labels, start);
        eprintln!("bzhead: web view on http://{local}/");
        let mut w = WebObservers {
            a,
            filter,
            reconnect,
            multi: servers.len() > 1,
            config: a.session_config(a.callsign.clone(), true),
            controls: Controls::new(&reactor, start, a.for_secs),
            reactor,
            view,
            servers,
            start,
            print_netstats,
            out: BufWriter::new(io::stdout().lock()),
            printed: false,
            left: false,
            next_tick: Instant::now(),
        };
        for si in 0..w.servers.len() {
            if !w.connect(si, true) {
                if reconnect {
                    let (_, delay) = w.servers[si].backoff.failed(Instant::now());
                    w.servers[si].retry_at = Some(Instant::now() + delay);
                    w.view.set_status(&mut w.reactor, si, Status::Reconnecting);
                } else {
                    return Err(exit::CONNECT);
                }
            }
        }
        Ok(w)
    }

    /// Connects an observer to server `si`; false (said on stderr) when it cannot.
    fn connect(&mut self, si: usize, first: bool) -> bool {
        // The first server records (if asked), on its first connection only.
        let options = self.a.session_options(si == 0 && first);
        let s = &mut self.servers[si];
        match self.reactor.add_session(s.addr, self.config.clone(), options) {
            Ok(id) => {
                s.session = Some(id);
                self.view.set_session(&mut self.reactor, si, id);
                true
            }
            Err(e) => {
                eprintln!("bzhead: cannot connect to {}: {e}", s.addr);
                false
            }
        }
    }

    /// Runs until every observer is done; returns the exit code.
    fn run(mut self) -> u8 {
        loop {
            if let Err(e) = self.reactor.turn(Some(self.wake().saturating_duration_since(Instant::now()))) {
                eprintln!("bzhead: event loop failed: {e}");
                return exit::PROTOCOL;
            }
            self.take_controls();
            self.printed = false;
            self.retry_due();
            while let Some((sid, at, ev)) = self.reactor.poll_event() {
                self.on_event(sid, at, ev);
            }
            self.netstats();
            if self.printed {
                let _ = self.out.flush();
            }
            self.remove_ended();
            // Worlds the reactor's worker modelled for the view.
            while let Some((id, result)) = self.reactor.poll_job() {
                let _ = self.view.on_job(id, result);
            }
            while let Some(ev) = self.reactor.poll_http_event() {
                self.view.on_http(&mut self.reactor, ev);
            }
            self.next_tick = self.view.tick(&mut self.reactor, Instant::now());
            if self.servers.iter().all(|s| s.session.is_none() && s.retry_at.is_none()) {
                break;
            }
        }
        let _ = self.out.flush();
        self.servers.iter().filter_map(|s| s.exit_code).find(|&c| c != exit::OK).unwrap_or(exit::OK)
    }

    /// When the next turn ends at the latest: the view's next tick, --for, a reconnect or a netstats clock.
    fn wake(&self) -> Instant {
        let mut wake = self.next_tick;
        if let Some(d) = self.controls.deadline {
            wake = wake.min(d);
        }
        for s in &self.servers {
            if let Some(r) = s.retry_at {
                wake = wake.min(r);
            }
            if let Some(c) = &s.net_clock {
                wake = wake.min(c.deadline());
            }
        }
        wake
    }

    fn leave_all(&mut self) {
        for s in self.servers.iter_mut() {
            s.retry_at = None;
            if let Some(id) = s.session {
                self.reactor.leave(id);
            }
        }
        self.left = true;
    }

    /// Typed lines (chat goes out to every server), signals and --for.
    fn take_controls(&mut self) {
        for t in self.controls.asked(self.left) {
            match t {
                Typed::Quit => self.leave_all(),
                Typed::Chat(text) => {
                    for s in &self.servers {
                        if let Some(id) = s.session {
                            self.reactor.send_chat(id, player::ALL_PLAYERS, &text);
                        }
                    }
                }
            }
        }
    }

    /// The stamp of a JSON line about server `si` at `t`: with several servers, the line says which one.
    fn stamp(&self, si: usize, t: Duration) -> Stamp {
        Stamp { t, server: self.multi.then_some(si) }
    }

    /// Writes a line about server `si` (tagged when there are several; flushed at the end of the turn).
    fn line(&mut self, si: usize, line: &str) {
        let _ = writeln!(self.out, "{}", tag(line, &self.servers[si].label, self.a.json, self.multi));
        self.printed = true;
    }

    /// With --reconnect: connects again the servers whose back-off is over.
    fn retry_due(&mut self) {
        let now = Instant::now();
        for si in 0..self.servers.len() {
            if self.servers[si].retry_at.is_some_and(|t| t <= now) && !self.left {
                self.servers[si].retry_at = None;
                if !self.connect(si, false) {
                    let s = &mut self.servers[si];
                    let (attempt, delay) = s.backoff.failed(now);
                    s.retry_at = Some(now + delay);
                    let why = format!("cannot connect to {}", s.addr);
                    self.view.set_status(&mut self.reactor, si, Status::Reconnecting);
                    let t = self.stamp(si, now.saturating_duration_since(self.start));
                    self.line(si, &reconnecting_line(t, self.a.json, attempt, delay, &why));
                }
            }
        }
    }

    /// An observer's event: the back-off, the view, and the lines.
    fn on_event(&mut self, sid: SessionId, at: Instant, ev: Event) {
        let Some(si) = self.servers.iter().position(|s| s.session == Some(sid)) else { return };
        let t = self.stamp(si, at.saturating_duration_since(self.start));
        let json = self.a.json;
        let mut extra = None;
        match &ev {
            Event::Chat { from: player::SERVER, .. } => self.servers[si].backoff.heard_server_text(at),
            Event::Accept { .. } => {
                if let Some((attempt, down)) = self.servers[si].backoff.joined(at) {
                    extra = Some(reconnected_line(t, json, attempt, down));
                }
            }
            Event::Closed { reason } => {
                let code = exit::of(reason);
                let end = self.reactor.session(sid).and_then(|x| x.end().cloned());
                let (reconnect, left) = (self.reconnect, self.left);
                let s = &mut self.servers[si];
                match end.filter(|e| reconnect && !left && s.backoff.comes_back(e, at)) {
                    Some(end) => {
                        let (attempt, delay) = s.backoff.failed(at);
                        s.retry_at = Some(at + delay);
                        self.view.set_status(&mut self.reactor, si, Status::Reconnecting);
                        extra = Some(reconnecting_line(t, json, attempt, delay, &end.to_string()));
                    }
                    None => {
                        s.finished = true;
                        s.exit_code = Some(code);
                    }
                }
            }
            _ => {}
        }
        self.view.on_event(&mut self.reactor, si, at, &ev);
        if self.filter.allows(&ev) {
            let line = self.a.event_line(t, &ev);
            self.line(si, &line);
        }
        if let Some(line) = extra {
            self.line(si, &line);
        }
    }

    /// Each joined observer's netstats: /lagstats asked now and then (the page shows lag), the lines printed
    /// unless --netstats is 0.
    fn netstats(&mut self) {
        for si in 0..self.servers.len() {
            let Some(sid) = self.servers[si].session else { continue };
            while let Some(clock) = self.servers[si].net_clock.as_mut() {
                let now = Instant::now();
                match clock.poll(now) {
                    NetstatsDue::Nothing => break,
                    NetstatsDue::AskLag => {
                        if self.reactor.session(sid).is_some_and(|x| x.is_joined()) {
                            self.reactor.request_lag_stats(sid);
                        }
                    }
                    NetstatsDue::Print if self.print_netstats => {
                        let Some(session) = self.reactor.session(sid).filter(|x| x.is_joined()) else { continue };
                        let t = self.stamp(si, now.saturating_duration_since(self.start));
                        let lines: Vec<String> = netstats_block(session, now, t, self.a.json).collect();
                        for line in lines {
                            self.line(si, &line);
                        }
                    }
                    NetstatsDue::Print => {}
                }
            }
        }
    }

    /// Sessions that ended are taken off the reactor (a reconnect makes a new one).
    fn remove_ended(&mut self) {
        for s in self.servers.iter_mut() {
            if let Some(id) = s.session {
                if self.reactor.is_done(id) && (s.retry_at.is_some() || s.finished) {
                    if s.finished {
                        if let Some(end) = self.reactor.session(id).and_then(|x| x.end()) {
                            if exit::of(end) != exit::OK {
                                eprintln!("bzhead: {}: {end}", s.label);
                            }
                        }
                    }
                    if si_of_record(s, self.a) {
                        if let Some(err) = self.reactor.record_error(id) {
                            eprintln!("bzhead: the recording is incomplete: {err}");
                        }
                    }
                    self.reactor.remove_session(id);
                    s.session = None;
                }
            }
        }
    }
}

fn si_of_record(s: &Server, a: &ObserveArgs) -> bool {
    a.record.is_some() && a.servers.first() == Some(&s.label)
}

/// With several servers, a text line says which one it is about: it starts with `[LABEL] ` (a JSON line has
/// `"server":N` in its envelope, [`WebObservers::stamp`]).
fn tag(line: &str, label: &str, json: bool, multi: bool) -> String {
    if multi && !json {
        format!("[{label}] {line}")
    } else {
        line.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn web_addresses() {
        assert_eq!(web_addr("8080").unwrap(), "127.0.0.1:8080".parse().unwrap());
        assert_eq!(web_addr("0.0.0.0:80").unwrap(), "0.0.0.0:80".parse().unwrap());
        assert_eq!(web_addr("[::1]:8080").unwrap(), "[::1]:8080".parse().unwrap());
        assert!(web_addr("localhost").is_err());
        assert_eq!(tag(r#"{"v":1}"#, "a", true, true), r#"{"v":1}"#);
        assert_eq!(tag("--- x", "h:1", false, true), "[h:1] --- x");
        assert_eq!(tag("--- x", "h:1", false, false), "--- x");
    }
}
