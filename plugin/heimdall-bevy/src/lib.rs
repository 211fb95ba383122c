//! heimdall for Bevy: several neural networks on the GPU that renders the AR scene, fitted
//! into each frame by Heimdall's coordinator so the scene keeps its frame rate.
//!
//! An app adds [`HeimdallPlugin`], a [`CameraSource`](camera::CameraSource) and one [`Dnn`]
//! component per model, with a decoder; results arrive as components on the DNN's entity (the
//! decoder's, e.g. [`FaceDetections`](decoders::FaceDetections), and the raw [`DnnOutput`]) and
//! as a [`DnnResult`] entity event, stamped with the index and capture time of the camera frame
//! they were computed from. [`DnnStatus`] says where each DNN stands, [`DnnPlacement`] where
//! the coordinator runs it (GPU or CPU, threads) and whether it is granted less than its
//! requested rate, and why.
//!
//! ```no_run
//! use bevy::prelude::*;
//! use heimdall_bevy::prelude::*;
//! # struct MyCamera;
//! # impl FrameSource for MyCamera {
//! #     fn name(&self) -> String { "camera".into() }
//! #     fn size(&self) -> UVec2 { UVec2::new(640, 480) }
//! #     fn next_frame(&mut self) -> Result<Option<RgbaFrame>, SourceError> { Ok(None) }
//! # }
//!
//! fn setup(mut commands: Commands, assets: Res<AssetServer>) {
//!     let camera = commands
//!         .spawn(CameraSource::new(MyCamera, FramePacing::EveryUpdate))
//!         .id();
//!     commands
//!         .spawn(
//!             Dnn::new(assets.load("models/face_detection_short_range.tflite"), camera)
//!                 .with_crop(InputCrop::Letterbox)
//!                 .with_normalization(Normalization::MINUS_ONE_TO_ONE)
//!                 .with_decoder(FaceDecoder::default()),
//!         )
//!         .observe(|result: On<DnnResult>, faces: Query<&FaceDetections>| {
//!             if let Ok(f) = faces.get(result.entity) {
//!                 info!("frame {}: {} faces", f.frame_index, f.faces.len());
//!             }
//!         });
//! }
//!
//! App::new()
//!     .add_plugins((DefaultPlugins, HeimdallPlugin::default()))
//!     .add_systems(Startup, setup)
//!     .run();
//! ```
//!
//! The plugin is the whole runtime; the rest is opt-in and added by the app:
//! [`HeimdallPacingPlugin`] (each update starts just in time for a display-paced loop) and, with
//! the `overlay` feature, `overlay::OverlayPlugin`. [`HeimdallSettings`] is a resource the app
//! may edit at run time (the render world follows; see [`settings`]); its policy is a
//! [`SchedulingPolicy`], built in or the app's own [`Policy`]. The components and resources are
//! `Reflect`; each DNN's latency and rate reach Bevy's `DiagnosticsStore` ([`diagnostics`]) and
//! the render world's DNN work runs in `tracing` spans (`heimdall::plan_frame`, ...).
//!
//! One camera frame, in order (see `docs/architecture.md`): [`camera`] (the frame and its
//! texture) → [`requests`] (which DNNs take it, with which crop) → [`render`] (compiled models,
//! the coordinator's decision, the chunks encoded after the scene, the readback) → a decoder
//! ([`decoders`], on a CPU worker) → [`results`] (components and events on the DNN's entity).
#![warn(missing_docs)]

pub mod asset;
mod bridge;
pub mod camera;
pub mod camera_phase;
pub mod clock;
pub mod decoder;
pub mod decoders;
pub mod device;
pub mod diagnostics;
pub mod dnn;
pub mod faults;
pub mod frame_start;
pub mod guard;
#[cfg(feature = "overlay")]
pub mod overlay;
pub mod render;
pub mod requests;
pub mod results;
pub mod settings;
mod start_delay;
pub mod stats;
mod systems;
#[cfg(feature = "webcam")]
pub mod webcam;
pub mod workers;

use bevy::prelude::*;

pub use dnn::{Dnn, DnnOutput, DnnPlacement, DnnResult, DnnStatus, RateShortfall};
pub use frame_start::{CameraPhaseLock, HeimdallPacingPlugin, LateFrameStart};
pub use heimdall_coordinator::policy::{Policy, SchedulingPolicy};
pub use settings::{
    CoordinationMode, FrameRateTarget, HeimdallSettings, render_plugin, render_plugin_from,
};
pub use stats::HeimdallStats;
pub use systems::HeimdallSystems;

/// The usual imports.
pub mod prelude {
    pub use crate::HeimdallPlugin;
    pub use crate::asset::DnnModel;
    pub use crate::camera::{
        CameraError, CameraFailed, CameraFrame, CameraRetry, CameraSource, FramePacing,
        FrameSource, RgbaFrame, SourceClock, SourceError,
    };
    pub use crate::clock::HeimdallClock;
    pub use crate::decoder::{DecodeError, DecodeInput, DnnDecoder};
    pub use crate::decoders::{
        DetectedObjects, FaceDecoder, FaceDetections, FaceMeshDecoder, FaceMeshResult,
        HandLandmarkDecoder, HandTracking, HandTrackingOptions, HandTrackingPlugin, ObjectDecoder,
        PalmDecoder, PalmDetections, PersonMask, PersonMaskDecoder, StyleDecoder, StylizedImage,
        TextDecoder, TextRegions, TrackedHand, spawn_hand_tracking, spawn_hand_tracking_with,
        style_transfer_model, text_detection_model,
    };
    pub use crate::dnn::{
        Backend, ConvCache, CpuFallback, Dnn, DnnError, DnnFailed, DnnOutput, DnnPlacement,
        DnnResult, DnnStatus, InputCrop, RateShortfall, RegionOfInterest, RequestInference,
        RequestMode,
    };
    pub use crate::faults::{HeimdallFaults, RestartDnn};
    pub use crate::frame_start::{CameraPhaseLock, HeimdallPacingPlugin, LateFrameStart};
    pub use crate::guard::{Calibration, GuardConfig, GuardOutcome, GuardStatus};
    #[cfg(feature = "overlay")]
    pub use crate::overlay::OverlayPlugin;
    pub use crate::results::{
        BackendKind, HeimdallBackend, HeimdallRecording, HeimdallTrace, RecordedRun,
    };
    pub use crate::settings::{CoordinationMode, FrameRateTarget, HeimdallSettings};
    pub use crate::stats::HeimdallStats;
    pub use crate::{HeimdallSystems, render::HeimdallRenderSystems};
    pub use heimdall_coordinator::policy::{JobView, Policy, PolicyContext, SchedulingPolicy};
    pub use heimdall_coordinator::{PlacementRule, UtilityParams};
    pub use heimdall_ir::conv_cache::ConvCacheConfig;
    pub use heimdall_vision::image::{Border, Crop, Normalization};
}

/// The plugin. Add it after `DefaultPlugins` (it needs the render app).
#[derive(Default)]
pub struct HeimdallPlugin {
    /// Settings: inserted as the [`HeimdallSettings`] resource, which the app may edit while it
    /// runs (the render world copies it whenever it changes).
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
        let clock = clock::HeimdallClock::default();
        let faults = faults::HeimdallFaults::default();
        let (tx, rx) = crossbeam_channel::bounded(faults::RESULTS_QUEUE);
        let (outbox, failed) = bridge::channel::Outbox::new(tx, faults.clone());
        app.insert_resource(self.settings.clone())
            .insert_resource(clock)
            .insert_resource(faults.clone())
            .insert_resource(outbox.clone())
            .insert_resource(bridge::channel::Inbox(rx))
            .init_resource::<results::HeimdallBackend>()
            .init_resource::<results::HeimdallTrace>()
            .init_resource::<results::HeimdallRecording>()
            .init_resource::<requests::PendingRequests>()
            .insert_resource(HeimdallStats::with_faults(faults.clone()))
            .init_resource::<faults::PendingRestarts>()
            .add_message::<faults::RestartDnn>()
            .init_asset::<asset::DnnModel>()
            .init_asset_loader::<asset::DnnModelLoader>()
            .add_message::<dnn::RequestInference>()
            .add_message::<stats::Measured>()
            .add_observer(camera::release_pins)
            .configure_sets(
                PreUpdate,
                (HeimdallSystems::Results, HeimdallSystems::Camera).chain(),
            )
            .add_systems(First, (requests::clear_requests, faults::take_restarts))
            .add_systems(
                PreUpdate,
                (
                    camera::advance_sources.in_set(HeimdallSystems::Camera),
                    (
                        results::watch_model_loads,
                        results::receive::receive,
                        stats::record_measurements,
                    )
                        .chain()
                        .in_set(HeimdallSystems::Results),
                ),
            )
            .add_systems(
                PostUpdate,
                requests::issue_requests.in_set(HeimdallSystems::Requests),
            )
            .add_systems(Last, (stats::record_frame, device::count_render_errors))
            .init_resource::<stats::main_phases::MainClock>()
            .add_systems(First, stats::main_phases::update_started)
            .add_systems(
                PreUpdate,
                diagnostics::publish.after(HeimdallSystems::Results),
            )
            .add_systems(
                PreUpdate,
                (
                    stats::main_phases::ours_begin.before(HeimdallSystems::Results),
                    stats::main_phases::ours_end.after(HeimdallSystems::Camera),
                ),
            )
            .add_systems(
                PostUpdate,
                (
                    stats::main_phases::ours_begin.before(HeimdallSystems::Results),
                    stats::main_phases::ours_end.after(HeimdallSystems::Requests),
                ),
            );
        results::receive::add_late_delivery(app);
        register_types(app);
        render::build(app, &self.settings, clock, outbox, failed);
    }

    fn finish(&self, app: &mut App) {
        render::finish(app);
    }
}

/// Registers the plugin's reflected components and resources in the `AppTypeRegistry`.
fn register_types(app: &mut App) {
    app.register_type::<HeimdallSettings>()
        .register_type::<CoordinationMode>()
        .register_type::<FrameRateTarget>()
        .register_type::<HeimdallStats>()
        .register_type::<clock::HeimdallClock>()
        .register_type::<faults::HeimdallFaults>()
        .register_type::<results::HeimdallBackend>()
        .register_type::<results::BackendKind>()
        .register_type::<results::HeimdallTrace>()
        .register_type::<results::HeimdallRecording>()
        .register_type::<device::HeimdallDeviceProfile>()
        .register_type::<frame_start::LateFrameStart>()
        .register_type::<frame_start::CameraPhaseLock>()
        .register_type::<Dnn>()
        .register_type::<DnnStatus>()
        .register_type::<DnnPlacement>()
        .register_type::<DnnOutput>()
        .register_type::<dnn::Backend>()
        .register_type::<dnn::DnnError>()
        .register_type::<dnn::CpuFallback>()
        .register_type::<dnn::LastRequest>()
        .register_type::<dnn::RegionOfInterest>()
        .register_type::<guard::GuardStatus>()
        .register_type::<camera::CameraFrame>()
        .register_type::<camera::CameraSource>()
        .register_type::<camera::FramePacing>()
        .register_type::<camera::CameraRetry>()
        .register_type::<decoders::FaceDetections>()
        .register_type::<decoders::FaceMeshResult>()
        .register_type::<decoders::PalmDetections>()
        .register_type::<decoders::HandTracking>()
        .register_type::<decoders::TrackedHand>()
        .register_type::<decoders::DetectedObjects>()
        .register_type::<decoders::PersonMask>()
        .register_type::<decoders::TextRegions>()
        .register_type::<decoders::StylizedImage>();
}
