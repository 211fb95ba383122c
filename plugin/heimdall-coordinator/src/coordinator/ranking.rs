//! Where each job stands, below every scheduling part: the policy's view of a job
//! ([`JobView`]), its [`Rank`] (score, deadline override), its expected times, the policy's
//! context of a decision, and the ids of new work. The parts above (`mod.rs`'s API, admission,
//! GPU and CPU scheduling, completions, placement) call these; nothing here calls them back.

use super::Coordinator;
use super::state::{self, Job, ModelState, Rank};
use super::types::WorkId;
use crate::model::ModelId;
use crate::policy::{JobView, PolicyContext};
use crate::processor::Processor;

impl Coordinator {
    /// Slots a piece of `model`'s CPU work occupies: its threads, at most the slots.
    pub(super) fn cpu_slots_of(&self, m: &ModelState) -> usize {
        m.cpu_threads.clamp(1, self.cfg.cpu_workers.max(1))
    }

    /// Expected latency of one inference of `m` where it runs now, alone, ms.
    pub(super) fn expected_latency(&self, m: &ModelState) -> f64 {
        let a = &m.analysis;
        match m.mode {
            Processor::Cpu => a.cpu_total() / m.cpu_speedup,
            Processor::Gpu => {
                let b = self.cfg.budget;
                a.gpu_total() * b.frame_period_ms / b.budget_ms().max(1e-3)
                    + a.fallback_ms(0..a.len()) / m.cpu_speedup
                    + b.frame_period_ms
            }
        }
    }

    /// Expected time until `job` finishes where it runs, ms.
    pub(super) fn remaining_ms(&self, m: &ModelState, job: &Job, now: f64) -> f64 {
        let a = &m.analysis;
        let n = a.len();
        let p = job.planned;
        let queued = (job.gpu_planned_end.max(job.cpu_planned_end) - now).max(0.0);
        let rest = match job.processor {
            Processor::Cpu => m.cpu_ms(p..n),
            Processor::Gpu => {
                let gpu = a.costs.range_ms(p..n, Processor::Gpu);
                // The GPU gives the DNNs only the budget of every frame.
                let b = self.cfg.budget.budget_ms().max(1e-3);
                gpu * self.cfg.budget.frame_period_ms / b + a.fallback_ms(p..n) / m.cpu_speedup
            }
        };
        queued + rest
    }

    /// What the policy sees of `job`, model `id`'s, at `now`.
    pub(super) fn view<'a>(
        &self,
        m: &'a ModelState,
        id: usize,
        job: &Job,
        now: f64,
    ) -> JobView<'a> {
        let n = m.analysis.len();
        JobView {
            model: ModelId(id),
            seq: job.seq,
            t_start_ms: job.t_start,
            utility: m.utility,
            content_variation: job.request.content_variation,
            deadline_ms: m.deadline_ms,
            next_op: job.planned,
            remaining_ms: self.remaining_ms(m, job, now),
            // A job placed on the CPU is weighed by its work there (a CPU-only model's GPU work
            // is none, which made its density unbounded and let it outrank every event).
            remaining_gpu_ms: match job.processor {
                Processor::Cpu => m.cpu_ms(job.planned.min(n)..n),
                Processor::Gpu => m
                    .analysis
                    .costs
                    .range_ms(job.planned.min(n)..n, Processor::Gpu),
            },
            costs: &m.analysis.costs,
        }
    }

    /// Where job `v` stands: the policy's score and the deadline override's view.
    ///
    /// A job is critical once it could no longer finish in time if it waited one more interval,
    /// counting its remaining time with the guard `(1 + deadline_guard)` for estimation errors;
    /// a job that is already expected to be late stays critical (Heimdall sec. 6.4: "in case a DNN
    /// is not expected to finish within the deadline, the coordinator runs it immediately").
    ///
    /// A job without a deadline has its utility's end as one: once its utility has decayed to
    /// zero it is overdue and critical, the longest-expired first. The utility policies value
    /// such a job at zero, so beside a DNN that always wants the GPU (an equal continuous DNN,
    /// whose next job is always fresher) it would otherwise never run: two hands' landmark models
    /// on lavapipe, where an inference outlasts the utility, tracked one hand of two.
    pub(super) fn priority(&self, ctx: &PolicyContext, v: &JobView<'_>, coordinated: bool) -> Rank {
        let own = v.deadline_abs_ms();
        let (deadline, due) = if own.is_finite() {
            let slack = own - (ctx.now_ms + v.remaining_ms * (1.0 + self.cfg.deadline_guard));
            (own, slack <= ctx.interval_ms)
        } else {
            let end = v
                .utility
                .lifetime_ms(self.cfg.alpha, v.content_variation)
                .map_or(f64::INFINITY, |life| v.t_start_ms + life);
            (end, ctx.now_ms >= end)
        };
        let slack = deadline - (ctx.now_ms + v.remaining_ms * (1.0 + self.cfg.deadline_guard));
        Rank {
            critical: coordinated && self.cfg.deadline_override && deadline.is_finite() && due,
            deadline,
            slack,
            remaining: v.remaining_ms,
            score: self.policy.score(ctx, v),
            seq: v.seq,
        }
    }

    /// Where model `i`'s job stands, if it has one.
    pub(super) fn key_of(&self, ctx: &PolicyContext, i: usize) -> Option<Rank> {
        let m = &self.models[i];
        let job = m.job.as_ref()?;
        let v = self.view(m, i, job, ctx.now_ms);
        Some(self.priority(ctx, &v, self.policy.coordinated()))
    }

    /// The policy's view of a decision at `now_ms` with the GPU free from `gpu_free_ms`.
    pub(super) fn context(
        &self,
        now_ms: f64,
        gpu_free_ms: f64,
        idle_cpu_slots: usize,
    ) -> PolicyContext {
        let cpu_free = if idle_cpu_slots > 0 {
            now_ms
        } else {
            self.inflight
                .values()
                .filter(|w| w.processor == Processor::Cpu)
                .map(|w| w.planned_end)
                .fold(f64::INFINITY, f64::min)
                .max(now_ms)
        };
        PolicyContext {
            now_ms,
            interval_ms: self.cfg.budget.frame_period_ms,
            alpha: self.cfg.alpha,
            gpu_free_ms,
            cpu_free_ms: if cpu_free.is_finite() {
                cpu_free
            } else {
                now_ms
            },
        }
    }

    /// A new piece of work in flight: `ops` of `model` on `processor` with `threads`, expected
    /// to end at `planned_end`.
    pub(super) fn new_work(
        &mut self,
        model: ModelId,
        ops: std::ops::Range<usize>,
        (processor, threads): (Processor, usize),
        planned_end: f64,
    ) -> WorkId {
        self.next_work += 1;
        let id = WorkId(self.next_work);
        self.inflight.insert(
            id,
            state::Inflight {
                model,
                ops,
                processor,
                planned_end,
                threads,
            },
        );
        id
    }
}
