//! Graph inputs and outputs in their dense form on the GPU: the host uploads an input as it
//! holds it (NHWC `f32`, one copy into wgpu's staging memory) and `shaders/pack_dense.wgsl`
//! converts it to the input's PHWC4 slot in its storage precision; an output is converted back by
//! `shaders/unpack_dense.wgsl` into a dense `f32` buffer that the readback copies and maps as
//! it is. The host then neither transposes nor converts precision (a strided transposition of
//! an NCHW image on the host cost up to 1 ms per direction on the H100 machine's CPU), and the
//! readback moves no padding lanes.
//!
//! A tensor whose PHWC4 storage already is its dense `f32` form (`f32` storage and 4 channels,
//! or a single pixel with a multiple of 4 channels) needs no kernel: it is written and read in
//! place.

use std::sync::atomic::{AtomicBool, Ordering};

use bytemuck::{Pod, Zeroable};

use crate::context::GpuContext;
use crate::error::GpuError;
use crate::layout::Phwc4;
use crate::precision::Precision;
use crate::readback::IoTensor;
use crate::wgsl::{BindingDecl, KernelSource};

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct GpuDenseParams {
    h: u32,
    w: u32,
    c: u32,
    vec4s: u32,
}

/// The kernel packing a dense input into a slot of `precision`.
pub fn pack_source(precision: Precision) -> KernelSource {
    KernelSource::new("pack_dense", vec![BindingDecl::write("y", precision)])
}

/// The kernel unpacking a slot of `precision` into a dense output.
pub fn unpack_source(precision: Precision) -> KernelSource {
    KernelSource::new("unpack_dense", vec![BindingDecl::read("x", precision)])
}

/// Whether a tensor of `geom` stored in `precision` is already dense NHWC `f32` in its slot.
pub fn is_dense(geom: &Phwc4, precision: Precision) -> bool {
    precision == Precision::F32 && geom.c.is_multiple_of(4) && (geom.c == 4 || geom.h * geom.w == 1)
}

/// Bytes of a tensor's dense `f32` form.
pub fn dense_bytes(geom: &Phwc4) -> u64 {
    (geom.values() * 4) as u64
}

/// One conversion kernel bound to one tensor: its dense buffer and its slot.
#[derive(Debug)]
pub(crate) struct DenseTensor {
    /// The dense `f32` buffer (`STORAGE | COPY_DST` for inputs, `STORAGE | COPY_SRC` for
    /// outputs).
    pub buffer: wgpu::Buffer,
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    groups: [u32; 2],
    _params: wgpu::Buffer,
}

/// The pipeline of a packing or unpacking kernel `k` (composed and validated first).
fn conversion_pipeline(
    ctx: &GpuContext,
    cache: Option<&wgpu::PipelineCache>,
    k: &KernelSource,
) -> Result<wgpu::ComputePipeline, GpuError> {
    let device = &ctx.device;
    let src = k.compose(ctx.params_space())?;
    crate::wgsl::validate(k.name, &src, k.uses_f16())?;
    let label = Some(k.name);
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label,
        source: wgpu::ShaderSource::Wgsl(src.as_str().into()),
    });
    Ok(
        device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label,
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache,
        }),
    )
}

impl DenseTensor {
    /// The conversion of `tensor` (in `slot`): packing when `input`, else unpacking. `None`
    /// when the tensor needs none ([`is_dense`]) or holds no values.
    pub fn new(
        ctx: &GpuContext,
        cache: Option<&wgpu::PipelineCache>,
        tensor: &IoTensor,
        slot: &wgpu::Buffer,
        input: bool,
    ) -> Result<Option<Self>, GpuError> {
        let g = tensor.geom;
        if is_dense(&g, tensor.precision) || dense_bytes(&g) == 0 {
            return Ok(None);
        }
        let device = &ctx.device;
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let k = if input {
            pack_source(tensor.precision)
        } else {
            unpack_source(tensor.precision)
        };
        let label = Some(k.name);
        let pipeline = conversion_pipeline(ctx, cache, &k)?;
        let vec4s = g.vec4s();
        let params = GpuDenseParams {
            h: g.h as u32,
            w: g.w as u32,
            c: g.c as u32,
            vec4s: vec4s as u32,
        };
        let params_buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label,
            size: std::mem::size_of::<GpuDenseParams>() as u64,
            usage: ctx.params_space().usage(),
            mapped_at_creation: false,
        });
        ctx.queue
            .write_buffer(&params_buffer, 0, bytemuck::bytes_of(&params));
        let usage = wgpu::BufferUsages::STORAGE
            | if input {
                wgpu::BufferUsages::COPY_DST
            } else {
                wgpu::BufferUsages::COPY_SRC
            };
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(if input {
                "heimdall dense input"
            } else {
                "heimdall dense output"
            }),
            size: dense_bytes(&g),
            usage,
            mapped_at_creation: false,
        });
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: params_buffer.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: slot,
                        offset: 0,
                        size: wgpu::BufferSize::new(tensor.bytes()),
                    }),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: buffer.as_entire_binding(),
                },
            ],
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Wgpu(e.to_string()));
        }
        let groups = crate::dispatch::groups_for(vec4s);
        let max = ctx.limits.max_compute_workgroups_per_dimension;
        let groups = if groups <= max {
            [groups, 1]
        } else {
            [max, groups.div_ceil(max)]
        };
        Ok(Some(DenseTensor {
            buffer,
            pipeline,
            bind_group,
            groups,
            _params: params_buffer,
        }))
    }

    /// [`DenseTensor::new`] for each of `tensors` (in `slots`).
    fn all(
        ctx: &GpuContext,
        cache: Option<&wgpu::PipelineCache>,
        tensors: &[IoTensor],
        slots: &[wgpu::Buffer],
        input: bool,
    ) -> Result<Vec<Option<Self>>, GpuError> {
        tensors
            .iter()
            .map(|t| DenseTensor::new(ctx, cache, t, &slots[t.slot], input))
            .collect()
    }

    fn record(&self, pass: &mut wgpu::ComputePass<'_>) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.dispatch_workgroups(self.groups[0], self.groups[1], 1);
    }
}

/// The dense forms of a model's inputs, and which of them were written since they were last
/// packed.
#[derive(Debug)]
pub(crate) struct DenseInputs {
    tensors: Vec<Option<DenseTensor>>,
    pending: Vec<AtomicBool>,
}

impl DenseInputs {
    /// The packing kernels of `inputs` (in `slots`).
    pub fn new(
        ctx: &GpuContext,
        cache: Option<&wgpu::PipelineCache>,
        inputs: &[IoTensor],
        slots: &[wgpu::Buffer],
    ) -> Result<Self, GpuError> {
        let tensors = DenseTensor::all(ctx, cache, inputs, slots, true)?;
        let pending = inputs.iter().map(|_| AtomicBool::new(false)).collect();
        Ok(DenseInputs { tensors, pending })
    }

    /// The dense buffer of input `index`, if it has one: write the values there, then
    /// [`DenseInputs::mark_written`].
    pub fn buffer(&self, index: usize) -> Option<&wgpu::Buffer> {
        self.tensors.get(index)?.as_ref().map(|t| &t.buffer)
    }

    /// Input `index` was written to its dense buffer: the next [`DenseInputs::encode_pending`]
    /// packs it.
    pub fn mark_written(&self, index: usize) {
        if let Some(p) = self.pending.get(index) {
            p.store(true, Ordering::SeqCst);
        }
    }

    /// Records the packing of every input written since it was last packed (one compute pass;
    /// nothing when none was). Encode it before anything that reads the inputs' slots.
    pub fn encode_pending(&self, encoder: &mut wgpu::CommandEncoder) {
        let due: Vec<&DenseTensor> = self
            .tensors
            .iter()
            .zip(&self.pending)
            .filter(|(_, p)| p.swap(false, Ordering::SeqCst))
            .filter_map(|(t, _)| t.as_ref())
            .collect();
        if due.is_empty() {
            return;
        }
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("heimdall pack inputs"),
            timestamp_writes: None,
        });
        for t in due {
            t.record(&mut pass);
        }
    }
}

/// The unpacking kernels of a model's outputs.
#[derive(Debug)]
pub(crate) struct DenseOutputs {
    tensors: Vec<Option<DenseTensor>>,
}

impl DenseOutputs {
    /// The unpacking kernels of `outputs` (in `slots`).
    pub fn new(
        ctx: &GpuContext,
        cache: Option<&wgpu::PipelineCache>,
        outputs: &[IoTensor],
        slots: &[wgpu::Buffer],
    ) -> Result<Self, GpuError> {
        let tensors = DenseTensor::all(ctx, cache, outputs, slots, false)?;
        Ok(DenseOutputs { tensors })
    }

    /// Whether output `index` is read back from a dense buffer of its own.
    pub fn has(&self, index: usize) -> bool {
        matches!(self.tensors.get(index), Some(Some(_)))
    }

    /// Where output `index` is copied from: its dense buffer, or its slot in `slots`, with the
    /// byte offset there.
    pub fn source<'a>(
        &'a self,
        index: usize,
        output: &IoTensor,
        slots: &'a [wgpu::Buffer],
    ) -> (&'a wgpu::Buffer, u64) {
        match self.tensors.get(index) {
            Some(Some(t)) => (&t.buffer, 0),
            _ => (&slots[output.slot], output.offset),
        }
    }

    /// Records the unpacking of every output that needs it (one compute pass).
    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder) {
        if self.tensors.iter().all(Option::is_none) {
            return;
        }
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("heimdall unpack outputs"),
            timestamp_writes: None,
        });
        for t in self.tensors.iter().flatten() {
            t.record(&mut pass);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_f32_tensors_laid_out_like_nhwc_skip_the_kernels() {
        let g = |s: &[usize]| Phwc4::of(s).unwrap();
        assert!(is_dense(&g(&[1, 5, 7, 4]), Precision::F32));
        assert!(is_dense(&g(&[1, 1, 1, 64]), Precision::F32));
        assert!(is_dense(&g(&[1, 64]), Precision::F32));
        assert!(!is_dense(&g(&[1, 5, 7, 4]), Precision::F16));
        assert!(!is_dense(&g(&[1, 5, 7, 3]), Precision::F32));
        assert!(!is_dense(&g(&[1, 5, 7, 8]), Precision::F32));
        assert!(!is_dense(&g(&[1, 1, 1, 6]), Precision::F32));
        assert_eq!(dense_bytes(&g(&[1, 5, 7, 3])), 5 * 7 * 3 * 4);
    }
}
