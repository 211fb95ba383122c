//! MediaPipe's CPU `ImageToTensorCalculator`
//! (`mediapipe/calculators/tensor/image_to_tensor_calculator.cc`, OpenCV converter) as a
//! [`Crop`]: the ROI (`GetRoi`: the whole frame when none is given), padded to the tensor's
//! aspect ratio with `keep_aspect_ratio` (`PadRoi`), and OpenCV's corner sampling
//! ([`CropTransform::opencv_corners`]).

use super::crop::{Border, Crop, CropTransform, RotatedRect};
use glam::Vec2;

/// What a MediaPipe model sees of a frame: the crop to sample with (the GPU preprocessing kernel
/// or [`resample`](fn@super::resample)), and the ideal transform MediaPipe maps results back with
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

    /// The inverse of [`ImageToTensor::new`]: what a tensor sampled with `sample` (an
    /// [`ImageToTensor::sample`] crop, e.g. handed back by a runtime that only keeps the crop) of
    /// a `frame_w × frame_h` frame into an `out_w × out_h` tensor saw: the ideal transform
    /// (OpenCV's corner shift undone) and the padded ROI it was made from.
    pub fn from_sample(
        sample: &Crop,
        (frame_w, frame_h): (u32, u32),
        (out_w, out_h): (u32, u32),
    ) -> ImageToTensor {
        let half_out = Vec2::new(0.5 / out_w.max(1) as f32, 0.5 / out_h.max(1) as f32);
        let half_src = Vec2::new(0.5 / frame_w.max(1) as f32, 0.5 / frame_h.max(1) as f32);
        // sample = shift(+½ src) ∘ ideal ∘ shift(−½ out), so ideal = shift(−½ src) ∘ sample ∘
        // shift(+½ out).
        let unshift_src = CropTransform(glam::Affine2::from_translation(-half_src));
        let unshift_out = CropTransform(glam::Affine2::from_translation(half_out));
        let transform = unshift_src.compose(&sample.transform.compose(&unshift_out));
        // from_rotated_rect: in pixels the linear part is rot · diag(size_px).
        let src = Vec2::new(frame_w.max(1) as f32, frame_h.max(1) as f32);
        let x_px = transform.0.matrix2.x_axis * src;
        let y_px = transform.0.matrix2.y_axis * src;
        let roi = RotatedRect {
            center: transform.apply(Vec2::splat(0.5)),
            size: Vec2::new(x_px.length(), y_px.length()) / src,
            rotation: x_px.y.atan2(x_px.x),
        };
        ImageToTensor {
            sample: *sample,
            transform,
            roi,
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

    #[test]
    fn from_sample_inverts_new() {
        let roi = RotatedRect {
            center: Vec2::new(0.4, 0.6),
            size: Vec2::new(0.3, 0.4),
            rotation: 0.7,
        };
        let t = ImageToTensor::new(Some(&roi), (640, 480), (224, 224), true, Border::Clamp);
        let back = ImageToTensor::from_sample(&t.sample, (640, 480), (224, 224));
        assert_eq!(back.sample, t.sample);
        for uv in [Vec2::ZERO, Vec2::ONE, Vec2::new(0.3, 0.8)] {
            assert!((back.transform.apply(uv) - t.transform.apply(uv)).length() < 1e-5);
        }
        assert!((back.roi.center - t.roi.center).length() < 1e-5);
        assert!((back.roi.size - t.roi.size).length() < 1e-5);
        assert!((back.roi.rotation - t.roi.rotation).abs() < 1e-5);
    }
}
