//! `bzhead world`: fetch a server's world (or read a blob), build the model, print a summary or JSON, draw a map.
//!
//! ```text
//! bzhead world HOST[:PORT] [--json] [--svg FILE] [--no-cache | --cache-dir DIR] [--timeout SECONDS]
//! bzhead world --file BLOB [--json] [--svg FILE]
//! ```
//!
//! The download is [`bzhead::fetch::world`]: a world-only session on the reactor that closes without joining.
//! Exit codes: 0 done, 2 usage (bad arguments, unreadable file, unwritable SVG), 3 cannot connect, 6 protocol error
//! (a server that closes, stalls or sends a broken world; a blob that does not parse).

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use bzhead::bzflag::consts::DEFAULT_PORT;
use bzhead::bzflag::session::md5_hex;
use bzhead::bzflag::world::{parse_blob, report, WorldModel};
use bzhead::observer::exit;

/// Arguments of `bzhead world`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct WorldArgs {
    /// Server: HOST or HOST:PORT (port 5154 by default).
    #[arg(required_unless_present = "file", conflicts_with = "file")]
    pub server: Option<String>,
    /// Read a world blob instead: a cache file or the output of `bzfs -cacheout FILE`.
    #[arg(long, value_name = "BLOB")]
    pub file: Option<PathBuf>,
    /// Print the model as one JSON document instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Also write a top-down SVG map to FILE.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Do not read or write the world cache.
    #[arg(long)]
    pub no_cache: bool,
    /// World cache directory (default: $BZHEAD_CACHE_DIR, else $XDG_CACHE_HOME/bzhead/worlds).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Most MiB of worlds the cache keeps; the least recently used are removed beyond it (default 256).
    #[arg(long, value_name = "MIB")]
    pub cache_max_mib: Option<u64>,
    /// Seconds allowed for connecting and fetching the world.
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0, value_parser = bzhead::args::float(0.001, 86_400.0))]
    pub timeout: f64,
}

/// Runs the command; returns the process exit code.
pub fn run(args: WorldArgs) -> u8 {
    let (blob, hash) = match (&args.file, &args.server) {
        (Some(path), None) => match std::fs::read(path) {
            Ok(b) => {
                let h = md5_hex(&b);
                (b, h)
            }
            Err(e) => {
                eprintln!("bzhead: cannot read {}: {e}", path.display());
                return exit::USAGE;
            }
        },
        (None, Some(server)) => {
            let addr = match resolve(server) {
                Ok(a) => a,
                Err(e) => {
                    eprintln!("bzhead: {e}");
                    return exit::CONNECT;
                }
            };
            let cache = super::world_cache(args.no_cache, args.cache_dir.clone(), args.cache_max_mib);
            match bzhead::fetch::world(addr, cache, super::secs(args.timeout)) {
                Ok(f) => (f.blob, f.hash),
                Err(e) => {
                    // The error may quote the server (a reject reason).
                    eprintln!("bzhead: {}", bzhead::text::for_terminal(&e.to_string()));
                    return e.code;
                }
            }
        }
        _ => {
            eprintln!("bzhead: give either a server or --file BLOB");
            return exit::USAGE;
        }
    };
    let db = match parse_blob(&blob) {
        Ok(db) => db,
        Err(e) => {
            eprintln!("bzhead: {e}");
            return exit::PROTOCOL;
        }
    };
    let model = match WorldModel::build(&db) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("bzhead: {e}");
            return exit::PROTOCOL;
        }
    };
    if let Some(path) = &args.svg {
        if let Err(e) = std::fs::write(path, report::to_svg(&model)) {
            eprintln!("bzhead: cannot write {}: {e}", path.display());
            return exit::USAGE;
        }
    }
    let text = if args.json {
        let mut s = report::to_json_string(&model, &hash);
        s.push('\n');
        s
    } else {
        // Names in the summary come from the world file: each line through the terminal filter.
        let summary = report::summary(&model, &hash, blob.len());
        let mut clean = String::with_capacity(summary.len());
        for line in summary.lines() {
            clean.push_str(&bzhead::text::for_terminal(line));
            clean.push('\n');
        }
        clean
    };
    let mut out = std::io::stdout().lock();
    // A closed stdout (`| head`) is not an error worth reporting.
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    exit::OK
}

/// Resolves HOST or HOST:PORT (default port 5154), IPv4 first.
fn resolve(server: &str) -> Result<SocketAddr, String> {
    bzhead::reactor::resolve(server, DEFAULT_PORT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: WorldArgs,
    }

    #[test]
    fn arguments() {
        use clap::Parser;
        let a =
            Cli::try_parse_from(["world", "127.0.0.1:5154", "--json", "--svg", "m.svg", "--no-cache"]).unwrap().args;
        assert_eq!(a.server.as_deref(), Some("127.0.0.1:5154"));
        assert!(a.json && a.no_cache && a.file.is_none());
        assert_eq!(a.svg, Some(PathBuf::from("m.svg")));
        assert_eq!(a.timeout, 60.0);
        let a = Cli::try_parse_from(["world", "--file", "w.bin"]).unwrap().args;
        assert_eq!((a.server, a.file), (None, Some(PathBuf::from("w.bin"))));
        assert!(Cli::try_parse_from(["world"]).is_err(), "a server or --file is required");
        assert!(Cli::try_parse_from(["world", "host", "--file", "w.bin"]).is_err(), "not both");
    }

    #[test]
    fn addresses() {
        assert_eq!(resolve("127.0.0.1").unwrap(), "127.0.0.1:5154".parse().unwrap());
        assert_eq!(resolve("127.0.0.1:6000").unwrap(), "127.0.0.1:6000".parse().unwrap());
        assert_eq!(resolve("::1").unwrap(), "[::1]:5154".parse().unwrap());
    }

    #[test]
    fn files() {
        let dir = std::env::temp_dir().join(format!("bzhead-world-cmd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let blob = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/bzflag/02-custom-world.bin");
        let svg = dir.join("map.svg");
        let code = run(WorldArgs { file: Some(blob.into()), svg: Some(svg.clone()), ..WorldArgs::default() });
        assert_eq!(code, exit::OK);
        assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
        assert_eq!(run(WorldArgs { file: Some(dir.join("missing")), ..WorldArgs::default() }), exit::USAGE);
        let junk = dir.join("junk");
        std::fs::write(&junk, b"not a world").unwrap();
        assert_eq!(run(WorldArgs { file: Some(junk), ..WorldArgs::default() }), exit::PROTOCOL);
        assert_eq!(run(WorldArgs::default()), exit::USAGE);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
