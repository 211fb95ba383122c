//! Registered models: what the app declares, and what the coordinator keeps about each.

use serde::{Deserialize, Serialize};

use crate::analyzer::{FrameBudget, ModelProfile, Partition, StepCost, partition, units};
use crate::policy::ModelCosts;
use crate::processor::Processor;
use crate::utility::UtilityParams;

/// Index of a registered model, in registration order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ModelId(pub usize);

/// What the app declares about a model when registering it.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelSpec {
    /// Name for reports and traces.
    pub name: String,
    /// The model's steps in execution order, with their costs and processors.
    pub steps: Vec<StepCost>,
    /// Utility parameters.
    pub utility: UtilityParams,
    /// Relative deadline of one inference, ms.
    pub deadline_ms: Option<f64>,
}

/// The analyzer's view of one model, kept current as profiles change.
#[derive(Clone, Debug)]
pub(crate) struct Analysis {
    pub profile: ModelProfile,
    pub costs: ModelCosts,
    /// `prefix_fallback[i]`: CPU time of the CPU-only steps among `0..i`.
    pub prefix_fallback: Vec<f64>,
    pub partition: Partition,
    /// Total GPU time when last partitioned (the drift reference).
    pub partitioned_gpu_total: f64,
    pub has_cpu_only: bool,
}

impl Analysis {
    pub fn new(profile: ModelProfile, budget: &FrameBudget) -> Self {
        let part = partition(&profile.steps, budget);
        let mut a = Analysis {
            costs: ModelCosts::default(),
            prefix_fallback: Vec::new(),
            partition: part,
            partitioned_gpu_total: 0.0,
            has_cpu_only: profile
                .steps
                .iter()
                .any(|s| !s.processors.contains(Processor::Gpu)),
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

    /// Recomputes prefix sums and units after the profile changed.
    pub fn refresh_costs(&mut self) {
        let steps = &self.profile.steps;
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
            self.partition = partition(&self.profile.steps, budget);
            self.partitioned_gpu_total = now;
            true
        } else {
            false
        }
    }
}
