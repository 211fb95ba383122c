//! Heimdall's analyzer and coordinator as pure logic: frame-budget chunks, utility-ranked
//! multi-DNN scheduling, placement over the GPU's slack and the CPU slots, and a virtual-clock
//! simulator.
//!
//! Nothing here needs a GPU, Bevy or a real clock: the caller supplies the time (milliseconds as
//! `f64`), so the same code runs inside the render loop and, exhaustively, in tests.
//!
//! - [`analyzer`]: step costs and profiles (EMA, JSON, kept on disk), Band's units, Heimdall's
//!   chunks, the convolution cache's expected hit rate.
//! - [`utility`]: `U(t) = L0 - beta * (t - t_start)^gamma + alpha * C`.
//! - [`policy`]: the [`Policy`] trait and `max_min_utility`, `max_total_utility`,
//!   `least_slack_time` (Band's DP), `fifo`, `layers:K`.
//! - [`coordinator`]: admission control, deadline override, GPU chunk packing, CPU work.
//! - [`placement`]: which processor each DNN runs on (the planner), and its settings.
//! - [`offload`]: the former offload rule (one model a second), kept for comparison.
//! - [`timeline`]: everything decided and executed (a bounded ring), as Chrome trace JSON.
//! - [`sim`]: scenario files, the simulator behind `heimdall simulate` (with noise, wrong
//!   profiles and replayed traces), and its report.
#![warn(missing_docs)]

pub mod analyzer;
pub mod coordinator;
pub mod model;
pub mod offload;
pub mod placement;
pub mod policy;
pub mod processor;
pub mod sim;
pub mod timeline;
pub mod utility;

pub use analyzer::{
    CacheSpec, Chunk, FrameBudget, ModelProfile, Partition, ProfileKey, ProfileStore, StepCost,
    partition,
};
pub use coordinator::{
    Ablation, Completion, Coordinator, CoordinatorConfig, CpuWork, Decision, Event, GpuWindow,
    GpuWork, ModelStatus, Reconfiguration, Request, Resume, WorkId,
};
pub use model::{ModelId, ModelSpec};
pub use placement::{PlacementConfig, PlacementRule, Plan, PlanEntry, Shortfall, ShortfallReason};
pub use policy::{Policy, SchedulingPolicy, policy_by_name};
pub use processor::{Processor, ProcessorSet};
pub use utility::UtilityParams;
