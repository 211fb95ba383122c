//! Measured ceilings of the device, so kernel efficiency is reported against what the device
//! does rather than a datasheet: the FP32 and FP16 FMA rates (`shaders/probe_fma.wgsl`: long
//! dependent FMA chains, several independent chains per thread, many threads), the copy bandwidth
//! (`shaders/probe_copy.wgsl`: read + write of a 64 MiB buffer), and the efficiency of the 1x1
//! convolution on a large layer compiled through the normal [`GpuModel`] path. Timed with
//! timestamp queries (a compute pass with `timestamp_writes`), else the wall time of one
//! submission; medians of several runs after warm-up.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use heimdall_ir::{ConvAttrs, DType, Graph, Op, OpKind, TensorId, TensorInfo, UnaryKind};
use wgpu::util::DeviceExt;

use crate::context::GpuContext;
use crate::error::GpuError;
use crate::model::GpuModel;
use crate::options::GpuOptions;
use crate::params::{ParamsSpace, ShaderParams, shader_params};
use crate::precision::Precision;
use crate::profile::TimingSource;
use wgpu::CooperativeScalarType;

const FMA_SOURCE: &str = include_str!("../shaders/probe_fma.wgsl");
const COPY_SOURCE: &str = include_str!("../shaders/probe_copy.wgsl");

/// FMAs per thread per loop turn of `probe_fma.wgsl` (8 vec4 chains unrolled by 4).
const FMAS_PER_TURN: u64 = 8 * 4 * 4;
/// Threads per work group of the probe kernels.
const PROBE_WG: u64 = 64;

/// A measured rate and how it was timed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    /// The rate (GFLOP/s or GB/s).
    pub value: f64,
    /// Median time of the measured dispatch.
    pub time: Duration,
    /// How it was timed.
    pub source: TimingSource,
}

/// The 1x1 convolution benchmark: one CONV_2D 1x1 layer through [`GpuModel`].
#[derive(Clone, Debug, PartialEq)]
pub struct Conv1x1Bench {
    /// `[H, W, C_in, C_out]` of the layer.
    pub shape: [usize; 4],
    /// Storage precision the layer ran in.
    pub precision: Precision,
    /// Median GPU time of the conv step.
    pub time: Duration,
    /// `2 * H * W * C_in * C_out` flops over the time.
    pub gflops: f64,
    /// How it was timed.
    pub source: TimingSource,
    /// The kernel and blocking it was compiled with (the tiled kernel's tile, or pixels x
    /// slices per thread and work group of the blocked one).
    pub blocking: String,
    /// Whether the conv computed in f16 ([`crate::arith::Arith`]).
    pub f16_arith: bool,
}

/// Everything the probe measured.
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeReport {
    /// The adapter.
    pub device: String,
    /// FP32 FMA rate in GFLOP/s (2 flops per FMA).
    pub fma: Rate,
    /// FP16 FMA rate in GFLOP/s (`vec4<f16>` chains), where the device has `SHADER_F16`.
    pub fma_f16: Option<Rate>,
    /// Copy bandwidth in GB/s (bytes read + bytes written).
    pub copy: Rate,
    /// The 1x1 convolution benchmark, one per precision measured (in f16, where the device
    /// has cooperative matrices, once without them and once with them).
    pub conv1x1: Vec<Conv1x1Bench>,
    /// The cooperative matrix configurations of the device ([`crate::coop::describe`]).
    pub coop_configs: Vec<String>,
    /// Matrix-product rate on cooperative matrices, 16x16x16 f16 with f32 accumulators, in
    /// GFLOP/s ([`coop_gemm_rate`]), where the device has that configuration.
    pub coop_f32: Option<Rate>,
    /// The same with f16 accumulators.
    pub coop_f16: Option<Rate>,
    /// Why the matrix-product probe failed, where it did (the rest of the report stands).
    pub coop_error: Option<String>,
}

impl ProbeReport {
    /// A conv's throughput as a fraction of the measured FP32 FMA peak.
    pub fn fraction_of_peak(&self, conv: &Conv1x1Bench) -> f64 {
        conv.gflops / self.fma.value.max(f64::MIN_POSITIVE)
    }

    /// A conv's throughput as a fraction of the measured FP16 FMA peak (`None` without one).
    pub fn fraction_of_f16_peak(&self, conv: &Conv1x1Bench) -> Option<f64> {
        self.fma_f16
            .map(|r| conv.gflops / r.value.max(f64::MIN_POSITIVE))
    }
}

shader_params! {
    /// Uniform parameters of `shaders/probe_fma.wgsl`.
    struct GpuFmaParams {
        iterations: u32,
        b: f32,
        c: f32,
    }
}

shader_params! {
    /// Uniform parameters of `shaders/probe_copy.wgsl`.
    struct GpuCopyParams {
        count: u32,
    }
}

/// A probe shader with its parameters declared from `P` in `space` (the kernels' own).
fn probe_source<P: ShaderParams>(body: &str, space: ParamsSpace) -> String {
    format!("{}{body}", P::LAYOUT.wgsl(space))
}

/// The FMA probe computing in f32 or (`f16`) in f16.
fn fma_source(space: ParamsSpace, f16: bool) -> String {
    let head = match f16 {
        true => "enable f16;\nalias V = vec4<f16>;\n",
        false => "alias V = vec4<f32>;\n",
    };
    format!("{head}{}", probe_source::<GpuFmaParams>(FMA_SOURCE, space))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// Splits `groups` into a 2-D grid within the device's per-dimension limit.
fn fold(ctx: &GpuContext, groups: u64) -> Result<[u32; 2], GpuError> {
    let max = u64::from(ctx.limits.max_compute_workgroups_per_dimension);
    let y = groups.div_ceil(max);
    if y > max {
        return Err(GpuError::Unsupported(format!(
            "{groups} work groups exceed the device's grid"
        )));
    }
    Ok([groups.min(max) as u32, y as u32])
}

/// One compute pipeline and its bind group, timed `warmup + runs` times.
struct Probe {
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    groups: [u32; 2],
}

fn pipeline(ctx: &GpuContext, name: &str, source: &str) -> Result<wgpu::ComputePipeline, GpuError> {
    crate::wgsl::validate(name, source, source.starts_with("enable f16;"))?;
    let desc = wgpu::ShaderModuleDescriptor {
        label: Some(name),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    };
    // Without wgpu's loop bounding (a 64-bit counter added to every loop, which cost the FMA
    // probe 8 % of its rate on an H100); `HEIMDALL_LOOP_BOUNDING=1` keeps it, to measure that.
    let module = if std::env::var("HEIMDALL_LOOP_BOUNDING").is_ok_and(|v| v == "1") {
        ctx.device.create_shader_module(desc)
    } else {
        let checks = wgpu::ShaderRuntimeChecks {
            force_loop_bounding: false,
            ..wgpu::ShaderRuntimeChecks::checked()
        };
        // SAFETY: wgpu asks that a module without loop bounding has no infinite loop: the FMA
        // probe's one loop counts a u32 up to a parameter, the copy probe has none. Every other
        // check stays on.
        unsafe { ctx.device.create_shader_module_trusted(desc, checks) }
    };
    Ok(ctx
        .device
        .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(name),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        }))
}

fn bind(
    ctx: &GpuContext,
    pipeline: &wgpu::ComputePipeline,
    buffers: &[&wgpu::Buffer],
) -> wgpu::BindGroup {
    let layout = pipeline.get_bind_group_layout(0);
    let entries: Vec<wgpu::BindGroupEntry> = buffers
        .iter()
        .enumerate()
        .map(|(i, b)| wgpu::BindGroupEntry {
            binding: i as u32,
            resource: b.as_entire_binding(),
        })
        .collect();
    ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("heimdall probe"),
        layout: &layout,
        entries: &entries,
    })
}

impl Probe {
    /// Median time of the dispatch over `runs` runs after `warmup`.
    fn time(
        &self,
        ctx: &GpuContext,
        warmup: usize,
        runs: usize,
    ) -> Result<(Duration, TimingSource), GpuError> {
        let device = &ctx.device;
        let timestamps = ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY);
        let queries = timestamps
            .then(|| crate::profile::timestamp_buffers(device, 2, "heimdall probe timestamps"));
        let period = f64::from(ctx.queue.get_timestamp_period());
        let mut samples = Vec::with_capacity(runs);
        for run in 0..warmup + runs {
            let mut encoder = device.create_command_encoder(&Default::default());
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("heimdall probe"),
                    timestamp_writes: queries.as_ref().map(|(set, _, _)| {
                        wgpu::ComputePassTimestampWrites {
                            query_set: set,
                            beginning_of_pass_write_index: Some(0),
                            end_of_pass_write_index: Some(1),
                        }
                    }),
                });
                pass.set_pipeline(&self.pipeline);
                pass.set_bind_group(0, &self.bind_group, &[]);
                pass.dispatch_workgroups(self.groups[0], self.groups[1], 1);
            }
            if let Some((set, resolve, staging)) = &queries {
                encoder.resolve_query_set(set, 0..2, resolve, 0);
                encoder.copy_buffer_to_buffer(resolve, 0, staging, 0, 16);
            }
            ctx.wait_idle()?;
            let start = Instant::now();
            ctx.queue.submit([encoder.finish()]);
            let t = match &queries {
                Some((_, _, staging)) => {
                    let state = Arc::new(AtomicU8::new(0));
                    let flag = state.clone();
                    staging.map_async(wgpu::MapMode::Read, .., move |r| {
                        flag.store(if r.is_ok() { 1 } else { 2 }, Ordering::SeqCst);
                    });
                    let begin = Instant::now();
                    while state.load(Ordering::SeqCst) == 0 {
                        ctx.wait_idle()?;
                        if begin.elapsed() > Duration::from_secs(60) {
                            return Err(GpuError::Readback("probe timestamps: no result".into()));
                        }
                    }
                    if state.load(Ordering::SeqCst) != 1 {
                        return Err(GpuError::Readback("mapping probe timestamps failed".into()));
                    }
                    let ticks: Vec<u64> = staging
                        .get_mapped_range(..)
                        .chunks_exact(8)
                        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
                        .collect();
                    staging.unmap();
                    Duration::from_nanos((ticks[1].saturating_sub(ticks[0]) as f64 * period) as u64)
                }
                None => {
                    ctx.wait_idle()?;
                    start.elapsed()
                }
            };
            if run >= warmup {
                samples.push(t);
            }
        }
        let source = if timestamps {
            TimingSource::Timestamps
        } else {
            TimingSource::Submissions
        };
        Ok((median(samples), source))
    }
}

/// Runs `f` inside a validation error scope and turns a reported error into a [`GpuError`].
fn scoped<T>(ctx: &GpuContext, f: impl FnOnce() -> Result<T, GpuError>) -> Result<T, GpuError> {
    let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
    let r = f();
    if let Some(e) = pollster::block_on(scope.pop()) {
        return Err(GpuError::Wgpu(e.to_string()));
    }
    r
}

/// The FP32 (or, `f16`, FP16) FMA rate in GFLOP/s (2 flops per FMA). The grid fills the device
/// (512k threads on GPUs, 4k on a CPU rasteriser), the chain length is calibrated so that a run
/// takes about 10 ms, and about 300 ms of warm-up precede the 7 timed runs (median).
pub fn fma_rate(ctx: &GpuContext, f16: bool) -> Result<Rate, GpuError> {
    let groups: u64 = match ctx.info.device_type {
        wgpu::DeviceType::Cpu => 64,
        _ => 8192,
    };
    scoped(ctx, || {
        let pipeline = pipeline(ctx, "probe_fma", &fma_source(ctx.params_space(), f16))?;
        let sink = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("heimdall probe sink"),
            size: 16,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        let params = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("heimdall probe params"),
            size: std::mem::size_of::<GpuFmaParams>().next_multiple_of(16) as u64,
            usage: ctx.params_space().usage(),
            mapped_at_creation: false,
        });
        let probe = Probe {
            bind_group: bind(ctx, &pipeline, &[&params, &sink]),
            pipeline,
            groups: fold(ctx, groups)?,
        };
        let mut iterations: u32 = 16;
        loop {
            let p = GpuFmaParams {
                iterations,
                b: 0.999_9,
                c: 1e-4,
            };
            ctx.queue.write_buffer(&params, 0, &p.to_bytes());
            let (t, _) = probe.time(ctx, 1, 3)?;
            let secs = t.as_secs_f64();
            // Calibrate: at least 5 ms per run, or the longest chain we allow.
            if secs >= 5e-3 || iterations >= 1 << 20 {
                // Then about 300 ms of warm-up, so that the clocks have ramped up (an idle GPU
                // starts far below its boost clock), and the median of 7 runs.
                let warmup = (0.3 / secs.max(1e-3)).ceil() as usize;
                let (t, source) = probe.time(ctx, warmup, 7)?;
                let secs = t.as_secs_f64();
                let flops =
                    2.0 * (groups * PROBE_WG * FMAS_PER_TURN) as f64 * f64::from(iterations);
                return Ok(Rate {
                    value: flops / secs.max(1e-9) / 1e9,
                    time: t,
                    source,
                });
            }
            let scale = (10e-3 / secs.max(1e-6)).clamp(2.0, 64.0);
            iterations = ((f64::from(iterations) * scale) as u32).min(1 << 20);
        }
    })
}

/// A compute probe `name` (entry `main`, binding 0 the parameters from `params(iterations)`,
/// then `buffers` as storage buffers) over `groups` work groups: the iteration count is
/// calibrated so that a run takes about 10 ms, then about 300 ms of warm-up precede the 7 timed
/// runs (median); the rate is `flops_per_iteration * iterations` over the time, in GFLOP/s.
pub(crate) fn calibrated(
    ctx: &GpuContext,
    name: &str,
    source: &str,
    buffers: &[&[u8]],
    groups: u64,
    params: impl Fn(u32) -> Vec<u8>,
    flops_per_iteration: f64,
) -> Result<Rate, GpuError> {
    scoped(ctx, || {
        let pipeline = pipeline(ctx, name, source)?;
        let params_buf = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("heimdall probe params"),
            size: (params(1).len() as u64).next_multiple_of(16),
            usage: ctx.params_space().usage(),
            mapped_at_creation: false,
        });
        let storage: Vec<wgpu::Buffer> = buffers
            .iter()
            .map(|b| {
                ctx.device
                    .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some("heimdall probe buffer"),
                        contents: b,
                        usage: wgpu::BufferUsages::STORAGE,
                    })
            })
            .collect();
        let mut bound = vec![&params_buf];
        bound.extend(storage.iter());
        let probe = Probe {
            bind_group: bind(ctx, &pipeline, &bound),
            pipeline,
            groups: fold(ctx, groups)?,
        };
        let mut iterations: u32 = 16;
        loop {
            ctx.queue.write_buffer(&params_buf, 0, &params(iterations));
            let (t, _) = probe.time(ctx, 1, 3)?;
            let secs = t.as_secs_f64();
            if secs >= 5e-3 || iterations >= 1 << 20 {
                let warmup = (0.3 / secs.max(1e-3)).ceil() as usize;
                let (t, source) = probe.time(ctx, warmup, 7)?;
                let flops = flops_per_iteration * f64::from(iterations);
                return Ok(Rate {
                    value: flops / t.as_secs_f64().max(1e-9) / 1e9,
                    time: t,
                    source,
                });
            }
            let scale = (10e-3 / secs.max(1e-6)).clamp(2.0, 64.0);
            iterations = ((f64::from(iterations) * scale) as u32).min(1 << 20);
        }
    })
}

/// The copy bandwidth in GB/s: read and write of a 64 MiB buffer (or the largest the device
/// binds), counting both.
pub fn copy_bandwidth(ctx: &GpuContext) -> Result<Rate, GpuError> {
    let max = ctx
        .limits
        .max_storage_buffer_binding_size
        .min(ctx.limits.max_buffer_size);
    let bytes = (64u64 << 20).min(max) / 16 * 16;
    let count = bytes / 16;
    scoped(ctx, || {
        let pipeline = pipeline(
            ctx,
            "probe_copy",
            &probe_source::<GpuCopyParams>(COPY_SOURCE, ctx.params_space()),
        )?;
        let make = |label| {
            ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes,
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            })
        };
        let (src, dst) = (make("heimdall probe src"), make("heimdall probe dst"));
        let p = GpuCopyParams {
            count: u32::try_from(count)
                .map_err(|_| GpuError::Unsupported("probe buffer too large".into()))?,
        };
        let params = ctx
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("heimdall probe params"),
                contents: &p.to_bytes(),
                usage: ctx.params_space().usage(),
            });
        let probe = Probe {
            bind_group: bind(ctx, &pipeline, &[&params, &src, &dst]),
            pipeline,
            groups: fold(ctx, count.div_ceil(PROBE_WG))?,
        };
        // Warm-up runs bring the clocks up (a copy takes well under a millisecond on a GPU).
        let warmup = match ctx.info.device_type {
            wgpu::DeviceType::Cpu => 2,
            _ => 200,
        };
        let (t, source) = probe.time(ctx, warmup, 21)?;
        Ok(Rate {
            value: 2.0 * bytes as f64 / t.as_secs_f64().max(1e-9) / 1e9,
            time: t,
            source,
        })
    })
}

shader_params! {
    /// Uniform parameters of the cooperative matrix-product probe ([`coop_gemm_rate`]).
    struct GpuCoopProbeParams {
        iterations: u32,
    }
}

/// Independent accumulators per subgroup of the probe.
const PROBE_CHAINS: u64 = 8;
/// Subgroups per work group of the probe.
const PROBE_SUBGROUPS: u64 = 4;

/// The probe's source: each subgroup loads one A and one B 16x16 f16 fragment and runs
/// `PROBE_CHAINS` independent chains `c = a * b + c` with accumulators of `acc` (`f32` or
/// `f16`), then stores them into a sink.
pub fn coop_probe_source(space: ParamsSpace, acc: &str) -> String {
    let mut s = format!(
        "enable f16;\n{}\n{}\
         @group(0) @binding(1) var<storage, read> src: array<f16>;\n\
         @group(0) @binding(2) var<storage, read_write> sink: array<{acc}>;\n\
         @compute @workgroup_size({wg})\n\
         fn main(@builtin(local_invocation_index) lid: u32) {{\n\
         \x20   let a = coopLoadT<coop_mat16x16<f16, A>>(&src[0], 16u);\n\
         \x20   let b = coopLoadT<coop_mat16x16<f16, B>>(&src[256], 16u);\n",
        crate::wgsl::COOP_ENABLE,
        GpuCoopProbeParams::LAYOUT.wgsl(space),
        wg = 32 * PROBE_SUBGROUPS
    );
    for c in 0..PROBE_CHAINS {
        s.push_str(&format!(
            "    var c{c} = coopLoadT<coop_mat16x16<{acc}, C>>(&sink[{}], 16u);\n",
            256 * c
        ));
    }
    s.push_str("    for (var i = 0u; i < params.iterations; i++) {\n");
    for c in 0..PROBE_CHAINS {
        s.push_str(&format!("        c{c} = coopMultiplyAdd(a, b, c{c});\n"));
    }
    // Every subgroup stores its chains over the same sink (a race of no consequence), so that
    // the products cannot be removed.
    s.push_str("    }\n");
    for c in 0..PROBE_CHAINS {
        s.push_str(&format!("    coopStoreT(c{c}, &sink[{}], 16u);\n", 256 * c));
    }
    s.push_str("}\n");
    s
}

/// The matrix-product rate on cooperative matrices in GFLOP/s (2 flops per multiply-add of
/// the 16x16x16 products), with f16 A and B and accumulators of `acc` ([`Precision::F32`] or
/// [`Precision::F16`]), or `None` where the device lacks that configuration. As the FMA probe:
/// 8192 work groups of 4 subgroups, chains calibrated to about 10 ms, 300 ms of warm-up, the
/// median of 7 runs.
pub fn coop_gemm_rate(ctx: &GpuContext, acc: Precision) -> Result<Option<Rate>, GpuError> {
    let (ty, cr) = match acc {
        Precision::F32 => ("f32", CooperativeScalarType::F32),
        _ => ("f16", CooperativeScalarType::F16),
    };
    let has = ctx.coop_matrix.iter().any(|c| {
        (c.m_size, c.n_size, c.k_size) == (16, 16, 16)
            && c.ab_type == CooperativeScalarType::F16
            && c.cr_type == cr
    });
    if !has || !ctx.has_f16() {
        return Ok(None);
    }
    let groups: u64 = 8192;
    let src_values: Vec<f32> = (0..512).map(|i| ((i % 7) as f32 - 3.0) * 1e-3).collect();
    let space = ctx.params_space();
    calibrated(
        ctx,
        "probe_coop",
        &coop_probe_source(space, ty),
        &[
            &Precision::F16.encode(&src_values),
            &vec![0u8; (PROBE_CHAINS * 256) as usize * acc.bytes_per_value()],
        ],
        groups,
        |iterations| GpuCoopProbeParams { iterations }.to_bytes(),
        (groups * PROBE_SUBGROUPS * PROBE_CHAINS) as f64 * 2.0 * 16.0 * 16.0 * 16.0,
    )
    .map(Some)
}

/// A graph of one CONV_2D 1x1 `[1, h, w, ci] -> [1, h, w, co]` with bias, followed by a ReLU
/// and two copies (`Reshape` to the same shape) producing the output, so that the conv reads,
/// stores and computes in the model's precision (ops producing graph outputs, and the inputs of
/// those ops, are f32; the ReLU, which the conv may take as its epilogue, is two ops away).
pub fn conv1x1_graph([h, w, ci, co]: [usize; 4]) -> Graph {
    let values = |n: usize, seed: u32| -> Vec<f32> {
        (0..n)
            .map(|i| {
                ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8) as f32
                    / (1u32 << 24) as f32
                    - 0.5
            })
            .map(|v| v * 0.1)
            .collect()
    };
    let tensor = |name: &str, shape: Vec<usize>, constant: Option<Vec<f32>>| TensorInfo {
        name: name.into(),
        shape,
        dtype: DType::F32,
        constant: constant.map(heimdall_ir::Constant::dense),
    };
    let tensors = vec![
        tensor("x", vec![1, h, w, ci], None),
        tensor("w", vec![co, 1, 1, ci], Some(values(co * ci, 1))),
        tensor("b", vec![co], Some(values(co, 2))),
        tensor("conv", vec![1, h, w, co], None),
        tensor("relu", vec![1, h, w, co], None),
        tensor("copy", vec![1, h, w, co], None),
        tensor("y", vec![1, h, w, co], None),
    ];
    let conv = Op::new(
        OpKind::Conv2d(ConvAttrs {
            stride: [1, 1],
            dilation: [1, 1],
            pad: Default::default(),
        }),
        vec![TensorId(0), TensorId(1), TensorId(2)],
        vec![TensorId(3)],
    );
    let relu = Op::new(
        OpKind::Unary(UnaryKind::Relu),
        vec![TensorId(3)],
        vec![TensorId(4)],
    );
    let copy = |from: u32| {
        Op::new(
            OpKind::Reshape,
            vec![TensorId(from)],
            vec![TensorId(from + 1)],
        )
    };
    Graph {
        name: format!("conv1x1_{h}x{w}x{ci}_{co}"),
        tensors,
        ops: vec![conv, relu, copy(4), copy(5)],
        inputs: vec![TensorId(0)],
        outputs: vec![TensorId(6)],
    }
}

/// Times the 1x1 convolution `shape` = `[H, W, C_in, C_out]` compiled through [`GpuModel`] in
/// `precision` (median GPU time of its step over `runs` runs after as many warm-up runs).
pub fn conv1x1(
    ctx: &GpuContext,
    shape: [usize; 4],
    precision: Precision,
    runs: usize,
) -> Result<Conv1x1Bench, GpuError> {
    conv1x1_tuned(ctx, shape, precision, runs, ctx.tuning())
}

/// [`conv1x1`] under `tuning` (the device's with the cooperative-matrix kernel off, say).
pub fn conv1x1_tuned(
    ctx: &GpuContext,
    shape: [usize; 4],
    precision: Precision,
    runs: usize,
    tuning: crate::context::Tuning,
) -> Result<Conv1x1Bench, GpuError> {
    let graph = conv1x1_graph(shape);
    let model = GpuModel::compile(ctx, &graph, GpuOptions::new(precision).with_tuning(tuning))?;
    let [h, w, ci, co] = shape;
    let input: Vec<f32> = (0..h * w * ci)
        .map(|i| ((i % 17) as f32 - 8.0) / 8.0)
        .collect();
    let profile = model.profile(&[&input], runs.max(2), runs.max(1))?;
    let time = profile.steps[0];
    let flops = 2.0 * (h * w * ci * co) as f64;
    let arith = crate::arith::Arith::choose(tuning.f16_arithmetic, [precision; 3], ci, 4);
    let blocking = crate::ops::conv::conv1x1_kernel_for(
        &tuning,
        [precision; 2],
        h * w,
        ci.div_ceil(4),
        co.div_ceil(4),
        arith,
    )
    .to_string();
    Ok(Conv1x1Bench {
        shape,
        precision: model.report().precision,
        time,
        gflops: flops / time.as_secs_f64().max(1e-9) / 1e9,
        source: profile.source,
        blocking,
        f16_arith: !model.report().f16_arith_ops.is_empty(),
    })
}

/// The large layer of the efficiency target.
pub const CONV1X1_SHAPE: [usize; 4] = [128, 128, 256, 256];

/// `HEIMDALL_PROBE_SHAPE=H,W,CI,CO`: the 1x1 layer the probe measures instead of
/// [`CONV1X1_SHAPE`] (to separate a kernel's fixed costs from its inner loop).
fn probe_shape() -> Option<[usize; 4]> {
    let v = std::env::var("HEIMDALL_PROBE_SHAPE").ok()?;
    let n: Vec<usize> = v
        .split(',')
        .map(|x| x.trim().parse().ok())
        .collect::<Option<_>>()?;
    let shape: [usize; 4] = n.try_into().ok()?;
    shape.iter().all(|&d| d > 0).then_some(shape)
}

/// Measures the FMA rate, the copy bandwidth and the 1x1 convolution [`CONV1X1_SHAPE`] (or
/// `HEIMDALL_PROBE_SHAPE`) in each of `precisions`.
pub fn run(ctx: &GpuContext, precisions: &[Precision]) -> Result<ProbeReport, GpuError> {
    let fma = fma_rate(ctx, false)?;
    let fma_f16 = match ctx.has_f16() {
        true => Some(fma_rate(ctx, true)?),
        false => None,
    };
    let copy = copy_bandwidth(ctx)?;
    let runs = match ctx.info.device_type {
        wgpu::DeviceType::Cpu => 3,
        _ => 20,
    };
    let shape = probe_shape().unwrap_or(CONV1X1_SHAPE);
    let mut coop_error = None;
    let mut coop = |acc| {
        coop_gemm_rate(ctx, acc).unwrap_or_else(|e| {
            coop_error = Some(e.to_string());
            None
        })
    };
    let (coop_f32, coop_f16) = (coop(Precision::F32), coop(Precision::F16));
    let tuning = ctx.tuning();
    let mut conv1x1 = Vec::new();
    for &p in precisions {
        // f16 on cooperative matrices: also without them (f16 storage, the other kernels).
        if tuning.conv_coop.is_some() && p != Precision::F32 {
            let off = crate::context::Tuning {
                conv_coop: None,
                ..tuning
            };
            conv1x1.push(conv1x1_tuned(ctx, shape, p, runs, off)?);
        }
        conv1x1.push(conv1x1_tuned(ctx, shape, p, runs, tuning)?);
    }
    Ok(ProbeReport {
        device: ctx.describe(),
        fma,
        fma_f16,
        copy,
        conv1x1,
        coop_configs: ctx.coop_matrix.iter().map(crate::coop::describe).collect(),
        coop_f32,
        coop_f16,
        coop_error,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn probe_shaders_validate_with_naga() {
        use super::{GpuCopyParams, GpuFmaParams, ParamsSpace, ShaderParams, probe_source};
        for space in [ParamsSpace::Uniform, ParamsSpace::Storage] {
            for f16 in [false, true] {
                let fma = super::fma_source(space, f16);
                crate::wgsl::validate("probe_fma", &fma, f16).unwrap();
                crate::shader_tests::assert_layout("probe_fma", &fma, &GpuFmaParams::LAYOUT);
            }
            let copy = probe_source::<GpuCopyParams>(super::COPY_SOURCE, space);
            crate::wgsl::validate("probe_copy", &copy, false).unwrap();
            crate::shader_tests::assert_layout("probe_copy", &copy, &GpuCopyParams::LAYOUT);
        }
    }

    #[test]
    fn coop_probe_shader_validates_with_naga() {
        use super::ParamsSpace;
        for space in [ParamsSpace::Uniform, ParamsSpace::Storage] {
            for acc in ["f32", "f16"] {
                let src = super::coop_probe_source(space, acc);
                crate::wgsl::validate("probe_coop", &src, true).unwrap();
            }
        }
    }

    #[test]
    fn conv1x1_graph_is_valid() {
        let g = super::conv1x1_graph([5, 3, 7, 9]);
        g.validate().unwrap();
        assert_eq!(g.ops.len(), 4);
    }
}
