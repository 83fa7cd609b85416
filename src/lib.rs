//! bzhead: a headless BZFlag 2.4 client core and a server-query plugin host that share one `mio` event loop.
//!
//! # The map
//!
//! Modules in layers: each uses only the modules listed before it (a unit test of this file, `map_tests`, reads
//! every `crate::` path in the sources and fails on one that runs up the map or across a layer).
//!
//! 1. Bytes and text, used everywhere:
//!    * [`wire`]: bytes only. The panic-free reader the query plugins share (the `bzhead-wire` crate), BZFlag's
//!      encodings on top of it, and a writer.
//!    * [`text`]: text from peers made safe for a terminal (every text output goes through it).
//!    * [`args`]: value parsers that refuse NaN, infinities and out-of-range numbers on the command line.
//! 2. [`bzflag`]: the sans-IO BZFlag 2.4 (`BZFS0221`) engine, where BZFlag's bytes become events: messages
//!    ([`bzflag::msg`]: bytes to typed messages), the session state machine ([`bzflag::session`]: messages to
//!    [`bzflag::event::Event`]s, and why a session ended, [`bzflag::session::SessionEnd`]), the roster, flags and
//!    server variables, the world (parser, model, BVH queries, shot paths) and play (tank physics, dead reckoning,
//!    shots, hits). It takes bytes, datagrams and `now: Instant`, and gives back events, bytes to send and its next
//!    deadline. It never touches a socket, a file or the clock.
//! 3. Sans-IO parts the reactor drives, and the files it reads and writes:
//!    * [`query`]: the server-query host: C-ABI protocol plugins (loaded with `libloading`: the plugin ABI and the
//!      only `unsafe` code of the crate but the reactor's socket batching), the sans-IO scan scheduler, the result
//!      shape shared by every protocol, and the built-in `bzflag` protocol's answer in it ([`query::bzflag`]).
//!    * [`http`]: a sans-IO HTTP/1.1 server side (requests parsed with `httparse`, responses, Server-Sent Events,
//!      bounded buffers and timeouts).
//!    * [`record`]: session recordings (`--record`): the file format, written by the reactor, and their offline
//!      replay through the same engine.
//!    * [`cache`]: the on-disk world cache the reactor answers the engine's world requests from (on its worker).
//! 4. [`reactor`]: one `mio::Poll` owns every socket and timer, for any number of sessions, query scans and HTTP
//!    connections; blocking or peer-sized work (world files, models) runs on its one worker thread.
//! 5. What the commands print: [`observer`] (bzadmin-style text or JSON lines, and the exit code a session's end
//!    gives, [`observer::exit`]); [`netwatch`]: its per-player `netstats` lines and `--reconnect` back-off.
//! 6. Applications:
//!    * [`bot`]: bots, and the host that runs them on the reactor.
//!    * [`bzrc`]: the BZRC text protocol of the BZRFlag course labs (sans-IO: lines in, replies out, commands to
//!      the tanks through a trait), which `bzhead bzrc` serves on the reactor's line listeners with bots' tanks.
//!    * [`fetch`]: a server's world fetched with a world-only session (what the `world` command prints and draws).
//!    * [`web`]: the live web view of `observe --web`, on [`http`] and the reactor.
//!    * [`monitor`]: `bzhead monitor`: the sans-IO core of continuous scans (rounds of [`query`] results in,
//!      events and database batches out), the history in SQLite ([`monitor::store`], the only SQL of the crate),
//!      the change feed, the HTTP API's answers and metrics. The command drives its scans on the reactor.
//!    * [`master`]: the monitor as a master (on the monitor's state): the BZFlag list server, DDNet's HTTP master
//!      and the merged list with provenance, served on the monitor's HTTP listener, and the dpmaster master on UDP
//!      (the reactor's UDP services carry it); all sans-IO.
//!    * [`env`]: the learning environments' game side (observations, rays through the world, actions, rewards
//!      from the game's events, the decision clock) on a bot's view; `bzhead.env` in Python wraps it.
//!
//! Where I/O happens: sockets and timers only in [`reactor`]; blocking or peer-sized work on the reactor's one
//! worker mechanism ([`reactor`]'s `worker`: jobs on named lanes, one thread each, results back through the poll's
//! waker): world files and models ([`cache`], [`web`]), the monitor's SQLite writes ([`monitor::store`], lane
//! `monitor-db`) and its HTTPS master-list fetches ([`monitor::masters`] with `ureq`, lane `monitor-fetch`). Files
//! also in [`record`] (recordings, written by the reactor) and [`query::loader`] (plugin libraries); the terminal
//! and the process in `src/cli/` (stdin and signals read on two small threads that wake the poll). No library
//! module starts a thread of its own.
//!
//! The binary is a thin clap layer over these: `src/main.rs` parses and dispatches to one module per command in
//! `src/cli/` (observe, replay, query, scan, world, monitor, bot); its exit codes ([`observer::exit`] for the game
//! commands) are documented in the README.
//!
//! Vectors in the public API are [`glam`]'s (`Vec2`, `Vec3`, and `Affine3A` in world transforms), re-exported here
//! ([`Vec2`], [`Vec3`], [`Affine3A`], and the crate itself as [`glam`]) so that users need no `glam` dependency of
//! their own, nor one of the same version.
//!
//! # Stability
//!
//! bzhead is 0.x: before 1.0 a minor release (0.1 → 0.2) may change the public API, and the changelog says what
//! changed. What already holds within 0.x: the exit codes, the JSON shapes (`"v":1` in every line, described by
//! `docs/schemas/`; fields may be added, none removed or retyped without a new `v`), the plugin ABI
//! (`query_abi::ABI_VERSION`, checked at load; a change bumps it) and the `--record` file format. Everything else
//! (module layout, type and function names, which internals are public) may still move; `docs/stability.md` lists
//! what is expected to.
#![warn(missing_docs)]

/// The `glam` crate bzhead's public API uses.
pub use glam;
/// Vectors and transforms of the public API (from [`glam`]).
pub use glam::{Affine3A, Vec2, Vec3};

#[forbid(unsafe_code)]
pub mod args;
#[forbid(unsafe_code)]
pub mod bot;
#[forbid(unsafe_code)]
pub mod bzflag;
#[forbid(unsafe_code)]
pub mod bzrc;
#[forbid(unsafe_code)]
pub mod cache;
#[forbid(unsafe_code)]
pub mod env;
#[forbid(unsafe_code)]
pub mod fetch;
#[forbid(unsafe_code)]
pub mod http;
/// The monitor as a master: the BZFlag list server, DDNet's HTTP master, the dpmaster master, the merged list with
/// provenance.
#[forbid(unsafe_code)]
pub mod master;
#[forbid(unsafe_code)]
pub mod monitor;
#[forbid(unsafe_code)]
pub mod netwatch;
#[forbid(unsafe_code)]
pub mod observer;
pub mod query;
pub mod reactor;
#[forbid(unsafe_code)]
pub mod record;
#[forbid(unsafe_code)]
pub mod text;
#[forbid(unsafe_code)]
pub mod web;
#[forbid(unsafe_code)]
pub mod wire;

/// The crate doc's map checked against the sources: every `crate::` path outside tests and comments goes to a
/// module listed before its own.
#[cfg(test)]
mod map_tests {
    use std::path::{Path, PathBuf};

    /// The top-level modules in the map's order.
    const MAP: &[&str] = &[
        "wire", "text", "args", "bzflag", "query", "http", "record", "cache", "reactor", "observer", "netwatch", "bot",
        "bzrc", "fetch", "web", "monitor", "master", "env",
    ];

    fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                sources(&p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }

    /// The top-level modules a source names with `crate::X` (and `crate::{X, Y::..}`), tests and comments left out.
    fn uses(text: &str) -> Vec<String> {
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
        let ident = |s: &str| s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
        let mut out = Vec::new();
        for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for (i, _) in line.match_indices("crate::") {
                let rest = &line[i + "crate::".len()..];
                match rest.strip_prefix('{') {
                    Some(group) => {
                        let group = group.split('}').next().unwrap_or("");
                        out.extend(group.split(',').map(|item| ident(item.trim())));
                    }
                    None => out.push(ident(rest)),
                }
            }
        }
        out
    }

    #[test]
    fn no_module_uses_one_below_it() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut bad = Vec::new();
        for (rank, module) in MAP.iter().enumerate() {
            let mut files = Vec::new();
            let dir = src.join(module);
            if dir.is_dir() {
                sources(&dir, &mut files);
            } else {
                files.push(src.join(format!("{module}.rs")));
            }
            for f in files {
                let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if name == "tests.rs" || name.ends_with("_tests.rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&f).unwrap();
                for used in uses(&text) {
                    let Some(at) = MAP.iter().position(|m| *m == used) else { continue };
                    if at > rank {
                        bad.push(format!("{} uses crate::{used}", f.display()));
                    }
                }
            }
        }
        // Every top-level module is on the map.
        let mut listed = Vec::new();
        for e in std::fs::read_dir(&src).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().trim_end_matches(".rs").to_string();
            if !["lib", "main", "cli"].contains(&name.as_str()) {
                listed.push(name);
            }
        }
        listed.retain(|m| !MAP.contains(&m.as_str()));
        assert!(listed.is_empty(), "modules not on the map: {listed:?}");
        assert!(bad.is_empty(), "imports that run up the map:\n{}", bad.join("\n"));
    }

    #[test]
    fn paths_are_read_in_both_forms() {
        assert_eq!(
            uses("use crate::bzflag::msg;\n// crate::web\nlet x = crate::{query, text::for_terminal};"),
            ["bzflag", "query", "text"]
        );
    }
}
