//! Statistics of a run, as a user feels it: the wall-clock interval of every frame (the
//! headline: frames on time by wall clock), each model's latency (camera capture to result in the
//! main world) and rate, and, as a named proxy beside them, what the GPU timestamps measured per
//! frame (scene passes and DNN chunks). [`HeimdallStats::to_json`] summarises a run.
//!
//! The main world's measurement lives here: the statistics fold the stream of measurements the
//! results and the render world's messages make (`feed.rs`), in bounded histories
//! (`history.rs`); a result's latency by stage (`stages.rs`), the CPU runs' times
//! (`cpu_runs.rs`) and the main world's own update time (`main_phases.rs`).

use std::collections::BTreeMap;
use std::time::Duration;

use bevy::prelude::*;
use serde_json::{Value, json};

#[cfg(test)]
use crate::bridge::phases::PHASE_COUNT;
use crate::bridge::phases::{FramePhases, PHASES};
use crate::clock::HeimdallClock;
use crate::dnn::{Backend, DnnPlacement};
use crate::guard::GuardStatus;
use crate::settings::HeimdallSettings;
pub use crate::stats::history::MAX_HISTORY;
use crate::stats::history::{history, low_summary, summary, trim, trim_to};
use crate::stats::stages::{LatencyStages, STAGE_HISTORY, StageTimes};

pub(crate) use cpu_runs::thread_sched_ms;
pub use cpu_runs::{CPU_RUN_HISTORY, CpuRunTimes, CpuRuns};

mod cpu_runs;
mod feed;
pub(crate) mod history;
pub(crate) mod main_phases;
pub mod stages;
pub(crate) use feed::{Measured, ResultMeasured, record_measurements};

/// What the GPU did in one frame (from its timestamps).
#[derive(Clone, Debug, PartialEq)]
pub struct FrameRecord {
    /// Render-world frame number.
    pub frame: u64,
    /// Whether timestamps measured it (otherwise the times are zero).
    pub timed: bool,
    /// Scene passes, ms.
    pub scene_ms: f64,
    /// Frame start to the end of its last chunk, ms.
    pub gpu_total_ms: f64,
    /// Chunks run after the scene: (DNN instance index, ms).
    pub chunks: Vec<(u32, f64)>,
    /// The learned pacing margin when the frame's timings came back, ms.
    pub pacing_margin_ms: f64,
}

impl FrameRecord {
    /// A frame the timestamps did not measure.
    pub fn untimed(frame: u64) -> Self {
        FrameRecord {
            frame,
            timed: false,
            scene_ms: 0.0,
            gpu_total_ms: 0.0,
            chunks: Vec::new(),
            pacing_margin_ms: 0.0,
        }
    }
}

/// One model's results.
#[derive(Clone, Debug)]
pub struct ModelStats {
    /// Latencies (capture to result in the main world), ms.
    pub latencies_ms: Vec<f64>,
    /// Frame index of each result.
    pub frame_indices: Vec<u64>,
    /// Results computed on the CPU.
    pub cpu_results: usize,
    /// Of those, inferences the GPU had started and the CPU finished from its activations
    /// ([`crate::dnn::DnnOutput::resumed_from_step`]).
    pub resumed_from_gpu: usize,
    /// When each result arrived (ms since the clock's origin).
    pub arrivals_ms: Vec<f64>,
    /// The DNN's deadline (relative to capture), if it has one.
    pub deadline_ms: Option<f64>,
    /// Results whose capture→result latency exceeded the deadline.
    pub deadline_misses: usize,
    /// Results since the last reset (not trimmed, unlike the per-result vectors).
    pub results: usize,
    /// GPU runs that used the convolution cache ([`crate::dnn::ConvCache`]) since the last
    /// reset (0: the cache is off, or every result came from the CPU).
    pub cache_runs: usize,
    /// Mean over those runs of the fraction of the cached ops' tiles reused.
    pub cache_hit_rate_mean: f64,
    /// Mean over those runs of the fraction of the input's blocks recomputed (changed, expired
    /// or refreshed).
    pub cache_dirty_block_rate_mean: f64,
    /// The hit rate of the latest cached run.
    pub cache_hit_rate_last: f64,
    /// How many ops the model caches.
    pub cached_ops: usize,
    /// Mean GPU time a cached run saved, ms, by the model's calibration (negative: it cost);
    /// `None` without a calibration (no GPU timestamps).
    pub cache_saved_ms_mean: Option<f64>,
    /// What became of the model's convolution cache when it compiled for the GPU, in one line
    /// (`kept: …`, `dropped: …`, `off: …` for a region of interest, `on (forced); …`); `None`
    /// when the cache is off as asked or the model runs on the CPU.
    pub cache_decision: Option<String>,
    /// Where the model's accuracy guard stands ([`crate::guard`]): its decision once decided.
    pub guard: GuardStatus,
    /// Why the model runs on the CPU backend although the app has a GPU (the device's limits).
    pub cpu_fallback: Option<String>,
    /// Where its results' latency went, stage by stage.
    pub stages: LatencyStages,
    /// The coordinator's latency of its latest inferences: admission to last op (outputs read,
    /// or the CPU's end), ms, as `heimdall simulate` measures it (a proxy of the scheduler's
    /// part, not what the user sees; the latest [`crate::stats::stages::STAGE_HISTORY`]).
    pub scheduled_ms: Vec<f64>,
    /// While a run is recorded: its latest GPU inferences' readbacks, from the end of the GPU
    /// work of the submission holding their last chunk to their outputs read, ms (a proxy: the
    /// GPU's start after the submission counts in it).
    pub readback_ms: Vec<f64>,
    /// Where the time of its CPU runs went (waiting, the input, the ops, how its threads got
    /// the CPU).
    pub cpu_runs: CpuRuns,
    /// Where the coordinator runs it and at what rate, as last reported.
    pub placement: DnnPlacement,
    /// Time it was granted less than its requested rate since the last reset, ms (up to the
    /// latest report of its placement; [`ModelStats::placement`] says whether it still is).
    pub shortfall_ms: f64,
    /// Changes of its processor since the last reset.
    pub placement_switches: usize,
    /// When its placement was last reported (ms since the clock's origin).
    placement_at_ms: f64,
}

impl ModelStats {
    /// Records where the coordinator runs it now, at `now_ms`.
    fn record_placement(&mut self, placement: &DnnPlacement, now_ms: f64) {
        if self.placement.shortfall.is_some() {
            self.shortfall_ms += (now_ms - self.placement_at_ms).max(0.0);
        }
        if let (Some(was), Some(is)) = (self.placement.backend, placement.backend)
            && was != is
        {
            self.placement_switches += 1;
        }
        self.placement = placement.clone();
        self.placement_at_ms = now_ms;
    }

    /// Time in shortfall since the last reset up to `now_ms`, ms.
    fn shortfall_until(&self, now_ms: f64) -> f64 {
        let ongoing = if self.placement.shortfall.is_some() {
            (now_ms - self.placement_at_ms).max(0.0)
        } else {
            0.0
        };
        self.shortfall_ms + ongoing
    }

    /// The model's entry in `stats.json`'s `models` at `now_ms`: latency, rate, deadlines, the
    /// convolution cache, the guard, the CPU fallback and the placement.
    fn to_json(&self, now_ms: f64) -> Value {
        let span_s = match (self.arrivals_ms.first(), self.arrivals_ms.last()) {
            (Some(a), Some(b)) if b > a => (b - a) / 1e3,
            _ => 0.0,
        };
        let rate = if span_s > 0.0 {
            (self.arrivals_ms.len() - 1) as f64 / span_s
        } else {
            0.0
        };
        let mut v = json!({
            "latency_ms": summary(&self.latencies_ms),
            "latency_stages_ms": self.stages.to_json(),
            "admission_to_last_op_ms": summary(&self.scheduled_ms),
            "readback_ms": low_summary(&self.readback_ms),
            "cpu_runs": self.cpu_runs.to_json(),
            "count": self.latencies_ms.len(),
            "rate_hz": rate,
            "cpu_results": self.cpu_results,
            "resumed_from_gpu": self.resumed_from_gpu,
            "deadline_ms": self.deadline_ms,
            "deadline_misses": self.deadline_misses,
            "deadline_miss_rate": self.deadline_misses as f64 / self.results.max(1) as f64,
            // Null unless the cache was decided on (`ConvCache::Auto` or `On`) or
            // a GPU run used it.
            "conv_cache": (self.cache_runs > 0 || self.cache_decision.is_some()).then(|| json!({
                "decision": self.cache_decision,
                "runs": self.cache_runs,
                "hit_rate_mean": self.cache_hit_rate_mean,
                "dirty_block_rate_mean": self.cache_dirty_block_rate_mean,
                "hit_rate_last": self.cache_hit_rate_last,
                "cached_ops": self.cached_ops,
                "saved_ms_mean": self.cache_saved_ms_mean,
            })),
            // Null while the guard is off for this model (f32, CPU, settings).
            "guard": guard_json(&self.guard),
            "cpu_fallback": self.cpu_fallback,
        });
        for (k, x) in self.placement_json(now_ms) {
            v[k] = x;
        }
        v
    }

    /// `placement`, the rates and the shortfall of `stats.json`.
    fn placement_json(&self, now_ms: f64) -> [(&'static str, Value); 5] {
        let p = &self.placement;
        let gpu = self.results.saturating_sub(self.cpu_results);
        [
            (
                "placement",
                json!({
                    "processor": p.backend.map(|b| match b {
                        Backend::Gpu => "gpu",
                        Backend::Cpu => "cpu",
                    }),
                    "gpu_inferences": gpu,
                    "cpu_inferences": self.cpu_results,
                    "cpu_share": self.cpu_results as f64 / self.results.max(1) as f64,
                    "cpu_threads": p.cpu_threads,
                    "switches": self.placement_switches,
                    "expected_latency_ms": p.expected_latency_ms,
                }),
            ),
            ("requested_rate_hz", json!(p.requested_rate_hz)),
            ("granted_rate_hz", json!(p.granted_rate_hz)),
            (
                "shortfall",
                p.shortfall.as_ref().map_or(Value::Null, |s| {
                    json!({
                        "granted_hz": s.granted_hz,
                        "requested_hz": s.requested_hz,
                        "reason": s.reason,
                    })
                }),
            ),
            ("shortfall_s", json!(self.shortfall_until(now_ms) / 1e3)),
        ]
    }

    /// Forgets the results, keeping the room, the deadline, the cache's decision, the guard and
    /// the placement (its time in shortfall and switches restart from 0).
    fn clear(&mut self) {
        self.latencies_ms.clear();
        self.frame_indices.clear();
        self.arrivals_ms.clear();
        self.cpu_results = 0;
        self.resumed_from_gpu = 0;
        self.deadline_misses = 0;
        self.results = 0;
        self.cache_runs = 0;
        self.cache_hit_rate_mean = 0.0;
        self.cache_dirty_block_rate_mean = 0.0;
        self.cache_hit_rate_last = 0.0;
        self.cache_saved_ms_mean = None;
        self.stages.clear();
        self.scheduled_ms.clear();
        self.readback_ms.clear();
        self.cpu_runs = CpuRuns::default();
        self.shortfall_ms = 0.0;
        self.placement_switches = 0;
    }
}

impl Default for ModelStats {
    fn default() -> Self {
        ModelStats {
            latencies_ms: history(-1.0),
            frame_indices: history(u64::MAX),
            cpu_results: 0,
            resumed_from_gpu: 0,
            arrivals_ms: history(-1.0),
            deadline_ms: None,
            deadline_misses: 0,
            results: 0,
            cache_runs: 0,
            cache_hit_rate_mean: 0.0,
            cache_dirty_block_rate_mean: 0.0,
            cache_hit_rate_last: 0.0,
            cached_ops: 0,
            cache_saved_ms_mean: None,
            cache_decision: None,
            guard: GuardStatus::Off,
            cpu_fallback: None,
            stages: LatencyStages::default(),
            scheduled_ms: Vec::with_capacity(STAGE_HISTORY + STAGE_HISTORY / 8),
            readback_ms: Vec::with_capacity(STAGE_HISTORY + STAGE_HISTORY / 8),
            cpu_runs: CpuRuns::default(),
            placement: DnnPlacement::default(),
            shortfall_ms: 0.0,
            placement_switches: 0,
            placement_at_ms: 0.0,
        }
    }
}

/// The run's statistics (a main-world resource, updated every frame). Every per-frame and
/// per-result history keeps the latest [`MAX_HISTORY`] entries (up to 12.5 % more) in room
/// allocated up front, so its memory is constant however long the app runs.
///
/// Reflected for inspectors: the frame and update intervals, the instances and the faults; the
/// per-frame phases and GPU records and the per-model statistics are left out of reflection
/// (their types are internal; read them as fields, or through [`crate::diagnostics`]).
#[derive(Resource, Debug, Reflect)]
#[reflect(Resource, Debug, Default)]
pub struct HeimdallStats {
    /// Wall-clock interval between frames as they reach the screen, ms: the presentation time a
    /// display layer gives ([`crate::render::PresentationTime`]), else stamped in the render
    /// world right after Bevy's `render_system` submitted the frame and presented it
    /// (`RenderSystems::Cleanup`). The headline (`wall_on_time_rate`).
    pub frame_ms: Vec<f64>,
    /// Wall-clock interval between the main world's updates (stamped in `Last`), ms: the app
    /// loop's rate, a proxy of what reaches the screen (pipelined rendering and the render
    /// world's own work sit between the two).
    pub update_ms: Vec<f64>,
    /// The main world's schedule per update (`First` to `Last`) and the plugin's systems in it,
    /// ms.
    pub main_world_ms: Vec<(f64, f64)>,
    /// Where each interval of [`Self::frame_ms`] went on the render thread (same indices).
    #[reflect(ignore)]
    pub frame_phases: Vec<FramePhases>,
    /// What the GPU did per frame (timestamps; untimed frames have `timed: false`).
    #[reflect(ignore)]
    pub gpu_frames: Vec<FrameRecord>,
    /// Per model name.
    #[reflect(ignore)]
    pub models: BTreeMap<String, ModelStats>,
    /// DNN instance index (as in [`FrameRecord::chunks`]) to model name.
    pub instances: BTreeMap<u32, String>,
    #[reflect(ignore)]
    last_frame: Option<std::time::Instant>,
    #[reflect(ignore)]
    last_presented: Option<std::time::Instant>,
    now_ms: f64,
    #[reflect(ignore)]
    keys: std::collections::HashMap<Entity, String>,
    target_hz: Option<f64>,
    /// The run's faults (panics caught, device errors, queues); kept by [`Self::reset`].
    pub faults: crate::faults::HeimdallFaults,
}

impl Default for HeimdallStats {
    fn default() -> Self {
        HeimdallStats {
            frame_ms: history(-1.0),
            update_ms: history(-1.0),
            frame_phases: history(FramePhases::default()),
            main_world_ms: history((0.0, 0.0)),
            gpu_frames: history(FrameRecord::untimed(u64::MAX)),
            models: BTreeMap::new(),
            instances: BTreeMap::new(),
            last_frame: None,
            last_presented: None,
            now_ms: 0.0,
            keys: Default::default(),
            target_hz: None,
            faults: Default::default(),
        }
    }
}

/// A model's guard in `stats.json`: `{"state": "pending" | "checking" | "decided" | "failed", "reused",
/// "error", "decision": {...}}`, null when off.
fn guard_json(g: &GuardStatus) -> Value {
    match g {
        GuardStatus::Off => Value::Null,
        GuardStatus::Pending | GuardStatus::Checking => json!({"state": g.state_name()}),
        GuardStatus::Failed(why) => json!({"state": g.state_name(), "error": why}),
        GuardStatus::Decided(o) => json!({
            "state": g.state_name(),
            "reused": o.reused,
            "decision": crate::bridge::guard_json::decision_json(&o.decision),
        }),
    }
}

impl HeimdallStats {
    /// Statistics that report `faults` (the plugin's counters).
    pub fn with_faults(faults: crate::faults::HeimdallFaults) -> Self {
        HeimdallStats {
            faults,
            ..Default::default()
        }
    }

    /// Forgets everything recorded so far (e.g. after warm-up), except the instance names, what
    /// became of each model's convolution cache (decided once, when it compiled) and its
    /// accuracy guard. The histories are emptied in place: no allocation, no page touched, so a
    /// reset in the middle of a run (the apps' window after the warm-up) costs the frame nothing.
    pub fn reset(&mut self) {
        self.frame_ms.clear();
        self.update_ms.clear();
        self.main_world_ms.clear();
        self.frame_phases.clear();
        self.gpu_frames.clear();
        for m in self.models.values_mut() {
            m.clear();
            m.placement_at_ms = self.now_ms;
        }
        self.last_frame = None;
        self.last_presented = None;
    }

    /// The stats key of a DNN entity: its model's name, with `#2`, `#3`... for further
    /// entities running the same model.
    fn key_of(&mut self, name: &str, entity: Entity) -> String {
        if let Some(k) = self.keys.get(&entity) {
            return k.clone();
        }
        let taken = self
            .keys
            .values()
            .filter(|k| k.split('#').next() == Some(name))
            .count();
        let key = if taken == 0 {
            name.to_string()
        } else {
            format!("{name}#{}", taken + 1)
        };
        self.keys.insert(entity, key.clone());
        key
    }

    /// Records what the GPU did in a frame.
    /// A frame left for the screen at `at`.
    pub(crate) fn record_presented(&mut self, at: std::time::Instant, phases: Option<FramePhases>) {
        if let Some(last) = self.last_presented {
            self.frame_ms
                .push(at.saturating_duration_since(last).as_secs_f64() * 1e3);
            trim(&mut self.frame_ms);
            self.frame_phases.push(phases.unwrap_or_default());
            trim(&mut self.frame_phases);
        }
        self.last_presented = Some(at);
    }

    pub(crate) fn record_gpu_frame(&mut self, record: FrameRecord) {
        self.gpu_frames.push(record);
        trim(&mut self.gpu_frames);
    }

    pub(crate) fn record_result(
        &mut self,
        name: &str,
        entity: Entity,
        latency: Duration,
        deadline: Option<Duration>,
        frame_index: u64,
        backend: Backend,
    ) {
        let key = self.key_of(name, entity);
        let m = self.models.entry(key).or_default();
        m.deadline_ms = deadline.map(|d| d.as_secs_f64() * 1e3);
        m.results += 1;
        if deadline.is_some_and(|d| latency > d) {
            m.deadline_misses += 1;
        }
        m.latencies_ms.push(latency.as_secs_f64() * 1e3);
        m.frame_indices.push(frame_index);
        m.arrivals_ms.push(self.now_ms);
        trim(&mut m.latencies_ms);
        trim(&mut m.frame_indices);
        trim(&mut m.arrivals_ms);
        if backend == Backend::Cpu {
            m.cpu_results += 1;
        }
    }

    /// Counts a result the CPU finished from the GPU's activations (after its
    /// [`HeimdallStats::record_result`]).
    pub(crate) fn record_resumed(&mut self, name: &str, entity: Entity) {
        let key = self.key_of(name, entity);
        self.models.entry(key).or_default().resumed_from_gpu += 1;
    }

    /// Records where a result's latency went (after its [`HeimdallStats::record_result`]):
    /// captured at `capture_ms`, through `stages`, received at `arrived_ms`.
    pub(crate) fn record_stages(
        &mut self,
        name: &str,
        entity: Entity,
        capture_ms: f64,
        stages: &StageTimes,
        arrived_ms: f64,
    ) {
        let key = self.key_of(name, entity);
        let m = self.models.entry(key).or_default();
        let deadline = m.deadline_ms;
        m.stages.record(capture_ms, stages, arrived_ms, deadline);
    }

    /// Records the coordinator's latency (admission → last op) of an inference of a DNN.
    pub(crate) fn record_scheduled(&mut self, name: &str, entity: Entity, latency_ms: f64) {
        let key = self.key_of(name, entity);
        let m = self.models.entry(key).or_default();
        m.scheduled_ms.push(latency_ms);
        trim_to(&mut m.scheduled_ms, STAGE_HISTORY);
    }

    /// Records a GPU inference's measured readback (while recording), ms.
    pub(crate) fn record_readback(&mut self, name: &str, entity: Entity, ms: f64) {
        let key = self.key_of(name, entity);
        let m = self.models.entry(key).or_default();
        m.readback_ms.push(ms);
        trim_to(&mut m.readback_ms, STAGE_HISTORY);
    }

    /// Records one CPU run of a DNN's model.
    pub(crate) fn record_cpu_run(&mut self, name: &str, entity: Entity, times: &CpuRunTimes) {
        let key = self.key_of(name, entity);
        self.models.entry(key).or_default().cpu_runs.record(times);
    }

    /// Records what the convolution cache did in a GPU run of a DNN (after its
    /// [`HeimdallStats::record_result`]).
    pub(crate) fn record_conv_cache(
        &mut self,
        name: &str,
        entity: Entity,
        counts: &heimdall_ir::conv_cache::CacheCounts,
        cached_ops: usize,
        saved_ms: Option<f64>,
    ) {
        let key = self.key_of(name, entity);
        let m = self.models.entry(key).or_default();
        m.cache_runs += 1;
        let n = m.cache_runs as f64;
        let hit = counts.hit_rate();
        let dirty = if counts.blocks == 0 {
            0.0
        } else {
            counts.dirty_blocks as f64 / counts.blocks as f64
        };
        m.cache_hit_rate_mean += (hit - m.cache_hit_rate_mean) / n;
        m.cache_dirty_block_rate_mean += (dirty - m.cache_dirty_block_rate_mean) / n;
        m.cache_hit_rate_last = hit;
        m.cached_ops = cached_ops;
        if let Some(s) = saved_ms {
            let mean = m.cache_saved_ms_mean.unwrap_or(0.0);
            m.cache_saved_ms_mean = Some(mean + (s - mean) / n);
        }
    }

    /// Records what became of a DNN's convolution cache when its model compiled for the GPU.
    pub(crate) fn record_conv_cache_decision(
        &mut self,
        name: &str,
        entity: Entity,
        decision: String,
        cached_ops: usize,
    ) {
        let key = self.key_of(name, entity);
        let m = self.models.entry(key).or_default();
        m.cache_decision = Some(decision);
        m.cached_ops = cached_ops;
    }

    /// Records why a DNN runs on the CPU backend although the app has a GPU.
    pub(crate) fn record_cpu_fallback(&mut self, name: &str, entity: Entity, why: &str) {
        let key = self.key_of(name, entity);
        self.models.entry(key).or_default().cpu_fallback = Some(why.to_string());
    }

    /// Records where the coordinator runs a DNN and at what rate.
    pub(crate) fn record_placement(
        &mut self,
        name: &str,
        entity: Entity,
        placement: &DnnPlacement,
    ) {
        let key = self.key_of(name, entity);
        let now = self.now_ms;
        self.models
            .entry(key)
            .or_default()
            .record_placement(placement, now);
    }

    /// Records where a DNN's accuracy guard stands.
    pub(crate) fn record_guard(&mut self, name: &str, entity: Entity, status: &GuardStatus) {
        let key = self.key_of(name, entity);
        self.models.entry(key).or_default().guard = status.clone();
    }

    /// The frame rate the run targets: the settings' rate, or the primary monitor's refresh
    /// rate for `FollowDisplay` once known.
    pub fn target_hz(&self, settings: &HeimdallSettings) -> f64 {
        self.target_hz
            .unwrap_or_else(|| settings.frame_rate_hz(None))
    }

    /// Mean fps and the lowest fps over any window of `window` consecutive frames
    /// (`window` = one second's worth at the target rate).
    pub fn fps(&self, skip: usize, window: usize) -> (f64, f64) {
        let f = self.frame_ms.get(skip..).unwrap_or(&[]);
        if f.is_empty() {
            return (0.0, 0.0);
        }
        let mean = 1000.0 * f.len() as f64 / f.iter().sum::<f64>().max(1e-9);
        let w = window.clamp(1, f.len());
        let min = f
            .windows(w)
            .map(|x| 1000.0 * w as f64 / x.iter().sum::<f64>().max(1e-9))
            .fold(f64::INFINITY, f64::min);
        (mean, min)
    }

    /// The statistics as JSON: `skip` warm-up frames are left out of the frame figures.
    pub fn to_json(&self, settings: &HeimdallSettings, backend: &str, skip: usize) -> Value {
        let hz = self.target_hz(settings);
        let period = 1000.0 / hz;
        let (fps_mean, fps_min) = self.fps(skip, hz.round() as usize);
        let gpu: Vec<&FrameRecord> = self
            .gpu_frames
            .iter()
            .skip(skip)
            .filter(|r| r.timed)
            .collect();
        let on_time = gpu.iter().filter(|r| r.gpu_total_ms <= period).count();
        let wall = self.frame_ms.get(skip..).unwrap_or(&[]);
        let wall_on_time = wall.iter().filter(|&&d| d <= period * 1.25).count();
        let updates = self.update_ms.get(skip..).unwrap_or(&[]);
        let updates_on_time = updates.iter().filter(|&&d| d <= period * 1.25).count();
        let models: serde_json::Map<String, Value> = self
            .models
            .iter()
            .map(|(name, m)| (name.clone(), m.to_json(self.now_ms)))
            .collect();
        json!({
            "mode": settings.mode.name(),
            "policy": settings.policy_name(),
            "backend": backend,
            "target_fps": hz,
            // The CPU slots the coordinator plans with, and the cores the process may use.
            "cpu_slots": settings.cpu_slots(),
            "cpu_cores": std::thread::available_parallelism().map_or(1, |n| n.get()),
            // CPU work handed out as workers finish, not only at each frame's decision.
            "cpu_dispatch_on_completion": settings.cpu_on_completion,
            // ... from the end of the frame's DNN encoding, not only between render frames.
            "cpu_lend_after_encode": settings.cpu_on_completion && settings.cpu_lend_after_encode,
            "frames": self.frame_ms.len(),
            "warmup_frames_skipped": skip,
            "render_fps_mean": fps_mean,
            "render_fps_min_window": fps_min,
            "frame_interval_ms": summary(wall),
            "frame_interval_definition": "wall clock between frames reaching the screen: the presentation time a display layer gives (render::PresentationTime; headless, the emulated vsync blank), else when the frame left the render world (after submission and present)",
            "update_interval_ms": summary(updates),
            "update_on_time_rate": if updates.is_empty() { 0.0 } else { updates_on_time as f64 / updates.len() as f64 },
            "on_time_rate": if gpu.is_empty() { Value::Null } else { json!(on_time as f64 / gpu.len() as f64) },
            "on_time_definition": "frames whose GPU work (scene passes + DNN chunks, timestamps) fits in the frame period",
            "admission_to_last_op_definition": "per model: the coordinator's latency of an inference, from its admission (the frame's decision) to its outputs read (GPU) or its last op's end (CPU); the latency heimdall simulate reports, a proxy of the scheduler's part of latency_ms",
            "timed_frames": gpu.len(),
            "wall_on_time_rate": if wall.is_empty() { 0.0 } else { wall_on_time as f64 / wall.len() as f64 },
            // The late intervals themselves (at most 100): [frame after the warm-up, ms].
            "late_frames": wall.iter().enumerate().filter(|(_, d)| **d > period * 1.25).take(100)
                .map(|(i, d)| json!([i, d])).collect::<Vec<_>>(),
            "main_world_ms": {
                "update": summary(&self.main_world_ms.iter().skip(skip).map(|m| m.0).collect::<Vec<_>>()),
                "heimdall_systems": summary(&self.main_world_ms.iter().skip(skip).map(|m| m.1).collect::<Vec<_>>()),
            },
            "render_phases_ms": phase_summaries(self.frame_phases.get(skip..).unwrap_or(&[])),
            "render_phases_definition": "wall clock per phase of the render thread, consecutive: together they make the frame interval",
            "late_frame_phases": self.late_frame_phases(skip, period * 1.25),
            "gpu_frame_ms": summary(&gpu.iter().map(|r| r.gpu_total_ms).collect::<Vec<_>>()),
            "scene_ms": summary(&gpu.iter().map(|r| r.scene_ms).collect::<Vec<_>>()),
            "pacing_margin_ms": summary(&gpu.iter().map(|r| r.pacing_margin_ms).collect::<Vec<_>>()),
            "models": models,
            "faults": self.faults.to_json(),
            "instances": self.instances,
            // Per frame after the warm-up (at most 600): scene GPU time and the chunks after it.
            "timeline": gpu.iter().take(600).map(|r| json!({
                "frame": r.frame,
                "scene_ms": r.scene_ms,
                "gpu_total_ms": r.gpu_total_ms,
                "chunks": r.chunks,
            })).collect::<Vec<_>>(),
        })
    }
}

impl HeimdallStats {
    /// The late intervals (at most 100) with the render thread's phases of each and the DNN
    /// chunks the GPU ran in that frame.
    fn late_frame_phases(&self, skip: usize, bound_ms: f64) -> Vec<Value> {
        let wall = self.frame_ms.get(skip..).unwrap_or(&[]);
        let phases = self.frame_phases.get(skip..).unwrap_or(&[]);
        wall.iter()
            .zip(phases)
            .enumerate()
            .filter(|(_, (d, _))| **d > bound_ms)
            .take(100)
            .map(|(i, (d, p))| {
                let gpu = p
                    .frame
                    .and_then(|f| self.gpu_frames.iter().rev().find(|r| r.frame == f));
                let named: serde_json::Map<String, Value> = PHASES
                    .iter()
                    .zip(p.ms)
                    .map(|(n, ms)| (n.to_string(), json!(ms)))
                    .collect();
                json!({
                    "index": i,
                    "interval_ms": d,
                    "frame": p.frame,
                    "phases_ms": named,
                    "gpu_total_ms": gpu.filter(|r| r.timed).map(|r| r.gpu_total_ms),
                    "chunks": gpu.map(|r| r.chunks.clone()),
                })
            })
            .collect()
    }
}

/// Each phase's summary (ms) over the given frames.
fn phase_summaries(frames: &[FramePhases]) -> Value {
    let map: serde_json::Map<String, Value> = PHASES
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let v: Vec<f64> = frames.iter().map(|p| f64::from(p.ms[i])).collect();
            (n.to_string(), summary(&v))
        })
        .collect();
    Value::Object(map)
}

/// Records the main world's update interval.
pub(crate) fn record_frame(
    mut stats: ResMut<HeimdallStats>,
    mut main: ResMut<crate::stats::main_phases::MainClock>,
    clock: Res<HeimdallClock>,
    settings: Res<HeimdallSettings>,
    monitors: Query<&bevy::window::Monitor, With<bevy::window::PrimaryMonitor>>,
) {
    let display = monitors
        .iter()
        .find_map(|m| m.refresh_rate_millihertz)
        .map(|mhz| f64::from(mhz) / 1000.0);
    stats.target_hz = Some(settings.frame_rate_hz(display));
    let now = std::time::Instant::now();
    if let Some(last) = stats.last_frame {
        stats.update_ms.push((now - last).as_secs_f64() * 1e3);
    }
    stats.last_frame = Some(now);
    stats.now_ms = clock.now_ms();
    trim(&mut stats.update_ms);
    if let Some(m) = main.end(now) {
        stats.main_world_ms.push(m);
        trim(&mut stats.main_world_ms);
    }
}

#[cfg(test)]
mod tests;
