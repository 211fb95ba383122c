//! The offload rule the placement planner replaced ([`crate::placement`]), kept as a baseline
//! ([`crate::placement::PlacementRule::OffloadRule`]): opportunistic CPU offload (Heimdall sec.
//! 6.3.2, 6.4), "GPU first, CPU when it helps": which model moves between GPU and CPU.
//!
//! Evaluated about once a second. At most one switch per evaluation:
//! 1. **Offload** only when the GPU cannot meet the deadlines: some model on the GPU has a
//!    deadline that its GPU latency `L` exceeds (the longest of the last observed, those of the
//!    last interval and the running job's age; the expected latency before any was observed), or
//!    comes within the margin of, `L * (1 + m) > deadline`, on a saturated GPU (the DNNs used at
//!    least `saturation` of the GPU time the frames leave them); or the GPU is saturated while a
//!    model without a deadline runs there. Then, as in the paper, the model with the highest `L` moves if the CPU
//!    helps, `c * (1 + m) < L` for its CPU latency `c`, and, if it has a deadline, the CPU meets it,
//!    `c * (1 + m) <= deadline` (and a worker can be spared).
//! 2. Otherwise **bring back** a model on the CPU when the GPU can have it again: when its CPU
//!    time exceeds `(1 + m)` times its expected GPU latency, or, for a model with a deadline, when
//!    no model on the GPU is late, the GPU would not be saturated with the model's GPU demand
//!    added, and its expected GPU latency meets the deadline with the margin,
//!    `expected * (1 + m) <= deadline` ("GPU first"). Among those, the one whose CPU time is
//!    largest against its expected GPU latency.
//!
//! The paper compares with the *last* GPU latency; measured under the overload that caused the
//! offload, that value would never let a model come back once the GPU frees up. The expected GPU
//! latency used here is the last one re-estimated for the current GPU load: the model's GPU time
//! divided by the share of the DNN budget the other models left free in the last interval, plus
//! one frame. The margin `m` is applied on both sides, so that a model does not ping-pong.

use crate::model::ModelId;
use crate::processor::Processor;

/// What the offload decision needs to know about one model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OffloadView {
    /// The model.
    pub model: ModelId,
    /// Where its inferences run now.
    pub mode: Processor,
    /// Observed GPU latency (the longest of the last one, those finished in the last interval and
    /// the running job's age); `None` if never observed.
    pub gpu_latency_ms: Option<f64>,
    /// Expected GPU latency under the current GPU load.
    pub expected_gpu_latency_ms: f64,
    /// CPU latency (observed, or the profile's CPU total).
    pub cpu_latency_ms: f64,
    /// Relative deadline, if any.
    pub deadline_ms: Option<f64>,
    /// Share of the GPU's time the model needs there: its GPU time per inference over the
    /// interval between its requests.
    pub gpu_demand: f64,
}

/// How busy the GPU was with DNN work in the last interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuLoad {
    /// GPU time of the models on the GPU, as a share of the interval.
    pub util: f64,
    /// The share the frames leave to the DNNs (frame budget over frame period).
    pub capacity: f64,
    /// Share of the capacity above which the GPU counts as saturated.
    pub saturation: f64,
}

impl GpuLoad {
    /// Whether the DNNs used the GPU's capacity.
    pub fn saturated(&self) -> bool {
        self.util >= self.saturation * self.capacity
    }
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
pub fn decide(
    views: &[OffloadView],
    margin: f64,
    max_on_cpu: usize,
    load: GpuLoad,
) -> Option<Switch> {
    let on_cpu = views.iter().filter(|v| v.mode == Processor::Cpu).count();
    let saturated = load.saturated();
    let latency = |v: &OffloadView| v.gpu_latency_ms.unwrap_or(v.expected_gpu_latency_ms);
    // Late, or at risk: within the margin of the deadline on a saturated GPU.
    let late = |v: &OffloadView| {
        v.deadline_ms.is_some_and(|d| {
            let l = latency(v);
            l > d || (saturated && l * (1.0 + margin) > d)
        })
    };
    let on_gpu = || views.iter().filter(|v| v.mode == Processor::Gpu);
    let any_late = on_gpu().any(late);
    let cannot_meet = any_late || (saturated && on_gpu().any(|v| v.deadline_ms.is_none()));
    if cannot_meet && on_cpu < max_on_cpu {
        let cpu = |v: &OffloadView| v.cpu_latency_ms * (1.0 + margin);
        let worst = on_gpu()
            .filter(|v| v.gpu_latency_ms.is_some() || v.deadline_ms.is_some())
            .filter(|v| cpu(v) < latency(v) && v.deadline_ms.is_none_or(|d| cpu(v) <= d))
            .max_by(|a, b| latency(a).total_cmp(&latency(b)));
        if let Some(v) = worst {
            return Some(Switch {
                model: v.model,
                to: Processor::Cpu,
            });
        }
    }
    let fits = |v: &OffloadView| {
        v.deadline_ms.is_some_and(|d| {
            !any_late
                && load.util + v.gpu_demand < load.saturation * load.capacity
                && v.expected_gpu_latency_ms * (1.0 + margin) <= d
        })
    };
    views
        .iter()
        .filter(|v| v.mode == Processor::Cpu)
        .map(|v| (v, v.cpu_latency_ms / v.expected_gpu_latency_ms.max(1e-9)))
        .filter(|&(v, ratio)| fits(v) || ratio > 1.0 + margin)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(v, _)| Switch {
            model: v.model,
            to: Processor::Gpu,
        })
}
