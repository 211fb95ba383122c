//! Where the bundled and fetched models, images and goldens are.
//!
//! Five models ship in `assets/models/`; the other MediaPipe models are fetched from the PyPI
//! wheel into `.cache/models/` by `scripts/fetch_models.py` (checked against
//! `assets/models/SHA256SUMS`). [`model_path`] runs that script when a model is missing, and
//! fails loudly when it cannot fetch.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The 14 MediaPipe 0.10.21 models of MODELS.md.
pub const MEDIAPIPE_MODELS: [&str; 14] = [
    "face_detection_short_range",
    "face_detection_full_range_sparse",
    "face_landmark",
    "face_landmark_with_attention",
    "iris_landmark",
    "palm_detection_lite",
    "palm_detection_full",
    "hand_landmark_lite",
    "hand_landmark_full",
    "hand_recrop",
    "pose_detection",
    "pose_landmark_full",
    "selfie_segmentation",
    "selfie_segmentation_landscape",
];

/// The workspace root (found from this crate's manifest directory, or `HEIMDALL_ROOT`).
pub fn workspace_root() -> PathBuf {
    if let Ok(root) = std::env::var("HEIMDALL_ROOT") {
        return PathBuf::from(root);
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap_or_else(|_| PathBuf::from("."))
}

/// The path of a MediaPipe model by name, fetching it (with `scripts/fetch_models.py`) into
/// `.cache/models/` if it is neither bundled nor cached yet.
pub fn model_path(name: &str) -> Result<PathBuf, String> {
    let root = workspace_root();
    let bundled = root.join("assets/models").join(format!("{name}.tflite"));
    if bundled.exists() {
        return Ok(bundled);
    }
    let cached = root.join(".cache/models").join(format!("{name}.tflite"));
    if cached.exists() {
        return Ok(cached);
    }
    let status = Command::new("python3")
        .arg(root.join("scripts/fetch_models.py"))
        .args(["--only", name])
        .current_dir(&root)
        .status()
        .map_err(|e| format!("cannot run scripts/fetch_models.py to fetch {name}: {e}"))?;
    if !status.success() || !cached.exists() {
        return Err(format!(
            "scripts/fetch_models.py could not fetch {name} ({status})"
        ));
    }
    Ok(cached)
}

/// The ONNX models of MODELS.md: `multistyle26` is bundled, `PP-OCRv6_det_small` is fetched.
pub const ONNX_MODELS: [&str; 2] = ["multistyle26", "PP-OCRv6_det_small"];

/// The path of an ONNX model by name (`assets/models/<name>.onnx` or `.cache/models/`),
/// fetching it with `scripts/fetch_onnx_models.py` (checked against
/// `assets/models/ONNX_SHA256SUMS`) when missing; fails loudly when it cannot.
pub fn onnx_model_path(name: &str) -> Result<PathBuf, String> {
    let root = workspace_root();
    let bundled = root.join("assets/models").join(format!("{name}.onnx"));
    if bundled.exists() {
        return Ok(bundled);
    }
    let cached = root.join(".cache/models").join(format!("{name}.onnx"));
    if cached.exists() {
        return Ok(cached);
    }
    let status = Command::new("python3")
        .arg(root.join("scripts/fetch_onnx_models.py"))
        .args(["--only", name])
        .current_dir(&root)
        .status()
        .map_err(|e| format!("cannot run scripts/fetch_onnx_models.py to fetch {name}: {e}"))?;
    if !status.success() || !cached.exists() {
        return Err(format!(
            "scripts/fetch_onnx_models.py could not fetch {name} ({status})"
        ));
    }
    Ok(cached)
}

/// The models taken from npm packages (`scripts/fetch_npm_models.py`): MediaPipe's SSD
/// MobileNetV2 OIDv4 object detector from `@mediapipe/objectron`.
pub const NPM_MODELS: [&str; 1] = ["object_detection_ssd_mobilenetv2_oidv4_fp16"];

/// The path of an npm-packaged model by name (`.cache/models/<name>.tflite`), fetching it with
/// `scripts/fetch_npm_models.py` (pinned version and SHA-256) when missing; fails loudly when it
/// cannot.
pub fn npm_model_path(name: &str) -> Result<PathBuf, String> {
    let root = workspace_root();
    let cached = root.join(".cache/models").join(format!("{name}.tflite"));
    if cached.exists() {
        return Ok(cached);
    }
    let status = Command::new("python3")
        .arg(root.join("scripts/fetch_npm_models.py"))
        .args(["--only", name])
        .current_dir(&root)
        .status()
        .map_err(|e| format!("cannot run scripts/fetch_npm_models.py to fetch {name}: {e}"))?;
    if !status.success() || !cached.exists() {
        return Err(format!(
            "scripts/fetch_npm_models.py could not fetch {name} ({status})"
        ));
    }
    Ok(cached)
}

/// The golden directory of a model: `assets/goldens/<name>`.
pub fn goldens_dir(name: &str) -> PathBuf {
    workspace_root().join("assets/goldens").join(name)
}

/// Expands to one `#[test]` per MediaPipe model, each calling `$check("<model name>")`.
#[macro_export]
macro_rules! mediapipe_model_tests {
    ($check:path) => {
        $crate::mediapipe_model_tests!(@each $check;
            face_detection_short_range, face_detection_full_range_sparse, face_landmark,
            face_landmark_with_attention, iris_landmark, palm_detection_lite, palm_detection_full,
            hand_landmark_lite, hand_landmark_full, hand_recrop, pose_detection, pose_landmark_full,
            selfie_segmentation, selfie_segmentation_landscape);
    };
    (@each $check:path; $($name:ident),*) => {
        $( #[test] fn $name() { $check(stringify!($name)); } )*
    };
}
