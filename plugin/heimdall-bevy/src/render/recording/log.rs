//! What the scheduler saw and did, for the simulator (render world): the requests, each frame's
//! start and scene time, each inference's chunks with their measured times, turned by the
//! coordinator crate's [`RunRecorder`] into a scenario and a replay that `heimdall simulate` runs
//! (issue #15: the simulator checked against a real run). Also the coordinator's own latency of
//! every inference (admission → last op, as the simulator measures it), for `stats.json`.
//!
//! It observes the run's events (`events.rs`): the render world and the CPU lane send them,
//! `observe_run` hands them over once a frame, after the decision.
//!
//! An inference's chunk times come back after it completed (the outputs are read before the
//! frame's timestamps), so they are kept per inference until every piece has reported and only
//! then handed to the recorder, in order, followed by its end.
//!
//! The readback is measured too: for a GPU inference, from the end of the GPU submission that
//! held its last chunk, as the simulator models that end (the submission's time or the modelled
//! end of the frames before it on the GPU, whichever is later, plus the GPU times of that frame's
//! DNN chunks, by their timestamps), to its outputs read. What the simulator leaves out counts in
//! it: the gaps between chunks, the GPU's own start-up, the map: a proxy. Each
//! frame's mean over its inferences goes into the replay's `readback_ms`, which the simulator adds
//! to the end of that frame's GPU inferences; the median of all of them into the scenario's
//! `readback_ms`, for frames without one.

use std::collections::{HashMap, VecDeque};
use std::ops::Range;

use heimdall_coordinator::sim::RunRecorder;
use heimdall_coordinator::{Completion, CoordinatorConfig, CpuWork, GpuWork, ModelId, WorkId};

/// Frames whose scene time may still come back (the timestamps' horizon in `schedule.rs`).
const SCENE_HORIZON: u64 = 16;

/// Readbacks kept for the median (a ring: the latest ones).
const READBACK_SAMPLES: usize = 1 << 16;

/// Inferences of one model kept while their pieces report (an inference abandoned without
/// completing is forgotten once this many follow it).
const OPEN_INFERENCES: usize = 64;

/// One inference's measured pieces: (ops, ms, on the GPU).
#[derive(Default)]
struct OpenInference {
    pieces: Vec<(Range<usize>, f64, bool)>,
    outstanding: usize,
    completed: bool,
    /// The frame of its last piece planned so far, and whether that piece is GPU work.
    last_piece: Option<(u64, bool)>,
}

/// A planned frame waiting for its measurements.
struct FrameEntry {
    /// Render-world frame number.
    frame: u64,
    /// Its start (the decision), ms on the plugin's clock.
    start_ms: f64,
    /// The scene's GPU time, once the timestamps came back.
    scene_ms: Option<f64>,
    /// How long after the start the DNN work and the scene were submitted, ms.
    submits: Option<(f64, f64)>,
    /// The GPU time of its DNN chunks (timestamps), ms.
    dnn_gpu_ms: Option<f64>,
    /// Outputs of GPU inferences whose last chunk ran in this frame: (model, read at).
    reads: Vec<(ModelId, f64)>,
    /// When the display layer presents it, ms on the plugin's clock.
    shown_ms: Option<f64>,
}

/// Work handed out and not yet reported: its model, ops, processor and inference number.
struct WorkInfo {
    model: ModelId,
    ops: Range<usize>,
    gpu: bool,
    inference: u64,
    frame: u64,
}

/// The render world's record of the run: the observer of the run's events
/// (`render/recording/events.rs`), a render-world resource.
#[derive(bevy::prelude::Resource)]
pub(crate) struct RunLog {
    /// Knows the DNNs from the start (`add_model` as the coordinator registers them,
    /// `remove_model` when a guarded model replaces one); records frames, requests and
    /// inferences once `recording`.
    pub recorder: RunRecorder,
    recording: bool,
    /// Inferences admitted per model (the current one's number).
    admitted: HashMap<ModelId, u64>,
    open: HashMap<ModelId, VecDeque<(u64, OpenInference)>>,
    works: HashMap<WorkId, WorkInfo>,
    /// Frames planned, oldest first.
    frames: VecDeque<FrameEntry>,
    /// Completed inferences not yet sent to the main world: (model, admission → last op, ms).
    pub latencies: Vec<(ModelId, f64)>,
    /// Readbacks measured and not yet sent to the main world: (model, ms).
    pub measured_readbacks: Vec<(ModelId, f64)>,
    /// Whether a GPU inference completes when its outputs are read (the readback is measured
    /// only then, with the DNN work submitted ahead of the scene).
    measure_readback: bool,
    /// Measured readbacks, ms (the latest [`READBACK_SAMPLES`]), and how many were measured.
    readbacks: Vec<f64>,
    readbacks_seen: usize,
    /// When the frames flushed so far have left the GPU as the simulator models it, ms.
    gpu_free_ms: f64,
    /// The CPU lane's lends while recording: their total length, ms, and their count.
    lent: (f64, usize),
}

impl RunLog {
    /// A log for a coordinator configured as `cfg` (not recording yet).
    pub fn new(cfg: &CoordinatorConfig) -> Self {
        RunLog {
            recorder: RunRecorder::new(cfg),
            recording: false,
            admitted: HashMap::new(),
            open: HashMap::new(),
            works: HashMap::new(),
            frames: VecDeque::new(),
            latencies: Vec::new(),
            measured_readbacks: Vec::new(),
            measure_readback: false,
            readbacks: Vec::new(),
            readbacks_seen: 0,
            gpu_free_ms: 0.0,
            lent: (0.0, 0),
        }
    }

    /// Starts (or restarts) recording: what was recorded so far is forgotten. `cfg` is the
    /// coordinator's configuration now (frame rate, render estimate); the two flags are the
    /// plugin's frame order (`dnn_work_first`, `free_at_readback`: an inference freed when its
    /// outputs are read completes as its GPU work ends; freed by the frame's timestamps, it
    /// completes at a later frame's start).
    pub fn start(&mut self, cfg: &CoordinatorConfig, dnn_work_first: bool, free_at_readback: bool) {
        let r = &mut self.recorder;
        r.reset();
        r.set_frame_rate(1000.0 / cfg.budget.frame_period_ms);
        r.set_render_estimate(cfg.budget.render_ms);
        r.set_frame_order(dnn_work_first, !free_at_readback);
        self.recording = true;
        self.measure_readback = dnn_work_first && free_at_readback;
        self.frames.clear();
        self.open.clear();
        self.works.clear();
        self.readbacks.clear();
        self.readbacks_seen = 0;
        self.gpu_free_ms = 0.0;
        self.lent = (0.0, 0);
    }

    /// The CPU lane held the coordinator for `ms` (`render/cpu_lane.rs`: from the render world's
    /// `Cleanup` to its next preparation, when a worker that finishes gets its next work at
    /// once); their mean is the recording's `cpu_lend_ms`. Nothing while not recording, nor for
    /// a length that is not finite or < 0.
    pub fn lent_for(&mut self, ms: f64) {
        if self.recording && ms.is_finite() && ms >= 0.0 {
            self.lent.0 += ms;
            self.lent.1 += 1;
        }
    }

    /// How the plugin hands out CPU work now (`HeimdallSettings::cpu_on_completion`), exported
    /// as the scenario's `cpu_dispatch_on_completion`.
    pub fn set_cpu_on_completion(&mut self, on_completion: bool) {
        self.recorder.set_cpu_dispatch_on_completion(on_completion);
    }

    /// The recording so far as (scenario JSON, replay JSON); frames still waiting for their
    /// scene time go in without it.
    pub fn export(&mut self) -> Option<(String, String)> {
        if !self.recording {
            return None;
        }
        self.flush_frames(u64::MAX);
        if self.lent.1 > 0 {
            self.recorder
                .set_cpu_lend_ms(Some(self.lent.0 / self.lent.1 as f64));
        }
        let (mut scenario, replay) = self.recorder.export();
        if let Some(ms) = median(&self.readbacks) {
            scenario.readback_ms = ms;
        }
        let s = serde_json::to_string_pretty(&scenario).ok()?;
        let r = serde_json::to_string(&replay).ok()?;
        Some((s, r))
    }

    /// The app asked `id` for an inference on a frame captured at `capture_ms`.
    pub fn request(&mut self, id: ModelId, capture_ms: f64, content_variation: f64) {
        if self.recording {
            self.recorder.request(id, capture_ms, content_variation);
        }
    }

    /// The coordinator admitted `id`'s next inference.
    pub fn admitted(&mut self, id: ModelId) {
        *self.admitted.entry(id).or_default() += 1;
    }

    /// This frame's decision: the frame started at `start_ms` and hands out `gpu` and `cpu`.
    pub fn planned(&mut self, frame: u64, start_ms: f64, gpu: &[GpuWork], cpu: &[CpuWork]) {
        self.handed_out(frame, gpu, cpu);
        if self.recording {
            self.frames.push_back(FrameEntry {
                frame,
                start_ms,
                scene_ms: None,
                submits: None,
                dnn_gpu_ms: None,
                reads: Vec::new(),
                shown_ms: None,
            });
            self.flush_frames(frame);
        }
    }

    /// Work handed out in `frame`: by its decision, or between frames (CPU work handed out as
    /// a worker finished, `render/cpu_lane.rs`).
    pub fn handed_out(&mut self, frame: u64, gpu: &[GpuWork], cpu: &[CpuWork]) {
        let pieces = gpu
            .iter()
            .map(|g| (g.id, g.model, g.ops.clone(), true))
            .chain(cpu.iter().map(|c| (c.id, c.model, c.ops.clone(), false)));
        for (id, model, ops, on_gpu) in pieces {
            let inference = self.admitted.get(&model).copied().unwrap_or(0);
            self.works.insert(
                id,
                WorkInfo {
                    model,
                    ops,
                    gpu: on_gpu,
                    inference,
                    frame,
                },
            );
            if self.recording {
                let open = self.open_inference(model, inference);
                open.outstanding += 1;
                open.last_piece = Some((frame, on_gpu));
            }
        }
    }

    /// Render-world frame `frame` reaches the screen at `ms` (a display layer's presentation
    /// time, on the plugin's clock).
    pub fn shown(&mut self, frame: u64, ms: f64) {
        if let Some(f) = self.frames.iter_mut().find(|f| f.frame == frame) {
            f.shown_ms = Some(ms);
        }
    }

    /// The scene of render-world frame `frame` took `ms` on the GPU.
    pub fn scene(&mut self, frame: u64, ms: f64) {
        if let Some(f) = self.frames.iter_mut().find(|f| f.frame == frame) {
            f.scene_ms = Some(ms);
        }
    }

    /// Render-world frame `frame`'s DNN work and scene were submitted `dnn_ms` and `scene_ms`
    /// after its start (from the render thread's phases).
    pub fn submits(&mut self, frame: u64, dnn_ms: f64, scene_ms: f64) {
        if let Some(f) = self.frames.iter_mut().find(|f| f.frame == frame) {
            f.submits = Some((dnn_ms, scene_ms));
        }
    }

    /// Work `id` ran from `start_ms` to `end_ms` (a zero span: it did not run).
    pub fn work_done(&mut self, id: WorkId, start_ms: f64, end_ms: f64) {
        let Some(w) = self.works.remove(&id) else {
            return;
        };
        if !self.recording {
            return;
        }
        if w.gpu
            && end_ms > start_ms
            && let Some(f) = self.frames.iter_mut().find(|f| f.frame == w.frame)
        {
            *f.dnn_gpu_ms.get_or_insert(0.0) += end_ms - start_ms;
        }
        let open = self.open_inference(w.model, w.inference);
        open.outstanding = open.outstanding.saturating_sub(1);
        if end_ms > start_ms {
            open.pieces.push((w.ops, end_ms - start_ms, w.gpu));
        }
        self.flush_inferences(w.model);
    }

    /// The coordinator completed an inference.
    pub fn completed(&mut self, c: Option<Completion>) {
        let Some(c) = c else { return };
        self.latencies.push((c.model, c.latency_ms()));
        if !self.recording {
            return;
        }
        let n = self.admitted.get(&c.model).copied().unwrap_or(0);
        let measure = self.measure_readback;
        let open = self.open_inference(c.model, n);
        open.completed = true;
        if let (true, Some((frame, true))) = (measure, open.last_piece)
            && let Some(f) = self.frames.iter_mut().find(|f| f.frame == frame)
        {
            f.reads.push((c.model, c.finished_ms));
        }
        self.flush_inferences(c.model);
    }

    fn open_inference(&mut self, model: ModelId, n: u64) -> &mut OpenInference {
        let q = self.open.entry(model).or_default();
        let at = match q.iter().position(|(k, _)| *k >= n) {
            Some(i) if q[i].0 == n => i,
            Some(i) => {
                q.insert(i, (n, OpenInference::default()));
                i
            }
            None => {
                q.push_back((n, OpenInference::default()));
                q.len() - 1
            }
        };
        &mut q[at].1
    }

    /// Hands `model`'s leading inferences that completed and fully reported to the recorder.
    fn flush_inferences(&mut self, model: ModelId) {
        let (true, Some(q)) = (self.recording, self.open.get_mut(&model)) else {
            return;
        };
        let r = &mut self.recorder;
        while q.len() > OPEN_INFERENCES {
            q.pop_front();
        }
        while q
            .front()
            .is_some_and(|(_, o)| o.completed && o.outstanding == 0)
        {
            let (_, o) = q.pop_front().expect("front exists");
            for (ops, ms, gpu) in o.pieces {
                if gpu {
                    r.gpu_chunk(model, ops, ms);
                } else {
                    r.cpu_chunk(model, ops, ms);
                }
            }
            r.finished(model);
        }
    }

    /// Hands the frames whose scene time came back, or can no longer come, to the recorder.
    fn flush_frames(&mut self, now_frame: u64) {
        if !self.recording {
            return;
        }
        let r = &mut self.recorder;
        while let Some(f) = self.frames.front() {
            if f.scene_ms.is_none() && f.frame.saturating_add(SCENE_HORIZON) >= now_frame {
                break;
            }
            // The GPU as the simulator models it: the frame's DNN work starts at its submission
            // or when the frames before it have left the GPU, whichever is later, and runs for
            // its chunks' GPU time; the scene follows it. The readback counts from the end of
            // that DNN work (counting the wait for the frames before in the readback too would
            // charge it twice in the simulator, which queues the work behind them).
            let (dnn_submit, scene_submit) = f.submits.unwrap_or((0.0, 0.0));
            let dnn_end =
                (f.start_ms + dnn_submit).max(self.gpu_free_ms) + f.dnn_gpu_ms.unwrap_or(0.0);
            let scene_start = (f.start_ms + scene_submit).max(dnn_end);
            self.gpu_free_ms = scene_start + f.scene_ms.unwrap_or(0.0);
            let (mut sum, mut count) = (0.0, 0usize);
            // This frame's readbacks are the ones appended to `measured_readbacks` below.
            let first = self.measured_readbacks.len();
            if f.submits.is_some() && f.dnn_gpu_ms.is_some() {
                let end = dnn_end;
                for (model, ms) in f.reads.iter().map(|(m, read)| (*m, read - end)) {
                    if !(ms.is_finite() && ms >= 0.0) {
                        continue;
                    }
                    (sum, count) = (sum + ms, count + 1);
                    self.measured_readbacks.push((model, ms));
                    if self.readbacks.len() < READBACK_SAMPLES {
                        self.readbacks.push(ms);
                    } else {
                        self.readbacks[self.readbacks_seen % READBACK_SAMPLES] = ms;
                    }
                    self.readbacks_seen += 1;
                }
            }
            r.frame_read(
                f.start_ms,
                f.scene_ms,
                f.submits.map(|s| s.0),
                f.submits.map(|s| s.1),
                (count > 0).then(|| sum / count as f64),
            );
            for &(model, ms) in &self.measured_readbacks[first..] {
                r.model_read(model, ms);
            }
            if let Some(ms) = f.shown_ms {
                r.shown(ms);
            }
            self.frames.pop_front();
        }
    }
}

/// The median of `v`, if it has any value.
fn median(v: &[f64]) -> Option<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    (n > 0).then(|| 0.5 * (s[(n - 1) / 2] + s[n / 2]))
}

#[cfg(test)]
pub(crate) mod tests {
    use heimdall_coordinator::{FrameBudget, Request, StepCost, UtilityParams};

    use super::*;

    /// GPU work `id` of `model`'s `ops` (1 ms estimated).
    pub(crate) fn gpu(id: u64, model: ModelId, ops: Range<usize>) -> GpuWork {
        GpuWork {
            id: WorkId(id),
            model,
            ops,
            est_ms: 1.0,
            planned_start_ms: 0.0,
            oversized: false,
            deadline_override: false,
        }
    }

    fn done(model: ModelId) -> Option<Completion> {
        Some(Completion {
            model,
            request: Request {
                capture_ms: 0.0,
                content_variation: 0.0,
            },
            admitted_ms: 0.0,
            finished_ms: 1.0,
            deadline_met: None,
            offloaded: false,
        })
    }

    /// Each step's times in the exported replay, per inference, as sums.
    fn runs(log: &mut RunLog, name: &str) -> Vec<f64> {
        let (_, replay) = log.export().expect("recording");
        let r: serde_json::Value = serde_json::from_str(&replay).unwrap();
        r["models"][name]["gpu_step_ms"]
            .as_array()
            .map(|runs| {
                runs.iter()
                    .map(|run| {
                        run.as_array()
                            .unwrap()
                            .iter()
                            .filter_map(|v| v.as_f64())
                            .sum()
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The plugin reads an inference's outputs before its chunks' timestamps come back: the
    /// chunk times reported after the completion still go to that inference, and the next
    /// inference's to the next, in order; the coordinator's latency of each is kept for the
    /// main world. A model replaced by a guarded one (`retire`) is not exported.
    #[test]
    fn chunk_times_after_the_completion_go_to_their_inference() {
        let cfg = CoordinatorConfig::new(FrameBudget::new(60.0, 2.0, 1.0, 0.5));
        let m = ModelId(0);
        let steps = vec![StepCost::gpu_and_cpu(1.0, 4.0); 2];
        let mut log = RunLog::new(&cfg);
        log.recorder
            .add_model(m, "m", &steps, Some(50.0), UtilityParams::default());
        log.start(&cfg, true, true);
        for (k, frame) in [(1u64, 0u64), (2, 1)] {
            log.request(m, frame as f64 * 16.0, 0.0);
            log.admitted(m);
            log.planned(frame, frame as f64 * 16.0, &[gpu(k, m, 0..2)], &[]);
            log.submits(frame, 1.0, 3.0);
            log.completed(done(m));
            assert_eq!(log.latencies.len(), k as usize, "a latency per completion");
        }
        // Timestamps come back late, and the second inference's first.
        log.work_done(WorkId(2), 20.0, 22.5);
        log.scene(0, 2.0);
        log.scene(1, 2.0);
        assert!(
            runs(&mut log, "m").is_empty(),
            "the first is not complete yet"
        );
        log.work_done(WorkId(1), 3.0, 4.5);
        assert_eq!(runs(&mut log, "m"), vec![1.5, 2.5]);

        log.recorder.remove_model(m);
        let (scenario, _) = log.export().unwrap();
        assert!(!scenario.contains("\"m\""), "{scenario}");
    }

    /// The CPU lane's lends while recording become the scenario's `cpu_lend_ms` (their mean);
    /// one before the recording starts, or of no length that makes sense, does not count.
    #[test]
    fn the_lends_mean_is_the_scenarios_cpu_lend() {
        let cfg = CoordinatorConfig::new(FrameBudget::new(60.0, 2.0, 1.0, 0.5));
        let mut log = RunLog::new(&cfg);
        log.recorder.add_model(
            ModelId(0),
            "m",
            &[StepCost::gpu_and_cpu(1.0, 4.0)],
            None,
            UtilityParams::default(),
        );
        log.lent_for(100.0);
        log.start(&cfg, true, true);
        for ms in [2.0, 4.0, f64::NAN, -1.0, 6.0] {
            log.lent_for(ms);
        }
        let (scenario, _) = log.export().unwrap();
        let v: serde_json::Value = serde_json::from_str(&scenario).unwrap();
        assert_eq!(v["cpu_lend_ms"].as_f64(), Some(4.0), "{scenario}");
    }

    /// The readback of a GPU inference: from the end of its frame's DNN submission as the
    /// simulator has it (submitted 1 ms after the frame's start, its two chunks 1 and 1.5 ms of
    /// GPU time, the 0.5 ms between them left out) to its outputs read (4.1 ms after the
    /// start): 0.6 ms, the scenario's `readback_ms`. An inference whose last
    /// piece ran on the CPU is no readback; nor is anything when the DNN work goes after the
    /// scene (its outputs wait for the whole frame).
    #[test]
    fn the_readback_is_measured_from_the_submissions_gpu_end() {
        let cfg = CoordinatorConfig::new(FrameBudget::new(60.0, 2.0, 1.0, 0.5));
        let (m, c) = (ModelId(0), ModelId(1));
        let steps = vec![StepCost::gpu_and_cpu(1.0, 4.0); 2];
        for (work_first, expected) in [(true, Some(0.6)), (false, None)] {
            let mut log = RunLog::new(&cfg);
            for (id, name) in [(m, "m"), (c, "c")] {
                log.recorder
                    .add_model(id, name, &steps, None, UtilityParams::default());
            }
            log.start(&cfg, work_first, true);
            for frame in 0..3u64 {
                let t = frame as f64 * 16.0;
                log.request(m, t, 0.0);
                log.request(c, t, 0.0);
                log.admitted(m);
                log.admitted(c);
                let cpu = CpuWork {
                    id: WorkId(100 + frame),
                    model: c,
                    ops: 0..2,
                    est_ms: 8.0,
                    threads: 1,
                    offloaded: true,
                    resume: heimdall_coordinator::Resume::Input,
                };
                let works = [gpu(frame, m, 0..1), gpu(50 + frame, m, 1..2)];
                log.planned(frame, t, &works, &[cpu]);
                log.submits(frame, 1.0, 3.0);
                let finished = |model, at| {
                    done(model).map(|d| Completion {
                        finished_ms: at,
                        ..d
                    })
                };
                log.completed(finished(m, t + 4.1));
                log.completed(finished(c, t + 9.0));
                // Timestamps on the plugin's clock: encoded at t + 0.5.
                log.work_done(WorkId(frame), t + 10.0, t + 11.0);
                log.work_done(WorkId(50 + frame), t + 11.5, t + 13.0);
                log.work_done(WorkId(100 + frame), t + 1.0, t + 9.0);
                log.scene(frame, 2.0);
            }
            let (scenario, replay) = log.export().unwrap();
            let s: serde_json::Value = serde_json::from_str(&scenario).unwrap();
            let readback = s["readback_ms"].as_f64().unwrap_or(0.0);
            // Each frame's own readback is in the replay too.
            let r: serde_json::Value = serde_json::from_str(&replay).unwrap();
            let per_frame: Vec<f64> = r["readback_ms"]
                .as_array()
                .map(|a| a.iter().filter_map(|v| v.as_f64()).collect())
                .unwrap_or_default();
            match expected {
                Some(ms) => {
                    assert!((readback - ms).abs() < 1e-9, "{readback}");
                    assert!(!per_frame.is_empty(), "{r}");
                    assert!(per_frame.iter().all(|v| (v - ms).abs() < 1e-9), "{r}");
                }
                None => {
                    assert_eq!(readback, 0.0);
                    assert!(per_frame.is_empty(), "{r}");
                }
            }
            assert_eq!(log.readbacks.len(), if work_first { 3 } else { 0 });
        }
    }

    /// A frame's DNN work queued behind the frame before on the GPU: frame 0's DNN work (1 ms
    /// after its start, 2.5 ms of GPU time) ends at 3.5 ms, its scene (submitted at 3 ms) runs
    /// 20 ms to 23.5; frame 1's DNN work, submitted at 17 ms, starts there and ends at 26 ms, and
    /// its outputs read at 26.6 ms are a 0.6 ms readback, as frame 0's (counted from the
    /// submission, 19.5 ms, it would be 7.1 ms: the wait the simulator models again).
    #[test]
    fn the_readback_counts_from_the_work_queued_behind_the_frame_before() {
        let cfg = CoordinatorConfig::new(FrameBudget::new(60.0, 2.0, 1.0, 0.5));
        let m = ModelId(0);
        let steps = vec![StepCost::gpu_and_cpu(1.0, 4.0); 2];
        let mut log = RunLog::new(&cfg);
        log.recorder
            .add_model(m, "m", &steps, None, UtilityParams::default());
        log.start(&cfg, true, true);
        for (frame, read) in [(0u64, 4.1), (1, 26.6)] {
            let t = frame as f64 * 16.0;
            log.request(m, t, 0.0);
            log.admitted(m);
            log.planned(
                frame,
                t,
                &[gpu(frame, m, 0..1), gpu(50 + frame, m, 1..2)],
                &[],
            );
            log.submits(frame, 1.0, 3.0);
            log.completed(done(m).map(|d| Completion {
                finished_ms: read,
                ..d
            }));
            log.work_done(WorkId(frame), t + 10.0, t + 11.0);
            log.work_done(WorkId(50 + frame), t + 11.5, t + 13.0);
            log.scene(frame, 20.0);
        }
        let (_, replay) = log.export().unwrap();
        let r: serde_json::Value = serde_json::from_str(&replay).unwrap();
        for k in 0..2 {
            let ms = r["readback_ms"][k].as_f64().unwrap();
            assert!((ms - 0.6).abs() < 1e-9, "frame {k}: {ms}");
            // The model's own readback in the frame, as the replay carries it.
            let own = r["models"]["m"]["readback_ms"][k].as_f64();
            assert!(
                own.is_some_and(|ms| (ms - 0.6).abs() < 1e-9),
                "frame {k}: {own:?}"
            );
        }
    }

    /// Frames reach the recorder in order, each with its scene time and submission delays once
    /// known; a frame whose timestamps never come back goes without its scene time after the
    /// horizon.
    #[test]
    fn frames_go_in_order_with_what_was_measured() {
        let cfg = CoordinatorConfig::new(FrameBudget::new(60.0, 2.0, 1.0, 0.5));
        let m = ModelId(0);
        let mut log = RunLog::new(&cfg);
        log.recorder.add_model(
            m,
            "m",
            &[StepCost::gpu_and_cpu(1.0, 4.0)],
            None,
            UtilityParams::default(),
        );
        log.start(&cfg, true, true);
        for f in 0..20u64 {
            log.request(m, f as f64 * 16.0, 0.0);
            log.planned(f, f as f64 * 16.0 + 0.25, &[], &[]);
            log.submits(f, 1.0, 4.0);
            // Blanks 7 ms after the first frame's start, on the 60 Hz grid.
            log.shown(f, f as f64 * 1000.0 / 60.0 + 7.25);
            if f != 3 {
                log.scene(f, 2.0 + f as f64);
            }
        }
        let (scenario, replay) = log.export().unwrap();
        let r: serde_json::Value = serde_json::from_str(&replay).unwrap();
        let starts: Vec<f64> = r["frame_start_ms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(starts.len(), 20);
        assert!(starts.windows(2).all(|w| (w[1] - w[0] - 16.0).abs() < 1e-9));
        let render = r["render_ms"].as_array().unwrap();
        assert_eq!(render[4].as_f64(), Some(6.0));
        // Frame 3's scene never came: the median stands in.
        assert_eq!(render[3].as_f64(), Some(12.0));
        assert_eq!(r["dnn_submit_ms"][5].as_f64(), Some(1.0));
        assert_eq!(r["scene_submit_ms"][5].as_f64(), Some(4.0));
        let phase = r["vsync_phase_ms"].as_f64().unwrap();
        assert!((phase - 7.0).abs() < 1e-9, "{phase}");
        // Frame 5 started at 80.25 ms and is shown at 5 periods + 7.25 ms.
        let present = r["present_ms"][5].as_f64().unwrap();
        assert!(
            (present - (5.0 * 1000.0 / 60.0 + 7.0 - 80.0)).abs() < 1e-9,
            "{present}"
        );
        let s: serde_json::Value = serde_json::from_str(&scenario).unwrap();
        assert_eq!(s["dnn_work_first"], true);
        // The first request was captured before the window's first frame started: left out.
        let events = s["dnns"][0]["request"]["events_ms"].as_array().unwrap();
        assert_eq!(events.len(), 19);
    }
}
