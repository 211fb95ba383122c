//! [`TextDecoder`] in a headless app on the GPU (lavapipe) against RapidOCR 3.10.0's
//! detection-only output (`assets/references/text.json`, as the CLI's `detect_text` test): each
//! bundled image fed as a still camera to `PP-OCRv6_det_small` prepared by
//! [`text_detection_model`] for that frame size (RapidOCR's resize, RGB read as BGR); polygons
//! matched one to one by IoU ≥ 0.5, F1 ≥ 0.9 on every image, matched boxes' scores within 0.02;
//! the brick wall gives no text.

mod common;
mod decoders_support;

use std::time::Duration;

use bevy::prelude::*;
use decoders_support as support;
use heimdall_bevy::decoders::text::TEXT_NORMALIZATION;
use heimdall_bevy::prelude::*;
use heimdall_vision::Vec2;
use heimdall_vision::text::convex_polygon_iou;

fn polygon(v: &serde_json::Value) -> Vec<Vec2> {
    v.as_array()
        .expect("polygon")
        .iter()
        .map(|p| {
            let p = p.as_array().unwrap();
            Vec2::new(p[0].as_f64().unwrap() as f32, p[1].as_f64().unwrap() as f32)
        })
        .collect()
}

#[test]
fn text_matches_rapidocr() {
    if common::skip_gpu() {
        common::skipping("HEIMDALL_SKIP_GPU=1");
        return;
    }
    let refs = support::reference("text");
    let images = refs["images"].as_object().expect("images");
    let path = heimdall_testkit::onnx_model_path("PP-OCRv6_det_small").expect("the det model");
    let bytes = std::fs::read(&path).unwrap();
    let mut app = support::app();
    for (name, want) in images {
        let img = support::image(name);
        let model = text_detection_model(&bytes, UVec2::new(img.width, img.height))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let model = app
            .world_mut()
            .resource_mut::<Assets<DnnModel>>()
            .add(model);
        let (camera, _source) = support::spawn_camera(&mut app, img);
        let detector = app
            .world_mut()
            .spawn(
                Dnn::new(model, camera)
                    .with_crop(InputCrop::Full)
                    .with_normalization(TEXT_NORMALIZATION)
                    .with_decoder(TextDecoder::default()),
            )
            .id();
        let got = support::wait_for::<TextRegions>(
            &mut app,
            detector,
            0,
            Duration::from_secs(400),
            |t| t.frame_index,
        )
        .unwrap_or_else(|| panic!("{name}: no text decoded"));
        app.world_mut().despawn(detector);
        app.world_mut().despawn(camera);

        let want_scores: Vec<f32> = want["text"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["score"].as_f64().unwrap() as f32)
            .collect();
        let want: Vec<Vec<Vec2>> = want["text"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| polygon(&t["polygon"]))
            .collect();
        if want.is_empty() {
            println!("{name}: {} regions (RapidOCR: none)", got.regions.len());
            assert!(got.regions.is_empty(), "{name}: {:?}", got.regions);
            continue;
        }
        // Greedy one-to-one matching, best IoU first.
        let mut pairs: Vec<(f32, usize, usize)> = Vec::new();
        for (i, w) in want.iter().enumerate() {
            for (j, g) in got.regions.iter().enumerate() {
                pairs.push((convex_polygon_iou(w, &g.polygon), i, j));
            }
        }
        pairs.sort_by(|a, b| b.0.total_cmp(&a.0));
        let (mut used_w, mut used_g) = (vec![false; want.len()], vec![false; got.regions.len()]);
        let mut ious = Vec::new();
        let mut worst_score = 0.0f32;
        for (iou, i, j) in pairs {
            if iou >= 0.5 && !used_w[i] && !used_g[j] {
                used_w[i] = true;
                used_g[j] = true;
                ious.push(iou);
                worst_score = worst_score.max((want_scores[i] - got.regions[j].score).abs());
            }
        }
        let tp = ious.len() as f32;
        let (p, r) = (tp / got.regions.len().max(1) as f32, tp / want.len() as f32);
        let f1 = if tp > 0.0 { 2.0 * p * r / (p + r) } else { 0.0 };
        let min_iou = ious.iter().copied().fold(1.0f32, f32::min);
        println!(
            "{name}: {} ours, {} RapidOCR, {} matched (min IoU {min_iou:.3}, max score difference {worst_score:.4}): P {p:.3} R {r:.3} F1 {f1:.3}",
            got.regions.len(),
            want.len(),
            ious.len()
        );
        assert!(f1 >= 0.9, "{name}: F1 {f1}");
        assert!(
            worst_score <= 0.02,
            "{name}: score difference {worst_score}"
        );
    }
}

#[test]
fn odd_frame_sizes_are_typed_errors() {
    // RapidOCR pads or resizes such frames first (not ported): refused, no panic.
    for size in [
        UVec2::new(20, 400),
        UVec2::new(3000, 400),
        UVec2::new(900, 100),
    ] {
        assert!(text_detection_model(&[], size).is_err(), "{size}");
    }
    // Not a model: an import error.
    assert!(text_detection_model(b"not a model", UVec2::new(640, 480)).is_err());
}
