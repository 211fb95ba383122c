//! The `shopping` and `workspace` apps, run headless as a user would (the binaries `cargo test`
//! built) on their bundled clips at the clips' own size (320×180, so the render shows the camera
//! frame pixel for pixel where nothing virtual is drawn), rendered on lavapipe here, without the
//! overlay. The DNNs run on the plugin's CPU backend (`--force-cpu`): on a software rasteriser
//! that cannot hold the frame rate with a 3D scene, which DNNs the coordinator keeps on the GPU
//! changes from run to run, and these tests check the apps, not the scheduling:
//! - shopping: the tracked hand is where the clip's ground truth puts it, the couch is drawn
//!   (the saved frames differ from the camera picture inside the couch's screen box and match
//!   it far from any virtual content), and the scripted style events are answered;
//! - workspace: text and the hand are found where the ground truth puts them, the virtual page
//!   is drawn beside the text, and the pinching hand writes a stroke on it.
//!
//! One more run checks the apps' GPU path itself: shopping in the `fifo` mode (every inference
//! on the GPU, in request order, whatever the frame costs), where each of its DNNs must deliver
//! results computed on the GPU (none on the CPU) with no wgpu validation error.

use std::path::{Path, PathBuf};
use std::process::Command;

use heimdall_testkit::Clip;
use serde_json::Value;

mod common;
use common::{example_binary, log_of, root};

/// Runs an app headless into a fresh folder with its DNNs on the CPU backend; returns the
/// folder and `stats.json`.
fn run_app(name: &str, extra: &[&str]) -> (PathBuf, Value) {
    let mut args = vec!["--force-cpu"];
    args.extend_from_slice(extra);
    let (out, stats) = run_app_on(name, &args);
    assert_eq!(stats["backend"], "cpu (forced)", "{name}");
    (out, stats)
}

/// Runs an app headless into a fresh folder (the backend as `extra` says); returns the folder
/// and `stats.json`.
fn run_app_on(name: &str, extra: &[&str]) -> (PathBuf, Value) {
    let out = std::env::temp_dir().join(format!("heimdall-app-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let exe = example_binary(name);
    assert!(exe.exists(), "{} was not built", exe.display());
    let mut args = vec![
        "--headless",
        "--resolution",
        "320x180",
        "--fps",
        "30",
        "--save-every",
        "20",
        "--no-overlay",
        "--out",
        out.to_str().expect("utf-8 path"),
    ];
    args.extend_from_slice(extra);
    let output = Command::new(&exe)
        .args(&args)
        .current_dir(root())
        // The tests' model cache (the object and text detectors are fetched there when missing).
        .env(
            "HEIMDALL_CACHE_DIR",
            heimdall_testkit::ModelCache::workspace().dir,
        )
        .output()
        .expect("running the app");
    let log = log_of(&output);
    assert!(output.status.success(), "{name} failed:\n{log}");
    let text = std::fs::read_to_string(out.join("stats.json")).expect("stats.json");
    let stats: Value = serde_json::from_str(&text).expect("valid JSON");
    // No fault on the way (no wgpu validation error, no panic caught, no device lost).
    let faults = &stats["faults"];
    for counter in ["validation_errors", "panics", "devices_lost"] {
        assert_eq!(faults[counter], 0, "{name}: {faults:#}");
    }
    (out, stats)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The saved frames: (camera frame index, RGBA pixels), in order.
fn saved_frames(out: &Path) -> Vec<(usize, image::RgbaImage)> {
    let mut frames: Vec<(usize, image::RgbaImage)> = std::fs::read_dir(out)
        .expect("output folder")
        .filter_map(|e| {
            let p = e.ok()?.path();
            let name = p.file_name()?.to_str()?.to_string();
            let index = name
                .strip_prefix("frame_")?
                .strip_suffix(".png")?
                .parse()
                .ok()?;
            Some((index, image::open(&p).ok()?.to_rgba8()))
        })
        .collect();
    frames.sort_by_key(|f| f.0);
    frames
}

/// Mean absolute RGB difference (0–255) between a render and the clip frame it shows, over the
/// pixels of `region` (render uv `[x0, y0, x1, y1]`).
fn difference(render: &image::RgbaImage, clip: &image::RgbaImage, region: [f64; 4]) -> f64 {
    let (w, h) = (render.width() as f64, render.height() as f64);
    let (x0, x1) = (
        (region[0] * w).max(0.0) as u32,
        (region[2] * w).min(w) as u32,
    );
    let (y0, y1) = (
        (region[1] * h).max(0.0) as u32,
        (region[3] * h).min(h) as u32,
    );
    let (mut sum, mut n) = (0.0, 0usize);
    for y in y0..y1 {
        for x in x0..x1 {
            let (a, b) = (render.get_pixel(x, y), clip.get_pixel(x, y));
            sum += (0..3)
                .map(|c| (a[c] as f64 - b[c] as f64).abs())
                .sum::<f64>()
                / 3.0;
            n += 1;
        }
    }
    assert!(n > 0, "empty region {region:?}");
    sum / n as f64
}

#[test]
fn shopping_finds_the_hand_draws_the_couch_and_answers_style_events() {
    if common::skipping_gpu() {
        return;
    }
    let (out, stats) = run_app(
        "shopping",
        &["--frames", "150", "--events", "1", "--quality", "low"],
    );
    let hands = &stats["detections"]["hand"];
    assert!(
        f(&hands["truth_boxes_in_view"]) >= 10.0,
        "too few hand results: {hands}"
    );
    assert!(f(&hands["recall"]) >= 0.8, "hands vs ground truth: {hands}");
    assert!(
        f(&hands["landmark_error_p50"]) <= 0.06,
        "landmarks vs ground truth: {hands}"
    );
    let style = &stats["style_events"];
    assert!(
        f(&style["answered"]) >= 1.0,
        "no style event answered: {style}"
    );
    let couch = &stats["couch"];
    assert_eq!(
        couch["loaded"], true,
        "the couch model did not load: {couch}"
    );
    let b: Vec<f64> = couch["render_box_uv"]
        .as_array()
        .expect("the couch's screen box")
        .iter()
        .map(f)
        .collect();
    let clip = Clip::load(root().join("assets/clips/shopping_room")).expect("the clip");
    let frames = saved_frames(&out);
    let (index, last) = frames.last().expect("saved frames");
    let picture = clip.frame(index % clip.len());
    let picture = image::RgbaImage::from_raw(picture.width, picture.height, picture.data)
        .expect("clip frame");
    // Inside the couch's box: the couch (on the clip, the camera picture would be there).
    let inside = difference(last, &picture, [b[0], b[1], b[2], b[3]]);
    // The top right, above the couch and clear of the overlay (top left) and the catalogue
    // (bottom): the camera picture itself.
    let outside = difference(last, &picture, [0.6, 0.05, 0.95, (b[1] - 0.05).max(0.1)]);
    assert!(
        inside > 20.0 && outside < 6.0,
        "frame {index}: difference to the camera picture inside the couch box {inside:.1}, \
         outside {outside:.1} (box {b:?})"
    );
}

#[test]
fn workspace_finds_text_and_hand_places_the_page_and_writes() {
    if common::skipping_gpu() {
        return;
    }
    let (out, stats) = run_app("workspace", &["--frames", "240", "--text-side", "192"]);
    let text = &stats["detections"]["text"];
    assert!(f(&text["results"]) >= 5.0, "too few text results: {text}");
    assert!(f(&text["recall"]) >= 0.8, "text vs ground truth: {text}");
    let hands = &stats["detections"]["hand"];
    assert!(f(&hands["recall"]) >= 0.8, "hands vs ground truth: {hands}");
    let page = &stats["page"];
    assert_eq!(
        page["anchored"], true,
        "the page was never anchored: {page}"
    );
    let strokes = &stats["strokes"];
    assert!(
        f(&strokes["count"]) >= 1.0 && f(&strokes["points"]) >= 5.0,
        "no stroke written: {strokes}"
    );
    assert!(
        out.join("page_ink.png").exists(),
        "page_ink.png not written"
    );
}

#[test]
fn shopping_runs_every_dnn_on_the_gpu_in_fifo_mode() {
    if common::skipping_gpu() {
        return;
    }
    // 40 camera frames: on lavapipe the app renders about one frame a second with every DNN on
    // the GPU; each DNN is asked for a result on most frames.
    let (_, stats) = run_app_on(
        "shopping",
        &[
            "--frames",
            "40",
            "--warmup",
            "0",
            "--events",
            "1",
            "--quality",
            "low",
            "--mode",
            "fifo",
        ],
    );
    assert_eq!(stats["backend"], "gpu", "{stats:#}");
    let models = stats["models"].as_object().expect("per-model statistics");
    // The object detector, the person mask, the palm detector, the first hand's landmarks and
    // the style transfer (the second hand's landmarks run only when the clip shows two hands).
    for name in [
        "object_detection_ssd_mobilenetv2_oidv4_fp16",
        "selfie_segmentation",
        "palm_detection_lite",
        "multistyle26",
    ] {
        let m = &models[name];
        assert!(f(&m["count"]) >= 1.0, "{name}: no result: {m:#}");
        assert_eq!(
            f(&m["cpu_results"]),
            0.0,
            "{name}: results on the CPU: {m:#}"
        );
    }
    let hands: f64 = (models.iter())
        .filter(|(n, _)| n.starts_with("hand_landmark"))
        .map(|(_, m)| f(&m["count"]))
        .sum();
    let hands_on_cpu: f64 = (models.iter())
        .filter(|(n, _)| n.starts_with("hand_landmark"))
        .map(|(_, m)| f(&m["cpu_results"]))
        .sum();
    assert!(
        hands >= 1.0 && hands_on_cpu == 0.0,
        "hand landmarks: {models:#?}"
    );
}
