//! Opportunistic CPU offload (Heimdall sec. 6.3.2, 6.4): which model moves between GPU and CPU.
//!
//! Evaluated about once a second. At most one switch per evaluation:
//! 1. Among the models on the GPU, take the one with the highest observed latency `L`; move it to
//!    the CPU if its CPU time `c` satisfies `c * (1 + m) < L` (and a worker can be spared).
//! 2. Otherwise, bring back the model on the CPU whose CPU time exceeds `(1 + m)` times its
//!    expected GPU latency the most.
//!
//! The paper compares with the *last* GPU latency; measured under the overload that caused the
//! offload, that value would never let a model come back once the GPU frees up. The expected GPU
//! latency used here is the last one re-estimated for the current GPU load: the model's GPU time
//! divided by the share of the DNN budget the other models left free in the last interval, plus
//! one frame. Moving back and forth needs `L > (1 + m)^2 * expected`, so the margin `m` prevents
//! ping-pong.

use crate::model::ModelId;
use crate::processor::Processor;

/// Offload settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OffloadConfig {
    /// Whether offload runs at all.
    pub enabled: bool,
    /// Evaluation period, ms (about a second: switching a model's processor is not free).
    pub interval_ms: f64,
    /// Margin `m` against ping-pong.
    pub margin: f64,
}

impl Default for OffloadConfig {
    fn default() -> Self {
        OffloadConfig {
            enabled: true,
            interval_ms: 1000.0,
            margin: 0.2,
        }
    }
}

/// What the offload decision needs to know about one model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OffloadView {
    /// The model.
    pub model: ModelId,
    /// Where its inferences run now.
    pub mode: Processor,
    /// Observed GPU latency (the last one, or the running job's age if larger); `None` if never
    /// observed.
    pub gpu_latency_ms: Option<f64>,
    /// Expected GPU latency under the current GPU load.
    pub expected_gpu_latency_ms: f64,
    /// CPU latency (observed, or the profile's CPU total).
    pub cpu_latency_ms: f64,
}

/// A change of processor for one model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switch {
    /// The model.
    pub model: ModelId,
    /// Where it goes.
    pub to: Processor,
}

/// The switch to make now, if any. `max_on_cpu` bounds how many models may be on the CPU.
pub fn decide(views: &[OffloadView], margin: f64, max_on_cpu: usize) -> Option<Switch> {
    let on_cpu = views.iter().filter(|v| v.mode == Processor::Cpu).count();
    let worst = views
        .iter()
        .filter(|v| v.mode == Processor::Gpu)
        .filter_map(|v| v.gpu_latency_ms.map(|l| (v, l)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((v, l)) = worst
        && on_cpu < max_on_cpu
        && v.cpu_latency_ms * (1.0 + margin) < l
    {
        return Some(Switch {
            model: v.model,
            to: Processor::Cpu,
        });
    }
    views
        .iter()
        .filter(|v| v.mode == Processor::Cpu)
        .map(|v| (v, v.cpu_latency_ms / v.expected_gpu_latency_ms.max(1e-9)))
        .filter(|(_, ratio)| *ratio > 1.0 + margin)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(v, _)| Switch {
            model: v.model,
            to: Processor::Gpu,
        })
}
