//! A real `bzfs` on 127.0.0.1, killed on drop.

use std::ffi::OsString;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::output::OutputBuf;
use super::ports::{bzflag_udp_socket, free_port};
use super::{require_program, BZFS};

/// What bzfs prints (and exit code 2) when it cannot bind its port.
const BIND_FAILED: &str = "Unable to start the server";

/// The UDP "ping" (`MsgPingCodeRequest`, `len=2 code=0x0404 u16 0`) bzfs answers from its main loop.
const PING_REQUEST: [u8; 6] = [0x00, 0x02, 0x04, 0x04, 0x00, 0x00];
/// Start of the 60-byte reply: `len=56`, `MsgPingCodeReply` 0x0303, `BZFS`.
const PING_REPLY_PREFIX: [u8; 8] = [0x00, 0x38, 0x03, 0x03, b'B', b'Z', b'F', b'S'];

/// Options for starting a [`Bzfs`].
#[derive(Clone, Debug)]
pub struct BzfsBuilder {
    args: Vec<OsString>,
    port: Option<u16>,
    debug_level: u8,
    ready_timeout: Duration,
    time_scale: Option<f64>,
}

impl Default for BzfsBuilder {
    fn default() -> Self {
        BzfsBuilder {
            args: Vec::new(),
            port: None,
            debug_level: 2,
            ready_timeout: Duration::from_secs(15),
            time_scale: None,
        }
    }
}

/// Debian's libfaketime (package `libfaketime`), preloaded to run bzfs faster than real time.
pub const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

impl BzfsBuilder {
    /// One extra command-line argument, passed after `-i 127.0.0.1 -p PORT`.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Several extra arguments.
    pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// `-c`: classic capture the flag (on the built-in random team world unless a world is given).
    pub fn ctf(self) -> Self {
        self.arg("-c")
    }

    /// `-j`: jumping allowed.
    pub fn jumping(self) -> Self {
        self.arg("-j")
    }

    /// `+r`: all shots ricochet.
    pub fn ricochet(self) -> Self {
        self.arg("+r")
    }

    /// `-world FILE`.
    pub fn world(self, path: impl AsRef<Path>) -> Self {
        self.arg("-world").arg(path.as_ref().as_os_str())
    }

    /// `-mp SPEC`: maximum players, total (`"8"`) or per team (`"rogue,red,green,blue,purple,observer"`).
    pub fn max_players(self, spec: &str) -> Self {
        self.arg("-mp").arg(spec)
    }

    /// `-ms N`: maximum simultaneous shots per player.
    pub fn max_shots(self, n: u32) -> Self {
        self.arg("-ms").arg(n.to_string())
    }

    /// `-srvmsg TEXT`: a line the server says to every joining player.
    pub fn srvmsg(self, text: &str) -> Self {
        self.arg("-srvmsg").arg(text)
    }

    /// A fixed port instead of a fresh [`free_port`] (no retry if it is taken).
    pub fn port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }

    /// How many `-d` flags (default 2: joins, parts, chat, UDP link and version strings are logged; 0 logs
    /// almost nothing, more adds little).
    pub fn debug_level(mut self, n: u8) -> Self {
        self.debug_level = n;
        self
    }

    /// Runs the server `k` times as fast as real time: libfaketime preloaded with `FAKETIME='+0 xK'` (what
    /// `faketime -f '+0 xK' bzfs ...` does, with bzfs itself as the child, so that dropping it kills the server).
    /// Its log and readiness wait stay in real time.
    pub fn time_scale(mut self, k: f64) -> Self {
        self.time_scale = Some(k);
        self
    }

    /// How long to wait for the server to become ready (default 15 s).
    pub fn ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }

    /// Starts the server and waits until it is ready; fails the test with the server log if it cannot.
    #[track_caller]
    pub fn start(self) -> Bzfs {
        match self.try_start() {
            Ok(bzfs) => bzfs,
            Err(e) => panic!("{e}"),
        }
    }

    /// Starts the server and waits until it is ready. Retries with a new port (up to 5 times) if the port was
    /// taken in the meantime, unless a fixed port was asked for.
    ///
    /// Ready means: the process is running, its TCP port is in LISTEN state (read from `/proc/net/tcp`, so no
    /// probe connection shows up as a phantom player in the log) and it answers a UDP ping, which bzfs does from
    /// its main loop after both sockets are open. With `-q` (no ping replies) a TCP connect is the probe.
    pub fn try_start(self) -> Result<Bzfs, String> {
        require_program(BZFS);
        let attempts = if self.port.is_some() { 1 } else { 5 };
        let mut last_err = String::new();
        for _ in 0..attempts {
            let port = self.port.unwrap_or_else(free_port);
            match self.start_on(port) {
                Ok(bzfs) => return Ok(bzfs),
                Err((retry, e)) => {
                    last_err = e;
                    if !retry {
                        break;
                    }
                }
            }
        }
        Err(last_err)
    }

    /// `Err((port_conflict, message))`.
    fn start_on(&self, port: u16) -> Result<Bzfs, (bool, String)> {
        let mut cmd = Command::new(BZFS);
        cmd.args(["-i", "127.0.0.1", "-p", &port.to_string()]);
        cmd.args(&self.args);
        cmd.args(std::iter::repeat_n("-d", usize::from(self.debug_level)));
        if let Some(k) = self.time_scale {
            super::require_program(LIBFAKETIME);
            cmd.env("LD_PRELOAD", LIBFAKETIME).env("FAKETIME", format!("+0 x{k}"));
        }
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let command_line = format!("{cmd:?}");
        let mut child = cmd.spawn().map_err(|e| (false, format!("cannot start {command_line}: {e}")))?;
        let log = OutputBuf::new();
        if let Some(out) = child.stdout.take() {
            log.attach("bzfs-stdout", out);
        }
        if let Some(err) = child.stderr.take() {
            log.attach("bzfs-stderr", err);
        }
        let mut bzfs = Bzfs { child, port, log, command_line, builder: self.clone() };

        let no_ping = self.args.iter().any(|a| a == "-q");
        let deadline = Instant::now() + self.ready_timeout;
        let ping = bzflag_udp_socket().map_err(|e| (false, format!("cannot open a UDP socket: {e}")))?;
        let _ = ping.set_read_timeout(Some(Duration::from_millis(100)));
        loop {
            if let Ok(Some(status)) = bzfs.child.try_wait() {
                // Let the reader threads collect the last lines before reporting.
                bzfs.log.wait_until(Duration::from_secs(2), |_| false);
                let text = bzfs.log.text();
                return Err((
                    text.contains(BIND_FAILED),
                    format!("{} exited with {status} before it was ready. Its output:\n{text}", bzfs.command_line),
                ));
            }
            if tcp_listening(port) != Some(false) {
                if no_ping {
                    if TcpStream::connect_timeout(&bzfs.addr(), Duration::from_millis(200)).is_ok() {
                        return Ok(bzfs);
                    }
                } else if ping.send_to(&PING_REQUEST, bzfs.addr()).is_ok() {
                    let mut buf = [0u8; 1024];
                    if let Ok((n, _)) = ping.recv_from(&mut buf) {
                        if buf[..n].starts_with(&PING_REPLY_PREFIX) {
                            return Ok(bzfs);
                        }
                    }
                    continue; // the recv timeout paced this iteration
                }
            }
            if Instant::now() >= deadline {
                return Err((
                    false,
                    format!(
                        "{} was not ready within {:?}. Its output so far:\n{}",
                        bzfs.command_line,
                        self.ready_timeout,
                        bzfs.log.text()
                    ),
                ));
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Whether 127.0.0.1:`port` is in TCP LISTEN state per `/proc/net/tcp`; `None` if that file is unavailable.
fn tcp_listening(port: u16) -> Option<bool> {
    let table = super::proc_net("tcp")?;
    let local = format!("0100007F:{port:04X}");
    Some(table.lines().skip(1).any(|line| {
        let mut fields = line.split_whitespace().skip(1); // "sl"
        let (Some(l), Some(_remote), Some(state)) = (fields.next(), fields.next(), fields.next()) else {
            return false;
        };
        l == local && state == "0A"
    }))
}

/// A running `/usr/games/bzfs -i 127.0.0.1 -p PORT [args] -d -d`, with its stdout and stderr collected.
/// Killed (SIGKILL) and reaped on drop; when dropped during a panic it prints the tail of its log to stderr.
pub struct Bzfs {
    child: Child,
    port: u16,
    log: OutputBuf,
    command_line: String,
    /// How it was started, for [`Bzfs::restart`].
    builder: BzfsBuilder,
}

impl Bzfs {
    /// Options; finish with `.start()`.
    pub fn builder() -> BzfsBuilder {
        BzfsBuilder::default()
    }

    /// A default server (team FFA on the built-in random world) on a fresh port.
    #[track_caller]
    pub fn start() -> Bzfs {
        BzfsBuilder::default().start()
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:PORT` (TCP and UDP).
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// `"127.0.0.1:PORT"`, the form bzhead and bzadmin take on the command line.
    pub fn host_port(&self) -> String {
        self.addr().to_string()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The exact command that was run, for messages.
    pub fn command_line(&self) -> &str {
        &self.command_line
    }

    /// Everything the server printed so far (stdout and stderr, whole lines).
    pub fn log(&self) -> String {
        self.log.text()
    }

    /// The live log buffer (marks, counts, predicates).
    pub fn log_buf(&self) -> &OutputBuf {
        &self.log
    }

    /// A position in the log for [`Bzfs::wait_for_log_since`].
    pub fn log_mark(&self) -> usize {
        self.log.mark()
    }

    /// Waits until the log contains `pattern`; false on timeout or if the server exited without printing it.
    pub fn wait_for_log(&self, pattern: &str, timeout: Duration) -> bool {
        self.log.wait_for(pattern, timeout)
    }

    /// Waits until the log after `mark` contains `pattern`.
    pub fn wait_for_log_since(&self, mark: usize, pattern: &str, timeout: Duration) -> bool {
        self.log.wait_for_since(mark, pattern, timeout)
    }

    /// True while the process has not exited.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills and reaps the server now; returns its complete log.
    pub fn stop(mut self) -> String {
        self.kill();
        self.log.wait_until(Duration::from_secs(2), |_| false); // until the pipes close
        self.log.text()
    }

    /// Kills the server (as a crash would: SIGKILL, no goodbye to anybody) and returns its whole log.
    pub fn kill_now(&mut self) -> String {
        self.kill();
        self.log.wait_until(Duration::from_secs(2), |_| false);
        self.log.text()
    }

    /// Stops the server the way an operator does (SIGTERM: bzfs sends every player a `MsgSuperKill` and exits)
    /// and waits up to `timeout` for it to exit; returns its whole log. Panics if it is still running then.
    #[track_caller]
    pub fn terminate(&mut self, timeout: Duration) -> String {
        let status = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        assert!(status.as_ref().is_ok_and(|s| s.success()), "kill -TERM {} failed: {status:?}", self.child.id());
        let deadline = Instant::now() + timeout;
        while self.is_running() {
            assert!(Instant::now() < deadline, "bzfs did not exit within {timeout:?} of SIGTERM");
            thread::sleep(Duration::from_millis(50));
        }
        self.log.wait_until(Duration::from_secs(2), |_| false);
        self.log.text()
    }

    /// Starts the same command again on the same port (after [`Bzfs::kill_now`], or killing it first), retrying
    /// for up to `timeout` while the port is still taken. The log starts afresh.
    #[track_caller]
    pub fn restart(&mut self, timeout: Duration) {
        self.kill();
        let builder = self.builder.clone().port(self.port);
        let deadline = Instant::now() + timeout;
        loop {
            match builder.start_on(self.port) {
                Ok(new) => {
                    *self = new;
                    return;
                }
                Err((true, e)) if Instant::now() < deadline => {
                    let _ = e;
                    thread::sleep(Duration::from_millis(100));
                }
                Err((_, e)) => panic!("bzfs did not start again on port {}: {e}", self.port),
            }
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Bzfs {
    fn drop(&mut self) {
        self.kill();
        if thread::panicking() {
            eprintln!("--- last lines of {} ---\n{}\n---", self.command_line, self.log.tail(60));
        }
    }
}
