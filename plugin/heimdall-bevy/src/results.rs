//! What comes back to the main world, the way Bevy's own `gpu_readback` does it: the render
//! world and the CPU workers send `RenderMessage`s through a channel (`bridge/channel.rs`);
//! once per update the main world drains it (`results/receive.rs`), keeps each DNN's typed
//! [`DnnStatus`] up to date, delivers decoded results to their entities (the decoder's
//! components, then [`DnnOutput`](crate::DnnOutput)) and triggers
//! [`DnnResult`](crate::DnnResult) (or [`DnnFailed`]) on the DNN's entity. Here: the resources
//! the messages update ([`HeimdallBackend`], [`HeimdallTrace`], [`HeimdallRecording`]) and the
//! watch on the DNNs' model assets.

use bevy::asset::LoadState;
use bevy::prelude::*;

use crate::dnn::{Dnn, DnnError, DnnFailed, DnnStatus};

pub(crate) mod receive;

/// Where inference runs in this app, and why.
#[derive(Clone, Debug, Default, PartialEq, Eq, Reflect)]
#[reflect(Debug, PartialEq, Default, Clone)]
pub enum BackendKind {
    /// Not known yet (before the render device exists).
    #[default]
    Unknown,
    /// On Bevy's render device.
    Gpu,
    /// On CPU workers only; the reason.
    Cpu(String),
}

/// The backend the plugin chose and the adapter (a main-world resource).
#[derive(Resource, Clone, Debug, Default, Reflect)]
#[reflect(Resource, Debug, Default, Clone)]
pub struct HeimdallBackend {
    /// Where inference runs.
    pub kind: BackendKind,
    /// The adapter's description, when there is a render device.
    pub adapter: Option<String>,
}

impl HeimdallBackend {
    /// `gpu`, `cpu (<reason>)` or `unknown`.
    pub fn name(&self) -> String {
        match &self.kind {
            BackendKind::Unknown => "unknown".into(),
            BackendKind::Gpu => "gpu".into(),
            BackendKind::Cpu(why) => format!("cpu ({why})"),
        }
    }
}

/// The coordinator's Chrome trace (`chrome://tracing`, Perfetto): ask with
/// [`HeimdallTrace::request`], read `HeimdallTrace::latest` a few frames later.
#[derive(Resource, Default, Debug, Reflect)]
#[reflect(Resource, Debug, Default)]
pub struct HeimdallTrace {
    pub(crate) requested: bool,
    latest: Option<String>,
}

impl HeimdallTrace {
    /// Asks the render world for the trace.
    pub fn request(&mut self) {
        self.requested = true;
    }

    /// The latest trace that arrived (taken).
    pub fn take(&mut self) -> Option<String> {
        self.latest.take()
    }
}

/// The run as `heimdall simulate` replays it (issue #15: the simulator checked against the app):
/// start it with [`HeimdallRecording::start`] where the measured window begins, ask for it with
/// [`HeimdallRecording::request`] and read [`HeimdallRecording::take`] a few frames later. The
/// render world then records every request, frame start and scene time, and each inference's
/// chunks with their measured times (memory bounded by the coordinator crate's `RunRecorder`).
#[derive(Resource, Default, Debug, Reflect)]
#[reflect(Resource, Debug, Default)]
pub struct HeimdallRecording {
    pub(crate) start_requested: bool,
    pub(crate) export_requested: bool,
    latest: Option<RecordedRun>,
}

/// A recorded run: a scenario file and a replay file (formats in `assets/scenarios/README.md`).
#[derive(Clone, Debug, Reflect)]
#[reflect(Debug, Clone)]
pub struct RecordedRun {
    /// The scenario (`heimdall simulate SCENARIO`), decisions per frame.
    pub scenario_json: String,
    /// The measured render and step times (`--replay`).
    pub replay_json: String,
}

impl HeimdallRecording {
    /// Starts recording (again: what was recorded before is forgotten).
    pub fn start(&mut self) {
        self.start_requested = true;
    }

    /// Asks the render world for the recording so far.
    pub fn request(&mut self) {
        self.export_requested = true;
    }

    /// The latest recording that arrived (taken).
    pub fn take(&mut self) -> Option<RecordedRun> {
        self.latest.take()
    }
}

/// A model asset that failed to load fails its DNN (a missing or corrupt file must not leave the
/// app waiting for it).
pub(crate) fn watch_model_loads(
    mut commands: Commands,
    assets: Res<AssetServer>,
    mut dnns: Query<(Entity, &Dnn, &mut DnnStatus)>,
) {
    for (e, dnn, mut status) in &mut dnns {
        if *status != DnnStatus::Loading {
            continue;
        }
        if let Some(LoadState::Failed(err)) = assets.get_load_state(&dnn.model) {
            let path = dnn
                .model
                .path()
                .map_or_else(|| "the model".to_string(), |p| p.to_string());
            let error = DnnError::Load(format!("{path}: {err}"));
            error!("heimdall: {error}");
            commands.trigger(DnnFailed {
                entity: e,
                error: error.clone(),
            });
            *status = DnnStatus::Failed(error);
        }
    }
}
