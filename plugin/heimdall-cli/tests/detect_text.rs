//! `heimdall detect text` against RapidOCR 3.10.0's detection-only output with its default det
//! settings (`assets/references/text.json`, `scripts/make_pipeline_references.py`) on CPU, GPU
//! f32 and GPU f16: polygons matched one to one by IoU ≥ 0.5, F1 ≥ 0.9 on every image; the
//! negative image (a brick wall) gives no text; matched boxes' scores (mean probability) within
//! 0.02 of RapidOCR's (the reference pairs each box with its own score: RapidOCR's output pairs
//! its sorted boxes with unsorted scores).

mod common;

use common::{backends, detect, floats, reference};
use heimdall_vision::Vec2;
use heimdall_vision::text::convex_polygon_iou;

fn polygon(v: &serde_json::Value) -> Vec<Vec2> {
    v.as_array()
        .expect("polygon")
        .iter()
        .map(|p| {
            let p = floats(p);
            Vec2::new(p[0], p[1])
        })
        .collect()
}

#[test]
fn text_matches_rapidocr() {
    let refs = reference("text");
    let images = refs["images"].as_object().expect("images");
    for (backend, flags) in backends() {
        for (image, want) in images {
            let score = |t: &serde_json::Value| t["score"].as_f64().unwrap() as f32;
            let want_scores: Vec<f32> =
                want["text"].as_array().unwrap().iter().map(score).collect();
            let want: Vec<Vec<Vec2>> = want["text"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| polygon(&t["polygon"]))
                .collect();
            let got = detect("text", image, flags);
            let got_scores: Vec<f32> = got["text"].as_array().unwrap().iter().map(score).collect();
            let got: Vec<Vec<Vec2>> = got["text"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| polygon(&t["polygon"]))
                .collect();
            if want.is_empty() {
                assert!(got.is_empty(), "{image} {backend}: {got:?}");
                println!("{image} {backend}: no text, as RapidOCR");
                continue;
            }
            // Greedy one-to-one matching, best IoU first.
            let mut pairs: Vec<(f32, usize, usize)> = Vec::new();
            for (i, w) in want.iter().enumerate() {
                for (j, g) in got.iter().enumerate() {
                    pairs.push((convex_polygon_iou(w, g), i, j));
                }
            }
            pairs.sort_by(|a, b| b.0.total_cmp(&a.0));
            let (mut used_w, mut used_g) = (vec![false; want.len()], vec![false; got.len()]);
            let mut ious = Vec::new();
            let mut worst_score = 0.0f32;
            for (iou, i, j) in pairs {
                if iou >= 0.5 && !used_w[i] && !used_g[j] {
                    used_w[i] = true;
                    used_g[j] = true;
                    ious.push(iou);
                    worst_score = worst_score.max((want_scores[i] - got_scores[j]).abs());
                }
            }
            let tp = ious.len() as f32;
            let (p, r) = (tp / got.len().max(1) as f32, tp / want.len() as f32);
            let f1 = if tp > 0.0 { 2.0 * p * r / (p + r) } else { 0.0 };
            let min_iou = ious.iter().copied().fold(1.0f32, f32::min);
            println!(
                "{image} {backend}: {} ours, {} RapidOCR, {} matched (min IoU {min_iou:.3}, max score difference {worst_score:.4}): P {p:.3} R {r:.3} F1 {f1:.3}",
                got.len(),
                want.len(),
                ious.len()
            );
            assert!(f1 >= 0.9, "{image} {backend}: F1 {f1}");
            assert!(
                worst_score <= 0.02,
                "{image} {backend}: score difference {worst_score}"
            );
        }
    }
}
