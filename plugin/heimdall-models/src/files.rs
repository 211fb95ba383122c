//! The cache's file handling: an exclusive lock per cache, files written whole or not at all
//! (a temporary file in the destination folder, flushed to disk, renamed into place), SHA-256
//! of files and bytes.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use crate::error::{Error, io};

/// An exclusive lock on a file (created if needed), held until dropped. Threads of one process
/// exclude each other too: each lock opens the file anew.
pub(crate) struct Lock(#[allow(dead_code)] File);

impl Lock {
    /// Waits for the lock on `path`.
    pub(crate) fn acquire(path: &Path) -> Result<Lock, Error> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(io(path))?;
        file.lock().map_err(io(path))?;
        Ok(Lock(file))
    }
}

/// A temporary file beside its destination, removed when dropped unless it was renamed into
/// place.
pub(crate) struct Partial {
    pub(crate) path: PathBuf,
    pub(crate) file: Option<File>,
    dest: PathBuf,
}

impl Partial {
    /// A new temporary file for `dest` (`.<name>.<pid>.<n>.part` in the same folder).
    pub(crate) fn create(dest: &Path) -> Result<Partial, Error> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let dir = dest.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let name = dest.file_name().and_then(|n| n.to_str()).unwrap_or("file");
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(".{name}.{}.{n}.part", std::process::id()));
        let file = File::create(&path).map_err(io(&path))?;
        Ok(Partial {
            path,
            file: Some(file),
            dest: dest.to_path_buf(),
        })
    }

    /// Flushes the file to disk and renames it to its destination.
    pub(crate) fn persist(mut self) -> Result<PathBuf, Error> {
        if let Some(file) = self.file.take() {
            file.sync_all().map_err(io(&self.path))?;
        }
        std::fs::rename(&self.path, &self.dest).map_err(io(&self.dest))?;
        Ok(self.dest.clone())
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        self.file.take();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Writes `data` to `dest` whole or not at all, after checking its SHA-256 against `sha256`.
pub(crate) fn write_verified(dest: &Path, data: &[u8], sha256: &str) -> Result<(), Error> {
    let got = sha256_hex(data);
    if got != sha256 {
        return Err(Error::Checksum {
            what: dest.display().to_string(),
            got,
            expected: sha256.into(),
        });
    }
    let mut part = Partial::create(dest)?;
    if let Some(file) = part.file.as_mut() {
        file.write_all(data).map_err(io(&part.path))?;
    }
    part.persist()?;
    Ok(())
}

/// The SHA-256 of `data`, lowercase hex.
pub(crate) fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

/// The SHA-256 of the file at `path`, lowercase hex.
pub(crate) fn sha256_file(path: &Path) -> Result<String, Error> {
    let mut file = File::open(path).map_err(io(path))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf).map_err(io(path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
