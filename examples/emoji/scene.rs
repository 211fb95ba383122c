//! The emoji AR scene: the camera frame as background, the person mask (selfie segmentation)
//! used for a background effect, and an emoji anchored and scaled to the detected face
//! (BlazeFace) and rolled with the face mesh (face_landmark). All three models run continuously
//! under the coordinator.

use std::path::Path;
use std::time::Duration;

use bevy::asset::RenderAssetUsages;
use bevy::prelude::*;
use bevy::render::render_resource::{AsBindGroup, Extent3d, TextureDimension, TextureFormat};
use bevy::shader::ShaderRef;
use bevy::sprite_render::{Material2d, Material2dPlugin};
use heimdall_bevy::prelude::*;
use heimdall_examples::args::AppArgs;
use heimdall_examples::clip_source::{self, load_clip};
use heimdall_examples::harness::{self, HarnessTarget};
use heimdall_examples::report::AppReport;
use heimdall_testkit::Clip;
use serde_json::json;

/// Files the scene needs (relative to `assets/`).
pub const ASSETS: &[&str] = &[
    "clips/astronaut_pan/clip.json",
    "models/face_detection_short_range.tflite",
    "models/face_landmark.tflite",
    "models/selfie_segmentation.tflite",
];

/// The scene as a plugin.
pub struct EmojiScene {
    clip: Clip,
}

impl EmojiScene {
    /// Loads the bundled clip (the camera and its face ground truth).
    pub fn load(assets: &Path) -> Result<Self, String> {
        Ok(EmojiScene {
            clip: load_clip(&assets.join("clips/astronaut_pan"))?,
        })
    }
}

impl Plugin for EmojiScene {
    fn build(&self, app: &mut App) {
        app.add_plugins(Material2dPlugin::<BackgroundMaterial>::default())
            .insert_resource(GroundTruth(self.clip.clone()))
            .init_resource::<Skew>()
            .add_systems(Startup, setup)
            .add_systems(
                Update,
                (show_camera_frame, place_emoji, report_skew).chain(),
            );
        let shader = Shader::from_wgsl(
            include_str!("../shaders/emoji_background.wgsl"),
            "examples/shaders/emoji_background.wgsl",
        );
        if let Err(e) = app
            .world_mut()
            .resource_mut::<Assets<Shader>>()
            .insert(BACKGROUND_SHADER.id(), shader)
        {
            error!("registering the background shader: {e}");
        }
    }
}

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

/// The clip, for its face ground truth.
#[derive(Resource)]
struct GroundTruth(Clip);

/// How many camera frames the picture on screen is ahead of the face result drawn on it (0 with
/// `--synced-background`), over all frames so far: streaming aggregates, so that a run of hours
/// keeps nothing per frame.
#[derive(Resource, Default)]
struct Skew {
    frames: u64,
    sum: u64,
    max: u64,
    zero: u64,
}

impl Skew {
    fn push(&mut self, k: u64) {
        self.frames += 1;
        self.sum += k;
        self.max = self.max.max(k);
        self.zero += u64::from(k == 0);
    }
}

/// Face results kept in `stats.json`'s `faces` (the latest ones; `face_results` counts all), so
/// that a long run keeps a bounded log.
const FACES_KEPT: usize = 2000;

#[derive(Resource)]
struct Scene {
    camera_source: Entity,
    detector: Entity,
    mesh: Entity,
    selfie: Entity,
    background: Handle<BackgroundMaterial>,
    background_quad: Entity,
}

/// The size in world units of a frame of `frame` pixels covering a `w × h` view with its aspect
/// kept (the parts beyond the view are cropped, as a phone's camera view does).
fn cover(frame: UVec2, w: f32, h: f32) -> Vec2 {
    let aspect = frame.x.max(1) as f32 / frame.y.max(1) as f32;
    if w / h > aspect {
        Vec2::new(w, w / aspect)
    } else {
        Vec2::new(h * aspect, h)
    }
}

#[derive(Component)]
struct Emoji;

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

/// The scene: the view's camera, the camera source and its DNNs, the background, the emoji.
#[allow(clippy::too_many_arguments)]
fn setup(
    mut commands: Commands,
    args: Res<AppArgs>,
    target: Res<HarnessTarget>,
    truth: Res<GroundTruth>,
    assets: Res<AssetServer>,
    mut images: ResMut<Assets<Image>>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<BackgroundMaterial>>,
) {
    let (w, h) = (args.width as f32, args.height as f32);
    spawn_view_camera(&mut commands, &target, w, h);
    let camera_source = spawn_camera_source(&mut commands, &args, &truth);
    let (detector, mesh, selfie) = spawn_face_dnns(&mut commands, &args, &assets, camera_source);
    let (background, background_quad) = spawn_background(
        &mut commands,
        &args,
        &mut images,
        &mut meshes,
        &mut materials,
    );
    spawn_emoji(&mut commands, &mut images);
    commands.insert_resource(Scene {
        camera_source,
        detector,
        mesh,
        selfie,
        background,
        background_quad,
    });
}

/// The 2D camera, showing the frame at `w × h` world units whatever the window size; the
/// overlay's UI draws on it (there is no window to default to when headless).
fn spawn_view_camera(commands: &mut Commands, target: &HarnessTarget, w: f32, h: f32) {
    let mut camera = commands.spawn((Camera2d, IsDefaultUiCamera));
    if let Some(t) = target.render_target() {
        camera.insert(t);
    }
    camera.insert(Projection::Orthographic(OrthographicProjection {
        scaling_mode: bevy::camera::ScalingMode::Fixed {
            width: w,
            height: h,
        },
        ..OrthographicProjection::default_2d()
    }));
}

/// The camera (the clip or a webcam), keeping past frames with `--synced-background`.
fn spawn_camera_source(commands: &mut Commands, args: &AppArgs, truth: &GroundTruth) -> Entity {
    let mut source = clip_source::camera(
        args.webcam,
        args.camera_fps,
        truth.0.clone(),
        (args.width, args.height),
    );
    if args.synced_background {
        // Enough frames to cover the capture-to-result latency: half a second of them.
        source = source.with_history((args.fps * 0.5).ceil().max(4.0) as usize);
    }
    harness::spawn_camera(commands, source)
}

/// The face detector, the face mesh on its crops and the selfie mask (then `--extra-models`
/// copies of the selfie model): `(detector, mesh, selfie)`.
fn spawn_face_dnns(
    commands: &mut Commands,
    args: &AppArgs,
    assets: &AssetServer,
    camera_source: Entity,
) -> (Entity, Entity, Entity) {
    let detector = commands
        .spawn(
            Dnn::new(
                assets.load("models/face_detection_short_range.tflite"),
                camera_source,
            )
            .with_crop(InputCrop::Letterbox)
            .with_normalization(Normalization::MINUS_ONE_TO_ONE)
            .with_decoder(FaceDecoder::default())
            .with_deadline(Duration::from_millis(100)),
        )
        .observe(log_faces)
        .id();
    let mesh = commands
        .spawn(
            Dnn::new(assets.load("models/face_landmark.tflite"), camera_source)
                .with_crop(InputCrop::Roi(detector))
                .with_decoder(FaceMeshDecoder)
                .with_deadline(Duration::from_millis(100)),
        )
        .id();
    let selfie = commands
        .spawn(
            Dnn::new(
                assets.load("models/selfie_segmentation.tflite"),
                camera_source,
            )
            .with_decoder(PersonMaskDecoder)
            .with_deadline(Duration::from_millis(200)),
        )
        .id();
    for _ in 0..args.extra_models {
        commands.spawn(
            Dnn::new(
                assets.load("models/selfie_segmentation.tflite"),
                camera_source,
            )
            .with_deadline(Duration::from_millis(200)),
        );
    }
    (detector, mesh, selfie)
}

/// The background: a unit quad (scaled to cover the view with the camera frame's aspect once it
/// is known) with the effect's material, on 1×1 placeholders until the first frame and mask.
fn spawn_background(
    commands: &mut Commands,
    args: &AppArgs,
    images: &mut Assets<Image>,
    meshes: &mut Assets<Mesh>,
    materials: &mut Assets<BackgroundMaterial>,
) -> (Handle<BackgroundMaterial>, Entity) {
    let (w, h) = (args.width as f32, args.height as f32);
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
    let background_quad = commands
        .spawn((
            Mesh2d(meshes.add(Rectangle::new(1.0, 1.0))),
            MeshMaterial2d(background.clone()),
            Transform::from_scale(Vec3::new(w, h, 1.0)),
        ))
        .id();
    (background, background_quad)
}

/// The emoji sprite, hidden until a face is found.
fn spawn_emoji(commands: &mut Commands, images: &mut Assets<Image>) {
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
}

/// Frame uv to world (the frame spans `size` world units, centred, y up).
fn to_world(uv: Vec2, size: Vec2) -> Vec2 {
    Vec2::new((uv.x - 0.5) * size.x, (0.5 - uv.y) * size.y)
}

/// The camera frame on screen: the newest, or (synced) the one the face result came from; the
/// skew between the picture and the result drawn on it goes into `stats.json`.
#[allow(clippy::too_many_arguments)]
fn show_camera_frame(
    scene: Res<Scene>,
    args: Res<AppArgs>,
    frames: Query<&CameraFrame>,
    masks: Query<&PersonMask>,
    faces: Query<&FaceDetections>,
    mut quads: Query<&mut Transform>,
    mut materials: ResMut<Assets<BackgroundMaterial>>,
    mut skew: ResMut<Skew>,
) {
    if let (Ok(f), Ok(mut t)) = (
        frames.get(scene.camera_source),
        quads.get_mut(scene.background_quad),
    ) {
        let size = cover(f.size, args.width as f32, args.height as f32);
        t.scale = size.extend(1.0);
    }
    let Some(mut m) = materials.get_mut(&scene.background) else {
        return;
    };
    if let Ok(f) = frames.get(scene.camera_source) {
        let result = faces.get(scene.detector).ok().map(|r| r.frame_index);
        let (shown, index) = match result {
            Some(i) if args.synced_background => {
                f.image_of(i).map_or((&f.image, f.index), |h| (h, i))
            }
            _ => (&f.image, f.index),
        };
        if m.camera != *shown {
            m.camera = shown.clone();
        }
        if let Some(r) = result {
            skew.push(index.saturating_sub(r));
        }
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
    args: Res<AppArgs>,
    frames: Query<&CameraFrame>,
    faces: Query<&FaceDetections>,
    meshes: Query<&FaceMeshResult>,
    mut emoji: Query<(&mut Transform, &mut Sprite, &mut Visibility), With<Emoji>>,
) {
    let Ok((mut t, mut sprite, mut vis)) = emoji.single_mut() else {
        return;
    };
    let (Some(face), Ok(frame)) = (
        faces.get(scene.detector).ok().and_then(|f| f.faces.first()),
        frames.get(scene.camera_source),
    ) else {
        *vis = Visibility::Hidden;
        return;
    };
    let quad = cover(frame.size, args.width as f32, args.height as f32);
    let centre = face.bbox.center();
    let size = (face.bbox.w * quad.x).max(face.bbox.h * quad.y) * 1.3;
    let mut roll = 0.0;
    if let Ok(m) = meshes.get(scene.mesh)
        && m.mesh.presence > 0.5
    {
        // Screen y points down in uv, up in the world: the roll flips sign.
        roll = -m.mesh.head_pose().roll;
    }
    let p = to_world(centre, quad);
    *t = Transform::from_xyz(p.x, p.y, 1.0).with_rotation(Quat::from_rotation_z(roll));
    sprite.custom_size = Some(Vec2::splat(size));
    *vis = Visibility::Visible;
}

/// Every face result with the clip's ground truth, into `stats.json`.
fn log_faces(
    result: On<DnnResult>,
    faces: Query<&FaceDetections>,
    truth: Res<GroundTruth>,
    mut report: ResMut<AppReport>,
) {
    let Ok(f) = faces.get(result.entity) else {
        return;
    };
    let boxes: Vec<[f32; 5]> = f
        .faces
        .iter()
        .map(|d| [d.bbox.x, d.bbox.y, d.bbox.w, d.bbox.h, d.score])
        .collect();
    let clip = &truth.0;
    let gt = clip
        .ground_truth(result.output.frame_index as usize % clip.len().max(1))
        .map(|b| [b.x, b.y, b.w, b.h]);
    let entry = json!({
        "frame_index": result.output.frame_index,
        "latency_ms": result.output.latency.as_secs_f64() * 1e3,
        "boxes": boxes,
        "ground_truth": gt,
    });
    let log = report.0.entry("faces").or_insert_with(|| json!([]));
    if let Some(a) = log.as_array_mut() {
        // Dropped in batches, so the cost is amortised.
        if a.len() >= FACES_KEPT + FACES_KEPT / 4 {
            a.drain(..a.len() + 1 - FACES_KEPT);
        }
        a.push(entry);
    }
    let with_face = if boxes.is_empty() { 0 } else { 1 };
    let n = report
        .0
        .get("face_results")
        .and_then(|v| v.as_u64())
        .unwrap_or(0);
    report.0.insert("face_results".into(), json!(n + 1));
    let k = report
        .0
        .get("face_results_with_a_face")
        .and_then(|v| v.as_u64())
        .unwrap_or(0);
    report
        .0
        .insert("face_results_with_a_face".into(), json!(k + with_face));
}

/// The skew summary into `stats.json` (kept up to date: the harness writes the report at exit).
fn report_skew(skew: Res<Skew>, mut report: ResMut<AppReport>) {
    if !skew.is_changed() || skew.frames == 0 {
        return;
    }
    let n = skew.frames as f64;
    report.0.insert(
        "display_skew_frames".into(),
        json!({"mean": skew.sum as f64 / n, "max": skew.max, "share_zero": skew.zero as f64 / n,
            "frames": skew.frames}),
    );
}
