//! Property tests of the kernels of the ONNX-only ops (math functions, binary functions, Where,
//! InstanceNorm with and without a fused epilogue, Resize, Pad with a fill mode, Softmax, MatMul, Reduce, Transpose, SpaceToDepth,
//! DepthToSpace in CRD order) against
//! the CPU backend (the reference), on random shapes: channel counts not divisible by 4, odd
//! sizes, ranks 1 to 4, broadcasting, run-time and constant operands. Each case runs in f32
//! (L2 error ≤ 1e-5 relative to the result's norm, or for sums with cancellation to the norm of
//! the same computation on absolute values), f16 and packed f16 (≤ 3e-3, against the reference on
//! the inputs as f16 stores them) and must raise no wgpu error. Two copies follow the op under test so that it really reads and writes f16 in the f16
//! runs (the backend keeps the producer of a graph output, and its inputs, in f32). Inputs of functions with discontinuities (floor, comparisons, select) are drawn from a
//! grid that f16 stores exactly, so that storage rounding cannot move a value across a step.
//! Needs a GPU adapter (lavapipe in CI); `HEIMDALL_SKIP_GPU=1` skips.

mod common;

use common::{GraphBuilder, data, gpu, kernel_tolerance, run_cpu, run_gpu, with_trailer};
use heimdall_gpu::{GpuModel, GpuOptions, Precision};
use heimdall_ir::{
    Activation, BinaryFn, BlockOrder, CoordMode, Epilogue, Graph, NearestMode, OpKind, PadMode,
    ReduceKind, ResizeAttrs, ResizeMode, ResizeScale, TensorId, UnaryKind,
};
use proptest::prelude::*;

/// Cases per property (`HEIMDALL_KERNEL_CASES` overrides; each case runs three precisions).
fn cases() -> u32 {
    std::env::var("HEIMDALL_KERNEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
}

/// How the random inputs of a case are shaped before use.
#[derive(Clone, Copy, Debug)]
enum Domain {
    /// Uniform in [-1, 1).
    Signed,
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
    /// `x + 0.5`: a mean away from zero.
    Offset,
    /// Small integers in [-3, 3] (exponents of a negative base; select conditions).
    Integer,
}

impl Domain {
    fn apply(self, v: f32) -> f32 {
        match self {
            Domain::Signed => v,
            Domain::Positive => v.abs() + 0.1,
            Domain::NonZero => (v.abs() + 0.5).copysign(v),
            Domain::Grid => (v * 24.0).round() / 8.0,
            Domain::Wide => 3.0 * v,
            Domain::NearOne => 1.0 + (v * 8.0).round() / 64.0,
            Domain::Offset => v + 0.5,
            Domain::Integer => (v * 3.4).round(),
        }
    }
}

/// L2 norm.
fn norm(v: &[f32]) -> f64 {
    v.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt()
}

/// The CPU reference of `graph` on `inputs`, and the scale its errors are measured against (see
/// [`check`]); an error where the scale is not finite and non-zero.
fn reference_and_scale(
    graph: &Graph,
    inputs: &[Vec<f32>],
    abs_scale: bool,
) -> Result<(Vec<Vec<f32>>, Vec<f64>), String> {
    let reference = run_cpu(graph, inputs);
    let scale: Vec<f64> = if abs_scale {
        let abs: Vec<Vec<f32>> = inputs
            .iter()
            .map(|x| x.iter().map(|v| v.abs()).collect())
            .collect();
        let mut abs_graph = graph.clone();
        for t in &mut abs_graph.tensors {
            if let Some(c) = t.constant.as_mut() {
                c.values.iter_mut().for_each(|v| *v = v.abs());
                c.fp16 = None;
            }
        }
        run_cpu(&abs_graph, &abs)
            .iter()
            .zip(&reference)
            .map(|(a, r)| norm(a).max(norm(r)))
            .collect()
    } else {
        reference.iter().map(|r| norm(r)).collect()
    };
    // An all-zero reference (a comparison that is false everywhere) is measured against values
    // of size 1 (RMS), the size of a wrong flag; a non-finite scale would make the case vacuous.
    let scale: Vec<f64> = scale
        .iter()
        .zip(&reference)
        .map(|(&s, r)| if s == 0.0 { (r.len() as f64).sqrt() } else { s })
        .collect();
    for (i, s) in scale.iter().enumerate() {
        if !s.is_finite() || *s == 0.0 {
            return Err(format!("output {i}: reference scale {s} (vacuous case)"));
        }
    }
    Ok((reference, scale))
}

/// Compares the GPU with the CPU backend in every precision, the kernel under test storing in
/// that precision (see [`with_trailer`]). Input `i` is drawn from
/// `domains[i]` (the last domain repeats). With `abs_scale`, errors are relative to the larger of
/// the result's norm and the norm of the same graph on absolute inputs (sums whose terms cancel);
/// otherwise to the result's norm (to RMS 1 where the reference is all zero). The scale must be
/// finite and non-zero, so that no case passes vacuously.
fn check(graph: &Graph, seed: u64, domains: &[Domain], abs_scale: bool) -> Result<(), String> {
    let Some(gpu) = gpu() else { return Ok(()) };
    let graph = &with_trailer(graph.clone());
    graph
        .validate()
        .map_err(|e| format!("test graph invalid: {e}"))?;
    let inputs: Vec<Vec<f32>> = graph
        .inputs
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            let d = domains[i.min(domains.len() - 1)];
            data(seed + 1000 * i as u64, graph.tensor(t).numel())
                .into_iter()
                .map(|v| d.apply(v))
                .collect()
        })
        .collect();
    // The f16 runs store the inputs in f16: their reference is the CPU run on those rounded
    // values, so that an ill-conditioned output (a log near 1) measures the kernel, not the
    // storage of its input.
    let halved: Vec<Vec<f32>> = inputs
        .iter()
        .map(|x| x.iter().map(|&v| half::f16::from_f32(v).to_f32()).collect())
        .collect();
    let exact = reference_and_scale(graph, &inputs, abs_scale)?;
    let rounded = reference_and_scale(graph, &halved, abs_scale)?;
    for p in gpu.precisions() {
        let ours = run_gpu(gpu, graph, &inputs, p);
        let (reference, scale) = if p == Precision::F32 {
            &exact
        } else {
            &rounded
        };
        for (i, (o, r)) in ours.iter().zip(reference).enumerate() {
            let diff = o
                .iter()
                .zip(r)
                .map(|(&a, &b)| (a as f64 - b as f64).powi(2))
                .sum::<f64>()
                .sqrt();
            let err = diff / scale[i];
            if err.is_nan() || err > kernel_tolerance(p) {
                return Err(format!(
                    "{p:?}: output {i}: relative error {err:.3e} > {:.0e}\n gpu {:?}\n cpu {:?}",
                    kernel_tolerance(p),
                    &o[..o.len().min(12)],
                    &r[..r.len().min(12)]
                ));
            }
        }
    }
    Ok(())
}

/// Every step of the graph's GPU compilation is a GPU step.
fn assert_all_gpu(graph: &Graph) {
    let Some(gpu) = gpu() else { return };
    let m = GpuModel::compile(&gpu.ctx, graph, GpuOptions::new(Precision::F32)).expect("compile");
    assert!(
        m.placement()
            .iter()
            .all(|p| *p == heimdall_gpu::Placement::Gpu),
        "a step of {:?} is placed on the CPU",
        graph.ops.iter().map(|o| o.kind.name()).collect::<Vec<_>>()
    );
}

/// A shape of `rank` from `dims` (batch 1 for rank 4).
fn shape_of(rank: usize, dims: [usize; 4]) -> Vec<usize> {
    let mut s = dims[4 - rank..].to_vec();
    if rank == 4 {
        s[0] = 1;
    }
    s
}

/// `out` with axes switched to 1 by `mask` (bit d of the right-aligned axis d) and the leading
/// `drop` axes removed: a shape that broadcasts to `out`.
fn broadcast_from(out: &[usize], mask: u8, drop: usize) -> Vec<usize> {
    let n = out.len();
    let mut s: Vec<usize> = out
        .iter()
        .enumerate()
        .map(|(i, &d)| if mask >> (n - 1 - i) & 1 == 1 { 1 } else { d })
        .collect();
    s.drain(..drop.min(n.saturating_sub(1)));
    s
}

/// An operand of `shape`: a graph input, or a constant when `constant`.
fn operand(b: &mut GraphBuilder, shape: &[usize], constant: bool, seed: u64) -> TensorId {
    if constant {
        b.constant(shape, seed)
    } else {
        b.input(shape)
    }
}

fn math_fn(code: u8) -> (UnaryKind, Domain) {
    match code {
        0 => (
            UnaryKind::Clip {
                min: -0.3,
                max: 0.6,
            },
            Domain::Signed,
        ),
        1 => (
            UnaryKind::Clip {
                min: f32::NEG_INFINITY,
                max: 0.25,
            },
            Domain::Signed,
        ),
        2 => (UnaryKind::LeakyRelu { alpha: 0.1 }, Domain::Signed),
        3 => (
            UnaryKind::HardSigmoid {
                alpha: 0.2,
                beta: 0.5,
            },
            Domain::Wide,
        ),
        4 => (UnaryKind::Elu { alpha: 1.3 }, Domain::Wide),
        5 => (UnaryKind::Erf, Domain::Wide),
        6 => (UnaryKind::Sqrt, Domain::Positive),
        7 => (UnaryKind::Exp, Domain::Wide),
        8 => (UnaryKind::Log, Domain::Positive),
        9 => (UnaryKind::Abs, Domain::Signed),
        10 => (UnaryKind::Neg, Domain::Signed),
        11 => (UnaryKind::Reciprocal, Domain::NonZero),
        12 => (UnaryKind::Floor, Domain::Grid),
        13 => (UnaryKind::Ceil, Domain::Grid),
        14 => (UnaryKind::Softplus, Domain::Wide),
        15 => (UnaryKind::Softsign, Domain::Wide),
        16 => (UnaryKind::Gelu, Domain::Wide),
        _ => (UnaryKind::Identity, Domain::Signed),
    }
}

fn binary_fn(code: u8) -> (BinaryFn, [Domain; 2]) {
    match code {
        0 => (BinaryFn::Div, [Domain::Signed, Domain::NonZero]),
        1 => (BinaryFn::Pow, [Domain::Positive, Domain::Wide]),
        // A negative base with integer exponents (the sign of (-1)^b).
        2 => (BinaryFn::Pow, [Domain::NonZero, Domain::Integer]),
        3 => (BinaryFn::Max, [Domain::Signed, Domain::Signed]),
        4 => (BinaryFn::Min, [Domain::Signed, Domain::Signed]),
        5 => (BinaryFn::Less, [Domain::Grid, Domain::Grid]),
        6 => (BinaryFn::Greater, [Domain::Grid, Domain::Grid]),
        7 => (BinaryFn::Equal, [Domain::Grid, Domain::Grid]),
        8 => (BinaryFn::LessOrEqual, [Domain::Grid, Domain::Grid]),
        _ => (BinaryFn::GreaterOrEqual, [Domain::Grid, Domain::Grid]),
    }
}

fn reduce_kind(code: u8) -> (ReduceKind, Domain) {
    match code {
        0 => (ReduceKind::Sum, Domain::Signed),
        1 => (ReduceKind::Max, Domain::Signed),
        2 => (ReduceKind::Min, Domain::Signed),
        3 => (ReduceKind::Prod, Domain::NearOne),
        4 => (ReduceKind::SumSquare, Domain::Signed),
        5 => (ReduceKind::L1, Domain::Signed),
        6 => (ReduceKind::L2, Domain::Signed),
        7 => (ReduceKind::LogSum, Domain::Positive),
        _ => (ReduceKind::LogSumExp, Domain::Signed),
    }
}

fn coord_mode(code: u8) -> CoordMode {
    match code {
        0 => CoordMode::HalfPixel,
        1 => CoordMode::PytorchHalfPixel,
        2 => CoordMode::AlignCorners,
        3 => CoordMode::Asymmetric,
        4 => CoordMode::TfHalfPixelForNn,
        _ => CoordMode::HalfPixelSymmetric,
    }
}

fn resize_mode(code: u8) -> ResizeMode {
    match code {
        0 => ResizeMode::Nearest(NearestMode::RoundPreferFloor),
        1 => ResizeMode::Nearest(NearestMode::RoundPreferCeil),
        2 => ResizeMode::Nearest(NearestMode::Floor),
        3 => ResizeMode::Nearest(NearestMode::Ceil),
        4 | 5 => ResizeMode::Linear,
        6 => ResizeMode::Cubic {
            a: -0.75,
            exclude_outside: false,
        },
        _ => ResizeMode::Cubic {
            a: -0.5,
            exclude_outside: true,
        },
    }
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(cases()) })]

    #[test]
    fn math(rank in 1..5usize, dims in prop::array::uniform4(1..9usize), code in 0..18u8, seed in 0..1000u64) {
        let (f, domain) = math_fn(code);
        let shape = shape_of(rank, dims);
        let mut b = GraphBuilder::default();
        let x = b.input(&shape);
        let y = b.op(OpKind::Unary(f), vec![x], &shape, Epilogue::default());
        check(&b.finish(vec![y]), seed, &[domain], false).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn binary(rank in 1..5usize, dims in prop::array::uniform4(1..8usize), code in 0..10u8, mask_a in 0..8u8, mask_b in 0..8u8, drop_a in 0..3usize, drop_b in 0..3usize, const_b: bool, seed in 0..1000u64) {
        let (f, domains) = binary_fn(code);
        let out = shape_of(rank, dims);
        // At most one operand broadcasts along a given axis, so the output keeps `out`.
        let (sa, sb) = (broadcast_from(&out, mask_a, drop_a), broadcast_from(&out, mask_b & !mask_a, drop_b * usize::from(drop_a == 0)));
        let mut b = GraphBuilder::default();
        let a_t = b.input(&sa);
        let b_t = operand(&mut b, &sb, const_b, seed);
        let y_shape = heimdall_ir::ops::binary::shape(&sa, &sb).expect("broadcast");
        let y = b.op(OpKind::Binary(f), vec![a_t, b_t], &y_shape, Epilogue::default());
        let mut g = b.finish(vec![y]);
        if const_b {
            // A constant operand takes its domain here (inputs take it in `check`).
            let c = g.tensors[b_t.index()].constant.as_mut().unwrap();
            c.values.iter_mut().for_each(|v| *v = domains[1].apply(*v));
        }
        check(&g, seed, &domains, false).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn select_where(rank in 1..5usize, dims in prop::array::uniform4(1..8usize), masks in prop::array::uniform3(0..8u8), const_y: bool, seed in 0..1000u64) {
        let out = shape_of(rank, dims);
        // The condition broadcasts along its masked axes; x and y along disjoint others.
        let sc = broadcast_from(&out, masks[0], 0);
        let sx = broadcast_from(&out, masks[1] & !masks[0], 0);
        let sy = broadcast_from(&out, masks[2] & !masks[0] & !masks[1], 1);
        let mut b = GraphBuilder::default();
        let c = b.input(&sc);
        let x = b.input(&sx);
        let yv = operand(&mut b, &sy, const_y, seed);
        let shape = heimdall_ir::ops::binary::shape(&heimdall_ir::ops::binary::shape(&sc, &sx).unwrap(), &sy).unwrap();
        let y = b.op(OpKind::Where, vec![c, x, yv], &shape, Epilogue::default());
        check(&b.finish(vec![y]), seed, &[Domain::Integer, Domain::Signed], false).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn instance_norm(h in 1..24usize, w in 1..24usize, c in 1..13usize, scale in 0..3u8, bias in 0..3u8, seed in 0..1000u64) {
        // scale / bias: 0 absent, 1 run-time input, 2 constant (bias only with a scale).
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, h, w, c]);
        let mut inputs = vec![x];
        if scale > 0 {
            inputs.push(operand(&mut b, &[c], scale == 2, seed + 1));
            if bias > 0 {
                inputs.push(operand(&mut b, &[c], bias == 2, seed + 2));
            }
        }
        let y = b.op(OpKind::InstanceNorm { epsilon: 1e-5 }, inputs, &[1, h, w, c], Epilogue::default());
        check(&b.finish(vec![y]), seed, &[Domain::Signed], false).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn instance_norm_with_epilogue(h in 1..40usize, w in 1..40usize, c in 1..13usize, residual: bool, act in 0..4u8, seed in 0..1000u64) {
        // Conditional instance normalisation as the passes leave it: run-time scale and shift,
        // then the epilogue the shift's ADD had (a residual add, ReLU, logistic or PReLU).
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, h, w, c]);
        let s = b.input(&[c]);
        let bias = b.input(&[c]);
        let r = residual.then(|| b.input(&[1, h, w, c]));
        let activation = match act {
            0 => Activation::None,
            1 => Activation::Unary(UnaryKind::Relu),
            2 => Activation::Unary(UnaryKind::Logistic),
            _ => Activation::Prelu(b.constant(&[c], seed + 3)),
        };
        let ep = Epilogue { residual: r, activation };
        let y = b.op(OpKind::InstanceNorm { epsilon: 1e-5 }, vec![x, s, bias], &[1, h, w, c], ep);
        check(&b.finish(vec![y]), seed, &[Domain::Signed], false).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn instance_norm_many_chunks(h in 20..90usize, w in 20..90usize, c in 1..7usize, shift in 0..3u8, seed in 0..1000u64) {
        // Several statistics chunks of 1024 positions per slice, with a ragged last one; `shift`
        // moves the mean away from zero (the merge of chunk statistics must not cancel).
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, h, w, c]);
        let s = b.input(&[c]);
        let bias = b.constant(&[c], seed + 2);
        let y = b.op(OpKind::InstanceNorm { epsilon: 1e-5 }, vec![x, s, bias], &[1, h, w, c], Epilogue::default());
        let domain = [Domain::Signed, Domain::Offset, Domain::Wide][shift as usize];
        check(&b.finish(vec![y]), seed, &[domain, Domain::Signed], false).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn resize(h in 1..9usize, w in 1..9usize, c in 1..10usize, oh in 1..15usize, ow in 1..15usize, mode in 0..8u8, coord in 0..6u8, seed in 0..1000u64) {
        let attrs = ResizeAttrs {
            mode: resize_mode(mode),
            coord: coord_mode(coord),
            scale: ResizeScale::Given([oh as f32 / h as f32, ow as f32 / w as f32]),
        };
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, h, w, c]);
        let y = b.op(OpKind::Resize(attrs), vec![x], &[1, oh, ow, c], Epilogue::default());
        check(&b.finish(vec![y]), seed, &[Domain::Signed], false).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn pad_with(rank in 1..5usize, dims in prop::array::uniform4(1..8usize), pads in prop::array::uniform8(0..4usize), mode in 0..3u8, seed in 0..1000u64) {
        let shape = shape_of(rank, dims);
        let mode = match mode {
            0 => PadMode::Constant(0.75),
            1 => PadMode::Reflect,
            _ => PadMode::Edge,
        };
        let p: Vec<[usize; 2]> = (0..rank)
            .map(|d| {
                // No padding of the batch axis; reflect pads at most n - 1.
                if rank == 4 && d == 0 {
                    return [0, 0];
                }
                let lim = if mode == PadMode::Reflect { shape[d] - 1 } else { 3 };
                [pads[2 * d].min(lim), pads[2 * d + 1].min(lim)]
            })
            .collect();
        let out = heimdall_ir::ops::pad::shape(&shape, &p, &mode).unwrap();
        let mut b = GraphBuilder::default();
        let x = b.input(&shape);
        let y = b.op(OpKind::Pad { pads: p, mode }, vec![x], &out, Epilogue::default());
        check(&b.finish(vec![y]), seed, &[Domain::Signed], false).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn softmax(rank in 1..5usize, dims in prop::array::uniform4(1..10usize), axis in 0..4usize, log: bool, seed in 0..1000u64) {
        let shape = shape_of(rank, dims);
        let axis = axis % rank;
        let mut b = GraphBuilder::default();
        let x = b.input(&shape);
        let y = b.op(OpKind::Softmax { axis, log }, vec![x], &shape, Epilogue::default());
        // Log-softmax of a length-1 axis is all zeros: measure against the values' scale.
        let g = b.finish(vec![y]);
        if log && shape[axis] == 1 {
            return Ok(());
        }
        check(&g, seed, &[Domain::Wide], false).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn matmul(batch in 1..4usize, m in 1..10usize, k in 1..14usize, n in 1..12usize, rank_a in 2..4usize, rank_b in 2..4usize, bcast_a: bool, const_b: bool, seed in 0..1000u64) {
        let sa = if rank_a == 3 { vec![if bcast_a { 1 } else { batch }, m, k] } else { vec![m, k] };
        let sb = if rank_b == 3 { vec![batch, k, n] } else { vec![k, n] };
        let out = heimdall_ir::ops::matmul::shape(&sa, &sb).unwrap();
        let mut b = GraphBuilder::default();
        let a = b.input(&sa);
        let bt = operand(&mut b, &sb, const_b, seed);
        let y = b.op(OpKind::MatMul, vec![a, bt], &out, Epilogue::default());
        check(&b.finish(vec![y]), seed, &[Domain::Signed], true).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn reduce(rank in 1..5usize, dims in prop::array::uniform4(1..9usize), axes_mask in 1..16u8, keep_dims: bool, code in 0..9u8, seed in 0..1000u64) {
        let (kind, domain) = reduce_kind(code);
        let shape = shape_of(rank, dims);
        let axes: Vec<usize> = (0..rank).filter(|a| axes_mask >> a & 1 == 1).collect();
        if axes.is_empty() {
            return Ok(());
        }
        let out = heimdall_ir::ops::reduce::shape(&shape, &axes, keep_dims).unwrap();
        let mut b = GraphBuilder::default();
        let x = b.input(&shape);
        let y = b.op(OpKind::Reduce { kind, axes, keep_dims }, vec![x], &out, Epilogue::default());
        check(&b.finish(vec![y]), seed, &[domain], kind == ReduceKind::Sum).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn transpose(rank in 2..5usize, dims in prop::array::uniform4(1..9usize), perm_seed in 0..24usize, seed in 0..1000u64) {
        let shape = shape_of(rank, dims);
        // The permutations of the non-batch axes (rank 4 keeps the batch axis first).
        let free: Vec<usize> = if rank == 4 { vec![1, 2, 3] } else { (0..rank).collect() };
        let mut rest = free.clone();
        let mut perm_free = Vec::new();
        let mut s = perm_seed;
        while !rest.is_empty() {
            perm_free.push(rest.remove(s % rest.len()));
            s /= 4;
        }
        let perm: Vec<usize> = if rank == 4 { [vec![0], perm_free].concat() } else { perm_free };
        let out: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
        let mut b = GraphBuilder::default();
        let x = b.input(&shape);
        let y = b.op(OpKind::Transpose { perm }, vec![x], &out, Epilogue::default());
        check(&b.finish(vec![y]), seed, &[Domain::Signed], false).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn space_depth(h in 1..6usize, w in 1..6usize, c in 1..7usize, block in 1..4usize, crd: bool, seed in 0..1000u64) {
        let (shape, out) = if crd {
            ([1, h, w, c * block * block], [1, h * block, w * block, c])
        } else {
            ([1, h * block, w * block, c], [1, h, w, c * block * block])
        };
        let kind = if crd { OpKind::DepthToSpace { block, order: BlockOrder::Crd } } else { OpKind::SpaceToDepth { block } };
        let mut b = GraphBuilder::default();
        let x = b.input(&shape);
        let y = b.op(kind, vec![x], &out, Epilogue::default());
        check(&b.finish(vec![y]), seed, &[Domain::Signed], false).map_err(TestCaseError::fail)?;
    }
}

/// The case CI drew once: `ReduceLogSum` of one value that f16 stores 1.1e-4 off, where log is
/// ill-conditioned (its result is -0.031), so the f16 runs are checked against the reference on
/// the stored input; against the exact input this case is 3.5e-3 off.
#[test]
fn log_sum_near_one_is_checked_on_the_stored_input() {
    let mut b = GraphBuilder::default();
    let x = b.input(&[1, 1]);
    let kind = ReduceKind::LogSum;
    let op = OpKind::Reduce {
        kind,
        axes: vec![0],
        keep_dims: false,
    };
    let y = b.op(op, vec![x], &[1], Epilogue::default());
    check(&b.finish(vec![y]), 632, &[Domain::Positive], false).unwrap();
}

/// Every ONNX-only op kind is placed on the GPU (no CPU step), in a graph chaining them.
#[test]
fn onnx_op_kinds_run_on_the_gpu() {
    let mut b = GraphBuilder::default();
    let x = b.input(&[1, 4, 6, 5]);
    let t = b.op(
        OpKind::Transpose {
            perm: vec![0, 2, 1, 3],
        },
        vec![x],
        &[1, 6, 4, 5],
        Epilogue::default(),
    );
    let m = b.op(
        OpKind::Unary(UnaryKind::Erf),
        vec![t],
        &[1, 6, 4, 5],
        Epilogue::default(),
    );
    let d = b.constant(&[5], 3);
    let q = b.op(
        OpKind::Binary(BinaryFn::Max),
        vec![m, d],
        &[1, 6, 4, 5],
        Epilogue::default(),
    );
    let n = b.op(
        OpKind::InstanceNorm { epsilon: 1e-5 },
        vec![q],
        &[1, 6, 4, 5],
        Epilogue::default(),
    );
    let r = b.op(
        OpKind::Resize(ResizeAttrs {
            mode: ResizeMode::Linear,
            coord: CoordMode::HalfPixel,
            scale: ResizeScale::Given([2.0, 2.0]),
        }),
        vec![n],
        &[1, 12, 8, 5],
        Epilogue::default(),
    );
    let p = b.op(
        OpKind::Pad {
            pads: vec![[0, 0], [1, 1], [2, 2], [0, 0]],
            mode: PadMode::Reflect,
        },
        vec![r],
        &[1, 14, 12, 5],
        Epilogue::default(),
    );
    let s2d = b.op(
        OpKind::SpaceToDepth { block: 2 },
        vec![p],
        &[1, 7, 6, 20],
        Epilogue::default(),
    );
    let d2s = b.op(
        OpKind::DepthToSpace {
            block: 2,
            order: BlockOrder::Crd,
        },
        vec![s2d],
        &[1, 14, 12, 5],
        Epilogue::default(),
    );
    let sm = b.op(
        OpKind::Softmax {
            axis: 3,
            log: false,
        },
        vec![d2s],
        &[1, 14, 12, 5],
        Epilogue::default(),
    );
    let red = b.op(
        OpKind::Reduce {
            kind: ReduceKind::Sum,
            axes: vec![1],
            keep_dims: false,
        },
        vec![sm],
        &[1, 12, 5],
        Epilogue::default(),
    );
    let w = b.constant(&[5, 3], 9);
    let mm = b.op(
        OpKind::MatMul,
        vec![red, w],
        &[1, 12, 3],
        Epilogue::default(),
    );
    let zero = b.constant(&[3], 11);
    let cond = b.op(
        OpKind::Binary(BinaryFn::Greater),
        vec![mm, zero],
        &[1, 12, 3],
        Epilogue::default(),
    );
    let out = b.op(
        OpKind::Where,
        vec![cond, mm, zero],
        &[1, 12, 3],
        Epilogue::default(),
    );
    let g = b.finish(vec![out]);
    assert_all_gpu(&g);
    check(&g, 5, &[Domain::Signed], true).unwrap();
    // Mixed storage: every other op in f32 inside an f16 model (each kernel reading and writing
    // different precisions), against the CPU at the f16 bound.
    let Some(gpu) = gpu() else { return };
    let g = with_trailer(g);
    let inputs = common::inputs_for(&g, 5);
    let reference = run_cpu(&g, &inputs);
    for base in [Precision::F16, Precision::PackedF16] {
        for parity in 0..2 {
            let mut options = GpuOptions::new(base);
            options.overrides = (parity..g.ops.len())
                .step_by(2)
                .map(|i| (i..i + 1, Precision::F32))
                .collect();
            let m = GpuModel::compile(&gpu.ctx, &g, options).expect("compile");
            let refs: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
            let ours = m.run(&refs).expect("run");
            gpu.assert_no_errors();
            let diff: Vec<f32> = ours[0]
                .iter()
                .zip(&reference[0])
                .map(|(a, b)| a - b)
                .collect();
            let err = norm(&diff) / norm(&reference[0]);
            assert!(
                err <= kernel_tolerance(base),
                "{base:?} with f32 ops of parity {parity}: {err:.3e}"
            );
        }
    }
}
