//! A growing text buffer filled by reader threads (one per child pipe) that tests can wait on.

use std::io::{BufRead, BufReader, Read};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

#[derive(Default)]
struct State {
    text: String,
    /// Pipes still open. When it reaches 0 nothing more can arrive, so waits end early.
    open: usize,
}

/// Shared, cloneable output of a child process. Lines from several pipes (stdout and stderr) are appended whole,
/// so they never interleave mid-line.
#[derive(Clone, Default)]
pub struct OutputBuf {
    inner: Arc<(Mutex<State>, Condvar)>,
}

impl OutputBuf {
    pub fn new() -> OutputBuf {
        OutputBuf::default()
    }

    /// Starts a thread that appends every line read from `pipe` until EOF. The thread is detached: it ends when
    /// the child (and anything that inherited the pipe) exits.
    pub fn attach<R: Read + Send + 'static>(&self, name: &str, pipe: R) {
        self.lock().open += 1;
        let buf = self.clone();
        thread::Builder::new()
            .name(format!("pipe-{name}"))
            .spawn(move || {
                let mut reader = BufReader::new(pipe);
                let mut line = Vec::new();
                loop {
                    line.clear();
                    match reader.read_until(b'\n', &mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => buf.push(&String::from_utf8_lossy(&line)),
                    }
                }
                let (lock, cvar) = &*buf.inner;
                lock.lock().unwrap_or_else(|e| e.into_inner()).open -= 1;
                cvar.notify_all();
            })
            .expect("spawn pipe reader thread");
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends text (also usable by tests to annotate a log).
    pub fn push(&self, s: &str) {
        self.lock().text.push_str(s);
        self.inner.1.notify_all();
    }

    /// Everything collected so far.
    pub fn text(&self) -> String {
        self.lock().text.clone()
    }

    /// A position in the text, for [`OutputBuf::wait_for_since`].
    pub fn mark(&self) -> usize {
        self.lock().text.len()
    }

    /// The text after `mark`.
    pub fn since(&self, mark: usize) -> String {
        self.lock().text.get(mark..).unwrap_or_default().to_string()
    }

    /// True once every attached pipe reached EOF.
    pub fn closed(&self) -> bool {
        self.lock().open == 0
    }

    /// Waits until `pred(text)` holds or `timeout` passes; returns whether it held. Returns early (with the
    /// final answer) once all pipes are closed, because nothing more can arrive.
    pub fn wait_until(&self, timeout: Duration, mut pred: impl FnMut(&str) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let (lock, cvar) = &*self.inner;
        let mut state = lock.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if pred(&state.text) {
                return true;
            }
            let now = Instant::now();
            if now >= deadline || state.open == 0 {
                return false;
            }
            // Bounded wait so a missed notification can only delay, never hang.
            let step = (deadline - now).min(Duration::from_millis(100));
            state = cvar.wait_timeout(state, step).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    /// Waits until the text contains `pattern`.
    pub fn wait_for(&self, pattern: &str, timeout: Duration) -> bool {
        self.wait_until(timeout, |t| t.contains(pattern))
    }

    /// Waits until the text after `mark` contains `pattern`.
    pub fn wait_for_since(&self, mark: usize, pattern: &str, timeout: Duration) -> bool {
        self.wait_until(timeout, |t| t.get(mark..).is_some_and(|t| t.contains(pattern)))
    }

    /// Waits until the text contains `pattern` at least `n` times.
    pub fn wait_for_count(&self, pattern: &str, n: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |t| t.matches(pattern).count() >= n)
    }

    /// The last `n` lines, for failure messages.
    pub fn tail(&self, n: usize) -> String {
        let text = self.text();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }
}
