//! Main-world systems: pull camera frames, issue inference requests, turn results into
//! components and messages, and keep the run's statistics.

use std::time::Duration;

use bevy::prelude::*;

use crate::asset::DnnModel;
use crate::camera::{self, CameraFrame};
use crate::crop::Crop;
use crate::decode::{Decoded, FaceDetections, FaceMeshResult, PersonMask, mask_image};
use crate::dnn::{Dnn, DnnOutput, DnnResult, InputCrop, RequestInference, RequestMode};
use crate::render::{RequestMsg, RequestQueue};
use crate::shared::HeimdallShared;
use crate::stats::{self, HeimdallStats};

/// When each DNN was last requested.
#[derive(Component, Default)]
pub(crate) struct LastRequest(Option<Duration>);

/// System sets of the main world, for ordering app systems against the plugin.
#[derive(SystemSet, Debug, Clone, PartialEq, Eq, Hash)]
pub enum HeimdallSystems {
    /// New camera frames are written (`PreUpdate`).
    Camera,
    /// Results arrive as components and messages (`PreUpdate`, after `Camera`).
    Results,
    /// Requests are issued (`PostUpdate`).
    Requests,
}

pub(crate) fn build(app: &mut App) {
    app.add_systems(First, clear_requests)
        .add_systems(
            PreUpdate,
            (
                camera::advance_sources.in_set(HeimdallSystems::Camera),
                receive_results.in_set(HeimdallSystems::Results),
            )
                .chain(),
        )
        .add_systems(
            PostUpdate,
            (add_request_clock, issue_requests)
                .chain()
                .in_set(HeimdallSystems::Requests),
        )
        .add_systems(Last, stats::record_frame);
}

fn clear_requests(mut q: ResMut<RequestQueue>) {
    q.0.clear();
}

fn add_request_clock(mut commands: Commands, q: Query<Entity, (With<Dnn>, Without<LastRequest>)>) {
    for e in &q {
        commands.entity(e).insert(LastRequest::default());
    }
}

/// The crop of `dnn` for the current frame, or `None` if it cannot run now.
fn crop_of(
    dnn: &Dnn,
    frame: &CameraFrame,
    models: &Assets<DnnModel>,
    faces: &Query<&FaceDetections>,
) -> Option<Crop> {
    let (fw, fh) = (frame.size.x, frame.size.y);
    match dnn.crop {
        InputCrop::Full => Some(Crop::FULL),
        InputCrop::Letterbox => {
            let shape = models.get(&dnn.model)?.input_shape(0)?.to_vec();
            let (h, w) = (*shape.get(1)? as u32, *shape.get(2)? as u32);
            Some(Crop::letterbox(fw, fh, w, h))
        }
        InputCrop::FaceOf(detector) => {
            let det = faces.get(detector).ok()?.faces.first()?;
            let roi = heimdall_vision::face_landmark_roi(det, fw, fh);
            Some(Crop::rotated(
                heimdall_vision::CropTransform::from_rotated_rect(&roi, fw, fh),
            ))
        }
    }
}

fn issue_requests(
    mut queue: ResMut<RequestQueue>,
    shared: Res<HeimdallShared>,
    models: Res<Assets<DnnModel>>,
    mut on_demand: MessageReader<RequestInference>,
    mut dnns: Query<(Entity, &Dnn, &mut LastRequest)>,
    frames: Query<&CameraFrame>,
    faces: Query<&FaceDetections>,
) {
    let now = shared.elapsed();
    let asked: Vec<Entity> = on_demand.read().map(|r| r.0).collect();
    for (e, dnn, mut last) in &mut dnns {
        let due = match dnn.request {
            RequestMode::Continuous => true,
            RequestMode::Every(p) => last.0.is_none_or(|t| now >= t + p),
            RequestMode::OnDemand => asked.contains(&e),
        };
        if !due {
            continue;
        }
        let Ok(frame) = frames.get(dnn.source) else {
            continue;
        };
        let Some(crop) = crop_of(dnn, frame, &models, &faces) else {
            continue;
        };
        last.0 = Some(now);
        queue.0.push(RequestMsg { entity: e, crop });
    }
}

#[allow(clippy::too_many_arguments)]
fn receive_results(
    mut commands: Commands,
    shared: Res<HeimdallShared>,
    mut images: ResMut<Assets<Image>>,
    mut stats: ResMut<HeimdallStats>,
    mut writer: MessageWriter<DnnResult>,
    masks: Query<&PersonMask>,
    names: Query<&Dnn>,
    models: Res<Assets<DnnModel>>,
) {
    for r in shared.0.results.drain() {
        let Ok(mut entity) = commands.get_entity(r.entity) else {
            continue;
        };
        let capture_time = Duration::from_secs_f64(r.capture_ms.max(0.0) / 1e3);
        let arrived = shared.now_ms();
        let latency = Duration::from_secs_f64((arrived - r.capture_ms).max(0.0) / 1e3);
        let output = DnnOutput {
            frame_index: r.frame_index,
            capture_time,
            latency,
            tensors: r.tensors,
            backend: r.backend,
            crop: r.crop,
        };
        let name = names
            .get(r.entity)
            .ok()
            .and_then(|d| models.get(&d.model))
            .map_or_else(|| format!("{}", r.entity), |m| m.name.clone());
        stats.record_result(&name, r.entity, latency, r.frame_index, r.backend);
        match &r.decoded {
            Decoded::Faces(faces) => {
                entity.insert(FaceDetections {
                    frame_index: r.frame_index,
                    capture_time,
                    faces: faces.clone(),
                });
            }
            Decoded::Mesh(mesh) => {
                entity.insert(FaceMeshResult {
                    frame_index: r.frame_index,
                    capture_time,
                    mesh: mesh.clone(),
                });
            }
            Decoded::Mask(mask) => {
                let image = match masks.get(r.entity) {
                    Ok(m)
                        if images.get(&m.image).is_some_and(|i| {
                            i.width() == mask.width && i.height() == mask.height
                        }) =>
                    {
                        if let Some(mut img) = images.get_mut(&m.image) {
                            img.data = Some(mask.to_u8());
                        }
                        m.image.clone()
                    }
                    _ => images.add(mask_image(mask)),
                };
                entity.insert(PersonMask {
                    frame_index: r.frame_index,
                    capture_time,
                    image,
                });
            }
            Decoded::None => {}
        }
        entity.insert(output.clone());
        writer.write(DnnResult {
            entity: r.entity,
            output,
            decoded: r.decoded,
        });
    }
}
