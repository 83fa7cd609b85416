//! `bzhead replay FILE`: a recording fed through the engine offline, its events printed as `observe` prints them.
//! Reads bzhead's own recordings (`observe --record`) and BZFlag's `.rec` files (`bzfs -recdir` + `/record`,
//! `observe --rec`), told apart by their first bytes.

use std::io::{self, Read, Write};
use std::path::PathBuf;

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
}

/// Runs the command; returns the exit code.
pub fn run(a: ReplayArgs) -> u8 {
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
