//! The app around an example's scene: a window (by default) or a headless run rendering into an
//! image with a steady frame pacer; the camera held back until every DNN is compiled (so the
//! statistics measure the steady state); PNG frames, `stats.json` and the coordinator's trace;
//! the exit after N frames; and, headless, a non-zero exit with the reason when a DNN or the
//! camera fails.

use std::path::PathBuf;
use std::time::Duration;

use bevy::app::AppExit;
use bevy::camera::RenderTarget;
use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy::render::render_resource::TextureFormat;
use bevy::render::view::window::screenshot::{Screenshot, ScreenshotCaptured, save_to_disk};
use bevy::window::ExitCondition;
use bevy::winit::WinitPlugin;
use heimdall_bevy::overlay::OverlayPlugin;
use heimdall_bevy::prelude::*;

use crate::args::AppArgs;
use crate::pacer::{PacedRunnerPlugin, PacerLog};
use crate::report::{self, AppReport};

/// Where the app's camera renders: the window, or (headless) this image.
#[derive(Resource, Clone, Debug)]
pub struct HarnessTarget(pub Option<Handle<Image>>);

impl HarnessTarget {
    /// The render target for the app's camera.
    pub fn render_target(&self) -> Option<RenderTarget> {
        self.0.clone().map(|t| RenderTarget::Image(t.into()))
    }
}

pub use crate::harness_camera::HarnessCamera;

/// A camera source waiting for every DNN to be compiled.
#[derive(Component)]
struct PendingSource(Option<CameraSource>);

/// A scripted event of a headless run (`--events SECONDS`): the app reacts as to a tap.
#[derive(Message, Clone, Copy, Debug)]
pub struct ScriptedEvent {
    /// Sequence number.
    pub index: u64,
}

/// The app for `args`, with the plugin configured from them, the overlay, and the harness
/// systems. `assets` is the `assets/` folder (see [`crate::assets::asset_dir`]).
///
/// Without a GPU adapter (no Vulkan driver), this prints one line naming what is missing and how
/// to get it, and exits with status 1: Bevy would panic. With `HEIMDALL_MOBILE_LIMITS=baseline`
/// (4 storage buffers per stage) or `1` (a typical phone's 8) heimdall's kernels are held to a
/// phone's limits (`heimdall_bevy::device::HeimdallDeviceProfile`), and Bevy's render device to
/// its storage buffers per stage (`heimdall_bevy::device::render_plugin_held_to`; under 8, GPU
/// preprocessing and GPU light clustering off), without timestamp queries. A lost device is
/// recovered from: a new one, every model compiled again.
pub fn build_app(title: &str, args: &AppArgs, assets: &std::path::Path) -> App {
    if args.headless {
        // Before the Vulkan loader first runs (the adapter check below).
        quiet_runtime_dir();
    }
    if let Err(e) = heimdall_bevy::device::find_adapter(None) {
        eprintln!("{title}: {e}");
        std::process::exit(1);
    }
    let profile = heimdall_bevy::device::DeviceProfile::from_env();
    let render = heimdall_bevy::device::render_plugin_held_to(profile);
    // Bevy's mesh instance buffers built on the CPU where GPU preprocessing needs more storage
    // buffers than the profile's.
    let pbr = bevy::pbr::PbrPlugin {
        use_gpu_instance_buffer_builder: heimdall_bevy::device::gpu_preprocessing_fits(profile),
        ..default()
    };
    let recovery = match &render.render_creation {
        bevy::render::settings::RenderCreation::Automatic(s) => Some((**s).clone()),
        bevy::render::settings::RenderCreation::Manual(_) => None,
    };
    let mut app = App::new();
    let asset_plugin = AssetPlugin {
        file_path: assets.to_string_lossy().into_owned(),
        ..default()
    };
    add_default_plugins(&mut app, title, args, asset_plugin, render, pbr);
    let settings = heimdall_settings(title, args);
    app.add_plugins((
        HeimdallPlugin::new(settings),
        heimdall_bevy::device::BevyDeviceLimitsPlugin(profile),
    ))
    .insert_resource(heimdall_bevy::device::HeimdallDeviceProfile(profile));
    if !heimdall_bevy::device::gpu_clustering_fits(profile) {
        app.add_systems(PreStartup, clustering_on_the_cpu);
    }
    // The examples pace their updates for the display (the plugin's default does not).
    if !args.early_frame_start {
        app.add_plugins(HeimdallPacingPlugin)
            .insert_resource(CameraPhaseLock {
                enabled: !args.no_camera_phase,
            });
    }
    if let Some(settings) = recovery {
        heimdall_bevy::device::recover_lost_devices(&mut app, settings);
    }
    if !args.no_overlay {
        app.add_plugins(OverlayPlugin::default());
    }
    app.insert_resource(ClearColor(Color::BLACK))
        .insert_resource(args.clone())
        .init_resource::<AppReport>()
        .init_resource::<RunStart>()
        .init_resource::<ModelsReady>()
        .init_resource::<Shots>()
        .add_message::<ScriptedEvent>()
        .add_systems(PreStartup, (make_target, report::note_bevy_device))
        .add_systems(
            Update,
            (
                start_camera,
                mark_run_start,
                scripted_events,
                save_frames,
                finish_after_frames,
            )
                .chain(),
        )
        .add_observer(on_dnn_failed)
        .add_observer(on_camera_failed);
    if args.no_conv_cache {
        app.add_observer(no_conv_cache);
    }
    crate::soak::add(&mut app, args);
    if args.headless {
        crate::swapchain::add(&mut app, !args.display_immediate);
    }
    app
}

/// Bevy's default plugins with `asset_plugin`, `render` and `pbr`: headless (no window, updates
/// paced by [`PacedRunnerPlugin`] at `--fps`) or in a window titled after the example.
fn add_default_plugins(
    app: &mut App,
    title: &str,
    args: &AppArgs,
    asset_plugin: AssetPlugin,
    render: bevy::render::RenderPlugin,
    pbr: bevy::pbr::PbrPlugin,
) {
    if args.headless {
        app.add_plugins((
            DefaultPlugins
                .set(asset_plugin)
                .set(render)
                .set(pbr)
                .set(WindowPlugin {
                    primary_window: None,
                    exit_condition: ExitCondition::DontExit,
                    ..default()
                })
                .disable::<WinitPlugin>(),
            PacedRunnerPlugin {
                period: Duration::from_secs_f64(1.0 / args.fps),
            },
        ));
    } else {
        app.add_plugins(
            DefaultPlugins
                .set(asset_plugin)
                .set(render)
                .set(pbr)
                .set(WindowPlugin {
                    primary_window: Some(Window {
                        title: format!("heimdall: {title}"),
                        resolution: (args.width, args.height).into(),
                        ..default()
                    }),
                    ..default()
                }),
        );
    }
}

/// The plugin's settings from the command line (exits with status 2 on an unknown policy).
fn heimdall_settings(title: &str, args: &AppArgs) -> HeimdallSettings {
    HeimdallSettings {
        frame_rate: FrameRateTarget::Fixed(args.fps),
        mode: args.mode,
        policy: SchedulingPolicy::by_name(&args.policy).unwrap_or_else(|e| {
            eprintln!("{title}: {e}");
            std::process::exit(2);
        }),
        force_cpu: args.force_cpu,
        adaptive_margin: args.adaptive_margin,
        margin_ms: args
            .margin_ms
            .unwrap_or_else(|| HeimdallSettings::default().margin_ms),
        offload: !args.no_offload,
        dnn_work_first: !args.dnn_after_scene,
        free_at_readback: !args.free_at_timestamps,
        nonblocking_gpu_waits: !args.blocking_gpu_waits,
        parallel_decode: !args.decode_on_readback_thread,
        background_burst_ms: args
            .background_burst_ms
            .unwrap_or_else(|| HeimdallSettings::default().background_burst_ms),
        cpu_workers: (args.cpu_workers > 0).then_some(args.cpu_workers),
        events_take_all_slots: !args.events_half_slots,
        cpu_on_completion: !args.cpu_at_frame_start,
        cpu_lend_after_encode: !args.cpu_lend_at_frame_end,
        late_delivery: !args.no_late_delivery,
        ..default()
    }
}

/// Bevy's light clustering on the CPU (after `PbrPlugin::finish` chose the GPU's): its GPU
/// passes bind more storage buffers per stage than the device's.
fn clustering_on_the_cpu(settings: Option<ResMut<bevy::light::cluster::GlobalClusterSettings>>) {
    if let Some(mut settings) = settings {
        settings.gpu_clustering = None;
    }
}

/// Without a display, Mesa's Vulkan loader complains about a missing `XDG_RUNTIME_DIR`: give it
/// a private one (before any thread starts).
fn quiet_runtime_dir() {
    if std::env::var_os("XDG_RUNTIME_DIR").is_some() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("heimdall-runtime-{}", std::process::id()));
    if std::fs::create_dir_all(&dir).is_ok() {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
        }
        // SAFETY: called from `build_app` on the main thread before Bevy starts any thread.
        unsafe { std::env::set_var("XDG_RUNTIME_DIR", &dir) };
    }
}

fn make_target(mut commands: Commands, args: Res<AppArgs>, mut images: ResMut<Assets<Image>>) {
    if let Some(out) = &args.out
        && let Err(e) = std::fs::create_dir_all(out)
    {
        error!("creating {}: {e}", out.display());
    }
    let target = args.headless.then(|| {
        images.add(Image::new_target_texture(
            args.width,
            args.height,
            TextureFormat::Rgba8UnormSrgb,
            None,
        ))
    });
    commands.insert_resource(HarnessTarget(target));
}

/// Spawns the app's camera source, held back until every DNN is compiled; returns its entity
/// (use it as the DNNs' `source`).
pub fn spawn_camera(commands: &mut Commands, source: CameraSource) -> Entity {
    let e = commands.spawn(PendingSource(Some(source))).id();
    commands.insert_resource(HarnessCamera(e));
    e
}

/// When every model was ready and the camera started: ms after the app was built (the wall
/// clock, when the update's `start_camera` saw it), reported as `startup.models_ready_ms`.
#[derive(Resource)]
pub struct ModelsReady {
    /// When the app was built.
    pub since: std::time::Instant,
    /// Once ready, ms after `since`.
    pub ms: Option<f64>,
}

impl Default for ModelsReady {
    fn default() -> Self {
        ModelsReady {
            since: std::time::Instant::now(),
            ms: None,
        }
    }
}

fn start_camera(
    mut commands: Commands,
    mut stats: ResMut<HeimdallStats>,
    dnns: Query<&DnnStatus>,
    mut pending: Query<(Entity, &mut PendingSource)>,
    mut ready: ResMut<ModelsReady>,
) {
    let Ok((e, mut p)) = pending.single_mut() else {
        return;
    };
    if dnns.is_empty() || dnns.iter().any(DnnStatus::is_pending) {
        return;
    }
    if let Some(source) = p.0.take() {
        ready.ms = Some(ready.since.elapsed().as_secs_f64() * 1e3);
        stats.reset();
        commands.entity(e).insert(source).remove::<PendingSource>();
        info!("every model is ready; the camera starts");
    }
}

/// `--no-conv-cache`: no DNN gets the convolution cache, whatever the app asks for (the plugin's
/// default, `ConvCache::Auto`, included).
fn no_conv_cache(add: On<Add, Dnn>, mut dnns: Query<&mut Dnn>) {
    if let Ok(mut dnn) = dnns.get_mut(add.entity) {
        dnn.conv_cache = ConvCache::Off;
    }
}

fn on_dnn_failed(failed: On<DnnFailed>, args: Res<AppArgs>, mut exit: MessageWriter<AppExit>) {
    error!("DNN {} failed: {}", failed.entity, failed.error);
    if args.headless {
        eprintln!("error: {}", failed.error);
        exit.write(AppExit::error());
    }
}

fn on_camera_failed(
    failed: On<CameraFailed>,
    args: Res<AppArgs>,
    mut exit: MessageWriter<AppExit>,
) {
    if args.headless {
        eprintln!("error: the camera failed: {}", failed.error);
        exit.write(AppExit::error());
    }
}

fn scripted_events(
    args: Res<AppArgs>,
    camera: Option<Res<HarnessCamera>>,
    frames: Query<&CameraFrame>,
    time: Res<Time>,
    mut next: Local<Option<f64>>,
    mut count: Local<u64>,
    mut events: MessageWriter<ScriptedEvent>,
) {
    // Events start with the camera (after the models are compiled).
    let running = camera.is_some_and(|c| frames.get(c.0).is_ok());
    if args.events <= 0.0 || !running {
        return;
    }
    let now = time.elapsed_secs_f64();
    let due = next.get_or_insert(now + args.events);
    if now >= *due {
        *due += args.events;
        events.write(ScriptedEvent { index: *count });
        *count += 1;
    }
}

/// The camera frame from which the run counts (`--frames`, `--warmup`, `--save-every`): the
/// first one at which every DNN is compiled and no f16 accuracy guard is checking its model,
/// once every guard has decided or [`GUARD_GRACE_FRAMES`] camera frames have passed since the
/// DNNs were compiled. Until then the DNNs run their f32 stand-ins and the guards' checks share
/// the device: start-up, not the run. A guard still waiting for its input after the grace
/// frames belongs to a DNN nobody asked to run yet (a second hand's landmarks with one hand in
/// view): waiting for it would wait for ever.
#[derive(Resource, Default)]
pub struct RunStart(pub Option<u64>);

impl RunStart {
    /// Frame `index` counted from the run's start, if the run has started.
    pub fn frame(&self, index: u64) -> Option<u64> {
        self.0.map(|s| index.saturating_sub(s))
    }
}

/// Camera frames after every DNN compiled by which each DNN that runs has had its first
/// inference (and so its guard's calibration input).
pub const GUARD_GRACE_FRAMES: u64 = 30;

fn mark_run_start(
    camera: Option<Res<HarnessCamera>>,
    frames: Query<&CameraFrame>,
    dnns: Query<&DnnStatus>,
    guards: Query<&GuardStatus>,
    mut start: ResMut<RunStart>,
    mut compiled_at: Local<Option<u64>>,
) {
    let Some(camera) = camera else { return };
    let Ok(f) = frames.get(camera.0) else { return };
    if dnns.iter().any(DnnStatus::is_pending) {
        return;
    }
    let compiled = *compiled_at.get_or_insert(f.index);
    let waiting = |g: &GuardStatus| match g {
        GuardStatus::Checking => true,
        GuardStatus::Pending => f.index < compiled + GUARD_GRACE_FRAMES,
        _ => false,
    };
    if start.0.is_none() && !guards.iter().any(waiting) {
        start.0 = Some(f.index);
        if f.index > 0 {
            info!(
                "no f16 guard is checking; the run counts from camera frame {}",
                f.index
            );
        }
    }
}

/// Screenshots asked for and written: the run ends once every one asked for is on disk (a
/// screenshot arrives a few frames after it is asked for; exiting before loses it).
#[derive(Resource, Default, Debug)]
pub struct Shots {
    /// Asked for.
    pub asked: u64,
    /// Written (or failed to write: counted, so the exit never waits for ever).
    pub saved: u64,
}

/// How long the exit waits for screenshots still on their way.
const SHOTS_TIMEOUT: Duration = Duration::from_secs(60);

fn save_frames(
    args: Res<AppArgs>,
    camera: Option<Res<HarnessCamera>>,
    target: Option<Res<HarnessTarget>>,
    frames: Query<&CameraFrame>,
    start: Res<RunStart>,
    mut commands: Commands,
    (mut shots, mut last): (ResMut<Shots>, Local<Option<u64>>),
) {
    let (Some(out), k, Some(camera)) = (&args.out, args.save_every, camera) else {
        return;
    };
    let Ok(f) = frames.get(camera.0) else { return };
    let Some(i) = start.frame(f.index) else {
        return;
    };
    let past_end = args.frames.is_some_and(|n| i >= n);
    if k == 0 || i % k != 0 || past_end || *last == Some(i) {
        return;
    }
    *last = Some(i);
    let path: PathBuf = out.join(format!("frame_{i:05}.png"));
    let shot = match target.and_then(|t| t.0.clone()) {
        Some(t) => Screenshot::image(t),
        None => Screenshot::primary_window(),
    };
    shots.asked += 1;
    commands
        .spawn(shot)
        .observe(save_to_disk(path))
        .observe(|_: On<ScreenshotCaptured>, mut shots: ResMut<Shots>| shots.saved += 1);
}

/// What happened before the measured window (`frames` camera frames from the camera's start:
/// start-up and warm-up): when every model was ready (`ready_ms`), the frame pacing with the
/// late frames' render phases, and per model its results, deadline misses and latencies.
fn startup_summary(
    stats: &serde_json::Value,
    frames: u64,
    ready_ms: Option<f64>,
) -> serde_json::Value {
    let models: serde_json::Map<String, serde_json::Value> = stats["models"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, m)| {
            let v = serde_json::json!({
                "count": m["count"],
                "deadline_misses": m["deadline_misses"],
                "deadline_miss_rate": m["deadline_miss_rate"],
                "latency_ms": m["latency_ms"],
            });
            (name.clone(), v)
        })
        .collect();
    serde_json::json!({
        "frames": frames,
        "models_ready_ms": ready_ms,
        "wall_on_time_rate": stats["wall_on_time_rate"],
        "frame_interval_ms": stats["frame_interval_ms"],
        "late_frames": stats["late_frames"],
        "late_frame_phases": stats["late_frame_phases"],
        "models": models,
    })
}

/// What the run's end reads and writes: the plugin's statistics, settings, backend, trace and
/// recording, the app's report, and the pacer's and the swapchain's logs when they exist.
#[derive(SystemParam)]
struct RunOutputs<'w> {
    stats: ResMut<'w, HeimdallStats>,
    settings: Res<'w, HeimdallSettings>,
    backend: Res<'w, HeimdallBackend>,
    app_report: ResMut<'w, AppReport>,
    pacer: Option<ResMut<'w, PacerLog>>,
    swapchain: Option<Res<'w, crate::swapchain::SwapchainWaits>>,
    trace: ResMut<'w, HeimdallTrace>,
    recording: ResMut<'w, HeimdallRecording>,
    frame_start: Option<Res<'w, LateFrameStart>>,
    camera_phase: Option<Res<'w, CameraPhaseLock>>,
}

#[allow(clippy::too_many_arguments)]
fn finish_after_frames(
    args: Res<AppArgs>,
    camera: Option<Res<HarnessCamera>>,
    frames: Query<&CameraFrame>,
    mut run: RunOutputs,
    (start, ready): (Res<RunStart>, Res<ModelsReady>),
    mut exit: MessageWriter<AppExit>,
    (shots, mut shots_since): (Res<Shots>, Local<Option<std::time::Instant>>),
    (mut done, mut windowed): (Local<bool>, Local<bool>),
    mut report: Local<Option<serde_json::Value>>,
    mut timed_end: Local<(Option<std::time::Instant>, Option<u64>)>,
) {
    let Some(camera) = camera else { return };
    let Ok(f) = frames.get(camera.0) else { return };
    let (Some(i), Some(offset)) = (start.frame(f.index), start.0) else {
        return;
    };
    // The measured window starts after the warm-up: the statistics are reset there, so the
    // DNNs' figures (results, latencies, deadline misses) cover the same frames as the pacing
    // figures. What the DNNs did before (start-up: compilation, the guards' checks, the
    // warm-up) stays in the report under `startup`.
    if i >= args.warmup && !*windowed {
        *windowed = true;
        run.start_window(&args, offset + args.warmup, ready.ms);
    }
    // Before the window starts (a run shorter than its warm-up), the frame figures skip the
    // warm-up counted from the camera's start.
    let skip = if *windowed { 0 } else { args.warmup + offset };
    let run_args = || AppArgs {
        warmup: skip,
        ..(*args).clone()
    };
    // `--duration`: the run ends a few frames after that much time from the first camera frame
    // (the statistics end five frames before the exit, as with `--frames`).
    if let Some(d) = args.duration {
        let start = *timed_end.0.get_or_insert_with(std::time::Instant::now);
        if timed_end.1.is_none() && start.elapsed().as_secs_f64() >= d {
            timed_end.1 = Some(i + 6);
        }
    }
    if i == args.warmup {
        run.start_logs();
    }
    let Some(n) = args.frames.or(timed_end.1) else {
        return;
    };
    // The statistics end before the trace is asked for: writing the coordinator's timeline out
    // takes the render thread a few milliseconds, which would show as a late frame of the app.
    if args.out.is_some() && i + 5 == n {
        *report = Some(run.end_statistics(&args, n, &run_args()));
    }
    if *done {
        // Every screenshot asked for is written before the exit.
        let waited = shots_since
            .get_or_insert_with(std::time::Instant::now)
            .elapsed();
        if shots.saved >= shots.asked || waited > SHOTS_TIMEOUT {
            if shots.saved < shots.asked {
                error!(
                    "{} of {} screenshots not written after {} s",
                    shots.asked - shots.saved,
                    shots.asked,
                    SHOTS_TIMEOUT.as_secs()
                );
            }
            exit.write(AppExit::Success);
        }
        return;
    }
    if i + 1 < n {
        return;
    }
    *done = true;
    if let Some(out) = &args.out
        && let Err(e) = run.write(out, report.take(), &run_args())
    {
        error!("writing stats.json: {e}");
        exit.write(AppExit::error());
        return;
    }
    if shots.saved >= shots.asked {
        exit.write(AppExit::Success);
    }
}

impl RunOutputs<'_> {
    /// The measured window starts at camera frame `first`: what the DNNs did before goes into
    /// the report's `startup`, the statistics restart, and the recording starts when asked.
    fn start_window(&mut self, args: &AppArgs, first: u64, ready_ms: Option<f64>) {
        let before = self.stats.to_json(&self.settings, &self.backend.name(), 0);
        self.app_report
            .0
            .insert("startup".into(), startup_summary(&before, first, ready_ms));
        self.stats.reset();
        if args.record_run {
            self.recording.start();
        }
        if let Some(f) = &self.frame_start {
            let (waits, waited) = f.camera_waits();
            self.app_report.0.insert(
                "frame_start".into(),
                serde_json::json!([f.delayed_updates(), waits, waited]),
            );
        }
    }

    /// The late frame start over the measured window (`frame_start` in `stats.json`): the
    /// delay at its end, the updates delayed, and those that waited for a camera frame (the
    /// camera phase lock) with their mean wait.
    fn frame_start_summary(&self) -> Option<serde_json::Value> {
        let f = self.frame_start.as_ref()?;
        let at_start = self.app_report.0.get("frame_start");
        let was = |i: usize| at_start.and_then(|v| v[i].as_f64()).unwrap_or(0.0);
        let (waits, waited) = f.camera_waits();
        let (waits, waited) = (waits as f64 - was(1), waited - was(2));
        Some(serde_json::json!({
            "camera_phase_lock": self.camera_phase.as_ref().is_some_and(|l| l.enabled),
            "delay_ms": f.delay_ms(),
            "delayed_updates": f.delayed_updates() as f64 - was(0),
            "camera_waits": waits,
            "camera_wait_ms_mean": if waits > 0.0 { waited / waits } else { 0.0 },
        }))
    }

    /// The pacer's and the swapchain's logs start with the measured window.
    fn start_logs(&mut self) {
        if let Some(p) = self.pacer.as_mut() {
            p.start();
        }
        if let Some(s) = &self.swapchain {
            s.start();
        }
    }

    /// Five frames before the exit at frame `n`: the report with the screenshots asked for and
    /// the pacer's and swapchain's logs; the trace (and the recording, when made) asked for.
    fn end_statistics(&mut self, args: &AppArgs, n: u64, run_args: &AppArgs) -> serde_json::Value {
        // The frames this run writes (every `--save-every`-th of its `n`), all of them before
        // the exit.
        let asked = match args.save_every {
            0 => 0,
            k => n.div_ceil(k),
        };
        self.app_report.0.insert(
            "screenshots".into(),
            serde_json::json!({"save_every": args.save_every, "frames": asked}),
        );
        if let Some(p) = &self.pacer {
            self.app_report.0.insert("pacer".into(), p.to_json());
        }
        if let Some(s) = &self.swapchain {
            self.app_report.0.insert("swapchain".into(), s.to_json());
        }
        if let Some(f) = self.frame_start_summary() {
            self.app_report.0.insert("frame_start".into(), f);
        }
        let report = report::report(
            &self.stats,
            &self.settings,
            &self.backend,
            run_args,
            &self.app_report,
        );
        self.trace.request();
        if args.record_run {
            self.recording.request();
        }
        report
    }

    /// Writes `stats.json` (`report`, else made now), the trace and the recording into `out`.
    fn write(
        &mut self,
        out: &std::path::Path,
        report: Option<serde_json::Value>,
        run_args: &AppArgs,
    ) -> std::io::Result<()> {
        let r = report.unwrap_or_else(|| {
            report::report(
                &self.stats,
                &self.settings,
                &self.backend,
                run_args,
                &self.app_report,
            )
        });
        report::write(out, &r)?;
        if let Some(t) = self.trace.take() {
            let _ = std::fs::write(out.join("trace.json"), t);
        }
        if let Some(r) = self.recording.take() {
            let _ = std::fs::write(out.join("scenario.json"), r.scenario_json);
            let _ = std::fs::write(out.join("replay.json"), r.replay_json);
        }
        info!("wrote {}", out.join("stats.json").display());
        Ok(())
    }
}
