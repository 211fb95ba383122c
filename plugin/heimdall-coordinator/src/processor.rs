//! The processors a step can run on, and sets of them.

use serde::{Deserialize, Serialize};

/// A processor that can execute steps of a model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Processor {
    /// The GPU that also renders the scene (one in-order queue).
    Gpu,
    /// A CPU worker thread (the reference/fallback backend).
    Cpu,
}

impl Processor {
    /// Lower-case name, as used in traces and reports.
    pub fn name(self) -> &'static str {
        match self {
            Processor::Gpu => "gpu",
            Processor::Cpu => "cpu",
        }
    }

    fn bit(self) -> u8 {
        match self {
            Processor::Gpu => 1,
            Processor::Cpu => 2,
        }
    }
}

/// The set of processors able to run a step (Band's "supported processors").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct ProcessorSet(u8);

impl ProcessorSet {
    /// No processor.
    pub const EMPTY: ProcessorSet = ProcessorSet(0);
    /// GPU and CPU: an ordinary op that the GPU backend supports.
    pub const GPU_AND_CPU: ProcessorSet = ProcessorSet(3);
    /// CPU only: a fallback op the GPU backend lacks.
    pub const CPU_ONLY: ProcessorSet = ProcessorSet(2);
    /// GPU only.
    pub const GPU_ONLY: ProcessorSet = ProcessorSet(1);

    /// Whether `p` is in the set.
    pub fn contains(self, p: Processor) -> bool {
        self.0 & p.bit() != 0
    }

    /// The processors in both sets.
    pub fn intersection(self, other: ProcessorSet) -> ProcessorSet {
        ProcessorSet(self.0 & other.0)
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The processors in the set, GPU first.
    pub fn iter(self) -> impl Iterator<Item = Processor> {
        [Processor::Gpu, Processor::Cpu]
            .into_iter()
            .filter(move |p| self.contains(*p))
    }
}
