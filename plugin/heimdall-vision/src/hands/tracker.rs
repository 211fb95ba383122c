//! Hand tracking across frames, as MediaPipe's `hand_landmark_tracking_cpu.pbtxt`: palm
//! detection runs only while fewer hands than wanted are tracked; each tracked hand's next ROI
//! comes from its landmarks; ROIs from palms and from the previous landmarks are merged by
//! `AssociationNormRectCalculator` (axis-aligned IoU > 0.5: the later one, from landmarks,
//! replaces the earlier); a hand whose presence falls below the threshold is dropped.

use crate::Rect;
use crate::hands::landmarks::{HandLandmarks, landmarks_to_roi};
use crate::hands::palm::palm_to_roi;
use crate::image::RotatedRect;
use crate::ssd::Detection;

/// Options of [`HandTracker`] (the Python solution's arguments).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HandTrackerOptions {
    /// Hands wanted (`max_num_hands`, 2 by default).
    pub num_hands: usize,
    /// Landmarks with a presence below this are dropped (`min_tracking_confidence`, 0.5).
    pub min_presence: f32,
    /// `false`: every frame is a still image (`static_image_mode`): palms are detected every
    /// time and nothing is carried over.
    pub track: bool,
}

impl Default for HandTrackerOptions {
    fn default() -> Self {
        HandTrackerOptions {
            num_hands: 2,
            min_presence: 0.5,
            track: true,
        }
    }
}

/// The tracker's state between frames: the ROIs from the previous frame's landmarks.
#[derive(Clone, Debug, Default)]
pub struct HandTracker {
    options: HandTrackerOptions,
    previous: Vec<RotatedRect>,
    palm_runs: usize,
}

/// The axis-aligned box MediaPipe's association compares (rotation ignored).
fn aligned_box(r: &RotatedRect) -> Rect {
    Rect::new(
        r.center.x - 0.5 * r.size.x,
        r.center.y - 0.5 * r.size.y,
        r.size.x,
        r.size.y,
    )
}

/// MediaPipe's `AssociationNormRectCalculator` (`min_similarity_threshold: 0.5`) over the
/// lists in order: each rect removes the rects already kept that overlap it with IoU > 0.5, then
/// joins the end of the list.
pub fn associate_rois(lists: &[&[RotatedRect]]) -> Vec<RotatedRect> {
    let mut out: Vec<RotatedRect> = Vec::new();
    for r in lists.iter().flat_map(|l| l.iter()) {
        let b = aligned_box(r);
        out.retain(|o| aligned_box(o).iou(&b) <= 0.5);
        out.push(*r);
    }
    out
}

impl HandTracker {
    /// A tracker with `options`.
    pub fn new(options: HandTrackerOptions) -> HandTracker {
        HandTracker {
            options,
            previous: Vec::new(),
            palm_runs: 0,
        }
    }

    /// The options.
    pub fn options(&self) -> &HandTrackerOptions {
        &self.options
    }

    /// Whether the next frame runs palm detection (fewer tracked hands than wanted).
    pub fn needs_palm_detection(&self) -> bool {
        !self.options.track || self.previous.len() < self.options.num_hands
    }

    /// How many frames ran palm detection so far.
    pub fn palm_runs(&self) -> usize {
        self.palm_runs
    }

    /// Forgets the tracked hands.
    pub fn reset(&mut self) {
        self.previous.clear();
    }

    /// Processes one `frame_w × frame_h` frame: `detect_palms` (called only when needed)
    /// returns palm detections in frame uv, best first; `landmarks` runs the landmark model on
    /// one ROI. Returns the hands whose presence passes, in MediaPipe's order (new hands from
    /// palms, then tracked ones).
    pub fn process<E>(
        &mut self,
        (frame_w, frame_h): (u32, u32),
        detect_palms: impl FnOnce() -> Result<Vec<Detection>, E>,
        mut landmarks: impl FnMut(&RotatedRect) -> Result<HandLandmarks, E>,
    ) -> Result<Vec<HandLandmarks>, E> {
        let need_palms = self.needs_palm_detection();
        let previous = if self.options.track {
            std::mem::take(&mut self.previous)
        } else {
            Vec::new()
        };
        let mut from_palms = Vec::new();
        if need_palms {
            self.palm_runs += 1;
            let palms = detect_palms()?;
            from_palms = palms
                .iter()
                .take(self.options.num_hands)
                .map(|p| palm_to_roi(p, frame_w, frame_h))
                .collect();
        }
        let rois = associate_rois(&[&from_palms, &previous]);
        let mut hands = Vec::new();
        for roi in rois {
            if roi.size.x <= 0.0 || roi.size.y <= 0.0 {
                continue;
            }
            let hand = landmarks(&roi)?;
            if hand.presence >= self.options.min_presence {
                hands.push(hand);
            }
        }
        self.previous = if self.options.track {
            hands
                .iter()
                .map(|h| landmarks_to_roi(&h.points, frame_w, frame_h))
                .collect()
        } else {
            Vec::new()
        };
        Ok(hands)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec2;

    fn rect(x: f32) -> RotatedRect {
        RotatedRect {
            center: Vec2::new(x, 0.5),
            size: Vec2::splat(0.2),
            rotation: 0.0,
        }
    }

    #[test]
    fn association_by_hand() {
        // 0.5 and 0.52 overlap (IoU 0.82): the later replaces the earlier; 0.8 stays.
        let out = associate_rois(&[&[rect(0.5), rect(0.8)], &[rect(0.52)]]);
        let xs: Vec<f32> = out.iter().map(|r| r.center.x).collect();
        assert_eq!(xs, vec![0.8, 0.52]);
    }
}
