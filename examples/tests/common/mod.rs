//! Helpers of the example binaries' tests (`emoji.rs`, `apps.rs`, `soak.rs`): where the
//! workspace and the built examples are, and an app's log.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

/// Whether GPU tests are skipped (`HEIMDALL_SKIP_GPU=1`).
pub fn skip_gpu() -> bool {
    std::env::var("HEIMDALL_SKIP_GPU").is_ok_and(|v| v == "1")
}

/// Says that the running test skips, and why (counted by CI: `heimdall_testkit::skip`).
pub fn skipping(why: &str) {
    let test = std::thread::current()
        .name()
        .map_or_else(|| "?".to_string(), str::to_string);
    heimdall_testkit::skip(&format!("{}::{test}", env!("CARGO_CRATE_NAME")), why);
}

/// `HEIMDALL_SKIP_GPU=1`: if so, says that the running test skips.
pub fn skipping_gpu() -> bool {
    let skip = skip_gpu();
    if skip {
        skipping("HEIMDALL_SKIP_GPU=1");
    }
    skip
}

/// Whether the apps cannot make a render device here (no adapter: a machine without a Vulkan
/// driver; they exit with one line saying so); if so, says that the running test skips.
pub fn no_render_device() -> bool {
    match heimdall_bevy::device::find_adapter(None) {
        Ok(_) => false,
        Err(e) => {
            skipping(&e.to_string());
            true
        }
    }
}

/// Each model's GPU results in `stats.json` (`count - cpu_results`): a GPU test checks that the
/// GPU delivered, not only that results arrived (the coordinator may move a model to the CPU).
pub fn gpu_results(stats: &serde_json::Value, model: &str) -> u64 {
    let m = &stats["models"][model];
    let n = m["count"].as_u64().unwrap_or(0);
    n.saturating_sub(m["cpu_results"].as_u64().unwrap_or(0))
}

/// The PNG files in `dir`.
pub fn pngs(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "png"))
            })
            .count()
        })
        .unwrap_or(0)
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
