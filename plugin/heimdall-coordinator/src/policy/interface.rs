//! What every policy sees and implements: the [`Policy`] trait, the shared [`PolicyContext`] of one
//! decision and the [`JobView`] of one job.

use crate::analyzer::ModelCosts;
use crate::model::ModelId;
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
    /// The job's remaining work, ms: the GPU time of its steps from `next_op` on, or, for a job
    /// placed on the CPU, their CPU time at its model's threads.
    pub remaining_gpu_ms: f64,
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
