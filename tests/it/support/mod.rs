//! The harness every integration test uses: real BZFlag programs on loopback, child processes with deadlines,
//! temp dirs and a pcap reader for the shared captures.
//!
//! Everything here waits for *events* with deadlines (a log line, an open port, a process exit) and never
//! asserts on timing. Short sleeps happen only inside the polling loops that wait for another process. Every
//! spawned process is killed and reaped on `Drop`, so a failing (panicking) test leaves no server behind.
//!
//! Missing programs are a test *failure* with a message that says how to install them, never a silent skip.

#![allow(dead_code, unused_imports)] // each test module uses a different part of the harness

mod bzadmin;
mod bzfs;
pub mod fake;
pub mod gameservers;
pub mod netem;
mod output;
pub mod pcap;
pub mod peak;
pub mod plugins;
mod ports;
mod process;
pub mod relay;
pub mod standin;
mod tempdir;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub use bzadmin::{Bzadmin, BzadminBuilder};
pub use bzfs::{Bzfs, BzfsBuilder};
pub use output::OutputBuf;
pub use ports::{free_port, port_is_usable_for_bzflag_udp};
pub use process::{run_with_deadline, run_with_input, RunOutput};
pub use tempdir::TempDir;

/// The real BZFlag 2.4 server.
pub const BZFS: &str = "/usr/games/bzfs";
/// The real headless observer.
pub const BZADMIN: &str = "/usr/games/bzadmin";
/// The real query tool (a Perl script).
pub const BZFQUERY: &str = "/usr/games/bzfquery";

/// A generous deadline for "this should happen soon" waits on loopback. Tests only ever wait *up to* this long;
/// on success they continue as soon as the event is seen.
pub const WAIT: Duration = Duration::from_secs(10);

/// Panics (fails the test) unless `path` exists, saying how to install it. Real peers are part of the test
/// suite: skipping silently would turn a broken machine into a green run.
#[track_caller]
pub fn require_program(path: &str) {
    if !Path::new(path).exists() {
        panic!(
            "{path} is missing. The integration tests run the real programs: run `scripts/install-peers` (as \
             root or with sudo; `./test` runs it first), or `sudo apt-get install bzflag-server ddnet-server \
             teeworlds-server openarena-server qstat` (Debian/Ubuntu)."
        );
    }
}

/// `/proc/net/NAME` as this thread sees it. `/proc/net` is the network namespace of the process's main thread; a
/// test that moved its own thread into a private namespace (see [`netem`]) must read `/proc/thread-self/net`.
pub fn proc_net(name: &str) -> Option<String> {
    std::fs::read_to_string(format!("/proc/thread-self/net/{name}"))
        .or_else(|_| std::fs::read_to_string(format!("/proc/net/{name}")))
        .ok()
}

/// Path of the `bzhead` binary built for this test run.
pub fn bzhead_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_bzhead"))
}

/// A `Command` for the built `bzhead` binary with `args`, with a clean logging environment.
pub fn bzhead<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let mut cmd = Command::new(bzhead_bin());
    cmd.args(args).env_remove("RUST_LOG");
    cmd
}

/// Runs `bzhead ARGS` to completion (killed if it overruns `deadline`) and collects its output.
pub fn run_bzhead<I, S>(args: I, deadline: Duration) -> RunOutput
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    run_with_deadline(&mut bzhead(args), deadline)
}

/// Runs the real `bzfquery` against `addr` and returns what it printed (stdout, then stderr). Fails the test if
/// it is missing or does not finish within [`WAIT`].
#[track_caller]
pub fn run_bzfquery(addr: std::net::SocketAddr) -> String {
    require_program(BZFQUERY);
    let out = run_with_deadline(Command::new(BZFQUERY).arg(addr.ip().to_string()).arg(addr.port().to_string()), WAIT);
    assert!(!out.timed_out, "bzfquery {addr} did not finish within {WAIT:?}:\n{}", out.describe());
    let mut text = out.stdout;
    text.push_str(&out.stderr);
    text
}

/// The directory holding the vendored BZFlag loopback captures (`*.pcap` + decoded `*.txt` listings), copied
/// from the project's shared capture set; see its `README.md`.
pub fn captures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/bzflag")
}

/// `captures_dir()/name`.
pub fn capture_path(name: &str) -> PathBuf {
    captures_dir().join(name)
}
