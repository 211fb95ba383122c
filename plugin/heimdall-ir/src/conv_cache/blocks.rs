//! Change detection: per-block colour histograms and their chi-square distance to the histogram
//! stored when the block was last recomputed (DeepMon), the means of a 4 × 4 grid of cells per
//! block against the stored ones (what a histogram cannot see: content moving within a block),
//! expiry, and the resulting dirty mask. The GPU backend's `shaders/cache_blocks.wgsl` computes
//! the same, in the same `f32` and integer operations.

use super::ConvCacheConfig;
use super::fields::Field;

/// The grid of blocks over an `H × W` input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockGrid {
    /// Block height and width in pixels (the last row and column of blocks may be smaller).
    pub block: [usize; 2],
    /// Blocks along the height and the width.
    pub count: [usize; 2],
}

impl BlockGrid {
    /// `grid` blocks per axis (fewer when the input is smaller) over an `in_hw` input.
    pub fn new(in_hw: [usize; 2], grid: [u32; 2]) -> BlockGrid {
        let mut block = [1; 2];
        let mut count = [1; 2];
        for d in 0..2 {
            let g = (grid[d] as usize).clamp(1, in_hw[d].max(1));
            block[d] = in_hw[d].div_ceil(g).max(1);
            count[d] = in_hw[d].div_ceil(block[d]).max(1);
        }
        BlockGrid { block, count }
    }

    /// Number of blocks.
    pub fn len(&self) -> usize {
        self.count[0] * self.count[1]
    }

    /// Whether there are no blocks (never: a grid has at least one).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a block touching the inclusive input rectangle `rect` (rows, then columns) is
    /// dirty in `mask` (one flag per block, row-major).
    pub fn rect_dirty(&self, rect: [[usize; 2]; 2], mask: &[bool]) -> bool {
        let (r0, r1) = (rect[0][0] / self.block[0], rect[0][1] / self.block[0]);
        let (c0, c1) = (rect[1][0] / self.block[1], rect[1][1] / self.block[1]);
        (r0..=r1.min(self.count[0] - 1))
            .any(|r| (c0..=c1.min(self.count[1] - 1)).any(|c| mask[r * self.count[1] + c]))
    }

    /// Whether output rows `rows` × columns `cols` of a tensor with field `field` must be
    /// recomputed under `mask` (an `in_hw` input).
    pub fn field_dirty(
        &self,
        field: &Field,
        rows: [usize; 2],
        cols: [usize; 2],
        in_hw: [usize; 2],
        mask: &[bool],
    ) -> bool {
        match field {
            Field::Global => mask.iter().any(|&d| d),
            local => match local.input_rect(rows, cols, in_hw) {
                Some(rect) => self.rect_dirty(rect, mask),
                None => false,
            },
        }
    }
}

/// The bin of value `v`: `floor((v - lo) * scale)` clamped to `0..bins` (NaN to 0).
pub fn bin_of(v: f32, lo: f32, scale: f32, bins: u32) -> u32 {
    let b = ((v - lo) * scale).floor();
    if b.is_nan() || b < 0.0 {
        0
    } else {
        (b as u32).min(bins - 1)
    }
}

/// Cells per block side: a block's structure is the means of `CELLS × CELLS` cells.
pub const CELLS: usize = 4;
/// Levels a value is quantised to for the cell sums (`0..CELL_LEVELS` over the range).
pub const CELL_LEVELS: u32 = 1024;

/// Rows (or columns) of cell `k` of a block side of `n` pixels: pixel `p` is in cell
/// `p * CELLS / n`, so cell `k` holds `ceil(k n / CELLS) .. ceil((k + 1) n / CELLS)`.
pub fn cell_extent(k: usize, n: usize) -> usize {
    ((k + 1) * n).div_ceil(CELLS) - (k * n).div_ceil(CELLS)
}

/// Values per block of [`histograms`]: the histogram counts, then the cell sums.
pub fn stats_per_block(channels: usize, bins: u32) -> usize {
    channels * (bins as usize + CELLS * CELLS)
}

/// Per-block statistics of an NHWC `[1, H, W, C]` image (`C ≤ 4`): for each block, the
/// `[channel][bin]` histogram counts, then the `[channel][cell]` sums of the values quantised to
/// `0..CELL_LEVELS` over the range ([`stats_per_block`] values per block).
pub fn histograms(
    image: &[f32],
    in_hw: [usize; 2],
    channels: usize,
    c: &ConvCacheConfig,
) -> Vec<u32> {
    let grid = BlockGrid::new(in_hw, c.grid);
    let bins = c.bins as usize;
    let per = stats_per_block(channels, c.bins);
    let scale = c.bin_scale();
    let qscale = CELL_LEVELS as f32 / (c.range[1] - c.range[0]);
    let mut h = vec![0u32; grid.len() * per];
    for y in 0..in_hw[0] {
        for x in 0..in_hw[1] {
            let (by, bx) = (y / grid.block[0], x / grid.block[1]);
            let b = by * grid.count[1] + bx;
            let bh = grid.block[0].min(in_hw[0] - by * grid.block[0]);
            let bw = grid.block[1].min(in_hw[1] - bx * grid.block[1]);
            let cell = ((y - by * grid.block[0]) * CELLS / bh) * CELLS
                + (x - bx * grid.block[1]) * CELLS / bw;
            for ch in 0..channels {
                let v = image[(y * in_hw[1] + x) * channels + ch];
                let bin = bin_of(v, c.range[0], scale, c.bins) as usize;
                h[b * per + ch * bins + bin] += 1;
                let q = bin_of(v, c.range[0], qscale, CELL_LEVELS);
                h[b * per + channels * bins + ch * CELLS * CELLS + cell] += q;
            }
        }
    }
    h
}

/// The largest difference between two blocks' cell means (`[channel][cell]` sums of a block of
/// `hw` pixels), as a fraction of the range.
pub fn cell_distance(a: &[u32], b: &[u32], hw: [usize; 2]) -> f32 {
    let mut worst = 0.0f32;
    for (i, (&x, &y)) in a.iter().zip(b).enumerate() {
        let cell = i % (CELLS * CELLS);
        let n = cell_extent(cell / CELLS, hw[0]) * cell_extent(cell % CELLS, hw[1]);
        if n > 0 {
            let d = x.abs_diff(y) as f32 / (n as f32 * CELL_LEVELS as f32);
            worst = worst.max(d);
        }
    }
    worst
}

/// Chi-square distance between two histograms of `pixels` pixels and `channels` channels of
/// `bins` bins: `Σ (a - b)² / (a + b)` over the normalised counts, divided by the channels
/// (0 for equal histograms, 2 for disjoint ones).
pub fn chi_square(a: &[u32], b: &[u32], pixels: u32, channels: usize) -> f32 {
    let mut sum = 0.0f32;
    for (&x, &y) in a.iter().zip(b) {
        let s = x + y;
        if s > 0 {
            let d = x as f32 - y as f32;
            sum += d * d / s as f32;
        }
    }
    sum / (pixels.max(1) as f32 * channels.max(1) as f32)
}

/// What the cache remembers per block: the histogram when it was last recomputed and when.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockState {
    dims: [usize; 2],
    grid: BlockGrid,
    channels: usize,
    config: ConvCacheConfig,
    reference: Vec<u32>,
    stamp_run: Vec<u32>,
    stamp_ms: Vec<u32>,
    run: u32,
    since_full: u32,
    valid: bool,
}

impl BlockState {
    /// An empty state (the first run recomputes everything).
    pub fn new(in_hw: [usize; 2], channels: usize, config: ConvCacheConfig) -> BlockState {
        let grid = BlockGrid::new(in_hw, config.grid);
        let n = grid.len();
        BlockState {
            dims: in_hw,
            grid,
            channels,
            config,
            reference: vec![0; n * stats_per_block(channels, config.bins)],
            stamp_run: vec![0; n],
            stamp_ms: vec![0; n],
            run: 0,
            since_full: 0,
            valid: false,
        }
    }

    /// The grid.
    pub fn grid(&self) -> BlockGrid {
        self.grid
    }

    /// Forgets everything: the next run recomputes every block (a new crop, a new input size).
    pub fn invalidate(&mut self) {
        self.valid = false;
    }

    /// Whether this run must recompute every block (first run, invalidated, periodic refresh),
    /// before [`BlockState::update`] counts it.
    pub fn next_is_full(&self) -> bool {
        !self.valid
            || (self.config.refresh_runs > 0 && self.since_full + 1 >= self.config.refresh_runs)
    }

    /// Pixels of block `b`.
    pub fn block_pixels(&self, b: usize) -> u32 {
        let [h, w] = self.block_hw(b);
        (h * w) as u32
    }

    /// Height and width of block `b`.
    pub fn block_hw(&self, b: usize) -> [usize; 2] {
        let (r, c) = (b / self.grid.count[1], b % self.grid.count[1]);
        [
            self.grid.block[0].min(self.dims[0] - r * self.grid.block[0]),
            self.grid.block[1].min(self.dims[1] - c * self.grid.block[1]),
        ]
    }

    /// Decides this run's dirty blocks from its statistics ([`histograms`]) at time `now_ms`:
    /// histogram changed beyond the threshold, a cell mean beyond the cell threshold, expired,
    /// or all of them on a full run; dirty blocks take the new statistics as their reference.
    pub fn update(&mut self, hist: &[u32], now_ms: u32) -> Vec<bool> {
        let full = self.next_is_full();
        let per = stats_per_block(self.channels, self.config.bins);
        let split = self.channels * self.config.bins as usize;
        let c = self.config;
        let mut mask = vec![false; self.grid.len()];
        for (b, dirty) in mask.iter_mut().enumerate() {
            let range = b * per..(b + 1) * per;
            let (now, then) = (&hist[range.clone()], &self.reference[range.clone()]);
            let chi = chi_square(
                &now[..split],
                &then[..split],
                self.block_pixels(b),
                self.channels,
            );
            let moved = cell_distance(&now[split..], &then[split..], self.block_hw(b));
            let expired = (c.expiry_runs > 0
                && self.run.wrapping_sub(self.stamp_run[b]) >= c.expiry_runs)
                || (c.expiry_ms > 0 && now_ms.wrapping_sub(self.stamp_ms[b]) >= c.expiry_ms);
            *dirty = full || chi > c.threshold || moved > c.cell_threshold || expired;
            if *dirty {
                self.reference[range.clone()].copy_from_slice(&hist[range]);
                self.stamp_run[b] = self.run;
                self.stamp_ms[b] = now_ms;
            }
        }
        self.since_full = if full { 0 } else { self.since_full + 1 };
        self.run = self.run.wrapping_add(1);
        self.valid = true;
        mask
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> ConvCacheConfig {
        ConvCacheConfig {
            bins: 4,
            grid: [2, 2],
            threshold: 0.1,
            expiry_runs: 3,
            expiry_ms: 0,
            range: [0.0, 1.0],
            ..ConvCacheConfig::default()
        }
    }

    #[test]
    fn a_grid_covers_odd_sizes_with_smaller_last_blocks() {
        let g = BlockGrid::new([10, 7], [3, 2]);
        assert_eq!(g.block, [4, 4]);
        assert_eq!(g.count, [3, 2]);
        let s = BlockState::new(
            [10, 7],
            1,
            ConvCacheConfig {
                grid: [3, 2],
                ..config()
            },
        );
        let total: u32 = (0..g.len()).map(|b| s.block_pixels(b)).sum();
        assert_eq!(total, 70);
    }

    #[test]
    fn histograms_and_chi_square_by_hand() {
        // A 2x2 image, one block, one channel, 4 bins over [0, 1).
        let c = ConvCacheConfig {
            grid: [1, 1],
            ..config()
        };
        let h = histograms(&[0.1, 0.3, 0.3, 2.0], [2, 2], 1, &c);
        assert_eq!(h[..4], [1, 2, 0, 1]);
        // Cells of a 2x2 block: pixel (y, x) in cell (2y, 2x) of the 4x4; values * 1024.
        assert_eq!((h[4], h[6], h[12], h[14]), (102, 307, 307, 1023));
        assert_eq!(h[4..].iter().filter(|&&v| v != 0).count(), 4);
        let g = histograms(&[0.1, 0.1, 0.3, 0.9], [2, 2], 1, &c);
        assert_eq!(g[..4], [2, 1, 0, 1]);
        let (h, g) = (&h[..4], &g[..4]);
        // (1-2)^2/3 + (2-1)^2/3 = 2/3, over 4 pixels.
        assert!((chi_square(h, g, 4, 1) - 2.0 / 3.0 / 4.0).abs() < 1e-7);
        assert_eq!(chi_square(h, h, 4, 1), 0.0);
        assert_eq!(chi_square(&[4, 0], &[0, 4], 4, 1), 2.0);
        assert_eq!(bin_of(f32::NAN, 0.0, 4.0, 4), 0);
        assert_eq!(bin_of(-3.0, 0.0, 4.0, 4), 0);
    }

    #[test]
    fn only_changed_and_expired_blocks_are_dirty() {
        let c = config();
        let mut s = BlockState::new([4, 4], 1, c);
        let still = vec![0.2f32; 16];
        let mut moved = still.clone();
        moved[0] = 0.9; // top-left block: 1 of 4 pixels to another bin
        let run = |s: &mut BlockState, img: &[f32]| s.update(&histograms(img, [4, 4], 1, &c), 0);
        assert_eq!(run(&mut s, &still), vec![true; 4], "the first run is full");
        assert_eq!(run(&mut s, &still), vec![false; 4]);
        assert_eq!(run(&mut s, &moved), vec![true, false, false, false]);
        // Run 3: blocks 1..3 were last recomputed at run 0: expired.
        assert_eq!(run(&mut s, &moved), vec![false, true, true, true]);
        s.invalidate();
        assert!(s.next_is_full());
        assert_eq!(run(&mut s, &moved), vec![true; 4]);
    }

    #[test]
    fn a_reference_only_moves_when_its_block_is_recomputed() {
        // Slow drift: each run changes a little, under the threshold, but the distance to the
        // reference grows until the block is recomputed: no accumulation beyond the threshold.
        let c = ConvCacheConfig {
            bins: 8,
            grid: [1, 1],
            expiry_runs: 0,
            ..config()
        };
        let mut s = BlockState::new([1, 8], 1, c);
        let mut img = vec![0.05f32; 8];
        s.update(&histograms(&img, [1, 8], 1, &c), 0);
        let mut recomputed = 0;
        for i in 0..8 {
            img[i] = 0.95;
            if s.update(&histograms(&img, [1, 8], 1, &c), 0)[0] {
                recomputed += 1;
            }
        }
        assert!(recomputed >= 2, "{recomputed}");
    }

    #[test]
    fn content_moving_within_a_block_is_seen_by_the_cells_not_the_histogram() {
        // One 8x8 block: a dark and a bright half, then the same shifted by two columns
        // (wrapping: the histogram is the same), then the first with ±0.002 of noise.
        let c = ConvCacheConfig {
            grid: [1, 1],
            expiry_runs: 0,
            ..config()
        };
        let img = |shift: usize, noise: f32| -> Vec<f32> {
            (0..64)
                .map(|i| {
                    let x = (i % 8 + shift) % 8;
                    let n = if i % 2 == 0 { noise } else { -noise };
                    if x < 4 { 0.1 + n } else { 0.9 + n }
                })
                .collect()
        };
        let (a, b) = (
            histograms(&img(0, 0.0), [8, 8], 1, &c),
            histograms(&img(2, 0.0), [8, 8], 1, &c),
        );
        assert_eq!(chi_square(&a[..4], &b[..4], 64, 1), 0.0);
        assert!((cell_distance(&a[4..], &b[4..], [8, 8]) - 0.8).abs() < 0.01);
        let mut s = BlockState::new([8, 8], 1, c);
        assert_eq!(s.update(&a, 0), vec![true]);
        assert_eq!(
            s.update(&histograms(&img(0, 0.002), [8, 8], 1, &c), 0),
            vec![false]
        );
        assert_eq!(s.update(&b, 0), vec![true]);
        assert_eq!(
            cell_extent(0, 5) + cell_extent(1, 5) + cell_extent(2, 5) + cell_extent(3, 5),
            5
        );
        // A side of 2 pixels: pixel p in cell 2p, cells 1 and 3 empty.
        assert_eq!(
            (0..4).map(|k| cell_extent(k, 2)).collect::<Vec<_>>(),
            [1, 0, 1, 0]
        );
    }
}
