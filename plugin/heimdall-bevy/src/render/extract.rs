//! What the render world copies of the main world besides DNNs, frames and requests (which
//! their own modules extract): the display's refresh rate, a trace request and the recording's
//! requests.

use bevy::prelude::*;
use bevy::render::Extract;
use bevy::window::{Monitor, PrimaryMonitor};

use crate::results::{HeimdallRecording, HeimdallTrace};

/// The primary monitor's refresh rate, Hz, when known (render world).
#[derive(Resource, Default)]
pub(crate) struct ExtractedDisplay(pub Option<f64>);

/// Whether the main world asked for the coordinator's trace this frame (render world).
#[derive(Resource, Default)]
pub(crate) struct ExtractedTraceRequest(pub bool);

pub(crate) fn extract_display_and_trace(
    mut display: ResMut<ExtractedDisplay>,
    mut trace: ResMut<ExtractedTraceRequest>,
    monitors: Extract<Query<&Monitor, With<PrimaryMonitor>>>,
    request: Extract<Option<Res<HeimdallTrace>>>,
) {
    display.0 = monitors
        .iter()
        .find_map(|m| m.refresh_rate_millihertz)
        .map(|mhz| f64::from(mhz) / 1000.0);
    trace.0 = request.as_ref().is_some_and(|r| r.requested);
}

/// Whether the main world asked this frame to start the run's recording, or for its export
/// (render world; see [`HeimdallRecording`]).
#[derive(Resource, Default)]
pub(crate) struct ExtractedRecording {
    pub start: bool,
    pub export: bool,
}

pub(crate) fn extract_recording(
    mut out: ResMut<ExtractedRecording>,
    recording: Extract<Option<Res<HeimdallRecording>>>,
) {
    let r = recording.as_deref();
    out.start = r.is_some_and(|r| r.start_requested);
    out.export = r.is_some_and(|r| r.export_requested);
}
