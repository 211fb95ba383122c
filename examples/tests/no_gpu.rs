//! No GPU at all (no Vulkan driver; simulated by pointing the Vulkan loader at a driver list
//! that does not exist), with and without Mesa's GL through EGL (which wgpu would otherwise take
//! instead, and then panic on Bevy's task threads): the example apps end at once with status 1
//! and one line naming what is missing and how to get it, no panic, no backtrace (Bevy's
//! renderer panics without an adapter).

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn the_apps_without_a_driver_end_with_one_clear_line() {
    let no_egl = [
        ("__EGL_VENDOR_LIBRARY_FILENAMES", "/nonexistent"),
        ("__EGL_VENDOR_LIBRARY_DIRS", "/nonexistent"),
    ];
    for (app, egl) in [
        ("emoji", &no_egl[..]),
        ("emoji", &[][..]),
        ("shopping", &no_egl[..]),
        ("workspace", &no_egl[..]),
    ] {
        let exe = common::example_binary(app);
        assert!(exe.exists(), "{} was not built", exe.display());
        let start = Instant::now();
        let out = Command::new(&exe)
            .args(["--headless", "--frames", "10"])
            .current_dir(common::root())
            .env("VK_DRIVER_FILES", "/nonexistent")
            .env("VK_ICD_FILENAMES", "/nonexistent")
            .envs(egl.iter().copied())
            .env("RUST_BACKTRACE", "1")
            .output()
            .expect("runs");
        let took = start.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{app}:\n{stdout}{stderr}");
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{app}: one line:\n{stderr}");
        let line = lines[0];
        for want in [
            app,
            "no GPU adapter",
            "Vulkan",
            "mesa-vulkan-drivers",
            "VK_ICD_FILENAMES",
        ] {
            assert!(line.contains(want), "{app}: {want:?} missing from: {line}");
        }
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(took < Duration::from_secs(30), "{app}: {took:?}");
    }
}
