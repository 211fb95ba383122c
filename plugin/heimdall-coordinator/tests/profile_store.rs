//! Profiles kept between runs: saved and loaded by model content and adapter.

use heimdall_coordinator::analyzer::{ModelProfile, ProfileKey, ProfileStore, StepCost};

fn dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("heimdall-store-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn profile() -> ModelProfile {
    let mut p = ModelProfile::new(
        "face",
        vec![StepCost::gpu_and_cpu(0.5, 2.0), StepCost::cpu_only(0.7)],
    );
    p.observe_step(0, heimdall_coordinator::Processor::Gpu, 1.5);
    p
}

#[test]
fn a_saved_profile_loads_back_under_its_key_only() {
    let d = dir("roundtrip");
    let store = ProfileStore::new(&d);
    let key = ProfileKey::new(b"model bytes", "llvmpipe (Vulkan, Cpu)");
    assert_eq!(store.load(&key).unwrap(), None, "nothing stored yet");
    let p = profile();
    // The EMA moved step 0: 0.1 * 1.5 + 0.9 * 0.5 = 0.6.
    assert!((p.steps[0].gpu_ms - 0.6).abs() < 1e-12);
    let path = store.save(&key, &p).unwrap();
    assert!(path.starts_with(&d));
    assert_eq!(store.load(&key).unwrap(), Some(p.clone()));
    // Another model's bytes, or another adapter: another file, nothing there.
    let other_model = ProfileKey::new(b"model bytez", "llvmpipe (Vulkan, Cpu)");
    let other_adapter = ProfileKey::new(b"model bytes", "NVIDIA H100 (Vulkan, DiscreteGpu)");
    assert_ne!(other_model.file_name(), key.file_name());
    assert_ne!(other_adapter.file_name(), key.file_name());
    assert_eq!(store.load(&other_model).unwrap(), None);
    assert_eq!(store.load(&other_adapter).unwrap(), None);
    // Saving again replaces it, and leaves no temporary file behind.
    let mut q = p.clone();
    q.steps[1].cpu_ms = 0.9;
    store.save(&key, &q).unwrap();
    assert_eq!(store.load(&key).unwrap(), Some(q));
    let files: Vec<_> = std::fs::read_dir(&d).unwrap().flatten().collect();
    assert_eq!(files.len(), 1);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_file_of_another_key_or_a_corrupt_one_is_an_error_naming_the_file() {
    let d = dir("bad");
    let store = ProfileStore::new(&d);
    let key = ProfileKey::new(b"a", "gpu");
    let other = ProfileKey::new(b"b", "gpu");
    store.save(&other, &profile()).unwrap();
    // A file renamed to another key's name is not taken for that model.
    std::fs::rename(store.path(&other), store.path(&key)).unwrap();
    let e = store.load(&key).unwrap_err().to_string();
    assert!(
        e.contains(&key.file_name()) && e.contains("saved for model"),
        "{e}"
    );
    std::fs::write(store.path(&key), "{ not json").unwrap();
    assert!(
        store
            .load(&key)
            .unwrap_err()
            .to_string()
            .contains("bad JSON")
    );
    // Bad values inside are rejected by the profile's own check.
    let text = format!(
        r#"{{"format": "heimdall-profile/1", "model_hash": "{}", "adapter": "gpu",
            "profile": {{"model": "m", "ema_alpha": 0.1,
                         "steps": [{{"gpu_ms": -1, "cpu_ms": 1, "processors": 3}}]}}}}"#,
        key.model_hash
    );
    std::fs::write(store.path(&key), text).unwrap();
    assert!(
        store
            .load(&key)
            .unwrap_err()
            .to_string()
            .contains("steps[0]")
    );
    let _ = std::fs::remove_dir_all(&d);
}
