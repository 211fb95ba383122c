//! The policies by name, for command lines and scenario files.

use super::baselines::{Fifo, LayersPerFrame};
use super::interface::Policy;
use super::lst::LeastSlackTime;
use super::utility_policies::{MaxMinUtility, MaxTotalUtility};

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
