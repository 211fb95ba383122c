//! Hand tracking ([`PalmDecoder`], [`HandLandmarkDecoder`], [`HandTrackingPlugin`]) in a headless
//! app on the GPU (lavapipe), with the bundled lite models, against MediaPipe's own
//! `solutions.hands` (static image mode, `assets/references/hands.json`, as the CLI's
//! `detect_hands` test): each image fed as a still camera (after a blank frame that makes every
//! hand lost), two hands wanted; the same number of hands, the same handedness (unless
//! MediaPipe's score is within 0.02 of 0.5), mean landmark (x, y) error ≤ 4 % of the reference
//! hand box diagonal; the room without hands gives none.
//!
//! Tracking is `decoders_hands_tracking.rs` (one app per test binary).

mod common;
mod decoders_support;

use bevy::prelude::*;
use decoders_support as support;
use decoders_support::hands::*;
use heimdall_bevy::prelude::*;

#[test]
fn hands_match_mediapipe() {
    if common::skip_gpu() {
        common::skipping("HEIMDALL_SKIP_GPU=1");
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
