//! The decoders heimdall ships, one file each (see [`crate::decoder::DnnDecoder`] to add one):
//! MediaPipe's face detection ([`face`]), face mesh ([`face_mesh`]) and selfie segmentation
//! ([`person_mask`]).

pub mod face;
pub mod face_mesh;
pub mod person_mask;

pub use face::{FaceDecoder, FaceDetections};
pub use face_mesh::{FaceMeshDecoder, FaceMeshResult};
pub use person_mask::{PersonMask, PersonMaskDecoder};
