//! A fixed pool of CPU worker threads fed by `crossbeam` channels: CPU-only steps, models
//! offloaded by the coordinator, and post-processing. Neither world ever waits on a worker:
//! jobs go in through a channel and their results are drained without blocking.
//!
//! The pool counts **slots** (cores for inference, [`crate::HeimdallSettings::cpu_slots`]): it
//! has one worker thread per slot, a job occupies one slot, and a multi-threaded inference
//! ([`WorkerPool::spawn_with_slots`]) occupies one per thread while it runs (its CPU model's own
//! pool runs the other threads beside the worker). [`WorkerPool::idle`] is what the coordinator
//! may hand out.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

use bevy::prelude::{Entity, Resource};
use crossbeam_channel::{Receiver, Sender, TryRecvError, TrySendError, bounded, unbounded};
use heimdall_coordinator::WorkId;

use crate::faults::{HeimdallFaults, WORKER_QUEUE_PER_WORKER};

type Job = Box<dyn FnOnce() + Send + 'static>;

/// The pool.
pub struct WorkerPool {
    jobs: Option<Sender<Job>>,
    threads: Vec<JoinHandle<()>>,
    busy: Arc<AtomicUsize>,
    size: usize,
    faults: HeimdallFaults,
}

impl WorkerPool {
    /// Starts `size` (at least 1) named worker threads: `size` slots.
    pub fn new(size: usize) -> Self {
        Self::with_faults(size, HeimdallFaults::default())
    }

    /// Starts `size` (at least 1) named worker threads, counting in `faults` the jobs that
    /// panicked and the times the job queue ([`WORKER_QUEUE_PER_WORKER`] per worker) was full.
    /// A job that panics ends neither its worker nor the pool: the panic is caught and counted.
    pub fn with_faults(size: usize, faults: HeimdallFaults) -> Self {
        let size = size.max(1);
        let (tx, rx) = bounded::<Job>(size * WORKER_QUEUE_PER_WORKER);
        let busy = Arc::new(AtomicUsize::new(0));
        let threads = (0..size)
            .filter_map(|i| {
                let rx = rx.clone();
                let busy = busy.clone();
                let faults = faults.clone();
                std::thread::Builder::new()
                    .name(format!("heimdall-worker-{i}"))
                    .spawn(move || {
                        while let Ok(job) = rx.recv() {
                            // The plugin's jobs report their own panics to their DNN; this
                            // keeps the worker alive whatever a job does.
                            if let Err(message) = crate::faults::catch(job) {
                                faults.panicked();
                                bevy::log::error!(
                                    "heimdall: a job on heimdall-worker-{i} panicked: {message}"
                                );
                            }
                            busy.fetch_sub(1, Ordering::AcqRel);
                        }
                    })
                    .ok()
            })
            .collect();
        WorkerPool {
            jobs: Some(tx),
            threads,
            busy,
            size,
            faults,
        }
    }

    /// Number of workers (and slots).
    pub fn size(&self) -> usize {
        self.size
    }

    /// Slots not occupied by a job running or about to run.
    pub fn idle(&self) -> usize {
        self.size.saturating_sub(self.busy.load(Ordering::Acquire))
    }

    /// Queues a job that occupies `slots` slots (at least 1, at most the pool's) while it runs or
    /// waits to run: a multi-threaded inference on one worker and `slots - 1` threads of its own.
    pub fn spawn_with_slots(&self, slots: usize, job: impl FnOnce() + Send + 'static) {
        let extra = slots.clamp(1, self.size) - 1;
        if extra == 0 {
            return self.spawn(job);
        }
        self.busy.fetch_add(extra, Ordering::AcqRel);
        // Released when the job is dropped: after it ran, or unrun if it cannot be queued.
        let release = SlotRelease {
            busy: self.busy.clone(),
            slots: extra,
        };
        self.spawn(move || {
            let _release = release;
            job();
        });
    }

    /// Queues a job; it runs on the next free worker. With the queue full, waits for room
    /// (counted in [`HeimdallFaults::queues`]).
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) {
        if let Some(tx) = &self.jobs {
            self.busy.fetch_add(1, Ordering::AcqRel);
            let queue = &self.faults.queues().workers;
            let sent = match tx.try_send(Box::new(job)) {
                Err(TrySendError::Full(job)) => {
                    queue.block_one();
                    tx.send(job).map_err(|_| ())
                }
                r => r.map_err(|_| ()),
            };
            match sent {
                Ok(()) => queue.depth(tx.len()),
                Err(()) => {
                    self.busy.fetch_sub(1, Ordering::AcqRel);
                }
            }
        }
    }
}

/// Frees the extra slots of a multi-threaded job when dropped.
struct SlotRelease {
    busy: Arc<AtomicUsize>,
    slots: usize,
}

impl Drop for SlotRelease {
    fn drop(&mut self) {
        self.busy.fetch_sub(self.slots, Ordering::AcqRel);
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        self.jobs = None;
        let me = std::thread::current().id();
        for t in self.threads.drain(..) {
            // The last owner of the pool may be one of its own jobs (`render/cpu_lane.rs` hands
            // out work from a worker): that thread ends after its job, it cannot be joined.
            if t.thread().id() != me {
                let _ = t.join();
            }
        }
    }
}

/// A results channel that is drained without blocking.
pub struct Mailbox<T> {
    tx: Sender<T>,
    rx: Receiver<T>,
}

impl<T> Default for Mailbox<T> {
    fn default() -> Self {
        let (tx, rx) = unbounded();
        Mailbox { tx, rx }
    }
}

impl<T> Mailbox<T> {
    /// A sender for workers.
    pub fn sender(&self) -> Sender<T> {
        self.tx.clone()
    }

    /// Everything that has arrived, without waiting.
    pub fn drain(&self) -> Vec<T> {
        let mut out = Vec::new();
        loop {
            match self.rx.try_recv() {
                Ok(v) => out.push(v),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return out,
            }
        }
    }
}

/// A CPU worker's report on coordinator work.
pub(crate) struct CpuDone {
    pub entity: Entity,
    pub work: WorkId,
    pub worker: usize,
    pub start_ms: f64,
    pub end_ms: f64,
    /// The inference finished on the CPU (its result went to the main world).
    pub finished: bool,
    pub error: Option<String>,
    /// Where a run of a CPU model spent its time (`None` for other work).
    pub times: Option<crate::stats::CpuRunTimes>,
}

/// The worker pool and the mailbox of finished CPU work (render world).
#[derive(Resource)]
pub(crate) struct Workers {
    /// Shared with the jobs that hand out more CPU work when they end (`render/cpu_lane.rs`).
    pub pool: Arc<WorkerPool>,
    pub done: Mailbox<CpuDone>,
}

impl Workers {
    /// `size` workers counting their faults in `faults`.
    pub fn with_faults(size: usize, faults: HeimdallFaults) -> Self {
        Workers {
            pool: Arc::new(WorkerPool::with_faults(size, faults)),
            done: Mailbox::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_on_workers_and_results_arrive_without_blocking() {
        let pool = WorkerPool::new(2);
        let mailbox = Mailbox::<usize>::default();
        assert!(mailbox.drain().is_empty());
        for i in 0..10 {
            let tx = mailbox.sender();
            pool.spawn(move || {
                let name = std::thread::current().name().unwrap_or("").to_string();
                assert!(name.starts_with("heimdall-worker-"));
                tx.send(i * i).unwrap();
            });
        }
        let mut got = Vec::new();
        let start = std::time::Instant::now();
        while got.len() < 10 && start.elapsed().as_secs() < 10 {
            got.extend(mailbox.drain());
            std::thread::yield_now();
        }
        got.sort();
        assert_eq!(got, (0..10).map(|i| i * i).collect::<Vec<_>>());
        drop(pool);
    }

    /// A job that panics ends neither its worker nor the pool: later jobs run on every worker,
    /// the panic is counted and the pool's busy count comes back to zero.
    #[test]
    fn a_panicking_job_leaves_the_workers_running() {
        let faults = HeimdallFaults::default();
        let pool = WorkerPool::with_faults(2, faults.clone());
        for _ in 0..4 {
            pool.spawn(|| panic!("a job that panics"));
        }
        let mailbox = Mailbox::<usize>::default();
        for i in 0..10 {
            let tx = mailbox.sender();
            pool.spawn(move || tx.send(i).unwrap());
        }
        let mut got = Vec::new();
        let start = std::time::Instant::now();
        while (got.len() < 10 || pool.idle() < 2) && start.elapsed().as_secs() < 10 {
            got.extend(mailbox.drain());
            std::thread::yield_now();
        }
        got.sort();
        assert_eq!(got, (0..10).collect::<Vec<_>>());
        assert_eq!(faults.panics(), 4);
        assert_eq!(pool.idle(), 2);
    }

    /// A job of 3 slots in a pool of 4 leaves 1 idle while it runs and gives the 3 back when it
    /// ends; one of more slots than the pool has occupies them all.
    #[test]
    fn a_multi_threaded_job_occupies_its_slots_while_it_runs() {
        let pool = WorkerPool::new(4);
        let wait_for = |idle: usize| {
            let start = std::time::Instant::now();
            while pool.idle() != idle && start.elapsed().as_secs() < 10 {
                std::thread::yield_now();
            }
            pool.idle()
        };
        for (slots, left) in [(3, 1), (9, 0), (1, 3)] {
            let (release, gate) = crossbeam_channel::bounded::<()>(0);
            pool.spawn_with_slots(slots, move || {
                let _ = gate.recv();
            });
            assert_eq!(pool.idle(), left, "{slots} slots");
            drop(release);
            assert_eq!(wait_for(4), 4, "{slots} slots given back");
        }
        // Two jobs at once: 2 + 1 slots, then 1 left.
        let (release, gate) = crossbeam_channel::bounded::<()>(0);
        let gate2 = gate.clone();
        pool.spawn_with_slots(2, move || {
            let _ = gate.recv();
        });
        pool.spawn(move || {
            let _ = gate2.recv();
        });
        assert_eq!(pool.idle(), 1);
        drop(release);
        assert_eq!(wait_for(4), 4);
    }
}
