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
//!
//! **When the coordinator decides** is the scenario's `decisions` ([`Decisions`]):
//! - `per_event` (the default): after every render, GPU or CPU completion and request, as above;
//!   a request is submitted (and admitted, if its DNN is idle) the instant it arrives.
//! - `per_frame`: as the Bevy plugin's `plan_frame`, once per frame at its start (vsync). The
//!   completions up to the vsync are applied to the coordinator at their own times but decide
//!   nothing; requests are held (the newer one of a DNN replaces its held one, as the plugin keeps
//!   one pending request per DNN) and submitted at the first frame start at which their DNN is
//!   idle, so they are admitted there while keeping their arrival as capture time. The frame's
//!   render is queued first and the decision's chunks after it, for the window from the frame
//!   start plus the coordinator's render estimate to the next frame start; CPU work goes to the
//!   idle workers only then too. No frame is dropped (the plugin renders every frame): a late
//!   GPU queues it. With the scenario's `dnn_work_first` the chunks go before the render; a GPU
//!   inference completes when the submission holding its last chunk ends (plus `readback_ms`),
//!   or with `results_at_frame_start` at the next frame start. A replay may give each frame's
//!   start and its submissions' delays.
//!
//! [`RunRecorder`] turns a run (an app's, or a simulated one with
//! [`SimOptions::record_run`]) into a per-frame scenario and a replay of its measured times.

mod engine;
mod export_parts;
mod noise;
mod record;
mod replay;
mod report;
mod scenario;

pub use engine::{SimError, SimOptions, SimOutput, simulate, simulate_opts, simulate_with};
pub use noise::{Noise, NoiseSource};
pub use record::RunRecorder;
pub use replay::{ModelTrace, REPLAY_FORMAT, Replay, ReplayError};
pub use report::{DnnStats, FrameStats, LatencyStats, Report, SchedulerStats};
pub use scenario::{
    ConvCacheScenario, Decisions, DnnScenario, RequestPattern, Scenario, ScenarioError,
};
