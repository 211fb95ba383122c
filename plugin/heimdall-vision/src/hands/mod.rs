//! MediaPipe's hand pipeline (`mediapipe/modules/hand_landmark/hand_landmark_tracking_cpu`):
//! palm detection, the hand ROI, 21 landmarks with handedness, and tracking across frames.
//!
//! One frame, in order: [`palm::palm_detection_crop`] → the palm model →
//! [`palm::palm_decoder`] (then [`Detection::transformed`](crate::Detection::transformed) to the
//! frame) → [`palm::palm_to_roi`] → [`landmarks::hand_landmark_crop`] → the landmark model →
//! [`landmarks::decode_hand_landmarks`] → [`landmarks::landmarks_to_roi`] for the next frame;
//! [`tracker::HandTracker`] strings these together as MediaPipe's graph does.

pub mod landmarks;
pub mod palm;
pub mod tracker;

pub use landmarks::{
    HAND_CONNECTIONS, HAND_LANDMARK_INPUT, HAND_LANDMARKS, HandLabel, HandLandmarks,
    decode_hand_landmarks, hand_landmark_crop, landmarks_to_roi,
};
pub use palm::{PALM_INPUT, palm_decoder, palm_detection_crop, palm_to_roi};
pub use tracker::{HandTracker, HandTrackerOptions};
