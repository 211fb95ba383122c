//! Hand tracking helpers of `decoders_hands*.rs`: an app with [`HandTrackingPlugin`] on a still
//! camera, and what the tests look at.

use std::time::Duration;

use bevy::prelude::*;
use heimdall_bevy::prelude::*;
use heimdall_vision::RgbaImage;

use crate::common;
use crate::decoders_support as support;

/// How long a test waits for one result.
pub const TIMEOUT: Duration = Duration::from_secs(300);

/// A mid-grey frame of `w × h` (no hand).
pub fn blank(w: u32, h: u32) -> RgbaImage {
    RgbaImage::from_raw(w, h, [128, 128, 128, 255].repeat((w * h) as usize)).unwrap()
}

/// An app with the plugin, hand tracking for `max_hands` on a camera showing `image`:
/// `(app, camera, source, palm detector)`.
pub fn hand_app(image: RgbaImage, max_hands: usize) -> (App, Entity, support::ImageCamera, Entity) {
    let mut app = support::app();
    // The headless app is already finished (no more plugins): build this one by hand.
    HandTrackingPlugin.build(&mut app);
    let models = common::assets_dir().join("models");
    let palm = support::load_model(
        &mut app,
        &models.join("palm_detection_lite.tflite"),
        Vec::new(),
    );
    let landmarks = support::load_model(
        &mut app,
        &models.join("hand_landmark_lite.tflite"),
        Vec::new(),
    );
    let (camera, source) = support::spawn_camera(&mut app, image);
    let mut commands = app.world_mut().commands();
    let detector = spawn_hand_tracking(&mut commands, camera, palm, landmarks, max_hands);
    app.world_mut().flush();
    (app, camera, source, detector)
}

/// The hand entities of `detector`.
pub fn hand_entities(app: &App, detector: Entity) -> Vec<Entity> {
    app.world()
        .get::<HandTracking>(detector)
        .expect("hand tracking")
        .hands
        .clone()
}

/// The tracked hands computed from frame `from` or later.
pub fn hands_since(app: &App, detector: Entity, from: u64) -> Vec<TrackedHand> {
    hand_entities(app, detector)
        .into_iter()
        .filter_map(|e| app.world().get::<TrackedHand>(e))
        .filter(|t| t.frame_index >= from)
        .cloned()
        .collect()
}

/// The camera frames the palm detections so far ran on, in order of arrival.
pub fn palm_frames(app: &App, detector: Entity) -> Vec<u64> {
    app.world()
        .resource::<common::Results>()
        .0
        .iter()
        .filter(|r| r.entity == detector)
        .map(|r| r.output.frame_index)
        .collect()
}

/// Updates until the palm detector has a result from frame `from` or later.
pub fn palms_since(app: &mut App, detector: Entity, from: u64) -> PalmDetections {
    support::wait_for::<PalmDetections>(app, detector, from, TIMEOUT, |p| p.frame_index)
        .expect("a palm detection")
}

pub fn floats(v: &serde_json::Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}
