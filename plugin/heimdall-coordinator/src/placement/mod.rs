//! Placement: which processor each DNN runs on, as one explicit decision over measured costs on
//! both processors (issue 34; replaces the one-model-per-second offload rule).
//!
//! The planner is a pure, deterministic function: each DNN's [`DnnDemand`] (its GPU and CPU
//! costs, threads, request interval, deadline, value and where it runs now) and the [`Machine`]
//! (the GPU's DNN budget per frame, the CPU slots) give a [`Plan`]: per DNN its processor, its
//! expected latency there, its granted rate and, where it runs below its request, a
//! [`Shortfall`] saying why. The same input gives the same plan; ties go by model id.
//!
//! The coordinator builds the demands from its profiles and measurements, re-plans regularly and
//! whenever the budget, the models, the requests or the costs change, and enforces the granted
//! rates by admission.

mod config;
mod eval;
mod planner;
mod types;

pub use config::{PlacementConfig, PlacementRule};
pub use planner::plan;
pub use types::{DnnDemand, Machine, Plan, PlanEntry, Shortfall, ShortfallReason};
