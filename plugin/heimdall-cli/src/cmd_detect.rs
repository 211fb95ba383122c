//! `heimdall detect <faces|hands|objects|text> IMAGE [--backend cpu|gpu] [--json] [--out PNG]`:
//! a whole vision pipeline (pre-processing, model(s), decoding) on a still image; results in
//! pixels of the input image.

use std::path::PathBuf;

use anyhow::Context;
use heimdall_vision::hands::{
    HAND_CONNECTIONS, HandTracker, HandTrackerOptions, decode_hand_landmarks, hand_landmark_crop,
    palm_decoder, palm_detection_crop,
};
use heimdall_vision::image::{ImageToTensor, draw};
use heimdall_vision::objects::ObjectDetector;
use heimdall_vision::text::{DbPostProcess, DetResize, TEXT_INPUT_BGR, TEXT_NORMALIZATION};
use heimdall_vision::{BlazeFaceDecoder, Border, Crop, Normalization, RgbaImage, Vec2};
use serde_json::{Value, json};

use crate::Backend;
use crate::gpu_backend::PrecisionArg;
use crate::vision_runner::{Frame, VisionRunner};

/// What to detect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// Faces (`face_detection_short_range`): box and 6 keypoints.
    Faces,
    /// Hands (MediaPipe's palm detection + hand landmarks): 21 landmarks, handedness.
    Hands,
    /// Objects (MediaPipe's SSD MobileNetV2, Open Images, 24 classes).
    Objects,
    /// Text regions (PP-OCRv6 det with DB post-processing, as RapidOCR).
    Text,
}

/// Which hand models.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum HandModel {
    /// `palm_detection_lite` + `hand_landmark_lite` (`model_complexity=0`).
    Lite,
    /// `palm_detection_full` + `hand_landmark_full` (`model_complexity=1`, MediaPipe's default).
    Full,
}

/// Arguments of `detect`.
#[derive(clap::Args)]
pub struct DetectArgs {
    /// What to detect.
    #[arg(value_enum)]
    kind: Kind,
    /// The image (PNG or JPEG).
    image: PathBuf,
    /// Backend.
    #[arg(long, value_enum, default_value = "cpu")]
    backend: Backend,
    /// Storage precision on the GPU backend.
    #[arg(long, value_enum, default_value = "f32")]
    precision: PrecisionArg,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Draw the results on the image into this PNG.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Hand models.
    #[arg(long, value_enum, default_value = "full")]
    hand_model: HandModel,
    /// Use this model file instead of the pipeline's (the detector for faces, hands, objects).
    #[arg(long)]
    model: Option<PathBuf>,
    /// Keep objects scoring at least this (default: the upstream graph's 0.5).
    #[arg(long)]
    min_score: Option<f32>,
}

const GREEN: [u8; 4] = [0, 255, 0, 255];
const RED: [u8; 4] = [255, 0, 0, 255];

fn px(p: Vec2, image: &RgbaImage) -> Vec2 {
    p * image.size()
}

fn mediapipe_model(name: &str) -> anyhow::Result<PathBuf> {
    crate::assets::model(name)
}

/// Runs `detect`.
pub fn run(args: &DetectArgs) -> anyhow::Result<()> {
    let image = RgbaImage::load(&args.image)
        .with_context(|| format!("reading the image {}", args.image.display()))?;
    let runner = VisionRunner::new(args.backend, args.precision)?;
    let mut frame = Frame::new(image);
    let mut canvas = frame.image.clone();
    let (key, items) = match args.kind {
        Kind::Faces => ("faces", faces(args, &runner, &mut frame, &mut canvas)?),
        Kind::Hands => ("hands", hands(args, &runner, &mut frame, &mut canvas)?),
        Kind::Objects => ("objects", objects(args, &runner, &mut frame, &mut canvas)?),
        Kind::Text => ("text", text(&runner, &mut frame, &mut canvas)?),
    };
    if let Some(out) = &args.out {
        canvas
            .save_png(out)
            .with_context(|| format!("writing {}", out.display()))?;
    }
    if args.json {
        println!("{}", serde_json::to_string(&json!({ key: items }))?);
    } else {
        print_table(key, &items);
    }
    Ok(())
}

fn print_table(key: &str, items: &[Value]) {
    println!("{} {key}", items.len());
    for (i, it) in items.iter().enumerate() {
        let label = it
            .get("label")
            .or_else(|| it.get("handedness"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let score = it.get("score").and_then(Value::as_f64).unwrap_or(0.0);
        let region = it.get("box").or_else(|| it.get("polygon")).cloned();
        let region = region.map(|r| serde_json::to_string(&round_all(&r)).unwrap_or_default());
        println!(
            "  {i:>3} {label:<12} {score:.3} {}",
            region.unwrap_or_default()
        );
    }
}

fn round_all(v: &Value) -> Value {
    match v {
        Value::Array(a) => Value::Array(a.iter().map(round_all).collect()),
        Value::Number(n) => json!((n.as_f64().unwrap_or(0.0) * 10.0).round() / 10.0),
        other => other.clone(),
    }
}

fn faces(
    args: &DetectArgs,
    runner: &VisionRunner,
    frame: &mut Frame,
    canvas: &mut RgbaImage,
) -> anyhow::Result<Vec<Value>> {
    let path = match &args.model {
        Some(p) => p.clone(),
        None => mediapipe_model("face_detection_short_range")?,
    };
    let mut model = runner.load(&path, Normalization::MINUS_ONE_TO_ONE, Vec::new(), 2)?;
    let [h, w, _] = model.input_shape();
    let (fw, fh) = (frame.image.width, frame.image.height);
    let crop = ImageToTensor::new(None, (fw, fh), (w as u32, h as u32), true, Border::ZERO);
    let out = model.run(runner, frame, &crop.sample)?;
    let dets = BlazeFaceDecoder::short_range().decode(&out[0], &out[1])?;
    let mut items = Vec::new();
    for d in dets.iter().map(|d| d.transformed(&crop.transform)) {
        let b = d.bbox.scaled(frame.image.size());
        draw::rect(canvas, b.min(), b.max(), GREEN);
        let kps: Vec<[f32; 2]> = d
            .keypoints
            .iter()
            .map(|&k| px(k, &frame.image).to_array())
            .collect();
        for k in &kps {
            draw::dot(canvas, Vec2::from(*k), 2, RED);
        }
        items.push(
            json!({"score": d.score, "box": [b.x, b.y, b.x + b.w, b.y + b.h], "keypoints": kps}),
        );
    }
    Ok(items)
}

fn hands(
    args: &DetectArgs,
    runner: &VisionRunner,
    frame: &mut Frame,
    canvas: &mut RgbaImage,
) -> anyhow::Result<Vec<Value>> {
    let (palm_name, landmark_name) = match args.hand_model {
        HandModel::Lite => ("palm_detection_lite", "hand_landmark_lite"),
        HandModel::Full => ("palm_detection_full", "hand_landmark_full"),
    };
    let palm_path = match &args.model {
        Some(p) => p.clone(),
        None => mediapipe_model(palm_name)?,
    };
    let mut palm = runner.load(&palm_path, Normalization::ZERO_TO_ONE, Vec::new(), 2)?;
    let mut landmark = runner.load(
        &mediapipe_model(landmark_name)?,
        Normalization::ZERO_TO_ONE,
        Vec::new(),
        3,
    )?;
    let (fw, fh) = (frame.image.width, frame.image.height);
    let decoder = palm_decoder();
    let mut tracker = HandTracker::new(HandTrackerOptions {
        track: false,
        ..Default::default()
    });
    let frame_cell = std::cell::RefCell::new(frame);
    let hands = tracker.process(
        (fw, fh),
        || -> anyhow::Result<_> {
            let crop = palm_detection_crop(fw, fh);
            let out = palm.run(runner, &mut frame_cell.borrow_mut(), &crop.sample)?;
            let dets = decoder.decode(&out[0], &out[1])?;
            Ok(dets
                .iter()
                .map(|d| d.transformed(&crop.transform))
                .collect())
        },
        |roi| {
            let crop = hand_landmark_crop(roi, fw, fh);
            let out = landmark.run(runner, &mut frame_cell.borrow_mut(), &crop.sample)?;
            Ok(decode_hand_landmarks(&out[0], &out[1], &out[2], &crop)?)
        },
    )?;
    let size = Vec2::new(fw as f32, fh as f32);
    let mut items = Vec::new();
    for h in &hands {
        let pts: Vec<[f32; 3]> = h
            .points
            .iter()
            .map(|p| [p.x * size.x, p.y * size.y, p.z])
            .collect();
        let b = h.bounding_box().scaled(size);
        for (a, c) in HAND_CONNECTIONS {
            draw::line(
                canvas,
                Vec2::new(pts[a][0], pts[a][1]),
                Vec2::new(pts[c][0], pts[c][1]),
                GREEN,
            );
        }
        for p in &pts {
            draw::dot(canvas, Vec2::new(p[0], p[1]), 2, RED);
        }
        items.push(json!({
            "score": h.presence,
            "handedness": h.handedness.as_str(),
            "handedness_score": h.handedness_score,
            "box": [b.x, b.y, b.x + b.w, b.y + b.h],
            "landmarks": pts,
        }));
    }
    Ok(items)
}

fn objects(
    args: &DetectArgs,
    runner: &VisionRunner,
    frame: &mut Frame,
    canvas: &mut RgbaImage,
) -> anyhow::Result<Vec<Value>> {
    let path = match &args.model {
        Some(p) => p.clone(),
        None => crate::assets::model("object_detection_ssd_mobilenetv2_oidv4_fp16")?,
    };
    let mut model = runner.load(&path, Normalization::MINUS_ONE_TO_ONE, Vec::new(), 2)?;
    let mut detector = ObjectDetector::oidv4();
    if let Some(s) = args.min_score {
        anyhow::ensure!((0.0..=1.0).contains(&s), "--min-score {s} is not in [0, 1]");
        detector = detector.with_min_score(s);
    }
    let crop = detector.crop(frame.image.width, frame.image.height);
    let out = model.run(runner, frame, &crop.sample)?;
    let size = frame.image.size();
    let mut items = Vec::new();
    for o in detector.decode(&out[0], &out[1], &crop)? {
        let b = o.bbox.scaled(size);
        draw::rect(canvas, b.min(), b.max(), GREEN);
        items.push(
            json!({"label": o.label, "score": o.score, "box": [b.x, b.y, b.x + b.w, b.y + b.h]}),
        );
    }
    Ok(items)
}

fn text(
    runner: &VisionRunner,
    frame: &mut Frame,
    canvas: &mut RgbaImage,
) -> anyhow::Result<Vec<Value>> {
    let (w, h) = (frame.image.width, frame.image.height);
    let (mw, mh) = DetResize::default().input_size(w, h).with_context(|| {
        format!("a {w}x{h} image: RapidOCR resizes or pads images with a side outside 30..2000 px or wider than 8:1 before det, which is not ported")
    })?;
    let path = crate::assets::model("PP-OCRv6_det_small")?;
    let shape = vec![1, 3, mh as usize, mw as usize];
    let mut model = runner.load(&path, TEXT_NORMALIZATION, vec![("x".into(), shape)], 1)?;
    let mut input = if TEXT_INPUT_BGR {
        let mut bgr = frame.image.clone();
        for px in bgr.data.chunks_exact_mut(4) {
            px.swap(0, 2);
        }
        Frame::new(bgr)
    } else {
        Frame::new(frame.image.clone())
    };
    let out = model.run(runner, &mut input, &Crop::FULL)?;
    let boxes = DbPostProcess::default().decode(&out[0], (mw as usize, mh as usize), (w, h))?;
    let mut items = Vec::new();
    for b in boxes {
        draw::polygon(canvas, &b.polygon, GREEN);
        let poly: Vec<[f32; 2]> = b.polygon.iter().map(|p| p.to_array()).collect();
        items.push(json!({"score": b.score, "polygon": poly}));
    }
    Ok(items)
}
