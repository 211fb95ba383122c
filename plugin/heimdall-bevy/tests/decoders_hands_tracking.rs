//! Hand tracking ([`HandTrackingPlugin`]) in a headless app on the GPU (lavapipe), with the
//! bundled lite models: with one hand wanted, palm detection does not run while the hand is
//! tracked (its landmarks keep coming from the ROI of the previous ones), runs again once the
//! hand leaves the frame (a blank frame), and the hand is found again when it comes back.

mod common;
mod decoders_support;

use decoders_support as support;
use decoders_support::hands::*;
use heimdall_bevy::prelude::*;

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
