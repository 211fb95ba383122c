//! Every MediaPipe model on the CPU backend against the TFLite interpreter's outputs
//! (`scripts/make_goldens.py`), on a photograph and a synthetic input: relative L2 error
//! `||ours - ref|| / ||ref||` ≤ 1e-4 per output.
//!
//! Where the two reference engines themselves (TFLite's builtin kernels and XNNPACK) disagree by
//! more than that on an output, `scripts/xnnpack_crosscheck.py` stores XNNPACK's output beside the
//! golden (`xnnpack_output_<i>.npy`) and that output is allowed 1.5x the measured disagreement:
//! only pose_landmark_full's segmentation logits (output 2, values -1710..268; the engines differ
//! by 1.2e-4 on the synthetic input).
//!
//! face_landmark_with_attention cannot run in the reference interpreter (custom ops): its goldens
//! come from a copy of the model cut before the custom ops and cover the outputs that do not
//! pass through them (the mesh and the face flag).

mod common;

use heimdall::rel_l2;

const TOLERANCE: f64 = 1e-4;

fn check(name: &str) {
    let graph = common::graph(name, true);
    let cases = common::cases(name, graph.outputs.len());
    let mut compared = 0;
    for case in &cases {
        let ours = common::run(&graph, &case.inputs, 2);
        for (i, reference) in case.outputs.iter().enumerate() {
            let Some(reference) = reference else { continue };
            let err = rel_l2(&ours[i], reference);
            let crosscheck = heimdall::assets::goldens_dir(name)
                .join(&case.name)
                .join(format!("xnnpack_output_{i}.npy"));
            let tolerance = match heimdall::npy::read_npy(&crosscheck) {
                Ok(x) => TOLERANCE.max(1.5 * rel_l2(&x.data, reference)),
                Err(_) => TOLERANCE,
            };
            println!(
                "{name}/{}: output {i}: rel-L2 {err:.2e} (tolerance {tolerance:.2e})",
                case.name
            );
            assert!(
                err <= tolerance,
                "{name}/{}: output {i} rel-L2 {err:.3e} > {tolerance:.2e}",
                case.name
            );
            compared += 1;
        }
    }
    let expected_min = if name == "face_landmark_with_attention" {
        2 * cases.len()
    } else {
        graph.outputs.len() * cases.len()
    };
    assert!(
        compared >= expected_min,
        "{name}: compared {compared} outputs, expected at least {expected_min}"
    );
}

heimdall::mediapipe_model_tests!(check);
