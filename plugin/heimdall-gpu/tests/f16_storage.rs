//! Why pose_landmark_full needs the accuracy guard (`heimdall_gpu::guard`, which keeps part of it
//! in f32) to meet the f16 bound of the golden suite, checked rather than asserted in prose.
//!
//! An independent model of f16 storage: the CPU backend (f32 arithmetic, its own kernels) run
//! one op at a time, every stored activation rounded to the nearest f16 as the GPU backend stores
//! it in f16 mode (the graph input too; graph outputs, the inputs of the ops producing them and
//! the outputs of average pools and means stay f32). MediaPipe ships this model's weights in f16
//! already, so they need no rounding.
//!
//! The test shows, per golden case and output:
//! - the emulated f16 storage itself misses the 1e-2 bound on the segmentation logits of the
//!   synthetic input (no f16-storage implementation can meet it: the network amplifies the
//!   rounding of its first layers about 200 times there), and
//! - the GPU's f16 result is as far from the goldens as that emulation, within a factor of 2
//!   (plus 2e-3 for outputs both get right): what the kernels add is of the order of f16
//!   storage itself, not a defect. The two differ in summation order, which the same
//!   amplification turns into differences of the same order as the error itself.

mod common;

use half::f16;
use heimdall::npy::read_npy;
use heimdall::{LoadOptions, load_model};
use heimdall_cpu::{CpuModel, CpuOptions};
use heimdall_gpu::{GpuModel, GpuOptions, Precision};
use heimdall_ir::{Graph, OpKind, ReduceKind};
use heimdall_testkit::{goldens_dir, model_path, rel_l2};

fn round_f16(v: &[f32]) -> Vec<f32> {
    v.iter().map(|&x| f16::from_f32(x).to_f32()).collect()
}

/// The CPU backend with f16 storage emulated between ops (see the module comment). Every
/// activation is made a graph output of the model it compiles, so that the CPU fuses no ops
/// (`heimdall_cpu::cpu_ops`: a tensor inside a fused pair, such as a large 1x1 expansion's output
/// read by a depthwise convolution, has no storage to round) and each is stored, as on the GPU.
fn cpu_with_f16_storage(graph: &Graph, input: &[f32]) -> Vec<Vec<f32>> {
    let mut unfused = graph.clone();
    for op in &graph.ops {
        for &o in &op.outputs {
            if !unfused.outputs.contains(&o) {
                unfused.outputs.push(o);
            }
        }
    }
    let mut m = CpuModel::compile(&unfused, CpuOptions::default()).expect("cpu compile");
    m.set_input(0, &round_f16(input)).expect("input");
    let mut keep = vec![false; graph.tensors.len()];
    for op in &graph.ops {
        if matches!(
            op.kind,
            OpKind::AvgPool2d(_)
                | OpKind::Reduce {
                    kind: ReduceKind::Mean,
                    ..
                }
        ) {
            op.outputs.iter().for_each(|o| keep[o.index()] = true);
        }
        if op.outputs.iter().any(|o| graph.outputs.contains(o)) {
            op.reads().for_each(|t| keep[t.index()] = true);
        }
    }
    graph.outputs.iter().for_each(|o| keep[o.index()] = true);
    for (k, op) in graph.ops.iter().enumerate() {
        m.run_range(k..k + 1).expect("cpu op");
        for &o in &op.outputs {
            if keep[o.index()] {
                continue;
            }
            let rounded = round_f16(m.tensor(o).expect("activation"));
            m.set_tensor(o, &rounded).expect("activation");
        }
    }
    (0..graph.outputs.len())
        .map(|i| m.output(i).expect("output").to_vec())
        .collect()
}

#[test]
fn pose_landmark_full_f16_error_is_that_of_f16_storage() {
    let Some(gpu) = common::gpu() else { return };
    let name = "pose_landmark_full";
    let graph = load_model(
        model_path(name).unwrap_or_else(|e| panic!("{e}")),
        LoadOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let model = GpuModel::compile(&gpu.ctx, &graph, GpuOptions::new(Precision::F16))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut worst_emulated = 0.0f64;
    for case in ["astronaut", "synthetic"] {
        let dir = goldens_dir(name).join(case);
        let input = read_npy(dir.join("input_0.npy")).expect("input").data;
        let emulated = cpu_with_f16_storage(&graph, &input);
        let ours = model.run(&[&input]).unwrap_or_else(|e| panic!("{e}"));
        for (i, (e, g)) in emulated.iter().zip(&ours).enumerate() {
            let golden = read_npy(dir.join(format!("output_{i}.npy")))
                .expect("golden")
                .data;
            let (err_emulated, err_gpu) = (rel_l2(e, &golden), rel_l2(g, &golden));
            println!(
                "{case}: output {i}: f16 storage emulated on the CPU {err_emulated:.2e}, GPU f16 {err_gpu:.2e}"
            );
            assert!(
                err_gpu <= 2.0 * err_emulated + 2e-3,
                "{case} output {i}: GPU f16 {err_gpu:.3e} vs emulated f16 storage {err_emulated:.3e}"
            );
            if i == 2 {
                worst_emulated = worst_emulated.max(err_emulated);
            }
        }
    }
    // The reason for the guard's f32 ops: f16 storage alone, on the CPU, misses the bound.
    assert!(
        worst_emulated > 1e-2,
        "emulated f16 storage now meets 1e-2 on the segmentation ({worst_emulated:.3e}): \
         the guard should leave pose_landmark_full in f16 (docs/gpu.md)"
    );
    gpu.assert_no_errors();
}
