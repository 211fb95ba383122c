//! Inputs and outputs cross to and from the GPU in their dense NHWC `f32` form
//! (`heimdall_gpu::io_pack`: the packing and unpacking kernels), in every storage precision and
//! for every channel count, including the layouts that skip the kernels. Each value is checked
//! against a hand-computed expectation at its own position, so a misplaced value fails.

mod common;

use common::{GraphBuilder, data, gpu, with_trailer};
use heimdall_gpu::{GpuModel, GpuOptions, Precision};
use heimdall_ir::{Epilogue, OpKind, UnaryKind};

/// `relu(x) + relu(z)` on inputs of `shape`: two inputs, two ops, two outputs (`relu(x)` and
/// the sum), so that inputs are read and outputs written by kernels in the model's precision.
fn graph(shape: &[usize]) -> heimdall_ir::Graph {
    let mut b = GraphBuilder::default();
    let x = b.input(shape);
    let z = b.input(shape);
    let rx = b.op(
        OpKind::Unary(UnaryKind::Relu),
        vec![x],
        shape,
        Epilogue::default(),
    );
    let rz = b.op(
        OpKind::Unary(UnaryKind::Relu),
        vec![z],
        shape,
        Epilogue::default(),
    );
    let sum = b.op(
        OpKind::Binary(heimdall_ir::BinaryFn::Add),
        vec![rx, rz],
        shape,
        Epilogue::default(),
    );
    with_trailer(b.finish(vec![rx, sum]))
}

/// Largest error a value of magnitude `v` may have after passing through storage of `p` a few
/// times (f16: a few half-ulps; f32: none, the ops are exact).
fn allowed(p: Precision, v: f32) -> f32 {
    match p {
        Precision::F32 => 0.0,
        _ => 4.0 * v.abs() * f32::EPSILON.max(1.0 / 2048.0),
    }
}

#[test]
fn every_value_arrives_where_it_belongs_in_every_precision_and_channel_count() {
    let Some(gpu) = gpu() else { return };
    let shapes: &[&[usize]] = &[
        &[1, 3, 5, 1],
        &[1, 3, 5, 2],
        &[1, 3, 5, 3],
        &[1, 3, 5, 4], // f32: dense already, no kernel
        &[1, 3, 5, 5],
        &[1, 2, 3, 8],
        &[1, 2, 3, 13],
        &[1, 3, 4, 160], // an NCHW image as the ONNX importer hands it over: C is the width
        &[1, 1, 1, 6],
        &[1, 1, 1, 8], // f32: dense already
        &[1, 20],
    ];
    for shape in shapes {
        let g = graph(shape);
        let n: usize = shape.iter().product();
        for p in gpu.precisions() {
            let m = GpuModel::compile(&gpu.ctx, &g, GpuOptions::new(p)).expect("compile");
            // Two runs with different inputs: the second must not see the first's values.
            for seed in [1u64, 2] {
                let x = data(seed, n);
                let z = data(seed + 100, n);
                let out = m.run(&[&x, &z]).expect("run");
                assert_eq!(out.len(), 2);
                for i in 0..n {
                    let (rx, rz) = (x[i].max(0.0), z[i].max(0.0));
                    for (k, want) in [(0, rx), (1, rx + rz)] {
                        let got = out[k][i];
                        assert!(
                            (got - want).abs() <= allowed(p, want) + 1e-7,
                            "{shape:?} {p:?} run {seed} output {k} value {i}: {got} vs {want}"
                        );
                    }
                }
            }
        }
    }
    gpu.assert_no_errors();
}

#[test]
fn an_input_set_between_runs_in_chunks_is_packed_before_the_first_chunk_reads_it() {
    let Some(gpu) = gpu() else { return };
    let shape = [1, 4, 6, 3];
    let g = graph(&shape);
    let n: usize = shape.iter().product();
    let m = GpuModel::compile(&gpu.ctx, &g, GpuOptions::new(Precision::F32)).expect("compile");
    let whole = {
        let (x, z) = (data(7, n), data(8, n));
        m.run(&[&x, &z]).expect("whole run")
    };
    // Other inputs first, then the same inputs again, run one step per range.
    let (a, b) = (data(9, n), data(10, n));
    m.run(&[&a, &b]).expect("other run");
    let (x, z) = (data(7, n), data(8, n));
    m.set_input(0, &x).expect("input 0");
    m.set_input(1, &z).expect("input 1");
    let ranges: Vec<_> = (0..m.num_steps()).map(|i| i..i + 1).collect();
    let chunked = m.run_ranges_preset(&ranges).expect("chunked run");
    assert_eq!(chunked, whole);
    gpu.assert_no_errors();
}

#[test]
fn a_timed_run_returns_the_outputs_of_a_plain_run_and_its_parts_add_up() {
    let Some(gpu) = gpu() else { return };
    let shape = [1, 5, 7, 3];
    let g = graph(&shape);
    let n: usize = shape.iter().product();
    let m = GpuModel::compile(&gpu.ctx, &g, GpuOptions::new(Precision::F16)).expect("compile");
    let (x, z) = (data(3, n), data(4, n));
    let plain = m.run(&[&x, &z]).expect("run");
    let start = std::time::Instant::now();
    let (timed, parts) = m.run_timed(&[&x, &z]).expect("timed run");
    let wall = start.elapsed();
    assert_eq!(timed, plain);
    assert!(parts.total() <= wall, "{parts:?} vs {wall:?}");
    assert!(parts.wait > std::time::Duration::ZERO, "{parts:?}");
}

#[test]
fn a_run_with_a_wrong_input_length_is_a_typed_error_and_the_next_run_is_right() {
    let Some(gpu) = gpu() else { return };
    let shape = [1, 3, 4, 5];
    let g = graph(&shape);
    let n: usize = shape.iter().product();
    let m = GpuModel::compile(&gpu.ctx, &g, GpuOptions::new(Precision::F32)).expect("compile");
    let (x, z) = (data(11, n), data(12, n));
    let want = m.run(&[&x, &z]).expect("run");
    // Input 1 too short: refused, naming it, before input 0 is written anywhere.
    let other = data(13, n);
    match m.run(&[&other, &z[..n - 1]]) {
        Err(heimdall_gpu::GpuError::Input {
            index,
            expected,
            got,
        }) => {
            assert_eq!((index, expected, got), (1, n, n - 1));
        }
        r => panic!("expected an input error, got {r:?}"),
    }
    assert_eq!(m.run(&[&x, &z]).expect("run after the refusal"), want);
    gpu.assert_no_errors();
}
