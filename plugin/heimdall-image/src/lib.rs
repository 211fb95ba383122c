//! The image vocabulary heimdall's crates share, defined once for every path that feeds a model:
//! the GPU preprocessing kernel (`heimdall_gpu::preprocess`), the CPU backend, the decoders that
//! map results back to the frame (`heimdall_vision`), the clips and test kit, the Bevy plugin and
//! the CLI. No GPU, no model: plain data and the CPU reference of the preprocessing.
//! `heimdall_vision::image` re-exports this crate, so its paths keep working.
//!
//! - [`crop`]: [`CropTransform`] (model input uv → frame uv), [`RotatedRect`] (MediaPipe's
//!   `NormalizedRect`), [`Border`], and [`Crop`] (the two together).
//! - [`draw`]: lines, boxes, polygons and dots for drawing results.
//! - [`image_to_tensor`]: [`ImageToTensor`], MediaPipe's CPU ROI-to-tensor crop.
//! - [`normalization`]: [`Normalization`], pixel bytes to the model's value range.
//! - [`pixel_format`]: camera frames (RGB, BGR, grey, YUYV, NV12, Motion-JPEG, padded rows) to
//!   RGBA8.
//! - [`rect`]: [`Rect`], axis-aligned boxes (detections, ground truth).
//! - [`resample`](mod@resample): the CPU reference of the preprocessing.
//! - [`rgba`]: [`RgbaImage`], decoding PNG and JPEG.
//!
//! Coordinates: "uv" means normalised image coordinates, `(0, 0)` the top-left corner of the
//! top-left pixel, `(1, 1)` the bottom-right corner of the bottom-right pixel, y down. Pixel
//! `(i, j)` has its centre at uv `((i + 0.5) / width, (j + 0.5) / height)`.
#![warn(missing_docs)]

pub mod crop;
pub mod draw;
pub mod error;
pub mod image_to_tensor;
pub mod normalization;
pub mod pixel_format;
pub mod rect;
pub mod resample;
pub mod rgba;

pub use crop::{Border, Crop, CropTransform, RotatedRect, normalize_radians};
pub use error::ImageError;
pub use image_to_tensor::ImageToTensor;
pub use normalization::Normalization;
pub use pixel_format::{PixelFormat, RawFrame, to_rgba};
pub use rect::Rect;
pub use resample::{resample, resample_into};
pub use rgba::RgbaImage;

/// The vector and affine types the crop is written in (glam's).
pub use glam::{Affine2, Vec2};
