//! Admission: a model's next inference starts when the model is idle and its granted rate allows
//! it (a degraded model's next job starts no earlier than `1 / granted` after its last; the
//! latest request waits, the latest frame wins), on the processor the plan gives it, or, for an
//! on-demand model, on the processor that answers this job soonest.

use super::Coordinator;
use super::state::{Job, resumes_at};
use super::types::Request;
use crate::processor::Processor;

impl Coordinator {
    /// Offers `request` to idle model `i` at `now`: admitted at once unless its granted rate
    /// makes it wait, then it waits as the model's pending request.
    pub(super) fn offer(&mut self, i: usize, request: Request, now: f64) {
        if self.rate_allows(i, now) {
            self.admit(i, request, now);
        } else {
            self.models[i].pending = Some(request);
        }
    }

    /// Admits the pending request of idle model `i`, if there is one and its rate allows it.
    pub(super) fn admit_pending(&mut self, i: usize, now: f64) {
        let m = &self.models[i];
        if m.job.is_some() || m.pending.is_none() || m.retired || !self.rate_allows(i, now) {
            return;
        }
        let request = self.models[i].pending.take().expect("checked above");
        self.admit(i, request, now);
    }

    /// Admits every idle model's pending request whose time has come: a rate-cut model's once
    /// `1 / granted` has passed since its last start, and any model's whose cut a re-plan lifted
    /// while its request waited (nothing else would admit it: a caller that holds its requests
    /// until the model answers, as the Bevy plugin does, does not submit again).
    pub(super) fn admit_due(&mut self, now: f64) {
        for i in 0..self.models.len() {
            self.admit_pending(i, now);
        }
    }

    /// Whether model `i`'s granted rate lets a new inference start at `now`.
    fn rate_allows(&self, i: usize, now: f64) -> bool {
        let m = &self.models[i];
        match (m.min_interval_ms, m.last_admit_ms) {
            (Some(gap), Some(last)) => now >= last + gap - 1e-9,
            _ => true,
        }
    }

    fn admit(&mut self, i: usize, request: Request, now: f64) {
        let processor = self.admission_processor(i, now);
        self.next_seq += 1;
        let m = &mut self.models[i];
        m.job = Some(Job::new(self.next_seq, request, now, processor));
        m.last_admit_ms = Some(now);
    }

    /// Where model `i`'s new inference runs: where the plan puts the model, or, for an
    /// on-demand model under the planner, the processor expected to finish it soonest
    /// ([`Self::soonest_processor`] from its first step).
    fn admission_processor(&self, i: usize, now: f64) -> Processor {
        let m = &self.models[i];
        if !(m.on_demand && self.planner_active()) {
            return m.mode;
        }
        self.soonest_processor(i, 0, now)
    }

    /// Under the planner, an on-demand model's inference that waits on the GPU moves to the CPU
    /// when the CPU would now finish it sooner (from the step the GPU reached where the caller
    /// resumes there, else from its input): its processor was chosen at admission, when the GPU
    /// seemed to have room, and a budget that shrank since leaves it a few steps a frame (a palm
    /// detection took 124 ms on the GPU at 1440p60 where the CPU takes 8:
    /// docs/measurements/contention/2026-12-03e-h200). Never back: a job the CPU took stays.
    pub(super) fn reconsider_on_demand_jobs(&mut self, now: f64) {
        if !self.planner_active() {
            return;
        }
        for i in 0..self.models.len() {
            let m = &self.models[i];
            let waits_on_gpu = m.job.as_ref().is_some_and(|j| {
                j.processor == Processor::Gpu && !j.cpu_inflight && j.planned < m.analysis.len()
            });
            if !m.on_demand || m.retired || !waits_on_gpu {
                continue;
            }
            let from = m.job.as_ref().map_or(0, |j| j.planned);
            if self.soonest_processor(i, from, now) == Processor::Cpu
                && let Some(job) = self.models[i].job.as_mut()
            {
                job.processor = Processor::Cpu;
                self.models[i].jobs_moved_to_cpu += 1;
            }
        }
    }

    /// The processor expected to finish model `i`'s inference soonest from step `from` on: the
    /// GPU (its remaining GPU time and one chunk's overhead when that fits the frame's budget,
    /// since an on-demand job ranks first; else, from the first step, its expected latency
    /// under the plan's load, and from a later one its remaining time spread over the budget
    /// of each frame) against the CPU (its time at its threads from the step it would resume
    /// at, after the wait for that many free slots and for the job's GPU work in flight). Ties
    /// go to the GPU.
    fn soonest_processor(&self, i: usize, from: usize, now: f64) -> Processor {
        let m = &self.models[i];
        let a = &m.analysis;
        let n = a.len();
        let b = self.cfg.budget;
        let gpu = if a.gpu_capable && b.budget_ms() > b.chunk_overhead_ms {
            let rest = a.costs.range_ms(from..n, Processor::Gpu);
            let fallback = a.fallback_ms(from..n) / m.cpu_speedup;
            if rest + b.chunk_overhead_ms <= b.budget_ms() {
                // It fits this frame's budget: an event ranks first, so it runs in the frame
                // now being decided, not at the share of the GPU the plan gives continuous
                // work (the plan's figure, which waits half a frame and spreads the model over
                // the budget, was 12.6 ms for multistyle26 at 1440p60 where it took 5.5 from the
                // decision to its outputs: docs/measurements/contention/2026-12-03c-h200).
                rest + b.chunk_overhead_ms + fallback
            } else {
                let spread = rest * b.frame_period_ms / b.budget_ms() + fallback;
                let planned = (from == 0)
                    .then(|| self.plan.entry(crate::model::ModelId(i)))
                    .flatten()
                    .and_then(|e| e.gpu_latency_ms);
                planned.unwrap_or(spread + 0.5 * b.frame_period_ms)
            }
        } else {
            f64::INFINITY
        };
        let cpu = if a.cpu_capable {
            let resume =
                from > 0 && resumes_at(&m.resumable, from, self.cfg.offload_resumes_from_gpu);
            let start = if resume { from } else { 0 };
            let gpu_queued = m
                .job
                .as_ref()
                .filter(|j| j.gpu_inflight > 0)
                .map_or(0.0, |j| (j.gpu_planned_end - now).max(0.0));
            let wait = self
                .wait_for_slots(self.cpu_slots_of(m), now)
                .max(gpu_queued);
            a.costs.range_ms(start..n, Processor::Cpu) / m.cpu_speedup + wait
        } else {
            f64::INFINITY
        };
        if cpu < gpu {
            Processor::Cpu
        } else {
            Processor::Gpu
        }
    }

    /// How long until `threads` CPU slots are free, by the planned ends of the CPU work in
    /// flight, ms.
    pub(super) fn wait_for_slots(&self, threads: usize, now: f64) -> f64 {
        let slots = self.cfg.cpu_workers.max(1);
        let mut running: Vec<(f64, usize)> = self
            .inflight
            .values()
            .filter(|w| w.processor == Processor::Cpu)
            .map(|w| (w.planned_end, w.threads))
            .collect();
        let busy: usize = running.iter().map(|r| r.1).sum();
        let mut free = slots.saturating_sub(busy);
        if free >= threads {
            return 0.0;
        }
        running.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (end, t) in running {
            free += t;
            if free >= threads {
                return (end - now).max(0.0);
            }
        }
        0.0
    }
}
