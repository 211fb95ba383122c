//! Heimdall's frame-budget partitioning (sec. 5.3) over Band's units.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::profile::StepCost;
use super::units::units;
use crate::processor::Processor;

/// How much GPU time one frame leaves to the DNNs, and how chunks may use it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrameBudget {
    /// Frame period `1/f` in ms.
    pub frame_period_ms: f64,
    /// Measured render time `T_render` in ms.
    pub render_ms: f64,
    /// Safety margin in ms.
    pub margin_ms: f64,
    /// Relaxation (Heimdall sec. 5.3): how far the last chunk of a run may exceed the budget so
    /// that a short tail does not become a chunk of its own and leave the GPU idle.
    pub relaxation_ms: f64,
    /// Fixed cost of dispatching one chunk (submission, lost batching), in ms.
    pub chunk_overhead_ms: f64,
}

impl FrameBudget {
    /// A budget for `frame_rate` Hz with the given render time and margins.
    pub fn new(frame_rate: f64, render_ms: f64, margin_ms: f64, relaxation_ms: f64) -> Self {
        FrameBudget {
            frame_period_ms: 1000.0 / frame_rate,
            render_ms,
            margin_ms,
            relaxation_ms,
            chunk_overhead_ms: 0.0,
        }
    }

    /// The budget `B = 1/f - T_render - margin` (never negative).
    pub fn budget_ms(&self) -> f64 {
        (self.frame_period_ms - self.render_ms - self.margin_ms).max(0.0)
    }

    /// `B + relaxation`: the most a chunk may cost unless it is one oversized step.
    pub fn limit_ms(&self) -> f64 {
        self.budget_ms() + self.relaxation_ms
    }
}

/// A contiguous range of steps run as one dispatch on one processor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    /// Op indices, contiguous; the CPU backend runs them with `run_range(ops)`.
    pub ops: Range<usize>,
    /// Where the chunk runs.
    pub processor: Processor,
    /// Estimated cost: the steps' times, plus the chunk overhead for GPU chunks.
    pub est_ms: f64,
    /// A single GPU step that alone exceeds the budget.
    pub oversized: bool,
}

/// A model cut into chunks.
#[derive(Clone, Debug, PartialEq)]
pub struct Partition {
    /// The chunks in op order; together they cover every op exactly once.
    pub chunks: Vec<Chunk>,
    /// Steps that alone exceed the budget (each is its own chunk): reported to the app.
    pub oversized_steps: Vec<usize>,
    chunk_of_op: Vec<u32>,
}

impl Partition {
    /// The chunk that contains `op`.
    pub fn chunk_containing(&self, op: usize) -> &Chunk {
        &self.chunks[self.chunk_of_op[op] as usize]
    }
}

/// Partitions a model for `budget`.
///
/// Within each unit (maximal run of steps with the same processor set, never crossed):
/// - CPU-only units become one CPU chunk each;
/// - GPU-capable units are packed greedily from the front: a chunk takes steps while
///   `steps + overhead <= B`; but when the whole rest of the unit fits in `B + relaxation`, it
///   becomes the last chunk at once (the relaxation). A step that alone exceeds `B` becomes its own
///   (oversized) chunk and is listed in [`Partition::oversized_steps`].
///
/// Taking the longest prefix that fits (furthest reach) is optimal for contiguous packing, so this
/// gives the fewest chunks for which every chunk but a unit's last fits in `B` and the last fits in
/// `B + relaxation`.
pub fn partition(steps: &[StepCost], budget: &FrameBudget) -> Partition {
    let b = budget.budget_ms();
    let limit = budget.limit_ms();
    let oh = budget.chunk_overhead_ms;
    let mut chunks = Vec::new();
    let mut oversized_steps = Vec::new();
    for unit in units(steps) {
        if !unit.processors.contains(Processor::Gpu) {
            let est = steps[unit.ops.clone()].iter().map(|s| s.cpu_ms).sum();
            chunks.push(Chunk {
                ops: unit.ops,
                processor: Processor::Cpu,
                est_ms: est,
                oversized: false,
            });
            continue;
        }
        // Suffix sums of GPU time within the unit for the relaxation test.
        let mut rest: f64 = steps[unit.ops.clone()].iter().map(|s| s.gpu_ms).sum();
        let mut start = unit.ops.start;
        while start < unit.ops.end {
            let tail_has_oversized = steps[start..unit.ops.end].iter().any(|s| s.gpu_ms + oh > b);
            if rest + oh <= limit && !tail_has_oversized {
                chunks.push(Chunk {
                    ops: start..unit.ops.end,
                    processor: Processor::Gpu,
                    est_ms: rest + oh,
                    oversized: false,
                });
                break;
            }
            let mut end = start;
            let mut sum = 0.0;
            while end < unit.ops.end && sum + steps[end].gpu_ms + oh <= b {
                sum += steps[end].gpu_ms;
                end += 1;
            }
            let oversized = end == start;
            if oversized {
                sum = steps[start].gpu_ms;
                end = start + 1;
                oversized_steps.push(start);
            }
            chunks.push(Chunk {
                ops: start..end,
                processor: Processor::Gpu,
                est_ms: sum + oh,
                oversized,
            });
            rest -= sum;
            start = end;
        }
    }
    let mut chunk_of_op = vec![0u32; steps.len()];
    for (i, c) in chunks.iter().enumerate() {
        for op in c.ops.clone() {
            chunk_of_op[op] = i as u32;
        }
    }
    Partition {
        chunks,
        oversized_steps,
        chunk_of_op,
    }
}
