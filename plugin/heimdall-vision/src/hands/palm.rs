//! Palm detection (`palm_detection_lite` / `palm_detection_full`, 192×192) and the hand ROI
//! made from a palm, as MediaPipe's `palm_detection_cpu.pbtxt` and
//! `palm_detection_detection_to_roi.pbtxt`.
//!
//! - Input: the whole frame letterboxed into 192×192 (`keep_aspect_ratio: true`,
//!   `BORDER_ZERO`), values in `[0, 1]`.
//! - Anchors: 4 layers, strides `[8, 16, 16, 16]`, scales 0.1484375..0.75, offset 0.5, aspect
//!   ratio 1 plus the interpolated one, fixed size: 24·24·2 + 12·12·6 = 2016.
//! - Decoding: 18 values per box (`x, y, w, h`, then 7 keypoints × `x, y`), all scales 192,
//!   sigmoid scores clipped at ±100, kept when ≥ 0.5; weighted NMS at IoU 0.3; letterbox
//!   removal.
//! - ROI: `DetectionsToRects` (box centre and size, rotation `π/2 − atan2(−(y₂ − y₀), x₂ − x₀)`
//!   from the wrist keypoint 0 to the middle-finger MCP keypoint 2, in pixels), then
//!   `RectTransformation` (shift −0.5 of the height along the rotated y axis, square on the long
//!   side in pixels, scale 2.6).

use glam::Vec2;

use crate::anchors::{SsdAnchorsOptions, generate_anchors};
use crate::image::{Border, ImageToTensor, RotatedRect, normalize_radians};
use crate::ssd::{Detection, Nms, SsdDecoder, SsdOptions};

/// Side of the palm detector's square input, in pixels.
pub const PALM_INPUT: u32 = 192;
/// Number of palm keypoints: wrist centre, index MCP, middle MCP, ring MCP, pinky MCP, thumb
/// CMC, thumb MCP.
pub const PALM_KEYPOINTS: usize = 7;
/// Index of the wrist-centre keypoint.
pub const PALM_WRIST: usize = 0;
/// Index of the middle-finger MCP keypoint.
pub const PALM_MIDDLE_MCP: usize = 2;

/// The anchor options of MediaPipe's palm detection graph (both models): 2016 anchors.
pub fn palm_anchor_options() -> SsdAnchorsOptions {
    SsdAnchorsOptions {
        input_size_width: PALM_INPUT,
        input_size_height: PALM_INPUT,
        ..SsdAnchorsOptions::face_detection_short_range()
    }
}

/// The decoder options of MediaPipe's palm detection graph, with `min_score_thresh` (the
/// Python solution's `min_detection_confidence`, 0.5 by default).
pub fn palm_decoder_options(min_score_thresh: f32) -> SsdOptions {
    let scale = PALM_INPUT as f32;
    SsdOptions {
        num_classes: 1,
        num_coords: 4 + 2 * PALM_KEYPOINTS,
        keypoint_coord_offset: 4,
        num_keypoints: PALM_KEYPOINTS,
        values_per_keypoint: 2,
        reverse_output_order: true,
        x_scale: scale,
        y_scale: scale,
        w_scale: scale,
        h_scale: scale,
        apply_exponential_on_box_size: false,
        sigmoid_score: true,
        score_clipping_thresh: Some(100.0),
        min_score_thresh,
        ignore_classes: Vec::new(),
        nms: Nms::Weighted {
            min_suppression_threshold: 0.3,
        },
    }
}

/// The palm decoder with MediaPipe's options (`min_score_thresh` 0.5).
pub fn palm_decoder() -> SsdDecoder {
    SsdDecoder::new(
        generate_anchors(&palm_anchor_options()),
        palm_decoder_options(0.5),
    )
}

/// The palm detector's view of a `frame_w × frame_h` frame: the whole frame letterboxed into
/// 192×192 with a zero border. Map detections back with its `transform`
/// ([`Detection::transformed`]).
pub fn palm_detection_crop(frame_w: u32, frame_h: u32) -> ImageToTensor {
    ImageToTensor::new(
        None,
        (frame_w, frame_h),
        (PALM_INPUT, PALM_INPUT),
        true,
        Border::ZERO,
    )
}

/// The hand landmark ROI of a palm detection given in frame uv, for a `frame_w × frame_h`
/// frame (MediaPipe's `PalmDetectionDetectionToRoi`).
pub fn palm_to_roi(palm: &Detection, frame_w: u32, frame_h: u32) -> RotatedRect {
    let size = Vec2::new(frame_w.max(1) as f32, frame_h.max(1) as f32);
    let center = palm.bbox.center();
    let keypoint = |k: usize| palm.keypoints.get(k).copied().unwrap_or(center) * size;
    let (p0, p1) = (keypoint(PALM_WRIST), keypoint(PALM_MIDDLE_MCP));
    let rotation =
        normalize_radians(std::f32::consts::FRAC_PI_2 - (-(p1.y - p0.y)).atan2(p1.x - p0.x));
    let rect = RotatedRect {
        center,
        size: Vec2::new(palm.bbox.w, palm.bbox.h),
        rotation,
    };
    transform_rect(&rect, frame_w, frame_h, 2.6, -0.5)
}

/// MediaPipe's `RectTransformationCalculator` on a normalised rect with `square_long: true`,
/// `scale_x = scale_y = scale`, `shift_x: 0` and `shift_y` (a fraction of the height along the
/// rect's rotated y axis).
pub(crate) fn transform_rect(
    rect: &RotatedRect,
    frame_w: u32,
    frame_h: u32,
    scale: f32,
    shift_y: f32,
) -> RotatedRect {
    let (w_px, h_px) = (frame_w.max(1) as f32, frame_h.max(1) as f32);
    let (width, height) = (rect.size.x, rect.size.y);
    let r = rect.rotation;
    let mut center = rect.center;
    if r == 0.0 {
        center.y += height * shift_y;
    } else {
        center.x += -h_px * height * shift_y * r.sin() / w_px;
        center.y += h_px * height * shift_y * r.cos() / h_px;
    }
    let long = (width * w_px).max(height * h_px);
    RotatedRect {
        center,
        size: Vec2::new(long / w_px, long / h_px) * scale,
        rotation: r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Rect;

    #[test]
    fn palm_anchors_by_hand() {
        let a = generate_anchors(&palm_anchor_options());
        assert_eq!(a.len(), 2016);
        // First layer 24x24, two anchors per cell; the second feature map 12x12, six per cell.
        assert_eq!(a[0].x_center, 0.5 / 24.0);
        assert_eq!(a[2].x_center, 1.5 / 24.0);
        assert_eq!(a[1152].x_center, 0.5 / 12.0);
        assert_eq!(a[1152 + 6].x_center, 1.5 / 12.0);
        assert!(a.iter().all(|x| x.w == 1.0 && x.h == 1.0));
    }

    #[test]
    fn palm_roi_by_hand() {
        // 400x200 frame; a 40x40 px palm box centred at px (200, 100); wrist below the middle
        // MCP (fingers up): rotation 0, the ROI shifted up by half the box height (20 px), then
        // 40 px square scaled 2.6 = 104 px.
        let size = Vec2::new(400.0, 200.0);
        let mut kps = vec![Vec2::new(200.0, 100.0) / size; 7];
        kps[0] = Vec2::new(200.0, 120.0) / size;
        kps[2] = Vec2::new(200.0, 80.0) / size;
        let palm = Detection {
            score: 0.9,
            class_id: 0,
            bbox: Rect::new(180.0 / 400.0, 80.0 / 200.0, 40.0 / 400.0, 40.0 / 200.0),
            keypoints: kps.clone(),
        };
        let roi = palm_to_roi(&palm, 400, 200);
        assert!(roi.rotation.abs() < 1e-6);
        assert!(((roi.center * size) - Vec2::new(200.0, 80.0)).length() < 1e-3);
        assert!(((roi.size * size) - Vec2::splat(104.0)).length() < 1e-3);
        // Fingers pointing right (middle MCP right of the wrist): rotated +90° (clockwise), the
        // shift goes along the rotated y axis, i.e. towards +x... of −0.5·h: towards the
        // fingers (+x on screen).
        let mut right = palm;
        right.keypoints[0] = Vec2::new(180.0, 100.0) / size;
        right.keypoints[2] = Vec2::new(220.0, 100.0) / size;
        let roi = palm_to_roi(&right, 400, 200);
        assert!((roi.rotation - std::f32::consts::FRAC_PI_2).abs() < 1e-6);
        assert!(((roi.center * size) - Vec2::new(220.0, 100.0)).length() < 1e-3);
    }
}
