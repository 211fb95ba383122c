//! Hand tracking ([`PalmDecoder`], [`HandLandmarkDecoder`], [`HandTrackingPlugin`]) in a headless
//! app on the GPU (lavapipe), with the bundled lite models:
//!
//! - against MediaPipe's own `solutions.hands` (static image mode, `assets/references/hands.json`,
//!   as the CLI's `detect_hands` test): each image fed as a still camera (after a blank frame that
//!   makes every hand lost), two hands wanted; the same number of hands, the same handedness
//!   (unless MediaPipe's score is within 0.02 of 0.5), mean landmark (x, y) error ≤ 4 % of the
//!   reference hand box diagonal; the room without hands gives none;
//! - tracking: with one hand wanted, palm detection does not run while the hand is tracked, runs
//!   again once the hand leaves the frame, and the hand is found again when it comes back.

mod common;
mod decoders_support;

use std::time::Duration;

use bevy::prelude::*;
use decoders_support as support;
use heimdall_bevy::prelude::*;
use heimdall_vision::RgbaImage;

const TIMEOUT: Duration = Duration::from_secs(300);

/// A mid-grey frame of `w × h` (no hand).
fn blank(w: u32, h: u32) -> RgbaImage {
    RgbaImage::from_raw(w, h, [128, 128, 128, 255].repeat((w * h) as usize)).unwrap()
}

/// An app with the plugin, hand tracking for `max_hands` on a camera showing `image`:
/// `(app, camera, source, palm detector)`.
fn hand_app(image: RgbaImage, max_hands: usize) -> (App, Entity, support::ImageCamera, Entity) {
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
fn hand_entities(app: &App, detector: Entity) -> Vec<Entity> {
    app.world()
        .get::<HandTracking>(detector)
        .expect("hand tracking")
        .hands
        .clone()
}

/// The tracked hands computed from frame `from` or later.
fn hands_since(app: &App, detector: Entity, from: u64) -> Vec<TrackedHand> {
    hand_entities(app, detector)
        .into_iter()
        .filter_map(|e| app.world().get::<TrackedHand>(e))
        .filter(|t| t.frame_index >= from)
        .cloned()
        .collect()
}

/// How many palm detections have finished so far.
fn palm_runs(app: &App, detector: Entity) -> usize {
    app.world()
        .resource::<common::Results>()
        .0
        .iter()
        .filter(|r| r.entity == detector)
        .count()
}

/// Updates until the palm detector has a result from frame `from` or later.
fn palms_since(app: &mut App, detector: Entity, from: u64) -> PalmDetections {
    support::wait_for::<PalmDetections>(app, detector, from, TIMEOUT, |p| p.frame_index)
        .expect("a palm detection")
}

fn floats(v: &serde_json::Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

#[test]
fn hands_match_mediapipe() {
    if common::skip_gpu() {
        eprintln!("HEIMDALL_SKIP_GPU=1: skipping");
        return;
    }
    let refs = support::reference("hands");
    let images = refs["images"].as_object().expect("images");
    let (mut app, camera, source, detector) = hand_app(blank(64, 64), 2);
    let mut worst = 0.0f32;
    for (name, per_model) in images {
        let want = per_model["lite"]["hands"].as_array().expect("hands");
        let img = support::image(name);
        let size = img.size();
        // A blank frame first: every hand is lost, palm detection runs on it.
        let from = support::show(&mut app, (camera, &source), blank(img.width, img.height));
        common::run_until(&mut app, TIMEOUT, |app| {
            hand_entities(app, detector)
                .iter()
                .all(|&e| app.world().get::<RegionOfInterest>(e).is_none())
                && app
                    .world()
                    .get::<PalmDetections>(detector)
                    .is_some_and(|p| p.frame_index >= from)
        });
        let from = support::show(&mut app, (camera, &source), img);
        let got = if want.is_empty() {
            // Palm detection ran on the image and found nothing; a few frames later, still none.
            let palms = palms_since(&mut app, detector, from);
            assert!(palms.palms.is_empty(), "{name}: {:?}", palms.palms);
            for _ in 0..10 {
                app.update();
            }
            hands_since(&app, detector, from)
        } else {
            common::run_until(&mut app, TIMEOUT, |app| {
                hands_since(app, detector, from).len() >= want.len()
            });
            hands_since(&app, detector, from)
        };
        assert_eq!(got.len(), want.len(), "{name}: {got:?}");
        if want.is_empty() {
            println!("{name}: no hands, as MediaPipe");
        }
        for w in want {
            let wb = floats(&w["box"]);
            let diag = (wb[2] - wb[0]).hypot(wb[3] - wb[1]);
            let wl: Vec<Vec<f32>> = w["landmarks"]
                .as_array()
                .unwrap()
                .iter()
                .map(floats)
                .collect();
            // The hand of ours nearest to this one (by mean landmark distance, in pixels).
            let (err, g) = got
                .iter()
                .map(|g| {
                    assert_eq!(g.hand.points.len(), 21);
                    let e = g
                        .hand
                        .points
                        .iter()
                        .zip(&wl)
                        .map(|(p, b)| (p.x * size.x - b[0]).hypot(p.y * size.y - b[1]))
                        .sum::<f32>()
                        / 21.0;
                    (e, g)
                })
                .min_by(|a, b| a.0.total_cmp(&b.0))
                .expect("a hand");
            let rel = err / diag;
            worst = worst.max(rel);
            let ref_score = w["handedness_score"].as_f64().unwrap() as f32;
            println!(
                "{name}: {} ({:.3}; MediaPipe {} {ref_score:.3}), presence {:.3}, mean landmark error {err:.2} px = {:.3} % of the diagonal (frame {})",
                g.hand.handedness.as_str(),
                g.hand.handedness_score,
                w["handedness"],
                g.hand.presence,
                rel * 100.0,
                g.frame_index,
            );
            if (ref_score - 0.5).abs() > 0.02 {
                assert_eq!(
                    w["handedness"].as_str().unwrap(),
                    g.hand.handedness.as_str(),
                    "{name}"
                );
            }
            assert!(
                rel <= 0.04,
                "{name}: mean landmark error {rel} of the diagonal"
            );
        }
    }
    println!(
        "worst mean landmark error: {:.3} % of the diagonal",
        worst * 100.0
    );
}

#[test]
fn a_hand_that_leaves_the_frame_triggers_palm_detection_again() {
    if common::skip_gpu() {
        eprintln!("HEIMDALL_SKIP_GPU=1: skipping");
        return;
    }
    let hand = support::image("hand_dst.jpg");
    let (w, h) = (hand.width, hand.height);
    let (mut app, camera, source, detector) = hand_app(hand.clone(), 1);
    let slot = hand_entities(&app, detector)[0];

    // The hand is found, then tracked: its landmarks keep coming, palm detection stays idle.
    common::run_until(&mut app, TIMEOUT, |app| {
        app.world().get::<TrackedHand>(slot).is_some()
    });
    let first = app
        .world()
        .get::<TrackedHand>(slot)
        .expect("a hand")
        .frame_index;
    for _ in 0..5 {
        app.update();
    }
    let palms_while_tracked = palm_runs(&app, detector);
    assert!(palms_while_tracked >= 1);
    for _ in 0..20 {
        app.update();
    }
    let tracked = app
        .world()
        .get::<TrackedHand>(slot)
        .expect("the hand is still tracked");
    assert!(
        tracked.frame_index > first,
        "no new landmarks while tracked"
    );
    assert_eq!(
        palm_runs(&app, detector),
        palms_while_tracked,
        "palm detection ran while the hand was tracked"
    );
    println!(
        "tracked from frame {first} to {} with {palms_while_tracked} palm detection(s)",
        tracked.frame_index
    );

    // The hand leaves: it is lost, and palm detection runs again (finding nothing).
    let gone = support::show(&mut app, (camera, &source), blank(w, h));
    common::run_until(&mut app, TIMEOUT, |app| {
        app.world().get::<TrackedHand>(slot).is_none()
    });
    assert!(
        app.world().get::<TrackedHand>(slot).is_none(),
        "the hand was not lost"
    );
    let palms = palms_since(&mut app, detector, gone);
    assert!(palms.palms.is_empty(), "{:?}", palms.palms);
    let palms_after_loss = palm_runs(&app, detector);
    assert!(palms_after_loss > palms_while_tracked);

    // It comes back: palm detection finds it and tracking resumes.
    let back = support::show(&mut app, (camera, &source), hand);
    let found = support::wait_for::<TrackedHand>(&mut app, slot, back, TIMEOUT, |t| t.frame_index)
        .expect("the hand was not found again");
    assert!(palm_runs(&app, detector) > palms_after_loss);
    println!(
        "lost from frame {gone}, palm detections {palms_after_loss}; found again at frame {} (presence {:.3})",
        found.frame_index, found.hand.presence
    );
}
