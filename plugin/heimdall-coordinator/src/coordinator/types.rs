//! The coordinator's vocabulary: its settings, what the caller tells it (requests, events, GPU
//! windows) and what it answers (GPU and CPU work, completions, status).

use std::ops::Range;

use crate::analyzer::FrameBudget;
use crate::model::ModelId;
use crate::placement::{PlacementConfig, PlacementRule, Shortfall};
use crate::policy::Policy;
use crate::processor::Processor;
use crate::timeline::Timeline;

/// Coordinator settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CoordinatorConfig {
    /// Frame budget and chunking parameters.
    pub budget: FrameBudget,
    /// Weight `alpha` of the content variation (0.01 in the paper).
    pub alpha: f64,
    /// CPU slots: the cores the DNNs may use for inference. A piece of CPU work occupies as many
    /// slots as its model's CPU backend has threads ([`crate::Coordinator::set_cpu_parallelism`]).
    pub cpu_workers: usize,
    /// Where each DNN runs: the placement planner's settings.
    pub placement: PlacementConfig,
    /// Whether GPU work is cut into frame-budget chunks (Heimdall's pseudo-preemption). Without
    /// it, a coordinated policy still ranks jobs, overrides deadlines and offloads, but each
    /// dispatch is a whole run of GPU steps (up to the next CPU step), whatever the frame.
    pub chunking: bool,
    /// Whether the deadline override runs (for coordinated policies).
    pub deadline_override: bool,
    /// Safety factor of the deadline override: a job becomes critical once
    /// `now + remaining * (1 + guard) + one interval` reaches its deadline, so estimation errors
    /// of up to `guard` (relative) still leave it an interval to finish in time.
    pub deadline_guard: f64,
    /// Relative drift of a model's GPU time that triggers re-partitioning.
    pub repartition_drift: f64,
    /// Whether to record the timeline.
    pub record_timeline: bool,
    /// Events the timeline keeps (a ring: the oldest are dropped).
    pub timeline_capacity: usize,
    /// Whether an offloaded inference that the GPU had started can go on on the CPU from the
    /// step reached, its live activations downloaded by the caller ([`Resume::FromGpu`]). A
    /// caller that can only start a CPU inference from its input turns it off: the inference
    /// then restarts on the CPU from op 0, and the switch weighs that whole CPU run against
    /// finishing on the GPU, so it still keeps the GPU's work whenever that is sooner.
    pub offload_resumes_from_gpu: bool,
}

impl CoordinatorConfig {
    /// Defaults for a frame budget: alpha 0.01, 2 CPU slots, the placement planner with its
    /// defaults ([`PlacementConfig::default`]; resuming from the GPU's activations), chunking on, deadline override on with a 25 %
    /// guard, re-partition at 20 % drift, timeline on with [`Timeline::DEFAULT_CAPACITY`]
    /// events.
    pub fn new(budget: FrameBudget) -> Self {
        CoordinatorConfig {
            budget,
            alpha: 0.01,
            cpu_workers: 2,
            placement: PlacementConfig::default(),
            chunking: true,
            deadline_override: true,
            deadline_guard: 0.25,
            repartition_drift: 0.2,
            record_timeline: true,
            timeline_capacity: Timeline::DEFAULT_CAPACITY,
            offload_resumes_from_gpu: true,
        }
    }
}

/// Which of Heimdall's two mechanisms run, for ablations: frame-budget chunking (GPU
/// pseudo-preemption) and CPU offload (the placement of DNNs on the CPU).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ablation {
    /// Chunking and offload (Heimdall).
    Both,
    /// Chunking only: placement off, no model moves to the CPU (fallback steps still run there).
    ChunkingOnly,
    /// Offload only: GPU work is dispatched in whole runs, not frame-budget chunks.
    OffloadOnly,
    /// Neither: whole runs on the GPU, ranked by the policy, no offload.
    Neither,
}

impl Ablation {
    /// Every variant, in the order reports list them.
    pub const ALL: [Ablation; 4] = [
        Ablation::Both,
        Ablation::ChunkingOnly,
        Ablation::OffloadOnly,
        Ablation::Neither,
    ];

    /// Parses `both`, `chunking`, `offload` or `neither`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "both" => Ablation::Both,
            "chunking" => Ablation::ChunkingOnly,
            "offload" => Ablation::OffloadOnly,
            "neither" => Ablation::Neither,
            _ => return None,
        })
    }

    /// The name [`Ablation::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            Ablation::Both => "both",
            Ablation::ChunkingOnly => "chunking",
            Ablation::OffloadOnly => "offload",
            Ablation::Neither => "neither",
        }
    }

    /// Sets `cfg.chunking` and `cfg.placement.enabled` for this variant.
    pub fn apply(self, cfg: &mut CoordinatorConfig) {
        let (chunking, offload) = match self {
            Ablation::Both => (true, true),
            Ablation::ChunkingOnly => (true, false),
            Ablation::OffloadOnly => (false, true),
            Ablation::Neither => (false, false),
        };
        cfg.chunking = chunking;
        cfg.placement.enabled = offload;
    }
}

/// An inference request.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Request {
    /// When the camera frame it will use was captured, ms.
    pub capture_ms: f64,
    /// Content variation `C` between this input and the previous one (sum of absolute luma
    /// differences, normalised as the app likes).
    pub content_variation: f64,
}

/// Why [`crate::Coordinator::schedule`] is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A frame's render finished: a new GPU window opens.
    FrameRendered,
    /// GPU work finished.
    GpuWorkDone,
    /// A CPU worker finished.
    CpuWorkDone,
    /// A request arrived.
    Request,
    /// Anything else (a timer).
    Tick,
}

/// The GPU time the DNNs may use at this event: from `start_ms` (when the GPU queue is free) to
/// `end_ms` (when the next render is submitted, usually the next vsync).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuWindow {
    /// When already-queued GPU work ends (at least now).
    pub start_ms: f64,
    /// When the next render is submitted.
    pub end_ms: f64,
}

/// Identifies one dispatched piece of work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkId(pub u64);

/// A GPU chunk to encode into this frame, after the previous ones of the same decision.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuWork {
    /// Report it back with this id.
    pub id: WorkId,
    /// The model.
    pub model: ModelId,
    /// Op range (contiguous).
    pub ops: Range<usize>,
    /// Expected cost including the chunk overhead, ms.
    pub est_ms: f64,
    /// Expected start, ms.
    pub planned_start_ms: f64,
    /// One step that alone exceeds the frame budget.
    pub oversized: bool,
    /// Chosen by the deadline override rather than the policy.
    pub deadline_override: bool,
}

/// Where the state a piece of CPU work starts from comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Resume {
    /// The inference starts here: `ops.start` is 0 and the input is the request's frame.
    Input,
    /// Ops `0..ops.start` of this inference ran on the GPU: the CPU continues from the GPU's
    /// activations that are live at op `ops.start` (download them; nothing is recomputed). This is
    /// what a CPU fallback step of a GPU model gets, and an offloaded model whose inference the
    /// GPU had started (see [`crate::ModelStatus::resumed_from_gpu`]).
    FromGpu,
    /// Ops `0..ops.start` ran on the CPU worker's model already: its state continues.
    FromCpu,
}

/// Work for idle CPU slots.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuWork {
    /// Report it back with this id.
    pub id: WorkId,
    /// The model.
    pub model: ModelId,
    /// Op range (contiguous). An inference placed on the CPU gets its remainder, `start..n`, in
    /// pieces of at most `PlacementConfig::cpu_chunk_ms` when it is continuous work.
    pub ops: Range<usize>,
    /// Expected cost at `threads` threads, ms.
    pub est_ms: f64,
    /// Slots it occupies while it runs: its model's CPU threads (the worker's thread and
    /// `threads - 1` helpers of the CPU backend's pool), at most the coordinator's slots.
    pub threads: usize,
    /// The model is offloaded (whole remaining inference), rather than a fallback op.
    pub offloaded: bool,
    /// Where the state at `ops.start` comes from.
    pub resume: Resume,
}

/// What to run after a scheduling event.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Decision {
    /// GPU chunks, in queue order.
    pub gpu: Vec<GpuWork>,
    /// CPU work: together at most the idle slots (each item occupies its `threads`).
    pub cpu: Vec<CpuWork>,
}

/// A finished inference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Completion {
    /// The model.
    pub model: ModelId,
    /// The request it served.
    pub request: Request,
    /// When it was admitted (the start of its latency), ms.
    pub admitted_ms: f64,
    /// When its last op finished, ms.
    pub finished_ms: f64,
    /// Whether it met its deadline (`None` without one).
    pub deadline_met: Option<bool>,
    /// Whether any of it ran with the model offloaded to the CPU.
    pub offloaded: bool,
}

impl Completion {
    /// Inference latency (admission to last op), ms.
    pub fn latency_ms(&self) -> f64 {
        self.finished_ms - self.admitted_ms
    }
}

/// Per-model counters exposed to tests and reports.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelStatus {
    /// Name.
    pub name: String,
    /// Where its new inferences run now.
    pub mode: Processor,
    /// The latest changes of processor (time, new processor), oldest first: at most 64, and
    /// `(0, GPU)` first until more happened.
    pub mode_history: Vec<(f64, Processor)>,
    /// Changes of processor so far.
    pub mode_switches: u64,
    /// Time its new inferences went to the CPU workers, up to the status's time, ms.
    pub offloaded_ms: f64,
    /// How many pieces the deadline override dispatched.
    pub deadline_overrides: u64,
    /// Inferences the GPU had started that continued on the CPU from the step reached when the
    /// model was offloaded (the GPU's work kept).
    pub resumed_from_gpu: u64,
    /// Inferences the GPU had started that finished on the GPU after the model was offloaded,
    /// because that was sooner than the CPU.
    pub finished_on_gpu_after_offload: u64,
    /// On-demand inferences admitted on the GPU that moved to the CPU, where they would finish
    /// sooner, before the GPU had finished them.
    pub jobs_moved_to_cpu: u64,
    /// Chunks of the current partition.
    pub chunks: usize,
    /// Steps that alone exceed the budget.
    pub oversized_steps: Vec<usize>,
    /// Utility of the job in flight now, if any.
    pub utility: Option<f64>,
    /// Threads (slots) of its CPU backend.
    pub cpu_threads: usize,
    /// Requested on demand (events): each job takes the processor that answers it soonest.
    pub on_demand: bool,
    /// The rate it asks for: the inverse of its mean request interval (`None` on demand or
    /// before its second request), Hz.
    pub requested_rate_hz: Option<f64>,
    /// The rate the plan grants it (equal to `requested_rate_hz` unless degraded; enforced by
    /// admission), Hz.
    pub granted_rate_hz: Option<f64>,
    /// Why it runs below its request, if it does (the plan's, see [`Shortfall`]).
    pub shortfall: Option<Shortfall>,
    /// Expected latency of one inference where it runs now (the plan's), ms.
    pub expected_latency_ms: Option<f64>,
}

/// A change of the settings an app can edit while the coordinator runs
/// ([`super::Coordinator::reconfigure`]): each part is applied where it differs from what runs.
pub struct Reconfiguration {
    /// A new policy (`None`: keep the running one). The next decision ranks jobs with it;
    /// work already dispatched goes on as it was cut.
    pub policy: Option<Box<dyn Policy>>,
    /// The frame budget's safety margin, ms (negative or non-finite: ignored, with
    /// `relaxation_ms`).
    pub margin_ms: f64,
    /// The last chunk's relaxation, ms (negative or non-finite: ignored, with `margin_ms`).
    pub relaxation_ms: f64,
    /// Whether DNNs move between the GPU and the CPU.
    pub placement: bool,
    /// The rule that moves them.
    pub rule: PlacementRule,
}
