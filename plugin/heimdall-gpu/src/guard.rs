//! The accuracy guard for reduced precision: compile a model in f16 (or packed f16), check it on
//! a calibration input against a reference (the CPU backend in f32), and switch the ops that
//! break the bound to f32 by themselves.
//!
//! ```no_run
//! use heimdall_gpu::guard::{GuardConfig, compile_guarded, cpu_reference};
//! use heimdall_gpu::{GpuContext, GpuOptions, Precision};
//! # fn graph() -> heimdall_ir::Graph { unimplemented!() }
//! # fn photo() -> Vec<f32> { unimplemented!() }
//! let (ctx, graph, input) = (GpuContext::create()?, graph(), photo());
//! let reference = cpu_reference(&graph, &[&input])?;
//! let guarded = compile_guarded(
//!     &ctx,
//!     &graph,
//!     GpuOptions::new(Precision::F16),
//!     &[&input],
//!     &reference,
//!     &GuardConfig::default(),
//! )?;
//! println!("{}", guarded.decision.summary()); // e.g. "f16 with ops 57..58 in f32"
//! let outputs = guarded.model.run(&[&input])?;
//! # Ok::<(), heimdall_gpu::guard::GuardError>(())
//! ```
//!
//! How it decides (deterministic; at most [`GuardConfig::max_trials`] + 2 compiles and runs):
//! 1. The model is compiled as asked and run on the calibration input; every output is compared
//!    with the reference by a floored relative L2 error ([`output_error`]). If each output meets
//!    its bound, that model is returned untouched (one compile, one run).
//! 2. Otherwise the whole model is tried in f32. If even that misses the search's target (the
//!    repair margin of the bounds), f16 is not the cause: the f32 model is returned
//!    ([`GuardDecision::passed`] says whether it meets the bounds themselves).
//! 3. Otherwise a sensitivity search over op-index ranges, starting from "every op in f32" (which
//!    passes) and handing ranges back to the reduced precision, breadth first: the two halves of
//!    the model, then the halves of every range that broke a bound, and so on down to
//!    [`GuardConfig::min_range`] ops. A switch is kept when every output stays within
//!    [`GuardConfig::repair_margin`] of its bound, so the configuration returned always meets
//!    the bounds on the calibration input, with room for other inputs. When the trials run out,
//!    the ranges not handed back stay in f32; if none was, the result is the whole model in f32
//!    ([`GuardDecision::whole_f32`]). A single op that overflows f16 is found in about
//!    `2·log2(ops)` trials.
//!
//! The guard checks one input: it bounds the error there, not on every input. Calibrate on an
//! input like the ones the model will see (a photo for a camera model, not noise).

use std::collections::VecDeque;
use std::ops::Range;
use std::time::{Duration, Instant};

use heimdall_cpu::{CpuError, CpuModel, CpuOptions};
use heimdall_ir::Graph;
use thiserror::Error;

use crate::context::GpuContext;
use crate::error::GpuError;
use crate::model::GpuModel;
use crate::options::GpuOptions;
use crate::precision::Precision;

/// The default bound of every output: the f16 bound of the golden suites (floored rel-L2 ≤ 1e-2
/// on the TFLite models, rel-L2 ≤ 1e-2 on the ONNX models), which every model but
/// pose_landmark_full and PP-OCRv6_det_small meets in f16 storage with a margin of 2× or more
/// (worst: hand_landmark_lite 4.4e-3); those two meet it with the ops the guard keeps in f32
/// (`docs/gpu.md`).
pub const DEFAULT_BOUND: f64 = 1e-2;

/// The default floor of the error's denominator, an RMS per value: the golden suites' GPU floor
/// on TFLite models. Outputs that are sigmoid flags of about 1e-4 are compared absolutely at this
/// scale instead of relatively (f16 cannot hold them to a relative 1e-2); it changes nothing for
/// outputs of RMS above 1e-3.
pub const DEFAULT_FLOOR_RMS: f64 = 1e-3;

/// The default cap on the search's trial compiles: enough for about two single-op regions in
/// a model of a few hundred ops (each takes about `2·log2(ops)` trials), and at most a few
/// seconds of compiling on a desktop GPU.
pub const DEFAULT_MAX_TRIALS: usize = 24;

/// The default [`GuardConfig::repair_margin`]: a repaired model meets half its bound on the
/// calibration input.
pub const DEFAULT_REPAIR_MARGIN: f64 = 0.5;

/// What the guard holds the reduced-precision model to.
#[derive(Clone, Debug, PartialEq)]
pub struct GuardConfig {
    /// The bound of every output without its own ([`GuardConfig::output_bounds`]).
    pub bound: f64,
    /// Per-output bounds by output index; `None` (or an index past the end) takes
    /// [`GuardConfig::bound`].
    pub output_bounds: Vec<Option<f64>>,
    /// Floor of the error's denominator, an RMS per value (see [`output_error`]); 0 for the plain
    /// relative L2 error.
    pub floor_rms: f64,
    /// Most trial compiles of the sensitivity search (besides the compile as asked and the
    /// whole-model f32 one). 0: no search, a model that misses its bounds goes to f32 whole.
    pub max_trials: usize,
    /// Smallest range of ops the search splits down to (at least 1).
    pub min_range: usize,
    /// The fraction of its bound each output must meet on the calibration input for the search
    /// to accept a configuration (in (0, 1]). A model that meets its bounds as asked is left
    /// alone, but one that needed repair is sensitive to its input, and a repair that only just
    /// meets the bound on the calibration input misses it on the next photo; the default, 0.5,
    /// leaves room for that.
    pub repair_margin: f64,
}

impl Default for GuardConfig {
    fn default() -> Self {
        GuardConfig {
            bound: DEFAULT_BOUND,
            output_bounds: Vec::new(),
            floor_rms: DEFAULT_FLOOR_RMS,
            max_trials: DEFAULT_MAX_TRIALS,
            min_range: 1,
            repair_margin: DEFAULT_REPAIR_MARGIN,
        }
    }
}

impl GuardConfig {
    /// The bound of output `index`.
    pub fn bound_of(&self, index: usize) -> f64 {
        self.output_bounds
            .get(index)
            .copied()
            .flatten()
            .unwrap_or(self.bound)
    }

    fn validate(&self) -> Result<(), GuardError> {
        let bad = |b: f64| !(b.is_finite() && b > 0.0);
        if bad(self.bound) || self.output_bounds.iter().flatten().any(|&b| bad(b)) {
            return Err(GuardError::Config(
                "bounds must be finite and positive".into(),
            ));
        }
        if !(self.floor_rms.is_finite() && self.floor_rms >= 0.0) {
            return Err(GuardError::Config(format!(
                "floor_rms must be finite and not negative, got {}",
                self.floor_rms
            )));
        }
        if !(self.repair_margin > 0.0 && self.repair_margin <= 1.0) {
            return Err(GuardError::Config(format!(
                "repair_margin must be in (0, 1], got {}",
                self.repair_margin
            )));
        }
        if self.min_range == 0 {
            return Err(GuardError::Config("min_range must be at least 1".into()));
        }
        Ok(())
    }
}

/// What the guard decided, as data: store it with the model's profile and pass
/// [`GuardDecision::overrides`] to [`GpuOptions::overrides`] next time to skip the search.
#[derive(Clone, Debug, PartialEq)]
pub struct GuardDecision {
    /// The precision asked for (the compiled model's report says what the device gave).
    pub precision: Precision,
    /// The overrides of the returned model: the caller's, then the guard's f32 ranges.
    pub overrides: Vec<(Range<usize>, Precision)>,
    /// The op ranges the guard switched to f32 (sorted, disjoint, merged); empty when the model
    /// met its bounds as asked.
    pub f32_ranges: Vec<Range<usize>>,
    /// Ops of the model.
    pub ops: usize,
    /// Each output's bound.
    pub bounds: Vec<f64>,
    /// Each output's error on the calibration input as asked (before the guard).
    pub errors_before: Vec<f64>,
    /// Each output's error on the calibration input of the returned model.
    pub errors_after: Vec<f64>,
    /// The guard fell back to the whole model in f32.
    pub whole_f32: bool,
    /// Every output of the returned model meets its bound on the calibration input.
    pub passed: bool,
    /// Trial compiles of the sensitivity search (not counting the compile as asked and the
    /// whole-model f32 one).
    pub trials: usize,
    /// The search stopped at [`GuardConfig::max_trials`] with ranges left untried (they stay in
    /// f32).
    pub cap_reached: bool,
    /// Wall time of the guard (compiles, runs and comparisons; not the reference).
    pub time: Duration,
}

impl GuardDecision {
    /// Ops in f32 because of the guard.
    pub fn f32_ops(&self) -> usize {
        self.f32_ranges.iter().map(|r| r.len()).sum()
    }

    /// Whether the guard changed nothing (the model met its bounds as asked).
    pub fn unchanged(&self) -> bool {
        self.f32_ranges.is_empty()
    }

    /// A short description: "f16 as asked", "f16 with ops 57..58, 90..120 in f32 (31 of 300
    /// ops)" or "f32 (whole model)".
    pub fn summary(&self) -> String {
        let p = format!("{:?}", self.precision).to_lowercase();
        if self.whole_f32 {
            return "f32 (whole model)".into();
        }
        if self.unchanged() {
            return format!("{p} as asked");
        }
        format!(
            "{p} with ops {} in f32 ({} of {} ops)",
            ranges_text(&self.f32_ranges),
            self.f32_ops(),
            self.ops
        )
    }

    /// The log line of the decision.
    pub fn log_line(&self, model: &str) -> String {
        let errs = |v: &[f64]| {
            v.iter()
                .map(|e| format!("{e:.2e}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "f16 guard: {model}: {}; errors [{}] -> [{}] (bounds [{}]){}; {} trials, {:.0} ms",
            self.summary(),
            errs(&self.errors_before),
            errs(&self.errors_after),
            errs(&self.bounds),
            if self.passed {
                ""
            } else {
                ": BOUNDS MISSED even so"
            },
            self.trials,
            self.time.as_secs_f64() * 1e3
        )
    }
}

/// `a..b, c..d`.
pub fn ranges_text(ranges: &[Range<usize>]) -> String {
    ranges
        .iter()
        .map(|r| format!("{}..{}", r.start, r.end))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A model compiled under the guard, and the guard's decision.
pub struct GuardedModel {
    /// The compiled model (the last configuration that met the bounds, or f32).
    pub model: GpuModel,
    /// What the guard decided.
    pub decision: GuardDecision,
}

/// Everything that can go wrong in the guard.
#[derive(Debug, Error)]
pub enum GuardError {
    /// Compiling or running on the GPU failed.
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// The CPU reference ([`cpu_reference`]) failed.
    #[error("CPU reference: {0}")]
    Cpu(#[from] CpuError),
    /// The calibration inputs or the reference outputs do not fit the model.
    #[error("calibration: {0}")]
    Calibration(String),
    /// The guard's configuration is invalid.
    #[error("guard config: {0}")]
    Config(String),
}

/// The error of `out` against `reference`: `||out - reference|| / max(||reference||, floor_rms ·
/// sqrt(len))`, accumulated in f64 (the floored relative L2 error of the golden suites); with an
/// all-zero reference and no floor, the absolute `||out||`. NaN in `out` gives infinity.
pub fn output_error(out: &[f32], reference: &[f32], floor_rms: f64) -> f64 {
    let (mut num, mut den) = (0f64, 0f64);
    for (&a, &b) in out.iter().zip(reference) {
        num += (f64::from(a) - f64::from(b)).powi(2);
        den += f64::from(b).powi(2);
    }
    let den = den.sqrt().max(floor_rms * (reference.len() as f64).sqrt());
    let err = if den == 0.0 {
        num.sqrt()
    } else {
        num.sqrt() / den
    };
    if err.is_nan() { f64::INFINITY } else { err }
}

/// The reference outputs of `graph` on `inputs`: the CPU backend in f32 (all cores up to its
/// default).
pub fn cpu_reference(graph: &Graph, inputs: &[&[f32]]) -> Result<Vec<Vec<f32>>, GuardError> {
    cpu_reference_with(graph, inputs, CpuOptions::default())
}

/// [`cpu_reference`] with the CPU backend's `options`: e.g. one thread, for a check in the
/// background of a real-time app (the Bevy plugin's), which must leave the other cores to the
/// frame. The outputs do not depend on the thread count.
pub fn cpu_reference_with(
    graph: &Graph,
    inputs: &[&[f32]],
    options: CpuOptions,
) -> Result<Vec<Vec<f32>>, GuardError> {
    if inputs.len() != graph.inputs.len() {
        return Err(GuardError::Calibration(format!(
            "the model has {} inputs, {} given",
            graph.inputs.len(),
            inputs.len()
        )));
    }
    let mut m = CpuModel::compile(graph, options)?;
    for (i, x) in inputs.iter().enumerate() {
        m.set_input(i, x)?;
    }
    m.run()?;
    (0..graph.outputs.len())
        .map(|i| Ok(m.output(i)?.to_vec()))
        .collect()
}

/// Compiles `graph` with `options` and, when `options.precision` is reduced (f16 or packed
/// f16), holds it to `config`'s bounds on `calibration` (one slice per graph input) against
/// `reference` (one vector per graph output, e.g. from [`cpu_reference`]), switching ops to
/// f32 where it must (see the module's documentation). An f32 model is compiled and measured,
/// never changed. Logs one line (`log` crate: `info` when nothing changed, `warn` when ops were
/// switched).
pub fn compile_guarded(
    ctx: &GpuContext,
    graph: &Graph,
    options: GpuOptions,
    calibration: &[&[f32]],
    reference: &[Vec<f32>],
    config: &GuardConfig,
) -> Result<GuardedModel, GuardError> {
    config.validate()?;
    check_shapes(graph, calibration, reference)?;
    let start = Instant::now();
    let ops = graph.ops.len();
    let bounds: Vec<f64> = (0..reference.len()).map(|i| config.bound_of(i)).collect();
    let trial = Trial {
        ctx,
        graph,
        options: &options,
        calibration,
        reference,
        config,
        bounds: &bounds,
    };
    let (model, errors_before) = trial.run(&[])?;
    let decision = GuardDecision {
        precision: options.precision,
        overrides: options.overrides.clone(),
        f32_ranges: Vec::new(),
        ops,
        bounds: bounds.clone(),
        passed: trial.passes(&errors_before),
        errors_after: errors_before.clone(),
        errors_before,
        whole_f32: false,
        trials: 0,
        cap_reached: false,
        time: Duration::ZERO,
    };
    let reduced = options.precision != Precision::F32;
    let (model, decision) = if decision.passed || !reduced || ops == 0 {
        (model, decision)
    } else {
        drop(model);
        search(&trial, decision)?
    };
    let mut decision = decision;
    decision.time = start.elapsed();
    let line = decision.log_line(&graph.name);
    if decision.unchanged() && decision.passed {
        log::info!("{line}");
    } else {
        log::warn!("{line}");
    }
    Ok(GuardedModel { model, decision })
}

fn check_shapes(
    graph: &Graph,
    calibration: &[&[f32]],
    reference: &[Vec<f32>],
) -> Result<(), GuardError> {
    let bad = |m: String| Err(GuardError::Calibration(m));
    if calibration.len() != graph.inputs.len() {
        return bad(format!(
            "the model has {} inputs, {} calibration inputs given",
            graph.inputs.len(),
            calibration.len()
        ));
    }
    for (i, (&t, x)) in graph.inputs.iter().zip(calibration).enumerate() {
        let n = graph.tensor(t).numel();
        if x.len() != n {
            return bad(format!("input {i}: expected {n} values, got {}", x.len()));
        }
    }
    if reference.len() != graph.outputs.len() {
        return bad(format!(
            "the model has {} outputs, {} reference outputs given",
            graph.outputs.len(),
            reference.len()
        ));
    }
    for (i, (&t, r)) in graph.outputs.iter().zip(reference).enumerate() {
        let n = graph.tensor(t).numel();
        if r.len() != n {
            return bad(format!(
                "reference output {i}: expected {n} values, got {}",
                r.len()
            ));
        }
    }
    Ok(())
}

/// One configuration of the model compiled, run and measured.
struct Trial<'a> {
    ctx: &'a GpuContext,
    graph: &'a Graph,
    options: &'a GpuOptions,
    calibration: &'a [&'a [f32]],
    reference: &'a [Vec<f32>],
    config: &'a GuardConfig,
    bounds: &'a [f64],
}

impl Trial<'_> {
    /// The caller's options with `f32_ranges` in f32 on top of its overrides.
    fn options(&self, f32_ranges: &[Range<usize>]) -> GpuOptions {
        let mut o = self.options.clone();
        o.overrides
            .extend(f32_ranges.iter().map(|r| (r.clone(), Precision::F32)));
        o
    }

    /// Compiles with `f32_ranges` in f32, runs the calibration input, returns the model and
    /// every output's error.
    fn run(&self, f32_ranges: &[Range<usize>]) -> Result<(GpuModel, Vec<f64>), GuardError> {
        let model = GpuModel::compile(self.ctx, self.graph, self.options(f32_ranges))?;
        let outputs = model.run(self.calibration)?;
        let errors = outputs
            .iter()
            .zip(self.reference)
            .map(|(o, r)| output_error(o, r, self.config.floor_rms))
            .collect();
        Ok((model, errors))
    }

    fn passes(&self, errors: &[f64]) -> bool {
        errors.iter().zip(self.bounds).all(|(e, b)| e <= b)
    }

    /// Whether a configuration the search tries is good enough: every output within
    /// [`GuardConfig::repair_margin`] of its bound.
    fn repaired(&self, errors: &[f64]) -> bool {
        let m = self.config.repair_margin;
        errors.iter().zip(self.bounds).all(|(e, b)| *e <= m * b)
    }
}

/// Steps 2 and 3 of the module's documentation, after the model as asked missed its bounds.
fn search(
    trial: &Trial,
    mut decision: GuardDecision,
) -> Result<(GpuModel, GuardDecision), GuardError> {
    let ops = decision.ops;
    let config = trial.config;
    let whole: Vec<Range<usize>> = std::iter::once(0..ops).collect();
    let finish = |mut d: GuardDecision, f32_ranges: Vec<Range<usize>>, errors: Vec<f64>| {
        d.whole_f32 = f32_ranges.len() == 1 && f32_ranges[0] == (0..ops);
        d.passed = trial.passes(&errors);
        d.errors_after = errors;
        d.overrides = trial.options(&f32_ranges).overrides;
        d.f32_ranges = f32_ranges;
        d
    };
    let (mut best, errors) = trial.run(&whole)?;
    if !trial.repaired(&errors) {
        return Ok((best, finish(decision, whole, errors)));
    }
    let mut best_errors = errors;
    // Ranges currently in f32 (sorted, disjoint); candidates to hand back to the reduced
    // precision, breadth first: every range of one size is tried before any of half its size,
    // so a sensitive start of the model does not use up the trials of the rest.
    let mut f32_now: Vec<Range<usize>> = whole;
    let mut queue: VecDeque<Range<usize>> = halves(0..ops).into();
    while let Some(r) = queue.pop_front() {
        if decision.trials >= config.max_trials {
            decision.cap_reached = true;
            break;
        }
        let candidate = subtract(&f32_now, &r);
        let (model, errors) = trial.run(&candidate)?;
        decision.trials += 1;
        if trial.repaired(&errors) {
            f32_now = candidate;
            best = model;
            best_errors = errors;
        } else if r.len() > config.min_range {
            drop(model);
            queue.extend(halves(r));
        }
    }
    Ok((best, finish(decision, f32_now, best_errors)))
}

/// `r` cut in two (one range when it has a single op).
fn halves(r: Range<usize>) -> Vec<Range<usize>> {
    if r.len() <= 1 {
        return vec![r];
    }
    let mid = r.start + r.len() / 2;
    vec![r.start..mid, mid..r.end]
}

/// `ranges` (sorted, disjoint) without the ops of `cut`, merged.
fn subtract(ranges: &[Range<usize>], cut: &Range<usize>) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    let mut push = |r: Range<usize>| {
        if r.is_empty() {
            return;
        }
        match out.last_mut() {
            Some(last) if last.end == r.start => last.end = r.end,
            _ => out.push(r),
        }
    };
    for r in ranges {
        push(r.start..r.end.min(cut.start).max(r.start));
        push(r.start.max(cut.end).min(r.end)..r.end);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtract_and_halves() {
        let all: Vec<Range<usize>> = std::iter::once(0..10).collect();
        assert_eq!(subtract(&all, &(3..5)), vec![0..3, 5..10]);
        assert_eq!(subtract(&[0..3, 5..10], &(5..7)), vec![0..3, 7..10]);
        assert_eq!(
            subtract(&[0..3, 5..10], &(0..10)),
            Vec::<Range<usize>>::new()
        );
        assert_eq!(subtract(&[0..3, 5..10], &(20..30)), vec![0..3, 5..10]);
        assert_eq!(halves(0..5), vec![0..2, 2..5]);
        assert_eq!(halves(4..5), vec![4..5]);
    }

    #[test]
    fn error_metric() {
        assert_eq!(output_error(&[1.0, 2.0], &[1.0, 2.0], 0.0), 0.0);
        assert!((output_error(&[3.0, 4.0], &[0.0, 8.0], 0.0) - 5.0 / 8.0).abs() < 1e-12);
        // A floor of 1 per value over 4 values: the denominator is 2.
        let e = output_error(&[0.0, 0.0, 0.0, 1e-4], &[0.0, 0.0, 0.0, 2e-4], 1.0);
        assert!((e - 0.5e-4).abs() < 1e-9, "{e}");
        assert_eq!(output_error(&[f32::NAN], &[1.0], 0.0), f64::INFINITY);
        assert_eq!(output_error(&[f32::INFINITY], &[1.0], 0.0), f64::INFINITY);
    }

    /// A `[1, 8, 8, 16]` input through two multiplications by constants and a copy.
    fn small_graph() -> Graph {
        use heimdall_ir::{BinaryFn, Constant, DType, Op, OpKind, TensorId, TensorInfo};
        let shape = vec![1, 8, 8, 16];
        let t = |name: &str, shape: &[usize], c: Option<f32>| TensorInfo {
            name: name.into(),
            shape: shape.to_vec(),
            dtype: DType::F32,
            constant: c.map(|v| Constant::dense(vec![v])),
        };
        let mul = |a: u32, b: u32, y: u32| {
            Op::new(
                OpKind::Binary(BinaryFn::Mul),
                vec![TensorId(a), TensorId(b)],
                vec![TensorId(y)],
            )
        };
        Graph {
            name: "small".into(),
            tensors: vec![
                t("x", &shape, None),
                t("a", &[1], Some(3.0)),
                t("y", &shape, None),
                t("b", &[1], Some(-0.25)),
                t("z", &shape, None),
                t("out", &shape, None),
            ],
            ops: vec![
                mul(0, 1, 2),
                mul(2, 3, 4),
                Op::new(OpKind::Reshape, vec![TensorId(4)], vec![TensorId(5)]),
            ],
            inputs: vec![TensorId(0)],
            outputs: vec![TensorId(5)],
        }
    }

    #[test]
    fn the_reference_does_not_depend_on_the_thread_count() {
        let g = small_graph();
        let x: Vec<f32> = (0..8 * 8 * 16).map(|i| (i as f32 * 0.37).sin()).collect();
        let all = cpu_reference(&g, &[&x]).expect("reference");
        let one = cpu_reference_with(&g, &[&x], CpuOptions { threads: 1 }).expect("one thread");
        assert_eq!(all, one);
        let want: Vec<f32> = x.iter().map(|v| v * 3.0 * -0.25).collect();
        assert_eq!(one[0], want);
        assert!(matches!(
            cpu_reference_with(&g, &[], CpuOptions { threads: 1 }),
            Err(GuardError::Calibration(_))
        ));
    }

    #[test]
    fn config_is_checked() {
        let bad = GuardConfig {
            bound: -1.0,
            ..Default::default()
        };
        assert!(matches!(bad.validate(), Err(GuardError::Config(_))));
        let bad = GuardConfig {
            output_bounds: vec![None, Some(f64::NAN)],
            ..Default::default()
        };
        assert!(bad.validate().is_err());
        let bad = GuardConfig {
            min_range: 0,
            ..Default::default()
        };
        assert!(bad.validate().is_err());
        let c = GuardConfig {
            output_bounds: vec![None, Some(0.5)],
            ..Default::default()
        };
        assert!(c.validate().is_ok());
        assert_eq!(c.bound_of(0), DEFAULT_BOUND);
        assert_eq!(c.bound_of(1), 0.5);
        assert_eq!(c.bound_of(7), DEFAULT_BOUND);
    }
}
