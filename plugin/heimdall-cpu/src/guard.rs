//! The accuracy guard of the half-precision kernels ([`crate::CpuPrecision::F16`]), the CPU
//! counterpart of the GPU backend's (`heimdall_gpu::guard`, same bounds, same search): compile
//! the model with f16 convolutions, check it on a calibration input against the f32 model (the
//! reference), and keep in f32 the op ranges that break the bound.
//!
//! ```no_run
//! use heimdall_cpu::guard::{F16GuardConfig, compile_f16_guarded};
//! use heimdall_cpu::CpuOptions;
//! # fn graph() -> heimdall_ir::Graph { unimplemented!() }
//! # fn photo() -> Vec<f32> { unimplemented!() }
//! let (graph, input) = (graph(), photo());
//! let guarded =
//!     compile_f16_guarded(&graph, CpuOptions { threads: 2 }, &[&input], &F16GuardConfig::default())?;
//! println!("{}", guarded.decision.summary()); // e.g. "f16 with ops 57..58 in f32"
//! # Ok::<(), heimdall_cpu::CpuError>(())
//! ```
//!
//! How it decides (deterministic; at most [`F16GuardConfig::max_trials`] + 2 compiles and
//! runs): the model compiled with every convolution in f16 is run on the calibration input and
//! each output compared with the f32 model's by a floored relative L2 error ([`output_error`]);
//! if every output meets the bound, that model is returned. Otherwise the search starts from
//! every op in f32 and hands op-index ranges back to f16, breadth first (the whole model, then
//! the halves of every range that broke the bound, down to single ops), keeping a hand-back
//! when every output stays within [`F16GuardConfig::repair_margin`] of the bound. On a core
//! without half-precision arithmetic nothing runs in f16 and the first check passes.

use std::collections::VecDeque;
use std::ops::Range;

use heimdall_ir::Graph;

use crate::{CpuError, CpuModel, CpuOptions};

/// The bound of every output: the GPU's f16 bound (floored rel-L2 ≤ 1e-2 on the TFLite golden
/// models, `heimdall_gpu::guard::DEFAULT_BOUND`).
pub const DEFAULT_BOUND: f64 = 1e-2;
/// The floor of the error's denominator, an RMS per value (the GPU guard's): outputs that are
/// sigmoid flags of about 1e-4 are compared absolutely at this scale.
pub const DEFAULT_FLOOR_RMS: f64 = 1e-3;

/// How the guard decides.
#[derive(Clone, Debug, PartialEq)]
pub struct F16GuardConfig {
    /// The bound of every output's [`output_error`].
    pub bound: f64,
    /// The floor of the error's denominator (RMS per value).
    pub floor_rms: f64,
    /// Most trial compiles of the search.
    pub max_trials: usize,
    /// A range handed back to f16 must keep every output within this fraction of the bound.
    pub repair_margin: f64,
}

impl Default for F16GuardConfig {
    fn default() -> Self {
        F16GuardConfig {
            bound: DEFAULT_BOUND,
            floor_rms: DEFAULT_FLOOR_RMS,
            max_trials: 24,
            repair_margin: 0.5,
        }
    }
}

/// What the guard decided.
#[derive(Clone, Debug, PartialEq)]
pub struct F16Decision {
    /// Each output's error on the calibration input with every convolution in f16 (as asked).
    pub asked_errors: Vec<f64>,
    /// The op ranges kept in f32 (empty: f16 as asked).
    pub f32_ranges: Vec<Range<usize>>,
    /// Each output's error of the returned model on the calibration input.
    pub errors: Vec<f64>,
    /// Trial compiles of the search.
    pub trials: usize,
    /// Ops of the returned model computing in f16.
    pub f16_ops: usize,
}

impl F16Decision {
    /// One line: "f16 as asked", "f16 with ops 57..58 in f32", or "f32 (no f16 op left)".
    pub fn summary(&self) -> String {
        if self.f32_ranges.is_empty() {
            return format!("f16 as asked ({} f16 ops)", self.f16_ops);
        }
        if self.f16_ops == 0 {
            return "f32 (no f16 op left)".into();
        }
        let ranges: Vec<String> = self
            .f32_ranges
            .iter()
            .map(|r| format!("{}..{}", r.start, r.end))
            .collect();
        format!(
            "f16 with ops {} in f32 ({} f16 ops)",
            ranges.join(","),
            self.f16_ops
        )
    }
}

/// A model compiled by the guard, and its decision.
#[derive(Debug)]
pub struct GuardedF16 {
    /// The model (its inputs still hold the calibration input).
    pub model: CpuModel,
    /// What the guard decided.
    pub decision: F16Decision,
}

/// `||out - reference|| / max(||reference||, floor_rms * sqrt(n))`, in f64.
pub fn output_error(out: &[f32], reference: &[f32], floor_rms: f64) -> f64 {
    let (mut d, mut r) = (0f64, 0f64);
    for (&o, &x) in out.iter().zip(reference) {
        d += (f64::from(o) - f64::from(x)).powi(2);
        r += f64::from(x).powi(2);
    }
    let floor = floor_rms * (reference.len() as f64).sqrt();
    d.sqrt() / r.sqrt().max(floor).max(f64::MIN_POSITIVE)
}

/// Compiles `graph` with half-precision convolutions where the CPU has them, keeping in f32
/// what the calibration input `inputs` shows f16 cannot hold to `config.bound` (see the
/// module). Errors: compiling or running the model (a wrong input size).
pub fn compile_f16_guarded(
    graph: &Graph,
    options: CpuOptions,
    inputs: &[&[f32]],
    config: &F16GuardConfig,
) -> Result<GuardedF16, CpuError> {
    let run = |f32_ranges: &[Range<usize>]| -> Result<(CpuModel, Vec<Vec<f32>>), CpuError> {
        let mask = |k: usize| !f32_ranges.iter().any(|r| r.contains(&k));
        let mut m = CpuModel::compile_masked(graph, options, &mask)?;
        for (i, x) in inputs.iter().enumerate() {
            m.set_input(i, x)?;
        }
        m.run()?;
        let outs = (0..m.output_shapes().len())
            .map(|i| m.output(i).map(<[f32]>::to_vec))
            .collect::<Result<_, _>>()?;
        Ok((m, outs))
    };
    let all = 0..graph.ops.len();
    let (_, reference) = run(std::slice::from_ref(&all))?;
    let errors = |outs: &[Vec<f32>]| -> Vec<f64> {
        outs.iter()
            .zip(&reference)
            .map(|(o, r)| output_error(o, r, config.floor_rms))
            .collect()
    };
    let within = |e: &[f64], bound: f64| e.iter().all(|&e| e <= bound);
    let (model, outs) = run(&[])?;
    let asked_errors = errors(&outs);
    if within(&asked_errors, config.bound) {
        return Ok(GuardedF16 {
            decision: F16Decision {
                errors: asked_errors.clone(),
                asked_errors,
                f32_ranges: Vec::new(),
                trials: 0,
                f16_ops: model.f16_ops(),
            },
            model,
        });
    }
    // Hand ranges back to f16, breadth first, from "everything in f32".
    let target = config.bound * config.repair_margin;
    let mut f32_ranges = vec![all.clone()];
    let mid = all.len() / 2;
    let mut queue = VecDeque::from([0..mid, mid..all.end]);
    let mut trials = 0;
    while let Some(r) = queue.pop_front() {
        if trials >= config.max_trials {
            break;
        }
        let trial: Vec<Range<usize>> = f32_ranges.iter().flat_map(|f| split_out(f, &r)).collect();
        trials += 1;
        let (_, outs) = run(&trial)?;
        if within(&errors(&outs), target) {
            f32_ranges = trial;
        } else if r.len() > 1 {
            let mid = r.start + r.len() / 2;
            queue.push_back(r.start..mid);
            queue.push_back(mid..r.end);
        }
    }
    let (model, outs) = run(&f32_ranges)?;
    Ok(GuardedF16 {
        decision: F16Decision {
            asked_errors,
            errors: errors(&outs),
            f32_ranges: merge(f32_ranges),
            trials,
            f16_ops: model.f16_ops(),
        },
        model,
    })
}

/// `f` without the ops of `r` (zero, one or two ranges).
fn split_out(f: &Range<usize>, r: &Range<usize>) -> Vec<Range<usize>> {
    [f.start..f.end.min(r.start), f.start.max(r.end)..f.end]
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect()
}

/// Sorted ranges with touching neighbours joined.
fn merge(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<usize>> = Vec::new();
    for r in ranges {
        match out.last_mut() {
            Some(last) if last.end >= r.start => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_split_and_merge() {
        assert_eq!(split_out(&(0..10), &(3..5)), vec![0..3, 5..10]);
        assert_eq!(split_out(&(0..10), &(0..10)), Vec::<Range<usize>>::new());
        assert_eq!(split_out(&(4..6), &(0..2)), vec![4..6]);
        assert_eq!(merge(vec![5..7, 0..2, 2..3, 6..9]), vec![0..3, 5..9]);
    }

    #[test]
    fn floored_error() {
        assert_eq!(output_error(&[1.0, 2.0], &[1.0, 2.0], 1e-3), 0.0);
        // A tiny reference is compared at the floor's scale.
        let e = output_error(&[1e-4], &[0.0], 1e-3);
        assert!((e - 0.1).abs() < 1e-6, "{e}");
    }
}
