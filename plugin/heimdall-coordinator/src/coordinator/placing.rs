//! The placement planner in the coordinator: each model's demand built from its profile and its
//! requests, a re-plan regularly and whenever something it depends on changes, and the plan
//! applied (models moved, running jobs kept where that is sooner, granted rates enforced by
//! admission).

use super::Coordinator;
use crate::model::ModelId;
use crate::placement::{self, DnnDemand, Machine, PlacementRule, ShortfallReason};
use crate::processor::Processor;

impl Coordinator {
    /// Whether the planner places the models: a coordinated policy, placement on, and the
    /// planner's rule.
    pub(super) fn planner_active(&self) -> bool {
        self.policy.coordinated()
            && self.cfg.placement.enabled
            && self.cfg.placement.rule == PlacementRule::Planner
    }

    /// Marks the plan as out of date: the next decision re-plans.
    pub(super) fn replan_soon(&mut self) {
        self.replan_due = true;
    }

    /// Re-plans when due: every `interval_ms`, at once when marked, and when the frames' GPU
    /// budget collapsed to none or came back.
    pub(super) fn maybe_replan(&mut self, now: f64) {
        let budget = self.machine().has_gpu_budget();
        if self.replan_due || now >= self.next_plan_ms || budget != self.plan.gpu_budget {
            self.replan(now);
        }
    }

    /// The machine as the frames leave it now.
    fn machine(&self) -> Machine {
        let b = &self.cfg.budget;
        Machine {
            frame_period_ms: b.frame_period_ms,
            gpu_budget_ms: b.budget_ms(),
            chunk_overhead_ms: b.chunk_overhead_ms,
            cpu_slots: self.cfg.cpu_workers.max(1),
        }
    }

    /// The request interval of model `i` the plan counts, ms: its mean interval, unless it has
    /// not been requested for more than two intervals and two frames (it stopped).
    fn live_interval(&self, i: usize, now: f64) -> Option<f64> {
        let m = &self.models[i];
        let p = m.request_interval_ms?;
        let last = m.last_request_ms?;
        let idle = now - last > 2.0 * p + 2.0 * self.cfg.budget.frame_period_ms;
        (!idle && p > 0.0).then_some(p)
    }

    /// Every live model's demand.
    fn demands(&self, now: f64) -> Vec<DnnDemand> {
        let overhead = self.cfg.budget.chunk_overhead_ms;
        self.models
            .iter()
            .enumerate()
            .filter(|(_, m)| !m.retired)
            .map(|(i, m)| {
                let a = &m.analysis;
                let n = a.len();
                DnnDemand {
                    model: ModelId(i),
                    gpu_ms: a.gpu_total() + overhead * a.partition.chunks.len() as f64,
                    fallback_ms: a.fallback_ms(0..n) / m.cpu_speedup,
                    cpu_ms: a.cpu_total(),
                    cpu_threads: self.cpu_slots_of(m),
                    cpu_threaded_ms: a.cpu_total() / m.cpu_speedup,
                    period_ms: self.live_interval(i, now),
                    deadline_ms: m.deadline_ms,
                    value: m.utility.l0,
                    on_demand: m.on_demand,
                    current: m.mode,
                    since_ms: m.modes.since(),
                    gpu_capable: a.gpu_capable,
                    cpu_capable: a.cpu_capable,
                }
            })
            .collect()
    }

    /// Plans now and applies the plan.
    pub(super) fn replan(&mut self, now: f64) {
        self.replan_due = false;
        self.next_plan_ms = now + self.cfg.placement.interval_ms.max(1.0);
        let demands = self.demands(now);
        let machine = self.machine();
        let plan = placement::plan(&demands, &machine, &self.cfg.placement, now);
        // The slots the plan may fill are full (its CPU load at their usable share).
        let cpu_full = plan.cpu_load
            >= self.cfg.placement.cpu_saturation.max(0.0)
                * machine.cpu_slots.max(1) as f64
                * (1.0 - 1e-6);
        for d in &demands {
            let i = d.model.0;
            let m = &mut self.models[i];
            m.planned = (d.period_ms, m.analysis.gpu_total(), m.analysis.cpu_total());
        }
        for e in &plan.entries {
            let i = e.model.0;
            if e.processor != self.models[i].mode {
                self.switch_model(i, e.processor, now);
            }
            // A granted rate is enforced where it protects another DNN on the same processor
            // (alone, throttling a model below what it can reach would only idle the
            // processor) and the cut is for capacity, not for the model's own speed.
            let shared = plan
                .entries
                .iter()
                .any(|o| o.model != e.model && o.processor == e.processor);
            // A DNN whose deadline nothing meets is held to its grant too where it fills CPU
            // slots that are full: let loose, its late results took the slots from the others.
            let capacity = e.shortfall.is_some_and(|s| {
                matches!(
                    s.reason,
                    ShortfallReason::NoGpuBudgetCpuFull
                        | ShortfallReason::BothFull
                        | ShortfallReason::GpuFull
                        | ShortfallReason::CpuFull
                        | ShortfallReason::GpuFullCpuTooSlow
                ) || (s.reason == ShortfallReason::DeadlineUnreachable
                    && e.processor == Processor::Cpu
                    && cpu_full)
            });
            // Never below the floor: a cut the planner could only scale under the floors (the
            // on-demand load alone fills the processor) grants zero, which would enforce
            // nothing and let the DNN run as fast as it can, over the others' floors.
            let floor =
                self.cfg.placement.floor_fraction.clamp(0.0, 1.0) * e.requested_hz.unwrap_or(0.0);
            self.models[i].min_interval_ms = e
                .granted_hz
                .map(|g| g.max(floor))
                .filter(|g| shared && capacity && *g > 0.0)
                .map(|g| 1000.0 / g);
        }
        self.plan = plan;
    }

    /// After a model's request interval moved: re-plan if it drifted beyond the re-partition
    /// drift from what the plan counted.
    pub(super) fn note_interval(&mut self, i: usize) {
        let m = &self.models[i];
        let drift = self.cfg.repartition_drift;
        let moved = match (m.planned.0, m.request_interval_ms) {
            (Some(was), Some(now)) => (now - was).abs() > drift * was,
            (None, Some(_)) => true,
            _ => false,
        };
        if moved {
            self.replan_soon();
        }
    }

    /// After a model's costs were measured: re-plan if its GPU or CPU total drifted beyond the
    /// re-partition drift from what the plan counted.
    pub(super) fn note_costs(&mut self, i: usize) {
        let m = &self.models[i];
        let drift = self.cfg.repartition_drift;
        let off = |now: f64, was: f64| (now - was).abs() > drift * was.max(1e-9);
        let (_, gpu, cpu) = m.planned;
        if off(m.analysis.gpu_total(), gpu) || off(m.analysis.cpu_total(), cpu) {
            self.replan_soon();
        }
    }

    /// Whether model `i`'s job on the CPU is continuous work, cut into pieces: under the
    /// planner, for a model not on demand, when starting it would leave fewer free slots than
    /// the largest waiting job may need (the most threads of an on-demand model, at least one):
    /// then a job that comes waits at most one piece. With slots to spare it runs whole.
    pub(super) fn cut_into_pieces(&self, i: usize, free_after: usize) -> bool {
        if !self.planner_active()
            || self.models[i].on_demand
            || self.cfg.placement.cpu_chunk_ms <= 0.0
        {
            return false;
        }
        let reserve = self
            .models
            .iter()
            .filter(|m| m.on_demand && !m.retired && m.analysis.cpu_capable)
            .map(|m| self.cpu_slots_of(m))
            .fold(1, usize::max);
        free_after < reserve
    }

    /// The end of the CPU piece of model `i` that starts at op `start`: at most `cpu_chunk_ms`
    /// at its threads and at least one op when its work is cut ([`Self::cut_into_pieces`] with
    /// `free_after` slots left free), else the inference's end.
    pub(super) fn piece_end(&self, i: usize, start: usize, free_after: usize) -> usize {
        let m = &self.models[i];
        let n = m.analysis.len();
        if !self.cut_into_pieces(i, free_after) || start >= n {
            return n;
        }
        let pre = &m.analysis.costs.prefix_cpu;
        let limit = self.cfg.placement.cpu_chunk_ms * m.cpu_speedup;
        let base = pre[start];
        let k = pre[start + 1..=n].partition_point(|x| x - base <= limit);
        (start + k.max(1)).min(n)
    }
}
