//! CPU backend of heimdall: f32 kernels on NHWC slices, an arena planned by liveness, and
//! execution of any contiguous op range with intermediate tensors kept between calls
//! (Heimdall's `RunPartial(start, end)`).
//!
//! It is the reference for every other backend, the fallback for ops a GPU path lacks, and the
//! target of whole-model CPU offload. Each op family has one file in `ops/` with its kernels
//! and how an op prepares them; [`kernels`] re-exports them as plain slice functions.
#![warn(missing_docs)]

mod aligned;
pub mod arena;
mod conv_cache;
mod cpu_ops;
mod error;
mod fuse;
mod fuse_expand;
mod fuse_tail;
pub mod guard;
pub mod kernels;
mod model;
mod ops;
mod step;

pub use cpu_ops::cpu_ops;
pub use error::CpuError;
pub use heimdall_ir::conv_cache::{CacheCounts, ConvCacheConfig};
pub use kernels::par::{MAX_THREADS, PoolCounters};
pub use model::{CpuModel, CpuOptions, CpuPrecision};
