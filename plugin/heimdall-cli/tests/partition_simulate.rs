//! `heimdall partition` (chunks of a real model for a budget, profiles kept between runs) and
//! `heimdall simulate`'s noise, replay and ablation flags.

use std::path::PathBuf;
use std::process::Command;

use heimdall_coordinator::analyzer::{ModelProfile, ProfileKey, ProfileStore, StepCost};
use serde_json::Value;

fn heimdall(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_heimdall"))
        .args(args)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .output()
        .expect("run heimdall")
}

fn json(args: &[&str]) -> Value {
    let out = heimdall(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

fn model() -> PathBuf {
    heimdall_testkit::model_path("face_detection_short_range").unwrap_or_else(|e| panic!("{e}"))
}

fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("heimdall-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn chunks(doc: &Value) -> Vec<(u64, u64, f64, bool)> {
    doc["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["ops"][0].as_u64().unwrap(),
                c["ops"][1].as_u64().unwrap(),
                c["measured_ms"].as_f64().unwrap(),
                c["oversized"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// A stored profile of 68 steps of 1 ms each (the model's 68 CPU ops): budget 3.5 ms packs 3
/// steps per chunk; with 1.5 ms of relaxation the last 5 steps (5 ms <= 3.5 + 1.5) stay one
/// chunk: 21 chunks of 3 steps (0..63) and 63..68. Without relaxation: 22 of 3 and 66..68.
#[test]
fn partition_of_a_stored_profile_by_hand() {
    let path = model();
    let dir = temp("store-hand");
    let bytes = std::fs::read(&path).unwrap();
    let key = ProfileKey::new(&bytes, "cpu; cpu (1 thread)");
    let profile = ModelProfile::new("m", vec![StepCost::gpu_and_cpu(1.0, 1.0); 68]);
    ProfileStore::new(&dir).save(&key, &profile).unwrap();
    let p = path.to_str().unwrap();
    let d = dir.to_str().unwrap();
    let base = [
        "partition",
        p,
        "--backend",
        "cpu",
        "--json",
        "--profile-dir",
        d,
    ];
    let doc = json(&[&base[..], &["--budget-ms", "3.5", "--relaxation-ms", "1.5"]].concat());
    assert_eq!(doc["profile_cache"], "hit");
    let c = chunks(&doc);
    assert_eq!(c.len(), 22);
    for (k, ch) in c[..21].iter().enumerate() {
        assert_eq!((ch.0, ch.1), (3 * k as u64, 3 * k as u64 + 3));
        assert!((ch.2 - 3.0).abs() < 1e-9);
    }
    assert_eq!((c[21].0, c[21].1), (63, 68));
    assert!((c[21].2 - 5.0).abs() < 1e-9);
    let doc = json(&[&base[..], &["--budget-ms", "3.5"]].concat());
    let c = chunks(&doc);
    assert_eq!(c.len(), 23);
    assert_eq!((c[22].0, c[22].1), (66, 68));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Measured on the CPU backend: the chunks cover the ops in order, each within the budget
/// unless it is one step over it, and their times add up to the model's.
#[test]
fn partition_measured_on_the_cpu_covers_the_model_within_the_budget() {
    let path = model();
    let budget = 0.05;
    let doc = json(&[
        "partition",
        path.to_str().unwrap(),
        "--backend",
        "cpu",
        "--budget-ms",
        "0.05",
        "--runs",
        "3",
        "--json",
    ]);
    assert_eq!(doc["profile_cache"], "off");
    let c = chunks(&doc);
    assert_eq!(doc["steps"].as_u64(), Some(68));
    let mut next = 0;
    let mut total = 0.0;
    for &(s, e, ms, over) in &c {
        assert_eq!(s, next);
        assert!(e > s);
        if over {
            assert_eq!(e, s + 1);
            assert!(ms > budget);
        } else {
            assert!(ms <= budget + 1e-12, "{s}..{e}: {ms}");
        }
        next = e;
        total += ms;
    }
    assert_eq!(next, 68);
    assert!((total - doc["packed_ms"].as_f64().unwrap()).abs() < 1e-9);
    assert!(c.len() > 1, "a budget of 0.05 ms must cut the model");
}

/// On the GPU backend (lavapipe where there is no GPU): measured once, then read back from the
/// profile store with the same chunks.
#[test]
fn partition_on_the_gpu_keeps_its_profile_between_runs() {
    if heimdall_testkit::skip_gpu(
        "partition_simulate::partition_on_the_gpu_keeps_its_profile_between_runs",
    ) {
        return;
    }
    let path = model();
    let dir = temp("store-gpu");
    let args = [
        "partition",
        path.to_str().unwrap(),
        "--backend",
        "gpu",
        "--budget-ms",
        "2",
        "--runs",
        "2",
        "--warmup",
        "1",
        "--json",
        "--profile-dir",
        dir.to_str().unwrap(),
    ];
    let first = json(&args);
    assert_eq!(first["profile_cache"], "miss");
    assert_eq!(first["timing"], "Timestamps");
    let second = json(&args);
    assert_eq!(second["profile_cache"], "hit");
    // The same chunks; times equal up to the last bit JSON may lose (serde_json's float parsing
    // is not exactly round-trip).
    let (a, b) = (chunks(&first), chunks(&second));
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!((x.0, x.1, x.3), (y.0, y.1, y.3));
        assert!((x.2 - y.2).abs() <= 1e-12 * x.2.max(1.0), "{x:?} {y:?}");
    }
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn partition_errors_are_clear() {
    let path = model();
    let out = heimdall(&["partition", path.to_str().unwrap(), "--budget-ms", "0"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--budget-ms must be > 0"));
    let out = heimdall(&["partition", "/nonexistent.tflite", "--budget-ms", "1"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent.tflite"));
}

fn scenario(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../assets/scenarios")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// `--jitter 0.2 --seed N` is deterministic; the ablation without chunking loses frames.
#[test]
fn simulate_with_noise_and_ablation() {
    let sc = scenario("surroundings_monitoring.json");
    let a = json(&["simulate", &sc, "--jitter", "0.2", "--seed", "3", "--json"]);
    let b = json(&["simulate", &sc, "--jitter", "0.2", "--seed", "3", "--json"]);
    assert_eq!(a["frames"], b["frames"]);
    assert_eq!(a["dnns"][2]["latency_ms"], b["dnns"][2]["latency_ms"]);
    assert!(a["frames"]["on_time_rate"].as_f64().unwrap() >= 0.995);
    let c = json(&["simulate", &sc, "--jitter", "0.2", "--seed", "4", "--json"]);
    assert_ne!(a["dnns"][2]["latency_ms"], c["dnns"][2]["latency_ms"]);
    let o = json(&["simulate", &sc, "--ablation", "offload", "--json"]);
    assert!(o["frames"]["on_time_rate"].as_f64().unwrap() < 0.9);
    let out = heimdall(&["simulate", &sc, "--isolated", "--jitter", "0.2"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("watched cpm") && text.contains("within"),
        "{text}"
    );
}

#[test]
fn simulate_replays_a_trace_and_rejects_bad_ones() {
    let sc = scenario("surroundings_monitoring.json");
    let dir = temp("replay");
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.json");
    // Every render takes 4 ms instead of 3.
    std::fs::write(
        &good,
        r#"{"format": "heimdall-replay/1", "render_ms": [4.0]}"#,
    )
    .unwrap();
    let r = json(&[
        "simulate",
        &sc,
        "--replay",
        good.to_str().unwrap(),
        "--json",
    ]);
    assert!(r["frames"]["rendered"].as_u64().unwrap() > 590);
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        r#"{"format": "heimdall-replay/1", "models": {"cpm": {"gpu_step_ms": [[1.0]]}}}"#,
    )
    .unwrap();
    let out = heimdall(&["simulate", &sc, "--replay", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("models.cpm.gpu_step_ms[0]") && err.contains("187"),
        "{err}"
    );
    let out = heimdall(&["simulate", &sc, "--misprofile", "0"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("misprofile"));
    let out = heimdall(&["simulate", &sc, "--ablation", "chunks"]);
    assert!(!out.status.success());
    let _ = std::fs::remove_dir_all(&dir);
}
