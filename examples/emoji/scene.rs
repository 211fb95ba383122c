//! The emoji AR scene, shared by the example's `main` and its tests: the camera frame as
//! background, the person mask (selfie segmentation) used for a background effect, and an
//! emoji anchored and scaled to the detected face (BlazeFace) and rolled with the face mesh
//! (face_landmark). All three models run continuously under the coordinator.

use std::path::PathBuf;
use std::time::Duration;

use bevy::app::{AppExit, ScheduleRunnerPlugin};
use bevy::asset::RenderAssetUsages;
use bevy::camera::RenderTarget;
use bevy::prelude::*;
use bevy::render::render_resource::{AsBindGroup, Extent3d, TextureDimension, TextureFormat};
use bevy::render::view::window::screenshot::{Screenshot, save_to_disk};
use bevy::shader::ShaderRef;
use bevy::sprite_render::{Material2d, Material2dPlugin};
use bevy::window::ExitCondition;
use bevy::winit::WinitPlugin;
use heimdall_bevy::camera::ClipSource;
use heimdall_bevy::overlay::OverlayPlugin;
use heimdall_bevy::prelude::*;
use serde_json::json;

/// The workspace's `assets/` folder.
pub fn assets_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../assets"))
}

/// Command-line options of the example.
#[derive(Resource, Clone, Debug)]
pub struct EmojiArgs {
    /// Render into an image instead of a window.
    pub headless: bool,
    /// Exit after this many frames (headless default: 300).
    pub frames: Option<u64>,
    /// Where PNG frames and `stats.json` go.
    pub out: Option<PathBuf>,
    /// Save every k-th frame as PNG (0: none).
    pub save_every: u64,
    /// Coordination mode.
    pub mode: CoordinationMode,
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
    /// Extra continuous copies of the selfie segmentation model (load experiments).
    pub extra_models: u32,
    /// Extra fragment work per background pixel (load experiments).
    pub scene_load: u32,
    /// Warm-up frames left out of the frame statistics.
    pub warmup: u64,
}

impl Default for EmojiArgs {
    fn default() -> Self {
        EmojiArgs {
            headless: false,
            frames: None,
            out: None,
            save_every: 10,
            mode: CoordinationMode::Heimdall,
            fps: 60.0,
            width: 320,
            height: 240,
            force_cpu: false,
            webcam: false,
            extra_models: 0,
            scene_load: 0,
            warmup: 30,
        }
    }
}

impl EmojiArgs {
    /// Parses `std::env::args`-style arguments (without the program name).
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut a = EmojiArgs::default();
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
            match arg.as_str() {
                "--headless" => a.headless = true,
                "--frames" => a.frames = Some(parse_num(&value("--frames")?)?),
                "--out" => a.out = Some(PathBuf::from(value("--out")?)),
                "--save-every" => a.save_every = parse_num(&value("--save-every")?)?,
                "--mode" => {
                    let v = value("--mode")?;
                    a.mode = CoordinationMode::parse(&v)
                        .ok_or(format!("--mode {v}: expected heimdall, fifo or layers:K"))?;
                }
                "--fps" => a.fps = parse_num(&value("--fps")?)?,
                "--size" => {
                    let v = value("--size")?;
                    let (w, h) = v
                        .split_once('x')
                        .ok_or(format!("--size {v}: expected WxH"))?;
                    a.width = parse_num(w)?;
                    a.height = parse_num(h)?;
                }
                "--force-cpu" => a.force_cpu = true,
                "--webcam" => a.webcam = true,
                "--extra-models" => a.extra_models = parse_num(&value("--extra-models")?)?,
                "--scene-load" => a.scene_load = parse_num(&value("--scene-load")?)?,
                "--warmup" => a.warmup = parse_num(&value("--warmup")?)?,
                "-h" | "--help" => return Err(USAGE.into()),
                other => return Err(format!("unknown argument {other}\n{USAGE}")),
            }
        }
        if a.headless && a.frames.is_none() {
            a.frames = Some(300);
        }
        if !a.fps.is_finite() || a.fps <= 0.0 || a.width == 0 || a.height == 0 {
            return Err("--fps and --size must be positive".into());
        }
        Ok(a)
    }
}

fn parse_num<T: std::str::FromStr>(s: &str) -> Result<T, String> {
    s.parse().map_err(|_| format!("{s:?} is not a number"))
}

/// Usage text.
pub const USAGE: &str = "usage: emoji [--headless] [--frames N] [--out DIR] [--save-every K]
             [--mode heimdall|fifo|layers:K] [--fps F] [--size WxH] [--force-cpu]
             [--webcam] [--extra-models N] [--scene-load N] [--warmup N]";

/// The background's material: camera frame, person mask, effect parameters.
#[derive(Asset, TypePath, AsBindGroup, Clone, Debug)]
pub struct BackgroundMaterial {
    /// x: strength, y: has mask, z: extra work iterations.
    #[uniform(0)]
    pub params: Vec4,
    /// The camera frame.
    #[texture(1)]
    #[sampler(2)]
    pub camera: Handle<Image>,
    /// The person mask.
    #[texture(3)]
    #[sampler(4)]
    pub mask: Handle<Image>,
}

const BACKGROUND_SHADER: Handle<Shader> =
    bevy::asset::uuid_handle!("5a1f0f4e-4a53-4d67-9b6c-1c8a7d0e3b21");

impl Material2d for BackgroundMaterial {
    fn fragment_shader() -> ShaderRef {
        BACKGROUND_SHADER.into()
    }
}

#[derive(Resource, Clone)]
struct Scene {
    args: EmojiArgs,
    target: Option<Handle<Image>>,
    camera_source: Entity,
    detector: Entity,
    mesh: Entity,
    selfie: Entity,
    background: Handle<BackgroundMaterial>,
    clip: Option<heimdall_vision::Clip>,
}

#[derive(Component)]
struct Emoji;

/// The camera source, held back until the models are ready.
#[derive(Component)]
struct PendingSource(Option<CameraSource>);

fn start_camera(
    mut commands: Commands,
    shared: Res<HeimdallShared>,
    mut stats: ResMut<HeimdallStats>,
    dnns: Query<(), With<Dnn>>,
    mut pending: Query<(Entity, &mut PendingSource)>,
) {
    let Ok((e, mut p)) = pending.single_mut() else {
        return;
    };
    let statuses = shared.statuses();
    let ready =
        statuses.len() == dnns.iter().count() && statuses.iter().all(|(_, _, s)| s != "compiling");
    if !ready {
        return;
    }
    if let Some(source) = p.0.take() {
        stats.reset();
        commands.entity(e).insert(source).remove::<PendingSource>();
        info!("every model is ready; the camera starts");
    }
}

/// Face boxes per frame, for `stats.json`.
#[derive(Resource, Default)]
struct FaceLog(Vec<serde_json::Value>);

/// Builds the app for `args` (not run).
pub fn build_app(args: EmojiArgs) -> App {
    let mut app = App::new();
    let asset_plugin = AssetPlugin {
        file_path: assets_dir().to_string_lossy().into_owned(),
        ..default()
    };
    if args.headless {
        app.add_plugins((
            DefaultPlugins
                .set(asset_plugin)
                .set(WindowPlugin {
                    primary_window: None,
                    exit_condition: ExitCondition::DontExit,
                    ..default()
                })
                .disable::<WinitPlugin>(),
            ScheduleRunnerPlugin::run_loop(Duration::from_secs_f64(1.0 / args.fps)),
        ));
    } else {
        app.add_plugins(DefaultPlugins.set(asset_plugin).set(WindowPlugin {
            primary_window: Some(Window {
                title: "heimdall: emoji".into(),
                resolution: (args.width.max(640), args.height.max(480)).into(),
                ..default()
            }),
            ..default()
        }));
    }
    let settings = HeimdallSettings {
        frame_rate: FrameRateTarget::Fixed(args.fps),
        mode: args.mode,
        force_cpu: args.force_cpu,
        ..default()
    };
    app.add_plugins((
        HeimdallPlugin::new(settings),
        OverlayPlugin::default(),
        Material2dPlugin::<BackgroundMaterial>::default(),
    ))
    .insert_resource(ClearColor(Color::BLACK))
    .insert_resource(args.clone())
    .init_resource::<FaceLog>()
    .add_systems(Startup, setup)
    .add_systems(
        Update,
        (
            start_camera,
            show_camera_frame,
            place_emoji,
            log_faces,
            save_frames,
            finish_after_frames,
        ),
    );
    if args.headless
        && let Some(render_app) = app.get_sub_app_mut(bevy::render::RenderApp)
    {
        render_app
            .init_resource::<SwapchainEmulation>()
            .add_systems(
                bevy::render::renderer::RenderGraph,
                emulate_swapchain.in_set(bevy::render::renderer::RenderGraphSystems::Finish),
            );
    }
    let shader = Shader::from_wgsl(
        include_str!("../../shaders/emoji_background.wgsl"),
        "shaders/emoji_background.wgsl",
    );
    if let Err(e) = app
        .world_mut()
        .resource_mut::<Assets<Shader>>()
        .insert(BACKGROUND_SHADER.id(), shader)
    {
        error!("registering the background shader: {e}");
    }
    app
}

fn camera_source(args: &EmojiArgs) -> (CameraSource, Option<heimdall_vision::Clip>) {
    let clip_dir = assets_dir().join("clips/astronaut_pan");
    #[cfg(feature = "webcam")]
    if args.webcam {
        match heimdall_bevy::webcam::WebcamSource::open(0, args.width, args.height) {
            Ok(cam) => return (CameraSource::new(cam, FramePacing::EveryUpdate), None),
            Err(e) => warn!("{e}; falling back to the bundled clip"),
        }
    }
    #[cfg(not(feature = "webcam"))]
    if args.webcam {
        warn!("built without the `webcam` feature; using the bundled clip");
    }
    // One load of the clip: the source plays it, the stats read its ground truth.
    match heimdall_vision::Clip::load(&clip_dir) {
        Ok(clip) => (
            CameraSource::new(ClipSource::new(clip.clone()), FramePacing::EveryUpdate),
            Some(clip),
        ),
        Err(e) => {
            warn!("{}: {e}; using the synthetic source", clip_dir.display());
            (CameraSource::synthetic(args.width, args.height), None)
        }
    }
}

/// A smiley, drawn procedurally (no image asset to license).
fn smiley(size: u32) -> Image {
    let mut data = vec![0u8; (size * size * 4) as usize];
    let c = size as f32 / 2.0;
    for y in 0..size {
        for x in 0..size {
            let (dx, dy) = (x as f32 + 0.5 - c, y as f32 + 0.5 - c);
            let r = (dx * dx + dy * dy).sqrt() / c;
            let eye = |ex: f32| {
                let (a, b) = (dx - ex * c, dy + 0.25 * c);
                (a * a / 0.01 + b * b / 0.03) / (c * c) < 1.0
            };
            let mouth = r > 0.45 && r < 0.6 && dy > 0.15 * c;
            let px = if r > 1.0 {
                [0, 0, 0, 0]
            } else if r > 0.94 || eye(-0.33) || eye(0.33) || mouth {
                [60, 40, 10, 255]
            } else {
                [255, 205, 40, 255]
            };
            let i = ((y * size + x) * 4) as usize;
            data[i..i + 4].copy_from_slice(&px);
        }
    }
    Image::new(
        Extent3d {
            width: size,
            height: size,
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        data,
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::RENDER_WORLD,
    )
}

#[allow(clippy::too_many_arguments)]
fn setup(
    mut commands: Commands,
    args: Res<EmojiArgs>,
    assets: Res<AssetServer>,
    mut images: ResMut<Assets<Image>>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<BackgroundMaterial>>,
) {
    let (w, h) = (args.width, args.height);
    if let Some(out) = &args.out
        && let Err(e) = std::fs::create_dir_all(out)
    {
        error!("creating {}: {e}", out.display());
    }
    let target = args.headless.then(|| {
        let image = Image::new_target_texture(w, h, TextureFormat::Rgba8UnormSrgb, None);
        images.add(image)
    });
    // The overlay's UI draws on this camera (there is no window to default to when headless).
    let mut camera = commands.spawn((Camera2d, IsDefaultUiCamera));
    if let Some(t) = &target {
        camera.insert(RenderTarget::Image(t.clone().into()));
    }
    // The view shows the frame at w x h world units, whatever the window size.
    camera.insert(Projection::Orthographic(OrthographicProjection {
        scaling_mode: bevy::camera::ScalingMode::Fixed {
            width: w as f32,
            height: h as f32,
        },
        ..OrthographicProjection::default_2d()
    }));

    // The camera starts once every model is compiled and warmed (see `start_camera`), so
    // the frame statistics measure the steady state.
    let (source, clip) = camera_source(&args);
    let camera_source = commands.spawn(PendingSource(Some(source))).id();
    let detector = commands
        .spawn(
            Dnn::new(
                assets.load("models/face_detection_short_range.tflite"),
                camera_source,
            )
            .with_crop(InputCrop::Letterbox)
            .with_normalization(Normalization::MINUS_ONE_TO_ONE)
            .with_decoder(Decoder::BlazeFace)
            .with_deadline(Duration::from_millis(100))
            .with_utility(UtilityParams::default()),
        )
        .id();
    let mesh = commands
        .spawn(
            Dnn::new(assets.load("models/face_landmark.tflite"), camera_source)
                .with_crop(InputCrop::FaceOf(detector))
                .with_normalization(Normalization::ZERO_TO_ONE)
                .with_decoder(Decoder::FaceMesh)
                .with_deadline(Duration::from_millis(100)),
        )
        .id();
    let selfie = commands
        .spawn(
            Dnn::new(
                assets.load("models/selfie_segmentation.tflite"),
                camera_source,
            )
            .with_normalization(Normalization::ZERO_TO_ONE)
            .with_decoder(Decoder::PersonMask)
            .with_deadline(Duration::from_millis(200)),
        )
        .id();
    for _ in 0..args.extra_models {
        commands.spawn(
            Dnn::new(
                assets.load("models/selfie_segmentation.tflite"),
                camera_source,
            )
            .with_normalization(Normalization::ZERO_TO_ONE)
            .with_deadline(Duration::from_millis(200)),
        );
    }
    let placeholder = images.add(Image::new_fill(
        Extent3d {
            width: 1,
            height: 1,
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        &[255],
        TextureFormat::R8Unorm,
        RenderAssetUsages::RENDER_WORLD,
    ));
    let background = materials.add(BackgroundMaterial {
        params: Vec4::new(0.8, 0.0, args.scene_load as f32, 0.0),
        camera: placeholder.clone(),
        mask: placeholder,
    });
    commands.spawn((
        Mesh2d(meshes.add(Rectangle::new(w as f32, h as f32))),
        MeshMaterial2d(background.clone()),
        Transform::default(),
    ));
    commands.spawn((
        Emoji,
        Sprite {
            image: images.add(smiley(128)),
            custom_size: Some(Vec2::splat(64.0)),
            ..default()
        },
        Transform::from_xyz(0.0, 0.0, 1.0),
        Visibility::Hidden,
    ));
    commands.insert_resource(Scene {
        args: args.clone(),
        target,
        camera_source,
        detector,
        mesh,
        selfie,
        background,
        clip,
    });
}

/// Frame uv to world (the frame spans w x h world units, centred, y up).
fn to_world(uv: Vec2, w: f32, h: f32) -> Vec2 {
    Vec2::new((uv.x - 0.5) * w, (0.5 - uv.y) * h)
}

fn show_camera_frame(
    scene: Res<Scene>,
    frames: Query<&CameraFrame>,
    masks: Query<&PersonMask>,
    mut materials: ResMut<Assets<BackgroundMaterial>>,
) {
    let Some(mut m) = materials.get_mut(&scene.background) else {
        return;
    };
    if let Ok(f) = frames.get(scene.camera_source)
        && m.camera != f.image
    {
        m.camera = f.image.clone();
    }
    if let Ok(mask) = masks.get(scene.selfie)
        && m.mask != mask.image
    {
        m.mask = mask.image.clone();
        m.params.y = 1.0;
    }
}

fn place_emoji(
    scene: Res<Scene>,
    faces: Query<&FaceDetections>,
    meshes: Query<&FaceMeshResult>,
    mut emoji: Query<(&mut Transform, &mut Sprite, &mut Visibility), With<Emoji>>,
) {
    let Ok((mut t, mut sprite, mut vis)) = emoji.single_mut() else {
        return;
    };
    let (w, h) = (scene.args.width as f32, scene.args.height as f32);
    let Some(face) = faces.get(scene.detector).ok().and_then(|f| f.faces.first()) else {
        *vis = Visibility::Hidden;
        return;
    };
    let centre = Vec2::new(
        face.bbox.x + face.bbox.w / 2.0,
        face.bbox.y + face.bbox.h / 2.0,
    );
    let size = (face.bbox.w * w).max(face.bbox.h * h) * 1.3;
    let mut roll = 0.0;
    if let Ok(m) = meshes.get(scene.mesh)
        && m.mesh.presence > 0.5
    {
        // Screen y points down in uv, up in the world: the roll flips sign.
        roll = -m.mesh.head_pose().roll;
    }
    let p = to_world(centre, w, h);
    *t = Transform::from_xyz(p.x, p.y, 1.0).with_rotation(Quat::from_rotation_z(roll));
    sprite.custom_size = Some(Vec2::splat(size));
    *vis = Visibility::Visible;
}

fn log_faces(scene: Res<Scene>, mut results: MessageReader<DnnResult>, mut log: ResMut<FaceLog>) {
    for r in results.read() {
        if r.entity != scene.detector {
            continue;
        }
        let Decoded::Faces(faces) = &r.decoded else {
            continue;
        };
        let boxes: Vec<[f32; 5]> = faces
            .iter()
            .map(|f| [f.bbox.x, f.bbox.y, f.bbox.w, f.bbox.h, f.score])
            .collect();
        let truth = scene.clip.as_ref().and_then(|c| {
            c.ground_truth(r.output.frame_index as usize % c.len().max(1))
                .map(|b| [b.x, b.y, b.w, b.h])
        });
        log.0.push(json!({
            "frame_index": r.output.frame_index,
            "latency_ms": r.output.latency.as_secs_f64() * 1e3,
            "boxes": boxes,
            "ground_truth": truth,
        }));
    }
}

fn save_frames(scene: Res<Scene>, frames: Query<&CameraFrame>, mut commands: Commands) {
    let (Some(out), k) = (&scene.args.out, scene.args.save_every) else {
        return;
    };
    let Ok(f) = frames.get(scene.camera_source) else {
        return;
    };
    // Not on the last frame: the app exits before a screenshot of it could arrive.
    let last = scene.args.frames.is_some_and(|n| f.index + 1 >= n);
    if k == 0 || f.index % k != 0 || last {
        return;
    }
    let path = out.join(format!("frame_{:05}.png", f.index));
    let shot = match &scene.target {
        Some(t) => Screenshot::image(t.clone()),
        None => Screenshot::primary_window(),
    };
    commands.spawn(shot).observe(save_to_disk(path));
}

/// Writes `stats.json` into `out` (creating it).
pub fn write_stats(
    out: &std::path::Path,
    stats: &HeimdallStats,
    settings: &HeimdallSettings,
    shared: &HeimdallShared,
    faces: &[serde_json::Value],
    args: &EmojiArgs,
) -> std::io::Result<()> {
    std::fs::create_dir_all(out)?;
    let mut v = stats.to_json(settings, &shared.backend(), args.warmup as usize);
    v["adapter"] = json!(shared.adapter());
    v["instances"] = json!(shared.instance_names());
    v["args"] = json!({
        "size": [args.width, args.height],
        "fps": args.fps,
        "extra_models": args.extra_models,
        "scene_load": args.scene_load,
        "force_cpu": args.force_cpu,
    });
    v["faces"] = json!(faces);
    let with_face: Vec<&serde_json::Value> = faces
        .iter()
        .filter(|f| f["boxes"].as_array().is_some_and(|b| !b.is_empty()))
        .collect();
    v["face_results"] = json!(faces.len());
    v["face_results_with_a_face"] = json!(with_face.len());
    std::fs::write(out.join("stats.json"), serde_json::to_string_pretty(&v)?)
}

#[allow(clippy::too_many_arguments)]
fn finish_after_frames(
    scene: Res<Scene>,
    frames: Query<&CameraFrame>,
    stats: Res<HeimdallStats>,
    settings: Res<HeimdallSettings>,
    shared: Res<HeimdallShared>,
    log: Res<FaceLog>,
    mut exit: MessageWriter<AppExit>,
    mut done: Local<bool>,
) {
    let Some(n) = scene.args.frames else { return };
    let Ok(f) = frames.get(scene.camera_source) else {
        return;
    };
    if scene.args.out.is_some() && f.index + 5 == n {
        shared.request_trace();
    }
    if *done || f.index + 1 < n {
        return;
    }
    *done = true;
    if let Some(out) = &scene.args.out {
        if let Err(e) = write_stats(out, &stats, &settings, &shared, &log.0, &scene.args) {
            error!("writing stats.json: {e}");
            exit.write(AppExit::error());
            return;
        }
        if let Some(trace) = shared.take_trace() {
            let _ = std::fs::write(out.join("trace.json"), trace);
        }
        info!("wrote {}", out.join("stats.json").display());
    }
    exit.write(AppExit::Success);
}

/// Headless runs have no swap chain, so nothing stops the CPU from queueing frames faster than
/// the GPU finishes them (a window's `present` does). This emulates a swap chain of 3 images:
/// after submitting a frame, the render thread waits while 3 frames are still unfinished. It is
/// the example's stand-in for a display; the plugin itself never waits on the GPU.
#[derive(Resource, Default)]
struct SwapchainEmulation {
    submitted: u64,
    done: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

fn emulate_swapchain(
    queue: Res<bevy::render::renderer::RenderQueue>,
    device: Res<bevy::render::renderer::RenderDevice>,
    mut s: ResMut<SwapchainEmulation>,
) {
    use std::sync::atomic::Ordering;
    s.submitted += 1;
    let done = s.done.clone();
    queue.on_submitted_work_done(move || {
        done.fetch_add(1, Ordering::AcqRel);
    });
    let start = std::time::Instant::now();
    while s.submitted.saturating_sub(s.done.load(Ordering::Acquire)) >= 3
        && start.elapsed() < Duration::from_secs(5)
    {
        let _ = device.poll(wgpu::PollType::Wait {
            submission_index: None,
            timeout: Some(Duration::from_millis(100)),
        });
    }
}
