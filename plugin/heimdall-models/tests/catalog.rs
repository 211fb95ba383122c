//! The catalog against the repository's own records: every model's SHA-256 is the one in
//! `assets/models/SHA256SUMS` or `ONNX_SHA256SUMS`, or for the npm model the one
//! `scripts/fetch_npm_models.py` pins (the golden scripts check the same digests), the
//! bundled models match it byte for byte, and names, files and archives are unique.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use heimdall_models::{Format, MODELS, Registry, catalog};
use sha2::{Digest, Sha256};

fn assets_models() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../assets/models")
}

fn sums(file: &str) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(assets_models().join(file)).expect("SHA256SUMS");
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut it = l.split_whitespace();
            let digest = it.next().expect("digest").to_string();
            let name = it.next().expect("name").trim_start_matches('*').to_string();
            (name, digest)
        })
        .collect()
}

#[test]
fn every_model_has_the_repositorys_digest() {
    let mut all = sums("SHA256SUMS");
    all.extend(sums("ONNX_SHA256SUMS"));
    let npm_script = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/fetch_npm_models.py"),
    )
    .expect("fetch_npm_models.py");
    for m in &MODELS {
        if m.archive.registry == Registry::Npm {
            assert!(npm_script.contains(m.sha256), "{}", m.name);
            assert!(npm_script.contains(m.archive.url), "{}", m.name);
            continue;
        }
        assert_eq!(
            all.get(m.file).map(String::as_str),
            Some(m.sha256),
            "{}",
            m.name
        );
    }
    // And every model the repository records is in the catalog.
    for file in all.keys() {
        assert!(MODELS.iter().any(|m| m.file == file), "{file} missing");
    }
}

#[test]
fn bundled_models_are_the_catalogs_bytes() {
    let mut seen = 0;
    for m in &MODELS {
        let p = assets_models().join(m.file);
        let Ok(bytes) = std::fs::read(&p) else {
            continue;
        };
        seen += 1;
        assert_eq!(bytes.len() as u64, m.size, "{}", m.name);
        let digest: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(digest, m.sha256, "{}", m.name);
    }
    assert_eq!(
        seen, 6,
        "five MediaPipe models and multistyle26 are bundled"
    );
}

#[test]
fn names_files_and_archives_are_unique_and_consistent() {
    let names: HashSet<_> = MODELS.iter().map(|m| m.name).collect();
    let files: HashSet<_> = MODELS.iter().map(|m| m.file).collect();
    assert_eq!(names.len(), MODELS.len());
    assert_eq!(files.len(), MODELS.len());
    for m in &MODELS {
        let ext = match m.format {
            Format::Tflite => ".tflite",
            Format::Onnx => ".onnx",
        };
        assert_eq!(m.file, format!("{}{ext}", m.name));
        assert!(catalog::ARCHIVES.contains(&m.archive), "{}", m.name);
        assert_eq!(catalog::model(m.name), Some(m));
        assert!(m.archive.url.starts_with("https://"), "{}", m.archive.url);
        assert!(
            m.archive
                .url
                .ends_with(m.archive.file.rsplit('-').next().unwrap())
        );
    }
    assert_eq!(
        MODELS
            .iter()
            .filter(|m| m.archive == &catalog::MEDIAPIPE_WHEEL)
            .count(),
        14
    );
}
