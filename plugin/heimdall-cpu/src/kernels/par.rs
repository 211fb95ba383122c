//! The thread pool handle kernels split their work over.
//!
//! A [`Par`] is created once per model. With one thread it runs everything inline; with more it
//! owns a dedicated `rayon` pool, and kernels split their output rows into contiguous ranges
//! (up to [`CHUNKS_PER_THREAD`] per thread, balanced by work-stealing `join`, no heap
//! allocation). A reduction dimension is never split, so every output value is computed by the
//! same sequence of operations whatever the thread count or the chunking: results are
//! bit-identical for `Par::new(1)` and `Par::new(n)`. Wrap a whole model run in
//! [`Par::install`] so that the forks of successive kernels stay on the pool's threads.

use std::fmt;
use std::ops::Range;

/// Most threads a model runs on (more are clamped to this). Per-thread scratch is planned for
/// the model's own thread count, so this only bounds what a caller can ask for.
pub const MAX_THREADS: usize = 64;

/// Thread-pool handle: inline execution for one thread, a dedicated `rayon` pool otherwise.
pub struct Par {
    pool: Option<rayon::ThreadPool>,
    threads: usize,
}

impl fmt::Debug for Par {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Par")
            .field("threads", &self.threads)
            .finish()
    }
}

impl Default for Par {
    fn default() -> Self {
        Par::new(1)
    }
}

impl Par {
    /// A handle running kernels on `threads` threads (`0` and `1`: inline on the caller's
    /// thread, no pool). Falls back to inline execution if the pool cannot be created.
    pub fn new(threads: usize) -> Par {
        if threads <= 1 {
            return Par {
                pool: None,
                threads: 1,
            };
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("heimdall-cpu-{i}"))
            .start_handler(|_| crate::kernels::denormals::flush_this_thread())
            .build()
            .ok();
        match pool {
            Some(pool) => Par {
                pool: Some(pool),
                threads,
            },
            None => Par {
                pool: None,
                threads: 1,
            },
        }
    }

    /// How many parts kernels split their work into at most (1 when inline).
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `f` inside the pool (on one of its threads), so that the kernels it calls fork and
    /// join cheaply; runs it inline when there is no pool. Either way `f` and the kernels it
    /// forks run with subnormals flushed to zero ([`crate::kernels::denormals`]): the pool's
    /// threads always, the caller's thread for the call (its mode is restored after).
    pub fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(pool) => pool.install(f),
            None => {
                let _flush = crate::kernels::denormals::FlushGuard::new();
                f()
            }
        }
    }

    /// Chunks `items` units of work are split into when each must hold at least `min_items`
    /// of them: at least 1, at most [`CHUNKS_PER_THREAD`] per thread (1 when inline).
    pub fn chunks(&self, items: usize, min_items: usize) -> usize {
        if self.pool.is_none() {
            return 1;
        }
        (items / min_items.max(1)).clamp(1, CHUNKS_PER_THREAD * self.threads)
    }

    /// Splits `out` (rows of `row_len` values) into contiguous row ranges of at least
    /// `min_rows` rows and calls `f(rows, out_rows)` for each, spread over the pool by
    /// work-stealing fork-join. `out_rows` is the slice of `out` holding exactly `rows`.
    pub fn for_rows<F>(&self, out: &mut [f32], row_len: usize, min_rows: usize, f: F)
    where
        F: Fn(Range<usize>, &mut [f32]) + Sync,
    {
        self.for_rows_scratch(out, row_len, min_rows, &mut [], 0, |r, o, _| f(r, o));
    }

    /// Like [`Par::for_rows`], and also hands each call `scratch_per_part` values of `scratch`
    /// that no concurrent call uses (one slot per thread: `scratch` must hold
    /// `scratch_per_part * self.threads()` values). `f` must not itself fork work on this
    /// pool.
    pub fn for_rows_scratch<F>(
        &self,
        out: &mut [f32],
        row_len: usize,
        min_rows: usize,
        scratch: &mut [f32],
        scratch_per_part: usize,
        f: F,
    ) where
        F: Fn(Range<usize>, &mut [f32], &mut [f32]) + Sync,
    {
        let rows = out.len().checked_div(row_len).unwrap_or(0);
        let chunks = self.chunks(rows, min_rows);
        let pool = match &self.pool {
            Some(pool) if chunks > 1 => pool,
            _ => {
                f(0..rows, out, &mut scratch[..scratch_per_part]);
                return;
            }
        };
        assert!(
            scratch.len() >= scratch_per_part * self.threads,
            "Par: scratch too short"
        );
        let job = Job {
            pool,
            f: &f,
            row_len,
            scratch: SendPtr(scratch.as_mut_ptr()),
            per_part: scratch_per_part,
            slots: self.threads,
        };
        pool.install(|| job.run(0..rows, &mut out[..rows * row_len], chunks));
    }
}

impl Par {
    /// Splits `data` into chunks of `chunk_len` values (the last may be shorter) and calls
    /// `f(index, chunk)` for each, spread over the pool in contiguous runs of at least
    /// `min_chunks` chunks (inline when there is no pool). For per-block partial results of any
    /// type; which thread computes a chunk never changes what it computes.
    pub fn for_chunks<T, F>(&self, data: &mut [T], chunk_len: usize, min_chunks: usize, f: F)
    where
        T: Send,
        F: Fn(usize, &mut [T]) + Sync,
    {
        let chunk_len = chunk_len.max(1);
        let count = data.len().div_ceil(chunk_len);
        let parts = self.chunks(count, min_chunks);
        let run = |first: usize, part: &mut [T]| {
            for (i, c) in part.chunks_mut(chunk_len).enumerate() {
                f(first + i, c);
            }
        };
        match &self.pool {
            Some(pool) if parts > 1 => {
                pool.install(|| split_chunks(&run, 0..count, data, chunk_len, parts))
            }
            _ => run(0, data),
        }
    }
}

/// Recursive halving of chunks `range` (held in `data`) into `parts` runs for [`Par::for_chunks`].
fn split_chunks<T: Send>(
    run: &(impl Fn(usize, &mut [T]) + Sync),
    range: Range<usize>,
    data: &mut [T],
    chunk_len: usize,
    parts: usize,
) {
    if parts <= 1 {
        run(range.start, data);
        return;
    }
    let left = parts / 2;
    let mid = range.start + range.len() * left / parts;
    let (lo, hi) = data.split_at_mut(((mid - range.start) * chunk_len).min(data.len()));
    rayon::join(
        || split_chunks(run, range.start..mid, lo, chunk_len, left),
        || split_chunks(run, mid..range.end, hi, chunk_len, parts - left),
    );
}

/// Most chunks per thread a split makes (more balance the load when threads are shared).
pub const CHUNKS_PER_THREAD: usize = 4;

/// A raw pointer to the scratch slots, shared by the fork-join tree.
#[derive(Clone, Copy)]
struct SendPtr(*mut f32);
// SAFETY: the pointer is only dereferenced as disjoint per-thread slots (see `Job::run`).
unsafe impl Send for SendPtr {}
// SAFETY: as above.
unsafe impl Sync for SendPtr {}

/// One `for_rows_scratch` call being split by recursive `join`.
struct Job<'a, F> {
    pool: &'a rayon::ThreadPool,
    f: &'a F,
    row_len: usize,
    scratch: SendPtr,
    per_part: usize,
    slots: usize,
}

impl<F> Job<'_, F>
where
    F: Fn(Range<usize>, &mut [f32], &mut [f32]) + Sync,
{
    fn run(&self, rows: Range<usize>, out: &mut [f32], chunks: usize) {
        if chunks <= 1 {
            // Runs on a pool thread (inside `install`), whose index picks its scratch slot.
            let slot = self
                .pool
                .current_thread_index()
                .unwrap_or(0)
                .min(self.slots - 1);
            // SAFETY: slot `slot` lies inside the scratch (asserted by the caller). A thread
            // runs one leaf at a time (leaves never fork, so a thread waiting in `join` can
            // only start another leaf after this one returns), hence no two live leaves share
            // a slot.
            let sc = unsafe {
                std::slice::from_raw_parts_mut(
                    self.scratch.0.add(slot * self.per_part),
                    self.per_part,
                )
            };
            (self.f)(rows, out, sc);
            return;
        }
        let left = chunks / 2;
        let mid = rows.start + rows.len() * left / chunks;
        let (lo, hi) = out.split_at_mut((mid - rows.start) * self.row_len);
        rayon::join(
            || self.run(rows.start..mid, lo, left),
            || self.run(mid..rows.end, hi, chunks - left),
        );
    }
}
