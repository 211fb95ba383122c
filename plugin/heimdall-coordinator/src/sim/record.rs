//! Turning a run into a scenario and a replay: [`RunRecorder`].
//!
//! A live app (the Bevy plugin) or the simulator itself ([`super::SimOptions::record_run`])
//! feeds the recorder what its coordinator was given and what happened: the DNNs and their
//! profiles, the requests, every frame's start and scene time, every chunk's measured time and
//! every inference's end. [`RunRecorder::export`] turns the recorded window into a
//! [`Scenario`](super::Scenario) (with [`Decisions::PerFrame`](super::Decisions::PerFrame), how
//! the plugin schedules) and a [`Replay`](super::Replay) of the measured times, which
//! [`super::simulate_opts`] runs: the simulator checked against the run it describes (issue #15).
//! The export lives in `record/export.rs`.
//!
//! Memory is bounded for long runs: the recorder keeps the latest `capacity` frames, the latest
//! `capacity` requests (all DNNs together) and the latest `capacity` finished inferences (all
//! DNNs together; at most `2 × steps + 16` chunks each), [`RunRecorder::DEFAULT_CAPACITY`] unless made with
//! [`RunRecorder::with_capacity`]. The export is then the window of the latest frames.

use std::collections::VecDeque;
use std::ops::Range;

mod export;
mod models;

use crate::analyzer::{CacheSpec, StepCost};
use crate::coordinator::CoordinatorConfig;
use crate::model::ModelId;
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

/// Records a run (live or simulated) and exports it as a [`Scenario`](super::Scenario) and a
/// [`Replay`](super::Replay); see the module documentation.
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
