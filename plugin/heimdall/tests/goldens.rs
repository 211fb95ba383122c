//! Every MediaPipe model on the CPU backend against the TFLite interpreter's outputs
//! (`scripts/make_goldens.py`), on a photograph and a synthetic input: relative L2 error
//! `||ours - ref|| / ||ref||` ≤ 1e-4 per output.
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
            println!("{name}/{}: output {i}: rel-L2 {err:.2e}", case.name);
            assert!(err <= TOLERANCE, "{name}/{}: output {i} rel-L2 {err:.3e} > {TOLERANCE:e}", case.name);
            compared += 1;
        }
    }
    let expected_min = if name == "face_landmark_with_attention" { 2 * cases.len() } else { graph.outputs.len() * cases.len() };
    assert!(compared >= expected_min, "{name}: compared {compared} outputs, expected at least {expected_min}");
}

macro_rules! golden_tests {
    ($($name:ident),* $(,)?) => { $( #[test] fn $name() { check(stringify!($name)); } )* };
}

golden_tests!(
    face_detection_short_range,
    face_detection_full_range_sparse,
    face_landmark,
    face_landmark_with_attention,
    iris_landmark,
    palm_detection_lite,
    palm_detection_full,
    hand_landmark_lite,
    hand_landmark_full,
    hand_recrop,
    pose_detection,
    pose_landmark_full,
    selfie_segmentation,
    selfie_segmentation_landscape,
);
