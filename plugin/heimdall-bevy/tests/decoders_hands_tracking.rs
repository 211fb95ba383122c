//! Hand tracking ([`HandTrackingPlugin`]) in a headless app on the GPU (lavapipe), with the
//! bundled lite models: with one hand wanted, palm detection does not run while the hand is
//! tracked (its landmarks keep coming from the ROI of the previous ones), runs again once the
//! hand leaves the frame (a blank frame), and the hand is found again when it comes back.

mod common;
mod decoders_support;

use bevy::prelude::*;
use decoders_support as support;
use decoders_support::hands::*;
use heimdall_bevy::prelude::*;

#[test]
fn a_hand_that_leaves_the_frame_triggers_palm_detection_again() {
    if common::skip_gpu() {
        common::skipping("HEIMDALL_SKIP_GPU=1");
        return;
    }
    let hand = support::image("hand_dst.jpg");
    let (w, h) = (hand.width, hand.height);
    let (mut app, camera, source, detector) = hand_app(hand.clone(), 1);
    let slot = hand_entities(&app, detector)[0];

    // The hand is found, then tracked: its landmarks keep coming, palm detection stays idle.
    // Inference is asynchronous: a palm detection requested before the palm's ROI reached the
    // hand may still start on the frame the hand is first tracked on (and finish much later: its
    // palm overlaps the tracked hand and is ignored); none starts after that.
    common::run_until(&mut app, TIMEOUT, |app| {
        app.world().get::<TrackedHand>(slot).is_some()
    });
    let first = app
        .world()
        .get::<TrackedHand>(slot)
        .expect("a hand")
        .frame_index;
    landmark_results(&mut app, slot, 15);
    let last = app
        .world()
        .get::<TrackedHand>(slot)
        .expect("the hand is still tracked")
        .frame_index;
    let palms = palm_frames(&app, detector);
    let while_tracked = palms.iter().filter(|&&f| f > first).count();
    println!("tracked from frame {first} to {last}; palm detections on frames {palms:?}");
    assert!(!palms.is_empty());
    assert!(
        while_tracked <= 1,
        "palm detection ran while the hand was tracked: frames {palms:?}, tracked from {first}"
    );

    // The hand leaves: it is lost, and palm detection runs again on the blank frames (finding
    // nothing).
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

    // It comes back: palm detection finds it on the new frames and tracking resumes.
    let back = support::show(&mut app, (camera, &source), hand);
    let found = support::wait_for::<TrackedHand>(&mut app, slot, back, TIMEOUT, |t| t.frame_index)
        .expect("the hand was not found again");
    let palms = palm_frames(&app, detector);
    assert!(palms.iter().any(|&f| f >= back), "{palms:?}");
    println!(
        "lost from frame {gone} (palm detection on frame {}, no palm); back on frame {back}, found again on frame {} (presence {:.3}); palm detections on frames {palms:?}",
        palms.iter().filter(|&&f| f >= gone).min().unwrap_or(&0),
        found.frame_index,
        found.hand.presence
    );
}

/// Updates until `slot` has had `n` more landmark results (fails the test if it loses its hand).
fn landmark_results(app: &mut App, slot: Entity, n: usize) {
    for _ in 0..n {
        let last = app
            .world()
            .get::<TrackedHand>(slot)
            .expect("the hand is still tracked")
            .frame_index;
        support::wait_for::<TrackedHand>(app, slot, last + 1, TIMEOUT, |t| t.frame_index)
            .expect("the hand is still tracked");
    }
}
