//! Which DNNs take which camera frame, with which crop: each update, every [`Dnn`] whose
//! [`RequestMode`] is due asks for an inference on its source's latest frame; the requests are
//! extracted to the render world, where idle DNNs start them.

use bevy::prelude::*;
use bevy::render::Extract;
use heimdall_vision::image::Crop;

use crate::asset::DnnModel;
use crate::camera::CameraFrame;
use crate::clock::HeimdallClock;
use crate::dnn::{Dnn, InputCrop, LastRequest, RegionOfInterest, RequestInference, RequestMode};

/// One DNN asking for an inference on its source's latest frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InferenceRequest {
    /// The DNN's entity.
    pub dnn: Entity,
    /// The crop of the frame.
    pub crop: Crop,
}

/// This update's requests (main world; cleared every `First`).
#[derive(Resource, Default, Debug)]
pub struct PendingRequests(pub Vec<InferenceRequest>);

/// The requests of the frame being rendered (render world).
#[derive(Resource, Default, Debug)]
pub struct ExtractedRequests(pub Vec<InferenceRequest>);

pub(crate) fn clear_requests(mut pending: ResMut<PendingRequests>) {
    pending.0.clear();
}

/// The crop of `dnn` for the current frame, or `None` if it cannot run now.
fn crop_of(
    dnn: &Dnn,
    frame: &CameraFrame,
    models: &Assets<DnnModel>,
    rois: &Query<&RegionOfInterest>,
) -> Option<Crop> {
    match dnn.crop {
        InputCrop::Full => Some(Crop::FULL),
        InputCrop::Letterbox => {
            let shape = models.get(&dnn.model)?.input_shape(0)?;
            let (h, w) = (*shape.get(1)? as u32, *shape.get(2)? as u32);
            Some(Crop::letterbox(frame.size.x, frame.size.y, w, h))
        }
        InputCrop::Roi(of) => rois.get(of).ok().map(|r| r.crop),
    }
}

pub(crate) fn issue_requests(
    mut pending: ResMut<PendingRequests>,
    clock: Res<HeimdallClock>,
    models: Res<Assets<DnnModel>>,
    mut on_demand: MessageReader<RequestInference>,
    mut dnns: Query<(Entity, &Dnn, &mut LastRequest)>,
    frames: Query<&CameraFrame>,
    rois: Query<&RegionOfInterest>,
) {
    let now = clock.elapsed();
    let asked: Vec<Entity> = on_demand.read().map(|r| r.0).collect();
    for (e, dnn, mut last) in &mut dnns {
        let due = match dnn.request {
            RequestMode::Continuous => true,
            RequestMode::Every(p) => last.at.is_none_or(|t| now >= t + p),
            RequestMode::OnDemand => asked.contains(&e),
        };
        if !due {
            continue;
        }
        let Ok(frame) = frames.get(dnn.source) else {
            continue;
        };
        let Some(crop) = crop_of(dnn, frame, &models, &rois) else {
            continue;
        };
        last.at = Some(now);
        pending.0.push(InferenceRequest { dnn: e, crop });
    }
}

pub(crate) fn extract_requests(
    mut extracted: ResMut<ExtractedRequests>,
    pending: Extract<Res<PendingRequests>>,
) {
    extracted.0.clear();
    extracted.0.extend(pending.0.iter().copied());
}
