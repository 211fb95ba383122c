//! The face_landmark region of interest from a face detection, as MediaPipe computes it.
//!
//! MediaPipe's `face_detection_front_detection_to_roi` subgraph (used by the face mesh graphs):
//!
//! 1. `DetectionsToRectsCalculator` with `rotation_vector_start_keypoint_index: 0` (right eye),
//!    `rotation_vector_end_keypoint_index: 1` (left eye), `rotation_vector_target_angle_degrees:
//!    0`: the rect is the detection's box (centre, width, height, normalised), its rotation
//!    `normalize(0 − atan2(−(y1 − y0), x1 − x0))` with the keypoints in pixels.
//! 2. `RectTransformationCalculator` with `scale_x: 1.5`, `scale_y: 1.5`, `square_long: true`:
//!    the long side in pixels becomes both sides, then both are scaled by 1.5.
//!
//! The rotation is in radians, positive = clockwise on screen (y down): the crop's x axis points
//! along `(cos r, sin r)` in source pixels.

use glam::Vec2;

use crate::image::{RotatedRect, normalize_radians};
use crate::ssd::Detection;

/// The face_landmark input region for a face detection given in source uv (map detections from
/// the detector's input first, see [`Detection::transformed`]), for a `src_w × src_h` image.
pub fn face_landmark_roi(detection: &Detection, src_w: u32, src_h: u32) -> RotatedRect {
    let size = Vec2::new(src_w.max(1) as f32, src_h.max(1) as f32);
    // DetectionsToRects: box centre and size; rotation from the eyes in pixels.
    // A detection without eye keypoints (not a face detector's) is not rotated.
    let eye = |k: usize| detection.keypoints.get(k).copied().unwrap_or(Vec2::ZERO) * size;
    let (p0, p1) = (eye(0), eye(1));
    let rotation = normalize_radians(0.0 - (-(p1.y - p0.y)).atan2(p1.x - p0.x));
    let bbox = detection.bbox;
    // RectTransformation: square_long in pixels, then scale 1.5 on both sides.
    let long = (bbox.w * size.x).max(bbox.h * size.y);
    let scale = 1.5;
    RotatedRect {
        center: bbox.center(),
        size: Vec2::new(long / size.x, long / size.y) * scale,
        rotation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Rect;

    fn close(a: Vec2, b: Vec2) -> bool {
        (a - b).abs().max_element() < 1e-5
    }

    #[test]
    fn roi_from_tilted_detection_by_hand() {
        // 400x200 image. Eyes at px (100, 100) and (140, 140): the line goes down-right at 45°,
        // so the face is rolled 45° clockwise on screen.
        let size = Vec2::new(400.0, 200.0);
        let mut kp = [Vec2::ZERO; 6];
        kp[0] = Vec2::new(100.0, 100.0) / size;
        kp[1] = Vec2::new(140.0, 140.0) / size;
        let det = Detection {
            score: 0.9,
            // 80x60 px box at (80, 70).
            bbox: Rect::new(80.0 / 400.0, 70.0 / 200.0, 80.0 / 400.0, 60.0 / 200.0),
            class_id: 0,
            keypoints: kp.to_vec(),
        };
        let roi = face_landmark_roi(&det, 400, 200);
        assert!((roi.rotation - std::f32::consts::FRAC_PI_4).abs() < 1e-6);
        // Long side 80 px, times 1.5 = 120 px on both sides.
        assert!(close(roi.size * size, Vec2::splat(120.0)));
        assert!(close(roi.center * size, Vec2::new(120.0, 100.0)));
    }
}
