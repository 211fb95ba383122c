//! Scheduling policies: which ready inference job gets the processor next.
//!
//! A policy scores jobs; the coordinator runs the highest score. Scores only need to order jobs, so
//! a policy is a few lines. Policies are chosen by name with [`policy_by_name`]:
//! `max_min_utility`, `max_total_utility`, `least_slack_time`, and the baselines `fifo` and
//! `layers:K`.

mod baselines;
mod lst;
mod utility_policies;

use std::ops::Range;

pub use baselines::{Fifo, LayersPerFrame};
pub use lst::{LeastSlackTime, SequencePlan, UnitCost, least_latency_sequence};
pub use utility_policies::{MaxMinUtility, MaxTotalUtility};

use crate::analyzer::Unit;
use crate::model::ModelId;
use crate::processor::Processor;
use crate::utility::UtilityParams;

/// How a policy wants GPU work cut and dispatched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dispatch {
    /// Heimdall: frame-budget chunks, packed into the slack between renders.
    FrameBudget,
    /// Baseline of multi-threaded engines: every ready job enqueues its whole GPU run (up to the
    /// next CPU op) at once, whatever the frame.
    WholeRuns,
    /// Baseline of Unity Sentis: `K` ops of one model per rendered frame, models in turn.
    OpsPerFrame(usize),
}

/// Scheduler state shared by all jobs at one decision.
#[derive(Clone, Copy, Debug)]
pub struct PolicyContext {
    /// The decision time (ms, caller's clock).
    pub now_ms: f64,
    /// One scheduling interval (the frame period), in ms.
    pub interval_ms: f64,
    /// Weight `alpha` of the content variation in the utility.
    pub alpha: f64,
    /// When the GPU can start new work.
    pub gpu_free_ms: f64,
    /// When a CPU worker can start new work.
    pub cpu_free_ms: f64,
}

/// Costs of a model's steps in a form that answers range sums in O(1).
#[derive(Clone, Debug, Default)]
pub struct ModelCosts {
    /// Band's units of the model.
    pub units: Vec<Unit>,
    /// `prefix_gpu[i]` = GPU time of steps `0..i` (steps the GPU cannot run count 0).
    pub prefix_gpu: Vec<f64>,
    /// `prefix_cpu[i]` = CPU time of steps `0..i`.
    pub prefix_cpu: Vec<f64>,
}

impl ModelCosts {
    /// Time of `ops` on `p` (ignoring whether `p` can run them).
    pub fn range_ms(&self, ops: Range<usize>, p: Processor) -> f64 {
        let pre = match p {
            Processor::Gpu => &self.prefix_gpu,
            Processor::Cpu => &self.prefix_cpu,
        };
        pre[ops.end] - pre[ops.start]
    }

    /// The units from `op` on, the first one cut to start at `op`, with their costs.
    pub fn remaining_units(&self, op: usize) -> Vec<UnitCost> {
        self.units
            .iter()
            .filter(|u| u.ops.end > op)
            .map(|u| {
                let r = u.ops.start.max(op)..u.ops.end;
                UnitCost {
                    processors: u.processors,
                    gpu_ms: self.range_ms(r.clone(), Processor::Gpu),
                    cpu_ms: self.range_ms(r, Processor::Cpu),
                }
            })
            .collect()
    }
}

/// What a policy sees of one inference job.
#[derive(Clone, Copy, Debug)]
pub struct JobView<'a> {
    /// The model.
    pub model: ModelId,
    /// Admission order (smaller: admitted earlier).
    pub seq: u64,
    /// When the job was admitted (the start of its latency), ms.
    pub t_start_ms: f64,
    /// Utility parameters of the model.
    pub utility: UtilityParams,
    /// Content variation `C` of this request.
    pub content_variation: f64,
    /// Relative deadline, ms, if any.
    pub deadline_ms: Option<f64>,
    /// Next op to run.
    pub next_op: usize,
    /// Expected remaining time of the job where it currently runs (GPU chunks plus CPU steps),
    /// ms.
    pub remaining_ms: f64,
    /// The model's costs.
    pub costs: &'a ModelCosts,
}

impl JobView<'_> {
    /// The utility `U(t)` at time `t_ms`.
    pub fn utility_at(&self, t_ms: f64, alpha: f64) -> f64 {
        self.utility
            .utility(t_ms - self.t_start_ms, alpha, self.content_variation)
    }

    /// Absolute deadline, ms (infinite without one).
    pub fn deadline_abs_ms(&self) -> f64 {
        self.deadline_ms
            .map_or(f64::INFINITY, |d| self.t_start_ms + d)
    }
}

/// A scheduling policy. Implementations must be cheap: the coordinator calls `score` for every
/// ready job at every decision.
pub trait Policy: Send + Sync {
    /// The name the policy is selected by.
    fn name(&self) -> String;

    /// How GPU work is cut and dispatched under this policy.
    fn dispatch(&self) -> Dispatch {
        Dispatch::FrameBudget
    }

    /// Whether Heimdall's deadline override and CPU offload apply (baselines: no).
    fn coordinated(&self) -> bool {
        true
    }

    /// Priority of `job` now; the coordinator runs the highest first.
    fn score(&self, ctx: &PolicyContext, job: &JobView<'_>) -> f64;

    /// Told after the coordinator dispatched work of `job` (for stateful policies).
    fn on_dispatch(&mut self, _job: &JobView<'_>) {}
}

/// Errors choosing a policy.
#[derive(Debug, thiserror::Error)]
#[error(
    "unknown policy `{0}` (expected max_min_utility, max_total_utility, least_slack_time, fifo or layers:K)"
)]
pub struct UnknownPolicy(pub String);

/// The policy called `name`: `max_min_utility`, `max_total_utility`, `least_slack_time`, `fifo`,
/// or `layers:K` with `K >= 1`.
pub fn policy_by_name(name: &str) -> Result<Box<dyn Policy>, UnknownPolicy> {
    Ok(match name {
        "max_min_utility" => Box::new(MaxMinUtility),
        "max_total_utility" => Box::new(MaxTotalUtility),
        "least_slack_time" => Box::new(LeastSlackTime),
        "fifo" => Box::new(Fifo),
        _ => match name.strip_prefix("layers:").map(str::parse::<usize>) {
            Some(Ok(k)) if k >= 1 => Box::new(LayersPerFrame::new(k)),
            _ => return Err(UnknownPolicy(name.to_string())),
        },
    })
}
