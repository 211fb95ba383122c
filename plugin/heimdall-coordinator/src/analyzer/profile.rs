//! Step costs and the per-model latency profile that adapts online (Band sec. 4.3.2).

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::processor::{Processor, ProcessorSet};

/// The cost of one step (one op of the plan) on each processor, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepCost {
    /// GPU time (ignored when the GPU cannot run the step).
    pub gpu_ms: f64,
    /// CPU time on one worker.
    pub cpu_ms: f64,
    /// The processors able to run the step.
    pub processors: ProcessorSet,
}

impl StepCost {
    /// A step both processors can run.
    pub fn gpu_and_cpu(gpu_ms: f64, cpu_ms: f64) -> Self {
        StepCost {
            gpu_ms,
            cpu_ms,
            processors: ProcessorSet::GPU_AND_CPU,
        }
    }

    /// A CPU fallback step (the GPU backend lacks the op).
    pub fn cpu_only(cpu_ms: f64) -> Self {
        StepCost {
            gpu_ms: 0.0,
            cpu_ms,
            processors: ProcessorSet::CPU_ONLY,
        }
    }

    /// The cost on `p`, or `None` when `p` cannot run the step.
    pub fn on(&self, p: Processor) -> Option<f64> {
        if !self.processors.contains(p) {
            return None;
        }
        Some(match p {
            Processor::Gpu => self.gpu_ms,
            Processor::Cpu => self.cpu_ms,
        })
    }
}

/// Estimates unmeasured step times from FLOPs plus a bytes term (Band sec. 4.3.2):
/// `t = ms_per_unit * (flops + beta * bytes)`, calibrated on one measured reference (usually the
/// whole model or its largest subgraph).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostModel {
    /// Milliseconds per unit of `flops + beta * bytes`.
    pub ms_per_unit: f64,
    /// Weight of a byte of tensor traffic relative to one FLOP (Band: 1000 for accelerators, 10
    /// for CPUs).
    pub beta: f64,
}

impl CostModel {
    /// Calibrates on a reference of `flops` and `bytes` that measured `measured_ms`.
    pub fn calibrate(measured_ms: f64, flops: f64, bytes: f64, beta: f64) -> Self {
        let units = (flops + beta * bytes).max(f64::MIN_POSITIVE);
        CostModel {
            ms_per_unit: measured_ms / units,
            beta,
        }
    }

    /// Estimated time of a step with `flops` and `bytes`.
    pub fn estimate_ms(&self, flops: f64, bytes: f64) -> f64 {
        self.ms_per_unit * (flops + self.beta * bytes)
    }
}

/// Errors reading a profile.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The JSON did not parse or did not match the schema.
    #[error("bad profile JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A value is out of range.
    #[error("bad profile: {0}")]
    Invalid(String),
}

/// Per-step costs of one model, refined online with `t <- a*t_new + (1-a)*t`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelProfile {
    /// Model name (for the cache key and reports).
    pub model: String,
    /// Smoothing factor `a` in (0, 1]; about 0.1.
    pub ema_alpha: f64,
    /// Current cost of every step.
    pub steps: Vec<StepCost>,
}

impl ModelProfile {
    /// A profile with the default smoothing factor 0.1.
    pub fn new(model: impl Into<String>, steps: Vec<StepCost>) -> Self {
        ModelProfile {
            model: model.into(),
            ema_alpha: 0.1,
            steps,
        }
    }

    /// Total cost of `ops` on `p` (steps `p` cannot run count as zero).
    pub fn sum(&self, ops: Range<usize>, p: Processor) -> f64 {
        self.steps[ops].iter().filter_map(|s| s.on(p)).sum()
    }

    /// Folds one measurement of a single step into the profile.
    pub fn observe_step(&mut self, op: usize, p: Processor, measured_ms: f64) {
        let a = self.ema_alpha;
        let s = &mut self.steps[op];
        let t = match p {
            Processor::Gpu => &mut s.gpu_ms,
            Processor::Cpu => &mut s.cpu_ms,
        };
        *t = a * measured_ms + (1.0 - a) * *t;
    }

    /// Folds one measurement of a whole range (e.g. a chunk timed by GPU timestamps) into the
    /// profile: the measurement is split over the steps in proportion to their current costs,
    /// then each step is smoothed as by [`ModelProfile::observe_step`].
    pub fn observe_range(&mut self, ops: Range<usize>, p: Processor, measured_ms: f64) {
        let est = self.sum(ops.clone(), p);
        if est <= 0.0 || !measured_ms.is_finite() {
            return;
        }
        let scale = measured_ms / est;
        for op in ops {
            if let Some(t) = self.steps[op].on(p) {
                self.observe_step(op, p, t * scale);
            }
        }
    }

    /// Serialises to JSON (so that a later start can skip profiling).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a profile always serialises")
    }

    /// Reads a profile written by [`ModelProfile::to_json`], checking its values.
    pub fn from_json(text: &str) -> Result<Self, ProfileError> {
        let p: ModelProfile = serde_json::from_str(text)?;
        if !(p.ema_alpha > 0.0 && p.ema_alpha <= 1.0) {
            return Err(ProfileError::Invalid(format!(
                "ema_alpha must be in (0, 1], got {}",
                p.ema_alpha
            )));
        }
        for (i, s) in p.steps.iter().enumerate() {
            if !(s.gpu_ms >= 0.0 && s.cpu_ms >= 0.0 && s.gpu_ms.is_finite() && s.cpu_ms.is_finite())
            {
                return Err(ProfileError::Invalid(format!(
                    "steps[{i}]: times must be finite and >= 0"
                )));
            }
            if s.processors.is_empty() {
                return Err(ProfileError::Invalid(format!(
                    "steps[{i}]: no processor can run it"
                )));
            }
        }
        Ok(p)
    }
}
