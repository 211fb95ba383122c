//! Where a graph's steps run, and graphs that chain several op families: every ONNX-only op kind
//! is placed on the GPU (and agrees with the CPU backend in mixed storage precisions),
//! face_landmark_with_attention runs with no CPU step and agrees with the CPU backend on every
//! output, and the CPU-step machinery still works on a graph that needs it. The kernels of each
//! op family are tested alone in the `ops_*.rs` files. Needs a GPU adapter (lavapipe in CI);
//! `HEIMDALL_SKIP_GPU=1` skips.

mod common;

use common::{Case, GraphBuilder, gpu, kernel_tolerance, run_cpu, with_trailer};
use heimdall_gpu::{GpuError, GpuModel, GpuOptions, Placement, Precision};
use heimdall_ir::{
    BinaryFn, BlockOrder, CoordMode, Epilogue, Graph, OpKind, PadMode, ReduceKind, ResizeAttrs,
    ResizeMode, ResizeScale, TensorId, UnaryKind,
};
use heimdall_testkit::rel_l2;

/// L2 norm.
fn norm(v: &[f32]) -> f64 {
    v.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt()
}

/// Every step of the graph's GPU compilation is a GPU step.
fn assert_all_gpu(graph: &Graph) {
    let Some(gpu) = gpu() else { return };
    let m = GpuModel::compile(&gpu.ctx, graph, GpuOptions::new(Precision::F32)).expect("compile");
    assert!(
        m.placement().iter().all(|p| *p == Placement::Gpu),
        "a step of {:?} is placed on the CPU",
        graph.ops.iter().map(|o| o.kind.name()).collect::<Vec<_>>()
    );
}

/// Every ONNX-only op kind is placed on the GPU (no CPU step), in a graph chaining them.
#[test]
fn onnx_op_kinds_run_on_the_gpu() {
    let g = onnx_op_kinds_graph();
    assert_all_gpu(&g);
    Case::new("ONNX op kinds", g.clone(), 5)
        .strict(true)
        .check()
        .unwrap();
    check_mixed_storage(g);
}

/// A graph chaining every ONNX-only op kind on a `[1, 4, 6, 5]` input: transpose, erf, max,
/// instance norm, resize, reflect pad, space-to-depth and back, softmax, sum, matmul, greater
/// and where.
fn onnx_op_kinds_graph() -> Graph {
    let mut b = GraphBuilder::default();
    let x = b.input(&[1, 4, 6, 5]);
    let p = elementwise_norm_resize_pad(&mut b, x);
    let out = blocks_reduce_matmul_where(&mut b, p);
    b.finish(vec![out])
}

/// The first half of [`onnx_op_kinds_graph`] on its input `x`: transpose, erf, max with a
/// constant, instance norm, a 2x linear resize and a reflect pad, to `[1, 14, 12, 5]`.
fn elementwise_norm_resize_pad(b: &mut GraphBuilder, x: TensorId) -> TensorId {
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
    b.op(
        OpKind::Pad {
            pads: vec![[0, 0], [1, 1], [2, 2], [0, 0]],
            mode: PadMode::Reflect,
        },
        vec![r],
        &[1, 14, 12, 5],
        Epilogue::default(),
    )
}

/// The second half of [`onnx_op_kinds_graph`] on `p` (`[1, 14, 12, 5]`): space-to-depth and
/// back, softmax, a sum over rows, matmul with a constant, then greater and where, to `[1, 12, 3]`.
fn blocks_reduce_matmul_where(b: &mut GraphBuilder, p: TensorId) -> TensorId {
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
    b.op(
        OpKind::Where,
        vec![cond, mm, zero],
        &[1, 12, 3],
        Epilogue::default(),
    )
}

/// Mixed storage: every other op of `g` in f32 inside an f16 model (each kernel reading and
/// writing different precisions), against the CPU at the f16 bound.
fn check_mixed_storage(g: Graph) {
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

fn model_graph(name: &str) -> Graph {
    let path = heimdall_testkit::model_path(name).unwrap_or_else(|e| panic!("{e}"));
    heimdall::load_model(&path, heimdall::LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// face_landmark_with_attention runs entirely on the GPU (its 11 custom ops included), and every
/// output (through the custom ops: lips, eyes, irises) agrees with the CPU backend: relative L2
/// ≤ 2e-4 in f32 and ≤ 1e-2 in f16 and packed f16, as the whole-model golden tests.
#[test]
fn face_landmark_with_attention_has_no_cpu_step() {
    let name = "face_landmark_with_attention";
    let graph = model_graph(name);
    let placement = heimdall_gpu::plan::placement(&graph);
    let custom = graph
        .ops
        .iter()
        .filter(|o| {
            matches!(
                o.kind,
                OpKind::Landmarks2TransformMatrix(_)
                    | OpKind::TransformTensorBilinear(_)
                    | OpKind::TransformLandmarks(_)
            )
        })
        .count();
    assert_eq!(custom, 11, "custom ops in the model");
    assert!(
        placement.iter().all(|&p| p == Placement::Gpu),
        "CPU steps remain: {:?}",
        (0..graph.ops.len())
            .filter(|&i| placement[i] == Placement::Cpu)
            .map(|i| graph.ops[i].kind.name())
            .collect::<Vec<_>>()
    );
    let Some(gpu) = common::gpu() else { return };
    // The first golden case's input (a real face: meaningful crops).
    let mut cases: Vec<_> = std::fs::read_dir(heimdall_testkit::goldens_dir(name))
        .expect("goldens")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    let input = heimdall::npy::read_npy(cases[0].join("input_0.npy"))
        .expect("input")
        .data;
    let reference = run_cpu(&graph, std::slice::from_ref(&input));
    for p in Precision::ALL {
        let model = GpuModel::compile(&gpu.ctx, &graph, GpuOptions::new(p)).expect("compile");
        assert!(model.placement().iter().all(|&s| s == Placement::Gpu));
        let out = model.run(&[&input]).expect("run");
        let tol = if p == Precision::F32 { 2e-4 } else { 1e-2 };
        for (i, (o, r)) in out.iter().zip(&reference).enumerate() {
            let err = rel_l2(o, r);
            println!("{name} {p:?}: output {i} vs CPU backend: rel-L2 {err:.2e}");
            assert!(
                err <= tol,
                "{name} {p:?}: output {i} vs CPU: rel-L2 {err:.3e}"
            );
        }
    }
    gpu.assert_no_errors();
}

/// The CPU-step machinery (no supported model needs it any more): a DEQUANTIZE of a computed
/// tensor has no GPU kernel, so it runs as a CPU step between two GPU ranges; `encode` refuses a
/// range holding it, the non-blocking API runs it, and `run` and `run_ranges` agree with the CPU
/// backend.
#[test]
fn cpu_steps_still_run_between_gpu_ranges() {
    let mut b = GraphBuilder::default();
    let shape = [1, 5, 3, 6];
    let x = b.input(&shape);
    let a = b.op(
        OpKind::Unary(UnaryKind::Relu),
        vec![x],
        &shape,
        Epilogue::default(),
    );
    let d = b.op(OpKind::Dequantize, vec![a], &shape, Epilogue::default());
    let k = b.constant(&[6], 3);
    let y = b.op(
        OpKind::Binary(BinaryFn::Add),
        vec![d, k],
        &shape,
        Epilogue::default(),
    );
    let graph = b.finish(vec![y]);
    let placement = heimdall_gpu::plan::placement(&graph);
    assert_eq!(
        placement,
        [Placement::Gpu, Placement::Cpu, Placement::Gpu],
        "placement"
    );
    let Some(gpu) = common::gpu() else { return };
    let input = common::data(9, 90);
    let reference = run_cpu(&graph, std::slice::from_ref(&input));
    let model = GpuModel::compile(&gpu.ctx, &graph, GpuOptions::default()).expect("compile");
    let mut encoder = gpu.ctx.device.create_command_encoder(&Default::default());
    assert!(matches!(
        model.encode(&mut encoder, 0..2),
        Err(GpuError::Range { .. })
    ));
    assert!(model.cpu_steps().run(0).is_err(), "step 0 is a GPU step");
    assert!(!model.cpu_steps().is_ready(1));
    // Step by step with the non-blocking API: GPU range, download, CPU step, GPU range.
    model.set_input(0, &input).unwrap();
    let mut encoder = gpu.ctx.device.create_command_encoder(&Default::default());
    model.encode(&mut encoder, 0..1).unwrap();
    model.cpu_steps().encode_inputs(1, &mut encoder).unwrap();
    gpu.ctx.queue.submit([encoder.finish()]);
    model.cpu_steps().request_inputs(1).unwrap();
    while !model.cpu_steps().run(1).unwrap() {
        gpu.ctx.device.poll(wgpu::PollType::Poll).unwrap();
    }
    let mut encoder = gpu.ctx.device.create_command_encoder(&Default::default());
    model.encode(&mut encoder, 2..3).unwrap();
    model.encode_readback(&mut encoder).unwrap();
    gpu.ctx.queue.submit([encoder.finish()]);
    model.request_readback().unwrap();
    let out = loop {
        if let Some(out) = model.take_outputs().unwrap() {
            break out;
        }
        gpu.ctx.device.poll(wgpu::PollType::Poll).unwrap();
    };
    let whole = model.run(&[&input]).unwrap();
    assert_eq!(out, whole, "step-by-step differs from run()");
    let ranges = model.run_ranges(&[&input], &[0..1, 1..2, 2..3]).unwrap();
    assert_eq!(ranges, whole, "run_ranges differs from run()");
    let err = rel_l2(&whole[0], &reference[0]);
    assert!(
        err <= 1e-6,
        "CPU-step graph vs CPU backend: rel-L2 {err:.3e}"
    );
    gpu.assert_no_errors();
}
