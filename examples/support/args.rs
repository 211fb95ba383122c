//! The command-line options every example app takes, parsed with clap (`--help` lists them by
//! group: run, coordination, scene and load, ablations).

use std::path::PathBuf;

use bevy::prelude::Resource;
use clap::{CommandFactory, FromArgMatches, Parser, ValueEnum};
use heimdall_bevy::settings::CoordinationMode;

/// Scene complexity of the 3D apps (shadow resolution and cascades, MSAA, instances,
/// post-processing).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, ValueEnum)]
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
    /// HeimdallSettings::margin_ms, the frame budget's safety margin (`None`: the plugin's).
    pub margin_ms: Option<f64>,
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
    /// render thread (an ablation of `heimdall_bevy::HeimdallPacingPlugin`, which the examples
    /// add otherwise).
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
    /// `--events-half-slots`: an on-demand DNN keeps to half the CPU slots (an ablation of
    /// `HeimdallSettings::events_take_all_slots`).
    pub events_half_slots: bool,
    /// `--cpu-at-frame-start`: CPU work goes out only at each frame's decision (an ablation of
    /// `HeimdallSettings::cpu_on_completion`).
    pub cpu_at_frame_start: bool,
    /// `--cpu-lend-at-frame-end`: the coordinator goes to the CPU workers only from the end of
    /// the render frame (an ablation of `HeimdallSettings::cpu_lend_after_encode`).
    pub cpu_lend_at_frame_end: bool,
    /// `--no-late-delivery`: results reach the world only in `PreUpdate` (an ablation of
    /// `HeimdallSettings::late_delivery`).
    pub no_late_delivery: bool,
    /// `--camera-fps F`: the clip is paced like a camera at F Hz on its own clock
    /// (`FramePacing::Rate`) instead of one frame per update.
    pub camera_fps: Option<f64>,
    /// `--no-camera-phase`: the late frame start does not wait for a camera frame due just after
    /// the update would start (an ablation of `heimdall_bevy::CameraPhaseLock`).
    pub no_camera_phase: bool,
    /// `--palm-search-every-frame`: while a hand is tracked, palm detection still looks for
    /// the other every frame, as MediaPipe's graph (an ablation of
    /// `HandTracking::search_interval`).
    pub palm_search_every_frame: bool,
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
            margin_ms: None,
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
            events_half_slots: false,
            cpu_at_frame_start: false,
            cpu_lend_at_frame_end: false,
            no_late_delivery: false,
            camera_fps: None,
            no_camera_phase: false,
            palm_search_every_frame: false,
        }
    }
}

/// The options as typed: parsed by clap, then checked and resolved into [`AppArgs`]. Every
/// option keeps the name (and `--size` the alias) the hand-written parser had, so scripts and
/// docs calling the examples are unchanged.
#[derive(Parser, Debug)]
#[command(disable_version_flag = true, next_line_help = false)]
struct Cli {
    /// Render into an image instead of a window (PNG frames and stats.json in --out).
    #[arg(long, help_heading = RUN)]
    headless: bool,
    /// Exit after this many camera frames [headless default: 300].
    #[arg(long, value_name = "N", help_heading = RUN)]
    frames: Option<u64>,
    /// Headless: exit after this many seconds of camera frames instead of after --frames.
    #[arg(long, value_name = "SECONDS", value_parser = positive, help_heading = RUN)]
    duration: Option<f64>,
    /// Where PNG frames and stats.json go.
    #[arg(long, value_name = "DIR", help_heading = RUN)]
    out: Option<PathBuf>,
    /// Save every k-th frame as PNG (0: none).
    #[arg(long, value_name = "K", default_value_t = 10, help_heading = RUN)]
    save_every: u64,
    /// Warm-up frames left out of the frame statistics.
    #[arg(long, value_name = "N", default_value_t = 30, help_heading = RUN)]
    warmup: u64,
    /// Render size.
    #[arg(long, visible_alias = "size", value_name = "WxH", value_parser = resolution,
          default_value = "1280x720", help_heading = RUN)]
    resolution: (u32, u32),
    /// Target frame rate (Hz), 1/60 to 10000.
    #[arg(long, value_name = "F", value_parser = frame_rate, default_value_t = 60.0,
          help_heading = RUN)]
    fps: f64,
    /// Headless: when the emulated display shows a frame: at the next vertical blank, or as
    /// soon as it is submitted.
    #[arg(long, value_enum, default_value_t = Display::Vsync, help_heading = RUN)]
    display: Display,
    /// The folder holding assets/ [default: BEVY_ASSET_ROOT, the working directory, the
    /// executable's folder].
    #[arg(long, value_name = "DIR", help_heading = RUN)]
    assets: Option<PathBuf>,
    /// Use a webcam (build with `--features webcam`), falling back to the clip when there is
    /// none.
    #[arg(long, help_heading = RUN)]
    webcam: bool,
    /// Pace the clip like a camera at F Hz on its own clock [default: one frame per update].
    #[arg(long, value_name = "F", value_parser = frame_rate, help_heading = RUN)]
    camera_fps: Option<f64>,
    /// No overlay (the statistics panel), e.g. for frames compared pixel by pixel.
    #[arg(long, help_heading = RUN)]
    no_overlay: bool,
    /// Record the measured window as a scenario and a replay for `heimdall simulate`
    /// (scenario.json, replay.json beside stats.json).
    #[arg(long, help_heading = RUN)]
    record_run: bool,
    /// Append a sample (memory, GPU memory, frame intervals, DNN latency) to OUT/soak.jsonl
    /// every this many seconds (0: none).
    #[arg(long, value_name = "SECONDS", value_parser = non_negative, default_value_t = 0.0,
          help_heading = RUN)]
    sample_every: f64,

    /// Coordination mode: heimdall (the coordinator), fifo, or layers:K (K layers a frame).
    #[arg(long, value_name = "heimdall|fifo|layers:K", value_parser = mode,
          default_value = "heimdall", help_heading = COORDINATION)]
    mode: CoordinationMode,
    /// Policy of the heimdall mode: max_total_utility, max_min_utility or least_slack_time
    /// (HeimdallSettings::policy, by name).
    #[arg(long, value_name = "P", value_parser = policy, default_value = "max_total_utility",
          help_heading = COORDINATION)]
    policy: String,
    /// Run every model on the CPU backend (the no-compute path).
    #[arg(long, help_heading = COORDINATION)]
    force_cpu: bool,
    /// HeimdallSettings::background_burst_ms: GPU time per burst of start-up work [default: the
    /// plugin's].
    #[arg(long, value_name = "MS", value_parser = non_negative, help_heading = COORDINATION)]
    background_burst_ms: Option<f64>,
    /// CPU slots for inference (HeimdallSettings::cpu_workers) [default 0: the cores left to
    /// the app after its main, render and readback threads].
    #[arg(long, value_name = "N", default_value_t = 0, help_heading = COORDINATION)]
    cpu_workers: usize,
    /// An on-demand DNN keeps to half the CPU slots, as continuous ones (an ablation of
    /// HeimdallSettings::events_take_all_slots).
    #[arg(long, help_heading = COORDINATION)]
    events_half_slots: bool,

    /// Scene complexity of the 3D apps (shadows, MSAA, instances, post-processing).
    #[arg(long, value_enum, default_value_t = Quality::Medium, help_heading = SCENE)]
    quality: Quality,
    /// Furniture or page instances instead of the quality level's count (at most 256).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(0..=256),
          help_heading = SCENE)]
    instances: Option<u16>,
    /// Extra fragment work per background pixel (load experiments).
    #[arg(long, value_name = "N", default_value_t = 0, help_heading = SCENE)]
    scene_load: u32,
    /// Extra continuous copies of a model (load experiments).
    #[arg(long, value_name = "N", default_value_t = 0, help_heading = SCENE)]
    extra_models: u32,
    /// Seconds between scripted events in headless runs (0: none).
    #[arg(long, value_name = "SECONDS", value_parser = non_negative, default_value_t = 0.0,
          help_heading = SCENE)]
    events: f64,
    /// The text detector's short side (RapidOCR's limit_side_len; workspace).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(32..=2000),
          default_value_t = 736, help_heading = SCENE)]
    text_side: u32,
    /// Show the camera frame the visible results came from, not the newest one.
    #[arg(long, help_heading = SCENE)]
    synced_background: bool,

    /// Never move models to CPU workers.
    #[arg(long, help_heading = ABLATIONS)]
    no_offload: bool,
    /// Turn the convolution cache off on every DNN.
    #[arg(long, help_heading = ABLATIONS)]
    no_conv_cache: bool,
    /// Learn a pacing margin from the wall clock (experiment).
    #[arg(long, help_heading = ABLATIONS)]
    adaptive_margin: bool,
    /// The frame budget's safety margin, ms (HeimdallSettings::margin_ms) [default: the
    /// plugin's].
    #[arg(long, value_name = "MS", value_parser = non_negative, help_heading = ABLATIONS)]
    margin_ms: Option<f64>,
    /// Record the DNN work after the scene in the frame's own submission
    /// (HeimdallSettings::dnn_work_first off).
    #[arg(long, help_heading = ABLATIONS)]
    dnn_after_scene: bool,
    /// Start each update as soon as the loop runs it (without HeimdallPacingPlugin).
    #[arg(long, help_heading = ABLATIONS)]
    early_frame_start: bool,
    /// The late frame start does not wait for a camera frame due just after the update would
    /// start (CameraPhaseLock off).
    #[arg(long, help_heading = ABLATIONS)]
    no_camera_phase: bool,
    /// While a hand is tracked, palm detection still looks for another every frame, as
    /// MediaPipe's graph (HandTracking::search_interval zero).
    #[arg(long, help_heading = ABLATIONS)]
    palm_search_every_frame: bool,
    /// Free a DNN only when its frame's GPU timestamps come back
    /// (HeimdallSettings::free_at_readback off).
    #[arg(long, help_heading = ABLATIONS)]
    free_at_timestamps: bool,
    /// Background work waits for the GPU with wgpu's blocking poll
    /// (HeimdallSettings::nonblocking_gpu_waits off).
    #[arg(long, help_heading = ABLATIONS)]
    blocking_gpu_waits: bool,
    /// GPU results are decoded on the readback thread, one after another
    /// (HeimdallSettings::parallel_decode off).
    #[arg(long, help_heading = ABLATIONS)]
    decode_on_readback_thread: bool,
    /// CPU work goes out only at each frame's decision, not as a worker finishes
    /// (HeimdallSettings::cpu_on_completion off).
    #[arg(long, help_heading = ABLATIONS)]
    cpu_at_frame_start: bool,
    /// A worker that finishes gets its next CPU work at once only between render frames, not
    /// also while the scene is drawn (HeimdallSettings::cpu_lend_after_encode off).
    #[arg(long, help_heading = ABLATIONS)]
    cpu_lend_at_frame_end: bool,
    /// Results reach the world only in PreUpdate, not also at the start of PostUpdate
    /// (HeimdallSettings::late_delivery off).
    #[arg(long, help_heading = ABLATIONS)]
    no_late_delivery: bool,
}

const RUN: &str = "Run";
const COORDINATION: &str = "Coordination";
const SCENE: &str = "Scene and load";
const ABLATIONS: &str = "Ablations and comparisons";

/// `--display`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Display {
    /// At the next vertical blank (see swapchain.rs).
    Vsync,
    /// As soon as it is submitted.
    Immediate,
}

fn resolution(s: &str) -> Result<(u32, u32), String> {
    let (w, h) = s.split_once('x').ok_or("expected WxH, e.g. 1280x720")?;
    let side = |v: &str| match v.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{v:?} is not a positive number of pixels")),
    };
    Ok((side(w)?, side(h)?))
}

fn positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("{s:?} is not a number > 0")),
    }
}

/// The slowest `--fps` (one frame a minute: a frame period any clock can hold; `1e-300` made
/// the harness panic converting the period to a `Duration`).
pub const MIN_FPS: f64 = 1.0 / 60.0;
/// The fastest `--fps`.
pub const MAX_FPS: f64 = 10_000.0;

fn frame_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (MIN_FPS..=MAX_FPS).contains(&v) => Ok(v),
        _ => Err(format!(
            "{s:?} is not a frame rate in {MIN_FPS}..={MAX_FPS}"
        )),
    }
}

fn non_negative(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("{s:?} is not a number >= 0")),
    }
}

fn policy(s: &str) -> Result<String, String> {
    heimdall_bevy::SchedulingPolicy::by_name(s)
        .map(|_| s.to_string())
        .map_err(|e| e.to_string())
}

fn mode(s: &str) -> Result<CoordinationMode, String> {
    CoordinationMode::parse(s).ok_or_else(|| "expected heimdall, fifo or layers:K".into())
}

impl From<Cli> for AppArgs {
    fn from(c: Cli) -> AppArgs {
        let frames = match (c.frames, c.headless, c.duration) {
            (None, true, None) => Some(300),
            (frames, _, _) => frames,
        };
        AppArgs {
            headless: c.headless,
            frames,
            out: c.out,
            save_every: c.save_every,
            mode: c.mode,
            policy: c.policy,
            fps: c.fps,
            width: c.resolution.0,
            height: c.resolution.1,
            force_cpu: c.force_cpu,
            webcam: c.webcam,
            assets: c.assets,
            warmup: c.warmup,
            quality: c.quality,
            instances: c.instances.map(usize::from),
            scene_load: c.scene_load,
            extra_models: c.extra_models,
            events: c.events,
            synced_background: c.synced_background,
            adaptive_margin: c.adaptive_margin,
            margin_ms: c.margin_ms,
            no_offload: c.no_offload,
            no_conv_cache: c.no_conv_cache,
            record_run: c.record_run,
            dnn_after_scene: c.dnn_after_scene,
            early_frame_start: c.early_frame_start,
            free_at_timestamps: c.free_at_timestamps,
            blocking_gpu_waits: c.blocking_gpu_waits,
            decode_on_readback_thread: c.decode_on_readback_thread,
            background_burst_ms: c.background_burst_ms,
            text_side: c.text_side,
            no_overlay: c.no_overlay,
            display_immediate: c.display == Display::Immediate,
            duration: c.duration,
            sample_every: c.sample_every,
            cpu_workers: c.cpu_workers,
            events_half_slots: c.events_half_slots,
            cpu_at_frame_start: c.cpu_at_frame_start,
            cpu_lend_at_frame_end: c.cpu_lend_at_frame_end,
            no_late_delivery: c.no_late_delivery,
            camera_fps: c.camera_fps,
            no_camera_phase: c.no_camera_phase,
            palm_search_every_frame: c.palm_search_every_frame,
        }
    }
}

impl AppArgs {
    /// How often palm detection looks for another hand while one is tracked
    /// (`HandTracking::search_interval`): zero with `--palm-search-every-frame`, else the
    /// plugin's default.
    pub fn palm_search_interval(&self) -> std::time::Duration {
        if self.palm_search_every_frame {
            std::time::Duration::ZERO
        } else {
            heimdall_bevy::decoders::hands::DEFAULT_SEARCH_INTERVAL
        }
    }

    /// The options of the process, for the app `name` (described by `about` in `--help`):
    /// `--help` prints them by group and exits with 0, a bad option prints the error and the
    /// usage and exits with 2.
    pub fn from_env(name: &'static str, about: &'static str) -> AppArgs {
        let matches = Cli::command()
            .name(name)
            .about(about)
            .get_matches_from(std::env::args_os());
        match Cli::from_arg_matches(&matches) {
            Ok(cli) => cli.into(),
            Err(e) => e.exit(),
        }
    }

    /// Parses `std::env::args`-style arguments (without the program name); the error is
    /// clap's message (`--help` is an "error" here too, carrying the help text).
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let argv = std::iter::once("app".to_string()).chain(args);
        Cli::try_parse_from(argv)
            .map(AppArgs::from)
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<AppArgs, String> {
        AppArgs::parse(s.split_whitespace().map(String::from))
    }

    #[test]
    fn the_command_line_is_well_formed_and_its_defaults_are_appargs_defaults() {
        Cli::command().debug_assert();
        assert_eq!(
            format!("{:?}", parse("").unwrap()),
            format!("{:?}", AppArgs::default())
        );
        let help = parse("--help").unwrap_err();
        for heading in [
            "Run:",
            "Coordination:",
            "Scene and load:",
            "Ablations and comparisons:",
        ] {
            assert!(help.contains(heading), "{heading} not in {help}");
        }
        assert_eq!(
            parse("--size 640x360").unwrap().width,
            640,
            "--size is --resolution"
        );
        let d = parse("--display immediate --quality low --mode fifo").unwrap();
        assert!(d.display_immediate);
        assert_eq!(d.quality, Quality::Low);
        assert_eq!(d.mode, CoordinationMode::Fifo);
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
        assert!(parse("--events-half-slots").unwrap().events_half_slots);
        assert_eq!(parse("--margin-ms 0.3").unwrap().margin_ms, Some(0.3));
        assert_eq!(parse("").unwrap().margin_ms, None);
        assert!(!parse("").unwrap().cpu_at_frame_start);
        assert!(parse("--cpu-at-frame-start").unwrap().cpu_at_frame_start);
        assert!(!parse("").unwrap().cpu_lend_at_frame_end);
        assert!(
            parse("--cpu-lend-at-frame-end")
                .unwrap()
                .cpu_lend_at_frame_end
        );
        let camera = parse("--camera-fps 30 --no-camera-phase").unwrap();
        assert_eq!(
            (camera.camera_fps, camera.no_camera_phase),
            (Some(30.0), true)
        );
        assert_eq!(parse("").unwrap().camera_fps, None, "one frame per update");
        assert!(!parse("").unwrap().no_camera_phase);
        assert_eq!(
            parse("--palm-search-every-frame")
                .unwrap()
                .palm_search_interval(),
            std::time::Duration::ZERO
        );
        assert!(!parse("").unwrap().palm_search_interval().is_zero());
        for bad in [
            "--background-burst-ms -1",
            "--background-burst-ms nan",
            "--fps 0",
            "--fps 1e-300",
            "--fps 1e300",
            "--fps nan",
            "--resolution 10",
            "--mode x",
            "--frames",
            "--nope",
            "--events -1",
            "--instances 257",
            "--duration 0",
            "--sample-every -1",
            "--cpu-workers -1",
            "--margin-ms -1",
            "--cpu-workers",
            "--resolution 0x10",
            "--text-side 31",
            "--display vblank",
            "--quality ultra",
            "--camera-fps 0",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    /// A run of issue 34's acceptance as `docs/measurements/contention/run.sh` makes it through
    /// `scripts/compare_modes.py` (its options, then the configuration's).
    #[test]
    fn the_contention_runs_parse() {
        let a = parse(
            "--headless --mode fifo --out /tmp/c/fifo-0 --save-every 0 --record-run \
             --frames 660 --warmup 60 --resolution 2560x1440 --quality high --fps 90 --events 1 \
             --cpu-workers 4 --cpu-at-frame-start --no-offload --no-late-delivery",
        )
        .unwrap();
        assert!(a.headless && a.record_run && a.no_offload && a.cpu_at_frame_start);
        assert!(a.no_late_delivery);
        assert_eq!(a.mode, CoordinationMode::Fifo);
        assert_eq!((a.frames, a.warmup, a.save_every), (Some(660), 60, 0));
        assert_eq!((a.width, a.height, a.fps), (2560, 1440, 90.0));
        assert_eq!(
            (a.quality, a.events, a.cpu_workers),
            (Quality::High, 1.0, 4)
        );
    }
}
