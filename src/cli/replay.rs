//! `bzhead replay FILE`: a recording (made with `observe --record`) fed through the engine offline, its events
//! printed as `observe` prints them.

use std::io::{self, Write};
use std::path::PathBuf;

use bzhead::observer::{json_line, text_line};

use super::exit;

/// Arguments of `bzhead replay`.
#[derive(clap::Args)]
pub struct ReplayArgs {
    /// The recording.
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
}

/// Runs the command; returns the exit code.
pub fn run(a: ReplayArgs) -> u8 {
    let filter = match super::event_filter(&a.show, &a.hide) {
        Ok(f) => f,
        Err(code) => return code,
    };
    // Streamed: one record at a time, each event printed as it comes.
    let (meta, records) = match bzhead::record::RecordReader::open(&a.file) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("bzhead: {}: {e}", a.file.display());
            return exit::USAGE;
        }
    };
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let r = bzhead::record::replay_stream(&meta, records, |t, ev| {
        if filter.allows(&ev) {
            let line = if a.json { json_line(t, &ev) } else { text_line(&ev) };
            let _ = writeln!(out, "{line}");
        }
    });
    let _ = out.flush();
    match r {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("bzhead: {}: {e}", a.file.display());
            exit::USAGE
        }
    }
}
