//! Heimdall's two utility policies (sec. 6.3.1, 6.4), with
//! `U_i(t) = L0_i - beta_i * (t - t_start)^gamma_i + alpha * C_i` (sec. 6.2).
//!
//! **What each maximises.** An inference is worth its utility when its result is delivered, and
//! nothing once that utility has decayed below zero: `V_i(t) = max(0, U_i(t))`.
//!
//! - MaxMinUtility (eq. 5) maximises the lowest utility: the GPU goes to the DNN whose utility is
//!   lowest now. `L0` and `alpha * C` raise the level a DNN's utility starts from, so they decide
//!   *when* it becomes the worst-off: a DNN with a lower `L0`, or whose input changed less, is
//!   served first (fairness in utility, the paper's Figure 16a).
//! - MaxTotalUtility (eq. 6) maximises the sum of the utilities delivered over the run. The paper's
//!   greedy step compares "chunk `c` runs now, the others one interval later":
//!   `U_c(t) + sum_{j != c} U_j(t + d)`. Taken literally, the difference between two choices is
//!   `[U_c(t) - U_c(t + d)] - [U_c'(t) - U_c'(t + d)]`: `L0` and `alpha * C` cancel, and only the
//!   decay decides. What the sum also depends on is how much GPU time each delivered utility costs:
//!   over a run the GPU delivers `sum_i n_i * V_i` for `sum_i n_i * G_i <= capacity` (n_i
//!   inferences of GPU work `G_i` each). Giving the next `g` ms of GPU to job `c` earns its share
//!   `V_c * g / G_c` of the utility it will deliver (`G_c`: its remaining GPU work) and delays every
//!   other job by `g`, costing `g * lambda_j` where `lambda_j = (V_j(t) - V_j(t + d)) / d` is the
//!   paper's one-interval delay loss as a rate. Per ms of GPU the gain of choosing `c` is therefore
//!   `V_c / G_c + lambda_c - sum_j lambda_j`; the last term is common to every choice, so the score
//!   is `V_c(t) / G_c + lambda_c`. The first term is the utility density (Smith's rule for weighted
//!   completion): `L0` and `alpha * C` act through it, a DNN of higher priority or more scene change
//!   runs sooner, and a job near its end (small `G_c`) is finished rather than left to decay. The
//!   second is the paper's delay term: a utility that decays fast (`beta`, `gamma`) pre-empts.
//!   Jobs whose utility has decayed to zero score zero and run "at the minimum" (sec. 6.3.1),
//!   when the deadline override needs them or nothing else wants the GPU.

use super::interface::{JobView, Policy, PolicyContext};

/// Runs the job with the lowest current utility (fairness, eq. 5).
#[derive(Clone, Copy, Debug, Default)]
pub struct MaxMinUtility;

impl Policy for MaxMinUtility {
    fn name(&self) -> String {
        "max_min_utility".into()
    }

    fn score(&self, ctx: &PolicyContext, job: &JobView<'_>) -> f64 {
        -job.utility_at(ctx.now_ms, ctx.alpha)
    }
}

/// Runs the job that adds the most utility per ms of GPU: `V(t) / G + (V(t) - V(t + d)) / d`
/// with `V = max(0, U)`, `G` the job's remaining GPU work and `d` one scheduling interval (see the
/// module documentation for the derivation from eq. 6 and sec. 6.4).
#[derive(Clone, Copy, Debug, Default)]
pub struct MaxTotalUtility;

/// Smallest remaining GPU work counted, ms (a job with nothing left on the GPU is not a GPU
/// candidate; this only keeps the division finite).
const MIN_WORK_MS: f64 = 1e-3;

impl MaxTotalUtility {
    /// The two terms of the score: utility density `V(t) / G` and delay loss rate
    /// `(V(t) - V(t + d)) / d`, both per ms.
    pub fn terms(ctx: &PolicyContext, job: &JobView<'_>) -> (f64, f64) {
        let now = job.utility_at(ctx.now_ms, ctx.alpha).max(0.0);
        let later = job
            .utility_at(ctx.now_ms + ctx.interval_ms, ctx.alpha)
            .max(0.0);
        let density = now / job.remaining_gpu_ms.max(MIN_WORK_MS);
        let loss_rate = (now - later) / ctx.interval_ms.max(MIN_WORK_MS);
        (density, loss_rate)
    }
}

impl Policy for MaxTotalUtility {
    fn name(&self) -> String {
        "max_total_utility".into()
    }

    fn score(&self, ctx: &PolicyContext, job: &JobView<'_>) -> f64 {
        let (density, loss_rate) = Self::terms(ctx, job);
        // Among jobs with nothing left to gain, the least decayed goes first.
        let tie = 1e-9 * job.utility_at(ctx.now_ms, ctx.alpha).clamp(-1e3, 1e3);
        density + loss_rate + tie
    }
}
