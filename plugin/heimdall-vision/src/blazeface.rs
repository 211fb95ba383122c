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

use glam::Vec2;

use crate::Rect;
use crate::anchors::{Anchor, SsdAnchorsOptions, generate_anchors};
use crate::error::{DecodeError, check_len};
use crate::image::CropTransform;

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

/// One detected face.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Detection {
    /// Confidence in `[0, 1]` (after the sigmoid).
    pub score: f32,
    /// Box, normalised (`x, y` = xmin, ymin; `w, h`) in the frame it was decoded in: the model
    /// input's uv straight from the decoder, the source's after [`Detection::transformed`].
    pub bbox: Rect,
    /// Keypoints in the same frame as `bbox` (see [`FACE_KEYPOINTS`] for the order).
    pub keypoints: [Vec2; FACE_KEYPOINTS],
}

impl Detection {
    /// The detection mapped through `transform` (model input uv → source uv): keypoints mapped,
    /// the box replaced by the bounding box of its mapped corners (exact for the letterbox and
    /// identity transforms, which do not rotate).
    pub fn transformed(&self, transform: &CropTransform) -> Detection {
        let corners = self.bbox.corners().map(|c| transform.apply(c));
        Detection {
            score: self.score,
            bbox: Rect::bounding(corners).unwrap_or_default(),
            keypoints: self.keypoints.map(|k| transform.apply(k)),
        }
    }
}

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

/// Decodes `face_detection_short_range` outputs into detections.
#[derive(Clone, Debug)]
pub struct BlazeFaceDecoder {
    anchors: Vec<Anchor>,
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
        BlazeFaceDecoder { anchors, options }
    }

    /// The anchors (one per box).
    pub fn anchors(&self) -> &[Anchor] {
        &self.anchors
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
        let raw = self.decode_raw(regressors, scores)?;
        Ok(weighted_nms(raw, self.options.min_suppression_threshold))
    }

    /// Decodes without NMS: every box scoring at least `min_score_thresh` with a non-negative
    /// size, in anchor order.
    pub fn decode_raw(
        &self,
        regressors: &[f32],
        scores: &[f32],
    ) -> Result<Vec<Detection>, DecodeError> {
        let n = self.anchors.len();
        check_len("blazeface regressors", regressors, n * NUM_COORDS)?;
        check_len("blazeface scores", scores, n)?;
        let o = &self.options;
        let clip = o.score_clipping_thresh;
        let mut out = Vec::new();
        for ((a, r), &logit) in self
            .anchors
            .iter()
            .zip(regressors.chunks_exact(NUM_COORDS))
            .zip(scores)
        {
            let score = 1.0 / (1.0 + (-logit.clamp(-clip, clip)).exp());
            // Also drops NaN scores.
            if score.is_nan() || score < o.min_score_thresh {
                continue;
            }
            let xc = r[0] / o.x_scale * a.w + a.x_center;
            let yc = r[1] / o.y_scale * a.h + a.y_center;
            let w = r[2] / o.w_scale * a.w;
            let h = r[3] / o.h_scale * a.h;
            if !(w >= 0.0 && h >= 0.0) {
                continue;
            }
            let mut keypoints = [Vec2::ZERO; FACE_KEYPOINTS];
            for (k, kp) in keypoints.iter_mut().enumerate() {
                *kp = Vec2::new(
                    r[4 + 2 * k] / o.x_scale * a.w + a.x_center,
                    r[5 + 2 * k] / o.y_scale * a.h + a.y_center,
                );
            }
            out.push(Detection {
                score,
                bbox: Rect::new(xc - 0.5 * w, yc - 0.5 * h, w, h),
                keypoints,
            });
        }
        Ok(out)
    }
}

/// MediaPipe's weighted non-maximum suppression (`NonMaxSuppressionCalculator`, algorithm
/// `WEIGHTED`, overlap `INTERSECTION_OVER_UNION`).
///
/// Repeatedly: take the best remaining detection (ties: the earlier one); every remaining
/// detection whose IoU with it is above `min_suppression_threshold` (itself included) is a
/// candidate; the output has the best one's score and the score-weighted mean of the candidates'
/// box corners (xmin, ymin, xmax, ymax) and keypoints; the candidates are removed.
pub fn weighted_nms(
    mut detections: Vec<Detection>,
    min_suppression_threshold: f32,
) -> Vec<Detection> {
    // Stable sort: ties keep anchor order.
    detections.sort_by(|a, b| b.score.total_cmp(&a.score));
    let mut remaining = detections;
    let mut out = Vec::new();
    while let Some(best) = remaining.first().copied() {
        let (candidates, rest): (Vec<Detection>, Vec<Detection>) = remaining
            .into_iter()
            .partition(|d| d.bbox.iou(&best.bbox) > min_suppression_threshold);
        let mut merged = best;
        let total: f32 = candidates.iter().map(|d| d.score).sum();
        if !candidates.is_empty() && total > 0.0 {
            let mut min = Vec2::ZERO;
            let mut max = Vec2::ZERO;
            let mut kps = [Vec2::ZERO; FACE_KEYPOINTS];
            for d in &candidates {
                min += d.bbox.min() * d.score;
                max += d.bbox.max() * d.score;
                for (acc, k) in kps.iter_mut().zip(d.keypoints) {
                    *acc += k * d.score;
                }
            }
            merged.bbox = Rect::from_corners(min / total, max / total);
            merged.keypoints = kps.map(|k| k / total);
        }
        out.push(merged);
        // The best one always overlaps itself unless its box is empty: drop it explicitly then.
        remaining = if candidates.is_empty() {
            rest.into_iter().skip(1).collect()
        } else {
            rest
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_box_does_not_loop_forever() {
        let d = Detection {
            score: 0.9,
            bbox: Rect::new(0.5, 0.5, 0.0, 0.0),
            keypoints: [Vec2::ZERO; FACE_KEYPOINTS],
        };
        let out = weighted_nms(vec![d, d], 0.3);
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn wrong_sizes_are_typed_errors() {
        let dec = BlazeFaceDecoder::short_range();
        let err = dec.decode(&[0.0; 10], &[0.0; 896]).unwrap_err();
        assert_eq!(err.expected, 896 * 16);
        assert!(dec.decode(&vec![0.0; 896 * 16], &[0.0; 3]).is_err());
    }
}
