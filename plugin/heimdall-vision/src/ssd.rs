//! SSD output decoding shared by every MediaPipe detector (faces, palms, objects), as
//! MediaPipe's `TensorsToDetectionsCalculator` followed by `NonMaxSuppressionCalculator`
//! (`mediapipe/calculators/tensor/tensors_to_detections_calculator.cc`,
//! `mediapipe/calculators/util/non_max_suppression_calculator.cc`).
//!
//! Box decoding for anchor `a` and the raw values `r` of one box (`reverse_output_order: true`
//! reads `x, y, w, h`, otherwise `y, x, h, w`): `x_center = r_x / x_scale · a.w + a.x_center`,
//! `y_center = r_y / y_scale · a.h + a.y_center`, `w = r_w / w_scale · a.w` (or
//! `exp(r_w / w_scale) · a.w` with `apply_exponential_on_box_size`), `h` alike; keypoint `k` at
//! `keypoint_coord_offset + k · values_per_keypoint`, decoded like the centre. The score of a box
//! is its best class score (logits clipped to `±score_clipping_thresh`, then a sigmoid when
//! `sigmoid_score`); boxes scoring below `min_score_thresh` and inverted boxes are dropped.

use glam::Vec2;

use crate::Rect;
use crate::anchors::Anchor;
use crate::error::{DecodeError, check_len};
use crate::image::CropTransform;

/// One detection: a box, its best class, and its keypoints.
#[derive(Clone, Debug, PartialEq)]
pub struct Detection {
    /// Confidence in `[0, 1]` (after the sigmoid, where the model has one).
    pub score: f32,
    /// The best class (0 for single-class detectors).
    pub class_id: usize,
    /// Box, normalised (`x, y` = xmin, ymin; `w, h`) in the frame it was decoded in: the model
    /// input's uv straight from the decoder, the source's after [`Detection::transformed`].
    pub bbox: Rect,
    /// Keypoints in the same frame as `bbox`, in the model's order (6 for faces, 7 for palms,
    /// none for objects).
    pub keypoints: Vec<Vec2>,
}

impl Detection {
    /// The detection mapped through `transform` (model input uv → source uv): keypoints mapped,
    /// the box replaced by the bounding box of its mapped corners (exact for the letterbox and
    /// identity transforms, which do not rotate; MediaPipe's `DetectionLetterboxRemoval`).
    pub fn transformed(&self, transform: &CropTransform) -> Detection {
        let corners = self.bbox.corners().map(|c| transform.apply(c));
        Detection {
            score: self.score,
            class_id: self.class_id,
            bbox: Rect::bounding(corners).unwrap_or_default(),
            keypoints: self.keypoints.iter().map(|&k| transform.apply(k)).collect(),
        }
    }
}

/// Which non-maximum suppression follows the decoding.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Nms {
    /// MediaPipe's `WEIGHTED` algorithm (see [`weighted_nms`]).
    Weighted {
        /// Boxes whose IoU with the best is above this are merged into it.
        min_suppression_threshold: f32,
    },
    /// MediaPipe's `DEFAULT` algorithm (see [`nms`]).
    Default {
        /// Boxes whose IoU with a kept one is above this are dropped.
        min_suppression_threshold: f32,
        /// At most this many detections are kept (`None`: all).
        max_num_detections: Option<usize>,
    },
}

/// Options of the decoder (`TensorsToDetectionsCalculatorOptions` plus the NMS).
#[derive(Clone, Debug, PartialEq)]
pub struct SsdOptions {
    /// Number of classes in the score tensor (the best one is kept).
    pub num_classes: usize,
    /// Values per box in the regressor tensor.
    pub num_coords: usize,
    /// Index of the first keypoint value within a box.
    pub keypoint_coord_offset: usize,
    /// Number of keypoints per box.
    pub num_keypoints: usize,
    /// Values per keypoint (the first two are x and y).
    pub values_per_keypoint: usize,
    /// `true`: boxes are `x, y, w, h` and keypoints `x, y`; `false`: `y, x, h, w` and `y, x`.
    pub reverse_output_order: bool,
    /// Scale of x offsets.
    pub x_scale: f32,
    /// Scale of y offsets.
    pub y_scale: f32,
    /// Scale of widths.
    pub w_scale: f32,
    /// Scale of heights.
    pub h_scale: f32,
    /// Sizes are `exp(raw / scale) · anchor` instead of `raw / scale · anchor`.
    pub apply_exponential_on_box_size: bool,
    /// Scores go through a sigmoid.
    pub sigmoid_score: bool,
    /// Logits are clipped to `±score_clipping_thresh` first (`None`: no clipping).
    pub score_clipping_thresh: Option<f32>,
    /// Detections scoring below this are dropped.
    pub min_score_thresh: f32,
    /// Classes never reported (e.g. a background class).
    pub ignore_classes: Vec<usize>,
    /// The suppression after decoding.
    pub nms: Nms,
}

/// Decodes an SSD detector's two outputs (box regressors, class scores) into detections.
#[derive(Clone, Debug)]
pub struct SsdDecoder {
    anchors: Vec<Anchor>,
    options: SsdOptions,
}

impl SsdDecoder {
    /// A decoder with the given anchors (one per box) and options.
    pub fn new(anchors: Vec<Anchor>, options: SsdOptions) -> SsdDecoder {
        SsdDecoder { anchors, options }
    }

    /// The same decoder keeping detections scoring at least `min_score_thresh`.
    pub fn with_min_score(mut self, min_score_thresh: f32) -> SsdDecoder {
        self.options.min_score_thresh = min_score_thresh;
        self
    }

    /// The anchors.
    pub fn anchors(&self) -> &[Anchor] {
        &self.anchors
    }

    /// The options.
    pub fn options(&self) -> &SsdOptions {
        &self.options
    }

    /// Decodes `regressors` (`boxes × num_coords`) and `scores` (`boxes × num_classes`) and
    /// applies the NMS; detections in the model input's uv, best first.
    pub fn decode(
        &self,
        regressors: &[f32],
        scores: &[f32],
    ) -> Result<Vec<Detection>, DecodeError> {
        let raw = self.decode_raw(regressors, scores)?;
        Ok(match self.options.nms {
            Nms::Weighted {
                min_suppression_threshold,
            } => weighted_nms(raw, min_suppression_threshold),
            Nms::Default {
                min_suppression_threshold,
                max_num_detections,
            } => nms(raw, min_suppression_threshold, max_num_detections),
        })
    }

    /// Decodes without NMS: every box scoring at least `min_score_thresh` with a non-negative
    /// size, in anchor order.
    pub fn decode_raw(
        &self,
        regressors: &[f32],
        scores: &[f32],
    ) -> Result<Vec<Detection>, DecodeError> {
        let o = &self.options;
        let n = self.anchors.len();
        check_len("SSD regressors", regressors, n * o.num_coords)?;
        check_len("SSD scores", scores, n * o.num_classes)?;
        let mut out = Vec::new();
        for (i, a) in self.anchors.iter().enumerate() {
            let Some((class_id, score)) =
                self.best_class(&scores[i * o.num_classes..][..o.num_classes])
            else {
                continue;
            };
            // Also drops NaN scores.
            if score.is_nan() || score < o.min_score_thresh {
                continue;
            }
            let r = &regressors[i * o.num_coords..][..o.num_coords];
            let (rx, ry, rw, rh) = if o.reverse_output_order {
                (r[0], r[1], r[2], r[3])
            } else {
                (r[1], r[0], r[3], r[2])
            };
            let xc = rx / o.x_scale * a.w + a.x_center;
            let yc = ry / o.y_scale * a.h + a.y_center;
            let (w, h) = if o.apply_exponential_on_box_size {
                ((rw / o.w_scale).exp() * a.w, (rh / o.h_scale).exp() * a.h)
            } else {
                (rw / o.w_scale * a.w, rh / o.h_scale * a.h)
            };
            if !(w >= 0.0 && h >= 0.0) {
                continue;
            }
            let keypoints = (0..o.num_keypoints)
                .map(|k| {
                    let at = o.keypoint_coord_offset + k * o.values_per_keypoint;
                    let (kx, ky) = if o.reverse_output_order {
                        (r[at], r[at + 1])
                    } else {
                        (r[at + 1], r[at])
                    };
                    Vec2::new(
                        kx / o.x_scale * a.w + a.x_center,
                        ky / o.y_scale * a.h + a.y_center,
                    )
                })
                .collect();
            out.push(Detection {
                score,
                class_id,
                bbox: Rect::new(xc - 0.5 * w, yc - 0.5 * h, w, h),
                keypoints,
            });
        }
        Ok(out)
    }

    /// The best class of one box and its score (after clipping and the sigmoid); the first
    /// class wins ties, as MediaPipe's loop does.
    fn best_class(&self, logits: &[f32]) -> Option<(usize, f32)> {
        let o = &self.options;
        let mut best: Option<(usize, f32)> = None;
        for (c, &logit) in logits.iter().enumerate() {
            if o.ignore_classes.contains(&c) {
                continue;
            }
            let mut s = logit;
            if let Some(t) = o.score_clipping_thresh {
                s = s.clamp(-t, t);
            }
            if o.sigmoid_score {
                s = 1.0 / (1.0 + (-s).exp());
            }
            if best.is_none_or(|(_, b)| s > b) {
                best = Some((c, s));
            }
        }
        best
    }
}

/// MediaPipe's weighted non-maximum suppression (`NonMaxSuppressionCalculator`, algorithm
/// `WEIGHTED`, overlap `INTERSECTION_OVER_UNION`).
///
/// Repeatedly: take the best remaining detection (ties: the earlier one); every remaining
/// detection whose IoU with it is above `min_suppression_threshold` (itself included) is a
/// candidate; the output has the best one's score and class and the score-weighted mean of the
/// candidates' box corners (xmin, ymin, xmax, ymax) and keypoints; the candidates are removed.
pub fn weighted_nms(
    mut detections: Vec<Detection>,
    min_suppression_threshold: f32,
) -> Vec<Detection> {
    // Stable sort: ties keep anchor order.
    detections.sort_by(|a, b| b.score.total_cmp(&a.score));
    let mut remaining = detections;
    let mut out = Vec::new();
    while let Some(best) = remaining.first().cloned() {
        let (candidates, rest): (Vec<Detection>, Vec<Detection>) = remaining
            .into_iter()
            .partition(|d| d.bbox.iou(&best.bbox) > min_suppression_threshold);
        let mut merged = best;
        let total: f32 = candidates.iter().map(|d| d.score).sum();
        if !candidates.is_empty() && total > 0.0 {
            let mut min = Vec2::ZERO;
            let mut max = Vec2::ZERO;
            let mut kps = vec![Vec2::ZERO; merged.keypoints.len()];
            for d in &candidates {
                min += d.bbox.min() * d.score;
                max += d.bbox.max() * d.score;
                for (acc, k) in kps.iter_mut().zip(&d.keypoints) {
                    *acc += *k * d.score;
                }
            }
            merged.bbox = Rect::from_corners(min / total, max / total);
            merged.keypoints = kps.into_iter().map(|k| k / total).collect();
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

/// MediaPipe's plain non-maximum suppression (`NonMaxSuppressionCalculator`, algorithm
/// `DEFAULT`, overlap `INTERSECTION_OVER_UNION`): best first (ties: the earlier one), a
/// detection is kept unless its IoU with a kept one is above `min_suppression_threshold`, up to
/// `max_num_detections`. Classes are not looked at (MediaPipe's calculator does not either).
pub fn nms(
    mut detections: Vec<Detection>,
    min_suppression_threshold: f32,
    max_num_detections: Option<usize>,
) -> Vec<Detection> {
    detections.sort_by(|a, b| b.score.total_cmp(&a.score));
    let max = max_num_detections.unwrap_or(usize::MAX);
    let mut kept: Vec<Detection> = Vec::new();
    for d in detections {
        if kept.len() >= max {
            break;
        }
        if kept
            .iter()
            .all(|k| k.bbox.iou(&d.bbox) <= min_suppression_threshold)
        {
            kept.push(d);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn det(x: f32, score: f32) -> Detection {
        Detection {
            score,
            class_id: 0,
            bbox: Rect::new(x, 0.0, 0.2, 0.2),
            keypoints: Vec::new(),
        }
    }

    #[test]
    fn plain_nms_by_hand() {
        // IoU(0, 0.1) = 1/3 > 0.3: dropped; IoU(0, 0.12) = 0.25: kept; max 1 keeps the best.
        let out = nms(vec![det(0.1, 0.8), det(0.0, 0.9), det(0.3, 0.7)], 0.3, None);
        let xs: Vec<f32> = out.iter().map(|d| d.bbox.x).collect();
        assert_eq!(xs, vec![0.0, 0.3]);
        assert_eq!(nms(vec![det(0.12, 0.8), det(0.0, 0.9)], 0.3, None).len(), 2);
        assert_eq!(
            nms(vec![det(0.5, 0.8), det(0.0, 0.9)], 0.3, Some(1)).len(),
            1
        );
    }

    #[test]
    fn empty_box_does_not_loop_forever() {
        let mut d = det(0.5, 0.9);
        d.bbox = Rect::new(0.5, 0.5, 0.0, 0.0);
        let out = weighted_nms(vec![d.clone(), d], 0.3);
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn multi_class_yxhw_exponential_by_hand() {
        // One anchor at (0.5, 0.5), size 0.2 x 0.4; 3 classes, class 0 ignored (background).
        let anchors = vec![Anchor {
            x_center: 0.5,
            y_center: 0.5,
            w: 0.2,
            h: 0.4,
        }];
        let options = SsdOptions {
            num_classes: 3,
            num_coords: 4,
            keypoint_coord_offset: 4,
            num_keypoints: 0,
            values_per_keypoint: 2,
            reverse_output_order: false,
            x_scale: 10.0,
            y_scale: 10.0,
            w_scale: 5.0,
            h_scale: 5.0,
            apply_exponential_on_box_size: true,
            sigmoid_score: true,
            score_clipping_thresh: None,
            min_score_thresh: 0.5,
            ignore_classes: vec![0],
            nms: Nms::Default {
                min_suppression_threshold: 0.5,
                max_num_detections: None,
            },
        };
        let dec = SsdDecoder::new(anchors, options);
        // y offset 1 → +0.1·0.4; x offset 2 → +0.2·0.2; h = exp(0)·0.4; w = exp(5/5)·0.2.
        let reg = [1.0, 2.0, 0.0, 5.0];
        let scores = [9.0, 0.0, 2.0];
        let d = dec.decode(&reg, &scores).unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].class_id, 2);
        assert!((d[0].score - 1.0 / (1.0 + (-2.0f32).exp())).abs() < 1e-6);
        let w = std::f32::consts::E * 0.2;
        let c = d[0].bbox.center();
        assert!(
            (c - Vec2::new(0.54, 0.54)).abs().max_element() < 1e-6,
            "{c}"
        );
        assert!((d[0].bbox.w - w).abs() < 1e-6 && (d[0].bbox.h - 0.4).abs() < 1e-6);
        // Below the threshold: nothing.
        assert!(dec.decode(&reg, &[9.0, -1.0, -2.0]).unwrap().is_empty());
        assert!(dec.decode(&reg, &[0.0; 2]).is_err());
    }
}
