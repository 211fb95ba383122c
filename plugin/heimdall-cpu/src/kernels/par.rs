//! The thread pool handle kernels split their work over.
//!
//! A [`Par`] is created once per model. With one thread it runs everything inline; with more it
//! owns a dedicated pool of worker threads ([`crate::kernels::pool`]: they spin between the ops
//! of a run instead of sleeping), and kernels split their output rows into contiguous ranges (up
//! to [`CHUNKS_PER_THREAD`] per thread, claimed dynamically by whichever thread is free, the
//! caller included; no heap allocation). A reduction dimension is never split, so every output
//! value is computed by the same sequence of operations whatever the thread count or the
//! chunking: results are bit-identical for `Par::new(1)` and `Par::new(n)`. Wrap a whole model
//! run in [`Par::install`] so that it runs with subnormals flushed.

use std::fmt;
use std::ops::Range;

use crate::kernels::pool::Pool;

/// Most threads a model runs on (more are clamped to this). Per-thread scratch is planned for
/// the model's own thread count, so this only bounds what a caller can ask for.
pub const MAX_THREADS: usize = 64;

/// Thread-pool handle: inline execution for one thread, a dedicated pool otherwise.
pub struct Par {
    pool: Option<Pool>,
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
    /// thread, no pool; the caller is one of the `threads`). Falls back to inline execution if
    /// the pool cannot be created.
    pub fn new(threads: usize) -> Par {
        let pool = (threads > 1)
            .then(|| Pool::new(threads, crate::kernels::denormals::flush_this_thread))
            .flatten();
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

    /// Runs `f` on the calling thread with subnormals flushed to zero
    /// ([`crate::kernels::denormals`]; the caller's mode is restored after). The pool's threads
    /// always run with them flushed.
    pub fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        let _flush = crate::kernels::denormals::FlushGuard::new();
        f()
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
        let (out, scratch) = (SendPtr(out.as_mut_ptr()), SendPtr(scratch.as_mut_ptr()));
        pool.run(chunks, &|part, worker| {
            let r = rows * part / chunks..rows * (part + 1) / chunks;
            // SAFETY: parts cover disjoint row ranges of `out` (rows * row_len values); worker
            // `worker` < threads owns scratch slot `worker` (no two parts run at once on one
            // worker), inside `scratch` (asserted above).
            let (o, sc) = unsafe {
                (
                    std::slice::from_raw_parts_mut(
                        out.get().add(r.start * row_len),
                        r.len() * row_len,
                    ),
                    std::slice::from_raw_parts_mut(
                        scratch.get().add(worker * scratch_per_part),
                        scratch_per_part,
                    ),
                )
            };
            f(r, o, sc);
        });
    }

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
        let pool = match &self.pool {
            Some(pool) if parts > 1 => pool,
            _ => return run(0, data),
        };
        let len = data.len();
        let ptr = SendPtr(data.as_mut_ptr());
        pool.run(parts, &|part, _| {
            let (c0, c1) = (count * part / parts, count * (part + 1) / parts);
            let (a, b) = ((c0 * chunk_len).min(len), (c1 * chunk_len).min(len));
            // SAFETY: parts cover disjoint ranges of chunks of `data` (`len` values).
            run(c0, unsafe {
                std::slice::from_raw_parts_mut(ptr.get().add(a), b - a)
            });
        });
    }
}

/// Most chunks per thread a split makes (more balance the load when threads are shared).
pub const CHUNKS_PER_THREAD: usize = 4;

/// A raw pointer shared by the parts of one job, each dereferencing a disjoint range.
struct SendPtr<T>(*mut T);

impl<T> SendPtr<T> {
    /// The pointer (a method, so that closures capture the whole `SendPtr`).
    fn get(&self) -> *mut T {
        self.0
    }
}

// SAFETY: only dereferenced as disjoint ranges by the parts of one job (see the callers).
unsafe impl<T: Send> Send for SendPtr<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SendPtr<T> {}
