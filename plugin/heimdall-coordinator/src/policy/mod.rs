//! Scheduling policies: which ready inference job gets the processor next.
//!
//! A policy scores jobs; the coordinator runs the highest score. Scores only need to order jobs, so
//! a policy is a few lines. A setting holds one as a [`SchedulingPolicy`] (an app's own policy
//! or a built-in one); a command line chooses one by name with [`policy_by_name`]:
//! `max_min_utility`, `max_total_utility`, `least_slack_time`, and the baselines `fifo` and
//! `layers:K`.

mod baselines;
mod by_name;
mod interface;
mod lst;
mod shared;
mod utility_policies;

pub use crate::analyzer::{ModelCosts, UnitCost};
pub use baselines::{Fifo, LayersPerFrame};
pub use by_name::{UnknownPolicy, policy_by_name};
pub use interface::{Dispatch, JobView, Policy, PolicyContext};
pub use lst::{LeastSlackTime, SequencePlan, least_latency_sequence};
pub use shared::SchedulingPolicy;
pub use utility_policies::{MaxMinUtility, MaxTotalUtility};
