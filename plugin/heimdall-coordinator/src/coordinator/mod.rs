//! The pseudo-preemptive coordinator (Heimdall sec. 6): pure logic on the caller's clock.
//!
//! The caller (the Bevy render loop, or the simulator) drives it:
//! 1. [`Coordinator::register`] each model once;
//! 2. [`Coordinator::submit`] a request when the app wants an inference (admission control keeps
//!    one inference in flight per model and the latest request pending);
//! 3. at every scheduling event (after a render, when GPU or CPU work finishes, on a request) call
//!    [`Coordinator::schedule`] with the GPU window left in this frame and the number of idle CPU
//!    slots; encode the returned [`GpuWork`] into the frame's command encoder (in order) and hand
//!    the [`CpuWork`] to workers (`run_range(ops)` on `threads` slots, starting from the state its
//!    [`Resume`] names);
//! 4. report each finished piece with [`Coordinator::gpu_done`] / [`Coordinator::cpu_done`] and its
//!    measured times, which feed the profiles; these return a [`Completion`] when an inference
//!    finished.
//!
//! Times are `f64` milliseconds on the caller's clock; nothing here reads a real clock.
//!
//! The work is split by job, in layers that call down, never back up: this file is the API
//! (registration, requests, [`Coordinator::schedule`], status); below it `admit` (admission),
//! `gpu` (chunk packing), `cpu` (CPU work), `done` (completions and profiles), `cache` (the
//! convolution cache's hit rates), `placing` (the placement plan) and `rebalance` (CPU offload)
//! with `mode_log` (where each model ran, bounded); at the bottom `ranking` (where each job
//! stands: the policy's view, rank and expected times), `state` (what is kept per model and job)
//! and `types` (what goes in and out).

mod admit;
mod cache;
mod cpu;
mod done;
mod gpu;
mod live;
mod mode_log;
mod placing;
mod ranking;
mod rebalance;
mod state;
mod types;

use std::collections::HashMap;

use self::state::ModelState;
use crate::analyzer::{Analysis, ModelProfile, Partition};
use crate::model::{ModelId, ModelSpec};
use crate::placement::Plan;
use crate::policy::{Dispatch, Policy};
use crate::timeline::Timeline;
use crate::utility::UtilityParams;
pub use types::{
    Ablation, Completion, CoordinatorConfig, CpuWork, Decision, Event, GpuWindow, GpuWork,
    ModelStatus, Reconfiguration, Request, Resume, WorkId,
};

/// The coordinator. See the module documentation for the calling protocol.
pub struct Coordinator {
    cfg: CoordinatorConfig,
    policy: Box<dyn Policy>,
    models: Vec<ModelState>,
    inflight: HashMap<WorkId, state::Inflight>,
    /// GPU pieces completed when their outputs were read back, waiting for their measured
    /// times ([`Coordinator::gpu_outputs_read`]).
    awaiting_times: HashMap<WorkId, state::Inflight>,
    next_work: u64,
    next_seq: u64,
    next_offload_eval: f64,
    last_offload_eval: f64,
    timeline: Timeline,
    /// Consecutive frames whose GPU window had no room from the start (the device is behind the
    /// frame rate), and the end of the last window counted.
    closed_streak: (u32, f64),
    /// The current placement plan.
    plan: Plan,
    /// The plan is out of date (a model registered or retired, requests or costs moved).
    replan_due: bool,
    /// When the next regular re-plan is due, ms.
    next_plan_ms: f64,
}

impl Coordinator {
    /// A coordinator with `policy`.
    pub fn new(cfg: CoordinatorConfig, policy: Box<dyn Policy>) -> Self {
        Coordinator {
            timeline: Timeline::with_capacity(cfg.record_timeline, cfg.timeline_capacity),
            next_offload_eval: cfg.placement.min_dwell_ms,
            last_offload_eval: 0.0,
            cfg,
            policy,
            models: Vec::new(),
            inflight: HashMap::new(),
            awaiting_times: HashMap::new(),
            next_work: 0,
            next_seq: 0,
            closed_streak: (0, f64::NAN),
            plan: Plan::default(),
            replan_due: true,
            next_plan_ms: 0.0,
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

    /// Registers a model with a saved profile (see [`ModelProfile::from_json`] and
    /// [`crate::analyzer::ProfileStore`]).
    pub fn register_with_profile(
        &mut self,
        name: String,
        profile: ModelProfile,
        utility: UtilityParams,
        deadline_ms: Option<f64>,
    ) -> ModelId {
        let id = ModelId(self.models.len());
        let analysis = Analysis::new(profile, &self.cfg.budget);
        self.models
            .push(ModelState::new(name, utility, deadline_ms, analysis));
        self.replan_soon();
        id
    }

    /// The current profile of `model` (serialise it with [`ModelProfile::to_json`]).
    pub fn profile(&self, model: ModelId) -> &ModelProfile {
        &self.models[model.0].analysis.profile
    }

    /// The current partition of `model`.
    pub fn partition(&self, model: ModelId) -> &Partition {
        &self.models[model.0].analysis.partition
    }

    /// The current placement plan: per DNN its processor, expected latency, granted rate and
    /// shortfall.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Declares that `model`'s CPU backend runs on `threads` threads (it occupies that many CPU
    /// slots while it runs; at most the coordinator's slots) and is `speedup` times faster there
    /// than its one-thread profile (whose CPU times stay one-thread costs; measured CPU times are
    /// scaled back by `speedup` before they feed it). Default: 1 thread, speedup 1. A `threads`
    /// of 0 counts as 1; a `speedup` that is not finite and > 0 as 1.
    pub fn set_cpu_parallelism(&mut self, model: ModelId, threads: usize, speedup: f64) {
        let m = &mut self.models[model.0];
        m.cpu_threads = threads.max(1);
        m.cpu_speedup = if speedup.is_finite() && speedup > 0.0 {
            speedup
        } else {
            1.0
        };
        self.replan_soon();
    }

    /// Declares whether `model` is requested on demand (events such as a tap, e.g. a style
    /// transfer) rather than continuously or at a rate: each of its jobs then takes the processor
    /// that answers it soonest, and its rate is never cut. Default: not on demand.
    pub fn set_on_demand(&mut self, model: ModelId, on_demand: bool) {
        self.models[model.0].on_demand = on_demand;
        self.replan_soon();
    }

    /// Counters and state of `model`; `now_ms` is used for its current utility.
    pub fn status(&self, model: ModelId, now_ms: f64) -> ModelStatus {
        let m = &self.models[model.0];
        let entry = self.plan.entry(model);
        let requested = match entry {
            Some(e) => e.requested_hz,
            None => m
                .request_interval_ms
                .filter(|p| *p > 0.0 && !m.on_demand)
                .map(|p| 1000.0 / p),
        };
        ModelStatus {
            name: m.name.clone(),
            mode: m.mode,
            mode_history: m.modes.recent(),
            mode_switches: m.modes.switches(),
            offloaded_ms: m.modes.offloaded_ms(now_ms),
            deadline_overrides: m.overrides,
            resumed_from_gpu: m.resumed_from_gpu,
            finished_on_gpu_after_offload: m.finished_on_gpu_after_offload,
            jobs_moved_to_cpu: m.jobs_moved_to_cpu,
            chunks: m.analysis.partition.chunks.len(),
            oversized_steps: m.analysis.partition.oversized_steps.clone(),
            utility: m.job.as_ref().map(|j| {
                m.utility.utility(
                    now_ms - j.t_start,
                    self.cfg.alpha,
                    j.request.content_variation,
                )
            }),
            cpu_threads: self.cpu_slots_of(m),
            on_demand: m.on_demand,
            requested_rate_hz: requested,
            granted_rate_hz: entry.and_then(|e| e.granted_hz).or(requested),
            shortfall: entry.and_then(|e| e.shortfall),
            expected_latency_ms: entry
                .map(|e| e.expected_latency_ms)
                .or_else(|| Some(self.expected_latency(m))),
        }
    }

    /// The timeline recorded so far (a ring of the most recent events).
    pub fn timeline(&self) -> &Timeline {
        &self.timeline
    }

    /// The timeline, to add the caller's own events (the simulator's renders).
    pub(crate) fn timeline_mut(&mut self) -> &mut Timeline {
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
        self.replan_soon();
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
            self.replan_soon();
        }
    }

    /// Submits a request at `now_ms`. It starts at once if the model has nothing in flight and
    /// its granted rate allows it; otherwise it waits, replacing any older waiting request (the
    /// latest frame wins). A retired model's requests are ignored.
    pub fn submit(&mut self, model: ModelId, request: Request, now_ms: f64) {
        let m = &mut self.models[model.0];
        if m.retired {
            return;
        }
        if !m.requests_reported {
            self.note_request(model.0, now_ms);
        }
        if self.models[model.0].job.is_some() {
            self.models[model.0].pending = Some(request);
        } else {
            self.offer(model.0, request, now_ms);
        }
    }

    /// Tells the coordinator that the app asked for an inference of `model` at `now_ms`, for a
    /// caller that holds its requests until the model is idle and submits only then (the Bevy
    /// plugin): the requested rate the plan counts is then the app's, not the rate at which the
    /// model happened to be idle. Once called for a model, [`Self::submit`] no longer feeds its
    /// request interval.
    pub fn requested(&mut self, model: ModelId, now_ms: f64) {
        let m = &mut self.models[model.0];
        if m.retired {
            return;
        }
        m.requests_reported = true;
        self.note_request(model.0, now_ms);
    }

    /// Folds a request at `now` into model `i`'s mean request interval.
    fn note_request(&mut self, i: usize, now: f64) {
        let m = &mut self.models[i];
        if let Some(last) = m.last_request_ms {
            let gap = (now - last).max(0.0);
            m.request_interval_ms =
                Some(m.request_interval_ms.map_or(gap, |e| 0.8 * e + 0.2 * gap));
        }
        m.last_request_ms = Some(now);
        self.note_interval(i);
    }

    /// Takes `model` out of the coordination for good: the caller replaced it (a model compiled
    /// again, e.g. in another precision, registers under a new id) or removed it. Its running and
    /// waiting inferences are dropped (work of it still in flight may be reported and only feeds
    /// its profile), later requests to it are ignored, and it no longer counts in the GPU load or
    /// holds a place on the CPU in the offload decisions. Its id stays valid for
    /// [`Self::status`].
    pub fn retire(&mut self, model: ModelId) {
        let Some(m) = self.models.get_mut(model.0) else {
            return;
        };
        m.retired = true;
        m.job = None;
        m.pending = None;
        m.gpu_recent_ms = 0.0;
        self.replan_soon();
    }

    /// Whether `model` has an inference in flight.
    pub fn busy(&self, model: ModelId) -> bool {
        self.models[model.0].job.is_some()
    }

    /// Decides what to run now. `idle_cpu_slots` is how many CPU slots (cores for inference)
    /// are free: the CPU work returned occupies at most that many together.
    pub fn schedule(
        &mut self,
        now_ms: f64,
        event: Event,
        window: GpuWindow,
        idle_cpu_slots: usize,
    ) -> Decision {
        let coordinated = self.policy.coordinated();
        if self.planner_active() {
            self.maybe_replan(now_ms);
        } else if coordinated && self.cfg.placement.enabled && now_ms >= self.next_offload_eval {
            self.evaluate_offload(now_ms);
        }
        self.admit_due(now_ms);
        self.reconsider_on_demand_jobs(now_ms);
        let ctx = self.context(now_ms, window.start_ms.max(now_ms), idle_cpu_slots);
        let mut decision = Decision::default();
        self.schedule_cpu(&ctx, idle_cpu_slots, coordinated, &mut decision);
        match self.policy.dispatch() {
            Dispatch::FrameBudget if self.cfg.chunking => {
                self.schedule_gpu_budget(&ctx, window, &mut decision)
            }
            Dispatch::FrameBudget => self.schedule_gpu_whole_ranked(&ctx, window, &mut decision),
            Dispatch::WholeRuns => self.schedule_gpu_whole(&ctx, window, &mut decision),
            Dispatch::OpsPerFrame(k) => {
                if event == Event::FrameRendered {
                    self.schedule_gpu_ops(&ctx, window, k, &mut decision);
                }
            }
        }
        decision
    }

    /// Hands out CPU work only, for `idle_cpu_slots` free slots, at `now_ms`: for a caller that
    /// learns of a CPU worker's end between its frames' decisions (a worker thread that asks for
    /// its next piece itself), so that a slot does not idle until the next frame. The GPU is not
    /// touched; plans and admissions are brought up to date as in [`Self::schedule`].
    pub fn schedule_cpu_only(&mut self, now_ms: f64, idle_cpu_slots: usize) -> Vec<CpuWork> {
        let coordinated = self.policy.coordinated();
        if self.planner_active() {
            self.maybe_replan(now_ms);
        }
        self.admit_due(now_ms);
        self.reconsider_on_demand_jobs(now_ms);
        let ctx = self.context(now_ms, now_ms, idle_cpu_slots);
        let mut decision = Decision::default();
        self.schedule_cpu(&ctx, idle_cpu_slots, coordinated, &mut decision);
        decision.cpu
    }
}
