//! Pure-Rust pre- and post-processing for heimdall's vision models. No GPU, no Bevy: plain data
//! in, plain data out, each decoder checked against the MediaPipe source it ports.
//!
//! One frame from camera to result, in the order the modules are used:
//!
//! 1. [`image`]: the frame as an [`RgbaImage`], and the [`Crop`] a model sees of it
//!    (letterbox, rotated ROI, border) with its [`Normalization`]; [`image::resample`](fn@image::resample) is the CPU
//!    reference of the GPU preprocessing kernel.
//! 2. [`ssd::SsdDecoder`] (anchors from [`anchors`]; [`blazeface::BlazeFaceDecoder`] for faces):
//!    a detector's two outputs to [`Detection`]s, weighted or plain NMS included; [`Detection::transformed`] maps them back to the
//!    frame through the crop.
//! 3. [`face_roi::face_landmark_roi`]: the rotated crop `face_landmark` sees.
//! 4. [`face_mesh::decode_face_mesh`]: 468 points in frame coordinates, presence, head pose, and
//!    an anchor (centre and size) to draw on.
//! 5. [`mask::decode_mask`]: `selfie_segmentation`'s output as a mask image.
//! 6. [`hands`]: palms, hand ROIs, 21 landmarks with handedness, tracking.
//! 7. [`objects`]: MediaPipe's SSD MobileNetV2 OIDv4 object detector.
//! 8. [`text`]: PP-OCRv6 det pre-processing and DB post-processing, as RapidOCR.
//! 9. [`style`]: `multistyle26`'s style weights and output pixels.
//!
//! Coordinates: "uv" means normalised image coordinates, `(0, 0)` the top-left corner of the
//! top-left pixel, `(1, 1)` the bottom-right corner of the bottom-right pixel, y down. Pixel
//! `(i, j)` has its centre at uv `((i + 0.5) / width, (j + 0.5) / height)`.
#![warn(missing_docs)]

pub mod anchors;
pub mod blazeface;
pub mod error;
pub mod face_mesh;
pub mod face_roi;
pub mod hands;
/// Images and the crop of them a model sees: the `heimdall-image` crate, re-exported.
pub use heimdall_image as image;
pub mod mask;
pub mod objects;
/// Axis-aligned rectangles (`heimdall_image::rect`, re-exported).
pub use heimdall_image::rect;
pub mod ssd;
pub mod style;
pub mod text;

pub use blazeface::{BlazeFaceDecoder, BlazeFaceOptions};
pub use error::DecodeError;
pub use face_mesh::{FaceAnchor, FaceMesh, HeadPose, decode_face_mesh};
pub use face_roi::face_landmark_roi;
pub use glam::{Affine2, Mat2, Quat, Vec2, Vec3};
pub use image::{
    Border, Crop, CropTransform, ImageError, ImageToTensor, Normalization, RgbaImage, RotatedRect,
    resample,
};
pub use mask::{Mask, decode_mask};
pub use rect::Rect;
pub use ssd::{Detection, Nms, SsdDecoder, SsdOptions};
