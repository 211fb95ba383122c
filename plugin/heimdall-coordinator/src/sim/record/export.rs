//! The export of a recorded window: [`RunRecorder::export`] turns it into a [`Scenario`] and a
//! [`Replay`] of its measured times.

use std::collections::{BTreeMap, HashSet};

use super::{FrameRec, InferenceRec, ModelRec, RunRecorder, nonneg_or};
use crate::analyzer::StepCost;
use crate::processor::Processor;
use crate::sim::export_parts::{median, split, unique_name};
use crate::sim::replay::{ModelTrace, REPLAY_FORMAT, Replay};
use crate::sim::scenario::{
    ConvCacheScenario, Decisions, DnnScenario, MAX_CPU_WORKERS, MAX_FRAMES, RequestPattern,
    Scenario, ScenarioError,
};
use crate::utility::UtilityParams;

impl RunRecorder {
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
        let duration_s = window_s(
            self.frames.len(),
            self.frames.back().map_or(0.0, |f| f.start_ms - t0),
            frame_rate,
        );
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
}

/// The recorded window, s, of `frames` frames at `frame_rate` whose last started `last_start_ms`
/// after the first: their count in periods, or, where the frames took longer than their period
/// (a scene over the frame: the app's loop waits for the GPU) by more than half a period in all,
/// their count in mean intervals. Requests inside it are exported, and the simulator runs to
/// its end.
fn window_s(frames: usize, last_start_ms: f64, frame_rate: f64) -> f64 {
    let nominal = frames as f64 / frame_rate;
    if frames < 2 {
        return nominal;
    }
    let spanned = frames as f64 * last_start_ms / (frames - 1) as f64 / 1000.0;
    if spanned.is_finite() && spanned > nominal + 0.5 / frame_rate {
        // Within the scenario's bound on vsyncs (a clock that jumped), as every export is.
        spanned.min(MAX_FRAMES / frame_rate).max(nominal)
    } else {
        nominal
    }
}
