//! Band's least-slack-time policy (sec. 4.3.1) with its O(p·n²) dynamic program over subgraph
//! sequences.

use std::ops::Range;

use super::interface::{JobView, Policy, PolicyContext};
use crate::analyzer::UnitCost;
use crate::processor::{Processor, ProcessorSet};

/// The fastest sequence of subgraphs found by [`least_latency_sequence`].
#[derive(Clone, Debug, PartialEq)]
pub struct SequencePlan {
    /// Expected finish time of the whole job, ms (absolute).
    pub finish_ms: f64,
    /// The first subgraph of the sequence: unit indices and processor.
    pub first: Option<(Range<usize>, Processor)>,
}

/// Band's dynamic program: the sequence of subgraphs (contiguous unit ranges whose units share at
/// least one processor) that finishes the job soonest, when processor `p` is free from `free(p)`
/// and the job may start at `start_ms`.
///
/// `f[j] = min over i < j and p in ∩ units[i..j] of max(f[i], free(p)) + t(units[i..j], p)`, with
/// `f[0] = start_ms`: O(p·n²) for n units and p processors.
pub fn least_latency_sequence(
    units: &[UnitCost],
    start_ms: f64,
    gpu_free_ms: f64,
    cpu_free_ms: f64,
) -> SequencePlan {
    let n = units.len();
    let free = |p: Processor| match p {
        Processor::Gpu => gpu_free_ms,
        Processor::Cpu => cpu_free_ms,
    };
    let mut f = vec![f64::INFINITY; n + 1];
    let mut first: Vec<Option<(Range<usize>, Processor)>> = vec![None; n + 1];
    f[0] = start_ms;
    for j in 1..=n {
        let mut set = ProcessorSet::GPU_AND_CPU;
        let mut gpu = 0.0;
        let mut cpu = 0.0;
        for i in (0..j).rev() {
            set = set.intersection(units[i].processors);
            if set.is_empty() {
                break;
            }
            gpu += units[i].on(Processor::Gpu);
            cpu += units[i].on(Processor::Cpu);
            if !f[i].is_finite() {
                continue;
            }
            for p in set.iter() {
                let t = match p {
                    Processor::Gpu => gpu,
                    Processor::Cpu => cpu,
                };
                let end = f[i].max(free(p)) + t;
                // On a tie the longer last subgraph wins (found later, as `i` goes down): fewer
                // subgraphs, fewer processor transitions.
                if end <= f[j] {
                    f[j] = end;
                    first[j] = if i == 0 {
                        Some((0..j, p))
                    } else {
                        first[i].clone()
                    };
                }
            }
        }
    }
    SequencePlan {
        finish_ms: if n == 0 { start_ms } else { f[n] },
        first: first[n].clone(),
    }
}

/// Least slack time (Band): runs the job with the least `deadline - expected finish`, the
/// expected finish coming from [`least_latency_sequence`] given when each processor is free.
/// Jobs without a deadline come after all jobs with one, oldest first.
#[derive(Clone, Copy, Debug, Default)]
pub struct LeastSlackTime;

impl LeastSlackTime {
    /// The slack of `job` in `ctx`, ms.
    pub fn slack_ms(ctx: &PolicyContext, job: &JobView<'_>) -> f64 {
        let units = job.costs.remaining_units(job.next_op);
        let plan = least_latency_sequence(&units, ctx.now_ms, ctx.gpu_free_ms, ctx.cpu_free_ms);
        job.deadline_abs_ms() - plan.finish_ms
    }
}

impl Policy for LeastSlackTime {
    fn name(&self) -> String {
        "least_slack_time".into()
    }

    fn score(&self, ctx: &PolicyContext, job: &JobView<'_>) -> f64 {
        if job.deadline_ms.is_none() {
            return -1e15 - job.t_start_ms;
        }
        -Self::slack_ms(ctx, job)
    }
}
