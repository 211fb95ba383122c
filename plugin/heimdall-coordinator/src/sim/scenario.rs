//! Scenario files: a workload described without the real models.

use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::analyzer::{CacheSpec, FrameBudget, StepCost};
use crate::model::ModelSpec;
use crate::utility::UtilityParams;

/// Errors reading a scenario. Messages name the offending field.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Not JSON, an unknown field, or a value of the wrong type.
    #[error("bad scenario JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A value is out of range.
    #[error("bad scenario: `{field}` {problem}")]
    Invalid {
        /// Path of the field, e.g. `dnns[1].gpu_op_ms[3]`.
        field: String,
        /// What is wrong.
        problem: String,
    },
}

/// A workload: frame rate and render time, CPU workers, and the DNNs (all times in ms).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Target frame rate, Hz.
    pub frame_rate: f64,
    /// Render time of one frame on the GPU, ms.
    pub render_ms: f64,
    /// Simulated time, seconds.
    pub duration_s: f64,
    /// CPU slots: the cores the DNNs may use for inference (a DNN's CPU work occupies its
    /// `cpu_threads` of them while it runs).
    pub cpu_workers: usize,
    /// Cost of dispatching one GPU chunk, ms.
    #[serde(default)]
    pub chunk_overhead_ms: f64,
    /// Safety margin of the frame budget, ms.
    #[serde(default = "default_margin")]
    pub budget_margin_ms: f64,
    /// Relaxation of the frame budget for chunk tails, ms.
    #[serde(default = "default_relaxation")]
    pub relaxation_ms: f64,
    /// Weight of the content variation in the utility (default 0.01).
    #[serde(default = "default_alpha")]
    pub alpha: f64,
    /// When the coordinator decides: after every event (`"per_event"`, the default) or once per
    /// frame at its start, as the Bevy plugin does (`"per_frame"`; see [`Decisions`]).
    #[serde(default, skip_serializing_if = "Decisions::is_per_event")]
    pub decisions: Decisions,
    /// The coordinator's render estimate at time 0, ms (default `render_ms`): a recorded run
    /// ([`super::RunRecorder`]) gives the estimate its coordinator had when the recording began,
    /// so that the simulated coordinator starts where the app's did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render_estimate_ms: Option<f64>,
    /// Per frame: the frame's chunks go on the GPU queue before its render, as the plugin's
    /// `HeimdallSettings::dnn_work_first` submits them (default false: after the render).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dnn_work_first: bool,
    /// Per frame: an inference that ends on the GPU completes when its outputs are read, at the
    /// first frame start after its last chunk, as the plugin's `free_at_readback` frees it; the
    /// chunks' own times reach the coordinator then too (default false: each at its end).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub results_at_frame_start: bool,
    /// Per frame: from the end of the GPU submission that holds an inference's last chunk to
    /// its outputs in host memory, ms (the readback's map and the wait for it; default 0, as the
    /// plugin's recordings export it: it is not measured there).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub readback_ms: f64,
    /// Per frame: CPU work is also handed out the moment a worker finishes
    /// (`Coordinator::schedule_cpu_only`), not only at frame starts (default false: as the Bevy
    /// plugin hands it out today, once per frame).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cpu_dispatch_on_completion: bool,
    /// Per frame with `cpu_dispatch_on_completion`: how long before each frame's decision the
    /// plugin lends its coordinator to the CPU workers, ms (from the end of the render world's
    /// frame, `RenderSystems::Cleanup`, to its next preparation: the render thread's
    /// `wait_main_world`, `extract` and `bevy_prepare_before_heimdall` phases). Only then does a
    /// worker that finishes get its next CPU work at once; one that finishes earlier in the
    /// frame (while the render thread holds the coordinator: its preparation, the scene, the
    /// present) waits for the lend, where the free slots are filled, or for the frame's
    /// decision. It matters where CPU slots are few (a 4-core host's two). Absent (the default,
    /// and recordings made before 2026-12-02): the whole frame.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_lend_ms: Option<f64>,
    /// The placement planner's longest piece of continuous CPU work, ms
    /// (`PlacementConfig::cpu_chunk_ms`: a continuous DNN's CPU inference that takes the last free
    /// slots is cut into pieces this long, so that an on-demand one waits at most one piece; the
    /// planner counts that wait in the CPU's latency). Absent: the coordinator's default, 8 ms.
    /// The Bevy plugin sets `max(0.75 × frame period, 8 ms)` (12.5 ms at 60 Hz); a recorded run
    /// gives its coordinator's (recordings made before 2026-12-02 have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_chunk_ms: Option<f64>,
    /// The DNNs.
    pub dnns: Vec<DnnScenario>,
}

/// When the simulated coordinator decides.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decisions {
    /// After every render, GPU and CPU completion and request; a request is submitted the
    /// instant it arrives (the default).
    #[default]
    PerEvent,
    /// Once per frame, at its start (vsync), as the Bevy plugin's `plan_frame` does: completions
    /// are applied at their times but decide nothing; requests are held until the first frame
    /// start at which their DNN is idle (a newer one replaces a held one) and admitted there; the
    /// frame's render is queued first and the decision's chunks after it, in the window from now
    /// plus the coordinator's render estimate to the next frame start.
    PerFrame,
}

impl Decisions {
    /// Whether this is the default, [`Decisions::PerEvent`].
    pub fn is_per_event(&self) -> bool {
        *self == Decisions::PerEvent
    }
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn one_thread() -> usize {
    1
}
fn is_one_thread(t: &usize) -> bool {
    *t == 1
}
fn unit_speedup() -> f64 {
    1.0
}
fn is_unit_speedup(x: &f64) -> bool {
    *x == 1.0
}

fn default_margin() -> f64 {
    1.0
}
fn default_relaxation() -> f64 {
    5.0
}
fn default_alpha() -> f64 {
    0.01
}

/// One DNN of a scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DnnScenario {
    /// Name.
    pub name: String,
    /// GPU time of every op, ms (ignored for CPU-only ops).
    pub gpu_op_ms: Vec<f64>,
    /// CPU time of every op, ms.
    pub cpu_op_ms: Vec<f64>,
    /// Ops the GPU cannot run (fallback ops), by index.
    #[serde(default)]
    pub cpu_only_ops: Vec<usize>,
    /// Boundaries `k` (after ops `0..k`, so `0..=` the op count) where an offloaded inference
    /// the GPU ran to `k` continues on the CPU from the GPU's activations; at a boundary not
    /// listed it restarts from its input (`Coordinator::set_resumable_steps`, what the Bevy
    /// plugin gives for every GPU model). Absent: as the coordinator configuration's
    /// `offload_resumes_from_gpu` says, for every boundary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumable_steps: Option<Vec<usize>>,
    /// When inferences are requested.
    pub request: RequestPattern,
    /// Relative deadline, ms.
    #[serde(default)]
    pub deadline_ms: Option<f64>,
    /// Threads of the DNN's CPU backend: the slots a piece of its CPU work occupies (default 1;
    /// at most the scenario's `cpu_workers` are used).
    #[serde(default = "one_thread", skip_serializing_if = "is_one_thread")]
    pub cpu_threads: usize,
    /// How much faster the DNN's CPU backend is at `cpu_threads` than on one thread (default 1):
    /// `cpu_op_ms` stay one-thread times, a CPU piece takes their sum divided by this.
    #[serde(default = "unit_speedup", skip_serializing_if = "is_unit_speedup")]
    pub cpu_speedup: f64,
    /// Requested on demand (events such as a tap): each job takes the processor that answers it
    /// soonest and its rate is never cut (`Coordinator::set_on_demand`). Default: not on demand
    /// (a list of `events_ms` is only when requests come); a recorded run gives it as the app
    /// declared it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_demand: Option<bool>,
    /// The convolution cache of its GPU model, as its coordinator was told
    /// (`Coordinator::set_conv_cache`), and the hit rate its GPU runs report. Absent (recordings
    /// made before 2026-12-02's contention session, and DNNs without a cache): none. The cache
    /// changes the coordinator's predicted costs (its cached steps' GPU *and* CPU times scale by
    /// `1 - expected hit × saving`, and a measured range holding cached steps waits for a hit
    /// report), so an admission that weighs the GPU against the CPU decides otherwise with it.
    /// The simulated step times stay the scenario's (or the replayed) ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conv_cache: Option<ConvCacheScenario>,
    /// Utility parameters.
    #[serde(default)]
    pub utility: UtilityParams,
    /// Priority: the initial utility `L0` (overrides `utility.l0` when given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// Content variation `C` of successive requests: one number for every request, or a list
    /// cycled over the requests.
    #[serde(
        default,
        deserialize_with = "number_or_list",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub content_variation: Vec<f64>,
}

/// A DNN's convolution cache in a scenario ([`DnnScenario::conv_cache`]): the coordinator's
/// [`CacheSpec`] and the hit rate its GPU runs report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConvCacheScenario {
    /// Indices of the cached steps (the GPU backend's `CompileReport::cached_ops`).
    pub cached_steps: Vec<usize>,
    /// Share of a cached step's uncached cost a hit rate of 1 saves, in `[0, 1]` (default 0.9,
    /// [`CacheSpec::DEFAULT_SAVING`]).
    #[serde(default = "default_cache_saving")]
    pub saving: f64,
    /// EMA factor of a rising expected hit rate, in `(0, 1]` (default 0.3,
    /// [`CacheSpec::DEFAULT_RISE_ALPHA`]).
    #[serde(default = "default_cache_rise")]
    pub rise_alpha: f64,
    /// The hit rate, in `[0, 1]`, that each inference ending on the GPU reports
    /// (`Coordinator::report_cache_hits`) where the replay gives none for it (its
    /// `cache_hit`). Absent: such runs report nothing (the app's ran with the cache off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hit_rate: Option<f64>,
}

fn default_cache_saving() -> f64 {
    CacheSpec::DEFAULT_SAVING
}
fn default_cache_rise() -> f64 {
    CacheSpec::DEFAULT_RISE_ALPHA
}

impl ConvCacheScenario {
    /// The cache `spec` as the coordinator was told it, no hit rate of its own.
    pub fn from_spec(spec: &CacheSpec) -> Self {
        ConvCacheScenario {
            cached_steps: spec.cached_steps.clone(),
            saving: spec.saving,
            rise_alpha: spec.rise_alpha,
            hit_rate: None,
        }
    }

    /// The coordinator's [`CacheSpec`].
    pub fn spec(&self) -> CacheSpec {
        CacheSpec {
            cached_steps: self.cached_steps.clone(),
            saving: self.saving,
            rise_alpha: self.rise_alpha,
        }
    }
}

/// Reads `x` as `[x]` and `[x, y, ...]` as it is.
fn number_or_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(f64),
        Many(Vec<f64>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(x) => vec![x],
        OneOrMany::Many(v) => v,
    })
}

/// When a DNN is requested: `{"period_ms": P}` (from `start_ms`, default 0) or
/// `{"events_ms": [...]}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestPattern {
    /// A request every `period_ms`.
    #[serde(default)]
    pub period_ms: Option<f64>,
    /// First periodic request, ms.
    #[serde(default)]
    pub start_ms: Option<f64>,
    /// Requests at these times.
    #[serde(default)]
    pub events_ms: Option<Vec<f64>>,
}

impl RequestPattern {
    /// The request times before `end_ms`, in order.
    pub fn times(&self, end_ms: f64) -> Vec<f64> {
        if let Some(p) = self.period_ms {
            let mut t = self.start_ms.unwrap_or(0.0);
            let mut v = Vec::new();
            while t < end_ms {
                v.push(t);
                t += p;
            }
            v
        } else {
            let mut v: Vec<f64> = self
                .events_ms
                .iter()
                .flatten()
                .copied()
                .filter(|t| *t < end_ms)
                .collect();
            v.sort_by(f64::total_cmp);
            v
        }
    }
}

/// Most vsyncs a scenario may simulate (`duration_s × frame_rate`): the simulator queues one
/// event per vsync up front, so a hostile file must not be able to ask for unbounded memory
/// (an hour at 1000 Hz is 3.6 million).
pub const MAX_FRAMES: f64 = 4_000_000.0;

/// Most periodic requests of one DNN (`duration_s × 1000 / period_ms`), for the same reason.
pub const MAX_REQUESTS: f64 = 4_000_000.0;

/// Most CPU workers of a scenario (the simulator keeps one slot per worker).
pub const MAX_CPU_WORKERS: usize = 1024;

fn invalid(field: impl Into<String>, problem: impl Into<String>) -> ScenarioError {
    ScenarioError::Invalid {
        field: field.into(),
        problem: problem.into(),
    }
}

fn check(ok: bool, field: impl Into<String>, problem: &str) -> Result<(), ScenarioError> {
    if ok {
        Ok(())
    } else {
        Err(invalid(field, problem))
    }
}

fn nonneg(x: f64) -> bool {
    x.is_finite() && x >= 0.0
}

impl Scenario {
    /// Parses and validates a scenario.
    pub fn from_json(text: &str) -> Result<Self, ScenarioError> {
        let s: Scenario = serde_json::from_str(text)?;
        s.validate()?;
        Ok(s)
    }

    /// Reads, parses and validates a scenario file.
    pub fn from_file(path: &Path) -> Result<Self, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError::Io {
            path: path.display().to_string(),
            source: e,
        })?;
        Self::from_json(&text)
    }

    /// Checks every value, naming the first bad field.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        check(
            self.frame_rate.is_finite() && self.frame_rate > 0.0,
            "frame_rate",
            "must be > 0",
        )?;
        check(
            nonneg(self.readback_ms),
            "readback_ms",
            "must be finite and >= 0",
        )?;
        // A scene at or beyond the frame period is valid: the frames leave the DNNs no GPU
        // budget (every frame's window is closed), which is what a contended run records.
        check(
            nonneg(self.render_ms),
            "render_ms",
            "must be finite and >= 0",
        )?;
        // The frames and requests are bounded below; the duration itself only needs to be a
        // time (a long recording at a low frame rate is valid).
        check(
            self.duration_s.is_finite() && self.duration_s > 0.0,
            "duration_s",
            "must be finite and > 0",
        )?;
        check(
            self.duration_s * self.frame_rate <= MAX_FRAMES,
            "frame_rate",
            "times duration_s must be at most 4 000 000 frames",
        )?;
        check(
            (1..=MAX_CPU_WORKERS).contains(&self.cpu_workers),
            "cpu_workers",
            "must be in [1, 1024]",
        )?;
        check(
            nonneg(self.chunk_overhead_ms),
            "chunk_overhead_ms",
            "must be >= 0",
        )?;
        check(
            nonneg(self.budget_margin_ms),
            "budget_margin_ms",
            "must be >= 0",
        )?;
        check(nonneg(self.relaxation_ms), "relaxation_ms", "must be >= 0")?;
        check(nonneg(self.alpha), "alpha", "must be >= 0")?;
        if let Some(e) = self.render_estimate_ms {
            check(nonneg(e), "render_estimate_ms", "must be finite and >= 0")?;
        }
        if let Some(l) = self.cpu_lend_ms {
            check(nonneg(l), "cpu_lend_ms", "must be finite and >= 0")?;
        }
        if let Some(c) = self.cpu_chunk_ms {
            check(nonneg(c), "cpu_chunk_ms", "must be finite and >= 0")?;
        }
        check(!self.dnns.is_empty(), "dnns", "must not be empty")?;
        let mut names = HashSet::new();
        for (i, d) in self.dnns.iter().enumerate() {
            let f = |x: &str| format!("dnns[{i}].{x}");
            check(!d.name.is_empty(), f("name"), "must not be empty")?;
            check(names.insert(d.name.as_str()), f("name"), "is used twice")?;
            self.validate_ops(d, &f)?;
            self.validate_request(&d.request, &f)?;
            self.validate_dnn_settings(d, &f)?;
        }
        Ok(())
    }

    /// A DNN's per-op costs, CPU-only ops and resume boundaries; `f` names a field of it.
    fn validate_ops(
        &self,
        d: &DnnScenario,
        f: &dyn Fn(&str) -> String,
    ) -> Result<(), ScenarioError> {
        check(!d.gpu_op_ms.is_empty(), f("gpu_op_ms"), "must not be empty")?;
        check(
            d.cpu_op_ms.len() == d.gpu_op_ms.len(),
            f("cpu_op_ms"),
            "must have one entry per op (as many as gpu_op_ms)",
        )?;
        for (k, &t) in d.gpu_op_ms.iter().enumerate() {
            check(
                nonneg(t),
                f(&format!("gpu_op_ms[{k}]")),
                "must be finite and >= 0",
            )?;
        }
        for (k, &t) in d.cpu_op_ms.iter().enumerate() {
            check(
                nonneg(t),
                f(&format!("cpu_op_ms[{k}]")),
                "must be finite and >= 0",
            )?;
        }
        let mut seen = HashSet::new();
        for (k, &op) in d.cpu_only_ops.iter().enumerate() {
            let field = f(&format!("cpu_only_ops[{k}]"));
            check(op < d.gpu_op_ms.len(), field.clone(), "is not an op index")?;
            check(seen.insert(op), field, "is listed twice")?;
        }
        if let Some(c) = &d.conv_cache {
            if let Err(e) = c.spec().validate(d.gpu_op_ms.len()) {
                return Err(invalid(f("conv_cache"), e));
            }
            check(
                c.hit_rate.is_none_or(|h| (0.0..=1.0).contains(&h)),
                f("conv_cache.hit_rate"),
                "must be in [0, 1]",
            )?;
        }
        let mut seen = HashSet::new();
        for (k, &b) in d.resumable_steps.iter().flatten().enumerate() {
            let field = f(&format!("resumable_steps[{k}]"));
            check(
                b <= d.gpu_op_ms.len(),
                field.clone(),
                "is past the last op (a boundary is at most the op count)",
            )?;
            check(seen.insert(b), field, "is listed twice")?;
        }
        Ok(())
    }

    /// A DNN's request pattern; `f` names a field of the DNN.
    fn validate_request(
        &self,
        r: &RequestPattern,
        f: &dyn Fn(&str) -> String,
    ) -> Result<(), ScenarioError> {
        match (&r.period_ms, &r.events_ms) {
            (Some(p), None) => {
                check(
                    p.is_finite() && *p > 0.0,
                    f("request.period_ms"),
                    "must be > 0",
                )?;
                check(
                    self.duration_s * 1000.0 / p <= MAX_REQUESTS,
                    f("request.period_ms"),
                    "makes more than 4 000 000 requests over duration_s",
                )?;
                check(
                    r.start_ms.is_none_or(nonneg),
                    f("request.start_ms"),
                    "must be >= 0",
                )?;
            }
            (None, Some(ev)) => {
                check(
                    r.start_ms.is_none(),
                    f("request.start_ms"),
                    "only goes with period_ms",
                )?;
                for (k, &t) in ev.iter().enumerate() {
                    check(
                        nonneg(t),
                        f(&format!("request.events_ms[{k}]")),
                        "must be finite and >= 0",
                    )?;
                }
            }
            _ => {
                return Err(invalid(
                    f("request"),
                    "needs exactly one of period_ms and events_ms",
                ));
            }
        }
        Ok(())
    }

    /// A DNN's deadline, CPU settings, utility, priority and content variation; `f` names a
    /// field of it.
    fn validate_dnn_settings(
        &self,
        d: &DnnScenario,
        f: &dyn Fn(&str) -> String,
    ) -> Result<(), ScenarioError> {
        if let Some(dl) = d.deadline_ms {
            check(dl.is_finite() && dl > 0.0, f("deadline_ms"), "must be > 0")?;
        }
        check(
            (1..=MAX_CPU_WORKERS).contains(&d.cpu_threads),
            f("cpu_threads"),
            "must be in [1, 1024]",
        )?;
        check(
            d.cpu_speedup.is_finite() && d.cpu_speedup > 0.0,
            f("cpu_speedup"),
            "must be finite and > 0",
        )?;
        let u = &d.utility;
        check(u.l0.is_finite(), f("utility.l0"), "must be finite")?;
        if let Some(p) = d.priority {
            check(p.is_finite(), f("priority"), "must be finite")?;
        }
        check(nonneg(u.beta), f("utility.beta"), "must be >= 0")?;
        check(
            u.gamma.is_finite() && u.gamma > 0.0,
            f("utility.gamma"),
            "must be > 0",
        )?;
        for (k, &c) in d.content_variation.iter().enumerate() {
            check(
                nonneg(c),
                f(&format!("content_variation[{k}]")),
                "must be finite and >= 0",
            )?;
        }
        Ok(())
    }

    /// The frame budget of this scenario.
    pub fn budget(&self) -> FrameBudget {
        FrameBudget {
            frame_period_ms: 1000.0 / self.frame_rate,
            render_ms: self.render_ms,
            margin_ms: self.budget_margin_ms,
            relaxation_ms: self.relaxation_ms,
            chunk_overhead_ms: self.chunk_overhead_ms,
        }
    }

    /// The DNN the acceptance criteria watch: the first one requested on events, else the one
    /// with the highest priority (`L0`; the first among equals).
    pub fn priority_dnn(&self) -> &DnnScenario {
        self.dnns
            .iter()
            .find(|d| d.event_driven())
            .unwrap_or_else(|| {
                self.dnns
                    .iter()
                    .rev()
                    .max_by(|a, b| a.utility_params().l0.total_cmp(&b.utility_params().l0))
                    .expect("a valid scenario has a DNN")
            })
    }

    /// The same scenario with only the DNN called `name` (for its isolated latency).
    pub fn only(&self, name: &str) -> Option<Scenario> {
        let d = self.dnns.iter().find(|d| d.name == name)?;
        Some(Scenario {
            dnns: vec![d.clone()],
            ..self.clone()
        })
    }
}

impl DnnScenario {
    /// The per-step costs.
    pub fn steps(&self) -> Vec<StepCost> {
        let mut steps: Vec<StepCost> = self
            .gpu_op_ms
            .iter()
            .zip(&self.cpu_op_ms)
            .map(|(&g, &c)| StepCost::gpu_and_cpu(g, c))
            .collect();
        for &op in &self.cpu_only_ops {
            steps[op] = StepCost::cpu_only(self.cpu_op_ms[op]);
        }
        steps
    }

    /// The utility parameters, with `priority` as `L0` when given.
    pub fn utility_params(&self) -> UtilityParams {
        UtilityParams {
            l0: self.priority.unwrap_or(self.utility.l0),
            ..self.utility
        }
    }

    /// Content variation of the request with index `k` (0 without any).
    pub fn content_variation_of(&self, k: usize) -> f64 {
        if self.content_variation.is_empty() {
            0.0
        } else {
            self.content_variation[k % self.content_variation.len()]
        }
    }

    /// Whether the DNN is requested on events (rather than periodically).
    pub fn event_driven(&self) -> bool {
        self.request.period_ms.is_none()
    }

    /// Whether the coordinator treats it as on demand: `on_demand` if given, else not.
    pub fn is_on_demand(&self) -> bool {
        self.on_demand.unwrap_or(false)
    }

    /// The model spec to register.
    pub fn spec(&self) -> ModelSpec {
        ModelSpec {
            name: self.name.clone(),
            steps: self.steps(),
            utility: self.utility_params(),
            deadline_ms: self.deadline_ms,
        }
    }
}
