//! Which DNNs take which camera frame, with which crop: each update, every [`Dnn`] whose
//! [`RequestMode`] is due asks for an inference on its source's latest frame; the requests are
//! extracted to the render world, where idle DNNs start them.

use bevy::prelude::*;
use bevy::render::Extract;
use heimdall_vision::image::Crop;
use std::time::Duration;

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
        last.at = Some(match (dnn.request, last.at) {
            (RequestMode::Every(p), Some(t)) => next_slot(t, p, now),
            _ => now,
        });
        pending.0.push(InferenceRequest { dnn: e, crop });
    }
}

/// The slot of a periodic request made at `now`, the previous slot being `last`: the next slot
/// of the grid `last + k * period`, so that on a frame grid that does not divide the period
/// (100 ms at 60 Hz: due after 6 or 7 frames) the requests keep their average rate instead of
/// losing the rounding each time. A request more than a period late (a stall) starts a new grid.
fn next_slot(last: Duration, period: Duration, now: Duration) -> Duration {
    let next = last + period;
    if now < next + period { next } else { now }
}

pub(crate) fn extract_requests(
    mut extracted: ResMut<ExtractedRequests>,
    pending: Extract<Res<PendingRequests>>,
) {
    extracted.0.clear();
    extracted.0.extend(pending.0.iter().copied());
}

#[cfg(test)]
mod tests {
    use super::next_slot;
    use std::time::Duration;

    /// Requests of a 100 ms period at 60 Hz: a grid of frames, each due check made at a frame.
    fn requests_in_one_second(frame: Duration, period: Duration) -> usize {
        let mut last: Option<Duration> = None;
        let mut count = 0;
        for i in 0..=(Duration::from_secs(10).as_nanos() / frame.as_nanos()) {
            let now = frame * i as u32;
            if last.is_none_or(|t| now >= t + period) {
                last = Some(last.map_or(now, |t| next_slot(t, period, now)));
                count += 1;
            }
        }
        count / 10
    }

    #[test]
    fn a_period_keeps_its_rate_on_a_frame_grid_that_does_not_divide_it() {
        let frame = Duration::from_nanos(16_666_667);
        assert_eq!(
            requests_in_one_second(frame, Duration::from_millis(100)),
            10
        );
        assert_eq!(requests_in_one_second(frame, Duration::from_millis(66)), 15);
        // Periods shorter than a frame: one request per frame.
        assert_eq!(requests_in_one_second(frame, Duration::from_millis(5)), 60);
    }

    #[test]
    fn a_stall_starts_a_new_grid() {
        let p = Duration::from_millis(100);
        let ms = Duration::from_millis;
        assert_eq!(next_slot(ms(1000), p, ms(1116)), ms(1100));
        assert_eq!(next_slot(ms(1000), p, ms(1450)), ms(1450));
    }
}
