//! The `emoji` example, run headless as a user would (the binary `cargo test` built):
//! - on the GPU backend, face boxes overlap the bundled clip's ground truth (IoU ≥ 0.5 in
//!   ≥ 90 % of the frames that have a face result) and frames (at the run's resolution) and
//!   `stats.json` are written;
//! - with the CPU backend forced (the no-compute path), it runs with exactly one warning;
//! - the binary copied elsewhere finds its assets through `BEVY_ASSET_ROOT`, and exits non-zero
//!   within seconds, naming the file, when an asset is missing or a model is corrupt.
//!
//! With `HEIMDALL_EMOJI_OUT=DIR` the first test checks a run made beforehand (the README's main
//! command, `cargo run --release --example emoji -- --headless --frames 300 --out DIR`) instead.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

mod common;
use common::{example_binary, log_of, root, skip_gpu};

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("heimdall-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Runs `exe` with `args` from `cwd`, with `BEVY_ASSET_ROOT` set or not.
fn run(exe: &Path, args: &[&str], cwd: &Path, asset_root: Option<&Path>) -> (Output, Duration) {
    run_env(exe, args, cwd, asset_root, &[])
}

/// [`run`] with environment variables set.
fn run_env(
    exe: &Path,
    args: &[&str],
    cwd: &Path,
    asset_root: Option<&Path>,
    env: &[(&str, &str)],
) -> (Output, Duration) {
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .current_dir(cwd)
        .envs(env.iter().copied())
        .env_remove("XDG_RUNTIME_DIR");
    match asset_root {
        Some(r) => cmd.env("BEVY_ASSET_ROOT", r),
        None => cmd.env_remove("BEVY_ASSET_ROOT"),
    };
    let start = Instant::now();
    let out = cmd.output().expect("running the emoji example");
    (out, start.elapsed())
}

fn run_emoji(out: &Path, extra: &[&str]) -> String {
    run_emoji_env(out, extra, &[])
}

fn run_emoji_env(out: &Path, extra: &[&str], env: &[(&str, &str)]) -> String {
    let exe = example_binary("emoji");
    assert!(exe.exists(), "{} was not built", exe.display());
    let mut args = vec!["--headless", "--out", out.to_str().expect("utf-8 path")];
    args.extend_from_slice(extra);
    let (output, _) = run_env(&exe, &args, &root(), None, env);
    let log = log_of(&output);
    assert!(output.status.success(), "emoji failed:\n{log}");
    assert!(
        !log.contains("XDG_RUNTIME_DIR"),
        "a spurious runtime-dir error on a machine without a display:\n{log}"
    );
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
        let iou = iou(
            [v(best, 0), v(best, 1), v(best, 2), v(best, 3)],
            [v(t, 0), v(t, 1), v(t, 2), v(t, 3)],
        );
        good += usize::from(iou >= 0.5);
    }
    (good, with_face)
}

/// `--record-run`: the run's scenario and replay load, check and simulate (per frame, in the
/// plugin's order, with the emulated display's blanks), every DNN of the app is in them with
/// its requests and completes inferences in the simulation, and `stats.json` has each DNN's
/// coordinator latency (the one the simulator reports).
fn the_recording_simulates(out: &Path, s: &serde_json::Value) {
    use heimdall_coordinator::sim::{Decisions, Replay, Scenario, SimOptions, simulate_opts};
    let sc = Scenario::from_file(&out.join("scenario.json")).expect("scenario.json");
    let replay = Replay::from_file(&out.join("replay.json")).expect("replay.json");
    replay.check(&sc).expect("the replay fits the scenario");
    assert_eq!(sc.decisions, Decisions::PerFrame);
    assert!(sc.dnn_work_first, "the plugin's default order");
    assert!(!replay.frame_start_ms.is_empty() && !replay.dnn_submit_ms.is_empty());
    assert!(
        replay.vsync_phase_ms.is_some(),
        "the emulated display's blanks are in the recording"
    );
    let presented = replay.present_ms.iter().filter(|p| p.is_some()).count();
    assert!(
        2 * presented >= replay.frame_start_ms.len(),
        "each frame's presentation is in the recording ({presented} of {})",
        replay.frame_start_ms.len()
    );
    let policy = heimdall_coordinator::policy_by_name("max_total_utility").unwrap();
    let opts = SimOptions {
        replay: Some(replay),
        ..SimOptions::default()
    };
    let sim = simulate_opts(&sc, policy, &opts, |_| {}).expect("simulates");
    for model in [
        "face_detection_short_range",
        "face_landmark",
        "selfie_segmentation",
    ] {
        let d = sc.dnns.iter().find(|d| d.name == model);
        let requests = d.map_or(0, |d| d.request.times(f64::INFINITY).len());
        assert!(requests > 0, "{model}: no requests recorded");
        let done = sim.report.dnn(model).map_or(0, |d| d.completed);
        assert!(done > 0, "{model}: no inference in the simulation");
        let n = s["models"][model]["admission_to_last_op_ms"]["count"]
            .as_u64()
            .unwrap_or(0);
        assert!(n > 0, "{model}: no coordinator latency in stats.json");
    }
}

#[test]
fn emoji_headless_faces_match_the_ground_truth() {
    if skip_gpu() && std::env::var_os("HEIMDALL_EMOJI_OUT").is_none() {
        common::skipping("HEIMDALL_SKIP_GPU=1");
        return;
    }
    let premade = std::env::var_os("HEIMDALL_EMOJI_OUT").is_some();
    let out = match std::env::var_os("HEIMDALL_EMOJI_OUT") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let out = temp("emoji");
            run_emoji(
                &out,
                &[
                    "--frames",
                    "150",
                    "--fps",
                    "15",
                    "--save-every",
                    "50",
                    "--resolution",
                    "320x180",
                    "--record-run",
                    // On lavapipe the CPU is as fast as the "GPU" and the coordinator moves every
                    // model there: this test is about the GPU path.
                    "--no-offload",
                ],
            );
            out
        }
    };
    let s = stats(&out);
    if out.join("scenario.json").exists() {
        the_recording_simulates(&out, &s);
    }
    assert_eq!(s["backend"], "gpu", "{s:#}");
    if let Some(startup) = s.get("startup") {
        let ready = startup["models_ready_ms"].as_f64().unwrap_or(0.0);
        assert!(ready > 0.0, "when the models were ready: {startup:#}");
    }
    let frames = s["frames"].as_u64().unwrap_or(0);
    assert!(frames >= 100, "{frames} frames");
    // Every frame asked for is written before the exit (frames 0, 50 and 100 of 150; a run
    // made beforehand with the README's command: 0, 10, ..., 290).
    let asked = s["screenshots"]["frames"].as_u64();
    assert_eq!(
        asked,
        Some(3).filter(|_| !premade).or(asked),
        "{}",
        s["screenshots"]
    );
    assert_eq!(Some(common::pngs(&out) as u64), asked, "PNG frames written");
    for model in [
        "face_detection_short_range",
        "face_landmark",
        "selfie_segmentation",
    ] {
        let n = s["models"][model]["count"].as_u64().unwrap_or(0);
        assert!(n > 0, "no {model} results: {s:#}");
        // From the GPU, not only from the CPU the coordinator may move a model to (a run made
        // beforehand with offloading may have moved them all: then only reported).
        let gpu = common::gpu_results(&s, model);
        eprintln!("{model}: {gpu} of {n} results from the GPU");
        if s["args"]["no_offload"] == true {
            assert!(
                gpu > 0,
                "no {model} result from the GPU ({n} results): {s:#}"
            );
        }
    }
    // The whole run: no wgpu validation error, no panic caught, no device lost.
    let faults = &s["faults"];
    assert_eq!(faults["validation_errors"], 0, "{faults:#}");
    assert_eq!(faults["panics"], 0, "{faults:#}");
    assert_eq!(faults["devices_lost"], 0, "{faults:#}");
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
    if common::no_render_device() {
        return;
    }
    let out = temp("emoji-cpu");
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
            "--resolution",
            "320x180",
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

/// Intersection over union of `[x, y, w, h]` boxes.
fn iou(a: [f64; 4], b: [f64; 4]) -> f64 {
    let ix = (a[0] + a[2]).min(b[0] + b[2]) - a[0].max(b[0]);
    let iy = (a[1] + a[3]).min(b[1] + b[3]) - a[1].max(b[1]);
    let inter = ix.max(0.0) * iy.max(0.0);
    let union = a[2] * a[3] + b[2] * b[3] - inter;
    if union <= 0.0 { 0.0 } else { inter / union }
}

/// The saved frames are at the run's resolution.
#[test]
fn frames_have_the_runs_resolution() {
    if common::skipping_gpu() {
        return;
    }
    let out = temp("emoji-size");
    run_emoji(
        &out,
        &[
            "--frames",
            "25",
            "--save-every",
            "10",
            "--resolution",
            "256x144",
        ],
    );
    // Frames 0, 10 and 20 of 25: each written before the exit.
    assert_eq!(common::pngs(&out), 3);
    let png = out.join("frame_00010.png");
    let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("{}: {e}", png.display()));
    let img = heimdall_vision::RgbaImage::decode(&bytes).expect("a PNG");
    assert_eq!((img.width, img.height), (256, 144));
}

/// The binary copied to another folder and run from a third one finds the assets through
/// `BEVY_ASSET_ROOT`; pointed at an empty folder it exits non-zero within 60 s naming the
/// missing file.
#[test]
fn a_moved_binary_finds_its_assets_through_bevy_asset_root() {
    if common::no_render_device() {
        return;
    }
    let exe = example_binary("emoji");
    let base = temp("emoji-moved");
    let (bin_dir, run_dir, empty) = (base.join("bin"), base.join("run"), base.join("empty"));
    for d in [&bin_dir, &run_dir, &empty] {
        std::fs::create_dir_all(d).unwrap();
    }
    let moved = bin_dir.join(exe.file_name().unwrap());
    std::fs::copy(&exe, &moved).unwrap();
    let out = base.join("out");
    let mut args = vec![
        "--headless",
        "--frames",
        "12",
        "--save-every",
        "5",
        "--resolution",
        "160x90",
        "--out",
    ];
    args.push(out.to_str().unwrap());
    if skip_gpu() {
        args.push("--force-cpu");
    }
    let (o, _) = run(&moved, &args, &run_dir, Some(&root()));
    assert!(o.status.success(), "{}", log_of(&o));
    assert!(out.join("stats.json").exists());
    // Frames 0, 5 and 10 of 12, each written before the exit.
    assert_eq!(common::pngs(&out), 3, "frames written");

    let (o, took) = run(&moved, &args, &run_dir, Some(&empty));
    let log = log_of(&o);
    assert!(!o.status.success(), "ran without assets:\n{log}");
    assert!(took < Duration::from_secs(60), "took {took:?}");
    assert!(log.contains("clips/astronaut_pan/clip.json"), "{log}");
    let _ = std::fs::remove_dir_all(&base);
}

/// A corrupt model file: the app does not wait forever for it; headless, it exits non-zero
/// within 60 s with the file's name and the reason.
#[test]
fn a_corrupt_model_fails_fast_naming_the_file() {
    if common::no_render_device() {
        return;
    }
    let base = temp("emoji-corrupt");
    let assets = base.join("assets");
    std::fs::create_dir_all(assets.join("models")).unwrap();
    std::fs::create_dir_all(assets.join("images")).unwrap();
    let src = root().join("assets");
    copy_dir(&src.join("clips"), &assets.join("clips"));
    std::fs::copy(
        src.join("images/astronaut.png"),
        assets.join("images/astronaut.png"),
    )
    .unwrap();
    for m in ["face_detection_short_range", "selfie_segmentation"] {
        let f = format!("models/{m}.tflite");
        std::fs::copy(src.join(&f), assets.join(&f)).unwrap();
    }
    std::fs::write(
        assets.join("models/face_landmark.tflite"),
        vec![0x5Au8; 4096],
    )
    .unwrap();
    let mut args = vec!["--headless", "--frames", "60", "--resolution", "160x90"];
    if skip_gpu() {
        args.push("--force-cpu");
    }
    let (o, took) = run(&example_binary("emoji"), &args, &base, Some(&base));
    let log = log_of(&o);
    assert!(
        !o.status.success(),
        "a corrupt model did not fail the run:\n{log}"
    );
    assert!(took < Duration::from_secs(60), "took {took:?}");
    assert!(log.contains("face_landmark.tflite"), "{log}");
    let _ = std::fs::remove_dir_all(&base);
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// With `--synced-background` the picture on screen is the frame the face result drawn on it
/// came from (skew 0 on every frame); without it the newest frame is shown and runs ahead.
#[test]
fn synced_background_shows_the_results_frame() {
    if common::no_render_device() {
        return;
    }
    let mut skews = Vec::new();
    for synced in [false, true] {
        let out = temp(if synced {
            "emoji-synced"
        } else {
            "emoji-unsynced"
        });
        let mut args = vec![
            "--frames",
            "80",
            "--save-every",
            "0",
            "--resolution",
            "160x90",
        ];
        if synced {
            args.push("--synced-background");
        }
        if skip_gpu() {
            args.push("--force-cpu");
        }
        run_emoji(&out, &args);
        let s = stats(&out);
        let skew = &s["display_skew_frames"];
        assert!(skew["frames"].as_u64().unwrap_or(0) >= 20, "{skew}");
        skews.push(skew["max"].as_u64().expect("max skew"));
    }
    assert!(
        skews[0] > 0,
        "the unsynced picture never ran ahead of its results"
    );
    assert_eq!(skews[1], 0, "a synced background lagged or led its results");
}

/// Under the least phone's limits (`HEIMDALL_MOBILE_LIMITS=baseline`: 4 storage buffers per
/// shader stage, no timestamp queries, 128 invocations per work group) the app runs: each
/// model whose kernels need more than the device allows is known before compiling and runs on
/// the CPU, with the reason in `stats.json` (`cpu_fallback`); no frame is timed by timestamps;
/// Bevy's own device has 4 storage buffers per stage too, and the scene is drawn; no
/// validation error.
#[test]
fn emoji_runs_under_a_phones_limits() {
    if common::skipping_gpu() {
        return;
    }
    let out = temp("emoji-mobile");
    run_emoji_env(
        &out,
        &[
            "--frames",
            "60",
            "--fps",
            "15",
            "--save-every",
            "30",
            "--resolution",
            "320x180",
        ],
        &[("HEIMDALL_MOBILE_LIMITS", "baseline")],
    );
    let s = stats(&out);
    assert_eq!(s["backend"], "gpu", "{s:#}");
    assert!(
        s["adapter"]
            .as_str()
            .is_some_and(|a| a.contains("4 storage buffers per stage")),
        "{}",
        s["adapter"]
    );
    assert_eq!(
        s["timed_frames"], 0,
        "no timestamps under the mobile profile"
    );
    for model in [
        "face_detection_short_range",
        "face_landmark",
        "selfie_segmentation",
    ] {
        let m = &s["models"][model];
        assert!(
            m["count"].as_u64().unwrap_or(0) > 0,
            "no {model} results: {s:#}"
        );
        let why = m["cpu_fallback"].as_str().unwrap_or("");
        assert!(
            why.contains("storage buffers per shader stage"),
            "{model}: {m:#}"
        );
    }
    assert_eq!(
        s["bevy_device"]["max_storage_buffers_per_shader_stage"], 4,
        "Bevy's device: {}",
        s["bevy_device"]
    );
    assert_eq!(s["faults"]["validation_errors"], 0, "{:#}", s["faults"]);
    assert_eq!(common::pngs(&out), 2, "frames 0 and 30 written");
    // The last frame shows a picture (the clip, the emoji), not the clear colour.
    let last = out.join("frame_00030.png");
    let frame = image::open(&last).expect("frame 30").to_rgb8();
    let first = frame.pixels().next().copied();
    let others = frame.pixels().filter(|p| Some(**p) != first).count();
    assert!(
        others * 2 > frame.pixels().len(),
        "{}: only {others} pixels differ from the first",
        last.display()
    );
}
