//! The command-line options every example app takes.

use std::path::PathBuf;

use bevy::prelude::Resource;
use heimdall_bevy::settings::CoordinationMode;

/// Scene complexity of the 3D apps (shadow resolution and cascades, MSAA, instances,
/// post-processing).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Quality {
    /// The cheapest scene.
    Low,
    /// The default.
    #[default]
    Medium,
    /// The most expensive scene.
    High,
}

/// Options shared by the examples.
#[derive(Resource, Clone, Debug)]
pub struct AppArgs {
    /// Render into an image instead of a window.
    pub headless: bool,
    /// Exit after this many camera frames (headless default: 300).
    pub frames: Option<u64>,
    /// Where PNG frames and `stats.json` go.
    pub out: Option<PathBuf>,
    /// Save every k-th frame as PNG (0: none).
    pub save_every: u64,
    /// Coordination mode.
    pub mode: CoordinationMode,
    /// Policy of the `heimdall` mode.
    pub policy: String,
    /// Target frame rate (Hz).
    pub fps: f64,
    /// Render size.
    pub width: u32,
    /// Render size.
    pub height: u32,
    /// Run every model on the CPU backend (the no-compute path).
    pub force_cpu: bool,
    /// Use a webcam (feature `webcam`), falling back to the clip when there is none.
    pub webcam: bool,
    /// The folder holding `assets/` (else `BEVY_ASSET_ROOT`, the working directory, the
    /// executable's folder).
    pub assets: Option<PathBuf>,
    /// Warm-up frames left out of the frame statistics.
    pub warmup: u64,
    /// Scene quality.
    pub quality: Quality,
    /// Furniture or page instances instead of the quality level's count (load experiments: a
    /// finer step of real rendering work than the levels).
    pub instances: Option<usize>,
    /// Extra fragment work per background pixel (load experiments).
    pub scene_load: u32,
    /// Extra continuous copies of a model (load experiments).
    pub extra_models: u32,
    /// Seconds between scripted events in headless runs (0: none).
    pub events: f64,
    /// Show the camera frame the visible results came from, not the newest one (a small ring of
    /// camera textures), so overlays never lag the picture.
    pub synced_background: bool,
    /// Learn a pacing margin from the wall clock (experiment; off by default).
    pub adaptive_margin: bool,
    /// Never move models to CPU workers (ablation).
    pub no_offload: bool,
    /// Turn the convolution cache off on every DNN (an ablation: the plugin's default,
    /// `ConvCache::Auto`, gives it to full-frame DNNs where it pays, and the workspace forces it
    /// on for its detectors).
    pub no_conv_cache: bool,
    /// Record the measured window as a scenario and a replay for `heimdall simulate`
    /// (`scenario.json`, `replay.json` beside `stats.json`; `HeimdallRecording`).
    pub record_run: bool,
    /// Record the DNN work after the scene in the frame's own submission instead of submitting
    /// it ahead of the scene (an ablation of `HeimdallSettings::dnn_work_first`).
    pub dnn_after_scene: bool,
    /// Start each update as soon as the loop runs it, not just in time for the hand-over to the
    /// render thread (an ablation of `HeimdallSettings::late_frame_start`).
    pub early_frame_start: bool,
    /// Free a DNN only when its frame's GPU timestamps come back (an ablation of
    /// `HeimdallSettings::free_at_readback`).
    pub free_at_timestamps: bool,
    /// `--blocking-gpu-waits`: the plugin's background work waits for the GPU with wgpu's
    /// blocking poll (for comparison; `HeimdallSettings::nonblocking_gpu_waits`).
    pub blocking_gpu_waits: bool,
    /// `--decode-on-readback-thread`: GPU results are decoded on the readback thread, one after
    /// another (for comparison; `HeimdallSettings::parallel_decode`).
    pub decode_on_readback_thread: bool,
    /// `--background-burst-ms MS`: `HeimdallSettings::background_burst_ms` (default: the
    /// plugin's).
    pub background_burst_ms: Option<f64>,
    /// The text detector's short side (RapidOCR's `limit_side_len`; workspace).
    pub text_side: u32,
    /// No overlay (the statistics panel), e.g. for frames compared pixel by pixel.
    pub no_overlay: bool,
    /// Headless: the emulated display shows a frame as soon as it is submitted (`immediate`)
    /// instead of at the next vertical blank (`vsync`, the default; see `swapchain.rs`).
    pub display_immediate: bool,
    /// Headless: exit after this many seconds of camera frames instead of after `frames`.
    pub duration: Option<f64>,
    /// Append a sample (memory, GPU memory, frame intervals, DNN latency) to `OUT/soak.jsonl`
    /// every this many seconds (0: none; see `soak.rs`).
    pub sample_every: f64,
    /// `--cpu-workers N`: the plugin's CPU slots for inference (`HeimdallSettings::cpu_workers`);
    /// 0 (the default): the cores left to the app (`HeimdallSettings::cpu_slots`).
    pub cpu_workers: usize,
    /// `--cpu-at-frame-start`: CPU work goes out only at each frame's decision (an ablation of
    /// `HeimdallSettings::cpu_on_completion`).
    pub cpu_at_frame_start: bool,
}

impl Default for AppArgs {
    fn default() -> Self {
        AppArgs {
            headless: false,
            frames: None,
            out: None,
            save_every: 10,
            mode: CoordinationMode::Heimdall,
            policy: "max_total_utility".into(),
            fps: 60.0,
            width: 1280,
            height: 720,
            force_cpu: false,
            webcam: false,
            assets: None,
            warmup: 30,
            quality: Quality::Medium,
            instances: None,
            scene_load: 0,
            extra_models: 0,
            events: 0.0,
            synced_background: false,
            adaptive_margin: false,
            no_offload: false,
            no_conv_cache: false,
            record_run: false,
            dnn_after_scene: false,
            early_frame_start: false,
            free_at_timestamps: false,
            blocking_gpu_waits: false,
            decode_on_readback_thread: false,
            background_burst_ms: None,
            text_side: 736,
            no_overlay: false,
            display_immediate: false,
            duration: None,
            sample_every: 0.0,
            cpu_workers: 0,
            cpu_at_frame_start: false,
        }
    }
}

/// Usage text of the shared options.
pub const USAGE: &str = "[--headless] [--frames N] [--out DIR] [--save-every K]
    [--mode heimdall|fifo|layers:K] [--policy P] [--fps F] [--resolution WxH]
    [--force-cpu] [--webcam] [--assets DIR] [--warmup N] [--quality low|medium|high]
    [--instances N] [--scene-load N] [--extra-models N] [--events SECONDS] [--synced-background]
    [--adaptive-margin] [--no-offload] [--no-conv-cache] [--record-run] [--dnn-after-scene] [--early-frame-start] [--free-at-timestamps]
    [--blocking-gpu-waits] [--decode-on-readback-thread] [--background-burst-ms MS]
    [--text-side N]
    [--no-overlay] [--display vsync|immediate]
    [--duration SECONDS] [--sample-every SECONDS] [--cpu-workers N]
    [--cpu-at-frame-start]";

impl AppArgs {
    /// Parses `std::env::args`-style arguments (without the program name).
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut a = AppArgs::default();
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
            match arg.as_str() {
                "--headless" => a.headless = true,
                "--frames" => a.frames = Some(num(&value("--frames")?)?),
                "--out" => a.out = Some(PathBuf::from(value("--out")?)),
                "--save-every" => a.save_every = num(&value("--save-every")?)?,
                "--mode" => {
                    let v = value("--mode")?;
                    a.mode = CoordinationMode::parse(&v)
                        .ok_or(format!("--mode {v}: expected heimdall, fifo or layers:K"))?;
                }
                "--policy" => a.policy = value("--policy")?,
                "--fps" => a.fps = num(&value("--fps")?)?,
                "--resolution" | "--size" => {
                    let v = value("--resolution")?;
                    let (w, h) = v
                        .split_once('x')
                        .ok_or(format!("--resolution {v}: expected WxH"))?;
                    a.width = num(w)?;
                    a.height = num(h)?;
                }
                "--force-cpu" => a.force_cpu = true,
                "--webcam" => a.webcam = true,
                "--assets" => a.assets = Some(PathBuf::from(value("--assets")?)),
                "--warmup" => a.warmup = num(&value("--warmup")?)?,
                "--quality" => {
                    a.quality = match value("--quality")?.as_str() {
                        "low" => Quality::Low,
                        "medium" => Quality::Medium,
                        "high" => Quality::High,
                        q => return Err(format!("--quality {q}: expected low, medium or high")),
                    }
                }
                "--instances" => a.instances = Some(num(&value("--instances")?)?),
                "--scene-load" => a.scene_load = num(&value("--scene-load")?)?,
                "--extra-models" => a.extra_models = num(&value("--extra-models")?)?,
                "--events" => a.events = num(&value("--events")?)?,
                "--synced-background" => a.synced_background = true,
                "--adaptive-margin" => a.adaptive_margin = true,
                "--no-offload" => a.no_offload = true,
                "--no-conv-cache" => a.no_conv_cache = true,
                "--record-run" => a.record_run = true,
                "--dnn-after-scene" => a.dnn_after_scene = true,
                "--early-frame-start" => a.early_frame_start = true,
                "--free-at-timestamps" => a.free_at_timestamps = true,
                "--blocking-gpu-waits" => a.blocking_gpu_waits = true,
                "--decode-on-readback-thread" => a.decode_on_readback_thread = true,
                "--background-burst-ms" => {
                    let ms: f64 = num(&value("--background-burst-ms")?)?;
                    if ms.is_nan() || ms < 0.0 {
                        return Err(format!("--background-burst-ms: {ms} is not >= 0"));
                    }
                    a.background_burst_ms = Some(ms);
                }
                "--text-side" => a.text_side = num(&value("--text-side")?)?,
                "--no-overlay" => a.no_overlay = true,
                "--display" => {
                    a.display_immediate = match value("--display")?.as_str() {
                        "vsync" => false,
                        "immediate" => true,
                        other => return Err(format!("--display: vsync or immediate, not {other}")),
                    }
                }
                "--duration" => a.duration = Some(num(&value("--duration")?)?),
                "--sample-every" => a.sample_every = num(&value("--sample-every")?)?,
                "--cpu-workers" => a.cpu_workers = num(&value("--cpu-workers")?)?,
                "--cpu-at-frame-start" => a.cpu_at_frame_start = true,
                "-h" | "--help" => return Err(format!("options: {USAGE}")),
                other => return Err(format!("unknown argument {other}\noptions: {USAGE}")),
            }
        }
        if a.headless && a.frames.is_none() && a.duration.is_none() {
            a.frames = Some(300);
        }
        if !a.fps.is_finite() || a.fps <= 0.0 || a.width == 0 || a.height == 0 {
            return Err("--fps and --resolution must be positive".into());
        }
        if a.instances.is_some_and(|n| n > 256) {
            return Err("--instances must be at most 256".into());
        }
        if !(32..=2000).contains(&a.text_side) {
            return Err("--text-side must be in 32..=2000".into());
        }
        if !a.events.is_finite() || a.events < 0.0 {
            return Err("--events must be ≥ 0 seconds".into());
        }
        if a.duration.is_some_and(|d| !d.is_finite() || d <= 0.0) {
            return Err("--duration must be > 0 seconds".into());
        }
        if !a.sample_every.is_finite() || a.sample_every < 0.0 {
            return Err("--sample-every must be ≥ 0 seconds".into());
        }
        Ok(a)
    }
}

fn num<T: std::str::FromStr>(s: &str) -> Result<T, String> {
    s.parse().map_err(|_| format!("{s:?} is not a number"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<AppArgs, String> {
        AppArgs::parse(s.split_whitespace().map(String::from))
    }

    #[test]
    fn flags_parse() {
        let a =
            parse("--headless --resolution 640x360 --mode layers:20 --quality high --events 2.5")
                .unwrap();
        assert!(a.headless);
        assert_eq!(a.frames, Some(300));
        assert_eq!((a.width, a.height), (640, 360));
        assert_eq!(a.mode, CoordinationMode::Layers(20));
        assert_eq!(a.quality, Quality::High);
        assert_eq!(a.events, 2.5);
        assert_eq!(parse("").unwrap().width, 1280, "1280x720 by default");
        let soak = parse("--headless --duration 120 --sample-every 10").unwrap();
        assert_eq!((soak.frames, soak.duration), (None, Some(120.0)));
        assert_eq!(soak.sample_every, 10.0);
        let ablation = parse("--decode-on-readback-thread --background-burst-ms 4").unwrap();
        assert!(ablation.decode_on_readback_thread);
        assert_eq!(ablation.background_burst_ms, Some(4.0));
        assert_eq!(parse("").unwrap().background_burst_ms, None);
        assert_eq!(parse("").unwrap().cpu_workers, 0, "auto");
        assert_eq!(parse("--cpu-workers 6").unwrap().cpu_workers, 6);
        for bad in [
            "--background-burst-ms -1",
            "--background-burst-ms nan",
            "--fps 0",
            "--resolution 10",
            "--mode x",
            "--frames",
            "--nope",
            "--events -1",
            "--instances 257",
            "--duration 0",
            "--sample-every -1",
            "--cpu-workers -1",
            "--cpu-workers",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
