//! Helpers of the decoder tests (`decoders_*.rs`): bundled images from `assets/images/` fed as a
//! camera (switchable mid-run), model files imported as assets, the references of
//! `assets/references/`, and waiting for a decoder's component.
#![allow(dead_code)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bevy::prelude::*;
use heimdall_bevy::asset::{DnnModelSettings, import};
use heimdall_bevy::prelude::*;
use heimdall_vision::RgbaImage;

use crate::common;

pub mod hands;

/// A camera showing one still image (the same pixels every frame) until the test swaps it.
#[derive(Clone)]
pub struct ImageCamera(Arc<Mutex<RgbaImage>>);

impl ImageCamera {
    /// A camera showing `image`.
    pub fn new(image: RgbaImage) -> Self {
        ImageCamera(Arc::new(Mutex::new(image)))
    }

    /// Shows `image` from the next frame on.
    pub fn show(&self, image: RgbaImage) {
        *self.0.lock().unwrap() = image;
    }
}

impl FrameSource for ImageCamera {
    fn name(&self) -> String {
        "still image".into()
    }

    fn size(&self) -> UVec2 {
        let i = self.0.lock().unwrap();
        UVec2::new(i.width, i.height)
    }

    fn next_frame(&mut self) -> Result<Option<RgbaFrame>, SourceError> {
        let i = self.0.lock().unwrap();
        Ok(Some(RgbaFrame {
            width: i.width,
            height: i.height,
            data: i.data.clone(),
        }))
    }
}

/// A bundled image of `assets/images/`.
pub fn image(name: &str) -> RgbaImage {
    RgbaImage::load(common::assets_dir().join("images").join(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A reference of `assets/references/` (`objects`, `text`, `hands`, `style`).
pub fn reference(name: &str) -> serde_json::Value {
    let path = common::assets_dir()
        .join("references")
        .join(format!("{name}.json"));
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

/// The app of these tests: the headless app at 30 fps without CPU offload (on lavapipe the CPU
/// is as fast as the "GPU"; these tests are about the GPU path).
pub fn app() -> App {
    common::headless_app(HeimdallSettings {
        frame_rate: FrameRateTarget::Fixed(30.0),
        offload: false,
        ..default()
    })
}

/// Imports a model file (with static shapes for dynamic ONNX inputs) as an asset.
pub fn load_model(
    app: &mut App,
    path: &Path,
    input_shapes: Vec<(String, Vec<usize>)>,
) -> Handle<DnnModel> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let name = path.file_stem().unwrap().to_string_lossy().into_owned();
    let graph = import(
        &bytes,
        &name,
        path.extension(),
        &DnnModelSettings { input_shapes },
    )
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    common::add_model(app, graph)
}

/// Spawns a camera showing `image`.
pub fn spawn_camera(app: &mut App, image: RgbaImage) -> (Entity, ImageCamera) {
    let camera = ImageCamera::new(image);
    let e = app
        .world_mut()
        .spawn(CameraSource::new(camera.clone(), FramePacing::EveryUpdate))
        .id();
    (e, camera)
}

/// Shows `image` on `camera` and returns the index of the first camera frame holding it.
pub fn show(app: &mut App, camera: (Entity, &ImageCamera), image: RgbaImage) -> u64 {
    camera.1.show(image);
    app.update();
    app.world()
        .get::<CameraFrame>(camera.0)
        .map(|f| f.index)
        .expect("the camera has a frame")
}

/// Updates until `entity`'s component `C` was computed from frame `min_frame` or later
/// (`frame_of` reads its frame index); `None` on timeout.
pub fn wait_for<C: Component + Clone>(
    app: &mut App,
    entity: Entity,
    min_frame: u64,
    timeout: Duration,
    frame_of: impl Fn(&C) -> u64,
) -> Option<C> {
    let fresh = |app: &App| {
        app.world()
            .get::<C>(entity)
            .filter(|c| frame_of(c) >= min_frame)
            .cloned()
    };
    common::run_until(app, timeout, |app| fresh(app).is_some());
    fresh(app)
}

/// `[x, y, w, h]` of a JSON `[xmin, ymin, xmax, ymax]`.
pub fn xywh(v: &serde_json::Value) -> [f64; 4] {
    let f: Vec<f64> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    [f[0], f[1], f[2] - f[0], f[3] - f[1]]
}
