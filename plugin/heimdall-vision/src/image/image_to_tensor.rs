//! MediaPipe's CPU `ImageToTensorCalculator`
//! (`mediapipe/calculators/tensor/image_to_tensor_calculator.cc`, OpenCV converter) as a
//! [`Crop`]: the ROI (`GetRoi`: the whole frame when none is given), padded to the tensor's
//! aspect ratio with `keep_aspect_ratio` (`PadRoi`), and OpenCV's corner sampling
//! ([`CropTransform::opencv_corners`]).

use super::crop::{Border, Crop, CropTransform, RotatedRect};
use glam::Vec2;

/// What a MediaPipe model sees of a frame: the crop to sample with (the GPU preprocessing kernel
/// or [`resample`](super::resample)), and the ideal transform MediaPipe maps results back with
/// (`DetectionLetterboxRemoval`, `LandmarkLetterboxRemoval` + `LandmarkProjection`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ImageToTensor {
    /// The crop to sample the tensor with (OpenCV's corner convention folded in).
    pub sample: Crop,
    /// Tensor uv → frame uv, the map results are projected back with.
    pub transform: CropTransform,
    /// The padded ROI (frame uv).
    pub roi: RotatedRect,
}

impl ImageToTensor {
    /// The crop of `roi` (the whole frame when `None`) of a `frame_w × frame_h` frame into an
    /// `out_w × out_h` tensor, padded to its aspect ratio when `keep_aspect_ratio`.
    pub fn new(
        roi: Option<&RotatedRect>,
        (frame_w, frame_h): (u32, u32),
        (out_w, out_h): (u32, u32),
        keep_aspect_ratio: bool,
        border: Border,
    ) -> ImageToTensor {
        let mut rect = roi.copied().unwrap_or(RotatedRect {
            center: Vec2::splat(0.5),
            size: Vec2::ONE,
            rotation: 0.0,
        });
        if keep_aspect_ratio {
            rect = rect.padded_to_aspect(frame_w, frame_h, out_w, out_h);
        }
        let transform = CropTransform::from_rotated_rect(&rect, frame_w, frame_h);
        ImageToTensor {
            sample: Crop {
                transform: transform.opencv_corners(frame_w, frame_h, out_w, out_h),
                border,
            },
            transform,
            roi: rect,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_frame_letterbox_is_the_letterbox() {
        // A 320x240 frame into 192x192 keeping the aspect: the ideal transform is the letterbox.
        let t = ImageToTensor::new(None, (320, 240), (192, 192), true, Border::ZERO);
        let l = CropTransform::letterbox(320, 240, 192, 192);
        for uv in [Vec2::ZERO, Vec2::ONE, Vec2::new(0.3, 0.8)] {
            assert!((t.transform.apply(uv) - l.apply(uv)).abs().max_element() < 1e-5);
        }
    }
}
