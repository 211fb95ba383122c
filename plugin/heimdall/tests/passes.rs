//! The load-time passes do not change any model's outputs: every model runs with passes on and
//! off on the same inputs (the golden photo input and a random one), and every output agrees.
//!
//! Folding weights and pads and dropping reshapes is exact; fusing an activation or a residual
//! add into the producer's epilogue computes the same operations in the same order, so the
//! tolerance is tight (rel-L2 ≤ 1e-6).

mod common;

use heimdall_testkit::rel_l2;

fn check(name: &str) {
    let on = common::graph(name, true);
    let off = common::graph(name, false);
    assert!(
        on.ops.len() < off.ops.len(),
        "{name}: the passes removed nothing ({} ops)",
        off.ops.len()
    );
    let golden = vec![common::golden_input(name)];
    for inputs in [golden, common::random_inputs(&on, 7)] {
        let a = common::run(&on, &inputs, 2);
        let b = common::run(&off, &inputs, 2);
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            let err = rel_l2(x, y);
            println!(
                "{name}: output {i}: passes on vs off rel-L2 {err:.2e} ({} vs {} ops)",
                on.ops.len(),
                off.ops.len()
            );
            assert!(
                err <= 1e-6,
                "{name}: output {i} differs with passes on/off: rel-L2 {err:.3e}"
            );
        }
    }
}

heimdall_testkit::mediapipe_model_tests!(check);

/// The ONNX models, whose passes also re-associate: `fuse_gelu` computes `erf(x * (1/sqrt 2))`
/// where the file divides by `sqrt 2`, and `fold_norm_affine` scales by `inv_std * g` where the
/// file multiplies by `g` after normalising (a rounding of about 1e-7 per value). The outputs
/// must still agree to 1e-5 rel-L2, 100x below the f32 bound the goldens hold them to (1e-3).
fn check_onnx(id: &str, fused: fn(&heimdall_ir::Op) -> bool) {
    let model = heimdall_testkit::goldens::golden_model(id);
    let path = heimdall_testkit::onnx_model_path(model.file).unwrap_or_else(|e| panic!("{e}"));
    let case = heimdall_testkit::goldens::cases(model.file).swap_remove(0);
    let load = |passes| {
        let input_shapes = model
            .dynamic_input
            .map(|name| vec![(name.to_string(), case.inputs[0].shape.clone())])
            .unwrap_or_default();
        heimdall::load(
            &path,
            heimdall::LoadOptions {
                passes,
                input_shapes,
            },
        )
        .unwrap_or_else(|e| panic!("{e}"))
    };
    let (on, off) = (load(true), load(false));
    assert!(
        on.graph.ops.iter().any(fused),
        "{id}: the pass under test changed nothing"
    );
    let inputs: Vec<Vec<f32>> = case
        .inputs
        .iter()
        .zip(&on.io.inputs)
        .map(|(t, io)| io.to_ir(&t.data))
        .collect();
    let (a, b) = (
        common::run(&on.graph, &inputs, 2),
        common::run(&off.graph, &inputs, 2),
    );
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        let err = rel_l2(x, y);
        println!("{id}: output {i}: passes on vs off rel-L2 {err:.2e}");
        assert!(err <= 1e-5, "{id}: output {i}: rel-L2 {err:.3e}");
    }
}

#[test]
fn pp_ocrv6_det_small_gelus() {
    check_onnx("pp_ocrv6_det_small", |op| op.kind.name() == "GELU");
}

#[test]
fn multistyle26_instance_norm_scales() {
    check_onnx("multistyle26", |op| {
        op.kind.name() == "INSTANCE_NORM" && op.inputs.len() > 1
    });
}
