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
//! Layout of the crate, from the bottom: [`context`] (the device), [`layout`] (PHWC4),
//! [`precision`] (storage types), [`arith`] (f32 or f16 arithmetic of the convolutions), [`sources`] (the WGSL files of `shaders/`), [`params`]
//! (uniform parameter structs, defined once for Rust and WGSL), [`wgsl`] (composition of a
//! kernel's source with generated bindings and accessors), [`dispatch`] (what a kernel builder
//! sees and produces), [`kernels`] (the shaders several families share) and [`ops`] (one file
//! per op family beside its shader, and the catalogue of every composed variant); then
//! [`options`], [`memory`] (activation slots by liveness), [`plan`] (GPU or CPU per step), the
//! storage precisions, slot aliases and wgpu resources of a compiled model, [`model`] (compile
//! and encode), the readback of outputs, [`resume`] (the live activations at a step boundary,
//! for a CPU run of the remaining ops), [`profile`], [`preprocess`] (camera texture to model
//! input), [`tensor_to_rgba`] (model output to an RGBA texture), [`probe`] (measured FMA and
//! bandwidth ceilings) and [`guard`] (the accuracy guard: f16 checked against the CPU reference,
//! f32 where it must).
#![warn(missing_docs)]

mod aliases;
pub mod arith;
mod blocking;
mod compile;
pub mod context;
pub mod conv_cache;
pub mod coop;
mod cpu_step;
pub mod device_profile;
pub mod dispatch;
pub mod error;
pub mod guard;
pub mod io_pack;
pub mod kernels;
pub mod layout;
pub mod limits;
pub mod memory;
pub mod model;
pub mod ops;
pub mod options;
pub mod params;
mod pipelined;
pub mod plan;
pub mod precision;
pub mod preprocess;
pub mod probe;
pub mod profile;
mod readback;
mod resources;
pub mod resume;
#[cfg(test)]
mod shader_tests;
pub mod sources;
mod storage;
pub mod tensor_to_rgba;
pub mod tiles;
mod timed;
mod wait;
pub mod wgsl;

pub use blocking::WallParts;
pub use context::{GpuContext, GpuFamily, Tuning};
pub use conv_cache::control::ConvCacheControl;
pub use cpu_step::CpuSteps;
pub use device_profile::DeviceProfile;
pub use error::GpuError;
pub use layout::Phwc4;
pub use limits::{LimitsError, check_limits};
pub use model::GpuModel;
pub use options::{CompileReport, GpuOptions, PipelineCacheState};
pub use plan::Placement;
pub use precision::Precision;
pub use profile::{RunProfile, StepProfile, TimingSource};
pub use resume::points::ResumePoints;
pub use resume::{NotResumable, ResumeDownload, ResumeError, ResumeState, restore_cpu};
pub use wait::waits_on_this_thread;
