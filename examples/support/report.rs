//! `stats.json` of a run: the plugin's statistics (wall-clock frame pacing first, the GPU
//! timestamp proxy beside it, per-DNN latency and rate), the backend, the options, and what the
//! app adds to [`AppReport`].

use std::path::Path;

use bevy::prelude::*;
use heimdall_bevy::HeimdallStats;
use heimdall_bevy::results::HeimdallBackend;
use heimdall_bevy::settings::HeimdallSettings;
use serde_json::{Value, json};

use crate::args::AppArgs;

/// App-specific entries of `stats.json` (a resource the app fills).
#[derive(Resource, Default, Debug)]
pub struct AppReport(pub serde_json::Map<String, Value>);

/// The whole report.
pub fn report(
    stats: &HeimdallStats,
    settings: &HeimdallSettings,
    backend: &HeimdallBackend,
    args: &AppArgs,
    app: &AppReport,
) -> Value {
    let mut v = stats.to_json(settings, &backend.name(), args.warmup as usize);
    v["adapter"] = json!(backend.adapter);
    v["args"] = json!({
        "resolution": [args.width, args.height],
        "fps": args.fps,
        "quality": format!("{:?}", args.quality).to_lowercase(),
        "extra_models": args.extra_models,
        "scene_load": args.scene_load,
        "force_cpu": args.force_cpu,
        "events_s": args.events,
        "synced_background": args.synced_background,
        "adaptive_margin": args.adaptive_margin,
        "margin_ms": args.margin_ms,
        "no_offload": args.no_offload,
        "text_side": args.text_side,
        "cpu_workers": args.cpu_workers,
        "cpu_at_frame_start": args.cpu_at_frame_start,
        "late_delivery": !args.no_late_delivery,
        "early_frame_start": args.early_frame_start,
        "camera_fps": args.camera_fps,
        "camera_phase": !args.early_frame_start && !args.no_camera_phase,
        "palm_search_interval_ms": args.palm_search_interval().as_secs_f64() * 1e3,
        "overlay": !args.no_overlay,
    });
    for (k, x) in &app.0 {
        v[k] = x.clone();
    }
    v
}

/// Notes Bevy's render device's limits in `stats.json` (`bevy_device`: its storage buffers per
/// shader stage and invocations per work group).
pub(crate) fn note_bevy_device(
    device: Option<Res<bevy::render::renderer::RenderDevice>>,
    mut report: ResMut<AppReport>,
) {
    let Some(device) = device else { return };
    let limits = device.limits();
    report.0.insert(
        "bevy_device".into(),
        json!({
            "max_storage_buffers_per_shader_stage": limits.max_storage_buffers_per_shader_stage,
            "max_compute_invocations_per_workgroup": limits.max_compute_invocations_per_workgroup,
        }),
    );
}

/// Writes `stats.json` into `out` (creating it).
pub fn write(out: &Path, report: &Value) -> std::io::Result<()> {
    std::fs::create_dir_all(out)?;
    std::fs::write(
        out.join("stats.json"),
        serde_json::to_string_pretty(report)?,
    )
}
