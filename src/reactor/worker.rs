//! Work the event loop must not do itself: anything whose size a peer controls (reading or writing a cached
//! world, modelling a world) or that may block (a database write, an HTTP fetch) runs on a worker thread, and its
//! result comes back through the poll.
//!
//! A job is a closure submitted on a [`Lane`]; each lane is one thread that runs its jobs one after another in the
//! order they came, so a slow lane (a stalled disk) never holds up the jobs of another (modelling worlds). Every
//! lane puts each result on one channel and wakes the reactor with its [`mio::Waker`], so the turn that follows
//! takes the result in constant time. No turn of the loop waits for a job. A lane's thread is started with its
//! first job; when the [`Worker`] is dropped, the lanes that wait at exit ([`Lane::new`]) finish the jobs queued
//! on them first, the others are left to end with the process.

use std::any::Any;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use mio::Waker;
use tracing::warn;

/// Identifies a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(pub u64);

/// What a job gives back (downcast by whoever submitted it).
pub type JobResult = Box<dyn Any + Send>;

type Job = Box<dyn FnOnce() -> JobResult + Send>;

/// A named queue of jobs with its own thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Lane {
    name: &'static str,
    wait_at_exit: bool,
}

impl Lane {
    /// The reactor's own lane (cache reads and writes, world models): its jobs are bounded and finished at exit.
    pub const MAIN: Lane = Lane { name: "bzhead-worker", wait_at_exit: true };

    /// A lane named `name` (its thread's name). With `wait_at_exit`, dropping the worker waits for the jobs
    /// queued on it (a database write must not be lost); without, a job still running then (a fetch bounded by
    /// its own time limit) is left to end with the process.
    pub const fn new(name: &'static str, wait_at_exit: bool) -> Lane {
        Lane { name, wait_at_exit }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        self.name
    }
}

/// A lane's thread and the channel to it.
struct LaneThread {
    lane: Lane,
    jobs: Option<Sender<(JobId, Job)>>,
    thread: Option<JoinHandle<()>>,
}

/// The worker threads (one per lane) and the channel back. See the module documentation.
pub(crate) struct Worker {
    waker: Arc<Waker>,
    lanes: Vec<LaneThread>,
    done_rx: Receiver<(JobId, JobResult)>,
    done_tx: Sender<(JobId, JobResult)>,
    next: u64,
    pending: usize,
}

impl Worker {
    pub(crate) fn new(waker: Arc<Waker>) -> Worker {
        let (done_tx, done_rx) = mpsc::channel();
        Worker { waker, lanes: Vec::new(), done_rx, done_tx, next: 0, pending: 0 }
    }

    /// Queues `job` on the main lane; its result comes back from [`Worker::poll_done`] after a wake of the poll.
    pub(crate) fn submit(&mut self, job: impl FnOnce() -> JobResult + Send + 'static) -> JobId {
        self.submit_on(Lane::MAIN, job)
    }

    /// Queues `job` on `lane` (its thread started with its first job).
    pub(crate) fn submit_on(&mut self, lane: Lane, job: impl FnOnce() -> JobResult + Send + 'static) -> JobId {
        let id = JobId(self.next);
        self.next += 1;
        self.pending += 1;
        let job: Job = Box::new(job);
        let job = match self.sender(lane) {
            Some(tx) => match tx.send((id, job)) {
                Ok(()) => return id,
                Err(mpsc::SendError((_, job))) => job,
            },
            None => job,
        };
        // No thread (the system refused one): run it here rather than lose it.
        let r = job();
        let _ = self.done_tx.send((id, r));
        let _ = self.waker.wake();
        id
    }

    /// The next finished job, if any (never blocks).
    pub(crate) fn poll_done(&mut self) -> Option<(JobId, JobResult)> {
        let r = self.done_rx.try_recv().ok()?;
        self.pending = self.pending.saturating_sub(1);
        Some(r)
    }

    /// Jobs submitted and not yet taken back.
    pub(crate) fn pending(&self) -> usize {
        self.pending
    }

    fn sender(&mut self, lane: Lane) -> Option<&Sender<(JobId, Job)>> {
        let i = match self.lanes.iter().position(|l| l.lane == lane) {
            Some(i) => i,
            None => {
                self.lanes.push(LaneThread { lane, jobs: None, thread: None });
                self.lanes.len() - 1
            }
        };
        let l = &mut self.lanes[i];
        if l.jobs.is_none() {
            let (tx, rx) = mpsc::channel::<(JobId, Job)>();
            let done = self.done_tx.clone();
            let waker = self.waker.clone();
            let spawned = std::thread::Builder::new().name(lane.name.into()).spawn(move || {
                while let Ok((id, job)) = rx.recv() {
                    let r = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)) {
                        Ok(r) => r,
                        Err(_) => Box::new(JobPanicked) as JobResult,
                    };
                    if done.send((id, r)).is_err() {
                        break;
                    }
                    let _ = waker.wake();
                }
            });
            match spawned {
                Ok(t) => {
                    l.thread = Some(t);
                    l.jobs = Some(tx);
                }
                Err(e) => {
                    warn!(lane = lane.name, error = %e, "cannot start a worker thread; its work runs on the event loop");
                    return None;
                }
            }
        }
        l.jobs.as_ref()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Closing the job channels ends the threads once the jobs queued are done (a cache store must not be lost
        // at exit); the jobs of the lanes that wait are bounded (see the callers), so this wait is too.
        for l in &mut self.lanes {
            l.jobs = None;
        }
        for l in &mut self.lanes {
            if let Some(t) = l.thread.take() {
                if l.lane.wait_at_exit || t.is_finished() {
                    let _ = t.join();
                }
            }
        }
    }
}

/// The result of a job that panicked (a bug: jobs are panic-free code on untrusted input).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobPanicked;

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_blocked_lane_does_not_hold_up_another() {
        let mut poll = mio::Poll::new().unwrap();
        let waker = Arc::new(Waker::new(poll.registry(), mio::Token(0)).unwrap());
        let mut w = Worker::new(waker);
        let (release, gate) = mpsc::channel::<()>();
        let slow = Lane::new("test-slow", false);
        let blocked = w.submit_on(slow, move || {
            let _ = gate.recv_timeout(Duration::from_secs(10));
            Box::new(1u8)
        });
        let quick = w.submit(|| Box::new(2u8));
        let mut events = mio::Events::with_capacity(4);
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut got = Vec::new();
        while got.len() < 2 && Instant::now() < deadline {
            poll.poll(&mut events, Some(Duration::from_millis(100))).unwrap();
            while let Some((id, _)) = w.poll_done() {
                got.push(id);
                // The quick job is back while the slow lane still holds its job: release it only now.
                let _ = release.send(());
            }
        }
        assert_eq!(got, [quick, blocked]);
        assert_eq!(w.pending(), 0);
    }
}
