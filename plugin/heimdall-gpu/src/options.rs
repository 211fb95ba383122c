//! How a model is compiled ([`GpuOptions`]) and what compiling it produced
//! ([`CompileReport`]).

use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;

use heimdall_ir::conv_cache::ConvCacheConfig;

use crate::context::Tuning;
use crate::precision::Precision;

/// How to compile a model.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuOptions {
    /// Storage precision of activations and weights. `F16` falls back to `PackedF16` on devices
    /// without `SHADER_F16`. Average pools and means always store f32, and so do graph outputs
    /// and the inputs of the ops producing them.
    pub precision: Precision,
    /// Per-op overrides: ops whose index lies in a range store their outputs and weights in the
    /// given precision (e.g. keep a sensitive decoder in f32). Later entries win.
    pub overrides: Vec<(Range<usize>, Precision)>,
    /// A file persisting wgpu's pipeline cache between runs. When the device has
    /// `Features::PIPELINE_CACHE` (Vulkan), pipelines are created through a
    /// `wgpu::PipelineCache` seeded from this file (if it exists and matches the adapter,
    /// driver and wgpu version; otherwise the cache starts empty) and the cache's data is
    /// written back after compiling, so the driver's shader compilation is skipped next time.
    /// Without the feature the option is ignored. `None`: no pipeline cache.
    pub pipeline_cache: Option<PathBuf>,
    /// How kernels are blocked: `None` for the device's own choice ([`crate::GpuContext::tuning`]);
    /// a modified copy of it for experiments and for tests that force a kernel variant.
    pub tuning: Option<Tuning>,
    /// The convolution cache (DeepMon): skip the work of the first layers where the input did
    /// not change since they last ran (`heimdall_ir::conv_cache`). `None`: off.
    pub conv_cache: Option<ConvCacheConfig>,
}

impl GpuOptions {
    /// Options with one precision for the whole model.
    pub fn new(precision: Precision) -> Self {
        GpuOptions {
            precision,
            overrides: Vec::new(),
            pipeline_cache: None,
            tuning: None,
            conv_cache: None,
        }
    }

    /// These options with the convolution cache on (see [`GpuOptions::conv_cache`]).
    pub fn with_conv_cache(mut self, config: ConvCacheConfig) -> Self {
        self.conv_cache = Some(config);
        self
    }

    /// These options with the pipeline cache persisted in `path` (see
    /// [`GpuOptions::pipeline_cache`]).
    pub fn with_pipeline_cache(mut self, path: impl Into<PathBuf>) -> Self {
        self.pipeline_cache = Some(path.into());
        self
    }

    /// These options with kernels blocked by `tuning` instead of the device's own choice.
    pub fn with_tuning(mut self, tuning: Tuning) -> Self {
        self.tuning = Some(tuning);
        self
    }
}

/// What the pipeline cache did during a compile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PipelineCacheState {
    /// No cache: none was asked for, or the device lacks `Features::PIPELINE_CACHE`.
    Unused,
    /// The cache started empty (no file yet, or its data did not match the device): a cold
    /// compile.
    Cold,
    /// The cache was seeded with this many bytes from its file: a warm compile.
    Warm(usize),
    /// Reading or writing the cache file failed (the compile itself succeeded).
    Failed(String),
}

impl Default for GpuOptions {
    fn default() -> Self {
        GpuOptions::new(Precision::F32)
    }
}

/// What compilation produced and cost.
#[derive(Clone, Debug, PartialEq)]
pub struct CompileReport {
    /// Wall time of [`crate::GpuModel::compile`] (weights, buffers, pipelines, bind groups).
    pub compile_time: Duration,
    /// The precision used (after any fallback).
    pub precision: Precision,
    /// Distinct pipelines (deduplicated by composed source).
    pub pipelines: usize,
    /// Compute dispatches of a whole run.
    pub dispatches: usize,
    /// Concatenations with no dispatch: their inputs' producers write straight into their part
    /// of the output (its channel slices, or rows of a one-slice tensor).
    pub free_concats: usize,
    /// Bytes of the activation slots (peak activation memory).
    pub peak_bytes: u64,
    /// Sum of the bytes of every activation tensor (what no reuse would need).
    pub total_bytes: u64,
    /// Bytes of the second set of activation slots a model with the convolution cache keeps to
    /// run the plain memory plan while its cache is off (0 without the cache).
    pub plain_plan_bytes: u64,
    /// Bytes of weights and other constants on the GPU.
    pub weight_bytes: u64,
    /// What the pipeline cache did (see [`GpuOptions::pipeline_cache`]).
    pub pipeline_cache: PipelineCacheState,
    /// Ops whose work the convolution cache may skip (empty when it is off).
    pub cached_ops: Vec<usize>,
    /// Ops whose kernels compute in f16 ([`crate::arith::Arith`]; empty in f32, packed f16, or
    /// with [`crate::Tuning::f16_arithmetic`] off).
    pub f16_arith_ops: Vec<usize>,
}
