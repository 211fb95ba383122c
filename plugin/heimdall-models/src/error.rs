//! Why a model could not be found, fetched or unpacked.

use std::path::PathBuf;

use thiserror::Error;

/// Why a model could not be found, fetched or unpacked. Every error that a network or a missing
/// file can cause says what to do offline: which file to put where.
#[derive(Debug, Error)]
pub enum Error {
    /// No model of this name in the catalog.
    #[error("unknown model `{name}`; known models: {known}")]
    UnknownModel {
        /// The name asked for.
        name: String,
        /// The catalog's names, comma-separated.
        known: String,
    },
    /// Neither `HEIMDALL_CACHE_DIR` nor a platform cache folder is available.
    #[error(
        "no cache folder: this platform has no standard one; set HEIMDALL_CACHE_DIR (or give the \
         cache a folder with ModelCache::at)"
    )]
    NoCacheDir,
    /// A file or folder of the cache could not be read, written or locked.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The download failed (no network, a proxy, the registry).
    #[error("cannot download {url}: {reason}\n{offline}")]
    Download {
        /// The URL.
        url: String,
        /// What failed.
        reason: String,
        /// What to do offline.
        offline: Box<Offline>,
    },
    /// A download or a cached file does not have its pinned SHA-256 (it was removed).
    #[error("{what}: SHA-256 {got}, expected {expected}; the file was removed, fetch again")]
    Checksum {
        /// The file.
        what: String,
        /// Its digest.
        got: String,
        /// The pinned digest.
        expected: String,
    },
    /// An archive could not be unpacked, or lacks the model.
    #[error("{}: {reason}", archive.display())]
    Archive {
        /// The archive.
        archive: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The model is missing and this cache does not download (offline mode, or a build without
    /// the `download` feature).
    #[error("{model} is not in {looked} and {why}\n{offline}")]
    NotFetched {
        /// The model's file name.
        model: String,
        /// The folders looked in.
        looked: String,
        /// Why nothing was downloaded.
        why: &'static str,
        /// What to do.
        offline: Box<Offline>,
    },
}

/// What to do without a network: where to put the model, or the archive it comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offline {
    /// The model's file name, its SHA-256 and the folder to put it in (none when an archive is
    /// asked for itself).
    pub model: Option<(String, String, PathBuf)>,
    /// The archive's file name.
    pub archive: String,
    /// Its SHA-256.
    pub archive_sha256: String,
    /// Where the archive is downloaded from.
    pub url: String,
    /// The folder to put the archive in.
    pub archives_dir: PathBuf,
}

impl std::fmt::Display for Offline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("offline: copy ")?;
        if let Some((file, sha256, dir)) = &self.model {
            write!(f, "{file} (SHA-256 {sha256}) into {}, or ", dir.display())?;
        }
        write!(
            f,
            "{} (from {}, SHA-256 {}) into {}, and run again",
            self.archive,
            self.url,
            self.archive_sha256,
            self.archives_dir.display()
        )
    }
}

/// An [`Error::Io`] for `path`.
pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.into();
    move |source| Error::Io { path, source }
}
