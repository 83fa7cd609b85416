//! Running a command to completion with a deadline.

use std::io::{Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// What a finished (or killed) command produced.
#[derive(Debug)]
pub struct RunOutput {
    /// `None` only if waiting for the killed child failed.
    pub status: Option<ExitStatus>,
    /// The exit code; `None` if killed by a signal (including our own kill after a timeout).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// The command overran its deadline and was killed.
    pub timed_out: bool,
}

impl RunOutput {
    /// A readable dump for assertion messages.
    pub fn describe(&self) -> String {
        format!(
            "exit code: {:?} (status {:?}, timed out: {})\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.status, self.timed_out, self.stdout, self.stderr
        )
    }

    /// Exited by itself with code 0.
    pub fn success(&self) -> bool {
        !self.timed_out && self.code == Some(0)
    }
}

/// Runs `cmd` with stdin closed, collecting stdout and stderr; kills it if it is still running after `deadline`.
/// Panics only if the program cannot be started at all.
#[track_caller]
pub fn run_with_deadline(cmd: &mut Command, deadline: Duration) -> RunOutput {
    run_with_input(cmd, None, deadline)
}

/// Like [`run_with_deadline`], writing `input` to the child's stdin and then closing it.
#[track_caller]
pub fn run_with_input(cmd: &mut Command, input: Option<&[u8]>, deadline: Duration) -> RunOutput {
    let start = Instant::now();
    cmd.stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() });
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));

    let pipes = OutputPipes::read(&mut child);
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        let input = input.to_vec();
        // A writer thread, so a child that does not read cannot block us past the deadline.
        thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }

    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if start.elapsed() < deadline => thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                timed_out = true;
                let _ = child.kill();
                break child.wait().ok();
            }
            Err(_) => {
                let _ = child.kill();
                break child.wait().ok();
            }
        }
    };

    let (stdout, stderr) = pipes.collect();
    RunOutput { code: status.and_then(|s| s.code()), status, stdout, stderr, timed_out }
}

/// The child's stdout and stderr, each read to its end by a thread of its own (so a child that fills one pipe while
/// we wait on the other cannot block).
pub struct OutputPipes(mpsc::Receiver<(bool, Vec<u8>)>);

impl OutputPipes {
    /// Starts reading whichever of `child`'s stdout and stderr are piped.
    pub fn read(child: &mut Child) -> OutputPipes {
        let (tx, rx) = mpsc::channel::<(bool, Vec<u8>)>();
        for (is_stdout, pipe) in [
            (true, child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>)),
            (false, child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>)),
        ] {
            let Some(mut pipe) = pipe else { continue };
            let tx = tx.clone();
            thread::spawn(move || {
                let mut buf = Vec::new();
                let _ = pipe.read_to_end(&mut buf);
                let _ = tx.send((is_stdout, buf));
            });
        }
        OutputPipes(rx)
    }

    /// Stdout and stderr (lossily decoded), once the child is gone. Pipes reach EOF when the child is gone, unless
    /// a grandchild inherited them: this waits at most 5 s for those.
    pub fn collect(self) -> (String, String) {
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        let drain_deadline = Instant::now() + Duration::from_secs(5);
        for _ in 0..2 {
            let left = drain_deadline.saturating_duration_since(Instant::now());
            match self.0.recv_timeout(left) {
                Ok((true, b)) => stdout = b,
                Ok((false, b)) => stderr = b,
                Err(_) => break,
            }
        }
        (String::from_utf8_lossy(&stdout).into_owned(), String::from_utf8_lossy(&stderr).into_owned())
    }
}
