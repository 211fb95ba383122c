//! A model's costs in the form the scheduler asks for them: prefix sums (range costs in O(1)),
//! Band's units, and the current partition, kept current as the profile changes.

use std::ops::Range;

use super::cache::{CacheExpectation, CacheSpec};
use super::chunks::{FrameBudget, Partition, partition};
use super::profile::{ModelProfile, StepCost};
use super::units::{Unit, units};
use crate::processor::Processor;

/// Costs of a model's steps in a form that answers range sums in O(1).
#[derive(Clone, Debug, Default)]
pub struct ModelCosts {
    /// Band's units of the model.
    pub units: Vec<Unit>,
    /// `prefix_gpu[i]` = GPU time of steps `0..i` (steps the GPU cannot run count 0).
    pub prefix_gpu: Vec<f64>,
    /// `prefix_cpu[i]` = CPU time of steps `0..i`.
    pub prefix_cpu: Vec<f64>,
}

/// One unit of a job still to run, with its cost on each processor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UnitCost {
    /// Processors able to run every op of the unit.
    pub processors: crate::processor::ProcessorSet,
    /// GPU time, ms.
    pub gpu_ms: f64,
    /// CPU time, ms.
    pub cpu_ms: f64,
}

impl UnitCost {
    /// The cost on `p`.
    pub fn on(&self, p: Processor) -> f64 {
        match p {
            Processor::Gpu => self.gpu_ms,
            Processor::Cpu => self.cpu_ms,
        }
    }
}

impl ModelCosts {
    /// Time of `ops` on `p` (ignoring whether `p` can run them).
    pub fn range_ms(&self, ops: Range<usize>, p: Processor) -> f64 {
        let pre = match p {
            Processor::Gpu => &self.prefix_gpu,
            Processor::Cpu => &self.prefix_cpu,
        };
        pre[ops.end] - pre[ops.start]
    }

    /// The units from `op` on, the first one cut to start at `op`, with their costs.
    pub fn remaining_units(&self, op: usize) -> Vec<UnitCost> {
        self.units
            .iter()
            .filter(|u| u.ops.end > op)
            .map(|u| {
                let r = u.ops.start.max(op)..u.ops.end;
                UnitCost {
                    processors: u.processors,
                    gpu_ms: self.range_ms(r.clone(), Processor::Gpu),
                    cpu_ms: self.range_ms(r, Processor::Cpu),
                }
            })
            .collect()
    }

    /// The unit that contains `op`.
    pub fn unit_containing(&self, op: usize) -> Option<&Unit> {
        let k = self.units.partition_point(|u| u.ops.end <= op);
        self.units.get(k).filter(|u| u.ops.contains(&op))
    }
}

/// The analyzer's view of one registered model, kept current as its profile changes.
#[derive(Clone, Debug)]
pub(crate) struct Analysis {
    /// The uncached costs (measured and smoothed).
    pub profile: ModelProfile,
    /// The convolution cache's expectation, if the model has cached steps.
    pub cache: Option<CacheExpectation>,
    /// What every step is expected to cost now: the profile, with cached steps scaled by the
    /// expected hit rate. Costs, chunks and decisions use these.
    pub predicted: Vec<StepCost>,
    pub costs: ModelCosts,
    /// `prefix_fallback[i]`: CPU time of the CPU-only steps among `0..i`.
    pub prefix_fallback: Vec<f64>,
    pub partition: Partition,
    /// Total GPU time when last partitioned (the drift reference).
    pub partitioned_gpu_total: f64,
    pub has_cpu_only: bool,
    /// Some step runs on the GPU (the model has a GPU path).
    pub gpu_capable: bool,
    /// Every step runs on the CPU (the model can run whole there).
    pub cpu_capable: bool,
}

impl Analysis {
    pub fn new(profile: ModelProfile, budget: &FrameBudget) -> Self {
        let part = partition(&profile.steps, budget);
        let mut a = Analysis {
            cache: None,
            predicted: Vec::new(),
            costs: ModelCosts::default(),
            prefix_fallback: Vec::new(),
            partition: part,
            partitioned_gpu_total: 0.0,
            has_cpu_only: profile
                .steps
                .iter()
                .any(|s| !s.processors.contains(Processor::Gpu)),
            gpu_capable: profile
                .steps
                .iter()
                .any(|s| s.processors.contains(Processor::Gpu)),
            cpu_capable: profile
                .steps
                .iter()
                .all(|s| s.processors.contains(Processor::Cpu)),
            profile,
        };
        a.refresh_costs();
        a.partitioned_gpu_total = a.gpu_total();
        a
    }

    pub fn len(&self) -> usize {
        self.profile.steps.len()
    }

    pub fn gpu_total(&self) -> f64 {
        *self.costs.prefix_gpu.last().unwrap_or(&0.0)
    }

    pub fn cpu_total(&self) -> f64 {
        *self.costs.prefix_cpu.last().unwrap_or(&0.0)
    }

    /// CPU time of the fallback (CPU-only) steps among `ops`.
    pub fn fallback_ms(&self, ops: Range<usize>) -> f64 {
        self.prefix_fallback[ops.end] - self.prefix_fallback[ops.start]
    }

    /// Whether step `op` can run on the GPU.
    pub fn gpu_can_run(&self, op: usize) -> bool {
        self.profile.steps[op].processors.contains(Processor::Gpu)
    }

    /// The predicted cost of step `op`.
    pub fn step(&self, op: usize) -> &StepCost {
        &self.predicted[op]
    }

    /// Turns the convolution cache's expectation on (`Some`) or off for this model; the costs
    /// follow at once.
    pub fn set_cache(&mut self, spec: Option<&CacheSpec>) -> Result<(), String> {
        self.cache = spec
            .map(|s| CacheExpectation::new(s, self.len()))
            .transpose()?;
        self.refresh_costs();
        Ok(())
    }

    /// Folds the measured time of `ops` on `p` into the uncached profile; a GPU range holding
    /// cached steps waits for its run's hit rate ([`Analysis::report_hit`]). CPU times go in at
    /// once: the CPU runs every step in full.
    pub fn observe(&mut self, ops: Range<usize>, p: Processor, measured_ms: f64) {
        match self.cache.as_mut() {
            Some(c) if c.waits_for_hit(&ops, p) => {
                c.hold(ops, measured_ms);
                if c.overflowing() {
                    let hit = c.expected_hit().unwrap_or(0.0);
                    c.fold_pending(&mut self.profile, hit);
                }
            }
            _ => self.profile.observe_range(ops, p, measured_ms),
        }
    }

    /// Folds the hit rate of a finished run: its waiting measurements go into the uncached
    /// profile at that hit rate, the expectation moves, the costs follow. Nothing for a model
    /// without a cache.
    pub fn report_hit(&mut self, hit: f64) {
        let Some(c) = self.cache.as_mut() else {
            return;
        };
        if !hit.is_nan() {
            c.fold_pending(&mut self.profile, hit);
        }
        c.observe_hit(hit);
        self.refresh_costs();
    }

    /// Recomputes the predicted costs, prefix sums and units after the profile or the cache's
    /// expectation changed.
    pub fn refresh_costs(&mut self) {
        self.predicted = match &self.cache {
            Some(c) => c.predict(&self.profile.steps),
            None => self.profile.steps.clone(),
        };
        let steps = &self.predicted;
        let n = steps.len();
        let mut g = Vec::with_capacity(n + 1);
        let mut c = Vec::with_capacity(n + 1);
        let mut fb = Vec::with_capacity(n + 1);
        let (mut sg, mut sc, mut sf) = (0.0, 0.0, 0.0);
        g.push(0.0);
        c.push(0.0);
        fb.push(0.0);
        for s in steps {
            sg += s.on(Processor::Gpu).unwrap_or(0.0);
            sc += s.cpu_ms;
            if !s.processors.contains(Processor::Gpu) {
                sf += s.cpu_ms;
            }
            g.push(sg);
            c.push(sc);
            fb.push(sf);
        }
        self.costs = ModelCosts {
            units: units(steps),
            prefix_gpu: g,
            prefix_cpu: c,
        };
        self.prefix_fallback = fb;
    }

    /// Re-partitions if the GPU total drifted by more than `threshold` (relative) since the last
    /// partition, or unconditionally with `force`. Returns whether it re-partitioned.
    pub fn maybe_repartition(&mut self, budget: &FrameBudget, threshold: f64, force: bool) -> bool {
        let now = self.gpu_total();
        let base = self.partitioned_gpu_total.max(1e-9);
        if force || ((now - base) / base).abs() > threshold {
            self.partition = partition(&self.predicted, budget);
            self.partitioned_gpu_total = now;
            true
        } else {
            false
        }
    }
}
