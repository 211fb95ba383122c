//! Finished work: measured times feed the profiles (and re-partitioning when they drift), the
//! timeline records what ran, and the last piece of an inference completes it and admits the
//! model's waiting request.

use super::Coordinator;
use super::state::Inflight;
use super::types::{Completion, WorkId};
use crate::model::ModelId;
use crate::processor::Processor;
use crate::timeline::Lane;

impl Coordinator {
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

    /// Reports that `model`'s GPU work has all finished, before its timestamps are read back:
    /// the outputs of its inference were read at `at_ms`, so the GPU is done with every piece
    /// of it in flight. The inference completes now (the model may take its next request at
    /// once, not a frame later when the frame's timestamps come back); the measured times,
    /// reported later with [`Self::gpu_done`], then only refine the profile. Returns the
    /// completed inference, if its last piece was among them.
    pub fn gpu_outputs_read(&mut self, model: ModelId, at_ms: f64) -> Option<Completion> {
        let mut ids: Vec<(usize, WorkId)> = self
            .inflight
            .iter()
            .filter(|(_, w)| w.model == model && w.processor == Processor::Gpu)
            .map(|(id, w)| (w.ops.start, *id))
            .collect();
        ids.sort_unstable();
        let mut done = None;
        for (_, id) in ids {
            if let Some(w) = self.inflight.remove(&id) {
                done = self.finish(&w, at_ms).or(done);
                self.awaiting_times.insert(id, w);
            }
        }
        done
    }

    fn work_done(
        &mut self,
        id: WorkId,
        start_ms: f64,
        end_ms: f64,
        worker: Option<usize>,
    ) -> Option<Completion> {
        if let Some(w) = self.awaiting_times.remove(&id) {
            // Completed at its readback: the times only feed the profile.
            self.measure(&w, start_ms, end_ms, worker);
            return None;
        }
        let w = self.inflight.remove(&id)?;
        self.measure(&w, start_ms, end_ms, worker);
        self.finish(&w, end_ms)
    }

    /// Feeds a piece's measured times to its model's profile and the timeline.
    fn measure(&mut self, w: &Inflight, start_ms: f64, end_ms: f64, worker: Option<usize>) {
        let budget = self.cfg.budget;
        let drift = self.cfg.repartition_drift;
        let m = &mut self.models[w.model.0];
        let measured = end_ms - start_ms;
        match w.processor {
            Processor::Gpu => {
                let t = (measured - budget.chunk_overhead_ms).max(0.0);
                m.analysis.observe(w.ops.clone(), Processor::Gpu, t);
            }
            Processor::Cpu => {
                // The profile keeps one-thread times.
                let one_thread = measured * m.cpu_speedup;
                m.analysis
                    .observe(w.ops.clone(), Processor::Cpu, one_thread);
            }
        }
        m.analysis.refresh_costs();
        m.analysis.maybe_repartition(&budget, drift, false);
        if self.planner_active() {
            self.note_costs(w.model.0);
        }
        let m = &self.models[w.model.0];
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
    }

    /// The job bookkeeping of a finished piece: the last one completes the inference (at
    /// `end_ms`) and admits the model's waiting request.
    fn finish(&mut self, w: &Inflight, end_ms: f64) -> Option<Completion> {
        let m = &mut self.models[w.model.0];
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
            m.worst_recent_gpu_latency = Some(
                m.worst_recent_gpu_latency
                    .map_or(latency, |w| w.max(latency)),
            );
        }
        let done = Completion {
            model: w.model,
            request: job.request,
            admitted_ms: job.t_start,
            finished_ms: end_ms,
            deadline_met: m.deadline_ms.map(|d| latency <= d),
            offloaded: job.offloaded,
        };
        self.admit_pending(w.model.0, end_ms);
        Some(done)
    }
}
