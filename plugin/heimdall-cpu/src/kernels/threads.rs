//! The worker threads behind [`crate::kernels::Par`]: a fixed set of threads that run the parts
//! of one job at a time, the caller taking parts too, and that spin for a while after a job
//! before they park.
//!
//! A model is ~100 ops of 10–100 µs each on the small MediaPipe models. A general-purpose pool
//! whose idle workers sleep after a few microseconds pays a futex wake-up per op and worker, about
//! what splitting the op saves: on a 16-core host selfie_segmentation ran 5.8 ms on one thread
//! and 5.8 ms on two with rayon. Here a worker that finished a part waits on the job counter for
//! [`SPIN`] before it parks, so the next op of the same run finds it awake. A waiting thread
//! (a worker between jobs, the caller until the last part is done) spins on pause instructions
//! for [`PAUSE_FOR`], about the spread of its threads' finishing times in an op, and only then
//! yields its core at each turn (so that on a busy machine the threads with work run): a yield
//! is a system call of 0.4–0.6 µs under KVM, and a thread that was in one when the job came or
//! its last part finished starts or notices up to that much later, at every op of a model.
//!
//! Parts go to threads by position, as pthreadpool (XNNPACK's) hands them out: thread `w` of
//! `T` first runs the parts whose middle lies in the `w`-th `T`-th of `0..parts`, in order, then
//! takes parts from the back of the others' ranges. Kernels split their output rows in order, so
//! a thread computes about the same rows (the same pixels) in op after op and reads the rows the
//! op before wrote from its own core's cache; claiming parts from one shared counter handed each
//! part to whichever thread came first, so most rows moved between cores at every op.
//!
//! One job is in flight at a time. A job is published as a pointer to the caller's stack frame,
//! one atomic range per thread `epoch << 32 | first << 16 | end` and then the atomic
//! `state = epoch << 32 | parts`; a thread claims part `k` by a compare-and-swap of a range of
//! epoch `e` (its owner takes its first part, others its last), and only then reads the job's
//! pointer: the job cannot have finished, since part `k` has not run, and its frame lives until
//! every part is done.

use std::any::Any;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How a model's thread pool ran its jobs (one job per split op), counted since the pool
/// started: [`crate::CpuModel::pool_counters`]. Read before and after a run
/// ([`PoolCounters::since`]) they tell whether the pool's threads took their parts: where they
/// were descheduled or parked, the caller runs most parts itself and the run takes up to
/// `threads` times longer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolCounters {
    /// Jobs of more than one part handed to the pool's threads.
    pub jobs: u64,
    /// Of those, jobs that found a thread parked and woke it (a futex wake-up each, and the
    /// thread starts late).
    pub jobs_waking: u64,
    /// Parts of those jobs.
    pub parts: u64,
    /// Parts of those jobs the calling thread ran itself (`parts / threads` when every thread
    /// took its share).
    pub caller_parts: u64,
    /// Jobs of more than one part run inline on the caller: nested in a part, or while another
    /// caller's job was in flight.
    pub inline_jobs: u64,
}

impl PoolCounters {
    /// What happened between `earlier` and `self` (two reads of one pool).
    pub fn since(&self, earlier: &PoolCounters) -> PoolCounters {
        PoolCounters {
            jobs: self.jobs.saturating_sub(earlier.jobs),
            jobs_waking: self.jobs_waking.saturating_sub(earlier.jobs_waking),
            parts: self.parts.saturating_sub(earlier.parts),
            caller_parts: self.caller_parts.saturating_sub(earlier.caller_parts),
            inline_jobs: self.inline_jobs.saturating_sub(earlier.inline_jobs),
        }
    }

    /// The share of the parts the caller ran (`None` without a job).
    pub fn caller_share(&self) -> Option<f64> {
        (self.parts > 0).then(|| self.caller_parts as f64 / self.parts as f64)
    }
}

/// How long a worker spins for the next job before it parks.
const SPIN: Duration = Duration::from_micros(200);

/// How long a waiting thread spins on pause instructions before it yields its core at every
/// turn ([`Wait`]).
const PAUSE_FOR: Duration = Duration::from_micros(10);

/// A job: call `f(part, worker)` for each part.
struct Job<'a> {
    f: &'a (dyn Fn(usize, usize) + Sync),
}

/// Most parts of one job (the ends of a thread's range have 16 bits each).
const MAX_PARTS: usize = 0xFFFF;

/// The parts of the current job a thread has not handed out yet, `epoch << 32 | first << 16 |
/// end`, alone in its cache lines (threads claim from their own ranges without contending).
#[repr(align(128))]
struct Range(AtomicU64);

struct Shared {
    /// `epoch << 32 | parts`: a new job when the epoch changes.
    state: AtomicU64,
    /// Per thread (the caller is 0): its parts of the current job.
    ranges: Box<[Range]>,
    /// The current job (`*const Job`), valid while its parts are not all done.
    job: AtomicUsize,
    /// Parts of the current job finished, in cache lines of its own: the threads still running
    /// parts update it while the idle ones poll `state` for the next job.
    done: Done,
    /// Whether a job is in flight (a second caller runs its parts inline).
    busy: AtomicBool,
    /// Workers parked on `wake`.
    sleeping: AtomicUsize,
    shutdown: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
    /// The first panic of a part of the current job, re-raised on the caller.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    /// How the jobs ran (written by callers only, once per job).
    counters: Counters,
}

/// [`Shared::done`], alone in its cache lines.
#[repr(align(128))]
struct Done(AtomicUsize);

impl std::ops::Deref for Done {
    type Target = AtomicUsize;
    fn deref(&self) -> &AtomicUsize {
        &self.0
    }
}

/// [`PoolCounters`] as the pool keeps them: written by the caller once per job, in cache lines
/// of their own (the workers spin on the job's state and count its parts done beside them).
#[derive(Default)]
#[repr(align(128))]
struct Counters {
    jobs: AtomicU64,
    jobs_waking: AtomicU64,
    parts: AtomicU64,
    caller_parts: AtomicU64,
    inline_jobs: AtomicU64,
}

thread_local! {
    /// Whether this thread is running a part (a nested job runs inline).
    static IN_PART: Cell<bool> = const { Cell::new(false) };
}

/// Worker threads (`threads - 1` of them; the caller is thread 0).
pub(crate) struct Pool {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
}

impl Pool {
    /// Starts `threads - 1` workers, each running `start` first. `None` if a thread cannot be
    /// spawned.
    pub(crate) fn new(threads: usize, start: fn()) -> Option<Pool> {
        let shared = Arc::new(Shared::new(threads));
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
            if parts > 1 {
                s.counters.inline_jobs.fetch_add(1, Ordering::Relaxed);
            }
            (0..parts).for_each(|p| f(p, 0));
            return;
        }
        let job = Job { f };
        let epoch = s.publish(&job, parts);
        let waking = s.sleeping.load(Ordering::SeqCst) > 0;
        if waking {
            let _g = s.lock.lock().unwrap_or_else(|e| e.into_inner());
            s.wake.notify_all();
        }
        let mine = claim(s, epoch, 0);
        let c = &s.counters;
        c.jobs.fetch_add(1, Ordering::Relaxed);
        c.jobs_waking
            .fetch_add(u64::from(waking), Ordering::Relaxed);
        c.parts.fetch_add(parts as u64, Ordering::Relaxed);
        c.caller_parts.fetch_add(mine as u64, Ordering::Relaxed);
        let mut wait = Wait::new();
        while s.done.load(Ordering::Acquire) < parts {
            wait.relax();
        }
        let panic = s.panic.lock().unwrap_or_else(|e| e.into_inner()).take();
        s.busy.store(false, Ordering::Release);
        if let Some(p) = panic {
            resume_unwind(p);
        }
    }

    /// How its jobs ran since it started.
    pub(crate) fn counters(&self) -> PoolCounters {
        let c = &self.shared.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        PoolCounters {
            jobs: get(&c.jobs),
            jobs_waking: get(&c.jobs_waking),
            parts: get(&c.parts),
            caller_parts: get(&c.caller_parts),
            inline_jobs: get(&c.inline_jobs),
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

impl Shared {
    fn new(threads: usize) -> Shared {
        Shared {
            state: AtomicU64::new(0),
            ranges: (0..threads.max(1))
                .map(|_| Range(AtomicU64::new(0)))
                .collect(),
            job: AtomicUsize::new(0),
            done: Done(AtomicUsize::new(0)),
            busy: AtomicBool::new(false),
            sleeping: AtomicUsize::new(0),
            shutdown: AtomicBool::new(false),
            lock: Mutex::new(()),
            wake: Condvar::new(),
            panic: Mutex::new(None),
            counters: Counters::default(),
        }
    }

    /// Makes `job` of `parts` parts (at most [`MAX_PARTS`]) the current one: its pointer, each
    /// thread's range, then the new epoch, which it returns. `job` must live until its parts
    /// are done.
    fn publish(&self, job: &Job, parts: usize) -> u64 {
        self.job
            .store(job as *const Job as usize, Ordering::Relaxed);
        self.done.store(0, Ordering::Relaxed);
        // Epochs wrap at 2^32 and skip 0 (a new worker has seen epoch 0).
        let epoch = match (self.state.load(Ordering::Relaxed) >> 32).wrapping_add(1) & 0xFFFF_FFFF {
            0 => 1,
            e => e,
        };
        let threads = self.ranges.len();
        for (w, range) in self.ranges.iter().enumerate() {
            let (first, end) = (
                first_part(w, parts, threads),
                first_part(w + 1, parts, threads),
            );
            range.0.store(
                epoch << 32 | (first as u64) << 16 | end as u64,
                Ordering::Release,
            );
        }
        self.state
            .store(epoch << 32 | parts as u64, Ordering::SeqCst);
        epoch
    }
}

/// The first part thread `w` of `threads` owns when a job has `parts` parts (`w == threads`:
/// `parts`): the parts whose middle `(k + 1/2) / parts` lies in `[w / threads, (w + 1) /
/// threads)`, so that each thread owns the same share of the rows whatever the part count.
pub(crate) fn first_part(w: usize, parts: usize, threads: usize) -> usize {
    // The smallest k with (2k + 1) * threads >= 2 * parts * w.
    (2 * parts * w)
        .saturating_sub(threads)
        .div_ceil(2 * threads)
        .min(parts)
}

/// Runs parts of epoch `epoch` until none is left: thread `worker`'s own, first to last, then
/// the others' from the back of their ranges. Returns how many it ran. Its own parts are
/// counted done together once the last has run (one update of the shared count per thread and
/// job instead of one per part: the caller cannot finish before then anyway), others' one by
/// one.
fn claim(s: &Shared, epoch: u64, worker: usize) -> usize {
    let threads = s.ranges.len();
    let mut ran = 0;
    for v in 0..threads {
        let owner = (worker + v) % threads;
        let range = &s.ranges[owner].0;
        let mut pending = 0;
        loop {
            let r = range.load(Ordering::Acquire);
            let (first, end) = ((r >> 16) & 0xFFFF, r & 0xFFFF);
            if r >> 32 != epoch || first >= end {
                break;
            }
            let (next, part) = if v == 0 {
                (r + (1 << 16), first)
            } else {
                (r - 1, end - 1)
            };
            if range
                .compare_exchange_weak(r, next, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            run_part(s, part as usize, worker);
            ran += 1;
            pending += 1;
            if v != 0 {
                s.done.fetch_add(pending, Ordering::Release);
                pending = 0;
            }
        }
        if pending > 0 {
            s.done.fetch_add(pending, Ordering::Release);
        }
    }
    ran
}

/// Runs part `part` of the current job (claimed by the caller) on thread `worker`; the caller
/// counts it done.
fn run_part(s: &Shared, part: usize, worker: usize) {
    // SAFETY: `job` was stored before the ranges were set to this epoch (the claim's CAS
    // acquires the range's release store), and the job's frame lives until all its parts are
    // done, part `part` (claimed just now, not yet done) included.
    let job = unsafe { &*(s.job.load(Ordering::Relaxed) as *const Job) };
    IN_PART.set(true);
    let result = catch_unwind(AssertUnwindSafe(|| (job.f)(part, worker)));
    IN_PART.set(false);
    if let Err(p) = result {
        s.panic
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(p);
    }
}

/// A thread waiting for a value another thread writes: pause instructions for [`PAUSE_FOR`]
/// (the clock read every [`Wait::CHECK`] turns), then a yield of the core at every turn (on a
/// busy machine, a waiting thread gives its core to the threads it waits for).
struct Wait {
    started: Instant,
    turns: u32,
    yielding: bool,
}

impl Wait {
    /// Turns between two reads of the clock while pausing (a pause is 10–150 cycles).
    const CHECK: u32 = 16;

    fn new() -> Wait {
        Wait {
            started: Instant::now(),
            turns: 0,
            yielding: false,
        }
    }

    /// One turn of the wait.
    fn relax(&mut self) {
        if self.yielding {
            std::thread::yield_now();
            return;
        }
        self.turns += 1;
        if self.turns.is_multiple_of(Self::CHECK) && self.started.elapsed() > PAUSE_FOR {
            self.yielding = true;
        }
        std::hint::spin_loop();
    }

    /// Whether the wait has lasted longer than `limit` (never while it pauses, for a `limit`
    /// above [`PAUSE_FOR`]: the clock is read only once it yields).
    fn longer_than(&self, limit: Duration) -> bool {
        self.yielding && self.started.elapsed() > limit
    }
}

/// A worker's loop: run the parts of each new epoch, spin for [`SPIN`] after a job, then park.
fn worker(s: &Shared, index: usize) {
    let mut seen = 0u64;
    loop {
        let mut wait = Wait::new();
        let mut epoch = s.state.load(Ordering::Acquire) >> 32;
        while epoch == seen && !s.shutdown.load(Ordering::Relaxed) {
            if wait.longer_than(SPIN) {
                let mut g = s.lock.lock().unwrap_or_else(|e| e.into_inner());
                s.sleeping.fetch_add(1, Ordering::SeqCst);
                while s.state.load(Ordering::SeqCst) >> 32 == seen
                    && !s.shutdown.load(Ordering::SeqCst)
                {
                    g = s.wake.wait(g).unwrap_or_else(|e| e.into_inner());
                }
                s.sleeping.fetch_sub(1, Ordering::SeqCst);
            } else {
                wait.relax();
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

    /// The threads' ranges cover every part once, in order, each thread's within a part of its
    /// share of `0..parts`; with as many parts as threads or a multiple, equal ranges.
    #[test]
    fn ranges_cover_parts_by_position() {
        for threads in 1..=17 {
            for parts in 0..=200 {
                let firsts: Vec<usize> = (0..=threads)
                    .map(|w| first_part(w, parts, threads))
                    .collect();
                assert_eq!((firsts[0], firsts[threads]), (0, parts));
                for w in 0..threads {
                    let (a, b) = (firsts[w], firsts[w + 1]);
                    assert!(a <= b, "{threads} threads, {parts} parts: {firsts:?}");
                    for k in a..b {
                        // Part k's middle lies in thread w's share.
                        assert!((2 * k + 1) * threads >= 2 * parts * w);
                        assert!((2 * k + 1) * threads < 2 * parts * (w + 1));
                    }
                }
                if parts % threads == 0 {
                    assert!(
                        (0..threads).all(|w| firsts[w + 1] - firsts[w] == parts / threads),
                        "{threads} threads, {parts} parts: {firsts:?}"
                    );
                }
            }
        }
    }

    /// A thread runs its own parts first to last, then the others' from the back of their
    /// ranges, the next thread's first (no workers: `claim` called on one thread).
    #[test]
    fn claim_runs_own_parts_then_steals_from_the_back() {
        let s = Shared::new(3);
        let order = Mutex::new(Vec::new());
        let f = |p: usize, w: usize| order.lock().unwrap().push((p, w));
        let job = Job { f: &f };
        let epoch = s.publish(&job, 9);
        claim(&s, epoch, 1);
        let got: Vec<usize> = order
            .lock()
            .unwrap()
            .iter()
            .map(|&(p, w)| {
                assert_eq!(w, 1);
                p
            })
            .collect();
        assert_eq!(got, [3, 4, 5, 8, 7, 6, 2, 1, 0]);
        assert_eq!(s.done.load(Ordering::Relaxed), 9);
        // A stale epoch claims nothing.
        let epoch2 = s.publish(&job, 4);
        claim(&s, epoch, 0);
        assert_eq!(s.done.load(Ordering::Relaxed), 0);
        claim(&s, epoch2, 2);
        assert_eq!(s.done.load(Ordering::Relaxed), 4);
    }

    /// A thread's own parts count as done together after its last one, each part it takes from
    /// another thread's range as soon as it has run: what `done` reads while each part runs.
    #[test]
    fn own_parts_are_counted_done_together() {
        let s = Shared::new(3);
        let seen = Mutex::new(Vec::new());
        let f = |p: usize, _: usize| {
            seen.lock()
                .unwrap()
                .push((p, s.done.load(Ordering::Relaxed)))
        };
        let job = Job { f: &f };
        let epoch = s.publish(&job, 9);
        claim(&s, epoch, 1);
        assert_eq!(
            *seen.lock().unwrap(),
            [
                (3, 0),
                (4, 0),
                (5, 0),
                (8, 3),
                (7, 4),
                (6, 5),
                (2, 6),
                (1, 7),
                (0, 8)
            ]
        );
        assert_eq!(s.done.load(Ordering::Relaxed), 9);
    }

    /// A wait pauses for [`PAUSE_FOR`] before it yields, and says it has lasted longer than a
    /// limit only once it yields.
    #[test]
    fn a_wait_pauses_then_yields() {
        // The test's clock starts first: the wait's own clock, started after it, decides.
        let t = Instant::now();
        let mut w = Wait::new();
        while !w.yielding {
            assert!(!w.longer_than(Duration::ZERO));
            w.relax();
        }
        assert!(t.elapsed() >= PAUSE_FOR);
        assert!(w.longer_than(Duration::ZERO));
        w.relax();
    }

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

    /// The counters count each job handed out, its parts, the caller's share of them (all of
    /// them when every worker is held up elsewhere), the jobs that woke parked workers, and the
    /// jobs run inline.
    #[test]
    fn counters_say_how_jobs_ran() {
        let pool = Pool::new(3, || {}).expect("pool");
        assert_eq!(pool.counters(), PoolCounters::default());
        // Both workers parked (they park after their spin): the job wakes them.
        let t = Instant::now();
        while pool.shared.sleeping.load(Ordering::SeqCst) < 2 {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "the workers never parked"
            );
            std::thread::sleep(SPIN);
        }
        pool.run(6, &|_, _| {});
        let c = pool.counters();
        assert_eq!((c.jobs, c.parts, c.inline_jobs), (1, 6, 0));
        assert_eq!(c.jobs_waking, 1, "{c:?}");
        // Woken workers may take the caller's parts too (from the back of its range).
        assert!(c.caller_parts <= 6, "{c:?}");
        // A one-part job is not a job of the pool.
        pool.run(1, &|_, _| {});
        assert_eq!(pool.counters(), c);
        // Parts that wait (up to 5 s) until a worker runs one: the caller cannot run them all.
        let before = pool.counters();
        let by_worker = AtomicUsize::new(0);
        pool.run(30, &|_, w| {
            if w > 0 {
                by_worker.fetch_add(1, Ordering::SeqCst);
            }
            let t = Instant::now();
            while by_worker.load(Ordering::SeqCst) == 0 && t.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_micros(100));
            }
        });
        let d = pool.counters().since(&before);
        assert_eq!((d.jobs, d.parts), (1, 30));
        assert!(d.caller_parts < 30, "{d:?}");
        assert_eq!(d.caller_share(), Some(d.caller_parts as f64 / 30.0));
        // A nested job runs inline and says so.
        let before = pool.counters();
        pool.run(2, &|_, _| pool.run(4, &|_, _| {}));
        let d = pool.counters().since(&before);
        assert_eq!((d.jobs, d.parts, d.inline_jobs), (1, 2, 2));
        assert_eq!(PoolCounters::default().caller_share(), None);
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
