//! Work the event loop must not do itself: anything whose size a peer controls (reading or writing a cached
//! world, modelling a world) runs on a worker thread, and its result comes back through the poll.
//!
//! A job is a closure; the worker runs jobs one after another in the order they came, puts each result on a
//! channel and wakes the reactor with its [`mio::Waker`], so the turn that follows takes the result in constant
//! time. No turn of the loop waits for a job. The thread is started with the first job and ends when the
//! [`Worker`] is dropped (after the job it is running).

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

/// One worker thread and the channels to it. See the module documentation.
pub(crate) struct Worker {
    waker: Arc<Waker>,
    jobs: Option<Sender<(JobId, Job)>>,
    done_rx: Receiver<(JobId, JobResult)>,
    done_tx: Sender<(JobId, JobResult)>,
    thread: Option<JoinHandle<()>>,
    next: u64,
    pending: usize,
}

impl Worker {
    pub(crate) fn new(waker: Arc<Waker>) -> Worker {
        let (done_tx, done_rx) = mpsc::channel();
        Worker { waker, jobs: None, done_rx, done_tx, thread: None, next: 0, pending: 0 }
    }

    /// Queues `job`; its result comes back from [`Worker::poll_done`] after a wake of the poll.
    pub(crate) fn submit(&mut self, job: impl FnOnce() -> JobResult + Send + 'static) -> JobId {
        let id = JobId(self.next);
        self.next += 1;
        self.pending += 1;
        let job: Job = Box::new(job);
        let job = match self.sender() {
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

    fn sender(&mut self) -> Option<&Sender<(JobId, Job)>> {
        if self.jobs.is_none() {
            let (tx, rx) = mpsc::channel::<(JobId, Job)>();
            let done = self.done_tx.clone();
            let waker = self.waker.clone();
            let spawned = std::thread::Builder::new().name("bzhead-worker".into()).spawn(move || {
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
                    self.thread = Some(t);
                    self.jobs = Some(tx);
                }
                Err(e) => {
                    warn!(error = %e, "cannot start a worker thread; its work runs on the event loop");
                    return None;
                }
            }
        }
        self.jobs.as_ref()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Closing the job channel ends the thread once the jobs queued are done (a cache store must not be lost
        // at exit); every job is bounded (see the callers), so this wait is too.
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The result of a job that panicked (a bug: jobs are panic-free code on untrusted input).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobPanicked;
