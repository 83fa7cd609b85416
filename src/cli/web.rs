//! `observe --web ADDR HOST[:PORT]...`: one observer per server and the live web view, all on one reactor.
//!
//! Events are printed as `observe` prints them (with several servers, text lines start with `[HOST:PORT]` and JSON
//! lines carry `"server":N`, N counting from 0 in the order given). The web view ([`bzhead::web::WebView`]) is
//! served on ADDR by the same reactor; its URL goes to stderr.

use std::io::{self, BufRead, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bzhead::bzflag::consts::{player, PlayerType, Team, DEFAULT_PORT};
use bzhead::bzflag::event::Event;
use bzhead::bzflag::session::SessionConfig;
use bzhead::http::Limits;
use bzhead::netwatch::{
    link_line, netstats_lines, reconnected_line, reconnecting_line, NetstatsClock, NetstatsDue, Reconnect,
};
use bzhead::observer::{json_line, text_line, Filter};
use bzhead::reactor::{Reactor, SessionId, SessionOptions};
use bzhead::web::{Status, WebView};

use crate::{exit, secs, world_cache, ObserveArgs};

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

/// Runs the command; returns the exit code.
pub fn observe_web(a: &ObserveArgs, web: &str, filter: &Filter, reconnect: bool) -> u8 {
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
        match crate::resolve(s, DEFAULT_PORT) {
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
            Err(e) => {
                eprintln!("bzhead: {e}");
                return exit::CONNECT;
            }
        }
    }
    let multi = servers.len() > 1;
    let config = SessionConfig {
        callsign: a.callsign.clone(),
        motto: a.motto.clone(),
        team: Team::Observer,
        player_type: PlayerType::Tank,
        udp: !a.no_udp,
        full_join: true,
        hello_timeout: secs(a.hello_timeout),
        join_timeout: secs(a.join_timeout),
        idle_timeout: (a.idle_timeout.is_finite() && a.idle_timeout > 0.0).then(|| secs(a.idle_timeout)),
        ..SessionConfig::default()
    };
    let mut reactor = match Reactor::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("bzhead: cannot start the event loop: {e}");
            return exit::PROTOCOL;
        }
    };
    let (_listener, local) = match reactor.add_http_listener(bind, Limits::default()) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("bzhead: cannot serve the web view on {bind}: {e}");
            return exit::USAGE;
        }
    };
    let start = Instant::now();
    // The netstats lines as without --web; the page's lag figures want /lagstats now and then even without them.
    let print_netstats = secs(a.netstats) > Duration::ZERO;
    let net_every = if print_netstats { secs(a.netstats) } else { LAG_REFRESH };
    for s in servers.iter_mut() {
        s.net_clock = NetstatsClock::new(net_every, start);
    }
    let labels: Vec<(String, SocketAddr)> = servers.iter().map(|s| (s.label.clone(), s.addr)).collect();
    let mut view = WebView::new(&labels, start);
    eprintln!("bzhead: web view on http://{local}/");

    let connect = |reactor: &mut Reactor, view: &mut WebView, si: usize, s: &mut Server, first: bool| -> bool {
        // The first server records (if asked), on its first connection only.
        let record = if si == 0 && first { a.record.clone() } else { None };
        // (`..default()`: other options may be added to SessionOptions.)
        #[allow(clippy::needless_update)]
        let options =
            SessionOptions { record, cache: world_cache(a.no_cache, a.cache_dir.clone()), ..SessionOptions::default() };
        match reactor.add_session(s.addr, config.clone(), options) {
            Ok(id) => {
                s.session = Some(id);
                view.set_session(reactor, si, id);
                true
            }
            Err(e) => {
                eprintln!("bzhead: cannot connect to {}: {e}", s.addr);
                false
            }
        }
    };
    for (si, s) in servers.iter_mut().enumerate() {
        if !connect(&mut reactor, &mut view, si, s, true) {
            if reconnect {
                let (_, delay) = s.backoff.failed(Instant::now());
                s.retry_at = Some(Instant::now() + delay);
                view.set_status(&mut reactor, si, Status::Reconnecting);
            } else {
                return exit::CONNECT;
            }
        }
    }
    let deadline = a.for_secs.filter(|s| s.is_finite() && *s >= 0.0).map(|s| start + Duration::from_secs_f64(s));
    let sig_rx = super::leave_on_signals(reactor.waker());
    let (tx, rx) = mpsc::channel::<String>();
    let waker = reactor.waker();
    std::thread::spawn(move || {
        for line in io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
            let _ = waker.wake();
        }
    });

    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut left = false;
    let mut next_tick = Instant::now();
    loop {
        let now = Instant::now();
        let mut wake = next_tick;
        if let Some(d) = deadline {
            wake = wake.min(d);
        }
        for s in &servers {
            if let Some(r) = s.retry_at {
                wake = wake.min(r);
            }
            if let Some(c) = &s.net_clock {
                wake = wake.min(c.deadline());
            }
        }
        if let Err(e) = reactor.turn(Some(wake.saturating_duration_since(now))) {
            eprintln!("bzhead: event loop failed: {e}");
            return exit::PROTOCOL;
        }
        let leave_all = |reactor: &mut Reactor, servers: &mut Vec<Server>| {
            for s in servers.iter_mut() {
                s.retry_at = None;
                if let Some(id) = s.session {
                    reactor.leave(id);
                }
            }
        };
        while let Ok(line) = rx.try_recv() {
            let line = line.trim_end_matches(['\r', '\n']);
            if line.trim() == "/quit" {
                leave_all(&mut reactor, &mut servers);
                left = true;
            } else if !line.trim().is_empty() {
                let text = line.strip_prefix("//").map(|r| format!("/{r}")).unwrap_or_else(|| line.to_string());
                for s in &servers {
                    if let Some(id) = s.session {
                        reactor.send_chat(id, player::ALL_PLAYERS, &text);
                    }
                }
            }
        }
        if !left && (deadline.is_some_and(|d| Instant::now() >= d) || sig_rx.try_recv().is_ok()) {
            leave_all(&mut reactor, &mut servers);
            left = true;
        }
        let now = Instant::now();
        let mut printed = false;
        for (si, s) in servers.iter_mut().enumerate() {
            if s.retry_at.is_some_and(|t| t <= now) && !left {
                s.retry_at = None;
                if !connect(&mut reactor, &mut view, si, s, false) {
                    let (attempt, delay) = s.backoff.failed(now);
                    s.retry_at = Some(now + delay);
                    view.set_status(&mut reactor, si, Status::Reconnecting);
                    let why = format!("cannot connect to {}", s.addr);
                    let line = reconnecting_line(now.saturating_duration_since(start), a.json, attempt, delay, &why);
                    let _ = writeln!(out, "{}", tag(&line, si, &s.label, a.json, multi));
                    printed = true;
                }
            }
        }
        while let Some((sid, at, ev)) = reactor.poll_event() {
            let Some(si) = servers.iter().position(|s| s.session == Some(sid)) else { continue };
            let t = at.saturating_duration_since(start);
            let mut extra = None;
            match &ev {
                Event::Chat { from: player::SERVER, .. } => servers[si].backoff.heard_server_text(at),
                Event::Accept { .. } => {
                    if let Some((attempt, down)) = servers[si].backoff.joined(at) {
                        extra = Some(reconnected_line(t, a.json, attempt, down));
                    }
                }
                Event::Closed { exit_code, .. } => {
                    let code = u8::try_from(*exit_code).unwrap_or(exit::PROTOCOL);
                    let end = reactor.session(sid).and_then(|x| x.end().cloned());
                    let s = &mut servers[si];
                    match end.filter(|e| reconnect && !left && s.backoff.comes_back(e, at)) {
                        Some(end) => {
                            let (attempt, delay) = s.backoff.failed(at);
                            s.retry_at = Some(at + delay);
                            view.set_status(&mut reactor, si, Status::Reconnecting);
                            extra = Some(reconnecting_line(t, a.json, attempt, delay, &end.to_string()));
                        }
                        None => {
                            s.finished = true;
                            s.exit_code = Some(code);
                        }
                    }
                }
                _ => {}
            }
            view.on_event(&mut reactor, si, at, &ev);
            if filter.allows(&ev) {
                let line = if a.json { json_line(t, &ev) } else { text_line(&ev) };
                let _ = writeln!(out, "{}", tag(&line, si, &servers[si].label, a.json, multi));
                printed = true;
            }
            if let Some(line) = extra {
                let _ = writeln!(out, "{}", tag(&line, si, &servers[si].label, a.json, multi));
                printed = true;
            }
        }
        for (si, s) in servers.iter_mut().enumerate() {
            let (Some(sid), Some(clock)) = (s.session, s.net_clock.as_mut()) else { continue };
            loop {
                let now = Instant::now();
                match clock.poll(now) {
                    NetstatsDue::Nothing => break,
                    NetstatsDue::AskLag => {
                        if reactor.session(sid).is_some_and(|x| x.is_joined()) {
                            reactor.request_lag_stats(sid);
                        }
                    }
                    NetstatsDue::Print if print_netstats => {
                        if let Some(session) = reactor.session(sid).filter(|x| x.is_joined()) {
                            let t = now.saturating_duration_since(start);
                            let link = link_line(session, now, t, a.json);
                            for line in std::iter::once(link).chain(netstats_lines(session, now, t, a.json)) {
                                let _ = writeln!(out, "{}", tag(&line, si, &s.label, a.json, multi));
                                printed = true;
                            }
                        }
                    }
                    NetstatsDue::Print => {}
                }
            }
        }
        if printed {
            let _ = out.flush();
        }
        // Sessions that ended are taken off the reactor (a reconnect makes a new one).
        for s in servers.iter_mut() {
            if let Some(id) = s.session {
                if reactor.is_done(id) && (s.retry_at.is_some() || s.finished) {
                    if s.finished {
                        if let Some(end) = reactor.session(id).and_then(|x| x.end()) {
                            if end.exit_code() != 0 {
                                eprintln!("bzhead: {}: {end}", s.label);
                            }
                        }
                    }
                    if si_of_record(s, a) {
                        if let Some(err) = reactor.record_error(id) {
                            eprintln!("bzhead: the recording is incomplete: {err}");
                        }
                    }
                    reactor.remove_session(id);
                    s.session = None;
                }
            }
        }
        while let Some(ev) = reactor.poll_http_event() {
            view.on_http(&mut reactor, ev);
        }
        next_tick = view.tick(&mut reactor, Instant::now());
        let over = servers.iter().all(|s| s.session.is_none() && s.retry_at.is_none());
        if over {
            break;
        }
    }
    let _ = out.flush();
    servers.iter().filter_map(|s| s.exit_code).find(|&c| c != exit::OK).unwrap_or(exit::OK)
}

fn si_of_record(s: &Server, a: &ObserveArgs) -> bool {
    a.record.is_some() && a.servers.first() == Some(&s.label)
}

/// With several servers, a line says which one it is about: text lines start with `[LABEL] `, JSON lines get
/// `"server":N` first.
fn tag(line: &str, si: usize, label: &str, json: bool, multi: bool) -> String {
    match (multi, json) {
        (false, _) => line.to_string(),
        (true, true) => match line.strip_prefix('{') {
            Some(rest) => format!("{{\"server\":{si},{rest}"),
            None => line.to_string(),
        },
        (true, false) => format!("[{label}] {line}"),
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
        assert_eq!(tag(r#"{"v":1}"#, 2, "a", true, true), r#"{"server":2,"v":1}"#);
        assert_eq!(tag("--- x", 0, "h:1", false, true), "[h:1] --- x");
        assert_eq!(tag("--- x", 0, "h:1", false, false), "--- x");
    }
}
