//! Helpers of the example binaries' tests (`emoji.rs`, `apps.rs`, `soak.rs`): where the
//! workspace and the built examples are, and an app's log.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

/// Whether GPU tests are skipped (`HEIMDALL_SKIP_GPU=1`).
pub fn skip_gpu() -> bool {
    std::env::var("HEIMDALL_SKIP_GPU").is_ok_and(|v| v == "1")
}

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Path of example `name` built by `cargo test` in this profile
/// (`target/<profile>/deps/<test>` -> `target/<profile>/examples/<name>`).
pub fn example_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}

/// An app's stdout and stderr, one after the other.
pub fn log_of(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
