//! End to end on real models (heimdall's CPU backend) and real pixels: the face detector on the
//! astronaut portrait (TFLite's golden outputs and our own preprocessing) against the hand
//! annotation, on frames of the bundled clip against its ground truth, the face mesh on the
//! detection's crop, and the selfie mask.
//!
//! Independent references: the hand-annotated face box (`assets/clips/astronaut_pan/clip.json`,
//! made by looking at the image), TFLite's own outputs (`assets/goldens/`), and the clip's
//! geometric ground truth. Thresholds: IoU ≥ 0.7 on the portrait, IoU ≥ 0.5 on ≥ 90% of clip
//! frames (the ground truth of a rolled frame is the bounding box of the rolled annotation, a
//! little larger than an upright detector box).

use std::path::{Path, PathBuf};

use heimdall::cpu::{CpuModel, CpuOptions};
use heimdall::{LoadOptions, load_model};
use heimdall_testkit::Clip;
use heimdall_vision::face_mesh::FACE_LANDMARK_INPUT;
use heimdall_vision::{
    BlazeFaceDecoder, Border, Crop, Detection, Normalization, Rect, RgbaImage, Vec2,
    decode_face_mesh, decode_mask, face_landmark_roi,
};

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

fn portrait() -> RgbaImage {
    RgbaImage::load(root().join("assets/images/astronaut.png")).expect("portrait")
}

/// The hand-annotated face box of the portrait, in its uv.
fn annotation_uv() -> Rect {
    let clip = Clip::load(root().join("assets/clips/astronaut_pan")).expect("clip");
    clip.face_box_px().scaled(Vec2::splat(1.0 / 512.0))
}

/// Detects faces in `image` (letterboxed into 128x128), returned in the image's uv.
fn detect(detector: &mut CpuModel, image: &RgbaImage) -> Vec<Detection> {
    let letterbox = Crop::letterbox(image.width, image.height, 128, 128);
    let input = image
        .to_tensor(&letterbox, &Normalization::MINUS_ONE_TO_ONE, [128, 128, 3])
        .expect("preprocess");
    let out = run(detector, &input);
    let dets = BlazeFaceDecoder::short_range()
        .decode(&out[0], &out[1])
        .expect("decode");
    dets.iter()
        .map(|d| d.transformed(&letterbox.transform))
        .collect()
}

#[test]
fn portrait_detection_matches_the_annotation() {
    let annotation = annotation_uv();
    let decoder = BlazeFaceDecoder::short_range();

    // 1. TFLite's own outputs (golden) on the 128x128 input (a square image: the input's uv is
    //    the portrait's uv).
    let g = heimdall_testkit::goldens_dir("face_detection_short_range").join("astronaut");
    let out0 = heimdall::npy::read_npy(g.join("output_0.npy"))
        .unwrap()
        .data;
    let out1 = heimdall::npy::read_npy(g.join("output_1.npy"))
        .unwrap()
        .data;
    let golden = decoder.decode(&out0, &out1).unwrap();
    assert_eq!(golden.len(), 1, "{golden:#?}");
    let iou_golden = golden[0].bbox.iou(&annotation);
    println!(
        "golden outputs: score {:.3}, box {:?} px, IoU with the annotation {iou_golden:.3}",
        golden[0].score,
        golden[0].bbox.scaled(Vec2::splat(512.0))
    );
    assert!(iou_golden >= 0.7, "{iou_golden}");

    // 2. Our CPU backend on the golden input: the same detection.
    let mut detector = model("face_detection_short_range");
    let input = heimdall::npy::read_npy(g.join("input_0.npy")).unwrap().data;
    let out = run(&mut detector, &input);
    let ours = decoder.decode(&out[0], &out[1]).unwrap();
    assert_eq!(ours.len(), 1);
    assert!(ours[0].bbox.iou(&golden[0].bbox) > 0.999);
    assert!((ours[0].score - golden[0].score).abs() < 1e-4);

    // 3. Our own preprocessing (bilinear, no antialiasing) from the PNG.
    let dets = detect(&mut detector, &portrait());
    assert_eq!(dets.len(), 1, "{dets:#?}");
    let iou = dets[0].bbox.iou(&annotation);
    println!(
        "own preprocessing: score {:.3}, IoU {iou:.3}",
        dets[0].score
    );
    assert!(iou >= 0.7, "{iou}");
    // Keypoints: the eyes inside the box's upper half, right eye (subject's) on the image left.
    let b = annotation;
    for k in &dets[0].keypoints[..2] {
        assert!(
            k.x > b.x && k.x < b.x + b.w && k.y > b.y && k.y < b.y + 0.5 * b.h,
            "{k:?}"
        );
    }
    assert!(dets[0].keypoints[0].x < dets[0].keypoints[1].x);
}

#[test]
fn face_mesh_on_the_detection_crop() {
    let image = portrait();
    let mut detector = model("face_detection_short_range");
    let dets = detect(&mut detector, &image);
    assert_eq!(dets.len(), 1);
    let roi = face_landmark_roi(&dets[0], image.width, image.height);
    let crop = Crop::rotated(&roi, image.width, image.height, Border::Clamp);
    let n = FACE_LANDMARK_INPUT as usize;
    let input = image
        .to_tensor(&crop, &Normalization::ZERO_TO_ONE, [n, n, 3])
        .expect("preprocess");
    let mut landmark = model("face_landmark");
    let out = run(&mut landmark, &input);
    let mesh =
        decode_face_mesh(&out[0], &out[1], &crop.transform, image.width, image.height).unwrap();
    let annotation = annotation_uv();
    let (right, left) = mesh.eye_centers();
    let pose = mesh.head_pose();
    let anchor = mesh.anchor();
    println!(
        "presence {:.3}; eyes {:?} {:?} px; roll {:.1}° yaw {:.1}° pitch {:.1}°; anchor {:?}, {:.1} px; mesh box IoU with annotation {:.3}",
        mesh.presence,
        right * 512.0,
        left * 512.0,
        pose.roll.to_degrees(),
        pose.yaw.to_degrees(),
        pose.pitch.to_degrees(),
        anchor.center * 512.0,
        anchor.size_px,
        mesh.bounding_box().iou(&annotation),
    );
    assert!(mesh.presence > 0.5, "{}", mesh.presence);
    for eye in [right, left] {
        let b = annotation;
        assert!(
            eye.x > b.x && eye.x < b.x + b.w && eye.y > b.y && eye.y < b.y + b.h,
            "{eye:?}"
        );
    }
    assert!(right.x < left.x);
    // The eyes against the pupils marked by hand on the portrait (zoomed 10x): right (203.5,
    // 101), left (246, 103) px, within 4 px; the roll against the pupils' line, atan(2 / 42.5) =
    // 2.7°, within 3°. And against the detector's eye keypoints (an independent model, coarser:
    // its eye line is rolled about 10°) within 6 px.
    let (hand_right, hand_left) = (Vec2::new(203.5, 101.0), Vec2::new(246.0, 103.0));
    assert!((right * 512.0).distance(hand_right) < 4.0);
    assert!((left * 512.0).distance(hand_left) < 4.0);
    let hand_roll = (hand_left - hand_right).to_angle();
    println!(
        "roll: mesh {:.1}°, hand {:.1}°, detector keypoints {:.1}°",
        pose.roll.to_degrees(),
        hand_roll.to_degrees(),
        roi.rotation.to_degrees()
    );
    assert!((pose.roll - hand_roll).abs().to_degrees() < 3.0);
    assert!(((right - dets[0].keypoints[0]) * 512.0).length() < 6.0);
    assert!(((left - dets[0].keypoints[1]) * 512.0).length() < 6.0);
    // A near-frontal portrait: small yaw and pitch; the anchor in the annotated box.
    assert!(pose.yaw.abs().to_degrees() < 20.0 && pose.pitch.abs().to_degrees() < 25.0);
    let c = anchor.center;
    assert!(c.x > annotation.x && c.x < annotation.x + annotation.w);
    assert!(c.y > annotation.y && c.y < annotation.y + annotation.h);
    assert!(anchor.size_px > 70.0 && anchor.size_px < 160.0);
}

#[test]
fn clip_frames_detection_vs_ground_truth() {
    let clip = Clip::load(root().join("assets/clips/astronaut_pan")).expect("clip");
    let mut detector = model("face_detection_short_range");
    let mut ious = Vec::new();
    let mut frame = clip.frame(0);
    // Every frame (about 1 s on the CPU backend).
    for i in 0..clip.len() {
        let Some(truth) = clip.ground_truth(i) else {
            continue;
        };
        clip.frame_into(i, &mut frame);
        let dets = detect(&mut detector, &frame);
        let best = dets
            .iter()
            .map(|d| d.bbox.iou(&truth))
            .fold(0.0f32, f32::max);
        ious.push((i, best, dets.len()));
    }
    let good = ious.iter().filter(|(_, iou, _)| *iou >= 0.5).count();
    let mut sorted: Vec<f32> = ious.iter().map(|x| x.1).collect();
    sorted.sort_by(f32::total_cmp);
    println!(
        "{} frames with a face: IoU >= 0.5 in {good}; min {:.3}, median {:.3}, max {:.3}",
        ious.len(),
        sorted[0],
        sorted[sorted.len() / 2],
        sorted[sorted.len() - 1]
    );
    for (i, iou, n) in &ious {
        if *iou < 0.6 || *n != 1 {
            println!("  frame {i}: IoU {iou:.3}, {n} detections");
        }
    }
    let single = ious.iter().filter(|x| x.2 == 1).count();
    println!("exactly one detection in {single} of {} frames", ious.len());
    assert!(ious.len() >= 30);
    assert!(good * 10 >= ious.len() * 9, "{good}/{}", ious.len());
}

#[test]
fn clip_frames_face_mesh_follows_the_camera_roll() {
    // The mesh's roll on the upright portrait, then on every 10th frame: the face on screen is
    // rolled by (portrait roll − camera roll), known from the clip. Eyes must lie in the ground
    // truth box. This exercises the rotated crop with real rotations (±10°).
    let clip = Clip::load(root().join("assets/clips/astronaut_pan")).expect("clip");
    let mut detector = model("face_detection_short_range");
    let mut landmark = model("face_landmark");
    let mut mesh_of = |image: &RgbaImage| {
        let dets = detect(&mut detector, image);
        let det = dets.first()?;
        let roi = face_landmark_roi(det, image.width, image.height);
        let crop = Crop::rotated(&roi, image.width, image.height, Border::Clamp);
        let n = FACE_LANDMARK_INPUT as usize;
        let input = image
            .to_tensor(&crop, &Normalization::ZERO_TO_ONE, [n, n, 3])
            .expect("preprocess");
        let out = run(&mut landmark, &input);
        decode_face_mesh(&out[0], &out[1], &crop.transform, image.width, image.height).ok()
    };
    let base_roll = mesh_of(&portrait())
        .expect("portrait mesh")
        .head_pose()
        .roll;
    let mut checked = 0;
    let mut worst = 0.0f32;
    for i in (0..clip.len()).step_by(10) {
        let Some(truth) = clip.ground_truth(i) else {
            continue;
        };
        let frame = clip.frame(i);
        let mesh = mesh_of(&frame).unwrap_or_else(|| panic!("frame {i}: no face"));
        assert!(mesh.presence > 0.5, "frame {i}: presence {}", mesh.presence);
        let (r, l) = mesh.eye_centers();
        for e in [r, l] {
            let inside = e.x > truth.x
                && e.x < truth.x + truth.w
                && e.y > truth.y
                && e.y < truth.y + truth.h;
            assert!(inside, "frame {i}: eye {e:?} outside {truth:?}");
        }
        let want = base_roll - clip.camera(i).rotation;
        let err = (mesh.head_pose().roll - want).abs().to_degrees();
        worst = worst.max(err);
        checked += 1;
    }
    println!("{checked} frames: eyes inside the ground truth; worst roll error {worst:.2}°");
    assert!(checked >= 25);
    assert!(worst < 3.0, "{worst}");
}

#[test]
fn selfie_mask_separates_person_and_background() {
    let image = portrait();
    let input = image
        .to_tensor(&Crop::FULL, &Normalization::ZERO_TO_ONE, [256, 256, 3])
        .expect("preprocess");
    let mut seg = model("selfie_segmentation");
    let out = run(&mut seg, &input);
    let mask = decode_mask(&out[0], 256, 256).unwrap().resized(512, 512);
    // Face centre (annotation centre, ~(226, 134)) and the orange suit (~(200, 400)): person.
    let face = mask.get(226, 134).unwrap();
    let suit = mask.get(200, 400).unwrap();
    // Plain wall between the head and the shuttle (~(330, 60)): background.
    let wall = mask.get(330, 60).unwrap();
    println!("mask: face {face:.3}, suit {suit:.3}, wall {wall:.3}");
    assert!(face > 0.5 && suit > 0.5, "{face} {suit}");
    assert!(wall < 0.5, "{wall}");
}
