//! Element-wise ops against the CPU backend (the reference): the TFLite activations and binary
//! ops with broadcasting and fused epilogues (errors relative to the computation's scale), the
//! ONNX math functions (`MATH`), binary functions (`BINARY`) and `Where` on ranks 1 to 4 with
//! broadcasting and run-time and constant operands (`Measure::Strict`, the f16 runs against the
//! reference on the inputs as f16 stores them). Kernels: `src/ops/unary.rs`, `binary.rs`,
//! `select.rs`. Inputs of functions with discontinuities (floor, comparisons, select) are drawn
//! from a grid that f16 stores exactly, so that storage rounding cannot move a value across a
//! step. Each case is a `common::Case` (the one harness): f32 ≤ 1e-5, f16 and packed f16
//! ≤ 3e-3, no wgpu error. Also that the harness can fail. Needs a GPU adapter (lavapipe in CI);
//! `HEIMDALL_SKIP_GPU=1` skips.

mod common;

use common::{
    Case, Domain, GraphBuilder, broadcast_from, epilogue, kernel_cases, operand, shape_of,
};
use heimdall_gpu::Precision;
use heimdall_ir::{BinaryFn, Epilogue, Graph, OpKind, UnaryKind};
use proptest::prelude::*;

/// The TFLite activations (measured against the computation's scale).
const ACTIVATIONS: [UnaryKind; 6] = [
    UnaryKind::Relu,
    UnaryKind::Relu6,
    UnaryKind::ReluN1To1,
    UnaryKind::Logistic,
    UnaryKind::HardSwish,
    UnaryKind::Tanh,
];

/// The TFLite binary ops with broadcasting and fused epilogues.
const TFLITE_BINARY: [BinaryFn; 4] = [BinaryFn::Add, BinaryFn::Sub, BinaryFn::Mul, BinaryFn::Prelu];

/// The ONNX math functions and the domain each is tested on.
const MATH: [(UnaryKind, Domain); 18] = [
    (
        UnaryKind::Clip {
            min: -0.3,
            max: 0.6,
        },
        Domain::Signed,
    ),
    (
        UnaryKind::Clip {
            min: f32::NEG_INFINITY,
            max: 0.25,
        },
        Domain::Signed,
    ),
    (UnaryKind::LeakyRelu { alpha: 0.1 }, Domain::Signed),
    (
        UnaryKind::HardSigmoid {
            alpha: 0.2,
            beta: 0.5,
        },
        Domain::Wide,
    ),
    (UnaryKind::Elu { alpha: 1.3 }, Domain::Wide),
    (UnaryKind::Erf, Domain::Wide),
    (UnaryKind::Sqrt, Domain::Positive),
    (UnaryKind::Exp, Domain::Wide),
    (UnaryKind::Log, Domain::Positive),
    (UnaryKind::Abs, Domain::Signed),
    (UnaryKind::Neg, Domain::Signed),
    (UnaryKind::Reciprocal, Domain::NonZero),
    (UnaryKind::Floor, Domain::Grid),
    (UnaryKind::Ceil, Domain::Grid),
    (UnaryKind::Softplus, Domain::Wide),
    (UnaryKind::Softsign, Domain::Wide),
    (UnaryKind::Gelu, Domain::Wide),
    (UnaryKind::Identity, Domain::Signed),
];

/// The ONNX binary functions and the domains of their two operands.
const BINARY: [(BinaryFn, [Domain; 2]); 10] = [
    (BinaryFn::Div, [Domain::Signed, Domain::NonZero]),
    (BinaryFn::Pow, [Domain::Positive, Domain::Wide]),
    // A negative base with integer exponents (the sign of (-1)^b).
    (BinaryFn::Pow, [Domain::NonZero, Domain::Integer]),
    (BinaryFn::Max, [Domain::Signed, Domain::Signed]),
    (BinaryFn::Min, [Domain::Signed, Domain::Signed]),
    (BinaryFn::Less, [Domain::Grid, Domain::Grid]),
    (BinaryFn::Greater, [Domain::Grid, Domain::Grid]),
    (BinaryFn::Equal, [Domain::Grid, Domain::Grid]),
    (BinaryFn::LessOrEqual, [Domain::Grid, Domain::Grid]),
    (BinaryFn::GreaterOrEqual, [Domain::Grid, Domain::Grid]),
];

/// A unary op on `shape`.
fn unary_graph(f: UnaryKind, shape: &[usize]) -> Graph {
    let mut b = GraphBuilder::default();
    let x = b.input(shape);
    let y = b.op(OpKind::Unary(f), vec![x], shape, Epilogue::default());
    b.finish(vec![y])
}

/// ONNX binary function `f` of operands of shapes `sa` and `sb` (`sb` a constant with
/// `const_b`), its operands drawn from `domains`.
fn binary_case(
    (f, domains): (BinaryFn, [Domain; 2]),
    sa: &[usize],
    sb: &[usize],
    const_b: bool,
    seed: u64,
) -> Case {
    let mut b = GraphBuilder::default();
    let a_t = b.input(sa);
    let b_t = operand(&mut b, sb, const_b, seed);
    let y_shape = heimdall_ir::ops::binary::shape(sa, sb).expect("broadcast");
    let y = b.op(
        OpKind::Binary(f),
        vec![a_t, b_t],
        &y_shape,
        Epilogue::default(),
    );
    let mut g = b.finish(vec![y]);
    if const_b {
        // A constant operand takes its domain here (inputs take it in the harness).
        let c = g.tensors[b_t.index()].constant.as_mut().unwrap();
        c.values.iter_mut().for_each(|v| *v = domains[1].apply(*v));
    }
    Case::new(format!("Binary {f:?}"), g, seed)
        .domains(&domains)
        .strict(false)
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(kernel_cases(10)) })]

    #[test]
    fn binary_broadcast(h in 1..8usize, w in 1..8usize, c in 1..10usize, op in 0..TFLITE_BINARY.len(), form in 0..6u8, swap: bool, constant: bool, act in 0..8u8, residual: bool, seed in 0..1000u64) {
        let full = vec![1, h, w, c];
        let other: Vec<usize> = match form {
            0 => full.clone(),
            1 => vec![c],
            2 => vec![1, 1, 1, c],
            3 => vec![1, h, 1, c],
            4 => vec![1, 1, w, 1],
            _ => vec![1],
        };
        let mut b = GraphBuilder::default();
        let a = b.input(&full);
        let o = if constant { b.constant(&other, seed) } else { b.input(&other) };
        let f = TFLITE_BINARY[op];
        let prelu = matches!(f, BinaryFn::Prelu);
        let ep = if prelu { Epilogue::default() } else { epilogue(&mut b, act, residual, &full) };
        let inputs = if swap && !prelu { vec![o, a] } else { vec![a, o] };
        let y = b.op(OpKind::Binary(f), inputs, &full, ep);
        Case::new(format!("Binary {f:?}"), b.finish(vec![y]), seed).prop()?;
    }

    #[test]
    fn unary(h in 1..8usize, w in 1..8usize, c in 1..10usize, kind in 0..ACTIVATIONS.len(), seed in 0..1000u64) {
        let f = ACTIVATIONS[kind];
        Case::new(format!("Unary {f:?}"), unary_graph(f, &[1, h, w, c]), seed).prop()?;
    }

    #[test]
    fn math(rank in 1..5usize, dims in prop::array::uniform4(1..9usize), code in 0..MATH.len(), seed in 0..1000u64) {
        let (f, domain) = MATH[code];
        let g = unary_graph(f, &shape_of(rank, dims));
        Case::new(format!("Unary {f:?}"), g, seed).domains(&[domain]).strict(false).prop()?;
    }

    #[test]
    fn binary(rank in 1..5usize, dims in prop::array::uniform4(1..8usize), code in 0..BINARY.len(), mask_a in 0..8u8, mask_b in 0..8u8, drop_a in 0..3usize, drop_b in 0..3usize, const_b: bool, seed in 0..1000u64) {
        let out = shape_of(rank, dims);
        // At most one operand broadcasts along a given axis, so the output keeps `out`.
        let (sa, sb) = (broadcast_from(&out, mask_a, drop_a), broadcast_from(&out, mask_b & !mask_a, drop_b * usize::from(drop_a == 0)));
        binary_case(BINARY[code], &sa, &sb, const_b, seed).prop()?;
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
        Case::new("Where", b.finish(vec![y]), seed).domains(&[Domain::Integer, Domain::Signed]).strict(false).prop()?;
    }
}

/// The tables on one odd shape (channels not divisible by 4): every activation, every math
/// function, every binary function with the second operand broadcast along the rows.
#[test]
fn every_elementwise_fn_on_one_shape() {
    let shape = [1, 5, 7, 6];
    for f in ACTIVATIONS {
        let case = Case::new(format!("Unary {f:?}"), unary_graph(f, &shape), 11);
        case.check().unwrap();
    }
    for (f, domain) in MATH {
        let case = Case::new(format!("Unary {f:?}"), unary_graph(f, &shape), 12);
        case.domains(&[domain]).strict(false).check().unwrap();
    }
    for entry in BINARY {
        for const_b in [false, true] {
            let case = binary_case(entry, &shape, &[1, 1, 7, 6], const_b, 13);
            case.check().unwrap();
        }
    }
}

/// The comparison can fail: a GPU result that differs from the CPU is caught (guards against a
/// harness that compares nothing), under every measure of `common::Case`.
#[test]
fn harness_detects_a_wrong_kernel() {
    let Some(gpu) = common::gpu() else { return };
    let graph = unary_graph(UnaryKind::Relu, &[1, 4, 4, 5]);
    let inputs = common::inputs_for(&graph, 1);
    let mut gpu_out = common::run_gpu(gpu, &graph, &inputs, Precision::F32);
    let cpu_out = common::run_cpu(&graph, &inputs);
    assert!(heimdall_testkit::rel_l2(&gpu_out[0], &cpu_out[0]) <= 1e-7);
    gpu_out[0][3] += 0.5;
    assert!(heimdall_testkit::rel_l2(&gpu_out[0], &cpu_out[0]) > 1e-5);
    // The harness itself: the right result passes, one wrong value fails, in every precision
    // and measure.
    let cases = [
        Case::new("scaled", graph.clone(), 1),
        Case::new("strict", graph.clone(), 1).strict(false),
        Case::given("relative", graph.clone(), inputs.clone()),
    ];
    for case in cases {
        let prepared = case.prepare().unwrap();
        for p in Precision::ALL {
            let mut ours = prepared.reference(p).to_vec();
            assert_eq!(prepared.judge(&case, p, &ours), Ok(0.0));
            ours[0][3] += 0.5;
            let err = prepared.judge(&case, p, &ours);
            assert!(
                err.is_err(),
                "{} {p:?}: a wrong value passed: {err:?}",
                case.name
            );
            ours[0][3] = f32::NAN;
            assert!(prepared.judge(&case, p, &ours).is_err(), "NaN passed");
        }
    }
}
