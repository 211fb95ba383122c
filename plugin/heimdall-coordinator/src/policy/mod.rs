//! Scheduling policies: which ready inference job gets the processor next.
//!
//! A policy scores jobs; the coordinator runs the highest score. Scores only need to order jobs, so
//! a policy is a few lines. Policies are chosen by name with [`policy_by_name`]:
//! `max_min_utility`, `max_total_utility`, `least_slack_time`, and the baselines `fifo` and
//! `layers:K`.

mod baselines;
mod interface;
mod lst;
mod utility_policies;

pub use crate::analyzer::{ModelCosts, UnitCost};
pub use baselines::{Fifo, LayersPerFrame};
pub use interface::{Dispatch, JobView, Policy, PolicyContext};
pub use lst::{LeastSlackTime, SequencePlan, least_latency_sequence};
pub use utility_policies::{MaxMinUtility, MaxTotalUtility};

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
