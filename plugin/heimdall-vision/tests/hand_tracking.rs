//! Hand tracking across a clip, counted: a synthetic clip made from `assets/images/hand_dst.jpg`
//! (one hand) with heimdall-testkit's warp (the photo shrunk to 70 % of the frame, panning and
//! rolling a few degrees over 16 frames). As MediaPipe's `hand_landmark_tracking_cpu` graph:
//! with one hand wanted, palm detection runs on the first frame only and the hand is tracked
//! from its landmarks after that; with two wanted and one visible, palm detection runs on every
//! frame. Tracked landmarks stay within 4 % of the hand box diagonal of a fresh detection on the
//! same frame (static image mode). With two hands in view (`two_hands.jpg`) and two wanted, palm
//! detection runs once and both hands stay tracked.

use std::path::{Path, PathBuf};

use heimdall::cpu::{CpuModel, CpuOptions};
use heimdall::{LoadOptions, load_model};
use heimdall_testkit::warp::warp;
use heimdall_vision::hands::{
    HandLandmarks, HandTracker, HandTrackerOptions, decode_hand_landmarks, hand_landmark_crop,
    palm_decoder, palm_detection_crop,
};
use heimdall_vision::{CropTransform, DecodeError, Normalization, RgbaImage};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn model(name: &str) -> CpuModel {
    let path = heimdall_testkit::model_path(name).unwrap_or_else(|e| panic!("{e}"));
    let graph = load_model(path, LoadOptions::default()).expect("load");
    CpuModel::compile(&graph, CpuOptions { threads: 2 }).expect("compile")
}

fn run(model: &mut CpuModel, input: &[f32]) -> Vec<Vec<f32>> {
    model.set_input(0, input).expect("input");
    model.run().expect("run");
    (0..model.output_shapes().len())
        .map(|i| model.output(i).expect("output").to_vec())
        .collect()
}

struct Models {
    palm: CpuModel,
    landmark: CpuModel,
}

impl Models {
    fn process(
        &mut self,
        tracker: &mut HandTracker,
        frame: &RgbaImage,
    ) -> Result<Vec<HandLandmarks>, DecodeError> {
        let (w, h) = (frame.width, frame.height);
        let decoder = palm_decoder();
        let n = Normalization::ZERO_TO_ONE;
        let Models { palm, landmark } = self;
        tracker.process(
            (w, h),
            || {
                let crop = palm_detection_crop(w, h);
                let x = frame
                    .to_tensor(&crop.sample, &n, [192, 192, 3])
                    .expect("pre");
                let out = run(palm, &x);
                let d = decoder.decode(&out[0], &out[1])?;
                Ok(d.iter().map(|d| d.transformed(&crop.transform)).collect())
            },
            |roi| {
                let crop = hand_landmark_crop(roi, w, h);
                let x = frame
                    .to_tensor(&crop.sample, &n, [224, 224, 3])
                    .expect("pre");
                let out = run(landmark, &x);
                decode_hand_landmarks(&out[0], &out[1], &out[2], &crop)
            },
        )
    }
}

/// Frame `i` of the clip: out uv → photo uv, the photo at 70 % of a 640x480 frame, panning
/// right and down and rolling up to 6°.
fn camera(i: usize) -> CropTransform {
    let t = i as f32 / 15.0;
    let (cx, cy) = (0.5 - 0.12 * t, 0.5 - 0.06 * t);
    let angle = (6.0f32 * t).to_radians();
    let (s, c) = angle.sin_cos();
    // Photo uv = 0.5 + R · (out − centre) / 0.7 (in pixels, 4:3 for both).
    let (w, h) = (640.0, 480.0);
    let k = 1.0 / 0.7;
    let m = [c * k, -s * k * h / w, 0.0, s * k * w / h, c * k, 0.0];
    let base = CropTransform::from_rows(m);
    let centre = base.apply(glam::Vec2::new(cx, cy));
    CropTransform::from_rows([m[0], m[1], 0.5 - centre.x, m[3], m[4], 0.5 - centre.y])
}

fn mean_error(a: &HandLandmarks, b: &HandLandmarks, w: f32, h: f32) -> f32 {
    let bb = b.bounding_box();
    let diag = (bb.w * w).hypot(bb.h * h);
    let sum: f32 = a
        .points
        .iter()
        .zip(&b.points)
        .map(|(p, q)| ((p.x - q.x) * w).hypot((p.y - q.y) * h))
        .sum();
    sum / 21.0 / diag
}

#[test]
fn tracking_runs_palm_detection_only_when_needed() {
    let photo = RgbaImage::load(root().join("assets/images/hand_dst.jpg")).expect("photo");
    let mut models = Models {
        palm: model("palm_detection_lite"),
        landmark: model("hand_landmark_lite"),
    };
    let frames: Vec<RgbaImage> = (0..16)
        .map(|i| warp(&photo, &camera(i), 640, 480).expect("frame"))
        .collect();
    let mut one = HandTracker::new(HandTrackerOptions {
        num_hands: 1,
        ..Default::default()
    });
    let mut two = HandTracker::new(HandTrackerOptions::default());
    let mut still = HandTracker::new(HandTrackerOptions {
        track: false,
        ..Default::default()
    });
    let mut worst = 0.0f32;
    for (i, frame) in frames.iter().enumerate() {
        let tracked = models.process(&mut one, frame).unwrap();
        let both = models.process(&mut two, frame).unwrap();
        let fresh = models.process(&mut still, frame).unwrap();
        assert_eq!(tracked.len(), 1, "frame {i}");
        assert_eq!(both.len(), 1, "frame {i}");
        assert_eq!(fresh.len(), 1, "frame {i}");
        let e = mean_error(&tracked[0], &fresh[0], 640.0, 480.0);
        worst = worst.max(e);
        assert!(e <= 0.04, "frame {i}: {e}");
    }
    println!(
        "{} frames: palm runs {} (1 hand wanted), {} (2 wanted), {} (static); worst tracked vs fresh landmark error {:.2} % of the box diagonal",
        frames.len(),
        one.palm_runs(),
        two.palm_runs(),
        still.palm_runs(),
        100.0 * worst
    );
    assert_eq!(one.palm_runs(), 1);
    assert_eq!(two.palm_runs(), frames.len());
    assert_eq!(still.palm_runs(), frames.len());
}

#[test]
fn lost_hand_triggers_palm_detection_again() {
    // The hand, then 3 black frames (lost: presence below 0.5, no palm), then the hand again.
    let photo = RgbaImage::load(root().join("assets/images/hand_dst.jpg")).expect("photo");
    let mut models = Models {
        palm: model("palm_detection_lite"),
        landmark: model("hand_landmark_lite"),
    };
    let hand = warp(&photo, &camera(0), 640, 480).expect("frame");
    let black = RgbaImage::new(640, 480).expect("black");
    let mut tracker = HandTracker::new(HandTrackerOptions {
        num_hands: 1,
        ..Default::default()
    });
    let mut counts = Vec::new();
    for frame in [&hand, &hand, &black, &black, &black, &hand, &hand] {
        let n = models.process(&mut tracker, frame).unwrap().len();
        counts.push((n, tracker.palm_runs()));
    }
    println!("(hands, palm runs so far) per frame: {counts:?}");
    // Frame 2: tracked ROI finds no hand (1 palm run so far); frames 3, 4: palm detection runs
    // and finds nothing; frame 5: palm detection finds the hand; frame 6: tracked.
    assert_eq!(
        counts,
        vec![(1, 1), (1, 1), (0, 1), (0, 2), (0, 3), (1, 4), (1, 4)]
    );
}

#[test]
fn two_hands_are_tracked_after_one_palm_run() {
    // Two hands in view, two wanted: palm detection on the first frame only, both hands tracked
    // through 8 frames of a slow pan (the photo shifted 2 px per frame, edges replicated).
    let photo = RgbaImage::load(root().join("assets/images/two_hands.jpg")).expect("photo");
    let (w, h) = (photo.width, photo.height);
    let mut models = Models {
        palm: model("palm_detection_lite"),
        landmark: model("hand_landmark_lite"),
    };
    let mut tracker = HandTracker::new(HandTrackerOptions::default());
    let mut labels = Vec::new();
    for i in 0..8 {
        let dx = 2.0 * i as f32 / w as f32;
        let shift = CropTransform::rect(dx, 0.0, 1.0 + dx, 1.0);
        let frame = warp(&photo, &shift, w, h).expect("frame");
        let hands = models.process(&mut tracker, &frame).unwrap();
        assert_eq!(hands.len(), 2, "frame {i}");
        let mut l: Vec<&str> = hands.iter().map(|x| x.handedness.as_str()).collect();
        l.sort();
        labels.push(l);
    }
    println!(
        "8 frames, 2 hands each, palm runs {}; labels {:?}",
        tracker.palm_runs(),
        labels[0]
    );
    assert_eq!(tracker.palm_runs(), 1);
    assert!(labels.iter().all(|l| l == &["Left", "Right"]));
}
