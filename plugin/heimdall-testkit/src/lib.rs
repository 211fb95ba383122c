//! Test support of the heimdall workspace, for tests, benchmarks and examples; no library
//! crate depends on it (it is a dev-dependency only, and depends on no engine crate, so every
//! engine crate's tests can use it without a dependency cycle).
//!
//! - [`goldens`]: the golden suite, written once and run per runtime (CPU, GPU f32, GPU f16,
//!   GPU packed f16, the f16 ones through the accuracy guard) with one bound per runtime and
//!   model format, no per-model exception; [`golden_suite!`] expands it.
//! - [`metrics`]: `rel_l2` and its floored and scaled variants, the only copies in the
//!   workspace.
//! - [`paths`] and [`fetch`]: the workspace's assets and goldens, and the models, fetched on
//!   demand (serialised across threads and processes).
//! - [`npy`]: the goldens' tensors.
//! - [`heap`]: the C heap's counters (soak runs, memory tests).
//! - [`mod@skip`]: tests that cannot check what they claim here say so, and CI counts them.
//! - [`rng`]: the deterministic pseudo-random numbers of the tests ([`XorShift`]).
//! - [`clip`]: the bundled camera clips (`assets/clips/`; the `heimdall-clip` crate): a virtual
//!   camera moving over a still photo with moving RGBA cut-outs over it, with per-frame ground
//!   truth (boxes and points).
//! - [`synthetic`]: frames that carry their own index in the pixels (capture index in, same index
//!   out).
//! - [`warp`]: the fixed-point renderer the clips use (`heimdall_clip::warp`).
#![warn(missing_docs)]

pub mod fetch;
pub mod goldens;
pub mod heap;
pub mod metrics;
pub mod npy;
pub mod paths;
pub mod rng;
pub mod skip;
pub mod synthetic;

/// The bundled camera clips: the `heimdall-clip` crate (the CLI and the apps use it too).
pub use heimdall_clip as clip;
/// The clips' fixed-point renderer (`heimdall_clip::warp`).
pub use heimdall_clip::warp;

pub use clip::{
    AnnotationKind, CameraPose, Clip, ClipError, ClipSpec, FrameTruth, LayerPose, TruthBox,
    TruthPoint,
};
pub use fetch::{
    FetchError, ModelCache, model_path, model_present, npm_model_path, onnx_model_path,
    onnx_node_tests_dir,
};
pub use heap::{HeapStats, heap_stats};
pub use metrics::{rel_l2, rel_l2_floored, rel_l2_scaled};
pub use paths::{
    BUNDLED_MEDIAPIPE_MODELS, MEDIAPIPE_MODELS, ONNX_MODELS, assets_dir, goldens_dir,
    workspace_root,
};
pub use rng::XorShift;
pub use skip::{skip, skip_gpu};
pub use synthetic::{SyntheticSource, decode_frame_index};

/// Expands to one `#[test]` per MediaPipe model ([`MEDIAPIPE_MODELS`]), each calling
/// `$check("<model name>")`.
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
        #[test]
        fn every_mediapipe_model_has_a_test() {
            assert_eq!([$(stringify!($name)),*], $crate::MEDIAPIPE_MODELS);
        }
    };
}

/// Expands the golden suite for one runtime: one `#[test]` per model of
/// [`goldens::GOLDEN_MODELS`], each calling [`goldens::check`] with `$runtime()` (a function
/// returning `Option<impl goldens::Runtime>`, `None` to skip), and a test that the list is
/// complete. Expand it once per runtime, each in its own module:
///
/// ```ignore
/// mod gpu_f32 {
///     heimdall_testkit::golden_suite!(super::gpu_f32);
/// }
/// ```
#[macro_export]
macro_rules! golden_suite {
    ($runtime:path) => {
        $crate::golden_suite!(@each $runtime;
            face_detection_short_range, face_detection_full_range_sparse, face_landmark,
            face_landmark_with_attention, iris_landmark, palm_detection_lite, palm_detection_full,
            hand_landmark_lite, hand_landmark_full, hand_recrop, pose_detection, pose_landmark_full,
            selfie_segmentation, selfie_segmentation_landscape,
            multistyle26, multistyle26_without_passes, pp_ocrv6_det_small);
    };
    (@each $runtime:path; $($id:ident),*) => {
        $( #[test] fn $id() { $crate::goldens::check($runtime(), stringify!($id)); } )*
        #[test]
        fn the_suite_is_complete() {
            $crate::goldens::assert_complete(&[$(stringify!($id)),*]);
        }
    };
}
