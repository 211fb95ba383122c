//! Where the assets are, found at run time the Bevy way, so a built example can be moved: the
//! `--assets DIR` option, then `BEVY_ASSET_ROOT`, then the working directory, then the
//! executable's folder (and its parents, for `target/release/examples/`); each names a folder
//! that holds `assets/`.

use std::path::{Path, PathBuf};

/// The `assets/` folder: the one under `--assets DIR` or `BEVY_ASSET_ROOT` when given (whether
/// or not it exists: [`require`] then names what is missing), else the first `assets/` found in
/// the working directory or next to the executable; an error names every place looked at.
pub fn asset_dir(option: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(root) = option
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("BEVY_ASSET_ROOT").map(PathBuf::from))
    {
        let dir = root.join("assets");
        return Ok(dir.canonicalize().unwrap_or(dir));
    }
    let mut roots: Vec<PathBuf> = std::env::current_dir().into_iter().collect();
    if let Ok(exe) = std::env::current_exe() {
        roots.extend(exe.ancestors().skip(1).take(4).map(Path::to_path_buf));
    }
    let mut tried = Vec::new();
    for root in roots {
        let dir = root.join("assets");
        if dir.is_dir() {
            return Ok(dir.canonicalize().unwrap_or(dir));
        }
        tried.push(dir.display().to_string());
    }
    Err(format!(
        "no assets/ folder found; looked in {}. Run from the repository, or pass --assets DIR \
         or set BEVY_ASSET_ROOT to the folder that holds assets/",
        tried.join(", ")
    ))
}

/// Checks that `files` (relative to `assets`) exist; the error names the first missing one.
pub fn require(assets: &Path, files: &[&str]) -> Result<(), String> {
    for f in files {
        let p = assets.join(f);
        if !p.exists() {
            return Err(format!(
                "missing asset {} (the example needs it; is {} a complete assets/ folder?)",
                p.display(),
                assets.display()
            ));
        }
    }
    Ok(())
}

/// A model of the catalog (`heimdall-models`; e.g. the object detector and the text detector,
/// which the repository does not bundle): `models/<file>` under `assets` when present (an app
/// that ships its models puts them there), else the user's model cache (`$HEIMDALL_CACHE_DIR`
/// or the platform's cache folder), fetched into it now when missing, with a progress bar on a
/// terminal and no Python. The error says what to do offline.
pub fn model(assets: &Path, name: &str) -> Result<PathBuf, String> {
    let cache = heimdall_models::ModelCache::new()
        .map_err(|e| e.to_string())?
        .with_bundled(assets.join("models"));
    cache.get(name).map_err(|e| {
        format!(
            "the model {name} is not in {}: {e}",
            assets.join("models").display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_folder_without_the_files_is_an_error_naming_the_file() {
        let dir = std::env::temp_dir().join(format!("heimdall-assets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let e = require(&asset_dir(Some(&dir)).unwrap(), &["clips/a/clip.json"]).unwrap_err();
        assert!(e.contains("clips/a/clip.json"), "{e}");
        std::fs::create_dir_all(dir.join("assets/models")).unwrap();
        assert_eq!(
            asset_dir(Some(&dir)).unwrap(),
            dir.join("assets").canonicalize().unwrap()
        );
        let e = require(&dir.join("assets"), &["models/x.tflite"]).unwrap_err();
        assert!(e.contains("models/x.tflite"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
