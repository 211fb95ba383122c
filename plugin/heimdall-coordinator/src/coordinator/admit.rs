//! Admission: a model's next inference starts when the model is idle and its granted rate allows
//! it (a degraded model's next job starts no earlier than `1 / granted` after its last; the
//! latest request waits, the latest frame wins), on the processor the plan gives it, or, for an
//! on-demand model, on the processor that answers this job soonest.

use super::Coordinator;
use super::state::Job;
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
    /// on-demand model under the planner, the processor expected to finish it soonest: the GPU
    /// (its GPU time and one chunk's overhead when it fits the frame's budget, since an event
    /// runs first; else its expected latency under the plan's load) against the CPU (its time
    /// at its threads after the wait for that many free slots). Ties go to the GPU.
    fn admission_processor(&self, i: usize, now: f64) -> Processor {
        let m = &self.models[i];
        if !(m.on_demand && self.planner_active()) {
            return m.mode;
        }
        let a = &m.analysis;
        let b = self.cfg.budget;
        let gpu = if a.gpu_capable && b.budget_ms() > b.chunk_overhead_ms {
            let fallback = a.fallback_ms(0..a.len()) / m.cpu_speedup;
            if a.gpu_total() + b.chunk_overhead_ms <= b.budget_ms() {
                // It fits this frame's budget: an event ranks first, so it runs in the frame
                // now being decided, not at the share of the GPU the plan gives continuous
                // work (the plan's figure, which waits half a frame and spreads the model over
                // the budget, was 12.6 ms for multistyle26 at 1440p60 where it took 5.5 from the
                // decision to its outputs: docs/measurements/contention/2026-12-03c-h200).
                a.gpu_total() + b.chunk_overhead_ms + fallback
            } else {
                self.plan
                    .entry(crate::model::ModelId(i))
                    .and_then(|e| e.gpu_latency_ms)
                    .unwrap_or_else(|| {
                        a.gpu_total() * b.frame_period_ms / b.budget_ms()
                            + fallback
                            + 0.5 * b.frame_period_ms
                    })
            }
        } else {
            f64::INFINITY
        };
        let cpu = if a.cpu_capable {
            a.cpu_total() / m.cpu_speedup + self.wait_for_slots(self.cpu_slots_of(m), now)
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
