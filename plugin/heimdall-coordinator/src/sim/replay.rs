//! Replayed measurements: the render and step times of an app run, fed to the simulator in
//! place of the scenario's times (format in `assets/scenarios/README.md`).
//!
//! ```json
//! { "format": "heimdall-replay/1",
//!   "render_ms": [2.71, 2.69, 2.80],
//!   "models": { "face": { "gpu_step_ms": [[0.41, 1.2, null], [0.39, 1.3, null]],
//!                         "cpu_step_ms": [[null, null, 0.61]] } } }
//! ```
//!
//! Frame `f` renders in `render_ms[f % len]`; inference `k` of a model runs step `i` in
//! `gpu_step_ms[k % runs][i]` on the GPU and `cpu_step_ms[k % runs][i]` on the CPU. A `null`, a
//! missing list or a missing model falls back to the scenario's time.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::scenario::{Decisions, MAX_FRAMES, MAX_REQUESTS, Scenario};

/// The format tag of a replay file.
pub const REPLAY_FORMAT: &str = "heimdall-replay/1";

/// Errors reading or applying a replay. Messages name the field.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Not JSON, an unknown field, or a value of the wrong type.
    #[error("bad replay JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A value is out of range or does not match the scenario.
    #[error("bad replay: `{field}` {problem}")]
    Invalid {
        /// Path of the field, e.g. `models.face.gpu_step_ms[2][7]`.
        field: String,
        /// What is wrong.
        problem: String,
    },
}

/// Measured times of one model: per inference, per step (ms; `None` where not measured).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelTrace {
    /// GPU time of each step, one list per measured inference.
    #[serde(default)]
    pub gpu_step_ms: Vec<Vec<Option<f64>>>,
    /// CPU time of each step, one list per measured inference.
    #[serde(default)]
    pub cpu_step_ms: Vec<Vec<Option<f64>>>,
    /// Per frame (cycled, as the replay's `readback_ms`), with per-frame decisions: the measured
    /// readback of this model's GPU inference whose last chunk was in the frame's submission, ms
    /// (`null`: none there). A frame's models are read one after another, so one with small
    /// outputs read beside a large one waits longer than it: the simulator takes this model's
    /// own readback where the frame has one, else the frame's mean (`readback_ms`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readback_ms: Vec<Option<f64>>,
    /// Per inference (indexed as the step lists, cycled), for a DNN with a convolution cache
    /// (the scenario's `conv_cache`): the hit rate its run reported to the coordinator
    /// (`Coordinator::report_cache_hits`, in `[0, 1]`; `null`: none, e.g. it ran on the CPU).
    /// Where the list has none for an inference that ends on the GPU in the simulation, the
    /// scenario's `conv_cache.hit_rate` is reported. Recordings made before 2026-12-02 have
    /// none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cache_hit: Vec<Option<f64>>,
}

/// The measured times of an app run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replay {
    /// Must be [`REPLAY_FORMAT`].
    pub format: String,
    /// Render time of each frame, ms (cycled; empty: the scenario's).
    #[serde(default)]
    pub render_ms: Vec<f64>,
    /// Per model (by scenario name).
    #[serde(default)]
    pub models: BTreeMap<String, ModelTrace>,
    /// Per frame (cycled; empty: 0), with per-frame decisions: how long after the frame's start
    /// (its decision) the frame's DNN work reached the GPU queue, ms (the plugin records and
    /// submits it on the render thread; `null`: not measured, 0).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dnn_submit_ms: Vec<Option<f64>>,
    /// Per frame, likewise: how long after the frame's start its scene reached the GPU queue.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scene_submit_ms: Vec<Option<f64>>,
    /// With per-frame decisions, when each frame started, ms from the first one (the app's
    /// frame loop is not a perfect clock); frames past the list start on the grid of periods.
    /// Must not decrease.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frame_start_ms: Vec<f64>,
    /// Where the display's vertical blanks fall: ms after the first frame's start, modulo the
    /// frame period (measured: the circular mean of the presentation times the app's display
    /// layer gave). The simulator's display model shows each frame at the first blank at or
    /// after its render's end. Left out: the blanks fall on the frame grid (0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vsync_phase_ms: Option<f64>,
    /// Per frame (cycled), with per-frame decisions: the measured readback of the GPU
    /// inferences whose last chunk was in the frame's submission, from that submission's end to
    /// their outputs read, ms (`null`: none ended there; then, and past an empty list, the
    /// scenario's `readback_ms`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readback_ms: Vec<Option<f64>>,
    /// Per frame, with per-frame decisions: when the app's display layer presents the frame, ms
    /// after its start (`null`: not recorded). A FIFO swap chain assigns a frame the blank after
    /// the frames queued before it, counting its submission, not its GPU work: where a recording
    /// has these times, the display model shows frame `k` at the first blank at or after both
    /// its presentation and its render's end, and one frame per blank, as the app's
    /// `swapchain.after_gpu` book does. Not cycled: frames past the list, or `null`, are shown at
    /// the first blank after their render's end.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub present_ms: Vec<Option<f64>>,
}

impl Default for Replay {
    /// A replay of nothing in the current format: every time falls back to the scenario's.
    fn default() -> Self {
        Replay {
            format: REPLAY_FORMAT.to_string(),
            render_ms: Vec::new(),
            models: BTreeMap::new(),
            dnn_submit_ms: Vec::new(),
            scene_submit_ms: Vec::new(),
            frame_start_ms: Vec::new(),
            vsync_phase_ms: None,
            readback_ms: Vec::new(),
            present_ms: Vec::new(),
        }
    }
}

fn invalid(field: String, problem: &str) -> ReplayError {
    ReplayError::Invalid {
        field,
        problem: problem.into(),
    }
}

impl Replay {
    /// Parses a replay (checked against a scenario with [`Replay::check`]).
    pub fn from_json(text: &str) -> Result<Self, ReplayError> {
        let r: Replay = serde_json::from_str(text)?;
        if r.format != REPLAY_FORMAT {
            return Err(invalid("format".into(), "must be \"heimdall-replay/1\""));
        }
        Ok(r)
    }

    /// Reads and parses a replay file.
    pub fn from_file(path: &Path) -> Result<Self, ReplayError> {
        let text = std::fs::read_to_string(path).map_err(|e| ReplayError::Io {
            path: path.display().to_string(),
            source: e,
        })?;
        Self::from_json(&text)
    }

    /// The replay as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a replay always serialises")
    }

    /// Checks that every model is in `scenario` with as many steps as each list has, and that
    /// every time is finite and >= 0.
    pub fn check(&self, scenario: &Scenario) -> Result<(), ReplayError> {
        for (k, &t) in self.render_ms.iter().enumerate() {
            if !(t.is_finite() && t >= 0.0) {
                return Err(invalid(
                    format!("render_ms[{k}]"),
                    "must be finite and >= 0",
                ));
            }
        }
        for (lane, v) in [
            ("dnn_submit_ms", &self.dnn_submit_ms),
            ("scene_submit_ms", &self.scene_submit_ms),
            ("readback_ms", &self.readback_ms),
            ("present_ms", &self.present_ms),
        ] {
            for (k, t) in v.iter().enumerate() {
                if t.is_some_and(|t| !(t.is_finite() && t >= 0.0)) {
                    return Err(invalid(format!("{lane}[{k}]"), "must be finite and >= 0"));
                }
            }
        }
        let period = 1000.0 / scenario.frame_rate;
        if self
            .vsync_phase_ms
            .is_some_and(|p| !(p.is_finite() && p >= 0.0 && p < period))
        {
            return Err(invalid(
                "vsync_phase_ms".into(),
                "must be finite, >= 0 and below the frame period",
            ));
        }
        let mut prev = 0.0;
        for (k, &t) in self.frame_start_ms.iter().enumerate() {
            if !(t.is_finite() && t >= prev) {
                return Err(invalid(
                    format!("frame_start_ms[{k}]"),
                    "must be finite, >= 0 and not below the one before",
                ));
            }
            prev = t;
        }
        self.check_window(scenario)?;
        for (name, m) in &self.models {
            let Some(d) = scenario.dnns.iter().find(|d| &d.name == name) else {
                return Err(invalid(
                    format!("models.{name}"),
                    "is not a DNN of the scenario",
                ));
            };
            for (k, t) in m.readback_ms.iter().enumerate() {
                if t.is_some_and(|t| !(t.is_finite() && t >= 0.0)) {
                    return Err(invalid(
                        format!("models.{name}.readback_ms[{k}]"),
                        "must be finite and >= 0",
                    ));
                }
            }
            for (k, h) in m.cache_hit.iter().enumerate() {
                if h.is_some_and(|h| !(0.0..=1.0).contains(&h)) {
                    return Err(invalid(
                        format!("models.{name}.cache_hit[{k}]"),
                        "must be in [0, 1]",
                    ));
                }
            }
            for (lane, runs) in [
                ("gpu_step_ms", &m.gpu_step_ms),
                ("cpu_step_ms", &m.cpu_step_ms),
            ] {
                for (r, run) in runs.iter().enumerate() {
                    let field = format!("models.{name}.{lane}[{r}]");
                    if run.len() != d.gpu_op_ms.len() {
                        return Err(invalid(
                            field,
                            &format!(
                                "has {} steps; the scenario's model has {}",
                                run.len(),
                                d.gpu_op_ms.len()
                            ),
                        ));
                    }
                    for (i, t) in run.iter().enumerate() {
                        if t.is_some_and(|t| !(t.is_finite() && t >= 0.0)) {
                            return Err(invalid(
                                format!("{field}[{i}]"),
                                "must be finite and >= 0",
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Render time of frame `f`, if replayed.
    pub fn render(&self, f: usize) -> Option<f64> {
        (!self.render_ms.is_empty()).then(|| self.render_ms[f % self.render_ms.len()])
    }

    /// Where the display's blanks fall in the period, ms (0 where not replayed).
    pub fn vsync_phase(&self) -> f64 {
        self.vsync_phase_ms.unwrap_or(0.0)
    }

    /// The window these frame starts make (per frame, [`Self::window_end_ms`]) keeps the
    /// scenario's bounds on vsyncs and periodic requests: a frame start far past the duration
    /// must not ask the simulator for unbounded memory.
    fn check_window(&self, scenario: &Scenario) -> Result<(), ReplayError> {
        if scenario.decisions != Decisions::PerFrame {
            return Ok(());
        }
        let duration_ms = scenario.duration_s * 1000.0;
        let period_ms = 1000.0 / scenario.frame_rate;
        let end = self.window_end_ms(duration_ms, period_ms);
        if end <= duration_ms {
            return Ok(());
        }
        let requests_ok = scenario
            .dnns
            .iter()
            .all(|d| d.request.period_ms.is_none_or(|p| end / p <= MAX_REQUESTS));
        if end / period_ms > MAX_FRAMES || !requests_ok {
            return Err(invalid(
                "frame_start_ms".into(),
                "runs so far past duration_s that the window would hold more than 4 000 000 \
                 frames or requests of one DNN",
            ));
        }
        Ok(())
    }

    /// The end of a simulated window of `duration_ms` over these frame starts, ms: the
    /// duration, or, where the frames run past it by more than half a period (`period_ms`; a
    /// recording made before the recorder wrote the whole span of a run whose frames took longer
    /// than their period), a mean interval after the last start (at least a period).
    pub fn window_end_ms(&self, duration_ms: f64, period_ms: f64) -> f64 {
        let Some(&last) = self.frame_start_ms.last() else {
            return duration_ms;
        };
        let n = self.frame_start_ms.len();
        let interval = if n > 1 {
            last / (n - 1) as f64
        } else {
            period_ms
        };
        let spanned = last + interval.max(period_ms);
        if spanned > duration_ms + 0.5 * period_ms {
            spanned
        } else {
            duration_ms
        }
    }

    /// Start of frame `f`, if replayed.
    pub fn frame_start(&self, f: usize) -> Option<f64> {
        self.frame_start_ms.get(f).copied()
    }

    /// Delays of frame `f`'s submissions after its start, ms: (DNN work, scene); 0 where not
    /// replayed.
    pub fn submits(&self, f: usize) -> (f64, f64) {
        let at = |v: &[Option<f64>]| {
            (!v.is_empty())
                .then(|| v[f % v.len()])
                .flatten()
                .unwrap_or(0.0)
        };
        (at(&self.dnn_submit_ms), at(&self.scene_submit_ms))
    }

    /// The measured readback of frame `f`'s GPU inferences, ms, if replayed: `model`'s own
    /// where the frame has it, else the frame's mean.
    pub fn readback(&self, f: usize, model: &str) -> Option<f64> {
        let at = |v: &[Option<f64>]| (!v.is_empty()).then(|| v[f % v.len()]).flatten();
        self.models
            .get(model)
            .and_then(|m| at(&m.readback_ms))
            .or_else(|| at(&self.readback_ms))
    }

    /// When frame `f` is presented, ms after its start, if recorded.
    pub fn present(&self, f: usize) -> Option<f64> {
        self.present_ms.get(f).copied().flatten()
    }

    /// The convolution cache's hit rate that inference `k` of `model` reported, if replayed.
    pub fn cache_hit(&self, model: &str, k: usize) -> Option<f64> {
        let hits = &self.models.get(model)?.cache_hit;
        (!hits.is_empty()).then(|| hits[k % hits.len()]).flatten()
    }

    /// Time of step `i` of inference `k` of `model` on the GPU (`gpu`) or the CPU, if replayed.
    pub fn step(&self, model: &str, gpu: bool, k: usize, i: usize) -> Option<f64> {
        let m = self.models.get(model)?;
        let runs = if gpu { &m.gpu_step_ms } else { &m.cpu_step_ms };
        if runs.is_empty() {
            return None;
        }
        runs[k % runs.len()].get(i).copied().flatten()
    }
}
