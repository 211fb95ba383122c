//! The periodic offload evaluation: measures the GPU load of the last interval, asks
//! [`crate::offload::decide`] for a switch, and applies it to the model and its running job
//! (which keeps what the GPU computed: it continues on the CPU from the step reached, or finishes
//! on the GPU when that is sooner).

use super::Coordinator;
use super::state::resumes_at;
use crate::model::ModelId;
use crate::offload::{self, GpuLoad, OffloadView};
use crate::processor::Processor;
use crate::timeline::Lane;

impl Coordinator {
    pub(super) fn evaluate_offload(&mut self, now: f64) {
        let elapsed = (now - self.last_offload_eval).max(1e-9);
        self.last_offload_eval = now;
        self.next_offload_eval = now + self.cfg.placement.min_dwell_ms;
        let b = self.cfg.budget;
        let capacity = b.budget_ms() / b.frame_period_ms;
        let total_recent: f64 = self
            .models
            .iter()
            .filter(|m| m.mode == Processor::Gpu && !m.retired)
            .map(|m| m.gpu_recent_ms)
            .sum();
        let load = GpuLoad {
            util: total_recent / elapsed,
            capacity,
            saturation: self.cfg.placement.gpu_saturation,
        };
        let views: Vec<OffloadView> = self
            .models
            .iter()
            .enumerate()
            .filter(|(_, m)| !m.retired)
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
                // The last latency, the running job's age, or a longer one in the interval.
                let gpu_latency = [m.last_gpu_latency, running_age, m.worst_recent_gpu_latency]
                    .into_iter()
                    .flatten()
                    .reduce(f64::max);
                OffloadView {
                    model: ModelId(i),
                    mode: m.mode,
                    gpu_latency_ms: gpu_latency,
                    expected_gpu_latency_ms: m.analysis.gpu_total() / share + b.frame_period_ms,
                    cpu_latency_ms: m
                        .cpu_latency_ema
                        .unwrap_or_else(|| m.cpu_ms(0..m.analysis.len())),
                    deadline_ms: m.deadline_ms,
                    gpu_demand: m.analysis.gpu_total()
                        / m.request_interval_ms
                            .unwrap_or(self.cfg.placement.min_dwell_ms)
                            .max(1e-3),
                }
            })
            .collect();
        for m in &mut self.models {
            m.gpu_recent_ms = 0.0;
            m.worst_recent_gpu_latency = None;
        }
        let reserve = usize::from(
            self.models
                .iter()
                .any(|m| !m.retired && m.analysis.has_cpu_only),
        );
        let max_on_cpu = self.cfg.cpu_workers.saturating_sub(reserve);
        let Some(sw) = offload::decide(&views, self.cfg.placement.margin, max_on_cpu, load) else {
            return;
        };
        self.switch_model(sw.model.0, sw.to, now);
    }

    /// Moves model `i`'s new inferences to `to`, and decides where its running job goes on.
    pub(super) fn switch_model(&mut self, i: usize, to: Processor, now: f64) {
        let period = self.cfg.budget.frame_period_ms;
        let budget = self.cfg.budget.budget_ms().max(1e-3);
        let m = &mut self.models[i];
        m.mode = to;
        m.modes.switch(now, to);
        let speedup = m.cpu_speedup;
        let a = &m.analysis;
        let n = a.len();
        if let Some(job) = m.job.as_mut() {
            let started = job.planned > 0 || job.gpu_inflight > 0 || job.cpu_inflight;
            match (job.processor, to) {
                (Processor::Gpu, Processor::Cpu) if started => {
                    // Keep what the GPU computed: continue on the CPU from the step reached (or,
                    // where the caller cannot resume from the GPU's activations, start it again
                    // there), or finish on the GPU if that is sooner (both wait for the chunks
                    // queued).
                    let p = job.planned;
                    let gpu_rest = a.costs.range_ms(p..n, Processor::Gpu) * period / budget
                        + a.fallback_ms(p..n) / speedup;
                    let from = if resumes_at(&m.resumable, p, self.cfg.offload_resumes_from_gpu) {
                        p
                    } else {
                        0
                    };
                    let cpu_rest = a.costs.range_ms(from..n, Processor::Cpu) / speedup;
                    if cpu_rest < gpu_rest {
                        job.processor = Processor::Cpu;
                    } else {
                        m.finished_on_gpu_after_offload += 1;
                    }
                }
                (_, to) if !started => job.processor = to,
                _ => {}
            }
        }
        if self.timeline.is_enabled() {
            let m = &self.models[i];
            let name = format!("{} -> {}", m.name, to.name());
            self.timeline
                .instant(Lane::Coordinator, "offload", name, now, Vec::new());
        }
    }
}
