//! `bzhead replay FILE`: a recording fed through the engine offline, its events printed as `observe` prints them.
//! Reads bzhead's own recordings (`observe --record`) and BZFlag's `.rec` files (`bzfs -recdir` + `/record`,
//! `observe --rec`), told apart by their first bytes.

use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::time::Instant;

use bzhead::http::Limits;
use bzhead::web::WebView;

use bzhead::observer::{json_line, text_line};

use super::exit;

/// Arguments of `bzhead replay`.
#[derive(clap::Args)]
pub struct ReplayArgs {
    /// The recording (bzhead's own, or a BZFlag `.rec`).
    file: PathBuf,
    /// Print JSON lines instead of text.
    #[arg(long)]
    json: bool,
    /// Also print these event types.
    #[arg(long, value_name = "TYPES")]
    show: Vec<String>,
    /// Do not print these event types.
    #[arg(long, value_name = "TYPES")]
    hide: Vec<String>,
    /// Print a report of each match instead of the events: one JSON document per match (kills, deaths, team
    /// kills, suicides, captures, flag grabs and hold times, shots, hits, time on team, team scores over time;
    /// docs/schemas/summary.schema.json).
    #[arg(long)]
    summary: bool,
    /// Serve the replay in the web view of `observe --web` on ADDR (`HOST:PORT`, or a bare `PORT` on 127.0.0.1),
    /// with a timeline: play, pause, speed from 0.25x to 64x, seek. Starts paused at the beginning; runs until
    /// interrupted.
    #[arg(long, value_name = "ADDR", conflicts_with_all = ["json", "summary", "show", "hide"])]
    web: Option<String>,
    /// With --web: another `Host` name the view answers on a loopback address (repeatable; `*` for any).
    #[arg(long, value_name = "NAME", requires = "web")]
    allow_host: Vec<String>,
}

/// Runs the command; returns the exit code.
pub fn run(a: ReplayArgs) -> u8 {
    if let Some(web) = &a.web {
        return run_web(&a, web);
    }
    let filter = match super::event_filter(&a.show, &a.hide) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let mut head = [0u8; 8];
    let is_rec = std::fs::File::open(&a.file)
        .and_then(|mut f| f.read(&mut head))
        .map(|n| bzhead::record::is_rec(&head[..n]))
        .unwrap_or(false);
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(256 * 1024, stdout.lock());
    let mut summary = bzhead::record::summary::Summarizer::new();
    let mut print = |t, ev: bzhead::bzflag::event::Event| {
        if a.summary {
            if let Some(m) = summary.event(t, &ev) {
                let _ = writeln!(out, "{}", bzhead::record::summary::json(&m));
            }
        } else if filter.allows(&ev) {
            let line = if a.json { json_line(t, &ev) } else { text_line(&ev) };
            let _ = writeln!(out, "{line}");
        }
    };
    let fail = |e: &dyn std::fmt::Display| {
        eprintln!("bzhead: {}: {e}", a.file.display());
        exit::USAGE
    };
    // Streamed: one record at a time, each event printed as it comes.
    let r = if is_rec {
        let (header, mut packets) = match bzhead::record::RecReader::open(&a.file) {
            Ok(x) => x,
            Err(e) => return fail(&e),
        };
        let (_, err) = bzhead::record::replay_rec(&header, packets.by_ref(), &mut print);
        if packets.truncated() {
            eprintln!("bzhead: {}: the file ends in the middle of a packet (replayed up to it)", a.file.display());
        }
        err.map_or(Ok(()), Err)
    } else {
        let (meta, records) = match bzhead::record::RecordReader::open(&a.file) {
            Ok(x) => x,
            Err(e) => return fail(&e),
        };
        bzhead::record::replay_stream(&meta, records, &mut print)
    };
    if a.summary {
        if let Some(m) = summary.finish() {
            let _ = writeln!(out, "{}", bzhead::record::summary::json(&m));
        }
    }
    let _ = out.flush();
    match r {
        Ok(()) => exit::OK,
        Err(e) => fail(&e),
    }
}

/// `bzhead replay FILE --web ADDR`: the recording in the web view, on one reactor, until interrupted.
fn run_web(a: &ReplayArgs, web: &str) -> u8 {
    let bind = match super::web::web_addr(web) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("bzhead: {e}");
            return exit::USAGE;
        }
    };
    let replay = match bzhead::web::replay::Replay::open(&a.file, Instant::now()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("bzhead: {}: {e}", a.file.display());
            return exit::USAGE;
        }
    };
    let mut reactor = match super::new_reactor() {
        Ok(r) => r,
        Err(code) => return code,
    };
    let (listener, local) = match reactor.add_http_listener(bind, Limits::from_env()) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("bzhead: cannot serve the web view on {bind}: {e}");
            return exit::USAGE;
        }
    };
    reactor.http_allow_hosts(listener, &a.allow_host);
    let label = a.file.file_name().map_or_else(|| a.file.display().to_string(), |n| n.to_string_lossy().into_owned());
    let status = replay.status(Instant::now());
    let mut view = WebView::for_replay(&label, replay);
    eprintln!("bzhead: web view on http://{local}/ (replay of {:.1} s, paused)", status.duration());
    let mut wake = Instant::now();
    loop {
        if let Err(e) = reactor.turn(Some(wake.saturating_duration_since(Instant::now()))) {
            eprintln!("bzhead: event loop failed: {e}");
            return exit::PROTOCOL;
        }
        while let Some((id, result)) = reactor.poll_job() {
            let _ = view.on_job(id, result);
        }
        while let Some(ev) = reactor.poll_http_event() {
            view.on_http(&mut reactor, ev);
        }
        wake = view.tick(&mut reactor, Instant::now());
    }
}
