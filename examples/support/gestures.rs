//! Hand gestures the apps react to, from MediaPipe's 21 hand landmarks (frame uv).

use bevy::math::Vec2;
use heimdall_vision::hands::HandLandmarks;

/// Thumb tip to index tip over wrist to middle knuckle below which a hand pinches.
pub const PINCH_RATIO: f32 = 0.35;

/// A pinch: where the thumb and index tips meet (their middle) and the index tip.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pinch {
    /// The middle of the thumb and index tips (frame uv).
    pub center: Vec2,
    /// The index tip (frame uv).
    pub index_tip: Vec2,
}

/// The hand's pinch, if its thumb tip (landmark 4) and index tip (8) are closer than
/// [`PINCH_RATIO`] times its palm (wrist 0 to middle knuckle 9).
pub fn pinch(hand: &HandLandmarks) -> Option<Pinch> {
    let p = |i: usize| hand.points.get(i).map(|p| p.truncate());
    let (wrist, knuckle, thumb, index) = (p(0)?, p(9)?, p(4)?, p(8)?);
    let palm = wrist.distance(knuckle);
    (palm > 1e-4 && thumb.distance(index) < PINCH_RATIO * palm).then(|| Pinch {
        center: (thumb + index) / 2.0,
        index_tip: index,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::math::Vec3;
    use heimdall_vision::RotatedRect;
    use heimdall_vision::hands::HandLabel;

    fn hand(thumb_to_index: f32) -> HandLandmarks {
        let mut points = vec![Vec3::ZERO; 21];
        points[0] = Vec3::new(0.5, 0.8, 0.0);
        points[9] = Vec3::new(0.5, 0.5, 0.0);
        points[4] = Vec3::new(0.4, 0.4, 0.0);
        points[8] = Vec3::new(0.4 + thumb_to_index, 0.4, 0.0);
        HandLandmarks {
            points,
            presence: 1.0,
            handedness: HandLabel::Right,
            handedness_score: 1.0,
            roi: RotatedRect {
                center: Vec2::splat(0.5),
                size: Vec2::splat(0.5),
                rotation: 0.0,
            },
        }
    }

    #[test]
    fn pinch_is_thumb_to_index_against_the_palm() {
        // Palm 0.3: pinching below 0.105.
        let p = pinch(&hand(0.1)).expect("a pinch");
        assert!((p.center - Vec2::new(0.45, 0.4)).length() < 1e-6);
        assert!((p.index_tip - Vec2::new(0.5, 0.4)).length() < 1e-6);
        assert!(pinch(&hand(0.11)).is_none());
        let mut short = hand(0.0);
        short.points.truncate(5);
        assert!(pinch(&short).is_none(), "fewer than 21 points");
    }
}
