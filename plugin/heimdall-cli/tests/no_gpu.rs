//! No GPU at all (no Vulkan driver; simulated by pointing the Vulkan loader at a driver list
//! that does not exist, and hiding Mesa's EGL so that no GL adapter stands in): a command that
//! needs the GPU ends with status 1 and one line naming what is missing and how to get it, no
//! panic, no backtrace; the CPU backend still runs.

use std::process::Command;

/// The environment of a machine without a GPU driver.
const NO_DRIVER: [(&str, &str); 4] = [
    ("VK_DRIVER_FILES", "/nonexistent"),
    ("VK_ICD_FILENAMES", "/nonexistent"),
    ("__EGL_VENDOR_LIBRARY_FILENAMES", "/nonexistent"),
    ("__EGL_VENDOR_LIBRARY_DIRS", "/nonexistent"),
];

fn heimdall(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_heimdall"))
        .args(args)
        .envs(NO_DRIVER)
        // Where the CLI finds `assets/` when its binary lives in a target dir outside the
        // repository (as in CI), like the other CLI tests.
        .env("BEVY_ASSET_ROOT", heimdall_testkit::workspace_root())
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("runs")
}

#[test]
fn the_gpu_backend_without_a_driver_is_one_clear_line() {
    let model = heimdall_testkit::assets_dir().join("models/face_detection_short_range.tflite");
    let model = model.to_str().expect("utf-8 path");
    let out = heimdall(&["bench", model, "--backend", "gpu", "--runs", "1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line:\n{stderr}");
    let line = lines[0];
    for want in [
        "no GPU",
        "Vulkan",
        "mesa-vulkan-drivers",
        "VK_ICD_FILENAMES=/nonexistent",
    ] {
        assert!(line.contains(want), "{want:?} missing from: {line}");
    }
    assert!(
        !stderr.contains("panicked") && !stderr.contains("backtrace"),
        "{stderr}"
    );
    // The CPU backend needs no driver.
    let cpu = heimdall(&["bench", model, "--backend", "cpu", "--runs", "1"]);
    assert!(
        cpu.status.success(),
        "{}",
        String::from_utf8_lossy(&cpu.stderr)
    );
}
