//! The thread pool handle kernels split their work over.
//!
//! A [`Par`] is created once per model. With one thread it runs everything inline; with more it
//! owns a dedicated pool of worker threads (`crate::kernels::threads`: they spin between the ops
//! of a run instead of sleeping), and kernels split their output rows into contiguous ranges (up
//! to [`CHUNKS_PER_THREAD`] per thread, claimed dynamically by whichever thread is free, the
//! caller included; no heap allocation). A reduction dimension is never split, so every output
//! value is computed by the same sequence of operations whatever the thread count or the
//! chunking: results are bit-identical for `Par::new(1)` and `Par::new(n)`. Wrap a whole model
//! run in [`Par::install`] so that it runs with subnormals flushed.

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::kernels::threads::Pool;
pub use crate::kernels::threads::PoolCounters;

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

    /// How the pool ran its jobs since it started (zeros without a pool).
    pub fn counters(&self) -> PoolCounters {
        self.pool
            .as_ref()
            .map_or_else(PoolCounters::default, Pool::counters)
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
        let part_rows = |part: usize| rows * part / chunks..rows * (part + 1) / chunks;
        self.run_parts_scratch(
            pool,
            out,
            row_len,
            chunks,
            part_rows,
            scratch,
            scratch_per_part,
            f,
        );
    }

    /// Like [`Par::for_rows_scratch`], with the rows cut at `cuts` (rising from 0 to the row
    /// count, `out.len() / row_len`): part `i` holds rows `cuts[i]..cuts[i + 1]` (empty parts
    /// are not called), handed out by position ([`Par::first_part`]).
    pub fn for_cuts_scratch<F>(
        &self,
        out: &mut [f32],
        row_len: usize,
        cuts: &[usize],
        scratch: &mut [f32],
        scratch_per_part: usize,
        f: F,
    ) where
        F: Fn(Range<usize>, &mut [f32], &mut [f32]) + Sync,
    {
        let rows = out.len().checked_div(row_len).unwrap_or(0);
        assert!(
            cuts.len() >= 2
                && cuts[0] == 0
                && cuts[cuts.len() - 1] == rows
                && cuts.windows(2).all(|p| p[0] <= p[1]),
            "Par::for_cuts_scratch: bad cuts"
        );
        let parts = cuts.len() - 1;
        let pool = match &self.pool {
            Some(pool) if parts > 1 => pool,
            _ => {
                for p in cuts.windows(2).filter(|p| p[0] < p[1]) {
                    let o = &mut out[p[0] * row_len..p[1] * row_len];
                    f(p[0]..p[1], o, &mut scratch[..scratch_per_part]);
                }
                return;
            }
        };
        let part_rows = |part: usize| cuts[part]..cuts[part + 1];
        self.run_parts_scratch(
            pool,
            out,
            row_len,
            parts,
            part_rows,
            scratch,
            scratch_per_part,
            f,
        );
    }

    /// Runs `parts` parts on `pool`: part `p` gets rows `part_rows(p)` of `out` (rows of
    /// `row_len` values; empty parts are not called) and the scratch slot of the worker running
    /// it. `part_rows` must give disjoint ranges inside `out`'s rows.
    #[allow(clippy::too_many_arguments)]
    fn run_parts_scratch<F>(
        &self,
        pool: &Pool,
        out: &mut [f32],
        row_len: usize,
        parts: usize,
        part_rows: impl Fn(usize) -> Range<usize> + Sync,
        scratch: &mut [f32],
        scratch_per_part: usize,
        f: F,
    ) where
        F: Fn(Range<usize>, &mut [f32], &mut [f32]) + Sync,
    {
        assert!(
            scratch.len() >= scratch_per_part * self.threads,
            "Par: scratch too short"
        );
        let rows = out.len().checked_div(row_len).unwrap_or(0);
        let (out, scratch) = (SendPtr(out.as_mut_ptr()), SendPtr(scratch.as_mut_ptr()));
        pool.run(parts, &|part, worker| {
            let r = part_rows(part);
            if r.is_empty() {
                return;
            }
            assert!(r.end <= rows, "Par: a part past the rows");
            // SAFETY: parts cover disjoint row ranges of `out` (the callers' cuts, inside its
            // rows: asserted); worker `worker` < threads owns scratch slot `worker`, inside
            // `scratch` (asserted above), and runs one part at a time.
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

impl Par {
    /// Splits `out`, a matrix of rows of `row_len` values, into a grid of tiles of
    /// `tile_rows` rows by `tile_cols` columns (the last row and column of tiles may be
    /// smaller) and calls `f(rows, cols, tile)` for each, spread over the pool (inline when
    /// there is no pool or only one tile). For kernels whose work splits better over columns
    /// too (output channels of a matrix product of few rows, channel blocks of a depthwise
    /// convolution of few pixels); choose the tile sizes with [`Par::grid`].
    pub fn for_grid<F>(
        &self,
        out: &mut [f32],
        row_len: usize,
        tile_rows: usize,
        tile_cols: usize,
        f: F,
    ) where
        F: Fn(Range<usize>, Range<usize>, &mut Tile<'_>) + Sync,
    {
        let rows = out.len().checked_div(row_len).unwrap_or(0);
        if rows == 0 {
            return;
        }
        let (tile_rows, tile_cols) = (tile_rows.clamp(1, rows), tile_cols.clamp(1, row_len));
        let (row_tiles, col_tiles) = (rows.div_ceil(tile_rows), row_len.div_ceil(tile_cols));
        let parts = row_tiles * col_tiles;
        let ptr = SendPtr(out.as_mut_ptr());
        let part = |p: usize| {
            let (rt, ct) = (p / col_tiles, p % col_tiles);
            let r = rt * tile_rows..((rt + 1) * tile_rows).min(rows);
            let c = ct * tile_cols..((ct + 1) * tile_cols).min(row_len);
            let mut tile = Tile {
                // SAFETY: `r.start * row_len + c.start` is inside `out` (r.start < rows).
                ptr: unsafe { ptr.get().add(r.start * row_len + c.start) },
                rows: r.len(),
                cols: c.len(),
                stride: row_len,
                _out: std::marker::PhantomData,
            };
            f(r, c, &mut tile);
        };
        match &self.pool {
            Some(pool) if parts > 1 => pool.run(parts, &|p, _| part(p)),
            _ => (0..parts).for_each(part),
        }
    }

    /// Tile sizes `(tile_rows, tile_cols)` for [`Par::for_grid`] over a `rows x cols` output
    /// costing `work` units in all (multiply-accumulates, values): at most `work / min_work`
    /// tiles (one covering everything when that is 1 or there is no pool), rows in multiples
    /// of `row_align` and columns in multiples of `col_align` (a kernel's register tile). Of
    /// the column splits, the one whose largest tile times the rounds of tiles per thread is
    /// smallest; whole rows unless splitting columns too shortens that by more than 1/8
    /// (at small resolutions there are too few rows for many threads).
    pub fn grid(
        &self,
        rows: usize,
        cols: usize,
        work: usize,
        min_work: usize,
        row_align: usize,
        col_align: usize,
    ) -> (usize, usize) {
        let (rows, cols) = (rows.max(1), cols.max(1));
        if self.pool.is_none() {
            return (rows, cols);
        }
        let want = (work / min_work.max(1)).min(GRID_PARTS_PER_THREAD * self.threads);
        if want <= 1 {
            return (rows, cols);
        }
        let (ra, ca) = (row_align.max(1), col_align.max(1));
        let (row_units, col_units) = (rows.div_ceil(ra), cols.div_ceil(ca));
        let mut best = (usize::MAX, rows, cols);
        for col_parts in 1..=col_units.min(want) {
            let tile_c = col_units.div_ceil(col_parts) * ca;
            let row_parts = want.div_ceil(col_parts).min(row_units);
            let tile_r = row_units.div_ceil(row_parts) * ra;
            let parts = rows.div_ceil(tile_r) * cols.div_ceil(tile_c);
            let span = parts.div_ceil(self.threads) * tile_r.min(rows) * tile_c.min(cols);
            // Columns are split only for a clear gain (each column tile re-reads the input).
            if best.0 == usize::MAX || span * 8 < best.0 * 7 {
                best = (span, tile_r.min(rows), tile_c.min(cols));
            }
        }
        (best.1, best.2)
    }
}

impl Par {
    /// Splits `out`, a matrix of rows of `row_len` values, into the tiles between the given
    /// cuts, numbered row-major: tile `(i, j)` spans rows `row_cuts[i]..row_cuts[i + 1]` and
    /// columns `col_cuts[j]..col_cuts[j + 1]`, and calls `f(rows, cols, tile)` for each
    /// non-empty one, spread over the pool (inline when there is no pool or only one tile).
    /// The pool hands parts out by position ([`Par::first_part`]), so with cuts of even size a
    /// thread computes about the same rows op after op. Cuts must rise from 0 to the row count
    /// (`out.len() / row_len`) and from 0 to `row_len`.
    pub fn for_tiles<F>(
        &self,
        out: &mut [f32],
        row_len: usize,
        row_cuts: &[usize],
        col_cuts: &[usize],
        f: F,
    ) where
        F: Fn(Range<usize>, Range<usize>, &mut Tile<'_>) + Sync,
    {
        let rows = out.len().checked_div(row_len).unwrap_or(0);
        let valid = |cuts: &[usize], end: usize| {
            cuts.len() >= 2
                && cuts[0] == 0
                && cuts[cuts.len() - 1] == end
                && cuts.windows(2).all(|p| p[0] <= p[1])
        };
        assert!(
            valid(row_cuts, rows) && valid(col_cuts, row_len),
            "Par::for_tiles: bad cuts"
        );
        let col_tiles = col_cuts.len() - 1;
        let parts = (row_cuts.len() - 1) * col_tiles;
        let ptr = SendPtr(out.as_mut_ptr());
        let part = |p: usize| {
            let (rt, ct) = (p / col_tiles, p % col_tiles);
            let r = row_cuts[rt]..row_cuts[rt + 1];
            let c = col_cuts[ct]..col_cuts[ct + 1];
            if r.is_empty() || c.is_empty() {
                return;
            }
            let mut tile = Tile {
                // SAFETY: `r.start * row_len + c.start` is inside `out` (r.start < rows,
                // c.start < row_len: the cuts were checked above); tiles do not overlap.
                ptr: unsafe { ptr.get().add(r.start * row_len + c.start) },
                rows: r.len(),
                cols: c.len(),
                stride: row_len,
                _out: std::marker::PhantomData,
            };
            f(r, c, &mut tile);
        };
        match &self.pool {
            Some(pool) if parts > 1 => pool.run(parts, &|p, _| part(p)),
            _ => (0..parts).for_each(part),
        }
    }

    /// The first of `parts` parts of a job that thread `w` of this handle's threads runs
    /// before it takes others' (`w == threads()`: `parts`): thread `w` owns the parts
    /// `first_part(w, parts)..first_part(w + 1, parts)`, the ones whose middle lies in its
    /// `threads()`-th of the job. For kernels that size their parts to even out the threads'
    /// shares.
    pub fn first_part(&self, w: usize, parts: usize) -> usize {
        crate::kernels::threads::first_part(w, parts, self.threads)
    }
}

impl Par {
    /// An even split of a `rows x cols` output costing `work` units in all for
    /// [`Par::for_even_grid`]: `(row_parts, col_parts)`, rows cut evenly in units of
    /// `row_align` rows and columns in units of `col_align` (a kernel's register tile). At most
    /// `work / min_work` parts and [`CHUNKS_PER_THREAD`] a thread, a multiple of the thread
    /// count where the units allow, so that the parts handed out by position
    /// ([`Par::first_part`]) give every thread the same share: of the splits, the one whose
    /// largest share is smallest, whole rows unless splitting columns too shortens it by more
    /// than 1/8 (each column part re-reads its rows' input). `(1, 1)` without a pool. Costs
    /// up to a few microseconds: cache it per thread count ([`SplitCache`]).
    pub fn even_grid(
        &self,
        rows: usize,
        cols: usize,
        work: usize,
        min_work: usize,
        row_align: usize,
        col_align: usize,
    ) -> (usize, usize) {
        let threads = self.threads;
        let max_parts = (work / min_work.max(1)).min(CHUNKS_PER_THREAD * threads);
        if self.pool.is_none() || max_parts <= 1 {
            return (1, 1);
        }
        let want = if max_parts >= threads {
            max_parts / threads * threads
        } else {
            max_parts
        };
        let (row_units, col_units) = (
            rows.div_ceil(row_align.max(1)),
            cols.div_ceil(col_align.max(1)),
        );
        let unit_work = work as f64 / (rows.max(1) * cols.max(1)) as f64;
        // The largest thread's share of values, plus a part's fixed cost (~2048 units).
        let share = |rp: usize, cp: usize| -> f64 {
            let cut = |units: usize, parts: usize, align: usize, len: usize, i: usize| {
                (units * i / parts * align).min(len)
            };
            let size = |p: usize| {
                let (i, j) = (p / cp, p % cp);
                let r = cut(row_units, rp, row_align.max(1), rows, i + 1)
                    - cut(row_units, rp, row_align.max(1), rows, i);
                let c = cut(col_units, cp, col_align.max(1), cols, j + 1)
                    - cut(col_units, cp, col_align.max(1), cols, j);
                (r * c) as f64 * unit_work + 2048.0
            };
            (0..threads)
                .map(|t| {
                    (self.first_part(t, rp * cp)..self.first_part(t + 1, rp * cp))
                        .map(size)
                        .sum::<f64>()
                })
                .fold(0.0, f64::max)
        };
        let mut best = (share(1, 1), 1, 1);
        for cp in 1..=col_units.min(want) {
            let base = want.div_ceil(cp).min(row_units);
            let even = (base..=row_units.min(MAX_EVEN_PARTS / cp))
                .find(|r| (r * cp).is_multiple_of(threads));
            for rp in [Some(base), even].into_iter().flatten() {
                if rp * cp > MAX_EVEN_PARTS || work / (rp * cp) < min_work / 2 {
                    continue;
                }
                let s = share(rp, cp);
                let better = if cp == 1 {
                    s < best.0
                } else {
                    s * 8.0 < best.0 * 7.0
                };
                if better {
                    best = (s, rp, cp);
                }
            }
        }
        (best.1, best.2)
    }

    /// Splits `out` (rows of `row_len` values) into `row_parts x col_parts` tiles cut evenly
    /// in units of `row_align` rows and `col_align` columns ([`Par::even_grid`]), numbered
    /// row-major, and calls `f(rows, cols, tile)` for each non-empty one ([`Par::for_tiles`]).
    pub fn for_even_grid<F>(
        &self,
        out: &mut [f32],
        row_len: usize,
        (row_parts, row_align): (usize, usize),
        (col_parts, col_align): (usize, usize),
        f: F,
    ) where
        F: Fn(Range<usize>, Range<usize>, &mut Tile<'_>) + Sync,
    {
        let rows = out.len().checked_div(row_len).unwrap_or(0);
        let (rp, cp) = (
            row_parts.clamp(1, MAX_EVEN_PARTS),
            col_parts.clamp(1, MAX_EVEN_PARTS),
        );
        if rp * cp == 1 {
            return self.for_tiles(out, row_len, &[0, rows], &[0, row_len], f);
        }
        let mut row_cuts = [0usize; MAX_EVEN_PARTS + 1];
        let mut col_cuts = [0usize; MAX_EVEN_PARTS + 1];
        let (ru, cu) = (
            rows.div_ceil(row_align.max(1)),
            row_len.div_ceil(col_align.max(1)),
        );
        for (i, c) in row_cuts[..=rp].iter_mut().enumerate() {
            *c = (ru * i / rp * row_align.max(1)).min(rows);
        }
        for (j, c) in col_cuts[..=cp].iter_mut().enumerate() {
            *c = (cu * j / cp * col_align.max(1)).min(row_len);
        }
        self.for_tiles(out, row_len, &row_cuts[..=rp], &col_cuts[..=cp], f);
    }
}

/// Most parts of a [`Par::even_grid`] split (rows times columns).
const MAX_EVEN_PARTS: usize = 256;

/// A kernel's split for the thread count it was computed for (`threads << 32 | a << 16 | b`,
/// 0 when none), so that [`Par::even_grid`] runs once per kernel and thread count.
#[derive(Debug, Default)]
pub struct SplitCache(AtomicU64);

impl Clone for SplitCache {
    fn clone(&self) -> Self {
        SplitCache(AtomicU64::new(self.0.load(Ordering::Relaxed)))
    }
}

impl SplitCache {
    /// The split stored for `threads`, or `make()`'s, stored (each part below 2^16).
    pub fn get_or(&self, threads: usize, make: impl FnOnce() -> (usize, usize)) -> (usize, usize) {
        let v = self.0.load(Ordering::Relaxed);
        if v != 0 && (v >> 32) as usize == threads {
            return (((v >> 16) & 0xFFFF) as usize, (v & 0xFFFF) as usize);
        }
        let (a, b) = make();
        let (a, b) = (a.min(0xFFFF), b.min(0xFFFF));
        self.0.store(
            (threads as u64) << 32 | (a as u64) << 16 | b as u64,
            Ordering::Relaxed,
        );
        (a, b)
    }
}

/// Most tiles per thread [`Par::grid`] aims at (tiles are claimed dynamically, so a few per
/// thread even out uneven ones and threads delayed by other work), as [`Par::for_rows`].
const GRID_PARTS_PER_THREAD: usize = CHUNKS_PER_THREAD;

/// One tile of [`Par::for_grid`]: `rows` rows of `cols` values at a row stride of `stride`
/// values in the whole output, which no other tile overlaps.
pub struct Tile<'a> {
    ptr: *mut f32,
    rows: usize,
    cols: usize,
    stride: usize,
    _out: std::marker::PhantomData<&'a mut [f32]>,
}

impl<'a> Tile<'a> {
    /// The whole of `buf` as one tile of rows of `row_len` values (a part of an output a
    /// kernel writes row by row itself).
    pub(crate) fn whole(buf: &'a mut [f32], row_len: usize) -> Tile<'a> {
        let row_len = row_len.max(1);
        Tile {
            ptr: buf.as_mut_ptr(),
            rows: buf.len() / row_len,
            cols: row_len,
            stride: row_len,
            _out: std::marker::PhantomData,
        }
    }

    /// Rows in this tile.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Values per row in this tile.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Distance in values between the starts of two rows (the whole output's row length).
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Row `i` of the tile (its `cols` values).
    pub fn row(&mut self, i: usize) -> &mut [f32] {
        assert!(i < self.rows, "Tile: row out of range");
        // SAFETY: row `i` of the tile lies inside the output and inside no other tile.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(i * self.stride), self.cols) }
    }

    /// Rows `rows` of a tile that spans whole output rows (`cols() == stride()`), as one
    /// contiguous slice.
    pub fn span(&mut self, rows: Range<usize>) -> &mut [f32] {
        assert!(
            self.cols == self.stride && rows.start <= rows.end && rows.end <= self.rows,
            "Tile: span of a partial tile"
        );
        // SAFETY: whole rows `rows` of the tile are contiguous in the output, inside the tile.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.ptr.add(rows.start * self.stride),
                rows.len() * self.stride,
            )
        }
    }

    /// The tile's first value; row `i` starts `i * stride()` values further, `cols()` long.
    /// Writing outside those ranges is undefined behaviour.
    pub fn as_mut_ptr(&mut self) -> *mut f32 {
        self.ptr
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value of the output is handed to exactly one tile, at its own row and column,
    /// for tile sizes that divide the output and sizes that leave ragged last tiles.
    #[test]
    fn for_grid_covers_each_value_once() {
        for threads in [1, 3] {
            let par = Par::new(threads);
            for (rows, row_len, tr, tc) in
                [(7, 5, 2, 3), (12, 32, 12, 16), (1, 40, 1, 7), (9, 1, 4, 1)]
            {
                let mut out = vec![0.0f32; rows * row_len];
                par.for_grid(&mut out, row_len, tr, tc, |r, c, tile| {
                    assert_eq!(
                        (tile.rows(), tile.cols(), tile.stride()),
                        (r.len(), c.len(), row_len)
                    );
                    for (i, y) in r.clone().enumerate() {
                        for (v, x) in tile.row(i).iter_mut().zip(c.clone()) {
                            *v += (y * row_len + x) as f32 + 1.0;
                        }
                    }
                });
                let want: Vec<f32> = (0..rows * row_len).map(|i| i as f32 + 1.0).collect();
                assert_eq!(out, want, "{rows}x{row_len} tiles {tr}x{tc}");
            }
        }
    }

    /// Every value of the output is handed to exactly one tile of [`Par::for_tiles`], at its
    /// own row and column, for even and uneven cuts and cuts that leave empty tiles; bad cuts
    /// panic.
    #[test]
    fn for_tiles_covers_each_value_once() {
        for threads in [1, 2, 4] {
            let par = Par::new(threads);
            for (rows, row_len, rc, cc) in [
                (7, 5, &[0, 3, 7][..], &[0, 2, 5][..]),
                (14, 40, &[0, 1, 3, 5, 8, 10, 12, 14], &[0, 16, 40]),
                (3, 9, &[0, 0, 2, 3], &[0, 9, 9]),
                (1, 1, &[0, 1], &[0, 1]),
            ] {
                let mut out = vec![0.0f32; rows * row_len];
                par.for_tiles(&mut out, row_len, rc, cc, |r, c, tile| {
                    assert!(!r.is_empty() && !c.is_empty());
                    assert_eq!((tile.rows(), tile.cols()), (r.len(), c.len()));
                    for (i, y) in r.clone().enumerate() {
                        for (v, x) in tile.row(i).iter_mut().zip(c.clone()) {
                            *v += (y * row_len + x) as f32 + 1.0;
                        }
                    }
                });
                let want: Vec<f32> = (0..rows * row_len).map(|i| i as f32 + 1.0).collect();
                assert_eq!(out, want, "{rows}x{row_len} cuts {rc:?} {cc:?}");
            }
            for (rc, cc) in [
                (&[0, 5, 4][..], &[0, 3][..]),
                (&[0, 5], &[1, 3]),
                (&[0, 4], &[0, 3]),
            ] {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    par.for_tiles(&mut [0.0; 15], 3, rc, cc, |_, _, _| {});
                }));
                assert!(r.is_err(), "cuts {rc:?} {cc:?} accepted");
            }
        }
    }

    /// [`Par::even_grid`] on the 1x1 convolutions of hand_landmark_lite (12544 to 49 pixels,
    /// the micro-kernels' row and panel sizes) at 2 and 4 threads: every thread's share within
    /// 15 % of an even one (fixed tiles left up to 1.47x: 9 parts of 6 rows on 49 pixels), a
    /// part for every thread; none without a pool.
    #[test]
    fn even_grid_evens_out_the_threads() {
        assert_eq!(Par::new(1).even_grid(196, 288, 1 << 24, 1, 8, 48), (1, 1));
        for threads in [2, 4] {
            let par = Par::new(threads);
            for (px, n, k, mr, nr) in [
                (12544, 16, 24, 12, 16),
                (3136, 96, 16, 8, 48),
                (784, 144, 24, 8, 48),
                (196, 48, 288, 8, 48),
                (196, 384, 64, 6, 64),
                (49, 112, 672, 6, 64),
                (49, 672, 112, 6, 64),
            ] {
                let (rp, cp) = par.even_grid(px, n, px * n * k, 1 << 17, mr, nr);
                let (ru, cu) = (px.div_ceil(mr), n.div_ceil(nr));
                let cut =
                    |u: usize, p: usize, a: usize, len: usize, i: usize| (u * i / p * a).min(len);
                let size = |p: usize| {
                    let (i, j) = (p / cp, p % cp);
                    (cut(ru, rp, mr, px, i + 1) - cut(ru, rp, mr, px, i))
                        * (cut(cu, cp, nr, n, j + 1) - cut(cu, cp, nr, n, j))
                };
                let largest = (0..threads)
                    .map(|t| {
                        (par.first_part(t, rp * cp)..par.first_part(t + 1, rp * cp))
                            .map(size)
                            .sum::<usize>()
                    })
                    .max()
                    .unwrap();
                let even = (px * n) as f64 / threads as f64;
                assert!(
                    largest as f64 <= 1.15 * even,
                    "{px}x{n}, {threads} threads: {rp}x{cp}"
                );
                assert!(rp * cp >= threads, "{px}x{n}, {threads} threads: {rp}x{cp}");
            }
        }
    }

    /// No split without a pool or below the work threshold; tiles aligned to the register
    /// tile; few rows of many columns split over columns, enough tiles for every thread.
    #[test]
    fn grid_splits_few_rows_over_columns() {
        let work = |r: usize, c: usize| r * c * 512;
        assert_eq!(
            Par::new(1).grid(36, 256, work(36, 256), 1, 12, 32),
            (36, 256)
        );
        let par = Par::new(16);
        assert_eq!(par.grid(36, 256, 1000, 1 << 18, 12, 32), (36, 256));
        for (rows, cols) in [(4, 512), (36, 256), (144, 256), (9216, 32)] {
            let (tr, tc) = par.grid(rows, cols, work(rows, cols), 1 << 14, 12, 32);
            assert!(tr == rows || tr.is_multiple_of(12), "{rows}x{cols}: {tr}");
            assert!(tc == cols || tc.is_multiple_of(32), "{rows}x{cols}: {tc}");
            let parts = rows.div_ceil(tr) * cols.div_ceil(tc);
            // At least 3/4 of the threads busy (the alignment rounds tiles up).
            assert!(
                (12..=64).contains(&parts),
                "{rows}x{cols}: {tr}x{tc}, {parts} tiles"
            );
        }
        // Plenty of rows: whole rows.
        assert_eq!(par.grid(9216, 32, work(9216, 32), 1 << 14, 12, 32).1, 32);
    }
}
