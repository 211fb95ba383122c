//! `heimdall inspect` op counts per model agree with MODELS.md (total ops, and ops without the
//! weight-decoding DEQUANTIZE/DENSIFY: the "compute ops" column), and the CLI's error paths.

use std::process::Command;

fn heimdall(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_heimdall"))
        .args(args)
        .output()
        .expect("run heimdall")
}

fn inspect(name: &str) -> serde_json::Value {
    let path = heimdall_testkit::model_path(name).unwrap_or_else(|e| panic!("{e}"));
    let out = heimdall(&["inspect", path.to_str().unwrap(), "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

/// (model, total ops, compute ops) as listed in ../shared/MODELS.md. Where MODELS.md gives no
/// compute count (models without fp16 weights) the two are equal.
const MODELS_MD: [(&str, u64, u64); 14] = [
    ("face_detection_short_range", 164, 90),
    ("face_detection_full_range_sparse", 388, 160),
    ("face_landmark", 210, 97),
    ("face_landmark_with_attention", 712, 341),
    ("iris_landmark", 169, 169),
    ("palm_detection_lite", 232, 119),
    ("palm_detection_full", 272, 139),
    ("hand_landmark_lite", 167, 65),
    ("hand_landmark_full", 165, 63),
    ("hand_recrop", 63, 63),
    ("pose_detection", 291, 109),
    ("pose_landmark_full", 332, 140),
    ("selfie_segmentation", 246, 136),
    ("selfie_segmentation_landscape", 246, 136),
];

fn check(name: &str) {
    let (_, total, compute) = MODELS_MD
        .iter()
        .find(|m| m.0 == name)
        .copied()
        .expect("listed");
    let doc = inspect(name);
    assert_eq!(
        doc["file_ops"]["total"].as_u64(),
        Some(total),
        "{name}: total ops"
    );
    assert_eq!(
        doc["file_ops"]["without_weight_decoding"].as_u64(),
        Some(compute),
        "{name}: compute ops"
    );
    // After the passes no weight decoding remains and every op lists a backend.
    let ops = doc["ops"].as_array().expect("ops");
    assert!(
        ops.iter()
            .all(|o| o["op"] != "DEQUANTIZE" && o["op"] != "DENSIFY"),
        "{name}: weights left unfolded"
    );
    assert!(
        ops.iter()
            .all(|o| !o["backends"].as_array().unwrap().is_empty())
    );
}

heimdall_testkit::mediapipe_model_tests!(check);

#[test]
fn run_rejects_a_wrong_input_shape_naming_both_shapes() {
    let dir = std::env::temp_dir().join(format!("heimdall-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("wrong.npy");
    heimdall::npy::write_npy(&input, &[1, 64, 64, 3], &vec![0.0; 64 * 64 * 3]).unwrap();
    let model = heimdall_testkit::model_path("face_detection_short_range").unwrap();
    let out = heimdall(&[
        "run",
        model.to_str().unwrap(),
        "--input",
        input.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("[1, 128, 128, 3]") && err.contains("[1, 64, 64, 3]"),
        "{err}"
    );
}

#[test]
fn run_writes_outputs_matching_the_golden() {
    let dir = std::env::temp_dir().join(format!("heimdall-cli-run-{}", std::process::id()));
    let model = heimdall_testkit::model_path("face_detection_short_range").unwrap();
    let golden = heimdall_testkit::goldens_dir("face_detection_short_range").join("astronaut");
    let out = heimdall(&[
        "run",
        model.to_str().unwrap(),
        "--input",
        golden.join("input_0.npy").to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for i in 0..2 {
        let ours = heimdall::npy::read_npy(dir.join(format!("output_{i}.npy"))).unwrap();
        let reference = heimdall::npy::read_npy(golden.join(format!("output_{i}.npy"))).unwrap();
        assert_eq!(ours.shape, reference.shape);
        assert!(heimdall_testkit::rel_l2(&ours.data, &reference.data) <= 1e-4);
    }
}

#[test]
fn corrupt_model_is_a_clear_error() {
    let dir = std::env::temp_dir().join(format!("heimdall-cli-corrupt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.tflite");
    let original = std::fs::read(heimdall_testkit::model_path("face_landmark").unwrap()).unwrap();
    std::fs::write(&bad, &original[..original.len() / 3]).unwrap();
    let out = heimdall(&["inspect", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("error: ") && err.contains("bad.tflite"),
        "{err}"
    );
}

#[test]
fn run_on_the_gpu_backend_matches_the_golden() {
    if heimdall_testkit::skip_gpu("inspect::run_on_the_gpu_backend_matches_the_golden") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("heimdall-cli-gpu-{}", std::process::id()));
    let model = heimdall_testkit::model_path("face_detection_short_range").unwrap();
    let golden = heimdall_testkit::goldens_dir("face_detection_short_range").join("astronaut");
    let out = heimdall(&[
        "run",
        model.to_str().unwrap(),
        "--input",
        golden.join("input_0.npy").to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
        "--backend",
        "gpu",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for i in 0..2 {
        let ours = heimdall::npy::read_npy(dir.join(format!("output_{i}.npy"))).unwrap();
        let reference = heimdall::npy::read_npy(golden.join(format!("output_{i}.npy"))).unwrap();
        assert!(heimdall_testkit::rel_l2(&ours.data, &reference.data) <= 2e-4);
    }
}
