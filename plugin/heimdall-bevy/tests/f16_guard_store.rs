//! The accuracy guard's decisions kept between runs (`HeimdallSettings::guard_store`) in
//! headless apps on the GPU (lavapipe), one after the other (one app at a time: see
//! `common::quiet_runtime_dir`):
//!
//! 1. the first app checks the overflow graph (`common::overflow_graph`): pending in f32, then
//!    the search's decision, written to the store (one file);
//! 2. a second app on the same model content (under another name) takes the stored decision:
//!    its guard is decided as the model compiles (never pending: no f32 period, no search), the
//!    running model is the guarded one from its first result, and its results are within the
//!    f16 bound; the file is not rewritten.

mod common;
mod decoders_support;
mod guard_support;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use bevy::prelude::*;
use guard_support as g;
use heimdall_bevy::prelude::*;
use heimdall_gpu::Precision;

const TIMEOUT: Duration = Duration::from_secs(300);

/// The store's files.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| Some(e.ok()?.path())).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn a_stored_decision_is_reused_without_a_search() {
    if common::skip_gpu() {
        common::skipping("HEIMDALL_SKIP_GPU=1");
        return;
    }
    let start = std::time::Instant::now();
    let dir =
        std::env::temp_dir().join(format!("heimdall-guard-store-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);

    // 1. Checked and stored.
    let (app, dnn, w) = run_guarded_app(&dir, "overflow");
    let first = g::guard_of(&app, dnn);
    println!("first run: states {:?}; {first:?}", w.states);
    let GuardStatus::Decided(first) = first else {
        panic!("first run not decided: {first:?}");
    };
    assert!(!first.reused && first.decision.trials > 0, "{first:?}");
    assert!(w.states.contains(&"pending"));
    let (stored, modified) = check_stored_file(&dir);
    println!("first app: {:.1} s", start.elapsed().as_secs_f64());
    drop(app);

    // 2. Reused: decided from the start, never pending.
    let second_start = std::time::Instant::now();
    let (mut app, dnn, w) = run_guarded_app(&dir, "overflow_again");
    check_reused(&mut app, dnn, &w, &first);
    assert_eq!(files(&dir), stored, "no other file");
    assert_eq!(
        std::fs::metadata(&stored[0])
            .and_then(|m| m.modified())
            .ok(),
        modified,
        "the stored decision was rewritten"
    );
    let json =
        app.world()
            .resource::<HeimdallStats>()
            .to_json(&HeimdallSettings::default(), "gpu", 0);
    assert_eq!(json["models"]["overflow_again"]["guard"]["reused"], true);
    println!(
        "second app: {:.1} s (first {:.1} s)",
        second_start.elapsed().as_secs_f64(),
        start.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// An app with the guard on and its store in `dir`, running the overflow graph (named `name`) on
/// the photo until guarded; returns the app, the DNN and what it went through.
fn run_guarded_app(dir: &Path, name: &str) -> (App, Entity, g::Watched) {
    let mut app = g::app(Some(GuardConfig::default()), Some(dir.to_path_buf()));
    let camera = g::camera(&mut app);
    let model = common::add_model(&mut app, common::overflow_graph(name, g::SIDE, g::SIDE));
    let dnn = app.world_mut().spawn(Dnn::new(model, camera)).id();
    let mut watched = g::run_until_guarded(&mut app, &[dnn], TIMEOUT);
    let w = watched.remove(&dnn).expect("watched");
    (app, dnn, w)
}

/// The store after the first app: one `guard-*.json` file, of the store's format, with the
/// search's decision (op 1 in f32); returns the files and the file's modification time.
fn check_stored_file(dir: &Path) -> (Vec<PathBuf>, Option<SystemTime>) {
    let stored = files(dir);
    println!("stored: {stored:?}");
    assert_eq!(stored.len(), 1, "one decision file: {stored:?}");
    let name = stored[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(
        name.starts_with("guard-") && name.ends_with(".json"),
        "{name}"
    );
    let text = std::fs::read_to_string(&stored[0]).expect("read");
    let modified = std::fs::metadata(&stored[0])
        .and_then(|m| m.modified())
        .ok();
    let json: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(json["format"], "heimdall-guard/1");
    assert_eq!(json["decision"]["f32_ranges"], serde_json::json!([[1, 2]]));
    (stored, modified)
}

/// The second app's DNN `dnn` (watched as `w`): decided from the start with the `first` app's
/// stored decision, in reduced precision, and its first result within the bound.
fn check_reused(app: &mut App, dnn: Entity, w: &g::Watched, first: &GuardOutcome) {
    let second = g::guard_of(app, dnn);
    println!("second run: states {:?}; {second:?}", w.states);
    let states: Vec<&str> = w
        .states
        .iter()
        .copied()
        .skip_while(|s| *s == "off")
        .collect();
    assert_eq!(
        states,
        ["decided"],
        "no check the second time: {:?}",
        w.states
    );
    let GuardStatus::Decided(second) = second else {
        panic!("second run not decided: {second:?}");
    };
    assert!(second.reused, "{second:?}");
    assert_eq!(second.decision.f32_ranges, first.decision.f32_ranges);
    assert_eq!(second.decision.overrides, first.decision.overrides);
    assert_eq!(
        second.decision.trials, first.decision.trials,
        "the stored trials"
    );
    let p = g::precision_of(app, dnn);
    assert!(
        matches!(p, Some(Precision::F16 | Precision::PackedF16)),
        "{p:?}"
    );
    // Every result of this app comes from the guarded model: the first one is within the bound.
    let results = &app.world().resource::<common::Results>().0;
    let r = results.iter().find(|r| r.entity == dnn).expect("a result");
    let err = g::error(&r.output.tensors[0]);
    println!(
        "second run: first result (frame {}): error {err:.2e}",
        r.output.frame_index
    );
    assert!(err <= g::BOUND, "error {err:.3e}");
}
