//! CPU work for idle workers: fallback steps of GPU models (as chunks of their own), and the rest
//! of an inference whose model is offloaded, continuing from the step reached (or from its
//! input, where the caller cannot resume from the GPU's activations).

use super::Coordinator;
use super::state::{ModelState, Rank, cmp_rank, resumes_at};
use super::types::{CpuWork, Decision, Resume};
use crate::model::ModelId;
use crate::policy::PolicyContext;
use crate::processor::Processor;

impl Coordinator {
    /// Hands out CPU work for at most `idle` slots, highest priority first. A job that needs
    /// more slots than are free holds them: nothing ranked below it starts, but work that is
    /// expected to end before the held job would have its slots anyway (the running work's
    /// planned ends) may use a held slot (backfilling: the held job starts no later for it).
    pub(super) fn schedule_cpu(
        &mut self,
        ctx: &PolicyContext,
        idle: usize,
        coordinated: bool,
        out: &mut Decision,
    ) {
        let mut free = idle;
        let mut taken: Vec<usize> = Vec::new();
        // Once a job holds the free slots: how long until it would have them, ms.
        let mut held_for: Option<f64> = None;
        while free > 0 {
            let best = self.best_cpu_candidate(ctx, coordinated, &taken, free, held_for);
            let Some(i) = best else { break };
            taken.push(i);
            let threads = self.cpu_slots_of(&self.models[i]);
            if threads > free {
                // Hold the free slots for it; only shorter work may still use them.
                if held_for.is_none() {
                    held_for = Some(self.wait_for_slots(threads, ctx.now_ms));
                }
                continue;
            }
            free -= threads;
            let by_default = self.cfg.offload_resumes_from_gpu;
            let (planned, last_on, processor) = {
                let job = self.models[i].job.as_ref().expect("candidate has a job");
                (job.planned, job.last_on, job.processor)
            };
            let offloaded = processor == Processor::Cpu;
            // An offloaded inference the GPU had started restarts from its input where the
            // caller cannot resume from the GPU's activations.
            let restart = offloaded
                && last_on == Some(Processor::Gpu)
                && !resumes_at(&self.models[i].resumable, planned, by_default);
            let start = if restart { 0 } else { planned };
            // Continuous work on the CPU goes in pieces when the slots run short (a job that
            // comes waits at most one); a fallback step of a GPU model as its chunk.
            let end = if offloaded {
                self.piece_end(i, start, free)
            } else {
                self.models[i]
                    .analysis
                    .partition
                    .chunk_containing(start)
                    .ops
                    .end
            };
            let m = &mut self.models[i];
            let a = &m.analysis;
            let job = m.job.as_mut().expect("candidate has a job");
            let resume = match (start, job.last_on) {
                (0, _) | (_, None) => Resume::Input,
                (_, Some(Processor::Gpu)) => Resume::FromGpu,
                (_, Some(Processor::Cpu)) => Resume::FromCpu,
            };
            if offloaded && resume == Resume::FromGpu {
                m.resumed_from_gpu += 1;
            }
            let est = a.costs.range_ms(start..end, Processor::Cpu) / m.cpu_speedup;
            job.planned = end;
            job.cpu_inflight = true;
            job.cpu_planned_end = ctx.now_ms + est;
            job.offloaded |= offloaded;
            job.last_on = Some(Processor::Cpu);
            let id = self.new_work(
                ModelId(i),
                start..end,
                (Processor::Cpu, threads),
                ctx.now_ms + est,
            );
            out.cpu.push(CpuWork {
                id,
                model: ModelId(i),
                ops: start..end,
                est_ms: est,
                threads,
                offloaded,
                resume,
            });
        }
    }

    /// The highest-ranked job with CPU work to hand out, among those not `taken`; while a job
    /// holds the `free` slots (`held_for`: ms until it would have its own), only one that fits
    /// them and is expected to end before then.
    fn best_cpu_candidate(
        &self,
        ctx: &PolicyContext,
        coordinated: bool,
        taken: &[usize],
        free: usize,
        held_for: Option<f64>,
    ) -> Option<usize> {
        let mut best: Option<(usize, Rank)> = None;
        for (i, m) in self.models.iter().enumerate() {
            let Some(job) = &m.job else { continue };
            if taken.contains(&i) {
                continue;
            }
            if job.cpu_inflight || job.gpu_inflight > 0 || job.planned >= m.analysis.len() {
                continue;
            }
            if job.processor == Processor::Gpu && m.analysis.gpu_can_run(job.planned) {
                continue;
            }
            if let Some(h) = held_for
                && (self.cpu_slots_of(m) > free || self.cpu_run_ms(m, job.planned) > h)
            {
                continue;
            }
            let v = self.view(m, i, job, ctx.now_ms);
            let rank = self.priority(ctx, &v, coordinated);
            if best.is_none_or(|(_, b)| cmp_rank(&rank, &b).is_gt()) {
                best = Some((i, rank));
            }
        }
        best.map(|(i, _)| i)
    }

    /// The expected time of the CPU work `m`'s job would get from step `planned`, ms, at most:
    /// the rest of an offloaded inference (a piece may be shorter), or the fallback chunk of a
    /// GPU model that contains it.
    fn cpu_run_ms(&self, m: &ModelState, planned: usize) -> f64 {
        let n = m.analysis.len();
        let end = match m.job.as_ref().map(|j| j.processor) {
            Some(Processor::Cpu) => n,
            _ => m.analysis.partition.chunk_containing(planned).ops.end,
        };
        m.cpu_ms(planned..end.max(planned))
    }
}
