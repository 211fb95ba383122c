//! Convolution cache (DeepMon, seed 004 §6.3): what every backend needs to skip the parts of the
//! first layers whose input did not change since they were last computed.
//!
//! The model's image input is cut into a grid of blocks; each block's colour histogram is
//! compared with the one stored when the block was last recomputed, by chi-square distance
//! ([`blocks`]). A block over the threshold, or whose cache expired, is *dirty*. Every tensor
//! that depends on the input has a [`Field`]: the rectangle of input pixels an output pixel reads
//! through all the layers before it (the receptive field, grown layer by layer: DeepMon's edge
//! rule), or the whole image after a global op. A tile of an op's output is recomputed when its
//! field touches a dirty block; otherwise the op keeps last run's values there.
//!
//! This module is pure arithmetic on the graph and on `f32` images: the GPU backend computes
//! the same histograms, decisions and fields in WGSL, and the CPU backend uses these functions,
//! so a GPU run can be checked against a CPU run of the same cached computation.

pub mod blocks;
mod fields;

pub use blocks::{BlockGrid, BlockState, chi_square, histograms};
pub use fields::{CachePlan, Dep, Field};

/// Settings of the convolution cache of one model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConvCacheConfig {
    /// Histogram bins per channel (DeepMon: 16).
    pub bins: u32,
    /// Blocks along the input's height and width.
    pub grid: [u32; 2],
    /// Chi-square distance (per channel, over normalised histograms: 0 = equal, 2 = disjoint)
    /// at or under which a block counts as unchanged.
    pub threshold: f32,
    /// The largest change of a cell mean (a block is cut into 4 × 4 cells), as a fraction of
    /// `range`, at or under which a block counts as unchanged: content that moves within a
    /// block keeps its histogram but not its cell means (1 turns the test off).
    pub cell_threshold: f32,
    /// Only ops with an index below this are skipped (the "first N layers"); later ops always
    /// run whole.
    pub layers: usize,
    /// A block is recomputed at the latest this many runs after it was (0: never by count).
    pub expiry_runs: u32,
    /// A block is recomputed at the latest this many milliseconds after it was (0: never by time;
    /// DeepMon: 650–1000 ms).
    pub expiry_ms: u32,
    /// Every this many runs, every block is recomputed (0: never), so an error can never drift.
    pub refresh_runs: u32,
    /// The range of input values the histogram bins span (`[lo, hi)`), as the preprocessing
    /// normalises them (e.g. `[0, 1]` or `[-1, 1]`); values outside go to the end bins.
    pub range: [f32; 2],
}

impl Default for ConvCacheConfig {
    fn default() -> Self {
        ConvCacheConfig {
            bins: 16,
            grid: [8, 8],
            threshold: 0.05,
            cell_threshold: 0.02,
            layers: usize::MAX,
            expiry_runs: 0,
            expiry_ms: 1000,
            refresh_runs: 0,
            range: [0.0, 1.0],
        }
    }
}

impl ConvCacheConfig {
    /// Checks the values: bins 1..=64, grid ≥ 1 per axis, a finite threshold ≥ 0 and a range
    /// with `lo < hi`.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=64).contains(&self.bins) {
            return Err(format!("bins must be 1..=64, got {}", self.bins));
        }
        if self.grid[0] == 0 || self.grid[1] == 0 || self.grid[0] > 256 || self.grid[1] > 256 {
            return Err(format!(
                "grid must be 1..=256 per axis, got {:?}",
                self.grid
            ));
        }
        if !(self.threshold.is_finite() && self.threshold >= 0.0) {
            return Err(format!("threshold must be ≥ 0, got {}", self.threshold));
        }
        if !(self.cell_threshold.is_finite() && self.cell_threshold >= 0.0) {
            return Err(format!(
                "cell threshold must be ≥ 0, got {}",
                self.cell_threshold
            ));
        }
        let [lo, hi] = self.range;
        if !(lo.is_finite() && hi.is_finite() && lo < hi) {
            return Err(format!("range must have lo < hi, got {:?}", self.range));
        }
        Ok(())
    }

    /// `bins / (hi - lo)`: a value's bin is `floor((v - lo) * scale)`, clamped.
    pub fn bin_scale(&self) -> f32 {
        self.bins as f32 / (self.range[1] - self.range[0])
    }
}

/// Counters of one cached run (or summed over runs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheCounts {
    /// Blocks of the grid.
    pub blocks: u64,
    /// Blocks recomputed (changed, expired or refreshed).
    pub dirty_blocks: u64,
    /// Tiles (work groups on the GPU, output pixels on the CPU) of the cached ops.
    pub tiles: u64,
    /// Tiles computed.
    pub computed_tiles: u64,
}

impl CacheCounts {
    /// Fraction of the cached ops' tiles that were reused (0 when there are none).
    pub fn hit_rate(&self) -> f64 {
        if self.tiles == 0 {
            return 0.0;
        }
        1.0 - self.computed_tiles as f64 / self.tiles as f64
    }

    /// The sum of two counts.
    pub fn add(&self, o: &CacheCounts) -> CacheCounts {
        CacheCounts {
            blocks: self.blocks + o.blocks,
            dirty_blocks: self.dirty_blocks + o.dirty_blocks,
            tiles: self.tiles + o.tiles,
            computed_tiles: self.computed_tiles + o.computed_tiles,
        }
    }
}
