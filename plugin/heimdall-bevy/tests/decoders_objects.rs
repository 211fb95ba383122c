//! [`ObjectDecoder`] in a headless app on the GPU (lavapipe) against MediaPipe's OIDv4 SSD
//! (`assets/references/objects.json`, as the CLI's `detect_objects` test): the bundled images
//! fed as a still camera, one after the other; detections matched by IoU ≥ 0.5 with the same
//! label, precision and recall ≥ 0.9 over all images, at the upstream score threshold 0.5 and at
//! 0.2 (reference scores ≥ 0.2); the brick wall gives nothing.

mod common;
mod decoders_support;

use std::time::Duration;

use bevy::prelude::*;
use decoders_support as support;
use heimdall_bevy::prelude::*;

/// Per detector, over all images: matched detections, ours, the reference's, and the least IoU
/// of a match.
type Totals = (usize, usize, usize, f64);

#[test]
fn objects_match_mediapipe() {
    if common::skip_gpu() {
        common::skipping("HEIMDALL_SKIP_GPU=1");
        return;
    }
    let refs = support::reference("objects");
    let images = refs["images"].as_object().expect("images");
    let mut app = support::app();
    let path = heimdall_testkit::npm_model_path("object_detection_ssd_mobilenetv2_oidv4_fp16")
        .expect("the OIDv4 model");
    let model = support::load_model(&mut app, &path, Vec::new());
    let first = images.keys().next().expect("an image");
    let (camera, source) = support::spawn_camera(&mut app, support::image(first));
    let detectors = spawn_detectors(&mut app, &model, camera);
    let mut totals: Vec<Totals> = vec![(0usize, 0usize, 0usize, 1.0f64); detectors.len()];
    for (name, want) in images {
        let img = support::image(name);
        let size = img.size();
        let from = support::show(&mut app, (camera, &source), img);
        for (&(key, min_score, detector), total) in detectors.iter().zip(&mut totals) {
            let got = support::wait_for::<DetectedObjects>(
                &mut app,
                detector,
                from,
                Duration::from_secs(300),
                |o| o.frame_index,
            )
            .unwrap_or_else(|| panic!("{name}: no objects decoded"));
            let want: Vec<_> = want[key]
                .as_array()
                .unwrap()
                .iter()
                .filter(|o| o["score"].as_f64().unwrap() >= min_score)
                .collect();
            match_image(&format!("{key} {name}"), size, &want, &got, total);
        }
    }
    for (&(key, _, _), &(matched, ours, theirs, min_iou)) in detectors.iter().zip(&totals) {
        let precision = matched as f32 / ours.max(1) as f32;
        let recall = matched as f32 / theirs.max(1) as f32;
        println!(
            "{key}: {matched} matched (min IoU {min_iou:.4}), {ours} ours, {theirs} reference: P {precision:.3}, R {recall:.3}"
        );
        assert!(theirs > 0);
        assert!(
            precision >= 0.9 && recall >= 0.9,
            "{key}: P {precision} R {recall}"
        );
    }
}

/// Two object DNNs of `model` on `camera`, full frame: the upstream score threshold, and 0.2 (a
/// denser check of the same decoding); each with its reference key and threshold.
fn spawn_detectors(
    app: &mut App,
    model: &Handle<DnnModel>,
    camera: Entity,
) -> Vec<(&'static str, f64, Entity)> {
    [("objects", 0.5), ("objects_min_score_0.2", 0.2)]
        .into_iter()
        .map(|(key, min_score)| {
            let decoder = ObjectDecoder::default()
                .with_min_score(min_score as f32)
                .unwrap();
            let e = app
                .world_mut()
                .spawn(
                    Dnn::new(model.clone(), camera)
                        .with_crop(InputCrop::Full)
                        .with_normalization(Normalization::MINUS_ONE_TO_ONE)
                        .with_decoder(decoder),
                )
                .id();
            (key, min_score, e)
        })
        .collect()
}

/// Matches one image's reference objects `want` to the decoded `got` (an image of `size` px;
/// `what`: the detector's key and the image), each to its best unused detection of the same label
/// at IoU ≥ 0.5, into `total`; where the reference has none, there must be none.
fn match_image(
    what: &str,
    size: Vec2,
    want: &[&serde_json::Value],
    got: &DetectedObjects,
    total: &mut Totals,
) {
    total.2 += want.len();
    total.1 += got.objects.len();
    let mut used = vec![false; got.objects.len()];
    for w in want {
        let wb = support::xywh(&w["box"]);
        let best = got
            .objects
            .iter()
            .enumerate()
            .filter(|(i, o)| !used[*i] && w["label"] == o.label.as_str())
            .map(|(i, o)| {
                let b = o.bbox.scaled(size);
                let ob = [b.x as f64, b.y as f64, b.w as f64, b.h as f64];
                (i, common::iou(ob, wb))
            })
            .max_by(|a, b| a.1.total_cmp(&b.1));
        match best {
            Some((i, iou)) if iou >= 0.5 => {
                used[i] = true;
                total.0 += 1;
                total.3 = total.3.min(iou);
                println!(
                    "{what}: {} IoU {iou:.4}, score {:.4} (MediaPipe {:.4})",
                    w["label"],
                    got.objects[i].score,
                    w["score"].as_f64().unwrap()
                );
            }
            _ => println!("{what}: {} not matched; ours {:?}", w["label"], got.objects),
        }
    }
    if want.is_empty() {
        println!("{what}: {} objects (reference: none)", got.objects.len());
        assert!(got.objects.is_empty(), "{what}: {:?}", got.objects);
    }
}

#[test]
fn bad_scores_are_typed_errors() {
    assert!(ObjectDecoder::default().with_min_score(1.5).is_err());
    assert!(ObjectDecoder::default().with_min_score(f32::NAN).is_err());
    assert!(ObjectDecoder::default().with_min_score(0.0).is_ok());
}
