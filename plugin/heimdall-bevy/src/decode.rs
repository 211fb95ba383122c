//! Decoders of the example's models (run on a CPU worker) and the components they fill:
//! BlazeFace detections, the 468-point face mesh with its orientation, and the person mask as a
//! GPU texture usable in any material.

use std::time::Duration;

use bevy::asset::RenderAssetUsages;
use bevy::math::UVec2;
use bevy::prelude::*;
use bevy::render::render_resource::{Extent3d, TextureDimension, TextureFormat};
use heimdall_vision::{BlazeFaceDecoder, Detection, FaceMesh, Mask};

use crate::crop::Crop;
use crate::dnn::Decoder;

/// A decoded result.
#[derive(Clone, Debug, Default)]
pub enum Decoded {
    /// Raw outputs only.
    #[default]
    None,
    /// Faces, in frame uv (weighted NMS applied).
    Faces(Vec<Detection>),
    /// A face mesh, in frame uv.
    Mesh(FaceMesh),
    /// A person mask in the model's resolution (`1` = person).
    Mask(Mask),
}

/// Why outputs could not be decoded.
pub type DecodeError = heimdall_vision::DecodeError;

fn output_of_len(outputs: &[Vec<f32>], len: usize) -> Option<&[f32]> {
    outputs.iter().find(|o| o.len() == len).map(Vec::as_slice)
}

fn missing(what: &'static str, expected: usize, outputs: &[Vec<f32>]) -> DecodeError {
    DecodeError {
        what,
        expected,
        got: outputs.iter().map(Vec::len).max().unwrap_or(0),
    }
}

/// Decodes `outputs` of an inference run on `crop` of a `frame`-sized camera frame.
pub fn decode(
    decoder: Decoder,
    outputs: &[Vec<f32>],
    crop: &Crop,
    frame: UVec2,
) -> Result<Decoded, DecodeError> {
    let to_frame = crop.transform;
    match decoder {
        Decoder::Raw => Ok(Decoded::None),
        Decoder::BlazeFace => {
            // The 896 anchors are generated once, not per inference.
            static DECODER: std::sync::OnceLock<BlazeFaceDecoder> = std::sync::OnceLock::new();
            let d = DECODER.get_or_init(BlazeFaceDecoder::short_range);
            let n = d.anchors().len();
            let regressors = output_of_len(outputs, n * 16)
                .ok_or_else(|| missing("BlazeFace regressors", n * 16, outputs))?;
            let scores =
                output_of_len(outputs, n).ok_or_else(|| missing("BlazeFace scores", n, outputs))?;
            let faces = d
                .decode(regressors, scores)?
                .iter()
                .map(|f| f.transformed(&to_frame))
                .collect();
            Ok(Decoded::Faces(faces))
        }
        Decoder::FaceMesh => {
            let n = heimdall_vision::face_mesh::FACE_MESH_POINTS * 3;
            let landmarks = output_of_len(outputs, n)
                .ok_or_else(|| missing("face mesh landmarks", n, outputs))?;
            let flag = output_of_len(outputs, 1).ok_or_else(|| missing("face flag", 1, outputs))?;
            Ok(Decoded::Mesh(heimdall_vision::decode_face_mesh(
                landmarks, flag, &to_frame, frame.x, frame.y,
            )?))
        }
        Decoder::PersonMask => {
            let o = outputs
                .first()
                .ok_or_else(|| missing("person mask", 1, outputs))?;
            let side = (o.len() as f64).sqrt() as u32;
            if (side * side) as usize != o.len() {
                return Err(missing(
                    "square person mask",
                    (side * side) as usize,
                    outputs,
                ));
            }
            Ok(Decoded::Mask(heimdall_vision::decode_mask(o, side, side)?))
        }
    }
}

/// The latest faces of a [`Decoder::BlazeFace`] DNN (on its entity).
#[derive(Component, Clone, Debug)]
pub struct FaceDetections {
    /// Camera frame they were computed from.
    pub frame_index: u64,
    /// Its capture time.
    pub capture_time: Duration,
    /// Faces in frame uv, best first.
    pub faces: Vec<Detection>,
}

/// The latest mesh of a [`Decoder::FaceMesh`] DNN (on its entity).
#[derive(Component, Clone, Debug)]
pub struct FaceMeshResult {
    /// Camera frame it was computed from.
    pub frame_index: u64,
    /// Its capture time.
    pub capture_time: Duration,
    /// The mesh (frame uv; see [`FaceMesh::head_pose`] and [`FaceMesh::anchor`]).
    pub mesh: FaceMesh,
}

/// The person mask of a [`Decoder::PersonMask`] DNN (on its entity): an `R8Unorm` texture,
/// updated in place, usable in any material.
#[derive(Component, Clone, Debug)]
pub struct PersonMask {
    /// Camera frame it was computed from.
    pub frame_index: u64,
    /// Its capture time.
    pub capture_time: Duration,
    /// The texture (`1` = person).
    pub image: Handle<Image>,
}

/// An `R8Unorm` image of a mask.
pub fn mask_image(mask: &Mask) -> Image {
    Image::new(
        Extent3d {
            width: mask.width.max(1),
            height: mask.height.max(1),
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        mask.to_u8(),
        TextureFormat::R8Unorm,
        RenderAssetUsages::MAIN_WORLD | RenderAssetUsages::RENDER_WORLD,
    )
}
