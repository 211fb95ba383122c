//! heimdall for Bevy: several neural networks on the GPU that renders the AR scene, fitted
//! into each frame by Heimdall's coordinator so the scene keeps its frame rate.
//!
//! An app adds [`HeimdallPlugin`], a [`CameraSource`](camera::CameraSource) and one [`Dnn`]
//! component per model; results arrive as components ([`DnnOutput`], and decoded ones such as
//! [`FaceDetections`](decode::FaceDetections)) and [`DnnResult`] messages, stamped with the
//! index and capture time of the camera frame they were computed from.
//!
//! ```no_run
//! use bevy::prelude::*;
//! use heimdall_bevy::prelude::*;
//!
//! fn setup(mut commands: Commands, assets: Res<AssetServer>) {
//!     let camera = commands
//!         .spawn(CameraSource::clip("assets/clips/astronaut_pan", FramePacing::EveryUpdate).unwrap())
//!         .id();
//!     commands.spawn(
//!         Dnn::new(assets.load("models/face_detection_short_range.tflite"), camera)
//!             .with_normalization(Normalization::MINUS_ONE_TO_ONE)
//!             .with_decoder(Decoder::BlazeFace),
//!     );
//! }
//!
//! App::new()
//!     .add_plugins((DefaultPlugins, HeimdallPlugin::default()))
//!     .add_systems(Startup, setup)
//!     .run();
//! ```
//!
//! Inside: the main world pulls camera frames and issues requests ([`camera`], [`main_world`]);
//! the render world compiles each model for Bevy's own `RenderDevice`, asks the coordinator
//! for this frame's chunks after the scene passes and encodes them into the frame's command
//! encoder ([`render`]); CPU work runs on a fixed worker pool ([`workers`]); decoders turn
//! outputs into app data ([`decode`]).
#![warn(missing_docs)]

pub mod asset;
pub mod camera;
pub mod crop;
pub mod decode;
pub mod dnn;
pub mod main_world;
pub mod overlay;
pub mod render;
pub mod settings;
pub mod shared;
pub mod stats;
#[cfg(feature = "webcam")]
pub mod webcam;
pub mod workers;

use bevy::prelude::*;

pub use dnn::{Dnn, DnnOutput, DnnResult};
pub use settings::{CoordinationMode, FrameRateTarget, HeimdallSettings};
pub use shared::HeimdallShared;
pub use stats::HeimdallStats;

/// The usual imports.
pub mod prelude {
    pub use crate::camera::{CameraFrame, CameraSource, FramePacing};
    pub use crate::decode::{Decoded, FaceDetections, FaceMeshResult, PersonMask};
    pub use crate::dnn::{
        Backend, Decoder, Dnn, DnnOutput, DnnResult, InputCrop, Normalization, RequestInference,
        RequestMode,
    };
    pub use crate::settings::{CoordinationMode, FrameRateTarget, HeimdallSettings};
    pub use crate::shared::HeimdallShared;
    pub use crate::stats::HeimdallStats;
    pub use crate::{HeimdallPlugin, asset::DnnModel};
    pub use heimdall_coordinator::UtilityParams;
}

/// The plugin. Add it after `DefaultPlugins` (it needs the render app).
#[derive(Default)]
pub struct HeimdallPlugin {
    /// Settings (also inserted as a resource).
    pub settings: HeimdallSettings,
}

impl HeimdallPlugin {
    /// The plugin with `settings`.
    pub fn new(settings: HeimdallSettings) -> Self {
        HeimdallPlugin { settings }
    }
}

impl Plugin for HeimdallPlugin {
    fn build(&self, app: &mut App) {
        let shared = app
            .world()
            .get_resource::<HeimdallShared>()
            .cloned()
            .unwrap_or_default();
        app.insert_resource(shared)
            .insert_resource(self.settings.clone())
            .init_asset::<asset::DnnModel>()
            .init_asset_loader::<asset::DnnModelLoader>()
            .init_resource::<render::RequestQueue>()
            .init_resource::<HeimdallStats>()
            .add_message::<DnnResult>()
            .add_message::<dnn::RequestInference>();
        main_world::build(app);
        render::build(app);
    }

    fn finish(&self, app: &mut App) {
        let shared = app.world().resource::<HeimdallShared>().clone();
        render::finish(app, &self.settings, &shared);
    }
}
