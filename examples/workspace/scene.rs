//! The workspace scene: text detection and hand tracking on the camera, the AR view looking
//! down at the desk, the pages and the pen, and the app's entries of `stats.json`.

use std::path::Path;
use std::time::Duration;

use bevy::prelude::*;
use heimdall_bevy::prelude::*;
use heimdall_examples::ar_view::{self, ArView, ArViewConfig, ArViewPlugin, ArViewSystems};
use heimdall_examples::args::AppArgs;
use heimdall_examples::clip_source::{self, load_clip};
use heimdall_examples::harness::{self, HarnessTarget};
use heimdall_examples::quality::QualitySettings;
use heimdall_examples::report::AppReport;
use heimdall_examples::{assets, truth};
use heimdall_testkit::Clip;
use serde_json::json;

use crate::pages::{self, Pages};
use crate::pen::{self, Strokes};

/// The clip, relative to `assets/`.
pub const CLIP: &str = "clips/workspace_desk";

/// Files the scene needs (relative to `assets/`); the text detector is fetched (see
/// [`WorkspaceScene::load`]).
pub const ASSETS: &[&str] = &[
    "clips/workspace_desk/clip.json",
    "models/palm_detection_lite.tflite",
    "models/hand_landmark_lite.tflite",
    "images/page.png",
    "images/text_lines.png",
];

/// PP-OCRv6's text detector (from the PyPI package `rapidocr`).
pub const TEXT_MODEL: &str = "PP-OCRv6_det_small";

/// The scene as a plugin.
pub struct WorkspaceScene {
    clip: Clip,
    text: DnnModel,
    paper: Vec<u8>,
}

impl WorkspaceScene {
    /// Loads the clip, the text detector (not bundled: `assets/models/` or the model cache,
    /// fetched when missing; sized for the clip's frames, short side `text_side` as RapidOCR's
    /// `limit_side_len`) and the page images.
    pub fn load(dir: &Path, text_side: u32) -> Result<Self, String> {
        let clip = load_clip(&dir.join(CLIP))?;
        let path = assets::model(dir, TEXT_MODEL)?;
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let size = UVec2::new(clip.width(), clip.height());
        let resize = heimdall_vision::text::DetResize {
            limit_side_len: text_side as f32,
        };
        let text = heimdall_bevy::decoders::text_detection_model_with(&bytes, size, resize)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let mut images = Vec::new();
        for name in ["images/page.png", "images/text_lines.png"] {
            let p = dir.join(name);
            let img = image::open(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            images.push(img.to_rgba8());
        }
        Ok(WorkspaceScene {
            clip,
            text,
            paper: pages::paper(&images),
        })
    }
}

#[derive(Resource)]
struct Models {
    text: DnnModel,
    paper: Vec<u8>,
}

/// The clip, for its ground truth.
#[derive(Resource)]
struct GroundTruth(Clip);

/// The DNN entities.
#[derive(Resource, Clone, Copy)]
struct Sensors {
    text: Entity,
    palms: Entity,
}

impl Plugin for WorkspaceScene {
    fn build(&self, app: &mut App) {
        app.add_plugins((ArViewPlugin, HandTrackingPlugin))
            .insert_resource(GroundTruth(self.clip.clone()))
            .insert_resource(Models {
                text: self.text.clone(),
                paper: self.paper.clone(),
            })
            .init_resource::<Strokes>()
            .add_systems(Startup, setup)
            .add_systems(
                Update,
                (
                    pages::anchor_to_text,
                    pages::place_pages,
                    pen::write,
                    pen::lift,
                    pen::report,
                    report_scene,
                )
                    .chain()
                    .after(ArViewSystems),
            );
    }
}

#[allow(clippy::too_many_arguments)]
fn setup(
    mut commands: Commands,
    args: Res<AppArgs>,
    target: Res<HarnessTarget>,
    truth: Res<GroundTruth>,
    models: Res<Models>,
    asset_server: Res<AssetServer>,
    mut dnn_models: ResMut<Assets<DnnModel>>,
    mut images: ResMut<Assets<Image>>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut layers: ResMut<Assets<ar_view::CameraLayerMaterial>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let quality = QualitySettings::of_args(&args);
    // A desk seen from a still camera: most blocks of the frame do not change.
    let cache = if args.no_conv_cache {
        ConvCache::Off
    } else {
        ConvCache::on()
    };
    let source = clip_source::camera(
        args.webcam,
        args.camera_fps,
        truth.0.clone(),
        (args.width, args.height),
    );
    let camera = harness::spawn_camera(&mut commands, source);
    let text = commands
        .spawn(
            Dnn::new(dnn_models.add(models.text.clone()), camera)
                .with_crop(InputCrop::Full)
                .with_normalization(heimdall_bevy::decoders::text::TEXT_NORMALIZATION)
                .with_conv_cache(cache)
                .with_decoder(TextDecoder::default())
                .with_request(RequestMode::Every(Duration::from_millis(100)))
                .with_deadline(Duration::from_millis(200)),
        )
        .id();
    // Landmarks 50 ms (the pen), palm detection 100 ms.
    let palms = spawn_hand_tracking_with(
        &mut commands,
        camera,
        asset_server.load("models/palm_detection_lite.tflite"),
        asset_server.load("models/hand_landmark_lite.tflite"),
        &HandTrackingOptions {
            max_hands: 2,
            palm_deadline: Some(Duration::from_millis(100)),
            landmark_deadline: Some(Duration::from_millis(50)),
            search_interval: args.palm_search_interval(),
        },
    );
    // Palm detection reads the whole frame (letterboxed): cached like the text detector. The
    // landmark models read a tracked ROI that moves every frame, so no cache for them.
    commands
        .entity(palms)
        .entry::<Dnn>()
        .and_modify(move |mut d| d.conv_cache = cache);
    for _ in 0..args.extra_models {
        commands.spawn(
            Dnn::new(
                asset_server.load("models/hand_landmark_lite.tflite"),
                camera,
            )
            .with_deadline(Duration::from_millis(100)),
        );
    }
    commands.insert_resource(Sensors { text, palms });
    ar_view::spawn_ar_view(
        &mut commands,
        ar_view::ViewAssets {
            meshes: &mut meshes,
            materials: &mut layers,
            images: &mut images,
        },
        target.render_target(),
        &quality,
        camera,
        ArViewConfig {
            eye_height: 0.55,
            pitch_deg: -55.0,
            fov_y_deg: 55.0,
            person_mask: None,
            scene_load: args.scene_load,
            render_size: UVec2::new(args.width, args.height),
        },
    );
    let pages = pages::spawn(
        &mut commands,
        &mut meshes,
        &mut materials,
        &mut images,
        models.paper.clone(),
        &quality,
    );
    commands.insert_resource(pages);
}

/// The app's entries of `stats.json`: the page (where, anchored how often), the quality
/// settings, and the hands and text against the clip's truth.
#[allow(clippy::too_many_arguments)]
fn report_scene(
    pages: Res<Pages>,
    view: Res<ArView>,
    args: Res<AppArgs>,
    sensors: Res<Sensors>,
    truth: Res<GroundTruth>,
    frames: Query<&CameraFrame>,
    text: Query<&TextRegions, Changed<TextRegions>>,
    tracking: Query<&HandTracking>,
    hands: Query<&TrackedHand, Changed<TrackedHand>>,
    mut log: Local<truth::DetectionLog>,
    mut report: ResMut<AppReport>,
) {
    let clip = &truth.0;
    if let (Ok(t), Ok(frame)) = (text.get(sensors.text), frames.get(view.source)) {
        let size = frame.size.as_vec2().max(Vec2::ONE);
        let found: Vec<truth::Found> = t
            .regions
            .iter()
            .filter_map(|r| {
                let pts: Vec<Vec2> = r.polygon.iter().map(|p| *p / size).collect();
                let b = truth::bounds(&pts)?;
                Some(truth::Found::new(
                    "text",
                    heimdall_vision::Rect::new(b[0], b[1], b[2] - b[0], b[3] - b[1]),
                    r.score,
                ))
            })
            .collect();
        log.text(clip, t.frame_index, &found);
    }
    if let Ok(t) = tracking.get(sensors.palms) {
        for h in t.hands.iter().filter_map(|&e| hands.get(e).ok()) {
            if h.hand.presence > 0.5 {
                log.hand(clip, h.frame_index, h.hand.bounding_box(), &h.hand.points);
            }
        }
    }
    let corners: Vec<Vec2> = [(-0.5, -0.5), (0.5, -0.5), (0.5, 0.5), (-0.5, 0.5)]
        .iter()
        .filter_map(|&(x, z)| {
            let local = Vec3::new(x * pages::PAGE_SIZE.x, 0.0, z * pages::PAGE_SIZE.y);
            view.render_uv(pages.position + Quat::from_rotation_y(pages.yaw) * local)
        })
        .collect();
    report.0.insert(
        "page".into(),
        json!({
            "position_m": pages.position.to_array(),
            "yaw_deg": pages.yaw.to_degrees(),
            "anchored": pages.anchored,
            "anchors": pages.anchors,
            "render_box_uv": truth::bounds(&corners),
        }),
    );
    report.0.insert(
        "quality_settings".into(),
        QualitySettings::of_args(&args).to_json(),
    );
    log.write(&mut report);
}
