//! The real `bzadmin` as a headless observer, killed on drop.

use std::ffi::OsString;
use std::io::Write;
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::output::OutputBuf;
use super::{require_program, BZADMIN, WAIT};

/// Options for starting a [`Bzadmin`].
#[derive(Clone, Debug)]
pub struct BzadminBuilder {
    callsign: String,
    server: SocketAddr,
    args: Vec<OsString>,
}

impl BzadminBuilder {
    /// `-show TYPES` (comma separated bzadmin message types, e.g. `"playerupdate"`).
    pub fn show(mut self, types: &str) -> Self {
        self.args.extend(["-show".into(), types.into()]);
        self
    }

    /// `-hide TYPES`.
    pub fn hide(mut self, types: &str) -> Self {
        self.args.extend(["-hide".into(), types.into()]);
        self
    }

    /// Any other argument (placed before `CALLSIGN@HOST:PORT`).
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Starts bzadmin without waiting for anything.
    #[track_caller]
    pub fn start(self) -> Bzadmin {
        require_program(BZADMIN);
        let mut cmd = Command::new(BZADMIN);
        // `stdboth`: messages on stdout, typed lines from stdin. (`-ui stdout` never reads stdin.)
        cmd.args(["-ui", "stdboth"]).args(&self.args).arg(format!("{}@{}", self.callsign, self.server));
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let command_line = format!("{cmd:?}");
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {command_line}: {e}"));
        let out = OutputBuf::new();
        if let Some(p) = child.stdout.take() {
            out.attach("bzadmin-stdout", p);
        }
        if let Some(p) = child.stderr.take() {
            out.attach("bzadmin-stderr", p);
        }
        let stdin = child.stdin.take();
        Bzadmin { child, stdin, out, callsign: self.callsign, command_line }
    }

    /// Starts bzadmin and waits until it prints its own join line; fails the test (showing its output) if it
    /// does not within [`WAIT`].
    #[track_caller]
    pub fn join(self) -> Bzadmin {
        let admin = self.start();
        if !admin.wait_joined(WAIT) {
            panic!("{} did not join within {WAIT:?}. Its output:\n{}", admin.command_line, admin.output());
        }
        admin
    }
}

/// A running `bzadmin -ui stdboth CALLSIGN@127.0.0.1:PORT`: stdout and stderr collected into one buffer, stdin
/// piped for chat.
///
/// What it prints (2.4.26): stderr `Connecting to CALLSIGN@HOST:PORT`; on join
/// `*** 'CALLSIGN' joined the game as Observer.`; server lines as `    [SERVER->] TEXT`; public chat as
/// `    SENDER: TEXT`; `*** 'NAME' left the game.`; `*** 'VICTIM' destroyed by 'KILLER'.`. A rejection prints the
/// server's reason on stderr and exits 1; an unreachable server prints `Error connecting to server.` and exits 1.
/// A typed line is sent as public chat; `/quit` (or EOF on stdin) leaves cleanly with exit 0.
pub struct Bzadmin {
    child: Child,
    stdin: Option<ChildStdin>,
    out: OutputBuf,
    callsign: String,
    command_line: String,
}

impl Bzadmin {
    /// Options for an observer called `callsign` on `server`; finish with `.start()` or `.join()`.
    pub fn builder(callsign: &str, server: SocketAddr) -> BzadminBuilder {
        BzadminBuilder { callsign: callsign.to_string(), server, args: Vec::new() }
    }

    /// Starts an observer and waits for its join line (see [`BzadminBuilder::join`]).
    #[track_caller]
    pub fn join(callsign: &str, server: SocketAddr) -> Bzadmin {
        Bzadmin::builder(callsign, server).join()
    }

    pub fn callsign(&self) -> &str {
        &self.callsign
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything bzadmin printed so far.
    pub fn output(&self) -> String {
        self.out.text()
    }

    /// The live output buffer (marks, counts, predicates).
    pub fn output_buf(&self) -> &OutputBuf {
        &self.out
    }

    /// Waits until the output contains `pattern`; false on timeout or if bzadmin exited without printing it.
    pub fn wait_for_output(&self, pattern: &str, timeout: Duration) -> bool {
        self.out.wait_for(pattern, timeout)
    }

    /// Waits for `*** 'CALLSIGN' joined the game`.
    pub fn wait_joined(&self, timeout: Duration) -> bool {
        self.wait_for_output(&format!("*** '{}' joined the game", self.callsign), timeout)
    }

    /// Sends one line as typed (public chat, or a `/command`). Panics if bzadmin's stdin is closed.
    #[track_caller]
    pub fn send_line(&mut self, line: &str) {
        assert!(!line.contains('\n'), "one line at a time: {line:?}");
        let stdin = self.stdin.as_mut().expect("bzadmin stdin already closed");
        let res = stdin.write_all(format!("{line}\n").as_bytes()).and_then(|()| stdin.flush());
        if let Err(e) = res {
            panic!("cannot write to bzadmin ({e}); its output:\n{}", self.output());
        }
    }

    /// Says `text` to everybody (a line not starting with `/`).
    #[track_caller]
    pub fn say(&mut self, text: &str) {
        assert!(!text.starts_with('/'), "{text:?} would be a bzadmin command");
        self.send_line(text);
    }

    /// Sends `/quit` and waits up to `timeout` for bzadmin to exit; `None` if it did not (it is killed on drop).
    pub fn quit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.write_all(b"/quit\n").and_then(|()| stdin.flush());
        }
        self.wait_exit(timeout)
    }

    /// Waits up to `timeout` for bzadmin to exit by itself.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
                _ => return None,
            }
        }
    }
}

impl Drop for Bzadmin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if thread::panicking() {
            eprintln!("--- last lines of {} ---\n{}\n---", self.command_line, self.out.tail(40));
        }
    }
}
