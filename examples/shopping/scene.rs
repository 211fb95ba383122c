//! The shopping scene: the DNNs on the camera, the AR view with the person in front, the couch
//! and what moves it, the style events, and the app's entries of `stats.json`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bevy::prelude::*;
use heimdall_bevy::asset::{DnnModelSettings, import};
use heimdall_bevy::prelude::*;
use heimdall_examples::ar_view::{self, ArView, ArViewConfig, ArViewPlugin, ArViewSystems};
use heimdall_examples::args::AppArgs;
use heimdall_examples::clip_source::{self, load_clip};
use heimdall_examples::harness::{self, HarnessTarget};
use heimdall_examples::quality::QualitySettings;
use heimdall_examples::report::AppReport;
use heimdall_examples::{assets, truth};
use heimdall_testkit::Clip;
use heimdall_vision::style::StyleWeights;
use serde_json::json;

use crate::couch::{self, Couch};
use crate::interaction::{self, Gesture, Sensors};
use crate::style::{self, Styling};

/// The clip, relative to `assets/`.
pub const CLIP: &str = "clips/shopping_room";

/// Files the scene needs (relative to `assets/`); the object detector is fetched (see
/// [`ShoppingScene::load`]).
pub const ASSETS: &[&str] = &[
    "clips/shopping_room/clip.json",
    "models/palm_detection_lite.tflite",
    "models/hand_landmark_lite.tflite",
    "models/selfie_segmentation.tflite",
    "models/multistyle26.onnx",
    couch::COUCH_MODEL,
];

/// MediaPipe's OIDv4 object detector (from the npm package `@mediapipe/objectron`).
pub const OBJECT_MODEL: &str = "object_detection_ssd_mobilenetv2_oidv4_fp16";

/// The style transfer's picture size (the whole camera view, stretched).
pub const STYLE_SIZE: UVec2 = UVec2::new(256, 256);

/// The style baked into the style transfer model (one of multistyle26's 26).
pub const STYLE_INDEX: usize = 6;

/// The scene as a plugin.
pub struct ShoppingScene {
    clip: Clip,
    objects: DnnModel,
    style: DnnModel,
}

impl ShoppingScene {
    /// Loads the clip and the two models that are not plain asset files: the object detector
    /// (not bundled: `assets/models/` or the model cache, fetched when missing) and the style
    /// transfer model with its style baked in.
    pub fn load(dir: &Path) -> Result<Self, String> {
        let clip = load_clip(&dir.join(CLIP))?;
        let path = assets::model(dir, OBJECT_MODEL)?;
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let graph = import(
            &bytes,
            OBJECT_MODEL,
            path.extension(),
            &DnnModelSettings::default(),
        )
        .map_err(|e| format!("{}: {e}", path.display()))?;
        let objects = DnnModel {
            name: OBJECT_MODEL.into(),
            graph: Arc::new(graph),
        };
        let style_path = dir.join("models/multistyle26.onnx");
        let bytes =
            std::fs::read(&style_path).map_err(|e| format!("{}: {e}", style_path.display()))?;
        let weights = StyleWeights::one(STYLE_INDEX).ok_or("no such style")?;
        let style = style_transfer_model(&bytes, STYLE_SIZE, &weights)
            .map_err(|e| format!("{}: {e}", style_path.display()))?;
        Ok(ShoppingScene {
            clip,
            objects,
            style,
        })
    }
}

#[derive(Resource)]
struct Models {
    objects: DnnModel,
    style: DnnModel,
}

/// The clip, for its ground truth.
#[derive(Resource)]
struct GroundTruth(Clip);

impl Plugin for ShoppingScene {
    fn build(&self, app: &mut App) {
        app.add_plugins((ArViewPlugin, HandTrackingPlugin))
            .insert_resource(GroundTruth(self.clip.clone()))
            .insert_resource(Models {
                objects: self.objects.clone(),
                style: self.style.clone(),
            })
            .init_resource::<Gesture>()
            .add_systems(Startup, setup)
            .add_systems(
                Update,
                (
                    interaction::place_from_objects,
                    interaction::drag_with_hands,
                    couch::move_couch,
                    interaction::draw_hands,
                    report_scene,
                )
                    .chain()
                    .after(ArViewSystems),
            );
        couch::build(app);
        style::build(app);
    }
}

/// The scene: the camera and its DNNs, the AR view, the couch.
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
    let source = clip_source::camera(
        args.webcam,
        args.camera_fps,
        truth.0.clone(),
        (args.width, args.height),
    );
    let camera = harness::spawn_camera(&mut commands, source);

    let (objects, selfie, palms) = spawn_continuous_dnns(
        &mut commands,
        &args,
        &asset_server,
        &mut dnn_models,
        &models,
        camera,
    );
    let style_dnn = spawn_style_dnn(&mut commands, &mut dnn_models, &models, camera);
    commands.insert_resource(Styling::new(style_dnn));
    commands.insert_resource(Sensors { objects, palms });

    let view = ar_view::spawn_ar_view(
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
            eye_height: 1.4,
            pitch_deg: -22.0,
            fov_y_deg: 55.0,
            person_mask: Some(selfie),
            scene_load: args.scene_load,
            render_size: UVec2::new(args.width, args.height),
        },
    );
    let couch = couch::spawn(
        &mut commands,
        &asset_server,
        &mut meshes,
        &mut materials,
        &quality,
        &view,
    );
    commands.insert_resource(couch);
}

/// The continuous DNNs on `camera`, each with its own rate and deadline: objects, the person
/// mask, hand tracking, then `--extra-models` selfie models; `(objects, selfie, palms)`.
fn spawn_continuous_dnns(
    commands: &mut Commands,
    args: &AppArgs,
    asset_server: &AssetServer,
    dnn_models: &mut Assets<DnnModel>,
    models: &Models,
    camera: Entity,
) -> (Entity, Entity, Entity) {
    let objects = commands
        .spawn(
            Dnn::new(dnn_models.add(models.objects.clone()), camera)
                .with_crop(InputCrop::Full)
                .with_normalization(Normalization::MINUS_ONE_TO_ONE)
                .with_decoder(ObjectDecoder::default())
                .with_request(RequestMode::Every(Duration::from_millis(100)))
                .with_deadline(Duration::from_millis(200)),
        )
        .id();
    let selfie = commands
        .spawn(
            Dnn::new(
                asset_server.load("models/selfie_segmentation.tflite"),
                camera,
            )
            .with_decoder(PersonMaskDecoder)
            .with_request(RequestMode::Every(Duration::from_millis(66)))
            .with_deadline(Duration::from_millis(150)),
        )
        .id();
    // Landmarks 50 ms (the hands drive the couch), palm detection 100 ms.
    let palms = spawn_hand_tracking_with(
        commands,
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
    for _ in 0..args.extra_models {
        commands.spawn(
            Dnn::new(
                asset_server.load("models/selfie_segmentation.tflite"),
                camera,
            )
            .with_deadline(Duration::from_millis(200)),
        );
    }
    (objects, selfie, palms)
}

/// The event-driven style transfer DNN: high priority, the paper's 100 ms response.
fn spawn_style_dnn(
    commands: &mut Commands,
    dnn_models: &mut Assets<DnnModel>,
    models: &Models,
    camera: Entity,
) -> Entity {
    commands
        .spawn(
            Dnn::new(dnn_models.add(models.style.clone()), camera)
                .with_crop(InputCrop::Full)
                .with_decoder(StyleDecoder)
                .with_request(RequestMode::OnDemand)
                .with_deadline(Duration::from_millis(100))
                .with_utility(UtilityParams {
                    l0: 10.0,
                    beta: 1.0,
                    gamma: 1.0,
                }),
        )
        .observe(style::on_style)
        .id()
}

/// The app's entries of `stats.json`: the couch (where, placed by whom, its box on screen),
/// the gestures, the quality settings, and the hands and objects against the clip's truth.
#[allow(clippy::too_many_arguments)]
fn report_scene(
    couch: Res<Couch>,
    view: Res<ArView>,
    gesture: Res<Gesture>,
    args: Res<AppArgs>,
    sensors: Res<Sensors>,
    truth: Res<GroundTruth>,
    objects: Query<&DetectedObjects, Changed<DetectedObjects>>,
    tracking: Query<&HandTracking>,
    hands: Query<&TrackedHand, Changed<TrackedHand>>,
    mut log: Local<truth::DetectionLog>,
    mut report: ResMut<AppReport>,
) {
    let clip = &truth.0;
    if let Ok(o) = objects.get(sensors.objects) {
        let found: Vec<truth::Found> = o
            .objects
            .iter()
            .map(|x| truth::Found::new(&x.label, x.bbox, x.score))
            .collect();
        log.objects(clip, o.frame_index, &found);
    }
    if let Ok(t) = tracking.get(sensors.palms) {
        for h in t.hands.iter().filter_map(|&e| hands.get(e).ok()) {
            if h.hand.presence > 0.5 {
                log.hand(clip, h.frame_index, h.hand.bounding_box(), &h.hand.points);
            }
        }
    }
    let half = couch.half_size.unwrap_or(Vec3::new(1.0, 0.45, 0.45));
    let corners: Vec<Vec2> = (0..8)
        .filter_map(|i| {
            let s = Vec3::new(
                if i & 1 == 0 { -1.0 } else { 1.0 },
                if i & 2 == 0 { 0.0 } else { 2.0 },
                if i & 4 == 0 { -1.0 } else { 1.0 },
            );
            let local = Quat::from_rotation_y(couch.yaw) * (s * half);
            view.render_uv(couch.position + local)
        })
        .collect();
    let screen_box = truth::bounds(&corners);
    report.0.insert(
        "couch".into(),
        json!({
            "position_m": couch.position.to_array(),
            "yaw_deg": couch.yaw.to_degrees(),
            "placed_by": format!("{:?}", couch.placed_by),
            "render_box_uv": screen_box,
            "loaded": couch.half_size.is_some(),
        }),
    );
    report.0.insert(
        "gestures".into(),
        json!({"drags": gesture.drags, "turns": gesture.turns, "pinch_frames": gesture.pinch_frames}),
    );
    report.0.insert(
        "quality_settings".into(),
        QualitySettings::of_args(&args).to_json(),
    );
    log.write(&mut report);
}
