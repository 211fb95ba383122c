//! GPU backend of heimdall: WGSL kernels in the PHWC4 layout on a caller's `wgpu::Device` and
//! `wgpu::Queue` (Bevy's) or an own one, with f32, f16 and packed-f16 storage, and any-range
//! encoding into the caller's command encoder.
//!
//! ```no_run
//! use heimdall_gpu::{GpuContext, GpuModel, GpuOptions, Precision};
//! # fn graph() -> heimdall_ir::Graph { unimplemented!() }
//! let ctx = GpuContext::create()?;
//! let model = GpuModel::compile(&ctx, &graph(), GpuOptions::new(Precision::F16))?;
//! let mut encoder = ctx.device.create_command_encoder(&Default::default());
//! model.set_input(0, &vec![0.0; 128 * 128 * 3])?;
//! model.encode(&mut encoder, 0..10)?; // this frame's chunk
//! # Ok::<(), heimdall_gpu::GpuError>(())
//! ```
//!
//! Layout of the crate: [`context`] (the device), [`layout`] (PHWC4), [`precision`] (storage
//! types), [`wgsl`] (composition of `shaders/*.wgsl` with generated accessors), [`kernels`] (one
//! builder per kernel family), [`memory`] (activation slots by liveness), [`plan`] (GPU or CPU
//! per step), [`model`] (compile and encode), the readback of outputs, [`preprocess`] (camera texture to
//! model input) and [`probe`] (measured FMA and bandwidth ceilings).
#![warn(missing_docs)]

pub mod context;
mod cpu_step;
pub mod error;
pub mod kernels;
pub mod layout;
pub mod memory;
pub mod model;
pub mod plan;
pub mod precision;
pub mod preprocess;
pub mod probe;
pub mod profile;
mod readback;
pub mod shaders;
pub mod wgsl;

pub use context::{GpuContext, GpuFamily, Tuning};
pub use error::GpuError;
pub use layout::Phwc4;
pub use model::{CompileReport, GpuModel, GpuOptions, PipelineCacheState};
pub use plan::Placement;
pub use precision::Precision;
pub use profile::{RunProfile, StepProfile, TimingSource};
