//! Soak sampling (`--sample-every SECONDS`): once per interval a headless run appends one JSON
//! line to `OUT/soak.jsonl` with what a long run must keep flat: the process's memory (resident
//! set from `/proc/self/status`, the C heap from `mallinfo2`), the machine's load and the
//! process's CPU time (intervals depend on them), the GPU memory allocated through
//! wgpu on the render device (Bevy's and heimdall's; the `heimdall …`-labelled part beside it),
//! the wall-clock frame intervals of that interval, and each DNN's results and latency in it.
//! `scripts/soak.py` runs an app with it and judges the samples (`docs/soak.md`).
//!
//! Everything here is per interval: the interval's frame times are cleared at each sample, so
//! sampling itself keeps nothing that grows with the run's length. A run with `--duration`
//! takes no sample in its last half interval, while the final report and trace are built.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use bevy::prelude::*;
use bevy::render::renderer::RenderDevice;
use heimdall_bevy::HeimdallStats;
use heimdall_bevy::camera::CameraFrame;
use serde_json::{Value, json};

use crate::args::AppArgs;
use crate::harness_camera::HarnessCamera;
use crate::latency::LatencyLog;
use crate::pacer::PacerLog;

/// File name of the samples in the output folder.
pub const SAMPLES_FILE: &str = "soak.jsonl";

/// The sampler's state (a main-world resource; see the module documentation).
#[derive(Resource, Debug, Default)]
pub struct SoakSampler {
    /// When the camera started (sample times are relative to it).
    started: Option<Instant>,
    /// When the last sample was taken.
    last_sample: Option<Instant>,
    /// Start of the last update, for the frame interval.
    last_update: Option<Instant>,
    /// Frame intervals since the last sample, ms.
    intervals: LatencyLog,
    /// Results per model at the last sample (`ModelStats::results`, never trimmed).
    results: BTreeMap<String, usize>,
    /// Samples written.
    written: u64,
    /// Where the samples go.
    path: Option<PathBuf>,
}

/// Adds the sampler when `args.sample_every > 0` and the run has an output folder.
pub fn add(app: &mut App, args: &AppArgs) {
    if args.sample_every <= 0.0 {
        return;
    }
    let Some(out) = &args.out else { return };
    app.insert_resource(SoakSampler {
        path: Some(out.join(SAMPLES_FILE)),
        ..default()
    })
    .add_systems(Last, sample);
}

/// Process memory from `/proc/self/status` (kB): `VmRSS`, `RssAnon`, `RssFile`, `VmHWM`, and
/// the thread count; empty where there is no such file.
pub fn proc_status() -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    let Ok(s) = std::fs::read_to_string("/proc/self/status") else {
        return m;
    };
    for line in s.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let name = match key {
            "VmRSS" => "rss_kb",
            "RssAnon" => "rss_anon_kb",
            "RssFile" => "rss_file_kb",
            "VmHWM" => "rss_peak_kb",
            "Threads" => "threads",
            _ => continue,
        };
        if let Some(v) = rest
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
        {
            m.insert(name.into(), json!(v));
        }
    }
    m
}

/// What else the machine is doing (the frame intervals depend on it): `/proc/loadavg`'s
/// one-minute load and this process's CPU time in seconds (`/proc/self/stat`, at 100 ticks a
/// second); null where there are no such files.
pub fn machine_load() -> Value {
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok());
    // Fields 14 and 15 (utime, stime) come after the command name in parentheses.
    let cpu = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = &s[s.rfind(')')? + 2..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            let ticks = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
            Some(ticks / 100.0)
        });
    json!({ "loadavg_1min": load, "process_cpu_s": cpu })
}

/// The C heap as glibc's `mallinfo2` sees it (bytes): `heap_in_use` (what is allocated and not
/// freed), `heap_free` (freed but kept in the arenas: fragmentation when it grows), `mmapped`
/// (large blocks). Null elsewhere than Linux with glibc.
pub fn malloc_info() -> Value {
    match heimdall_testkit::heap_stats() {
        Some(h) => json!({
            "arena": h.arena,
            "heap_in_use": h.in_use,
            "heap_free": h.free,
            "mmapped": h.mmapped,
        }),
        None => Value::Null,
    }
}

/// GPU memory allocated through wgpu on `device` (bytes): `allocated` (live allocations),
/// `reserved` (the memory blocks they live in), `heimdall` (allocations whose label starts with
/// `heimdall`: the plugin's weights, activations, parameters, readbacks), `allocations` (count).
/// Null where the backend keeps no report (only Vulkan, DX12 and Metal do).
pub fn gpu_memory(device: &RenderDevice) -> Value {
    let Some(r) = device.wgpu_device().generate_allocator_report() else {
        return Value::Null;
    };
    let heimdall: u64 = r
        .allocations
        .iter()
        .filter(|a| a.name.starts_with("heimdall"))
        .map(|a| a.size)
        .sum();
    json!({
        "allocated": r.total_allocated_bytes,
        "reserved": r.total_reserved_bytes,
        "heimdall": heimdall,
        "allocations": r.allocations.len(),
    })
}

#[allow(clippy::too_many_arguments)]
fn sample(
    args: Res<AppArgs>,
    camera: Option<Res<HarnessCamera>>,
    frames: Query<&CameraFrame>,
    stats: Res<HeimdallStats>,
    pacer: Option<Res<PacerLog>>,
    device: Option<Res<RenderDevice>>,
    mut s: ResMut<SoakSampler>,
) {
    let frame = camera.and_then(|c| frames.get(c.0).ok());
    let Some(frame) = frame else { return };
    let now = Instant::now();
    let started = *s.started.get_or_insert(now);
    if let Some(last) = s.last_update.replace(now) {
        s.intervals.push((now - last).as_secs_f64() * 1e3);
    }
    // No sample in the last half interval of a timed run: the final report and the
    // coordinator's trace are built then (some 15 MB for a moment), which is not growth.
    let t = (now - started).as_secs_f64();
    if args
        .duration
        .is_some_and(|d| t > d - args.sample_every / 2.0)
    {
        return;
    }
    let last_sample = *s.last_sample.get_or_insert(started);
    let window = (now - last_sample).as_secs_f64();
    if window < args.sample_every {
        return;
    }
    s.last_sample = Some(now);
    let mut models = serde_json::Map::new();
    for (name, m) in &stats.models {
        let before = s.results.get(name).copied().unwrap_or(0);
        // `results` only falls when the statistics were reset: count from zero then.
        let new = if m.results >= before {
            m.results - before
        } else {
            m.results
        };
        let mut lat = LatencyLog::default();
        let tail = &m.latencies_ms[m.latencies_ms.len().saturating_sub(new)..];
        for &ms in tail {
            lat.push(ms);
        }
        s.results.insert(name.clone(), m.results);
        models.insert(
            name.clone(),
            json!({
                "results": new,
                "rate_hz": new as f64 / window.max(1e-9),
                "latency_ms": lat.summary(),
                "cpu_results_total": m.cpu_results,
                "deadline_misses_total": m.deadline_misses,
            }),
        );
    }
    let intervals = std::mem::take(&mut s.intervals);
    let mut line = json!({
        "index": s.written,
        "t_s": t,
        "window_s": window,
        "frame": frame.index,
        "memory": proc_status(),
        "malloc": malloc_info(),
        "machine": machine_load(),
        "gpu_memory": device.map_or(Value::Null, |d| gpu_memory(&d)),
        "frame_interval_ms": intervals.summary(),
        "models": models,
        // What the app keeps for its final report, to see that it stays bounded.
        "kept": {
            "frame_ms": stats.frame_ms.len(),
            "gpu_frames": stats.gpu_frames.len(),
            "latencies": stats.models.values().map(|m| m.latencies_ms.len()).sum::<usize>(),
            "pacer": pacer.map_or(0, |p| p.update_ms.kept()),
        },
    });
    if let Some(mean) = intervals.mean() {
        line["frame_interval_ms"]["mean"] = json!(mean);
    }
    s.written += 1;
    let Some(path) = s.path.clone() else { return };
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| writeln!(f, "{line}"));
    if let Err(e) = written {
        error!("writing {}: {e}", path.display());
    }
}
