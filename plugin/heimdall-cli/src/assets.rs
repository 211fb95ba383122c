//! Where the CLI's data is: the `assets/` folder (bundled models, the guard's calibration
//! photo, the clips), found at run time as the example apps find it — `BEVY_ASSET_ROOT`, then
//! the working directory, then the executable's folder and its parents — and the models, through
//! `heimdall-models` (bundled in `assets/models/`, else the user's cache, fetched on first use).

use std::path::{Path, PathBuf};

use heimdall_models::ModelCache;

/// The `assets/` folder, if one is found: `$BEVY_ASSET_ROOT/assets`, else the first `assets/`
/// in the working directory or next to the executable (up to four folders up, for
/// `target/release/`).
pub fn assets_dir() -> Option<PathBuf> {
    if let Some(root) = std::env::var_os("BEVY_ASSET_ROOT").filter(|r| !r.is_empty()) {
        let dir = Path::new(&root).join("assets");
        return dir.is_dir().then_some(dir);
    }
    let mut roots: Vec<PathBuf> = std::env::current_dir().into_iter().collect();
    if let Ok(exe) = std::env::current_exe() {
        roots.extend(exe.ancestors().skip(1).take(4).map(Path::to_path_buf));
    }
    roots
        .into_iter()
        .map(|r| r.join("assets"))
        .find(|d| d.is_dir())
}

/// A file under `assets/`, or an error naming it and how to point at the folder.
pub fn asset(rel: &str) -> anyhow::Result<PathBuf> {
    let Some(dir) = assets_dir() else {
        anyhow::bail!(
            "no assets/ folder found (for {rel}): run from the repository, or set BEVY_ASSET_ROOT \
             to the folder that holds assets/"
        );
    };
    Ok(dir.join(rel))
}

/// The model cache: `assets/models/` first when there is an `assets/` folder, then the user's
/// cache (`$HEIMDALL_CACHE_DIR` or the platform's cache folder).
pub fn model_cache() -> anyhow::Result<ModelCache> {
    let cache = ModelCache::new()?;
    Ok(match assets_dir() {
        Some(dir) => cache.with_bundled(dir.join("models")),
        None => cache,
    })
}

/// The catalog's model `name`: bundled, cached, or fetched now (with a progress bar on a
/// terminal).
pub fn model(name: &str) -> anyhow::Result<PathBuf> {
    Ok(model_cache()?.get(name)?)
}
