//! The virtual-clock simulator behind `heimdall simulate`.
//!
//! One in-order GPU queue; a render is submitted at every vsync (unless the previous one is still
//! pending, and then the frame is dropped) and takes `render_ms`; a frame is on time when its render
//! finishes before the next vsync. `cpu_workers` CPU workers run in parallel. Each GPU chunk costs
//! the sum of its steps plus `chunk_overhead_ms`. The coordinator is called after every render,
//! GPU or CPU completion and request, exactly as a render loop would call it, and is told every
//! render's measured time (`observe_render`), as the plugin does.
//!
//! [`SimOptions`] make it less ideal: log-normal noise on every step and render time
//! ([`Noise`], deterministic per seed), a profile that is wrong by a factor (`misprofile`, which
//! the coordinator's measurements then correct), and the measured times of an app run
//! ([`Replay`]).

mod engine;
mod noise;
mod replay;
mod report;
mod scenario;

pub use engine::{SimError, SimOptions, SimOutput, simulate, simulate_opts, simulate_with};
pub use noise::{Noise, NoiseSource};
pub use replay::{ModelTrace, REPLAY_FORMAT, Replay, ReplayError};
pub use report::{DnnStats, FrameStats, LatencyStats, Report, SchedulerStats};
pub use scenario::{DnnScenario, RequestPattern, Scenario, ScenarioError};
