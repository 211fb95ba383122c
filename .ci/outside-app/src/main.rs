//! A tiny AR app outside the heimdall workspace: a camera (here a synthetic one, so that it runs
//! anywhere), MediaPipe's face detector fetched by `heimdall-models` into the user's cache, the
//! plugin, and the faces logged as they arrive.
//!
//! `cargo run --release` (from `.ci/outside-app/`, after `build.sh` has set up the packaged
//! crates, or with the crates from crates.io once they are published).

use std::sync::Arc;

use bevy::prelude::*;
use heimdall_bevy::asset::{DnnModel, DnnModelSettings, import};
use heimdall_bevy::prelude::*;

/// A camera that shows a bright disc moving over a dark background.
struct SyntheticCamera {
    frame: u32,
}

impl FrameSource for SyntheticCamera {
    fn name(&self) -> String {
        "synthetic camera".into()
    }

    fn size(&self) -> UVec2 {
        UVec2::new(320, 240)
    }

    fn next_frame(&mut self) -> Result<Option<RgbaFrame>, SourceError> {
        self.frame += 1;
        let (w, h) = (320u32, 240u32);
        let cx = (self.frame * 2 % w) as f32;
        let mut data = Vec::with_capacity((w * h * 4) as usize);
        for y in 0..h {
            for x in 0..w {
                let d = ((x as f32 - cx).powi(2) + (y as f32 - 120.0).powi(2)).sqrt();
                let v = if d < 50.0 { 230 } else { 30 };
                data.extend_from_slice(&[v, v, v, 255]);
            }
        }
        Ok(Some(RgbaFrame {
            width: w,
            height: h,
            data,
        }))
    }
}

/// The face detector, loaded before the app starts.
#[derive(Resource)]
struct FaceModel(DnnModel);

fn setup(mut commands: Commands, model: Res<FaceModel>, mut models: ResMut<Assets<DnnModel>>) {
    let camera = commands
        .spawn(CameraSource::new(
            SyntheticCamera { frame: 0 },
            FramePacing::EveryUpdate,
        ))
        .id();
    commands
        .spawn(
            Dnn::new(models.add(model.0.clone()), camera)
                .with_crop(InputCrop::Letterbox)
                .with_normalization(Normalization::MINUS_ONE_TO_ONE)
                .with_decoder(FaceDecoder::default()),
        )
        .observe(|result: On<DnnResult>, faces: Query<&FaceDetections>| {
            if let Ok(f) = faces.get(result.entity) {
                info!("frame {}: {} faces", f.frame_index, f.faces.len());
            }
        });
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Fetched from MediaPipe's PyPI wheel on the first run (checked by SHA-256), cached after.
    let name = "face_detection_short_range";
    let path = heimdall_models::ModelCache::new()?.get(name)?;
    let bytes = std::fs::read(&path)?;
    let graph = import(&bytes, name, path.extension(), &DnnModelSettings::default())?;
    let model = DnnModel {
        name: name.into(),
        graph: Arc::new(graph),
    };
    App::new()
        .add_plugins((DefaultPlugins, HeimdallPlugin::default()))
        .insert_resource(FaceModel(model))
        .add_systems(Startup, setup)
        .run();
    Ok(())
}
