//! The crop of a camera frame that feeds a model: [`heimdall_vision::CropTransform`] (model
//! input uv to frame uv; crop, resize, letterbox, rotation) plus what taps outside the frame
//! read. The GPU preprocessing and the CPU path both take it.

use bevy::math::Vec2;
use heimdall_gpu::preprocess::{Border, CropTransform as GpuCrop};
use heimdall_vision::CropTransform;

/// Output uv to source uv, and the border.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Crop {
    /// The map (model input uv to frame uv).
    pub transform: CropTransform,
    /// Outside the frame: zeros (true, MediaPipe's letterbox and ROI border) or the nearest edge
    /// pixel (false).
    pub zero_border: bool,
}

impl Crop {
    /// The whole frame, stretched.
    pub const FULL: Crop = Crop {
        transform: CropTransform::IDENTITY,
        zero_border: false,
    };

    /// The whole frame fitted into the model's input with its aspect kept, zero padding.
    pub fn letterbox(frame_w: u32, frame_h: u32, model_w: u32, model_h: u32) -> Crop {
        Crop {
            transform: CropTransform::letterbox(frame_w, frame_h, model_w, model_h),
            zero_border: true,
        }
    }

    /// A rotated region (MediaPipe's face ROI), zero border.
    pub fn rotated(transform: CropTransform) -> Crop {
        Crop {
            transform,
            zero_border: true,
        }
    }

    /// Maps a point of the model input (uv) to the frame (uv).
    pub fn to_frame(&self, uv: Vec2) -> Vec2 {
        self.transform.apply(uv)
    }

    /// The same crop for the GPU preprocessing kernel (and its CPU twin).
    pub fn to_gpu(&self) -> GpuCrop {
        let [a, b, c, d, e, f] = self.transform.to_rows();
        GpuCrop {
            matrix: [[a, b, c], [d, e, f]],
            border: if self.zero_border {
                Border::Constant([0.0; 4])
            } else {
                Border::Clamp
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letterbox_of_a_wide_frame_pads_top_and_bottom() {
        // A 320x240 frame into a 128x128 input: the frame fills the width, and its height is
        // 3/4 of the input, centred: model v = 0.125 is the frame's top edge.
        let c = Crop::letterbox(320, 240, 128, 128);
        let top = c.to_frame(Vec2::new(0.5, 0.125));
        assert!((top.y - 0.0).abs() < 1e-6 && (top.x - 0.5).abs() < 1e-6);
        let bottom = c.to_frame(Vec2::new(0.0, 0.875));
        assert!((bottom.y - 1.0).abs() < 1e-6 && bottom.x.abs() < 1e-6);
    }

    proptest::proptest! {
        #[test]
        fn the_gpu_matrix_maps_like_the_transform(
            m in proptest::array::uniform6(-2.0f32..2.0),
            u in 0.0f32..1.0,
            v in 0.0f32..1.0,
            zero in proptest::bool::ANY,
        ) {
            let c = Crop {
                transform: CropTransform::from_rows(m),
                zero_border: zero,
            };
            let g = c.to_gpu();
            let r = g.matrix;
            let s = Vec2::new(
                r[0][0] * u + r[0][1] * v + r[0][2],
                r[1][0] * u + r[1][1] * v + r[1][2],
            );
            // Hand-written: src_u = m0 u + m1 v + m2, src_v = m3 u + m4 v + m5.
            let expect = Vec2::new(m[0] * u + m[1] * v + m[2], m[3] * u + m[4] * v + m[5]);
            proptest::prop_assert!((s - expect).length() < 1e-5);
            proptest::prop_assert!((c.to_frame(Vec2::new(u, v)) - expect).length() < 1e-5);
            let border = if zero { Border::Constant([0.0; 4]) } else { Border::Clamp };
            proptest::prop_assert_eq!(g.border, border);
        }
    }
}
