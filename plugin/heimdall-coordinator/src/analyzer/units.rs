//! Band's units: maximal runs of consecutive steps supported by the same set of processors.

use std::ops::Range;

use super::profile::StepCost;
use crate::processor::ProcessorSet;

/// A maximal run of consecutive steps that the same set of processors can run (Band sec. 4.2).
#[derive(Clone, Debug, PartialEq)]
pub struct Unit {
    /// Step (op) indices covered, contiguous.
    pub ops: Range<usize>,
    /// The processors that can run every step of the unit.
    pub processors: ProcessorSet,
}

/// Splits `steps` into units. Every step belongs to exactly one unit and units are as large as
/// possible; an empty model has no units.
pub fn units(steps: &[StepCost]) -> Vec<Unit> {
    let mut out: Vec<Unit> = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        match out.last_mut() {
            Some(u) if u.processors == s.processors => u.ops.end = i + 1,
            _ => out.push(Unit {
                ops: i..i + 1,
                processors: s.processors,
            }),
        }
    }
    out
}
