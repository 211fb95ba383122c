//! Soak, short version (`docs/soak.md` has the hour): the `emoji` example (the binary
//! `cargo test` built; with `--test soak` alone, build it first: `cargo build --release -p
//! heimdall-examples --example emoji`) runs headless for two minutes at 320×240 with a sample every 10 s
//! (`--duration 120 --sample-every 10`, as `scripts/soak.py` runs it), and the test checks:
//! - the run exits 0 and wrote a sample every 10 s, each with frames, memory and DNN results;
//! - after a one-minute warm-up, resident memory grew by less than [`MAX_RSS_GROWTH_MB`] and
//!   the GPU memory allocated through wgpu by less than [`MAX_GPU_GROWTH_PCT`] (each end the
//!   median of two samples, as `soak.py` takes three);
//! - what the app keeps for its final report is bounded (the kept counts stay below their caps).
//!
//! `HEIMDALL_SOAK_MAX_GROWTH_MB=M` replaces the RSS limit (e.g. 0 to see the test fail);
//! `HEIMDALL_SKIP_GPU=1` skips it.

use std::process::Command;

mod common;
use common::{example_binary, log_of, root};

/// Limit on RSS growth between the ends after the warm-up (the medians of the first two and the
/// last two samples, 40 s apart), MB. It fails a leak of more than some 5.5 MB a minute: a
/// camera frame (300 kB at 320×240) kept every second frame, a model's output kept per result,
/// a texture, buffer or shader per frame on lavapipe's host memory. Memory still settles for
/// minutes (bounded logs filling: the last 2,000 face results, the coordinator's timeline
/// strings), so two minutes cannot see a slow leak; the hour does (docs/soak.md). Measured on
/// lavapipe (docs/soak.md): 1.5 MB in this test at 741 MB RSS, before the fix of lavapipe's
/// shader leak; 2.4 MB at 400 MB after it, 1.3 MB with the timeline's ring allocated up front.
/// (The limit was 0.5 % of RSS, 3.7 MB when it was set; the fix halved RSS, and that
/// percentage with it.)
const MAX_RSS_GROWTH_MB: f64 = 3.7;

/// Limit on the growth of the GPU memory allocated through wgpu (all of it: Bevy's staging and
/// uniform buffers come and go by a few hundred kB, some 2 % of ~20 MB; heimdall's own part
/// does not move at all, which the test checks separately).
const MAX_GPU_GROWTH_PCT: f64 = 5.0;

/// Run length and sampling (seconds).
const DURATION_S: f64 = 120.0;
const SAMPLE_EVERY_S: f64 = 10.0;
const WARMUP_S: f64 = 60.0;

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// The median of the first `k` values and that of the last `k`.
fn ends(v: &[f64], k: usize) -> (f64, f64) {
    assert!(
        v.len() >= 2 * k && k > 0,
        "{} samples for ends of {k}",
        v.len()
    );
    (median(&v[..k]), median(&v[v.len() - k..]))
}

/// Growth from the first `k` values to the last `k` (medians).
fn growth_mb(v: &[f64], k: usize) -> f64 {
    let (a, b) = ends(v, k);
    b - a
}

/// The same in percent.
fn growth_pct(v: &[f64], k: usize) -> f64 {
    let (a, b) = ends(v, k);
    100.0 * (b - a) / a
}

fn num(v: &serde_json::Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_f64()
}

#[test]
fn growth_is_measured_between_the_ends() {
    // The judgement itself: a flat noisy series passes, a steady leak fails.
    let flat = [770.0, 771.5, 769.8, 770.9, 770.2, 771.0];
    assert!(growth_mb(&flat, 2).abs() < MAX_RSS_GROWTH_MB);
    // 6 MB a minute (1 MB a 10-s sample): 4 MB between the ends' medians, 40 s apart.
    let leak: Vec<f64> = (0..6).map(|i| 400.0 + 1.0 * i as f64).collect();
    assert!(
        growth_mb(&leak, 2) > MAX_RSS_GROWTH_MB,
        "{}",
        growth_mb(&leak, 2)
    );
}

#[test]
fn two_minutes_headless_stay_flat() {
    if common::skipping_gpu() {
        return;
    }
    let exe = example_binary("emoji");
    assert!(exe.exists(), "{} was not built", exe.display());
    let out = std::env::temp_dir().join(format!("heimdall-soak-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let output = Command::new(&exe)
        .args([
            "--headless",
            "--resolution",
            "320x240",
            "--fps",
            "30",
            "--save-every",
            "0",
            "--duration",
            &DURATION_S.to_string(),
            "--sample-every",
            &SAMPLE_EVERY_S.to_string(),
            "--out",
            out.to_str().expect("utf-8 path"),
        ])
        .current_dir(root())
        .env_remove("BEVY_ASSET_ROOT")
        .output()
        .expect("running the emoji example");
    let log = log_of(&output);
    assert!(output.status.success(), "emoji failed:\n{log}");
    let text = std::fs::read_to_string(out.join("soak.jsonl")).expect("soak.jsonl");
    let rows: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert!(
        rows.first().is_some_and(|r| r.get("machine").is_some()),
        "{} predates the soak sampler: cargo build --release -p heimdall-examples --example emoji",
        exe.display()
    );
    let expected = (DURATION_S / SAMPLE_EVERY_S) as usize;
    assert!(
        rows.len() + 1 >= expected,
        "{} samples, expected about {expected}",
        rows.len()
    );
    for r in &rows {
        let n = num(r, &["frame_interval_ms", "count"]).unwrap_or(0.0);
        assert!(n > 0.0, "no frame in a window: {r}");
        assert!(num(r, &["memory", "rss_kb"]).is_some(), "no RSS: {r}");
        let results: f64 = r["models"]
            .as_object()
            .map(|m| m.values().filter_map(|v| v["results"].as_f64()).sum())
            .unwrap_or(0.0);
        assert!(results > 0.0, "no DNN result in a window: {r}");
    }
    let warm: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|r| num(r, &["t_s"]).is_some_and(|t| t >= WARMUP_S))
        .collect();
    assert!(warm.len() >= 4, "{} samples after the warm-up", warm.len());
    let rss: Vec<f64> = warm
        .iter()
        .map(|r| num(r, &["memory", "rss_kb"]).expect("rss") / 1024.0)
        .collect();
    let limit = std::env::var("HEIMDALL_SOAK_MAX_GROWTH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(MAX_RSS_GROWTH_MB);
    let g = growth_mb(&rss, 2);
    eprintln!("RSS after the warm-up (MB): {rss:.1?}; growth {g:.2} MB");
    assert!(
        g < limit,
        "RSS grew {g:.2} MB after a {WARMUP_S} s warm-up (limit {limit} MB): {rss:.1?}"
    );
    if let Some(gpu) = warm
        .iter()
        .map(|r| num(r, &["gpu_memory", "allocated"]))
        .collect::<Option<Vec<f64>>>()
    {
        let g = growth_pct(&gpu, 2);
        assert!(g < MAX_GPU_GROWTH_PCT, "GPU memory grew {g:.2} %: {gpu:?}");
        let own: Vec<f64> = warm
            .iter()
            .filter_map(|r| num(r, &["gpu_memory", "heimdall"]))
            .collect();
        assert!(
            own.windows(2).all(|w| w[1] <= w[0]),
            "heimdall's GPU memory grew: {own:?}"
        );
    }
    let kept = &rows.last().expect("a sample")["kept"];
    for key in ["frame_ms", "gpu_frames", "pacer"] {
        let n = kept[key].as_u64().unwrap_or(u64::MAX);
        assert!(n <= 40_500, "{key}: {n} kept");
    }
    let _ = std::fs::remove_dir_all(&out);
}
