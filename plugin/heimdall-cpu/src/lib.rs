//! CPU backend of heimdall: f32 kernels on NHWC slices, an arena planned by liveness, and
//! execution of any contiguous op range with intermediate tensors kept between calls
//! (Heimdall's `RunPartial(start, end)`).
//!
//! It is the reference for every other backend, the fallback for ops a GPU path lacks, and the
//! target of whole-model CPU offload.
#![warn(missing_docs)]

mod error;
mod exec;
pub mod kernels;
pub mod mediapipe;
pub mod plan;
mod prepare_ext;

pub use error::CpuError;
pub use exec::{CpuModel, CpuOptions};

/// Most threads the backend plans scratch memory for.
pub const MAX_THREADS: usize = 8;
