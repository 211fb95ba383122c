//! The pseudo-preemptive coordinator (Heimdall sec. 6): pure logic on the caller's clock.
//!
//! The caller (the Bevy render loop, or the simulator) drives it:
//! 1. [`Coordinator::register`] each model once;
//! 2. [`Coordinator::submit`] a request when the app wants an inference (admission control keeps
//!    one inference in flight per model and the latest request pending);
//! 3. at every scheduling event (after a render, when GPU or CPU work finishes, on a request) call
//!    [`Coordinator::schedule`] with the GPU window left in this frame and the number of idle CPU
//!    workers; encode the returned [`GpuWork`] into the frame's command encoder (in order) and hand
//!    the [`CpuWork`] to workers (`run_range(ops)`);
//! 4. report each finished piece with [`Coordinator::gpu_done`] / [`Coordinator::cpu_done`] and its
//!    measured times, which feed the profiles; these return a [`Completion`] when an inference
//!    finished.
//!
//! Times are `f64` milliseconds on the caller's clock; nothing here reads a real clock.

use std::collections::HashMap;
use std::ops::Range;

use crate::analyzer::{FrameBudget, ModelProfile};
use crate::model::{Analysis, ModelId, ModelSpec};
use crate::offload::{self, OffloadConfig, OffloadView};
use crate::policy::{Dispatch, JobView, Policy, PolicyContext};
use crate::processor::Processor;
use crate::timeline::{Lane, Timeline};
use crate::utility::UtilityParams;

/// Coordinator settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CoordinatorConfig {
    /// Frame budget and chunking parameters.
    pub budget: FrameBudget,
    /// Weight `alpha` of the content variation (0.01 in the paper).
    pub alpha: f64,
    /// Number of CPU workers.
    pub cpu_workers: usize,
    /// CPU offload.
    pub offload: OffloadConfig,
    /// Whether the deadline override runs (for coordinated policies).
    pub deadline_override: bool,
    /// Relative drift of a model's GPU time that triggers re-partitioning.
    pub repartition_drift: f64,
    /// Whether to record the timeline.
    pub record_timeline: bool,
}

impl CoordinatorConfig {
    /// Defaults for a frame budget: alpha 0.01, 2 workers, offload every second with m = 0.2,
    /// deadline override on, re-partition at 20 % drift, timeline on.
    pub fn new(budget: FrameBudget) -> Self {
        CoordinatorConfig {
            budget,
            alpha: 0.01,
            cpu_workers: 2,
            offload: OffloadConfig::default(),
            deadline_override: true,
            repartition_drift: 0.2,
            record_timeline: true,
        }
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

/// Why [`Coordinator::schedule`] is called.
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

/// Work for an idle CPU worker.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuWork {
    /// Report it back with this id.
    pub id: WorkId,
    /// The model.
    pub model: ModelId,
    /// Op range (contiguous).
    pub ops: Range<usize>,
    /// Expected cost, ms.
    pub est_ms: f64,
    /// The model is offloaded (whole remaining inference), rather than a fallback op.
    pub offloaded: bool,
}

/// What to run after a scheduling event.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Decision {
    /// GPU chunks, in queue order.
    pub gpu: Vec<GpuWork>,
    /// CPU work, one item per idle worker at most.
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

#[derive(Clone, Debug)]
struct Job {
    seq: u64,
    request: Request,
    t_start: f64,
    /// Next op not yet dispatched.
    planned: usize,
    gpu_inflight: u32,
    cpu_inflight: bool,
    /// Expected end of this job's queued GPU work.
    gpu_planned_end: f64,
    /// Expected end of this job's running CPU work.
    cpu_planned_end: f64,
    offloaded: bool,
}

struct ModelState {
    name: String,
    utility: UtilityParams,
    deadline_ms: Option<f64>,
    analysis: Analysis,
    mode: Processor,
    job: Option<Job>,
    pending: Option<Request>,
    last_gpu_latency: Option<f64>,
    cpu_latency_ema: Option<f64>,
    gpu_recent_ms: f64,
    mode_history: Vec<(f64, Processor)>,
    overrides: u64,
}

#[derive(Clone, Debug)]
struct Inflight {
    model: ModelId,
    ops: Range<usize>,
    processor: Processor,
    planned_end: f64,
}

/// Per-model counters exposed to tests and reports.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelStatus {
    /// Name.
    pub name: String,
    /// Where its inferences run now.
    pub mode: Processor,
    /// Every change of processor: (time, new processor); starts with (0, GPU).
    pub mode_history: Vec<(f64, Processor)>,
    /// How many pieces the deadline override dispatched.
    pub deadline_overrides: u64,
    /// Chunks of the current partition.
    pub chunks: usize,
    /// Steps that alone exceed the budget.
    pub oversized_steps: Vec<usize>,
    /// Utility of the job in flight now, if any.
    pub utility: Option<f64>,
}

/// The coordinator. See the module documentation for the calling protocol.
pub struct Coordinator {
    cfg: CoordinatorConfig,
    policy: Box<dyn Policy>,
    models: Vec<ModelState>,
    inflight: HashMap<WorkId, Inflight>,
    next_work: u64,
    next_seq: u64,
    next_offload_eval: f64,
    last_offload_eval: f64,
    timeline: Timeline,
}

impl Coordinator {
    /// A coordinator with `policy`.
    pub fn new(cfg: CoordinatorConfig, policy: Box<dyn Policy>) -> Self {
        Coordinator {
            timeline: Timeline::new(cfg.record_timeline),
            next_offload_eval: cfg.offload.interval_ms,
            last_offload_eval: 0.0,
            cfg,
            policy,
            models: Vec::new(),
            inflight: HashMap::new(),
            next_work: 0,
            next_seq: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &CoordinatorConfig {
        &self.cfg
    }

    /// The policy's name.
    pub fn policy_name(&self) -> String {
        self.policy.name()
    }

    /// Registers a model; its profile starts from the spec's step costs.
    pub fn register(&mut self, spec: ModelSpec) -> ModelId {
        let profile = ModelProfile::new(spec.name.clone(), spec.steps);
        self.register_with_profile(spec.name, profile, spec.utility, spec.deadline_ms)
    }

    /// Registers a model with a saved profile (see [`ModelProfile::from_json`]).
    pub fn register_with_profile(
        &mut self,
        name: String,
        profile: ModelProfile,
        utility: UtilityParams,
        deadline_ms: Option<f64>,
    ) -> ModelId {
        let id = ModelId(self.models.len());
        self.models.push(ModelState {
            name,
            utility,
            deadline_ms,
            analysis: Analysis::new(profile, &self.cfg.budget),
            mode: Processor::Gpu,
            job: None,
            pending: None,
            last_gpu_latency: None,
            cpu_latency_ema: None,
            gpu_recent_ms: 0.0,
            mode_history: vec![(0.0, Processor::Gpu)],
            overrides: 0,
        });
        id
    }

    /// The current profile of `model` (serialise it with [`ModelProfile::to_json`]).
    pub fn profile(&self, model: ModelId) -> &ModelProfile {
        &self.models[model.0].analysis.profile
    }

    /// The current partition of `model`.
    pub fn partition(&self, model: ModelId) -> &crate::analyzer::Partition {
        &self.models[model.0].analysis.partition
    }

    /// Counters and state of `model`; `now_ms` is used for its current utility.
    pub fn status(&self, model: ModelId, now_ms: f64) -> ModelStatus {
        let m = &self.models[model.0];
        ModelStatus {
            name: m.name.clone(),
            mode: m.mode,
            mode_history: m.mode_history.clone(),
            deadline_overrides: m.overrides,
            chunks: m.analysis.partition.chunks.len(),
            oversized_steps: m.analysis.partition.oversized_steps.clone(),
            utility: m.job.as_ref().map(|j| {
                m.utility.utility(
                    now_ms - j.t_start,
                    self.cfg.alpha,
                    j.request.content_variation,
                )
            }),
        }
    }

    /// Number of registered models.
    pub fn model_count(&self) -> usize {
        self.models.len()
    }

    /// The timeline recorded so far.
    pub fn timeline(&self) -> &Timeline {
        &self.timeline
    }

    /// The timeline, to add the caller's own events (renders).
    pub fn timeline_mut(&mut self) -> &mut Timeline {
        &mut self.timeline
    }

    /// Changes the target frame rate (e.g. the display's refresh rate became known) and
    /// re-partitions every model for the new budget. Rates that are not finite or ≤ 0 are ignored.
    pub fn set_frame_rate(&mut self, hz: f64) {
        if !(hz.is_finite() && hz > 0.0) {
            return;
        }
        let period = 1000.0 / hz;
        if (period - self.cfg.budget.frame_period_ms).abs() < 1e-9 {
            return;
        }
        self.cfg.budget.frame_period_ms = period;
        let b = self.cfg.budget;
        for m in &mut self.models {
            m.analysis.maybe_repartition(&b, 0.0, true);
        }
    }

    /// Folds a measured render time into the budget (EMA with the profiles' factor 0.1) and
    /// re-partitions every model if the budget moved by more than the drift threshold.
    pub fn observe_render(&mut self, render_ms: f64) {
        let old = self.cfg.budget;
        self.cfg.budget.render_ms = 0.1 * render_ms + 0.9 * old.render_ms;
        let drift =
            (self.cfg.budget.budget_ms() - old.budget_ms()).abs() / old.budget_ms().max(1e-9);
        if drift > self.cfg.repartition_drift {
            let b = self.cfg.budget;
            for m in &mut self.models {
                m.analysis.maybe_repartition(&b, 0.0, true);
            }
        }
    }

    /// Submits a request at `now_ms`. It starts at once if the model has nothing in flight;
    /// otherwise it waits, replacing any older waiting request (the latest frame wins).
    pub fn submit(&mut self, model: ModelId, request: Request, now_ms: f64) {
        let m = &mut self.models[model.0];
        if m.job.is_some() {
            m.pending = Some(request);
        } else {
            self.next_seq += 1;
            m.job = Some(new_job(self.next_seq, request, now_ms));
        }
    }

    /// Whether `model` has an inference in flight.
    pub fn busy(&self, model: ModelId) -> bool {
        self.models[model.0].job.is_some()
    }

    fn remaining_ms(&self, m: &ModelState, job: &Job, now: f64) -> f64 {
        let a = &m.analysis;
        let n = a.len();
        let p = job.planned;
        let queued = (job.gpu_planned_end.max(job.cpu_planned_end) - now).max(0.0);
        let rest = match m.mode {
            Processor::Cpu => a.costs.range_ms(p..n, Processor::Cpu),
            Processor::Gpu => {
                let gpu = a.costs.range_ms(p..n, Processor::Gpu);
                let fb = a.prefix_fallback[n] - a.prefix_fallback[p];
                // The GPU gives the DNNs only the budget of every frame.
                let b = self.cfg.budget.budget_ms().max(1e-3);
                gpu * self.cfg.budget.frame_period_ms / b + fb
            }
        };
        queued + rest
    }

    fn view<'a>(&self, m: &'a ModelState, id: usize, job: &Job, now: f64) -> JobView<'a> {
        JobView {
            model: ModelId(id),
            seq: job.seq,
            t_start_ms: job.t_start,
            utility: m.utility,
            content_variation: job.request.content_variation,
            deadline_ms: m.deadline_ms,
            next_op: job.planned,
            remaining_ms: self.remaining_ms(m, job, now),
            costs: &m.analysis.costs,
        }
    }

    /// Priority key: deadline-critical jobs first (earliest deadline), then the policy's score.
    fn priority(&self, ctx: &PolicyContext, v: &JobView<'_>, coordinated: bool) -> (bool, f64) {
        if coordinated && self.cfg.deadline_override {
            // Critical: it can still finish in time if it runs now, but not one interval later.
            let dl = v.deadline_abs_ms();
            let finish_now = ctx.now_ms + v.remaining_ms;
            if finish_now <= dl && finish_now + ctx.interval_ms > dl {
                return (true, -dl);
            }
        }
        (false, self.policy.score(ctx, v))
    }

    /// Decides what to run now. `idle_cpu_workers` is how many workers can take work.
    pub fn schedule(
        &mut self,
        now_ms: f64,
        event: Event,
        window: GpuWindow,
        idle_cpu_workers: usize,
    ) -> Decision {
        let coordinated = self.policy.coordinated();
        if coordinated && self.cfg.offload.enabled && now_ms >= self.next_offload_eval {
            self.evaluate_offload(now_ms);
        }
        let cpu_free = if idle_cpu_workers > 0 {
            now_ms
        } else {
            self.inflight
                .values()
                .filter(|w| w.processor == Processor::Cpu)
                .map(|w| w.planned_end)
                .fold(f64::INFINITY, f64::min)
                .max(now_ms)
        };
        let ctx = PolicyContext {
            now_ms,
            interval_ms: self.cfg.budget.frame_period_ms,
            alpha: self.cfg.alpha,
            gpu_free_ms: window.start_ms.max(now_ms),
            cpu_free_ms: if cpu_free.is_finite() {
                cpu_free
            } else {
                now_ms
            },
        };
        let mut decision = Decision::default();
        self.schedule_cpu(&ctx, idle_cpu_workers, coordinated, &mut decision);
        match self.policy.dispatch() {
            Dispatch::FrameBudget => self.schedule_gpu_budget(&ctx, window, &mut decision),
            Dispatch::WholeRuns => self.schedule_gpu_whole(&ctx, window, &mut decision),
            Dispatch::OpsPerFrame(k) => {
                if event == Event::FrameRendered {
                    self.schedule_gpu_ops(&ctx, window, k, &mut decision);
                }
            }
        }
        decision
    }

    fn schedule_cpu(
        &mut self,
        ctx: &PolicyContext,
        idle: usize,
        coordinated: bool,
        out: &mut Decision,
    ) {
        for _ in 0..idle {
            let mut best: Option<(usize, (bool, f64))> = None;
            for (i, m) in self.models.iter().enumerate() {
                let Some(job) = &m.job else { continue };
                if job.cpu_inflight || job.gpu_inflight > 0 || job.planned >= m.analysis.len() {
                    continue;
                }
                let step = &m.analysis.profile.steps[job.planned];
                if m.mode == Processor::Gpu && step.processors.contains(Processor::Gpu) {
                    continue;
                }
                let v = self.view(m, i, job, ctx.now_ms);
                let key = self.priority(ctx, &v, coordinated);
                if best.is_none_or(|(_, b)| key > b) {
                    best = Some((i, key));
                }
            }
            let Some((i, _)) = best else { break };
            let m = &mut self.models[i];
            let a = &m.analysis;
            let job = m.job.as_mut().expect("candidate has a job");
            let start = job.planned;
            let offloaded = m.mode == Processor::Cpu;
            let end = if offloaded {
                a.len()
            } else {
                a.partition.chunk_containing(start).ops.end
            };
            let est = a.costs.range_ms(start..end, Processor::Cpu);
            job.planned = end;
            job.cpu_inflight = true;
            job.cpu_planned_end = ctx.now_ms + est;
            job.offloaded |= offloaded;
            let id = self.new_work(ModelId(i), start..end, Processor::Cpu, ctx.now_ms + est);
            out.cpu.push(CpuWork {
                id,
                model: ModelId(i),
                ops: start..end,
                est_ms: est,
                offloaded,
            });
        }
    }

    fn new_work(
        &mut self,
        model: ModelId,
        ops: Range<usize>,
        processor: Processor,
        planned_end: f64,
    ) -> WorkId {
        self.next_work += 1;
        let id = WorkId(self.next_work);
        self.inflight.insert(
            id,
            Inflight {
                model,
                ops,
                processor,
                planned_end,
            },
        );
        id
    }

    /// The priority key of model `i`'s job, if it has one.
    fn key_of(&self, ctx: &PolicyContext, i: usize) -> Option<(bool, f64)> {
        let m = &self.models[i];
        let job = m.job.as_ref()?;
        let v = self.view(m, i, job, ctx.now_ms);
        Some(self.priority(ctx, &v, self.policy.coordinated()))
    }

    /// Whether model `i`'s job can take GPU work now (`queue_behind_own`: even while its previous
    /// chunk is still queued).
    fn gpu_eligible(&self, i: usize, queue_behind_own: bool) -> bool {
        let m = &self.models[i];
        let Some(job) = &m.job else { return false };
        m.mode == Processor::Gpu
            && !job.cpu_inflight
            && job.planned < m.analysis.len()
            && (queue_behind_own || job.gpu_inflight == 0)
            && m.analysis.profile.steps[job.planned]
                .processors
                .contains(Processor::Gpu)
    }

    /// GPU candidates with their priority keys.
    fn gpu_candidates(
        &self,
        ctx: &PolicyContext,
        queue_behind_own: bool,
    ) -> Vec<(usize, (bool, f64))> {
        (0..self.models.len())
            .filter(|&i| self.gpu_eligible(i, queue_behind_own))
            .filter_map(|i| self.key_of(ctx, i).map(|k| (i, k)))
            .collect()
    }

    /// When model `i`'s job will need the GPU again after CPU work, if it is waiting on one.
    fn return_time(&self, i: usize) -> Option<f64> {
        let m = &self.models[i];
        let job = m.job.as_ref()?;
        if m.mode != Processor::Gpu || job.planned >= m.analysis.len() {
            return None;
        }
        let a = &m.analysis;
        if job.cpu_inflight {
            Some(job.cpu_planned_end)
        } else if job.gpu_inflight > 0
            && !a.profile.steps[job.planned]
                .processors
                .contains(Processor::Gpu)
        {
            let end = a.partition.chunk_containing(job.planned).ops.end;
            Some(job.gpu_planned_end + a.costs.range_ms(job.planned..end, Processor::Cpu))
        } else {
            None
        }
    }

    fn dispatch_gpu(
        &mut self,
        i: usize,
        ops: Range<usize>,
        (est, start): (f64, f64),
        (oversized, overridden): (bool, bool),
        out: &mut Decision,
    ) {
        let m = &mut self.models[i];
        let job = m.job.as_mut().expect("candidate has a job");
        job.planned = ops.end;
        job.gpu_inflight += 1;
        job.gpu_planned_end = start + est;
        m.gpu_recent_ms += est;
        if overridden {
            m.overrides += 1;
        }
        let m = &self.models[i];
        let job = m.job.as_ref().expect("candidate has a job");
        let v = self.view(m, i, job, start);
        self.policy.on_dispatch(&v);
        if self.timeline.is_enabled() {
            let name = self.models[i].name.clone();
            let mut args = vec![("ops", format!("{}..{}", ops.start, ops.end))];
            if overridden {
                args.push(("deadline_override", "true".into()));
            }
            if oversized {
                args.push(("oversized", "true".into()));
            }
            self.timeline
                .instant(Lane::Coordinator, "decision", name, start, args);
        }
        let id = self.new_work(ModelId(i), ops.clone(), Processor::Gpu, start + est);
        out.gpu.push(GpuWork {
            id,
            model: ModelId(i),
            ops,
            est_ms: est,
            planned_start_ms: start,
            oversized,
            deadline_override: overridden,
        });
    }

    fn schedule_gpu_budget(&mut self, ctx: &PolicyContext, window: GpuWindow, out: &mut Decision) {
        let b = self.cfg.budget;
        let oh = b.chunk_overhead_ms;
        let frame_start = window.start_ms.max(ctx.now_ms);
        let hard_end = window.end_ms - b.margin_ms;
        let fresh_frame = hard_end - frame_start >= b.budget_ms() - 1e-9;
        let mut cursor = frame_start;
        let mut excluded: Vec<usize> = Vec::new();
        // Keys are computed once per decision; only a job that got work is re-scored.
        let mut keys: Vec<Option<(bool, f64)>> = (0..self.models.len())
            .map(|i| self.key_of(ctx, i))
            .collect();
        loop {
            if hard_end - cursor <= oh {
                break;
            }
            let Some((i, key)) = (0..self.models.len())
                .filter(|i| !excluded.contains(i) && self.gpu_eligible(*i, true))
                .filter_map(|i| keys[i].map(|k| (i, k)))
                .max_by(|a, b| cmp_key(a.1, b.1))
            else {
                break;
            };
            // Leave the GPU free for a more urgent job coming back from its CPU ops (checked
            // after every dispatch: a job just queued may now wait on a CPU op).
            let horizon = (0..self.models.len())
                .filter(|&j| keys[j].is_some_and(|k| cmp_key(k, key).is_gt()))
                .filter_map(|j| self.return_time(j))
                .fold(hard_end, f64::min);
            let relaxed = if horizon >= hard_end {
                hard_end + b.relaxation_ms
            } else {
                horizon
            };
            let m = &self.models[i];
            let a = &m.analysis;
            let p = m.job.as_ref().expect("candidate has a job").planned;
            let chunk_end = a.partition.chunk_containing(p).ops.end;
            let full = a.costs.range_ms(p..chunk_end, Processor::Gpu) + oh;
            let pick = if cursor + full <= relaxed {
                Some((chunk_end, full, false))
            } else {
                // Longest prefix of the chunk that ends by the horizon.
                let room = horizon - cursor - oh;
                let base = a.costs.prefix_gpu[p];
                let pre = &a.costs.prefix_gpu[p + 1..=chunk_end];
                let k = pre.partition_point(|x| x - base <= room);
                if k > 0 {
                    let end = p + k;
                    Some((end, a.costs.range_ms(p..end, Processor::Gpu) + oh, false))
                } else if fresh_frame
                    && cursor == frame_start
                    && horizon >= hard_end
                    && a.profile.steps[p].gpu_ms + oh > b.budget_ms()
                {
                    Some((p + 1, a.profile.steps[p].gpu_ms + oh, true))
                } else {
                    None
                }
            };
            match pick {
                Some((end, est, oversized)) => {
                    self.dispatch_gpu(i, p..end, (est, cursor), (oversized, key.0), out);
                    cursor += est;
                    keys[i] = self.key_of(ctx, i);
                }
                None => excluded.push(i),
            }
        }
    }

    fn schedule_gpu_whole(&mut self, ctx: &PolicyContext, window: GpuWindow, out: &mut Decision) {
        let mut cursor = window.start_ms.max(ctx.now_ms);
        let oh = self.cfg.budget.chunk_overhead_ms;
        loop {
            let cands = self.gpu_candidates(ctx, false);
            let Some(&(i, key)) = cands.iter().max_by(|a, b| cmp_key(a.1, b.1)) else {
                break;
            };
            let a = &self.models[i].analysis;
            let p = self.models[i].job.as_ref().expect("job").planned;
            let end = a
                .costs
                .units
                .iter()
                .find(|u| u.ops.contains(&p))
                .expect("op in a unit")
                .ops
                .end;
            let est = a.costs.range_ms(p..end, Processor::Gpu) + oh;
            self.dispatch_gpu(i, p..end, (est, cursor), (false, key.0), out);
            cursor += est;
        }
    }

    fn schedule_gpu_ops(
        &mut self,
        ctx: &PolicyContext,
        window: GpuWindow,
        k: usize,
        out: &mut Decision,
    ) {
        let cands = self.gpu_candidates(ctx, false);
        let Some(&(i, key)) = cands.iter().max_by(|a, b| cmp_key(a.1, b.1)) else {
            return;
        };
        let a = &self.models[i].analysis;
        let p = self.models[i].job.as_ref().expect("job").planned;
        let unit_end = a
            .costs
            .units
            .iter()
            .find(|u| u.ops.contains(&p))
            .expect("op in a unit")
            .ops
            .end;
        let end = (p + k).min(unit_end);
        let est = a.costs.range_ms(p..end, Processor::Gpu) + self.cfg.budget.chunk_overhead_ms;
        let start = window.start_ms.max(ctx.now_ms);
        self.dispatch_gpu(i, p..end, (est, start), (false, key.0), out);
    }

    /// Reports finished GPU work with its measured start and end; returns the completed
    /// inference, if this was its last piece.
    pub fn gpu_done(&mut self, id: WorkId, start_ms: f64, end_ms: f64) -> Option<Completion> {
        self.work_done(id, start_ms, end_ms, None)
    }

    /// Reports finished CPU work of worker `worker`; returns the completed inference, if any.
    pub fn cpu_done(
        &mut self,
        id: WorkId,
        worker: usize,
        start_ms: f64,
        end_ms: f64,
    ) -> Option<Completion> {
        self.work_done(id, start_ms, end_ms, Some(worker))
    }

    fn work_done(
        &mut self,
        id: WorkId,
        start_ms: f64,
        end_ms: f64,
        worker: Option<usize>,
    ) -> Option<Completion> {
        let w = self.inflight.remove(&id)?;
        let budget = self.cfg.budget;
        let drift = self.cfg.repartition_drift;
        let m = &mut self.models[w.model.0];
        let measured = end_ms - start_ms;
        match w.processor {
            Processor::Gpu => {
                let t = (measured - budget.chunk_overhead_ms).max(0.0);
                m.analysis
                    .profile
                    .observe_range(w.ops.clone(), Processor::Gpu, t);
            }
            Processor::Cpu => {
                m.analysis
                    .profile
                    .observe_range(w.ops.clone(), Processor::Cpu, measured);
            }
        }
        m.analysis.refresh_costs();
        m.analysis.maybe_repartition(&budget, drift, false);
        if self.timeline.is_enabled() {
            let lane = match worker {
                Some(k) => Lane::CpuWorker(k),
                None => Lane::Gpu,
            };
            let cat = if worker.is_some() { "cpu" } else { "chunk" };
            let name = m.name.clone();
            self.timeline.span(
                lane,
                cat,
                name,
                start_ms,
                end_ms,
                vec![("ops", format!("{}..{}", w.ops.start, w.ops.end))],
            );
        }
        let n = m.analysis.len();
        let job = m.job.as_mut()?;
        match w.processor {
            Processor::Gpu => job.gpu_inflight = job.gpu_inflight.saturating_sub(1),
            Processor::Cpu => {
                job.cpu_inflight = false;
                job.cpu_planned_end = 0.0;
            }
        }
        if w.ops.end < n || job.gpu_inflight > 0 || job.cpu_inflight {
            return None;
        }
        let job = m.job.take().expect("checked above");
        let latency = end_ms - job.t_start;
        if job.offloaded {
            m.cpu_latency_ema = Some(match m.cpu_latency_ema {
                Some(e) => 0.5 * latency + 0.5 * e,
                None => latency,
            });
        } else {
            m.last_gpu_latency = Some(latency);
        }
        let done = Completion {
            model: w.model,
            request: job.request,
            admitted_ms: job.t_start,
            finished_ms: end_ms,
            deadline_met: m.deadline_ms.map(|d| latency <= d),
            offloaded: job.offloaded,
        };
        if let Some(req) = m.pending.take() {
            self.next_seq += 1;
            m.job = Some(new_job(self.next_seq, req, end_ms));
        }
        Some(done)
    }

    fn evaluate_offload(&mut self, now: f64) {
        let elapsed = (now - self.last_offload_eval).max(1e-9);
        self.last_offload_eval = now;
        self.next_offload_eval = now + self.cfg.offload.interval_ms;
        let b = self.cfg.budget;
        let capacity = b.budget_ms() / b.frame_period_ms;
        let total_recent: f64 = self
            .models
            .iter()
            .filter(|m| m.mode == Processor::Gpu)
            .map(|m| m.gpu_recent_ms)
            .sum();
        let views: Vec<OffloadView> = self
            .models
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let own = if m.mode == Processor::Gpu {
                    m.gpu_recent_ms
                } else {
                    0.0
                };
                let share = (capacity - (total_recent - own) / elapsed).max(0.05);
                let running_age = m
                    .job
                    .as_ref()
                    .filter(|j| !j.offloaded)
                    .map(|j| now - j.t_start);
                let gpu_latency = match (m.last_gpu_latency, running_age) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
                OffloadView {
                    model: ModelId(i),
                    mode: m.mode,
                    gpu_latency_ms: gpu_latency,
                    expected_gpu_latency_ms: m.analysis.gpu_total() / share + b.frame_period_ms,
                    cpu_latency_ms: m.cpu_latency_ema.unwrap_or_else(|| m.analysis.cpu_total()),
                }
            })
            .collect();
        for m in &mut self.models {
            m.gpu_recent_ms = 0.0;
        }
        let reserve = usize::from(self.models.iter().any(|m| m.analysis.has_cpu_only));
        let max_on_cpu = self.cfg.cpu_workers.saturating_sub(reserve);
        if let Some(sw) = offload::decide(&views, self.cfg.offload.margin, max_on_cpu) {
            let m = &mut self.models[sw.model.0];
            m.mode = sw.to;
            m.mode_history.push((now, sw.to));
            if self.timeline.is_enabled() {
                let name = format!("{} -> {}", m.name, sw.to.name());
                self.timeline
                    .instant(Lane::Coordinator, "offload", name, now, Vec::new());
            }
        }
    }
}

fn new_job(seq: u64, request: Request, now: f64) -> Job {
    Job {
        seq,
        request,
        t_start: now,
        planned: 0,
        gpu_inflight: 0,
        cpu_inflight: false,
        gpu_planned_end: now,
        cpu_planned_end: 0.0,
        offloaded: false,
    }
}

fn cmp_key(a: (bool, f64), b: (bool, f64)) -> std::cmp::Ordering {
    a.0.cmp(&b.0).then(a.1.total_cmp(&b.1))
}
