//! The simulation report: JSON for machines, a table for people.

use std::fmt::Write as _;

use serde::Serialize;

/// Render statistics.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FrameStats {
    /// Target frame rate, Hz.
    pub target_fps: f64,
    /// Vsyncs in the run (frames that should have been rendered).
    pub frames: u64,
    /// Frames actually rendered (per event a vsync is skipped while the previous render is
    /// pending; per frame none is).
    pub rendered: u64,
    /// Frames whose render finished before the next vsync, over all vsyncs.
    pub on_time_rate: f64,
    /// Rendered frames whose own GPU work (their render and the chunks decided in their
    /// period) fits in one period: the apps' `on_time_rate`, the GPU-timestamp proxy (blind to
    /// work queued behind an earlier frame).
    pub work_fits_rate: f64,
    /// Rendered frames per second over the run.
    pub fps_mean: f64,
    /// Lowest frame rate over windows of 1/3 s (as in the paper).
    pub fps_min_window: f64,
    /// Share of intervals between consecutive displayed frames (each shown at the first vsync
    /// after its render) that are at most 1.25 periods: the apps' `wall_on_time_rate`.
    pub wall_on_time_rate: f64,
    /// The longest interval between displayed frames, in frame periods.
    pub max_interval_periods: f64,
}

/// Latency summary, ms.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LatencyStats {
    /// Mean.
    pub mean: f64,
    /// 99th percentile (nearest rank).
    pub p99: f64,
    /// Maximum.
    pub max: f64,
}

impl LatencyStats {
    /// Summary of `v` (zeros when empty).
    pub fn of(v: &[f64]) -> Self {
        if v.is_empty() {
            return LatencyStats {
                mean: 0.0,
                p99: 0.0,
                max: 0.0,
            };
        }
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        let rank = ((0.99 * s.len() as f64).ceil() as usize).clamp(1, s.len());
        LatencyStats {
            mean: s.iter().sum::<f64>() / s.len() as f64,
            p99: s[rank - 1],
            max: s[s.len() - 1],
        }
    }
}

/// Per-DNN statistics.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DnnStats {
    /// Name.
    pub name: String,
    /// Finished inferences.
    pub completed: u64,
    /// Inference latency (admission to last op).
    pub latency_ms: LatencyStats,
    /// Share of finished inferences later than the deadline.
    pub deadline_miss_rate: f64,
    /// GPU time used, ms.
    pub gpu_busy_ms: f64,
    /// CPU time used, ms.
    pub cpu_busy_ms: f64,
    /// Time spent offloaded to the CPU, ms.
    pub offloaded_ms: f64,
    /// Changes of processor by the offload.
    pub offload_switches: u64,
    /// Offloaded inferences that continued on the CPU from the step the GPU had reached.
    pub resumed_from_gpu: u64,
    /// Pieces dispatched by the deadline override.
    pub deadline_overrides: u64,
    /// Steps that alone exceed the frame budget.
    pub oversized_steps: u64,
    /// Finished inferences per second of the run.
    pub rate_hz: f64,
    /// Share of the finished inferences that ran (at least in part) with the model on the CPU.
    pub cpu_share: f64,
    /// Threads (CPU slots) of its CPU backend.
    pub cpu_threads: usize,
    /// The rate it asked for at the end of the run, as the coordinator estimated it (`None`:
    /// on demand or not requested any more), Hz.
    pub requested_rate_hz: Option<f64>,
    /// The rate the placement plan granted it at the end of the run, Hz.
    pub granted_rate_hz: Option<f64>,
    /// Why it ran below its request at the end of the run, if it did.
    pub shortfall: Option<String>,
}

/// Cost of the scheduler itself (wall time of `Coordinator::schedule`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SchedulerStats {
    /// Scheduling events.
    pub decisions: u64,
    /// Mean decision time, µs.
    pub decision_us_mean: f64,
    /// Worst decision time, µs.
    pub decision_us_max: f64,
}

/// Everything `heimdall simulate` prints.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// The policy simulated.
    pub policy: String,
    /// Render statistics.
    pub frames: FrameStats,
    /// One entry per DNN, in scenario order.
    pub dnns: Vec<DnnStats>,
    /// Scheduler cost.
    pub scheduler: SchedulerStats,
}

impl Report {
    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serialises")
    }

    /// The statistics of the DNN called `name`.
    pub fn dnn(&self, name: &str) -> Option<&DnnStats> {
        self.dnns.iter().find(|d| d.name == name)
    }

    /// The report as a readable table.
    pub fn to_table(&self) -> String {
        let f = &self.frames;
        let mut s = String::new();
        let _ = writeln!(s, "policy: {}", self.policy);
        let _ = writeln!(
            s,
            "frames: target {:.0} fps, {} of {} rendered, on time {:.2} % (render done by the next \
             vsync), {:.2} % of display intervals <= 1.25 periods (longest {:.0}), fps mean {:.2}, \
             fps min (1/3 s window) {:.2}",
            f.target_fps,
            f.rendered,
            f.frames,
            f.on_time_rate * 100.0,
            f.wall_on_time_rate * 100.0,
            f.max_interval_periods,
            f.fps_mean,
            f.fps_min_window
        );
        let _ = writeln!(
            s,
            "{:<20} {:>6} {:>7} {:>9} {:>9} {:>9} {:>7} {:>9} {:>9} {:>6} {:>5}",
            "dnn",
            "done",
            "Hz",
            "mean ms",
            "p99 ms",
            "max ms",
            "miss %",
            "gpu ms",
            "cpu ms",
            "cpu %",
            "ovr"
        );
        for d in &self.dnns {
            let _ = writeln!(
                s,
                "{:<20} {:>6} {:>7.1} {:>9.1} {:>9.1} {:>9.1} {:>7.1} {:>9.0} {:>9.0} {:>6.0} {:>5}",
                d.name,
                d.completed,
                d.rate_hz,
                d.latency_ms.mean,
                d.latency_ms.p99,
                d.latency_ms.max,
                d.deadline_miss_rate * 100.0,
                d.gpu_busy_ms,
                d.cpu_busy_ms,
                d.cpu_share * 100.0,
                d.deadline_overrides
            );
        }
        for d in self.dnns.iter().filter(|d| d.shortfall.is_some()) {
            let _ = writeln!(
                s,
                "{}: {}",
                d.name,
                d.shortfall.as_deref().unwrap_or_default()
            );
        }
        let _ = writeln!(
            s,
            "scheduler: {} decisions, mean {:.2} µs, max {:.1} µs",
            self.scheduler.decisions,
            self.scheduler.decision_us_mean,
            self.scheduler.decision_us_max
        );
        s
    }
}
