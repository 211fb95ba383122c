//! The CPU backend's convolution cache (DeepMon): the reference the GPU backend's is checked
//! against.
//!
//! When a run starts at op 0, the block histograms of input 0 decide the dirty blocks
//! ([`BlockState::update`]). Every cacheable op ([`CachePlan::cacheable`]) keeps a copy of its
//! last output; after it runs, an output pixel keeps the kept value unless its field touches a
//! dirty block (`BlockGrid::field_dirty`), and the merged result becomes the new copy. An op
//! none of whose pixels is dirty does not run at all: its kept output is copied back.

use std::time::Instant;

use heimdall_ir::conv_cache::{
    BlockGrid, BlockState, CacheCounts, CachePlan, ConvCacheConfig, Field, histograms,
};
use heimdall_ir::{Constant, Graph, TensorInfo};

use crate::error::CpuError;

/// A copy of `graph` without the constants' values: all the cache plan reads (shapes, ops,
/// which tensors are constant), at a fraction of the memory.
pub(crate) fn skeleton(graph: &Graph) -> Graph {
    Graph {
        name: graph.name.clone(),
        tensors: graph
            .tensors
            .iter()
            .map(|t| TensorInfo {
                name: t.name.clone(),
                shape: t.shape.clone(),
                dtype: t.dtype,
                constant: t.constant.as_ref().map(|_| Constant {
                    values: Vec::new(),
                    fp16: None,
                    sparsity: None,
                }),
            })
            .collect(),
        ops: graph.ops.clone(),
        inputs: graph.inputs.clone(),
        outputs: graph.outputs.clone(),
    }
}

/// One cacheable op: its output's geometry, which blocks each output row and column reads,
/// and its kept output.
struct OpCache {
    /// Output height and width.
    hw: [usize; 2],
    /// Output channels.
    channels: usize,
    /// A global field: every pixel is dirty when any block is.
    global: bool,
    /// Per output row, the block rows its field reads (`None`: only padding).
    rows: Vec<Option<[usize; 2]>>,
    /// Per output column, the block columns its field reads (`None`: only padding).
    cols: Vec<Option<[usize; 2]>>,
    /// The output of the last run (empty until the op first ran).
    kept: Vec<f32>,
}

/// The dirty blocks of the current run as a 2-D prefix sum (`(rows + 1) × (cols + 1)`).
struct RunMask {
    prefix: Vec<u32>,
    any: bool,
}

impl RunMask {
    /// The prefix sum of a row-major mask of `count` blocks.
    fn new(mask: &[bool], count: [usize; 2]) -> RunMask {
        let [rows, cols] = count;
        let mut prefix = vec![0u32; (rows + 1) * (cols + 1)];
        for r in 0..rows {
            for c in 0..cols {
                prefix[(r + 1) * (cols + 1) + c + 1] = mask[r * cols + c] as u32
                    + prefix[r * (cols + 1) + c + 1]
                    + prefix[(r + 1) * (cols + 1) + c]
                    - prefix[r * (cols + 1) + c];
            }
        }
        RunMask {
            prefix,
            any: mask.contains(&true),
        }
    }
}

/// The state of the convolution cache of one [`crate::CpuModel`].
pub(crate) struct ConvCache {
    config: ConvCacheConfig,
    in_hw: [usize; 2],
    channels: usize,
    state: BlockState,
    grid: BlockGrid,
    ops: Vec<Option<OpCache>>,
    clock: Instant,
    fixed_now: Option<u32>,
    mask: Option<RunMask>,
    counts: CacheCounts,
    /// Per output pixel of the op being run: whether it is recomputed.
    dirty: Vec<bool>,
    /// Dirty pixels in `dirty`.
    dirty_count: usize,
}

/// What to do with an op, decided before it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpAction {
    /// Not cached: run it as without the cache.
    Uncached,
    /// Run it, then merge with the kept output.
    Run,
    /// Every pixel is clean: copy the kept output instead of running it.
    Skip,
}

impl ConvCache {
    /// The cache of the model whose graph (or [`skeleton`]) is `graph`.
    pub(crate) fn new(graph: &Graph, config: ConvCacheConfig) -> Result<ConvCache, CpuError> {
        config.validate().map_err(CpuError::CacheConfig)?;
        let plan = CachePlan::new(graph, config.layers).map_err(CpuError::CacheInput)?;
        let state = BlockState::new(plan.in_hw, plan.channels, config);
        let grid = state.grid();
        let ops = graph
            .ops
            .iter()
            .enumerate()
            .map(|(i, op)| {
                let field = plan.field(*op.outputs.first()?)?;
                if !plan.cacheable[i] {
                    return None;
                }
                let [1, h, w, c] = graph.tensor(op.outputs[0]).shape[..] else {
                    return None;
                };
                Some(OpCache::new(&field, [h, w], c, plan.in_hw, &grid))
            })
            .collect();
        Ok(ConvCache {
            config,
            in_hw: plan.in_hw,
            channels: plan.channels,
            state,
            grid,
            ops,
            clock: Instant::now(),
            fixed_now: None,
            mask: None,
            counts: CacheCounts {
                blocks: grid.len() as u64,
                ..CacheCounts::default()
            },
            dirty: Vec::new(),
            dirty_count: 0,
        })
    }

    /// Op `i` is not cached from now on: it runs as without the cache.
    pub(crate) fn forget_op(&mut self, i: usize) {
        if let Some(op) = self.ops.get_mut(i) {
            *op = None;
        }
    }

    /// The counts of the last run (of the ops run since it started at op 0).
    pub(crate) fn counts(&self) -> CacheCounts {
        self.counts
    }

    /// Fixes the clock (`Some`) or goes back to the time since the cache was enabled.
    pub(crate) fn set_now_ms(&mut self, now_ms: Option<u32>) {
        self.fixed_now = now_ms;
    }

    /// The next run recomputes everything.
    pub(crate) fn invalidate(&mut self) {
        self.state.invalidate();
        self.mask = None;
    }

    /// Starts a run from op 0: decides the dirty blocks from `image`, input 0 as set.
    pub(crate) fn begin(&mut self, image: &[f32]) {
        let now = self
            .fixed_now
            .unwrap_or_else(|| self.clock.elapsed().as_millis().min(u32::MAX as u128) as u32);
        let hist = histograms(image, self.in_hw, self.channels, &self.config);
        let mask = self.state.update(&hist, now);
        let dirty_blocks = mask.iter().filter(|&&d| d).count();
        self.mask = Some(RunMask::new(&mask, self.grid.count));
        self.counts = CacheCounts {
            blocks: self.grid.len() as u64,
            dirty_blocks: dirty_blocks as u64,
            tiles: 0,
            computed_tiles: 0,
        };
    }

    /// Decides op `i`'s dirty pixels (kept for [`ConvCache::after_op`]) before it runs.
    pub(crate) fn before_op(&mut self, i: usize) -> OpAction {
        let Some(Some(op)) = self.ops.get(i) else {
            return OpAction::Uncached;
        };
        let [h, w] = op.hw;
        self.dirty.clear();
        self.dirty.resize(h * w, true);
        self.dirty_count = h * w;
        let (Some(mask), false) = (&self.mask, op.kept.is_empty()) else {
            // No decision for this run (a range not started at op 0) or nothing kept yet.
            return OpAction::Run;
        };
        if op.global {
            if !mask.any {
                self.dirty.fill(false);
                self.dirty_count = 0;
            }
        } else {
            let cols = self.grid.count[1] + 1;
            let p = &mask.prefix;
            let mut count = 0;
            for (y, row) in op.rows.iter().enumerate() {
                let line = &mut self.dirty[y * w..(y + 1) * w];
                let Some([r0, r1]) = *row else {
                    line.fill(false);
                    continue;
                };
                for (d, col) in line.iter_mut().zip(&op.cols) {
                    *d = col.is_some_and(|[c0, c1]| {
                        p[(r1 + 1) * cols + c1 + 1] + p[r0 * cols + c0]
                            > p[r0 * cols + c1 + 1] + p[(r1 + 1) * cols + c0]
                    });
                    count += *d as usize;
                }
            }
            self.dirty_count = count;
        }
        if self.dirty_count == 0 {
            OpAction::Skip
        } else {
            OpAction::Run
        }
    }

    /// After op `i` ran (or was skipped, [`OpAction::Skip`]) into `out`: merges `out` with the
    /// kept output by the dirty pixels and keeps the result.
    pub(crate) fn after_op(&mut self, i: usize, out: &mut [f32]) {
        let Some(Some(op)) = self.ops.get_mut(i) else {
            return;
        };
        let [h, w] = op.hw;
        self.counts.tiles += (h * w) as u64;
        self.counts.computed_tiles += self.dirty_count as u64;
        if op.kept.len() != out.len() || self.dirty_count == h * w {
            op.kept.clear();
            op.kept.extend_from_slice(out);
        } else if self.dirty_count == 0 {
            out.copy_from_slice(&op.kept);
        } else {
            let c = op.channels;
            for ((o, k), &d) in out
                .chunks_exact_mut(c)
                .zip(op.kept.chunks_exact_mut(c))
                .zip(&self.dirty)
            {
                if d {
                    k.copy_from_slice(o);
                } else {
                    o.copy_from_slice(k);
                }
            }
        }
    }
}

impl OpCache {
    /// The block rows and columns each output row and column of a `hw` output with field
    /// `field` reads, as `BlockGrid::rect_dirty` rounds them.
    fn new(
        field: &Field,
        hw: [usize; 2],
        channels: usize,
        in_hw: [usize; 2],
        grid: &BlockGrid,
    ) -> OpCache {
        let global = matches!(field, Field::Global);
        let [h, w] = hw;
        let (mut rows, mut cols) = (Vec::new(), Vec::new());
        if !global && h > 0 && w > 0 {
            // The rows a pixel reads do not depend on its column (and conversely); the other
            // axis spans the whole output so that the rectangle is empty only when this axis is
            // (or every pixel lies in the padding, then every pixel is clean either way).
            let blocks = |lo: usize, hi: usize, d: usize| {
                [
                    lo / grid.block[d],
                    (hi / grid.block[d]).min(grid.count[d] - 1),
                ]
            };
            rows = (0..h)
                .map(|y| {
                    let r = field.input_rect([y, y], [0, w - 1], in_hw)?;
                    Some(blocks(r[0][0], r[0][1], 0))
                })
                .collect();
            cols = (0..w)
                .map(|x| {
                    let r = field.input_rect([0, h - 1], [x, x], in_hw)?;
                    Some(blocks(r[1][0], r[1][1], 1))
                })
                .collect();
        }
        OpCache {
            hw,
            channels,
            global,
            rows,
            cols,
            kept: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-pixel decision of `before_op` is `BlockGrid::field_dirty`'s, pixel by pixel.
    #[test]
    fn the_prefix_sum_decision_matches_field_dirty() {
        let in_hw = [37, 29];
        let grid = BlockGrid::new(in_hw, [5, 4]);
        let fields = [
            Field::IDENTITY,
            Field::IDENTITY.window([3, 3], [2, 2], [1, 1]),
            Field::IDENTITY
                .window([5, 3], [2, 1], [2, 0])
                .window([3, 3], [2, 2], [0, 1]),
            Field::Local {
                stride: [4, 4],
                offset: [9, 2],
                size: [3, 3],
            },
        ];
        let mut seed = 7u32;
        for field in fields {
            for _ in 0..20 {
                let mask: Vec<bool> = (0..grid.len())
                    .map(|_| {
                        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                        seed >> 29 == 0
                    })
                    .collect();
                let hw = [in_hw[0] / 2 + 3, in_hw[1] / 3 + 2];
                let mut cache = ConvCache {
                    config: ConvCacheConfig::default(),
                    in_hw,
                    channels: 1,
                    state: BlockState::new(in_hw, 1, ConvCacheConfig::default()),
                    grid,
                    ops: vec![Some(OpCache::new(&field, hw, 1, in_hw, &grid))],
                    clock: Instant::now(),
                    fixed_now: None,
                    mask: None,
                    counts: CacheCounts::default(),
                    dirty: Vec::new(),
                    dirty_count: 0,
                };
                cache.ops[0].as_mut().unwrap().kept = vec![0.0; hw[0] * hw[1]];
                cache.mask = Some(RunMask::new(&mask, grid.count));
                cache.before_op(0);
                for y in 0..hw[0] {
                    for x in 0..hw[1] {
                        let want = grid.field_dirty(&field, [y, y], [x, x], in_hw, &mask);
                        assert_eq!(cache.dirty[y * hw[1] + x], want, "{field:?} ({y}, {x})");
                    }
                }
            }
        }
    }
}
