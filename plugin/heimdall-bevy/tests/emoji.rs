//! The `emoji` example, run headless as a user would (the binary `cargo test` built):
//! - on the GPU backend, face boxes overlap the bundled clip's ground truth (IoU ≥ 0.5 in
//!   ≥ 90 % of the frames that have a face result) and frames and `stats.json` are written;
//! - with the CPU backend forced (the no-compute path), it runs with exactly one warning.
//!
//! With `HEIMDALL_EMOJI_OUT=DIR` the first test checks a run made beforehand (CI runs
//! `cargo run --release --example emoji -- --headless --frames 300 --out DIR`) instead.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn run_emoji(out: &Path, extra: &[&str]) -> String {
    let exe = common::emoji_binary();
    assert!(exe.exists(), "{} was not built", exe.display());
    let output = Command::new(&exe)
        .args(["--headless", "--out"])
        .arg(out)
        .args(extra)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .output()
        .expect("running the emoji example");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "emoji failed:\n{log}");
    log
}

fn stats(out: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(out.join("stats.json")).expect("stats.json");
    serde_json::from_str(&text).expect("valid JSON")
}

fn boxes_match_ground_truth(stats: &serde_json::Value) -> (usize, usize) {
    let mut with_face = 0;
    let mut good = 0;
    for f in stats["faces"].as_array().expect("faces") {
        let (Some(b), Some(t)) = (f["boxes"].as_array(), f["ground_truth"].as_array()) else {
            continue;
        };
        let Some(best) = b.first().and_then(|b| b.as_array()) else {
            continue;
        };
        with_face += 1;
        let v = |a: &Vec<serde_json::Value>, i: usize| a[i].as_f64().unwrap();
        let iou = common::iou(
            [v(best, 0), v(best, 1), v(best, 2), v(best, 3)],
            [v(t, 0), v(t, 1), v(t, 2), v(t, 3)],
        );
        good += usize::from(iou >= 0.5);
    }
    (good, with_face)
}

#[test]
fn emoji_headless_faces_match_the_ground_truth() {
    if common::skip_gpu() && std::env::var_os("HEIMDALL_EMOJI_OUT").is_none() {
        eprintln!("HEIMDALL_SKIP_GPU=1: skipping");
        return;
    }
    let out = match std::env::var_os("HEIMDALL_EMOJI_OUT") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let out = std::env::temp_dir().join(format!("heimdall-emoji-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&out);
            run_emoji(
                &out,
                &["--frames", "150", "--fps", "15", "--save-every", "50"],
            );
            out
        }
    };
    let s = stats(&out);
    assert_eq!(s["backend"], "gpu", "{s:#}");
    let frames = s["frames"].as_u64().unwrap_or(0);
    assert!(frames >= 100, "{frames} frames");
    let pngs = std::fs::read_dir(&out)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "png"))
        })
        .count();
    assert!(pngs >= 2, "{pngs} PNG frames written");
    for model in [
        "face_detection_short_range",
        "face_landmark",
        "selfie_segmentation",
    ] {
        let n = s["models"][model]["count"].as_u64().unwrap_or(0);
        assert!(n > 0, "no {model} results: {s:#}");
    }
    let (good, with_face) = boxes_match_ground_truth(&s);
    assert!(with_face >= 10, "only {with_face} face results");
    let rate = good as f64 / with_face as f64;
    eprintln!(
        "IoU >= 0.5 in {good}/{with_face} face results ({:.1} %)",
        rate * 100.0
    );
    assert!(
        rate >= 0.9,
        "IoU >= 0.5 in only {good}/{with_face} face results"
    );
}

#[test]
fn forced_cpu_backend_runs_the_example_with_one_warning() {
    let out = std::env::temp_dir().join(format!("heimdall-emoji-cpu-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let log = run_emoji(
        &out,
        &[
            "--force-cpu",
            "--frames",
            "60",
            "--fps",
            "15",
            "--save-every",
            "0",
        ],
    );
    let s = stats(&out);
    assert_eq!(s["backend"], "cpu (forced)");
    let warnings: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("heimdall"))
        .collect();
    assert_eq!(warnings.len(), 1, "warnings:\n{}", warnings.join("\n"));
    assert!(warnings[0].contains("CPU"), "{}", warnings[0]);
    let detections = &s["models"]["face_detection_short_range"];
    let n = detections["count"].as_u64().unwrap_or(0);
    assert!(n > 0, "no detection results on the CPU backend: {s:#}");
    assert_eq!(detections["cpu_results"].as_u64(), Some(n));
}
