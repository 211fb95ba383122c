//! The virtual-clock simulator behind `heimdall simulate`.
//!
//! One in-order GPU queue; a render is submitted at every vsync (unless the previous one is still
//! pending, and then the frame is dropped) and takes `render_ms`; a frame is on time when its render
//! finishes before the next vsync. `cpu_workers` CPU workers run in parallel. Each GPU chunk costs
//! the sum of its steps plus `chunk_overhead_ms`. The coordinator is called after every render,
//! GPU or CPU completion and request, exactly as a render loop would call it.

mod engine;
mod report;
mod scenario;

pub use engine::{SimOutput, simulate, simulate_with};
pub use report::{DnnStats, FrameStats, LatencyStats, Report, SchedulerStats};
pub use scenario::{DnnScenario, RequestPattern, Scenario, ScenarioError};
