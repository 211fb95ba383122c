//! The decoders heimdall ships, one file each (see [`crate::decoder::DnnDecoder`] to add one):
//! MediaPipe's face detection ([`face`]), face mesh ([`face_mesh`]) and selfie segmentation
//! ([`person_mask`]); hand tracking ([`hands`]), the OIDv4 object detector ([`objects`]), PP-OCRv6 text detection
//! ([`text`]) and `multistyle26` style transfer ([`style`]).

pub mod face;
pub mod face_mesh;
pub mod hands;
pub mod objects;
pub mod person_mask;
pub mod style;
pub mod text;

pub use face::{FaceDecoder, FaceDetections};
pub use face_mesh::{FaceMeshDecoder, FaceMeshResult};
pub use hands::{
    HandLandmarkDecoder, HandTracking, HandTrackingOptions, HandTrackingPlugin, PalmDecoder,
    PalmDetections, TrackedHand, spawn_hand_tracking, spawn_hand_tracking_with,
};
pub use objects::{DetectedObjects, ObjectDecoder};
pub use person_mask::{PersonMask, PersonMaskDecoder};
pub use style::{StyleDecoder, StylizedImage, style_transfer_model};
pub use text::{TextDecoder, TextRegions, text_detection_model, text_detection_model_with};
