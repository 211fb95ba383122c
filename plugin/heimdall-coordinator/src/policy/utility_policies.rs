//! Heimdall's two utility policies (sec. 6.3.1, 6.4).

use super::{JobView, Policy, PolicyContext};

/// Runs the job with the lowest current utility (fairness).
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

/// Runs the job whose choice maximises the sum of utilities one scheduling interval from now,
/// counting that interval of extra delay for every job not chosen (Heimdall sec. 6.4).
///
/// Utilities are floored at zero (a result that is worth nothing cannot lose more), so the sum is
/// `max(0, U_i(t)) + sum_{j != i} max(0, U_j(t + d))`; choosing `i` therefore gains
/// `max(0, U_i(t)) - max(0, U_i(t + d))` over the common term, which is the score. Among jobs with
/// no loss left, the one with the highest utility goes first. Jobs that have decayed to zero run
/// "at the minimum", when the deadline override fires.
#[derive(Clone, Copy, Debug, Default)]
pub struct MaxTotalUtility;

impl Policy for MaxTotalUtility {
    fn name(&self) -> String {
        "max_total_utility".into()
    }

    fn score(&self, ctx: &PolicyContext, job: &JobView<'_>) -> f64 {
        let now = job.utility_at(ctx.now_ms, ctx.alpha);
        let later = job.utility_at(ctx.now_ms + ctx.interval_ms, ctx.alpha);
        let loss = now.max(0.0) - later.max(0.0);
        loss + 1e-6 * now.clamp(-1e3, 1e3)
    }
}
