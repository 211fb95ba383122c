//! Profiles kept between runs: one JSON file per (model content, adapter) in a directory the
//! caller chooses, so that the next start can skip profiling (design sec. 3).
//!
//! A file holds the key it was saved under and the profile:
//! `{"format": "heimdall-profile/1", "model_hash": "<32 hex>", "adapter": "<description>",
//! "profile": {...ModelProfile...}}`. Its name is `<model_hash>-<adapter hash>.json`; the key
//! inside is checked on load, so a renamed or colliding file is never taken for another model.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::profile::{ModelProfile, ProfileError};

const FORMAT: &str = "heimdall-profile/1";

/// FNV-1a with 128-bit state: a content hash for cache keys (not a cryptographic hash).
fn fnv1a_128(bytes: &[u8]) -> u128 {
    const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;
    bytes
        .iter()
        .fold(OFFSET, |h, &b| (h ^ u128::from(b)).wrapping_mul(PRIME))
}

/// What a stored profile is keyed by: the model file's content and the adapter that measured it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ProfileKey {
    /// Content hash of the model file (FNV-1a 128, 32 hex digits).
    pub model_hash: String,
    /// The adapter's description (name, backend, driver...): profiles of one adapter do not
    /// apply to another.
    pub adapter: String,
}

impl ProfileKey {
    /// The key of the model whose file content is `model_bytes`, measured on `adapter`.
    pub fn new(model_bytes: &[u8], adapter: impl Into<String>) -> Self {
        ProfileKey {
            model_hash: format!("{:032x}", fnv1a_128(model_bytes)),
            adapter: adapter.into(),
        }
    }

    /// The file name the profile is stored under.
    pub fn file_name(&self) -> String {
        let adapter = fnv1a_128(self.adapter.as_bytes()) as u64;
        format!("{}-{adapter:016x}.json", self.model_hash)
    }
}

/// Errors of the profile store. Messages name the file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Reading, writing or creating the directory failed.
    #[error("profile store {path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a stored profile, or holds a bad one.
    #[error("profile store {path}: {problem}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        problem: String,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredProfile {
    format: String,
    model_hash: String,
    adapter: String,
    profile: serde_json::Value,
}

/// A directory of stored profiles (the caller chooses it, e.g. the app's cache directory).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfileStore {
    dir: PathBuf,
}

impl ProfileStore {
    /// A store in `dir` (created on the first save).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ProfileStore { dir: dir.into() }
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the profile of `key` is (or would be) stored.
    pub fn path(&self, key: &ProfileKey) -> PathBuf {
        self.dir.join(key.file_name())
    }

    /// The profile stored for `key`: `Ok(None)` when there is none, an error when the file
    /// exists but cannot be read, is not a stored profile, was saved under another key, or holds
    /// invalid values.
    pub fn load(&self, key: &ProfileKey) -> Result<Option<ModelProfile>, StoreError> {
        let path = self.path(key);
        let shown = path.display().to_string();
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(StoreError::Io {
                    path: shown,
                    source: e,
                });
            }
        };
        let invalid = |problem: String| StoreError::Invalid {
            path: shown.clone(),
            problem,
        };
        let stored: StoredProfile =
            serde_json::from_str(&text).map_err(|e| invalid(format!("bad JSON: {e}")))?;
        if stored.format != FORMAT {
            return Err(invalid(format!(
                "format `{}` (expected `{FORMAT}`)",
                stored.format
            )));
        }
        if stored.model_hash != key.model_hash || stored.adapter != key.adapter {
            return Err(invalid(format!(
                "saved for model {} on `{}`, not model {} on `{}`",
                stored.model_hash, stored.adapter, key.model_hash, key.adapter
            )));
        }
        let profile = ModelProfile::from_json(&stored.profile.to_string())
            .map_err(|e: ProfileError| invalid(e.to_string()))?;
        Ok(Some(profile))
    }

    /// Saves `profile` under `key` (written to a temporary file, then renamed, so a reader never
    /// sees half a file); returns the file's path.
    pub fn save(&self, key: &ProfileKey, profile: &ModelProfile) -> Result<PathBuf, StoreError> {
        let io = |path: &Path, e: std::io::Error| StoreError::Io {
            path: path.display().to_string(),
            source: e,
        };
        std::fs::create_dir_all(&self.dir).map_err(|e| io(&self.dir, e))?;
        let stored = StoredProfile {
            format: FORMAT.into(),
            model_hash: key.model_hash.clone(),
            adapter: key.adapter.clone(),
            profile: serde_json::to_value(profile).expect("a profile always serialises"),
        };
        let text = serde_json::to_string_pretty(&stored).expect("a stored profile serialises");
        let path = self.path(key);
        let tmp = path.with_extension(format!("json.tmp{}", std::process::id()));
        std::fs::write(&tmp, text).map_err(|e| io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| io(&path, e))?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FNV-1a 128 reference values (the published test vectors of the FNV authors' page:
    /// the empty string hashes to the offset basis; "a" to 0xd228cb696f1a8caf78912b704e4a8964).
    #[test]
    fn fnv1a_128_matches_reference_vectors() {
        assert_eq!(fnv1a_128(b""), 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d);
        assert_eq!(fnv1a_128(b"a"), 0xd228_cb69_6f1a_8caf_7891_2b70_4e4a_8964);
    }
}
