//! The one GPU-vs-CPU harness of the kernel tests (`tests/ops_*.rs`, and the kernel variants of
//! `conv1x1_tiled.rs`, `conv_coop.rs`, `reduce_split.rs`, `concat.rs`): a [`Case`] describes one
//! problem (a graph, usually of one op; its inputs; how an error is measured; the tolerance per
//! precision), and [`Case::check`] runs it on the CPU backend (heimdall-cpu, the reference) and on
//! the GPU in every storage precision, the graph followed by [`with_trailer`] so that the op
//! under test really reads and writes that precision. Every run must raise no wgpu error.

use heimdall_gpu::Precision;
use heimdall_ir::Graph;

use super::{data, gpu, kernel_tolerance, run_cpu, run_gpu, with_trailer};

/// How the seeded random inputs of a case are shaped before use (applied to values uniform in
/// [-1, 1), see [`data`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Domain {
    /// Uniform in [-1, 1).
    Signed,
    /// `x + s`: a mean away from zero (reductions and means of zero-mean data are near zero,
    /// where any change of summation order is a large relative error).
    Shifted(f32),
    /// `|x| + 0.1`: positive (sqrt, log, pow of a positive base).
    Positive,
    /// `±(|x| + 0.5)`: away from zero (divisors, reciprocals).
    NonZero,
    /// Multiples of 1/8 in [-3, 3]: exact in f16, with ties (comparisons, floor, ceil).
    Grid,
    /// `3x`: both branches of erf, saturation of softplus and friends.
    Wide,
    /// `1 + k/64` for k in -8..=8: near 1 and exact in f16 (products of many values).
    NearOne,
    /// Small integers in [-3, 3] (exponents of a negative base; select conditions).
    Integer,
}

impl Domain {
    pub fn apply(self, v: f32) -> f32 {
        match self {
            Domain::Signed => v,
            Domain::Shifted(s) => v + s,
            Domain::Positive => v.abs() + 0.1,
            Domain::NonZero => (v.abs() + 0.5).copysign(v),
            Domain::Grid => (v * 24.0).round() / 8.0,
            Domain::Wide => 3.0 * v,
            Domain::NearOne => 1.0 + (v * 8.0).round() / 64.0,
            Domain::Integer => (v * 3.4).round(),
        }
    }
}

/// The inputs of a case.
#[derive(Clone, Debug)]
pub enum Inputs {
    /// Graph input `i` is `data(seed + 1000 i, numel)` mapped through `domains[i]` (the last
    /// domain repeats).
    Seeded { seed: u64, domains: Vec<Domain> },
    /// These values, one vector per graph input.
    Given(Vec<Vec<f32>>),
}

/// How the error of an output is measured (the L2 norm of the difference, relative to a scale).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Measure {
    /// Relative to the reference's norm (`heimdall_testkit::rel_l2`; absolute where it is 0).
    Relative,
    /// Relative to the larger of the reference's norm and the norm of the same graph run on the
    /// absolute values of its inputs and constants (`heimdall_testkit::rel_l2_scaled`): a sum
    /// whose terms cancel (a dot product of random signs landing near zero) has a small result
    /// but carries the rounding of its large terms, so its error is measured against the
    /// norm-wise bound of the sum, not the result alone.
    Scaled,
    /// Relative to the reference's norm, or with `cancel` to the larger of it and the norm of the
    /// computation on absolute values (as [`Measure::Scaled`]); to RMS 1 where that scale is 0 (a
    /// comparison false everywhere: the size of a wrong flag). A scale that is not finite fails
    /// the case as vacuous.
    Strict { cancel: bool },
}

/// What the f16 and packed-f16 runs are compared with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum F16Reference {
    /// The CPU run on the inputs as given (the f32 reference).
    Exact,
    /// The CPU run on the inputs rounded to f16, as the GPU stores them: an ill-conditioned
    /// output (a log near 1) then measures the kernel, not the storage of its input.
    StoredInputs,
}

/// One GPU-vs-CPU problem.
#[derive(Clone, Debug)]
pub struct Case {
    /// Names the case in failure messages.
    pub name: String,
    pub graph: Graph,
    pub inputs: Inputs,
    pub measure: Measure,
    pub f16_reference: F16Reference,
    /// The largest error allowed per storage precision.
    pub tolerance: fn(Precision) -> f64,
}

impl Case {
    /// `graph` on seeded inputs uniform in [-1, 1), measured [`Measure::Scaled`] against the
    /// exact reference in every precision, within [`kernel_tolerance`] (1e-5 in f32, 3e-3 in
    /// f16 and packed f16).
    pub fn new(name: impl Into<String>, graph: Graph, seed: u64) -> Case {
        Case {
            name: name.into(),
            graph,
            inputs: Inputs::Seeded {
                seed,
                domains: vec![Domain::Signed],
            },
            measure: Measure::Scaled,
            f16_reference: F16Reference::Exact,
            tolerance: kernel_tolerance,
        }
    }

    /// `graph` on the given inputs, measured [`Measure::Relative`] against the exact reference.
    pub fn given(name: impl Into<String>, graph: Graph, inputs: Vec<Vec<f32>>) -> Case {
        Case {
            inputs: Inputs::Given(inputs),
            measure: Measure::Relative,
            ..Case::new(name, graph, 0)
        }
    }

    /// The seeded inputs drawn from `domains` (input `i` from `domains[i]`, the last repeats).
    pub fn domains(mut self, domains: &[Domain]) -> Case {
        assert!(!domains.is_empty(), "{}: no domain", self.name);
        let Inputs::Seeded { seed, .. } = self.inputs else {
            panic!("{}: domains of given inputs", self.name)
        };
        self.inputs = Inputs::Seeded {
            seed,
            domains: domains.to_vec(),
        };
        self
    }

    /// The measure of the ONNX-op tests: [`Measure::Strict`] (with `cancel` for sums whose
    /// terms cancel), the f16 runs against the reference on the stored inputs.
    pub fn strict(mut self, cancel: bool) -> Case {
        self.measure = Measure::Strict { cancel };
        self.f16_reference = F16Reference::StoredInputs;
        self
    }

    /// The input values.
    pub fn input_values(&self) -> Vec<Vec<f32>> {
        match &self.inputs {
            Inputs::Given(v) => v.clone(),
            Inputs::Seeded { seed, domains } => self
                .graph
                .inputs
                .iter()
                .enumerate()
                .map(|(i, &t)| {
                    let d = domains[i.min(domains.len() - 1)];
                    data(seed + 1000 * i as u64, self.graph.tensor(t).numel())
                        .into_iter()
                        .map(|v| d.apply(v))
                        .collect()
                })
                .collect(),
        }
    }

    /// The inputs and the references of every precision, the GPU not involved: an error where
    /// the graph is invalid or a [`Measure::Strict`] scale is vacuous.
    pub fn prepare(&self) -> Result<Prepared, String> {
        self.graph
            .validate()
            .map_err(|e| format!("{}: test graph invalid: {e}", self.name))?;
        let inputs = self.input_values();
        let exact = Reference::of(&self.graph, &inputs, self.measure)
            .map_err(|e| format!("{}: {e}", self.name))?;
        let stored = match self.f16_reference {
            F16Reference::Exact => None,
            F16Reference::StoredInputs => {
                let halved: Vec<Vec<f32>> = inputs
                    .iter()
                    .map(|x| x.iter().map(|&v| half::f16::from_f32(v).to_f32()).collect())
                    .collect();
                Some(
                    Reference::of(&self.graph, &halved, self.measure)
                        .map_err(|e| format!("{}: {e}", self.name))?,
                )
            }
        };
        Ok(Prepared {
            inputs,
            exact,
            stored,
        })
    }

    /// Runs the case on the GPU in every precision against the CPU; returns the largest error
    /// per precision (f32, f16, packed f16; all 0 when `HEIMDALL_SKIP_GPU=1`), or a message
    /// naming the precision and output above the tolerance (NaN fails too).
    pub fn check(&self) -> Result<[f64; 3], String> {
        let mut worst = [0.0f64; 3];
        let Some(gpu) = gpu() else { return Ok(worst) };
        let prepared = self.prepare()?;
        let trailed = with_trailer(self.graph.clone());
        for p in gpu.precisions() {
            let ours = run_gpu(gpu, &trailed, &prepared.inputs, p);
            let k = Precision::ALL.iter().position(|&q| q == p).unwrap();
            worst[k] = prepared.judge(self, p, &ours)?;
        }
        Ok(worst)
    }

    /// [`Case::check`] inside a property test.
    pub fn prop(&self) -> Result<(), proptest::test_runner::TestCaseError> {
        self.check()
            .map(|_| ())
            .map_err(proptest::test_runner::TestCaseError::fail)
    }
}

/// The CPU reference of one set of inputs, and the scales its errors are measured against.
pub struct Reference {
    outputs: Vec<Vec<f32>>,
    /// Per output: the same graph on absolute values ([`Measure::Scaled`]).
    abs_outputs: Vec<Vec<f32>>,
    /// Per output: the scale of [`Measure::Strict`].
    strict_scale: Vec<f64>,
}

/// L2 norm.
fn norm(v: &[f32]) -> f64 {
    v.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt()
}

/// `graph` with every constant replaced by its absolute value.
fn abs_constants(graph: &Graph) -> Graph {
    let mut g = graph.clone();
    for t in &mut g.tensors {
        if let Some(c) = t.constant.as_mut() {
            c.values.iter_mut().for_each(|v| *v = v.abs());
            c.fp16 = None;
        }
    }
    g
}

impl Reference {
    fn of(graph: &Graph, inputs: &[Vec<f32>], measure: Measure) -> Result<Reference, String> {
        let outputs = run_cpu(graph, inputs);
        let needs_abs = matches!(measure, Measure::Scaled | Measure::Strict { cancel: true });
        let abs_outputs = if needs_abs {
            let abs: Vec<Vec<f32>> = inputs
                .iter()
                .map(|x| x.iter().map(|v| v.abs()).collect())
                .collect();
            run_cpu(&abs_constants(graph), &abs)
        } else {
            Vec::new()
        };
        let mut strict_scale = Vec::new();
        if let Measure::Strict { cancel } = measure {
            for (i, r) in outputs.iter().enumerate() {
                let s = if cancel {
                    norm(&abs_outputs[i]).max(norm(r))
                } else {
                    norm(r)
                };
                let s = if s == 0.0 { (r.len() as f64).sqrt() } else { s };
                if !s.is_finite() || s == 0.0 {
                    return Err(format!("output {i}: reference scale {s} (vacuous case)"));
                }
                strict_scale.push(s);
            }
        }
        Ok(Reference {
            outputs,
            abs_outputs,
            strict_scale,
        })
    }

    /// The error of `ours` as output `i`.
    fn error(&self, measure: Measure, i: usize, ours: &[f32]) -> f64 {
        let r = &self.outputs[i];
        match measure {
            Measure::Relative => heimdall_testkit::rel_l2(ours, r),
            Measure::Scaled => heimdall_testkit::rel_l2_scaled(ours, r, &self.abs_outputs[i]),
            Measure::Strict { .. } => {
                let diff = ours
                    .iter()
                    .zip(r)
                    .map(|(&a, &b)| (a as f64 - b as f64).powi(2))
                    .sum::<f64>()
                    .sqrt();
                diff / self.strict_scale[i]
            }
        }
    }
}

/// A case's inputs and references, ready to judge GPU results.
pub struct Prepared {
    pub inputs: Vec<Vec<f32>>,
    exact: Reference,
    /// The reference of the f16 runs where it is not the exact one.
    stored: Option<Reference>,
}

impl Prepared {
    /// The CPU reference of precision `p`.
    pub fn reference(&self, p: Precision) -> &[Vec<f32>] {
        &self.for_precision(p).outputs
    }

    fn for_precision(&self, p: Precision) -> &Reference {
        match (&self.stored, p) {
            (Some(stored), Precision::F16 | Precision::PackedF16) => stored,
            _ => &self.exact,
        }
    }

    /// The largest error of the outputs `ours` of a run in precision `p`, or a message where one
    /// is above `case`'s tolerance or NaN.
    pub fn judge(&self, case: &Case, p: Precision, ours: &[Vec<f32>]) -> Result<f64, String> {
        let reference = self.for_precision(p);
        let tolerance = (case.tolerance)(p);
        if ours.len() != reference.outputs.len() {
            return Err(format!(
                "{}: {p:?}: {} outputs, the reference has {}",
                case.name,
                ours.len(),
                reference.outputs.len()
            ));
        }
        let mut worst = 0.0f64;
        for (i, (o, r)) in ours.iter().zip(&reference.outputs).enumerate() {
            let err = reference.error(case.measure, i, o);
            if err.is_nan() || err > tolerance {
                return Err(format!(
                    "{}: {p:?}: output {i}: relative error {err:.3e} > {tolerance:.0e}\n gpu {:?}\n cpu {:?}",
                    case.name,
                    &o[..o.len().min(12)],
                    &r[..r.len().min(12)]
                ));
            }
            worst = worst.max(err);
        }
        Ok(worst)
    }
}
