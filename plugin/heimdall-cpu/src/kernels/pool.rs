//! The worker threads behind [`crate::kernels::Par`]: a fixed set of threads that run the parts
//! of one job at a time, the caller taking parts too, and that spin for a while after a job
//! before they park.
//!
//! A model is ~100 ops of 10–100 µs each on the small MediaPipe models. A general-purpose pool
//! whose idle workers sleep after a few microseconds pays a futex wake-up per op and worker, about
//! what splitting the op saves: on a 16-core host selfie_segmentation ran 5.8 ms on one thread
//! and 5.8 ms on two with rayon. Here a worker that finished a part waits on the job counter for
//! [`SPIN`] before it parks, so the next op of the same run finds it awake; it yields its core
//! while it waits, so on a busy machine the threads with work run.
//!
//! One job is in flight at a time. A job is published as a pointer to the caller's stack frame
//! plus an atomic `state = epoch << 32 | parts << 16 | next part`; a worker claims part `k` of
//! epoch `e` by a compare-and-swap from `(e, n, k)` to `(e, n, k + 1)` (`k < n`), and only then
//! reads the job's pointer: the job cannot have finished, since part `k` has not run, and its
//! frame lives until every part is done.

use std::any::Any;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a worker spins for the next job before it parks.
const SPIN: Duration = Duration::from_micros(200);

/// A job: call `f(part, worker)` for each part.
struct Job<'a> {
    f: &'a (dyn Fn(usize, usize) + Sync),
}

/// Most parts of one job (the `parts` and `next` fields of `state` have 16 bits each).
const MAX_PARTS: usize = 0xFFFF;

struct Shared {
    /// `epoch << 32 | parts << 16 | next part to claim`.
    state: AtomicU64,
    /// The current job (`*const Job`), valid while its parts are not all done.
    job: AtomicUsize,
    /// Parts of the current job finished.
    done: AtomicUsize,
    /// Whether a job is in flight (a second caller runs its parts inline).
    busy: AtomicBool,
    /// Workers parked on `wake`.
    sleeping: AtomicUsize,
    shutdown: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
    /// The first panic of a part of the current job, re-raised on the caller.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

thread_local! {
    /// Whether this thread is running a part (a nested job runs inline).
    static IN_PART: Cell<bool> = const { Cell::new(false) };
}

/// Worker threads (`threads - 1` of them; the caller is the last).
pub(crate) struct Pool {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
}

impl Pool {
    /// Starts `threads - 1` workers, each running `start` first. `None` if a thread cannot be
    /// spawned.
    pub(crate) fn new(threads: usize, start: fn()) -> Option<Pool> {
        let shared = Arc::new(Shared {
            state: AtomicU64::new(0),
            job: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            busy: AtomicBool::new(false),
            sleeping: AtomicUsize::new(0),
            shutdown: AtomicBool::new(false),
            lock: Mutex::new(()),
            wake: Condvar::new(),
            panic: Mutex::new(None),
        });
        let mut pool = Pool {
            shared: shared.clone(),
            workers: Vec::new(),
        };
        for w in 1..threads {
            let s = shared.clone();
            let handle = std::thread::Builder::new()
                .name(format!("heimdall-cpu-{w}"))
                .spawn(move || {
                    start();
                    worker(&s, w);
                })
                .ok()?;
            pool.workers.push(handle);
        }
        Some(pool)
    }

    /// Runs `f(part, worker)` for `part` in `0..parts`, spread over the workers and the
    /// calling thread (`worker` is 0 for the caller, `1..threads` for the workers; no two parts
    /// run at once with the same `worker`). Returns when every part has run. Runs everything
    /// inline when called from inside a part or while another job is in flight. A part that
    /// panics (on any thread) is re-raised here once every part has finished.
    pub(crate) fn run(&self, parts: usize, f: &(dyn Fn(usize, usize) + Sync)) {
        let s = &*self.shared;
        if parts <= 1
            || parts > MAX_PARTS
            || IN_PART.get()
            || s.busy
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            (0..parts).for_each(|p| f(p, 0));
            return;
        }
        let job = Job { f };
        s.job.store(&job as *const Job as usize, Ordering::Relaxed);
        s.done.store(0, Ordering::Relaxed);
        // Epochs wrap at 2^32 and skip 0 (a new worker has seen epoch 0).
        let epoch = match (s.state.load(Ordering::Relaxed) >> 32).wrapping_add(1) & 0xFFFF_FFFF {
            0 => 1,
            e => e,
        };
        s.state
            .store(epoch << 32 | (parts as u64) << 16, Ordering::SeqCst);
        if s.sleeping.load(Ordering::SeqCst) > 0 {
            let _g = s.lock.lock().unwrap_or_else(|e| e.into_inner());
            s.wake.notify_all();
        }
        claim(s, epoch, 0);
        let mut spins = 0u32;
        while s.done.load(Ordering::Acquire) < parts {
            relax(&mut spins);
        }
        let panic = s.panic.lock().unwrap_or_else(|e| e.into_inner()).take();
        s.busy.store(false, Ordering::Release);
        if let Some(p) = panic {
            resume_unwind(p);
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        {
            let _g = self.shared.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.shared.wake.notify_all();
        }
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

/// Claims and runs parts of epoch `epoch` until none is left.
fn claim(s: &Shared, epoch: u64, worker: usize) {
    loop {
        let st = s.state.load(Ordering::Acquire);
        let (parts, part) = ((st >> 16) & 0xFFFF, st & 0xFFFF);
        if st >> 32 != epoch || part >= parts {
            return;
        }
        if s.state
            .compare_exchange_weak(st, st + 1, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            continue;
        }
        // SAFETY: `job` was stored before `state` was set to this epoch (the CAS above acquires
        // it), and the job's frame lives until all its parts are done, part `part` (claimed
        // just now, not yet done) included.
        let job = unsafe { &*(s.job.load(Ordering::Relaxed) as *const Job) };
        IN_PART.set(true);
        let result = catch_unwind(AssertUnwindSafe(|| (job.f)(part as usize, worker)));
        IN_PART.set(false);
        if let Err(p) = result {
            s.panic
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert(p);
        }
        s.done.fetch_add(1, Ordering::Release);
    }
}

/// One turn of a wait: a pause instruction for the first 64 turns, then a yield of the core
/// (on a busy machine, a waiting thread gives its core to the threads it waits for).
fn relax(spins: &mut u32) {
    if *spins < 64 {
        *spins += 1;
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// A worker's loop: run the parts of each new epoch, spin for [`SPIN`] after a job, then park.
fn worker(s: &Shared, index: usize) {
    let mut seen = 0u64;
    loop {
        let started = Instant::now();
        let mut spins = 0u32;
        let mut epoch = s.state.load(Ordering::Acquire) >> 32;
        while epoch == seen && !s.shutdown.load(Ordering::Relaxed) {
            if started.elapsed() > SPIN {
                let mut g = s.lock.lock().unwrap_or_else(|e| e.into_inner());
                s.sleeping.fetch_add(1, Ordering::SeqCst);
                while s.state.load(Ordering::SeqCst) >> 32 == seen
                    && !s.shutdown.load(Ordering::SeqCst)
                {
                    g = s.wake.wait(g).unwrap_or_else(|e| e.into_inner());
                }
                s.sleeping.fetch_sub(1, Ordering::SeqCst);
            } else {
                relax(&mut spins);
            }
            epoch = s.state.load(Ordering::Acquire) >> 32;
        }
        if s.shutdown.load(Ordering::Relaxed) {
            return;
        }
        seen = epoch;
        claim(s, epoch, index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every part of every job runs exactly once, on a worker index below the thread count,
    /// over many back-to-back jobs (workers spinning) and jobs after a pause (workers parked).
    #[test]
    fn every_part_runs_once() {
        let pool = Pool::new(4, || {}).expect("pool");
        for round in 0..2000 {
            if round % 500 == 499 {
                std::thread::sleep(SPIN * 3);
            }
            let parts = 1 + round % 13;
            let counts: Vec<AtomicUsize> = (0..parts).map(|_| AtomicUsize::new(0)).collect();
            pool.run(parts, &|p, w| {
                assert!(w < 4);
                counts[p].fetch_add(1, Ordering::Relaxed);
            });
            assert!(
                counts.iter().all(|c| c.load(Ordering::Relaxed) == 1),
                "round {round}"
            );
        }
    }

    /// A nested job and a job from a second thread while one is in flight run inline; a panic
    /// in a part reaches the caller after the other parts finished, and the pool still works.
    #[test]
    fn nested_concurrent_and_panicking_jobs() {
        let pool = Pool::new(3, || {}).expect("pool");
        let total = AtomicUsize::new(0);
        pool.run(6, &|_, _| {
            pool.run(4, &|_, w| {
                assert_eq!(w, 0, "nested parts run inline");
                total.fetch_add(1, Ordering::Relaxed);
            });
        });
        assert_eq!(total.load(Ordering::Relaxed), 24);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for _ in 0..200 {
                        let n = AtomicUsize::new(0);
                        pool.run(5, &|_, _| {
                            n.fetch_add(1, Ordering::Relaxed);
                        });
                        assert_eq!(n.load(Ordering::Relaxed), 5);
                    }
                });
            }
        });
        let finished = AtomicUsize::new(0);
        let r = catch_unwind(AssertUnwindSafe(|| {
            pool.run(8, &|p, _| {
                if p == 3 {
                    panic!("part 3");
                }
                finished.fetch_add(1, Ordering::Relaxed);
            })
        }));
        assert!(r.is_err());
        assert_eq!(finished.load(Ordering::Relaxed), 7);
        let n = AtomicUsize::new(0);
        pool.run(4, &|_, _| {
            n.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(n.load(Ordering::Relaxed), 4);
    }
}
