//! The face landmark model (`face_landmark`): the 468-point mesh with presence and head pose
//! ([`heimdall_vision::decode_face_mesh`]) into [`FaceMeshResult`] in frame uv.

use std::time::Duration;

use bevy::prelude::*;
use heimdall_vision::FaceMesh;
use heimdall_vision::face_mesh::FACE_MESH_POINTS;

use crate::decoder::{DecodeError, DecodeInput, DnnDecoder};

/// The latest mesh of a face landmark DNN (on its entity).
#[derive(Component, Clone, Debug, Reflect)]
#[reflect(opaque)]
#[reflect(Component, Debug, Clone)]
pub struct FaceMeshResult {
    /// Camera frame it was computed from.
    pub frame_index: u64,
    /// Its capture time.
    pub capture_time: Duration,
    /// The mesh (frame uv; see [`FaceMesh::head_pose`] and [`FaceMesh::anchor`]).
    pub mesh: FaceMesh,
}

/// Decodes `face_landmark` run on a face ROI.
#[derive(Default)]
pub struct FaceMeshDecoder;

impl DnnDecoder for FaceMeshDecoder {
    type Output = FaceMeshResult;

    fn decode(&self, input: &DecodeInput) -> Result<FaceMeshResult, DecodeError> {
        let landmarks = input.output_of_len("face mesh landmarks", FACE_MESH_POINTS * 3)?;
        let flag = input.output_of_len("face flag", 1)?;
        let mesh = heimdall_vision::decode_face_mesh(
            landmarks,
            flag,
            &input.crop.transform,
            input.frame_size.x,
            input.frame_size.y,
        )?;
        Ok(FaceMeshResult {
            frame_index: input.frame_index,
            capture_time: input.capture_time,
            mesh,
        })
    }

    fn deliver(&self, out: FaceMeshResult, entity: &mut EntityWorldMut) {
        entity.insert(out);
    }
}
