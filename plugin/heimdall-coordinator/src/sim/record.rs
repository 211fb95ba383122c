//! Turning a run into a scenario and a replay: [`RunRecorder`].
//!
//! A live app (the Bevy plugin) or the simulator itself ([`super::SimOptions::record_run`])
//! feeds the recorder what its coordinator was given and what happened: the DNNs and their
//! profiles, the requests, every frame's start and scene time, every chunk's measured time and
//! every inference's end. [`RunRecorder::export`] turns the recorded window into a
//! [`Scenario`] (with [`Decisions::PerFrame`], how the plugin schedules) and a [`Replay`] of the
//! measured times, which [`super::simulate_opts`] runs: the simulator checked against the run it
//! describes (issue #15).
//!
//! Memory is bounded for long runs: the recorder keeps the latest `capacity` frames, the latest
//! `capacity` requests (all DNNs together) and the latest `capacity` finished inferences (all
//! DNNs together; at most `2 × steps + 16` chunks each), [`RunRecorder::DEFAULT_CAPACITY`] unless made with
//! [`RunRecorder::with_capacity`]. The export is then the window of the latest frames.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::ops::Range;

mod models;

use super::export_parts::{median, split, unique_name};
use super::replay::{ModelTrace, REPLAY_FORMAT, Replay};
use super::scenario::{
    ConvCacheScenario, Decisions, DnnScenario, MAX_CPU_WORKERS, RequestPattern, Scenario,
    ScenarioError,
};
use crate::analyzer::{CacheSpec, StepCost};
use crate::coordinator::CoordinatorConfig;
use crate::model::ModelId;
use crate::processor::Processor;
use crate::utility::UtilityParams;

/// `x` when it is finite and >= 0, else `or`.
fn nonneg_or(x: f64, or: f64) -> f64 {
    if x.is_finite() && x >= 0.0 { x } else { or }
}

/// One frame: its start and its scene's measured GPU time.
#[derive(Clone, Debug, PartialEq)]
struct FrameRec {
    start_ms: f64,
    scene_ms: Option<f64>,
    /// Delays after the start until the frame's DNN work and scene were submitted, ms.
    dnn_submit_ms: Option<f64>,
    scene_submit_ms: Option<f64>,
    /// The measured readback of the GPU inferences that ended in the frame's submission, ms.
    readback_ms: Option<f64>,
    /// When the display layer said the frame reaches the screen (the run's clock), ms.
    shown_ms: Option<f64>,
    /// Each model's measured readback of the outputs read with the frame's submission, ms.
    model_reads: Vec<(ModelId, f64)>,
}

/// One request.
#[derive(Clone, Copy, Debug, PartialEq)]
struct RequestRec {
    model: ModelId,
    capture_ms: f64,
    content_variation: f64,
}

/// A measured piece of an inference: its ops, its measured time (with the chunk overhead, on the
/// GPU) and its processor.
#[derive(Clone, Debug, PartialEq)]
struct ChunkRec {
    ops: Range<usize>,
    ms: f64,
    gpu: bool,
}

/// One inference of a model.
#[derive(Clone, Debug, PartialEq)]
struct InferenceRec {
    model: ModelId,
    /// Frames seen when its first piece (or its end) was recorded: it belongs to the window if
    /// that is after the window's first frame.
    since: u64,
    chunks: Vec<ChunkRec>,
    /// The convolution cache's hit rate its run reported ([`RunRecorder::cache_hit`]).
    cache_hit: Option<f64>,
}

/// A DNN of the run.
#[derive(Clone, Debug, PartialEq)]
struct ModelRec {
    id: ModelId,
    name: String,
    steps: Vec<StepCost>,
    deadline_ms: Option<f64>,
    utility: UtilityParams,
    /// Boundaries where an offloaded inference continues from the GPU's activations
    /// ([`RunRecorder::set_resumable_steps`]; `None`: not given).
    resumable_steps: Option<Vec<usize>>,
    /// Threads of its CPU backend and their speedup ([`RunRecorder::set_cpu_parallelism`]).
    cpu_threads: usize,
    cpu_speedup: f64,
    /// Whether it is requested on demand ([`RunRecorder::set_on_demand`]; `None`: not given).
    on_demand: Option<bool>,
    /// Its convolution cache ([`RunRecorder::set_conv_cache`]; `None`: none, or not given).
    conv_cache: Option<CacheSpec>,
    /// The inference whose pieces are being recorded.
    current: Option<InferenceRec>,
}

/// Records a run (live or simulated) and exports it as a [`Scenario`] and a [`Replay`]; see the
/// module documentation.
#[derive(Clone, Debug)]
pub struct RunRecorder {
    frame_rate: f64,
    cpu_workers: usize,
    margin_ms: f64,
    relaxation_ms: f64,
    alpha: f64,
    chunk_overhead_ms: f64,
    /// The placement planner's longest piece of continuous CPU work, ms.
    cpu_chunk_ms: f64,
    /// The configuration's render time (the fallback when no frame was measured).
    config_render_ms: f64,
    /// The coordinator's render estimate at the window's start, if known.
    render_estimate_ms: Option<f64>,
    /// The frame order the export describes ([`RunRecorder::set_frame_order`]).
    dnn_work_first: bool,
    results_at_frame_start: bool,
    /// How CPU work went out ([`RunRecorder::set_cpu_dispatch_on_completion`]).
    cpu_dispatch_on_completion: bool,
    /// When the coordinator was lent to the CPU workers ([`RunRecorder::set_cpu_lend_ms`]).
    cpu_lend_ms: Option<f64>,
    capacity: usize,
    models: Vec<ModelRec>,
    frames: VecDeque<FrameRec>,
    /// Frames recorded since the recorder was made (the window's first frame is number
    /// `frames_seen - frames.len()`).
    frames_seen: u64,
    /// When frames reached the screen (a display layer's presentation times), ms.
    shown: VecDeque<f64>,
    requests: VecDeque<RequestRec>,
    done: VecDeque<InferenceRec>,
    ignored: u64,
}

impl RunRecorder {
    /// Frames, requests and finished inferences a [`RunRecorder::new`] keeps: 10 minutes at
    /// 60 Hz.
    pub const DEFAULT_CAPACITY: usize = 36_000;

    /// A recorder for a coordinator with configuration `cfg`: the frame rate (Hz), CPU workers,
    /// budget margin, relaxation, alpha and chunk overhead come from it, and its render estimate
    /// (`cfg.budget.render_ms`) is taken as the coordinator's at the first recorded frame. Keeps
    /// [`RunRecorder::DEFAULT_CAPACITY`] frames, requests and inferences.
    pub fn new(cfg: &CoordinatorConfig) -> Self {
        Self::with_capacity(cfg, Self::DEFAULT_CAPACITY)
    }

    /// [`RunRecorder::new`] keeping at most `capacity` (at least 1) frames, requests and finished
    /// inferences: the oldest are forgotten first.
    pub fn with_capacity(cfg: &CoordinatorConfig, capacity: usize) -> Self {
        let b = &cfg.budget;
        RunRecorder {
            frame_rate: 1000.0 / b.frame_period_ms,
            cpu_workers: cfg.cpu_workers,
            margin_ms: b.margin_ms,
            relaxation_ms: b.relaxation_ms,
            alpha: cfg.alpha,
            chunk_overhead_ms: b.chunk_overhead_ms,
            cpu_chunk_ms: cfg.placement.cpu_chunk_ms,
            config_render_ms: b.render_ms,
            render_estimate_ms: Some(b.render_ms),
            dnn_work_first: false,
            results_at_frame_start: false,
            cpu_dispatch_on_completion: false,
            cpu_lend_ms: None,
            capacity: capacity.max(1),
            models: Vec::new(),
            frames: VecDeque::new(),
            frames_seen: 0,
            shown: VecDeque::new(),
            requests: VecDeque::new(),
            done: VecDeque::new(),
            ignored: 0,
        }
    }

    /// The most frames, requests and finished inferences kept.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Sets the frame rate (Hz) the export describes, e.g. when the coordinator's changed
    /// (`Coordinator::set_frame_rate`) or to give it exactly (`1000 / period` may be off by an
    /// ulp). Rates that are not finite or ≤ 0 are ignored.
    pub fn set_frame_rate(&mut self, hz: f64) {
        if hz.is_finite() && hz > 0.0 {
            self.frame_rate = hz;
        }
    }

    /// Sets how the run ordered each frame's work, exported as the scenario's `dnn_work_first`
    /// and `results_at_frame_start` (both false until set): whether the frame's chunks went to
    /// the GPU before its scene, and whether a GPU inference completed when its outputs were
    /// read at the next frame start (the Bevy plugin's defaults: both).
    pub fn set_frame_order(&mut self, dnn_work_first: bool, results_at_frame_start: bool) {
        self.dnn_work_first = dnn_work_first;
        self.results_at_frame_start = results_at_frame_start;
    }

    /// Sets how the run handed out CPU work, exported as the scenario's
    /// `cpu_dispatch_on_completion` (false until set): `true` when a worker that finished also
    /// took its next piece at once (`Coordinator::schedule_cpu_only`; the Bevy plugin's default,
    /// `HeimdallSettings::cpu_on_completion`), `false` when CPU work went out only at each
    /// frame's decision. Kept by [`RunRecorder::reset`].
    pub fn set_cpu_dispatch_on_completion(&mut self, on_completion: bool) {
        self.cpu_dispatch_on_completion = on_completion;
    }

    /// How long before each frame's decision the app lends its coordinator to the CPU workers,
    /// ms (the plugin: from its render world's `Cleanup` to its next preparation), exported as
    /// the scenario's `cpu_lend_ms`: with `cpu_dispatch_on_completion` a worker that finishes
    /// only then gets its next work at once. `None` (the default): the whole frame. Values that
    /// are not finite or < 0 count as `None`.
    pub fn set_cpu_lend_ms(&mut self, ms: Option<f64>) {
        self.cpu_lend_ms = ms.filter(|x| x.is_finite() && *x >= 0.0);
    }

    /// Sets the coordinator's render estimate (`config().budget.render_ms`) at the window's
    /// first frame, exported as `render_estimate_ms` so that a simulation starts its
    /// coordinator there. [`RunRecorder::reset`] forgets it (the export then leaves it out and
    /// the simulator starts from the median scene time); call this after a reset for an exact
    /// start. Values that are not finite or < 0 are ignored.
    pub fn set_render_estimate(&mut self, ms: f64) {
        if ms.is_finite() && ms >= 0.0 {
            self.render_estimate_ms = Some(ms);
        }
    }

    /// A DNN of the run: its coordinator id, name (made unique in the export by suffixing "#2",
    /// "#3"... when two DNNs share a name), per-step profile (the costs the coordinator was
    /// given), deadline and utility. Adding an id again replaces this description; what was
    /// recorded for it and its resumable steps ([`RunRecorder::set_resumable_steps`]) are kept.
    /// A DNN without steps is left out of the export.
    pub fn add_model(
        &mut self,
        id: ModelId,
        name: &str,
        steps: &[StepCost],
        deadline_ms: Option<f64>,
        utility: UtilityParams,
    ) {
        let rec = ModelRec {
            id,
            name: name.to_string(),
            steps: steps.to_vec(),
            deadline_ms,
            utility,
            resumable_steps: None,
            cpu_threads: 1,
            cpu_speedup: 1.0,
            on_demand: None,
            conv_cache: None,
            current: None,
        };
        match self.models.iter_mut().find(|m| m.id == id) {
            Some(m) => {
                let current = m.current.take();
                let resumable_steps = m.resumable_steps.take();
                *m = ModelRec {
                    current,
                    resumable_steps,
                    cpu_threads: m.cpu_threads,
                    cpu_speedup: m.cpu_speedup,
                    on_demand: m.on_demand,
                    conv_cache: m.conv_cache.take(),
                    ..rec
                };
            }
            None => self.models.push(rec),
        }
    }

    /// A request the app made for `id` (capture time on the run's clock, ms; content variation
    /// C). Requests of unknown DNNs and non-finite values are ignored ([`RunRecorder::ignored`]).
    pub fn request(&mut self, id: ModelId, capture_ms: f64, content_variation: f64) {
        if !self.known(id) || !capture_ms.is_finite() || !content_variation.is_finite() {
            self.ignored += 1;
            return;
        }
        if self.requests.len() == self.capacity {
            self.requests.pop_front();
        }
        self.requests.push_back(RequestRec {
            model: id,
            capture_ms,
            content_variation: content_variation.max(0.0),
        });
    }

    /// A frame started at `start_ms`, its scene's measured GPU time (None: not measured; the
    /// export falls back to the median of the measured ones). A non-finite start is ignored; a
    /// scene time that is not finite and >= 0 counts as not measured.
    pub fn frame(&mut self, start_ms: f64, scene_gpu_ms: Option<f64>) {
        self.frame_submitted(start_ms, scene_gpu_ms, None, None);
    }

    /// [`RunRecorder::frame`] with how long after its start the frame's DNN work and its scene
    /// were submitted to the GPU, ms (`None`: not measured); exported as the replay's
    /// `dnn_submit_ms` and `scene_submit_ms` (left out when no frame has them). Delays that are
    /// not finite and >= 0 count as not measured.
    pub fn frame_submitted(
        &mut self,
        start_ms: f64,
        scene_gpu_ms: Option<f64>,
        dnn_submit_ms: Option<f64>,
        scene_submit_ms: Option<f64>,
    ) {
        self.frame_read(start_ms, scene_gpu_ms, dnn_submit_ms, scene_submit_ms, None);
    }

    /// [`RunRecorder::frame_submitted`] with the frame's measured readback, ms (`None`: no GPU
    /// inference ended in the frame's submission, or not measured): for those inferences, the
    /// mean time from the submission's end (as the simulator models it: its submission plus its
    /// chunks' GPU times) to their outputs read. Exported as the replay's `readback_ms` (left out
    /// when no frame has one); a value that is not finite and >= 0 counts as not measured.
    pub fn frame_read(
        &mut self,
        start_ms: f64,
        scene_gpu_ms: Option<f64>,
        dnn_submit_ms: Option<f64>,
        scene_submit_ms: Option<f64>,
        readback_ms: Option<f64>,
    ) {
        if !start_ms.is_finite() {
            self.ignored += 1;
            return;
        }
        if self.frames.len() == self.capacity {
            self.frames.pop_front();
        }
        let ok = |t: Option<f64>| t.filter(|t| t.is_finite() && *t >= 0.0);
        self.frames.push_back(FrameRec {
            start_ms,
            scene_ms: ok(scene_gpu_ms),
            dnn_submit_ms: ok(dnn_submit_ms),
            scene_submit_ms: ok(scene_submit_ms),
            readback_ms: ok(readback_ms),
            shown_ms: None,
            model_reads: Vec::new(),
        });
        self.frames_seen += 1;
        // Finished inferences that began before the window can no longer be exported.
        let first = self.first_frame();
        while self.done.front().is_some_and(|i| i.since <= first) {
            self.done.pop_front();
        }
    }

    /// The frame recorded last read `model`'s outputs `ms` after its submission's end (as in
    /// [`RunRecorder::frame_read`], whose mean over the frame's models this refines). Exported
    /// per frame as the model's `readback_ms` in the replay (left out for a model without one);
    /// a value that is not finite and >= 0 is ignored.
    pub fn model_read(&mut self, model: ModelId, ms: f64) {
        match self.frames.back_mut() {
            Some(f) if ms.is_finite() && ms >= 0.0 => f.model_reads.push((model, ms)),
            _ => self.ignored += 1,
        }
    }

    /// The frame recorded last reaches the screen at `shown_ms` (the run's clock): the
    /// presentation time a display layer gave it, such as the headless harness's emulated
    /// vertical blank (a FIFO swap chain's blank for a frame counts its submission and the frames
    /// queued before it, not its GPU work). Exported per frame as the replay's `present_ms`, and
    /// as its `vsync_phase_ms`: where these times fall in the frame period. Non-finite times are
    /// ignored.
    pub fn shown(&mut self, shown_ms: f64) {
        if !shown_ms.is_finite() {
            self.ignored += 1;
            return;
        }
        if let Some(f) = self.frames.back_mut() {
            f.shown_ms = Some(shown_ms);
        }
        if self.shown.len() == self.capacity {
            self.shown.pop_front();
        }
        self.shown.push_back(shown_ms);
    }

    /// Where the presentation times fall in the frame period, ms after `t0` modulo the period:
    /// their circular mean (a phase near 0 and one near the period are close). `None` without
    /// presentation times, or where they spread evenly over the period.
    fn vsync_phase(&self, t0: f64) -> Option<f64> {
        use std::f64::consts::TAU;
        let period = 1000.0 / self.frame_rate;
        let (sin, cos) = self.shown.iter().fold((0.0, 0.0), |(s, c), &t| {
            let a = TAU * (t - t0).rem_euclid(period) / period;
            (s + a.sin(), c + a.cos())
        });
        let n = self.shown.len() as f64;
        if n == 0.0 || sin.hypot(cos) < 1e-6 * n {
            return None;
        }
        let phase = (sin.atan2(cos).rem_euclid(TAU) / TAU * period).rem_euclid(period);
        // `rem_euclid` may round up to the period itself.
        Some(if phase < period { phase } else { 0.0 })
    }

    /// Measured time of a GPU chunk (ops range of the model's steps) of `id`'s current
    /// inference, ms, as the GPU timed it: the configuration's chunk overhead is taken off for
    /// the steps (the export keeps the overhead, so a replay charges the chunk `ms` again).
    /// Unknown DNNs, empty or out-of-range ops and times that are not finite and >= 0 are
    /// ignored.
    pub fn gpu_chunk(&mut self, id: ModelId, ops: Range<usize>, ms: f64) {
        self.chunk(id, ops, ms, true);
    }

    /// Measured time of CPU work (ops range) of `id`'s current inference, ms (ignored as for
    /// [`RunRecorder::gpu_chunk`]).
    pub fn cpu_chunk(&mut self, id: ModelId, ops: Range<usize>, ms: f64) {
        self.chunk(id, ops, ms, false);
    }

    /// `id`'s current inference finished: later chunks belong to its next inference. Chunks of
    /// one inference must be recorded before its end.
    pub fn finished(&mut self, id: ModelId) {
        let since = self.frames_seen;
        let Some(m) = self.models.iter_mut().find(|m| m.id == id) else {
            self.ignored += 1;
            return;
        };
        let inf = m.current.take().unwrap_or(InferenceRec {
            model: id,
            since,
            chunks: Vec::new(),
            cache_hit: None,
        });
        if self.done.len() == self.capacity {
            self.done.pop_front();
        }
        self.done.push_back(inf);
    }

    /// Forgets what was recorded (frames, requests, inferences, also those in flight, and the
    /// render estimate), keeping the models: the app calls it when its measured window starts.
    pub fn reset(&mut self) {
        // `frames_seen` goes on counting: what is recorded from now on is newer than the window.
        self.frames.clear();
        self.shown.clear();
        self.requests.clear();
        self.done.clear();
        for m in &mut self.models {
            m.current = None;
        }
        self.render_estimate_ms = None;
        self.ignored = 0;
    }

    /// Calls ignored since the recorder was made or reset (unknown DNNs, bad ranges or times).
    pub fn ignored(&self) -> u64 {
        self.ignored
    }

    /// Frames recorded in the window.
    pub fn frames(&self) -> usize {
        self.frames.len()
    }

    /// Requests recorded (all DNNs).
    pub fn requests(&self) -> usize {
        self.requests.len()
    }

    /// Finished inferences recorded (all DNNs).
    pub fn inferences(&self) -> usize {
        self.done.len()
    }

    /// [`RunRecorder::export`], checked: the scenario validated and the replay checked against
    /// it, the error naming the field (e.g. `duration_s` when no frame was recorded, `dnns` when
    /// no DNN was added, `render_ms` when the median scene time leaves no frame budget).
    pub fn try_export(&self) -> Result<(Scenario, Replay), ScenarioError> {
        if self.frames.is_empty() {
            return Err(ScenarioError::Invalid {
                field: "duration_s".into(),
                problem: "is 0: no frame was recorded".into(),
            });
        }
        let (s, r) = self.export();
        s.validate()?;
        r.check(&s).map_err(|e| ScenarioError::Invalid {
            field: "replay".into(),
            problem: e.to_string(),
        })?;
        Ok((s, r))
    }

    /// One submission delay of every frame (empty when no frame has one).
    fn submit_lane(&self, of: impl Fn(&FrameRec) -> Option<f64>) -> Vec<Option<f64>> {
        if self.frames.iter().any(|f| of(f).is_some()) {
            self.frames.iter().map(of).collect()
        } else {
            Vec::new()
        }
    }

    /// The recorded window as a scenario and its replay.
    ///
    /// The scenario: decisions per frame; time 0 = the first recorded frame's start; duration =
    /// recorded frames / frame rate; `render_ms` = the median measured scene time (the
    /// configuration's render time when none was measured); `render_estimate_ms` = the
    /// coordinator's estimate at the window's start if known; CPU workers, margin, relaxation,
    /// alpha and chunk overhead from the configuration; each DNN (in the order added, without
    /// the step-less ones): `gpu_op_ms`/`cpu_op_ms` from its profile (0 for the GPU time of a
    /// step the GPU cannot run), `cpu_only_ops` from the profile's processors, the request
    /// `{"events_ms": ...}` of its capture times shifted to the window (only those inside it)
    /// with their content variations, deadline, utility and resumable steps (when given).
    ///
    /// The replay: `render_ms` per frame (the median where not measured); per DNN one list per
    /// recorded inference that began in the window, on each processor (a processor on which none
    /// ran is left out); a chunk's time split over its steps in proportion to the profile's
    /// times of those steps (equal shares when they sum to 0), the last step's share adjusted so
    /// that the steps summed in order (as the simulator sums them) plus the chunk overhead give
    /// the measured time back exactly; steps not measured are `null`. The inference in flight is
    /// exported too, with the pieces recorded so far.
    ///
    /// Not checked: see [`RunRecorder::try_export`].
    pub fn export(&self) -> (Scenario, Replay) {
        let t0 = self.frames.front().map_or(0.0, |f| f.start_ms);
        let first = self.first_frame();
        // Whatever the run was (a scene that fills the frame, a configuration out of range),
        // the export is a scenario the simulator takes: values out of range are brought in.
        let frame_rate = if self.frame_rate.is_finite() && self.frame_rate > 0.0 {
            self.frame_rate
        } else {
            60.0
        };
        let duration_s = self.frames.len() as f64 / frame_rate;
        let end_ms = duration_s * 1000.0;
        let mut measured: Vec<f64> = self.frames.iter().filter_map(|f| f.scene_ms).collect();
        let render_ms = median(&mut measured).unwrap_or(nonneg_or(self.config_render_ms, 0.0));
        let mut dnns = Vec::new();
        let mut models = BTreeMap::new();
        let mut used = HashSet::new();
        for m in self.models.iter().filter(|m| !m.steps.is_empty()) {
            let name = unique_name(&m.name, &mut used);
            dnns.push(self.dnn_scenario(m, name.clone(), t0, end_ms));
            if let Some(t) = self.model_trace(m, first) {
                models.insert(name, t);
            }
        }
        let scenario = Scenario {
            frame_rate,
            render_ms,
            duration_s,
            cpu_workers: self.cpu_workers.clamp(1, MAX_CPU_WORKERS),
            chunk_overhead_ms: nonneg_or(self.chunk_overhead_ms, 0.0),
            budget_margin_ms: nonneg_or(self.margin_ms, 0.0),
            relaxation_ms: nonneg_or(self.relaxation_ms, 0.0),
            alpha: nonneg_or(self.alpha, 0.0),
            decisions: Decisions::PerFrame,
            render_estimate_ms: self
                .render_estimate_ms
                .filter(|e| e.is_finite() && *e >= 0.0),
            dnn_work_first: self.dnn_work_first,
            results_at_frame_start: self.results_at_frame_start,
            readback_ms: 0.0,
            cpu_dispatch_on_completion: self.cpu_dispatch_on_completion,
            cpu_lend_ms: self.cpu_lend_ms,
            cpu_chunk_ms: Some(nonneg_or(self.cpu_chunk_ms, 0.0)),
            dnns,
        };
        let replay = self.replay(t0, render_ms, models);
        (scenario, replay)
    }

    /// The scenario's entry of model `m` (named `name`): its costs from the profile, its
    /// requests inside the window (`t0`, `end_ms`), its settings brought into range.
    fn dnn_scenario(&self, m: &ModelRec, name: String, t0: f64, end_ms: f64) -> DnnScenario {
        let mut reqs: Vec<(f64, f64)> = self
            .requests
            .iter()
            .filter(|r| r.model == m.id)
            .map(|r| (r.capture_ms - t0, r.content_variation))
            .filter(|(t, _)| (0.0..end_ms).contains(t))
            .collect();
        reqs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let gpu_can = |s: &StepCost| s.processors.contains(Processor::Gpu);
        DnnScenario {
            name,
            gpu_op_ms: m
                .steps
                .iter()
                .map(|s| {
                    if gpu_can(s) {
                        nonneg_or(s.gpu_ms, 0.0)
                    } else {
                        0.0
                    }
                })
                .collect(),
            cpu_op_ms: m.steps.iter().map(|s| nonneg_or(s.cpu_ms, 0.0)).collect(),
            cpu_only_ops: (0..m.steps.len())
                .filter(|&i| !gpu_can(&m.steps[i]))
                .collect(),
            request: RequestPattern {
                period_ms: None,
                start_ms: None,
                events_ms: Some(reqs.iter().map(|r| r.0).collect()),
            },
            deadline_ms: m.deadline_ms.filter(|d| d.is_finite() && *d > 0.0),
            cpu_threads: m.cpu_threads.min(MAX_CPU_WORKERS),
            cpu_speedup: m.cpu_speedup,
            on_demand: m.on_demand,
            conv_cache: m.conv_cache.as_ref().map(|spec| ConvCacheScenario {
                hit_rate: self.mean_cache_hit(m),
                ..ConvCacheScenario::from_spec(spec)
            }),
            utility: UtilityParams {
                l0: if m.utility.l0.is_finite() {
                    m.utility.l0
                } else {
                    0.0
                },
                beta: nonneg_or(m.utility.beta, 0.0),
                gamma: if m.utility.gamma.is_finite() && m.utility.gamma > 0.0 {
                    m.utility.gamma
                } else {
                    1.0
                },
            },
            priority: None,
            content_variation: reqs.iter().map(|r| r.1).collect(),
            resumable_steps: m.resumable_steps.as_ref().map(|steps| {
                let mut v: Vec<usize> = steps
                    .iter()
                    .copied()
                    .filter(|&k| k <= m.steps.len())
                    .collect();
                v.sort_unstable();
                v.dedup();
                v
            }),
        }
    }

    /// Model `m`'s replay trace: its measured step times over the inferences that began after
    /// frame `first`, and its readback times per frame (`None` when neither was recorded).
    fn model_trace(&self, m: &ModelRec, first: u64) -> Option<ModelTrace> {
        let runs = self.window_runs(m, first);
        let trace = self.trace(m, &runs);
        let reads = self.submit_lane(|f| {
            let (sum, n) = f
                .model_reads
                .iter()
                .filter(|(id, _)| *id == m.id)
                .fold((0.0, 0usize), |(s, n), r| (s + r.1, n + 1));
            (n > 0).then(|| sum / n as f64)
        });
        if trace.is_none() && reads.is_empty() {
            return None;
        }
        let mut t = trace.unwrap_or_default();
        t.readback_ms = reads;
        Some(t)
    }

    /// The replay: per frame its scene time (`render_ms` where not measured), start from `t0`
    /// and submission lanes, and the models' traces.
    fn replay(&self, t0: f64, render_ms: f64, models: BTreeMap<String, ModelTrace>) -> Replay {
        Replay {
            format: REPLAY_FORMAT.to_string(),
            render_ms: self
                .frames
                .iter()
                .map(|f| f.scene_ms.unwrap_or(render_ms))
                .collect(),
            models,
            frame_start_ms: self
                .frames
                .iter()
                .scan(0.0_f64, |last, f| {
                    // Never before the frame before (a clock that stepped back).
                    *last = last.max(f.start_ms - t0);
                    Some(*last)
                })
                .collect(),
            dnn_submit_ms: self.submit_lane(|f| f.dnn_submit_ms),
            scene_submit_ms: self.submit_lane(|f| f.scene_submit_ms),
            vsync_phase_ms: self.vsync_phase(t0),
            readback_ms: self.submit_lane(|f| f.readback_ms),
            present_ms: self.submit_lane(|f| {
                f.shown_ms
                    .map(|t| t - f.start_ms)
                    .filter(|d| d.is_finite() && *d >= 0.0)
            }),
        }
    }

    /// Model `m`'s recorded inferences that began after frame `first`, the one in flight last.
    fn window_runs<'a>(&'a self, m: &'a ModelRec, first: u64) -> Vec<&'a InferenceRec> {
        self.done
            .iter()
            .filter(|i| i.model == m.id)
            .chain(m.current.iter().filter(|i| !i.chunks.is_empty()))
            .filter(|i| i.since > first)
            .collect()
    }

    /// The mean of the cache hit rates model `m`'s inferences in the window reported (`None`
    /// when none did).
    fn mean_cache_hit(&self, m: &ModelRec) -> Option<f64> {
        let hits: Vec<f64> = self
            .window_runs(m, self.first_frame())
            .iter()
            .filter_map(|i| i.cache_hit)
            .collect();
        (!hits.is_empty()).then(|| hits.iter().sum::<f64>() / hits.len() as f64)
    }

    /// Model `m`'s measured step times and reported cache hit rates over `runs` (`None` when
    /// nothing was measured).
    fn trace(&self, m: &ModelRec, runs: &[&InferenceRec]) -> Option<ModelTrace> {
        if runs.is_empty() {
            return None;
        }
        let n = m.steps.len();
        let lane = |gpu: bool| -> Vec<Vec<Option<f64>>> {
            let lists: Vec<Vec<Option<f64>>> = runs
                .iter()
                .map(|inf| {
                    let mut v = vec![None; n];
                    for c in inf.chunks.iter().filter(|c| c.gpu == gpu) {
                        let p = if gpu { Processor::Gpu } else { Processor::Cpu };
                        let weights: Vec<f64> = m.steps[c.ops.clone()]
                            .iter()
                            .map(|s| s.on(p).unwrap_or(0.0))
                            .collect();
                        let overhead = if gpu { self.chunk_overhead_ms } else { 0.0 };
                        // CPU times go in as one-thread times (the scenario's `cpu_op_ms`).
                        let ms = if gpu { c.ms } else { c.ms * m.cpu_speedup };
                        let shares = split(ms, overhead, &weights);
                        for (slot, t) in v[c.ops.clone()].iter_mut().zip(shares) {
                            *slot = Some(t);
                        }
                    }
                    v
                })
                .collect();
            if lists.iter().all(|l| l.iter().all(Option::is_none)) {
                Vec::new()
            } else {
                lists
            }
        };
        let hits: Vec<Option<f64>> = runs.iter().map(|i| i.cache_hit).collect();
        let t = ModelTrace {
            gpu_step_ms: lane(true),
            cpu_step_ms: lane(false),
            readback_ms: Vec::new(),
            cache_hit: if hits.iter().any(Option::is_some) {
                hits
            } else {
                Vec::new()
            },
        };
        (!t.gpu_step_ms.is_empty() || !t.cpu_step_ms.is_empty() || !t.cache_hit.is_empty())
            .then_some(t)
    }

    fn known(&self, id: ModelId) -> bool {
        self.models.iter().any(|m| m.id == id)
    }

    /// Number of the window's first frame (frames are numbered from 1 by `frames_seen`; an
    /// inference belongs to the window when its `since` is greater).
    fn first_frame(&self) -> u64 {
        self.frames_seen - self.frames.len() as u64
    }

    fn chunk(&mut self, id: ModelId, ops: Range<usize>, ms: f64, gpu: bool) {
        let since = self.frames_seen;
        let Some(m) = self.models.iter_mut().find(|m| m.id == id) else {
            self.ignored += 1;
            return;
        };
        if ops.start >= ops.end || ops.end > m.steps.len() || !(ms.is_finite() && ms >= 0.0) {
            self.ignored += 1;
            return;
        }
        let cap = 2 * m.steps.len() + 16;
        let inf = m.current.get_or_insert_with(|| InferenceRec {
            model: id,
            since,
            chunks: Vec::new(),
            cache_hit: None,
        });
        if inf.chunks.len() >= cap {
            inf.chunks.remove(0);
        }
        inf.chunks.push(ChunkRec { ops, ms, gpu });
    }
}
