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

/// The workspace root: `HEIMDALL_ROOT` if set, else the first folder holding `Cargo.toml` and
/// `assets/` above the running package's `CARGO_MANIFEST_DIR` (cargo sets it for the tests,
/// benchmarks and examples it runs), else above this crate's manifest directory as compiled.
///
/// The run-time variable comes first because cargo reuses a built workspace member across
/// checkouts that share a target directory (worktrees, CI clones): the compiled-in path can
/// name a checkout that has since gone.
pub fn workspace_root() -> PathBuf {
    if let Some(root) = std::env::var_os("HEIMDALL_ROOT") {
        return PathBuf::from(root);
    }
    std::env::var_os("CARGO_MANIFEST_DIR")
        .and_then(|dir| root_above(Path::new(&dir)))
        .or_else(|| root_above(Path::new(env!("CARGO_MANIFEST_DIR"))))
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The nearest folder at or above `dir` with a `Cargo.toml` and an `assets/` folder.
fn root_above(dir: &Path) -> Option<PathBuf> {
    let dir = dir.canonicalize().ok()?;
    dir.ancestors()
        .find(|d| d.join("Cargo.toml").is_file() && d.join("assets").is_dir())
        .map(Path::to_path_buf)
}

/// The workspace's `assets/` folder.
pub fn assets_dir() -> PathBuf {
    workspace_root().join("assets")
}

/// The golden directory of a model: `assets/goldens/<name>`.
pub fn goldens_dir(name: &str) -> PathBuf {
    assets_dir().join("goldens").join(name)
}

#[cfg(test)]
mod tests {
    use super::root_above;
    use std::path::Path;

    #[test]
    fn the_root_is_found_above_a_member_and_not_above_a_stranger() {
        let member = Path::new(env!("CARGO_MANIFEST_DIR"));
        let root = root_above(member).expect("the workspace above this crate");
        assert!(root.join("assets/models").is_dir(), "{}", root.display());
        assert_eq!(
            root_above(&root.join("plugin/heimdall-testkit/src")),
            Some(root)
        );
        let stranger = std::env::temp_dir().join("heimdall-no-root-here");
        std::fs::create_dir_all(&stranger).unwrap();
        assert_eq!(root_above(&stranger), None);
        assert_eq!(root_above(Path::new("/no/such/checkout/plugin/x")), None);
    }
}
