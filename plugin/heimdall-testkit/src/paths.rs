//! Where the workspace's assets, goldens and models are, for tests, benchmarks and examples.
//!
//! Five MediaPipe models and `multistyle26.onnx` ship in `assets/models/`; the others are fetched
//! on demand into the model cache (`.cache/models/`, or `$HEIMDALL_CACHE_DIR/models/`) by
//! [`crate::fetch`]. The apps resolve their assets at run time themselves (see
//! `examples/support/assets.rs`); these paths are the source tree's, found from this crate's
//! manifest directory.

use std::path::{Path, PathBuf};

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

/// The five MediaPipe models bundled in `assets/models/` (the rest of [`MEDIAPIPE_MODELS`] are
/// fetched): tests that must run without fetching use these.
pub const BUNDLED_MEDIAPIPE_MODELS: [&str; 5] = [
    "face_detection_short_range",
    "face_landmark",
    "selfie_segmentation",
    "palm_detection_lite",
    "hand_landmark_lite",
];

/// The ONNX models of MODELS.md: `multistyle26` is bundled, `PP-OCRv6_det_small` is fetched.
pub const ONNX_MODELS: [&str; 2] = ["multistyle26", "PP-OCRv6_det_small"];

/// The workspace root: `HEIMDALL_ROOT` if set, else found from this crate's manifest directory.
pub fn workspace_root() -> PathBuf {
    if let Some(root) = std::env::var_os("HEIMDALL_ROOT") {
        return PathBuf::from(root);
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap_or_else(|_| PathBuf::from("."))
}

/// The workspace's `assets/` folder.
pub fn assets_dir() -> PathBuf {
    workspace_root().join("assets")
}

/// The golden directory of a model: `assets/goldens/<name>`.
pub fn goldens_dir(name: &str) -> PathBuf {
    assets_dir().join("goldens").join(name)
}
