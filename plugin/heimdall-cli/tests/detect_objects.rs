//! `heimdall detect objects` against MediaPipe's OIDv4 SSD as its `ObjectDetectionOidV4Subgraph`
//! runs it (TFLite interpreter, MediaPipe's pre-processing and decoding written from the graph
//! in `scripts/make_pipeline_references.py`; `assets/references/objects.json`) on CPU, GPU f32
//! and GPU f16: matching by IoU ≥ 0.5 with the same label, precision and recall ≥ 0.9 over the
//! reference detections scoring ≥ 0.5, over all images; the negative image (a brick wall) gives
//! nothing. The same with the score threshold lowered to 0.2 (`--min-score 0.2`, reference
//! scores ≥ 0.2): a denser check of the same decoding.

mod common;

use common::{backends, box_iou, detect, floats, reference};

#[test]
fn objects_match_mediapipe() {
    compare("objects", 0.5, &[]);
}

#[test]
fn objects_match_mediapipe_at_min_score_0_2() {
    compare("objects_min_score_0.2", 0.2, &["--min-score", "0.2"]);
}

fn compare(key: &str, min_score: f64, extra: &[&str]) {
    let refs = reference("objects");
    let images = refs["images"].as_object().expect("images");
    for (backend, backend_flags) in backends() {
        let mut flags = backend_flags.to_vec();
        flags.extend_from_slice(extra);
        let flags = flags.as_slice();
        let (mut matched, mut ours_total, mut refs_total) = (0usize, 0usize, 0usize);
        for (image, want) in images {
            let want: Vec<_> = want[key]
                .as_array()
                .unwrap()
                .iter()
                .filter(|o| o["score"].as_f64().unwrap() >= min_score)
                .collect();
            let got = detect("objects", image, flags);
            let got = got["objects"].as_array().expect("objects").clone();
            refs_total += want.len();
            ours_total += got.len();
            let mut used = vec![false; got.len()];
            for w in &want {
                let wb = floats(&w["box"]);
                let best = got
                    .iter()
                    .enumerate()
                    .filter(|(i, g)| !used[*i] && g["label"] == w["label"])
                    .map(|(i, g)| (i, box_iou(&floats(&g["box"]), &wb)))
                    .max_by(|a, b| a.1.total_cmp(&b.1));
                if let Some((i, iou)) = best
                    && iou >= 0.5
                {
                    used[i] = true;
                    matched += 1;
                    println!(
                        "{image} {backend}: {} IoU {iou:.3}, score {:.3} (MediaPipe {:.3})",
                        w["label"],
                        got[i]["score"].as_f64().unwrap(),
                        w["score"].as_f64().unwrap()
                    );
                } else {
                    println!(
                        "{image} {backend}: {} not matched; ours {got:?}",
                        w["label"]
                    );
                }
            }
            if want.is_empty() {
                println!(
                    "{image} {backend}: {} detections (reference: none)",
                    got.len()
                );
            }
        }
        let precision = matched as f32 / ours_total.max(1) as f32;
        let recall = matched as f32 / refs_total.max(1) as f32;
        println!(
            "{key} {backend}: {matched} matched, {ours_total} ours, {refs_total} reference: P {precision:.3}, R {recall:.3}"
        );
        assert!(refs_total > 0);
        assert!(
            precision >= 0.9 && recall >= 0.9,
            "{backend}: P {precision} R {recall}"
        );
    }
}

#[test]
fn negative_image_has_no_objects() {
    for (backend, flags) in backends() {
        let got = detect("objects", "brick.jpg", flags);
        assert_eq!(
            got["objects"].as_array().unwrap().len(),
            0,
            "{backend}: {got}"
        );
    }
}
