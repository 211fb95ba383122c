//! What the planner reads (each DNN's [`DnnDemand`], the [`Machine`]) and what it answers (a
//! [`Plan`]: per DNN a [`PlanEntry`], with a [`Shortfall`] where it runs below its request).

use std::fmt;

use serde::Serialize;

use crate::model::ModelId;
use crate::processor::Processor;

/// What the planner knows about one DNN (times in ms; CPU times of the whole inference).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DnnDemand {
    /// The model.
    pub model: ModelId,
    /// GPU time of one inference (its GPU steps).
    pub gpu_ms: f64,
    /// CPU time of the steps the GPU cannot run (the fallback steps), at `cpu_threads`: what an
    /// inference placed on the GPU still asks of the CPU.
    pub fallback_ms: f64,
    /// CPU time of one whole inference on one thread (its profile).
    pub cpu_ms: f64,
    /// Slots the model's CPU backend occupies while it runs (its threads).
    pub cpu_threads: usize,
    /// CPU time of one whole inference at `cpu_threads` threads.
    pub cpu_threaded_ms: f64,
    /// The interval between its requests (an EMA; the frame period for a DNN requested every
    /// frame); `None` for an on-demand DNN (or before its second request).
    pub period_ms: Option<f64>,
    /// Relative deadline, if any.
    pub deadline_ms: Option<f64>,
    /// Its value: the utility's `L0` (ties broken by the model id).
    pub value: f64,
    /// Requested on demand (an event, e.g. a tap): each job takes the processor that answers it
    /// soonest, and its rate is never cut.
    pub on_demand: bool,
    /// Where its new inferences run now.
    pub current: Processor,
    /// Since when it runs there, ms.
    pub since_ms: f64,
    /// Whether it can run on the GPU (it has GPU steps and a GPU model).
    pub gpu_capable: bool,
    /// Whether it can run whole on the CPU (every step has a CPU kernel).
    pub cpu_capable: bool,
}

/// The machine the plan shares out.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Machine {
    /// Frame period, ms.
    pub frame_period_ms: f64,
    /// GPU time each frame leaves to the DNNs (`period - render - margin`), ms; at or below
    /// `chunk_overhead_ms` there is no GPU budget.
    pub gpu_budget_ms: f64,
    /// Fixed cost of one GPU chunk, ms.
    pub chunk_overhead_ms: f64,
    /// CPU slots (cores) the DNNs may use.
    pub cpu_slots: usize,
}

impl Machine {
    /// Whether the frames leave the DNNs any GPU time.
    pub fn has_gpu_budget(&self) -> bool {
        self.gpu_budget_ms > self.chunk_overhead_ms && self.frame_period_ms > 0.0
    }

    /// The GPU's DNN capacity: the share of wall time the frames leave to the DNNs (0 without a
    /// budget).
    pub fn gpu_capacity(&self) -> f64 {
        if self.has_gpu_budget() {
            (self.gpu_budget_ms / self.frame_period_ms).min(1.0)
        } else {
            0.0
        }
    }
}

/// Why a DNN runs below its requested rate (or misses its deadline wherever it runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ShortfallReason {
    /// The scene leaves the GPU no budget and the CPU slots are full.
    NoGpuBudgetCpuFull,
    /// Both the GPU's slack and the CPU slots are full.
    BothFull,
    /// It runs only on the GPU, and the GPU's slack is full.
    GpuFull,
    /// It runs only on the GPU, and the scene leaves the GPU no budget.
    GpuOnlyNoBudget,
    /// It runs only on the CPU, and the CPU slots are full.
    CpuFull,
    /// The GPU's slack is full, and on the CPU one inference takes longer than its request
    /// interval.
    GpuFullCpuTooSlow,
    /// One inference takes longer than its request interval on every processor.
    SlowerThanRequested,
    /// Its deadline is shorter than its fastest inference anywhere.
    DeadlineUnreachable,
}

impl ShortfallReason {
    /// A stable snake_case code (as serialised).
    pub fn code(self) -> &'static str {
        match self {
            ShortfallReason::NoGpuBudgetCpuFull => "no_gpu_budget_cpu_full",
            ShortfallReason::BothFull => "both_full",
            ShortfallReason::GpuFull => "gpu_full",
            ShortfallReason::GpuOnlyNoBudget => "gpu_only_no_budget",
            ShortfallReason::CpuFull => "cpu_full",
            ShortfallReason::GpuFullCpuTooSlow => "gpu_full_cpu_too_slow",
            ShortfallReason::SlowerThanRequested => "slower_than_requested",
            ShortfallReason::DeadlineUnreachable => "deadline_unreachable",
        }
    }
}

impl fmt::Display for ShortfallReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ShortfallReason::NoGpuBudgetCpuFull => {
                "the scene leaves the GPU no budget and the CPU slots are full"
            }
            ShortfallReason::BothFull => "both the GPU's slack and the CPU slots are full",
            ShortfallReason::GpuFull => "it runs only on the GPU, whose slack is full",
            ShortfallReason::GpuOnlyNoBudget => {
                "it runs only on the GPU, and the scene leaves the GPU no budget"
            }
            ShortfallReason::CpuFull => "it runs only on the CPU, whose slots are full",
            ShortfallReason::GpuFullCpuTooSlow => {
                "the GPU's slack is full and one inference on the CPU takes longer than its \
                 request interval"
            }
            ShortfallReason::SlowerThanRequested => {
                "one inference takes longer than its request interval on every processor"
            }
            ShortfallReason::DeadlineUnreachable => {
                "its deadline is shorter than its fastest inference anywhere"
            }
        })
    }
}

/// A DNN running below its request, and why.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Shortfall {
    /// The rate it asks for, Hz.
    pub requested_hz: f64,
    /// The rate it is granted, Hz (at least the floor, a tenth of `requested_hz` by default,
    /// unless nothing at all fits).
    pub granted_hz: f64,
    /// Why.
    pub reason: ShortfallReason,
}

impl fmt::Display for Shortfall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:.1} of {:.1} Hz: {}",
            self.granted_hz, self.requested_hz, self.reason
        )
    }
}

/// Where one DNN runs, and what it can expect there.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlanEntry {
    /// The model.
    pub model: ModelId,
    /// Where its new inferences run (an on-demand DNN's home; each of its jobs still takes the
    /// processor that answers it soonest).
    pub processor: Processor,
    /// Expected latency of one inference there, ms.
    pub expected_latency_ms: f64,
    /// Expected latency on the GPU (`None`: it cannot run there now), ms.
    pub gpu_latency_ms: Option<f64>,
    /// Expected latency on the CPU at its threads (`None`: it cannot run there), ms.
    pub cpu_latency_ms: Option<f64>,
    /// The rate it asks for (`None`: on demand, or not known yet), Hz.
    pub requested_hz: Option<f64>,
    /// The rate it is granted (equal to `requested_hz` unless degraded), Hz.
    pub granted_hz: Option<f64>,
    /// Why it runs below its request, if it does.
    pub shortfall: Option<Shortfall>,
}

/// The planner's answer: one entry per DNN, in model id order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// When it was made, ms.
    pub at_ms: f64,
    /// One entry per planned DNN, in model id order.
    pub entries: Vec<PlanEntry>,
    /// The frames leave the GPU a budget.
    pub gpu_budget: bool,
    /// The DNNs' GPU load, as a share of the GPU's DNN capacity.
    pub gpu_load: f64,
    /// The DNNs' CPU load, in slots.
    pub cpu_load: f64,
}

impl Plan {
    /// The entry of `model`, if planned.
    pub fn entry(&self, model: ModelId) -> Option<&PlanEntry> {
        self.entries
            .binary_search_by_key(&model, |e| e.model)
            .ok()
            .map(|k| &self.entries[k])
    }
}
