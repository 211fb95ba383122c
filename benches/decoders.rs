//! Criterion benchmarks of heimdall-vision's decoders on the CPU (one thread), on real model
//! outputs: each model runs once at setup (heimdall's CPU backend) on a real photo, then only
//! the decoding is timed: BlazeFace (896 boxes + weighted NMS), palm detection (2016 boxes +
//! weighted NMS), hand landmarks (+ the next ROI), OIDv4 objects (1917 boxes × 24 classes +
//! NMS), DB text post-processing on a 640×640 probability map, style output to RGBA (256×256).
//!
//! `cargo bench -p heimdall-benches --bench decoders`

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use heimdall::cpu::{CpuModel, CpuOptions};
use heimdall::{LoadOptions, load_model};
use heimdall_vision::hands::{
    decode_hand_landmarks, hand_landmark_crop, landmarks_to_roi, palm_decoder, palm_detection_crop,
    palm_to_roi,
};
use heimdall_vision::objects::ObjectDetector;
use heimdall_vision::style::stylized_to_rgba;
use heimdall_vision::text::{DbPostProcess, TEXT_NORMALIZATION};
use heimdall_vision::{BlazeFaceDecoder, Crop, ImageToTensor, Normalization, RgbaImage};

fn image(name: &str) -> RgbaImage {
    RgbaImage::load(
        heimdall_testkit::workspace_root()
            .join("assets/images")
            .join(name),
    )
    .expect("image")
}

fn run(path: PathBuf, shapes: Vec<(String, Vec<usize>)>, inputs: &[&[f32]]) -> Vec<Vec<f32>> {
    let graph = load_model(
        path,
        LoadOptions {
            input_shapes: shapes,
            ..Default::default()
        },
    )
    .expect("load");
    let mut m = CpuModel::compile(&graph, CpuOptions { threads: 2 }).expect("compile");
    for (i, x) in inputs.iter().enumerate() {
        m.set_input(i, x).expect("input");
    }
    m.run().expect("run");
    (0..m.output_shapes().len())
        .map(|i| m.output(i).unwrap().to_vec())
        .collect()
}

fn tensor(img: &RgbaImage, crop: &Crop, n: &Normalization, shape: [usize; 3]) -> Vec<f32> {
    img.to_tensor(crop, n, shape).expect("preprocess")
}

/// Every decoder's benchmark, each model run once on its photo first.
fn decoders(c: &mut Criterion) {
    faces(c);
    hands(c);
    objects(c);
    text(c);
    style(c);
}

/// A MediaPipe model's path (bundled, cached, or fetched now).
fn model_path(name: &str) -> PathBuf {
    heimdall_testkit::model_path(name).expect("model")
}

/// BlazeFace on the astronaut portrait.
fn faces(c: &mut Criterion) {
    let astronaut = image("astronaut.png");
    let crop = ImageToTensor::new(
        None,
        (512, 512),
        (128, 128),
        true,
        heimdall_vision::Border::ZERO,
    );
    let x = tensor(
        &astronaut,
        &crop.sample,
        &Normalization::MINUS_ONE_TO_ONE,
        [128, 128, 3],
    );
    let face = run(model_path("face_detection_short_range"), vec![], &[&x]);
    let blazeface = BlazeFaceDecoder::short_range();
    assert_eq!(blazeface.decode(&face[0], &face[1]).unwrap().len(), 1);
    c.bench_function("blazeface decode + weighted NMS (896 boxes)", |b| {
        b.iter(|| {
            blazeface
                .decode(black_box(&face[0]), black_box(&face[1]))
                .unwrap()
        })
    });
}

/// Palm detection and hand landmarks on a hand photo.
fn hands(c: &mut Criterion) {
    let hand = image("hand_dst.jpg");
    let (w, h) = (hand.width, hand.height);
    let pc = palm_detection_crop(w, h);
    let x = tensor(
        &hand,
        &pc.sample,
        &Normalization::ZERO_TO_ONE,
        [192, 192, 3],
    );
    let palm = run(model_path("palm_detection_lite"), vec![], &[&x]);
    let pd = palm_decoder();
    let palms = pd.decode(&palm[0], &palm[1]).unwrap();
    assert!(!palms.is_empty());
    c.bench_function("palm decode + weighted NMS + ROI (2016 boxes)", |b| {
        b.iter(|| {
            let d = pd.decode(black_box(&palm[0]), black_box(&palm[1])).unwrap();
            d.iter()
                .map(|p| palm_to_roi(&p.transformed(&pc.transform), w, h))
                .collect::<Vec<_>>()
        })
    });
    let roi = palm_to_roi(&palms[0].transformed(&pc.transform), w, h);
    let lc = hand_landmark_crop(&roi, w, h);
    let x = tensor(
        &hand,
        &lc.sample,
        &Normalization::ZERO_TO_ONE,
        [224, 224, 3],
    );
    let lm = run(model_path("hand_landmark_lite"), vec![], &[&x]);
    c.bench_function("hand landmarks decode + next ROI", |b| {
        b.iter(|| {
            let hl = decode_hand_landmarks(black_box(&lm[0]), &lm[1], &lm[2], &lc).unwrap();
            landmarks_to_roi(&hl.points, w, h)
        })
    });
}

/// OIDv4 objects on the cat.
fn objects(c: &mut Criterion) {
    let cat = image("chelsea.jpg");
    let det = ObjectDetector::oidv4();
    let oc = det.crop(cat.width, cat.height);
    let x = tensor(
        &cat,
        &oc.sample,
        &Normalization::MINUS_ONE_TO_ONE,
        [300, 300, 3],
    );
    let model = heimdall_testkit::npm_model_path("object_detection_ssd_mobilenetv2_oidv4_fp16")
        .expect("model");
    let obj = run(model, vec![], &[&x]);
    assert!(!det.decode(&obj[0], &obj[1], &oc).unwrap().is_empty());
    c.bench_function(
        "OIDv4 objects decode + NMS (1917 boxes x 24 classes)",
        |b| {
            b.iter(|| {
                det.decode(black_box(&obj[0]), black_box(&obj[1]), &oc)
                    .unwrap()
            })
        },
    );
}

/// DB text post-processing on the book page stretched to 640x640 (BGR as RapidOCR).
fn text(c: &mut Criterion) {
    let mut page = image("page.png");
    for px in page.data.chunks_exact_mut(4) {
        px.swap(0, 2);
    }
    let x = tensor(&page, &Crop::FULL, &TEXT_NORMALIZATION, [640, 640, 3]);
    let model = heimdall_testkit::onnx_model_path("PP-OCRv6_det_small").expect("model");
    let prob = run(model, vec![("x".into(), vec![1, 3, 640, 640])], &[&x]);
    let db = DbPostProcess::default();
    let n = db
        .decode(&prob[0], (640, 640), (page.width, page.height))
        .unwrap()
        .len();
    assert!(n > 0);
    c.bench_function("DB text post-processing (640x640 map)", |b| {
        b.iter(|| {
            db.decode(black_box(&prob[0]), (640, 640), (page.width, page.height))
                .unwrap()
        })
    });
}

/// Style output to pixels.
fn style(c: &mut Criterion) {
    let styled: Vec<f32> = (0..256 * 256 * 3)
        .map(|i| (i % 997) as f32 / 997.0)
        .collect();
    c.bench_function("style output to RGBA (256x256)", |b| {
        b.iter(|| stylized_to_rgba(black_box(&styled), 256, 256).unwrap())
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(2));
    targets = decoders
}
criterion_main!(benches);
