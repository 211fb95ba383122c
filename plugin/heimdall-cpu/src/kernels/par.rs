//! The thread pool handle kernels split their work over.
//!
//! A [`Par`] is created once per model. With one thread it runs everything inline; with more it
//! owns a dedicated `rayon` pool. Kernels split their output into at most [`Par::threads`]
//! contiguous row ranges (never a reduction dimension), so every output value is computed by the
//! same sequence of operations whatever the thread count: results are bit-identical for
//! `Par::new(1)` and `Par::new(n)`.

use std::fmt;
use std::ops::Range;

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
    /// join cheaply; runs it inline when there is no pool.
    pub fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(pool) => pool.install(f),
            None => f(),
        }
    }

    /// How many parts `items` units of work are split into when each part must hold at least
    /// `min_items` of them (at least 1, at most [`Par::threads`]).
    pub fn parts(&self, items: usize, min_items: usize) -> usize {
        let by_size = items / min_items.max(1);
        by_size.clamp(1, self.threads)
    }

    /// Splits `out` (rows of `row_len` values) into contiguous row ranges and calls
    /// `f(rows, out_rows)` for each, in parallel when there are at least `2 * min_rows` rows
    /// and more than one thread. `out_rows` is the slice of `out` holding exactly `rows`.
    pub fn for_rows<F>(&self, out: &mut [f32], row_len: usize, min_rows: usize, f: F)
    where
        F: Fn(Range<usize>, &mut [f32]) + Sync,
    {
        self.for_rows_scratch(out, row_len, min_rows, &mut [], 0, |r, o, _| f(r, o));
    }

    /// Like [`Par::for_rows`], and also hands each part its own `scratch_per_part` values of
    /// `scratch` (which must hold `scratch_per_part * self.threads()` values).
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
        let parts = self.parts(rows, min_rows);
        debug_assert!(scratch.len() >= scratch_per_part * parts);
        let pool = match &self.pool {
            Some(pool) if parts > 1 => pool,
            _ => {
                f(0..rows, out, &mut scratch[..scratch_per_part]);
                return;
            }
        };
        let f = &f;
        pool.in_place_scope(|s| {
            let mut out = out;
            let mut scratch = scratch;
            let mut start = 0;
            let mut first = None;
            for p in 0..parts {
                let end = rows * (p + 1) / parts;
                let (o, rest) = std::mem::take(&mut out).split_at_mut((end - start) * row_len);
                out = rest;
                let (sc, rest) = std::mem::take(&mut scratch).split_at_mut(scratch_per_part);
                scratch = rest;
                let range = start..end;
                if p == 0 {
                    first = Some((range, o, sc));
                } else {
                    s.spawn(move |_| f(range, o, sc));
                }
                start = end;
            }
            if let Some((range, o, sc)) = first {
                f(range, o, sc);
            }
        });
    }
}
