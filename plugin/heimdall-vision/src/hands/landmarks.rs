//! Hand landmarks (`hand_landmark_lite` / `hand_landmark_full`, 224×224), as MediaPipe's
//! `hand_landmark_cpu.pbtxt` and `hand_landmark_landmarks_to_roi.pbtxt`.
//!
//! - Input: the ROI (square in pixels) into 224×224 (`keep_aspect_ratio: true`, default border,
//!   i.e. replicate), values in `[0, 1]`.
//! - Outputs: 63 landmark values (21 × `x, y, z` in input pixels), the hand presence score, the
//!   handedness score (of "Left", binary), 63 world landmark values.
//! - `TensorsToLandmarks`: `x / 224`, `y / 224`, `z / 224 / 0.4`; letterbox removal;
//!   `LandmarkProjection`: rotate `(x − ½, y − ½)` by the ROI's rotation in normalised units,
//!   scale by the ROI's normalised size, add its centre; `z · roi width`.
//! - `TensorsToClassification` (`binary_classification`, labels `Left, Right`, top 1): "Left"
//!   with the score when it is ≥ 0.5, else "Right" with `1 − score`.
//! - Next ROI (`HandLandmarksToRectCalculator` then `RectTransformation` scale 2, shift −0.1).

use glam::{Vec2, Vec3};

use crate::Rect;
use crate::error::{DecodeError, check_len};
use crate::hands::palm::transform_rect;
use crate::image::{Border, ImageToTensor, RotatedRect, normalize_radians};

/// Side of the hand landmark model's square input, in pixels.
pub const HAND_LANDMARK_INPUT: u32 = 224;
/// Number of hand landmarks.
pub const HAND_LANDMARKS: usize = 21;

/// MediaPipe's hand skeleton: the 21 connections between the landmarks, as its
/// `hand_connections` lists them (`HAND_CONNECTIONS` of `mediapipe/python/solutions/`
/// `hands_connections.py`): the palm (wrist 0 to the thumb's base 1, to the index finger's 5
/// and to the little finger's 17, and across the knuckles 5-9-13-17), then each finger from
/// its base to its tip (thumb 1-4, index 5-8, middle 9-12, ring 13-16, little 17-20). The one
/// table every drawing of a hand uses.
pub const HAND_CONNECTIONS: [(usize, usize); 21] = [
    (0, 1),
    (0, 5),
    (9, 13),
    (13, 17),
    (5, 9),
    (0, 17),
    (1, 2),
    (2, 3),
    (3, 4),
    (5, 6),
    (6, 7),
    (7, 8),
    (9, 10),
    (10, 11),
    (11, 12),
    (13, 14),
    (14, 15),
    (15, 16),
    (17, 18),
    (18, 19),
    (19, 20),
];

/// Which hand, as MediaPipe labels it (for an image that is not mirrored, MediaPipe's "Left" is
/// the subject's right hand: its model assumes a selfie view).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandLabel {
    /// MediaPipe's label "Left".
    Left,
    /// MediaPipe's label "Right".
    Right,
}

impl HandLabel {
    /// The label's text, as MediaPipe writes it.
    pub fn as_str(&self) -> &'static str {
        match self {
            HandLabel::Left => "Left",
            HandLabel::Right => "Right",
        }
    }
}

/// One hand's landmarks in a frame.
#[derive(Clone, Debug, PartialEq)]
pub struct HandLandmarks {
    /// 21 points: `x, y` in frame uv, `z` as MediaPipe scales it (normalised like x, relative to
    /// the wrist, smaller = nearer the camera).
    pub points: Vec<Vec3>,
    /// Hand presence score in `[0, 1]`.
    pub presence: f32,
    /// Handedness label.
    pub handedness: HandLabel,
    /// Score of the handedness label, in `[0.5, 1]`.
    pub handedness_score: f32,
    /// The ROI the landmarks were found in (frame uv).
    pub roi: RotatedRect,
}

impl HandLandmarks {
    /// The bounding box of the points (frame uv).
    pub fn bounding_box(&self) -> Rect {
        Rect::bounding(self.points.iter().map(|p| p.truncate())).unwrap_or_default()
    }
}

/// The hand landmark model's view of `roi` in a `frame_w × frame_h` frame (replicated border).
pub fn hand_landmark_crop(roi: &RotatedRect, frame_w: u32, frame_h: u32) -> ImageToTensor {
    ImageToTensor::new(
        Some(roi),
        (frame_w, frame_h),
        (HAND_LANDMARK_INPUT, HAND_LANDMARK_INPUT),
        true,
        Border::Clamp,
    )
}

/// Decodes the hand landmark model's first three outputs (`landmarks`: 63 values, `presence`:
/// 1, `handedness`: 1) for the crop `crop` (from [`hand_landmark_crop`]).
pub fn decode_hand_landmarks(
    landmarks: &[f32],
    presence: &[f32],
    handedness: &[f32],
    crop: &ImageToTensor,
) -> Result<HandLandmarks, DecodeError> {
    check_len("hand landmarks", landmarks, HAND_LANDMARKS * 3)?;
    check_len("hand presence", presence, 1)?;
    check_len("handedness", handedness, 1)?;
    let n = HAND_LANDMARK_INPUT as f32;
    let roi = crop.roi;
    let (s, c) = roi.rotation.sin_cos();
    let points = landmarks
        .chunks_exact(3)
        .map(|l| {
            // The padded ROI is the whole tensor (no letterbox inside it): the ideal transform
            // maps tensor uv to the frame. MediaPipe rotates in normalised units, which equals
            // the pixel rotation for the square ROIs of this graph.
            let (x, y) = (l[0] / n - 0.5, l[1] / n - 0.5);
            let px = (c * x - s * y) * roi.size.x + roi.center.x;
            let py = (s * x + c * y) * roi.size.y + roi.center.y;
            Vec3::new(px, py, l[2] / n / 0.4 * roi.size.x)
        })
        .collect();
    let left = handedness[0];
    let (label, score) = if left >= 0.5 {
        (HandLabel::Left, left)
    } else {
        (HandLabel::Right, 1.0 - left)
    };
    Ok(HandLandmarks {
        points,
        presence: presence[0],
        handedness: label,
        handedness_score: score,
        roi,
    })
}

/// The next frame's ROI from a hand's landmarks (frame uv), for a `frame_w × frame_h` frame
/// (MediaPipe's `HandLandmarkLandmarksToRoi`): the rotation from the wrist to the mean of the
/// index, middle and ring MCPs, the box of 12 palm and finger-base landmarks in that rotated
/// frame, squared on the long side, scaled 2, shifted −0.1 of its height.
pub fn landmarks_to_roi(points: &[Vec3], frame_w: u32, frame_h: u32) -> RotatedRect {
    const PARTIAL: [usize; 12] = [0, 1, 2, 3, 5, 6, 9, 10, 13, 14, 17, 18];
    let size = Vec2::new(frame_w.max(1) as f32, frame_h.max(1) as f32);
    let lm: Vec<Vec2> = PARTIAL
        .iter()
        .filter_map(|&i| points.get(i).map(|p| p.truncate()))
        .collect();
    if lm.len() < PARTIAL.len() {
        return RotatedRect {
            center: Vec2::splat(0.5),
            size: Vec2::ZERO,
            rotation: 0.0,
        };
    }
    // Partial indices 0 (wrist), 4 (index MCP), 6 (middle MCP), 8 (ring MCP).
    let p0 = lm[0] * size;
    let p1 = ((lm[4] + lm[8]) * 0.5 + lm[6]) * 0.5 * size;
    let rotation =
        normalize_radians(std::f32::consts::FRAC_PI_2 - (-(p1.y - p0.y)).atan2(p1.x - p0.x));
    let reverse = normalize_radians(-rotation);
    let bbox = Rect::bounding(lm.iter().copied()).unwrap_or_default();
    let aligned = bbox.center();
    let (rs, rc) = reverse.sin_cos();
    let mut min = Vec2::splat(f32::MAX);
    let mut max = Vec2::splat(f32::MIN);
    for p in &lm {
        let o = (*p - aligned) * size;
        let q = Vec2::new(o.x * rc - o.y * rs, o.x * rs + o.y * rc);
        min = min.min(q);
        max = max.max(q);
    }
    let pc = (min + max) * 0.5;
    let (s, c) = rotation.sin_cos();
    let center = Vec2::new(pc.x * c - pc.y * s, pc.x * s + pc.y * c) + size * aligned;
    let rect = RotatedRect {
        center: center / size,
        size: (max - min) / size,
        rotation,
    };
    transform_rect(&rect, frame_w, frame_h, 2.0, -0.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upright_hand_roi_by_hand() {
        // An upright hand in a 100x100 frame: wrist at (50, 80) px, MCPs on the line y = 50
        // (index 40, middle 50, ring 60), the other partial points on the box 30..70 x 40..80.
        let mut pts = vec![Vec3::new(0.5, 0.6, 0.0); HAND_LANDMARKS];
        let px = |x: f32, y: f32| Vec3::new(x / 100.0, y / 100.0, 0.0);
        pts[0] = px(50.0, 80.0);
        pts[5] = px(40.0, 50.0);
        pts[9] = px(50.0, 50.0);
        pts[13] = px(60.0, 50.0);
        pts[1] = px(30.0, 70.0);
        pts[17] = px(70.0, 40.0);
        let roi = landmarks_to_roi(&pts, 100, 100);
        assert!(roi.rotation.abs() < 1e-6, "{}", roi.rotation);
        // Box 30..70 x 40..80: centre (50, 60), 40x40; square 40, scale 2 = 80; shift −0.1·40
        // up = (50, 56).
        assert!(
            (roi.center * 100.0 - Vec2::new(50.0, 56.0)).length() < 1e-3,
            "{roi:?}"
        );
        assert!((roi.size * 100.0 - Vec2::splat(80.0)).length() < 1e-3);
    }

    #[test]
    fn decode_maps_through_the_roi() {
        // A ROI of 100x100 px centred at (200, 100) in a 400x200 frame, rotated 90°: the
        // tensor's top-centre (x = 112, y = 0) is on the ROI's right edge in the frame.
        let roi = RotatedRect {
            center: Vec2::new(0.5, 0.5),
            size: Vec2::new(0.25, 0.5),
            rotation: std::f32::consts::FRAC_PI_2,
        };
        let crop = hand_landmark_crop(&roi, 400, 200);
        let mut lm = vec![112.0; 63];
        lm[0] = 112.0;
        lm[1] = 0.0;
        lm[2] = 22.4;
        let h = decode_hand_landmarks(&lm, &[0.9], &[0.2], &crop).unwrap();
        let p = h.points[0];
        assert!((Vec2::new(p.x * 400.0, p.y * 200.0) - Vec2::new(250.0, 100.0)).length() < 1e-3);
        assert!((p.z - 22.4 / 224.0 / 0.4 * 0.25).abs() < 1e-6);
        assert_eq!(h.handedness, HandLabel::Right);
        assert!((h.handedness_score - 0.8).abs() < 1e-6);
        assert!(decode_hand_landmarks(&lm[..60], &[0.9], &[0.2], &crop).is_err());
    }
}
