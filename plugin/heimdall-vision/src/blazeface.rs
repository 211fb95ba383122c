//! BlazeFace (`face_detection_short_range`) output decoding, as MediaPipe's
//! `TensorsToDetectionsCalculator` followed by `NonMaxSuppressionCalculator`.
//!
//! Options of MediaPipe's `face_detection_short_range` graph: 896 boxes, 16 coordinates each
//! (box `x_center, y_center, w, h` offsets then 6 keypoints × `x, y`; `reverse_output_order:
//! true`), all scales 128, scores through a sigmoid after clipping the logit to ±100, kept when
//! `≥ 0.5`; then weighted NMS with IoU overlap and `min_suppression_threshold: 0.3`.
//!
//! Box decoding for anchor `a` and raw values `r`: `x_center = r[0] / 128 · a.w + a.x_center`,
//! `y_center = r[1] / 128 · a.h + a.y_center`, `w = r[2] / 128 · a.w`, `h = r[3] / 128 · a.h`;
//! keypoint `k`: `(r[4 + 2k] / 128 · a.w + a.x_center, r[5 + 2k] / 128 · a.h + a.y_center)`.

use crate::anchors::{Anchor, SsdAnchorsOptions, generate_anchors};
use crate::error::DecodeError;
use crate::ssd::{Nms, SsdDecoder, SsdOptions};

pub use crate::ssd::{Detection, weighted_nms};

/// Number of keypoints of a face detection: right eye, left eye, nose tip, mouth centre, right
/// ear tragion, left ear tragion ("right" = the subject's right, on the image's left for a
/// frontal face).
pub const FACE_KEYPOINTS: usize = 6;

/// Index of the right-eye keypoint (the subject's right).
pub const KEYPOINT_RIGHT_EYE: usize = 0;
/// Index of the left-eye keypoint.
pub const KEYPOINT_LEFT_EYE: usize = 1;
/// Index of the nose-tip keypoint.
pub const KEYPOINT_NOSE_TIP: usize = 2;
/// Index of the mouth-centre keypoint.
pub const KEYPOINT_MOUTH: usize = 3;

/// Decoder options (see the module docs for MediaPipe's values, the [`Default`]).
#[derive(Clone, Debug, PartialEq)]
pub struct BlazeFaceOptions {
    /// Scale of the x offsets and widths (input width in pixels).
    pub x_scale: f32,
    /// Scale of the y offsets and heights.
    pub y_scale: f32,
    /// Scale of the widths.
    pub w_scale: f32,
    /// Scale of the heights.
    pub h_scale: f32,
    /// Logits are clipped to `±score_clipping_thresh` before the sigmoid.
    pub score_clipping_thresh: f32,
    /// Detections scoring below this are dropped.
    pub min_score_thresh: f32,
    /// Weighted NMS merges boxes whose IoU with the best is above this.
    pub min_suppression_threshold: f32,
}

impl Default for BlazeFaceOptions {
    fn default() -> Self {
        BlazeFaceOptions {
            x_scale: 128.0,
            y_scale: 128.0,
            w_scale: 128.0,
            h_scale: 128.0,
            score_clipping_thresh: 100.0,
            min_score_thresh: 0.5,
            min_suppression_threshold: 0.3,
        }
    }
}

/// Values per box in the regressor output.
pub const NUM_COORDS: usize = 4 + 2 * FACE_KEYPOINTS;

impl BlazeFaceOptions {
    /// The shared SSD decoder's options for a BlazeFace model with these scales and thresholds.
    pub fn to_ssd(&self) -> SsdOptions {
        SsdOptions {
            num_classes: 1,
            num_coords: NUM_COORDS,
            keypoint_coord_offset: 4,
            num_keypoints: FACE_KEYPOINTS,
            values_per_keypoint: 2,
            reverse_output_order: true,
            x_scale: self.x_scale,
            y_scale: self.y_scale,
            w_scale: self.w_scale,
            h_scale: self.h_scale,
            apply_exponential_on_box_size: false,
            sigmoid_score: true,
            score_clipping_thresh: Some(self.score_clipping_thresh),
            min_score_thresh: self.min_score_thresh,
            ignore_classes: Vec::new(),
            nms: Nms::Weighted {
                min_suppression_threshold: self.min_suppression_threshold,
            },
        }
    }
}

/// Decodes `face_detection_short_range` outputs into detections (the shared [`SsdDecoder`]
/// with BlazeFace's options).
#[derive(Clone, Debug)]
pub struct BlazeFaceDecoder {
    ssd: SsdDecoder,
    options: BlazeFaceOptions,
}

impl Default for BlazeFaceDecoder {
    fn default() -> Self {
        BlazeFaceDecoder::short_range()
    }
}

impl BlazeFaceDecoder {
    /// The decoder for `face_detection_short_range` with MediaPipe's options.
    pub fn short_range() -> BlazeFaceDecoder {
        BlazeFaceDecoder::new(
            generate_anchors(&SsdAnchorsOptions::face_detection_short_range()),
            BlazeFaceOptions::default(),
        )
    }

    /// A decoder with the given anchors and options.
    pub fn new(anchors: Vec<Anchor>, options: BlazeFaceOptions) -> BlazeFaceDecoder {
        BlazeFaceDecoder {
            ssd: SsdDecoder::new(anchors, options.to_ssd()),
            options,
        }
    }

    /// The anchors (one per box).
    pub fn anchors(&self) -> &[Anchor] {
        self.ssd.anchors()
    }

    /// The options.
    pub fn options(&self) -> &BlazeFaceOptions {
        &self.options
    }

    /// Decodes the model's outputs (`regressors`: output 0, `boxes × 16`; `scores`: output 1,
    /// `boxes × 1` logits) and applies weighted NMS. Detections are in the model input's uv,
    /// best first.
    pub fn decode(
        &self,
        regressors: &[f32],
        scores: &[f32],
    ) -> Result<Vec<Detection>, DecodeError> {
        self.ssd.decode(regressors, scores)
    }

    /// Decodes without NMS: every box scoring at least `min_score_thresh` with a non-negative
    /// size, in anchor order.
    pub fn decode_raw(
        &self,
        regressors: &[f32],
        scores: &[f32],
    ) -> Result<Vec<Detection>, DecodeError> {
        self.ssd.decode_raw(regressors, scores)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_sizes_are_typed_errors() {
        let dec = BlazeFaceDecoder::short_range();
        let err = dec.decode(&[0.0; 10], &[0.0; 896]).unwrap_err();
        assert_eq!(err.expected, 896 * 16);
        assert!(dec.decode(&vec![0.0; 896 * 16], &[0.0; 3]).is_err());
    }
}
