//! Running a command to completion with a deadline and measuring its peak memory: the kernel's own figure
//! (`ru_maxrss` from `wait4`, the same number as `VmHWM` in `/proc/PID/status` at exit), so a short spike just before
//! the process exits is not missed the way sampling `/proc` would miss it. The figure includes the test process's
//! resident size at the fork (a few MiB), so limits must be generous.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::process::OutputPipes;
use super::RunOutput;

/// What [`run_measured`] saw.
#[derive(Debug)]
pub struct Measured {
    /// Exit code, output, timeout (as [`super::run_with_deadline`] reports them; `status` is always `None`).
    pub out: RunOutput,
    /// Peak resident set size of the process, in KiB.
    pub max_rss_kib: u64,
}

impl Measured {
    /// A readable dump for assertion messages.
    pub fn describe(&self) -> String {
        format!("peak RSS {} KiB\n{}", self.max_rss_kib, self.out.describe())
    }
}

/// Runs `cmd` with stdin closed, collecting stdout and stderr, killing it if it overruns `deadline`, and reaps it
/// with `wait4` to read its peak resident set size.
#[track_caller]
pub fn run_measured(cmd: &mut Command, deadline: Duration) -> Measured {
    let start = Instant::now();
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // Force a real fork. std otherwise spawns with posix_spawn (vfork-like: the child runs on the parent's memory
    // until exec), and exec then records the *parent's* peak as the child's `ru_maxrss`. After a fork the child's
    // count starts at the parent's current resident size (small in these tests) instead of its peak.
    // SAFETY: the closure does nothing, so it is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| Ok(()));
    }
    // Reaped below with wait4 (for its rusage), never through `Child::wait`.
    #[allow(clippy::zombie_processes)]
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let pid = child.id() as libc::pid_t;
    let pipes = OutputPipes::read(&mut child);

    let mut timed_out = false;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our own unreaped child (std's `Child` is never waited on afterwards); the out-pointers
        // point to live locals of the right types.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break;
        }
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            panic!("wait4({pid}) failed: {e}");
        }
        if start.elapsed() >= deadline && !timed_out {
            timed_out = true;
            let _ = child.kill();
        }
        thread::sleep(Duration::from_millis(5));
    }
    let code = if libc::WIFEXITED(status) { Some(libc::WEXITSTATUS(status)) } else { None };

    let (stdout, stderr) = pipes.collect();
    Measured {
        out: RunOutput { status: None, code, stdout, stderr, timed_out },
        max_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
    }
}
