//! Camera frame to model input: one compute dispatch (`shaders/preprocess.wgsl`) that reads an
//! RGBA8 texture, applies an affine crop (crop, resize, flip, rotation: MediaPipe's rotated
//! ROIs), resamples bilinearly with clamp-to-edge or a constant border, normalises per channel
//! and writes the model's PHWC4 input slot in its storage precision, so the frame never leaves
//! the GPU. The crop and the normalisation are `heimdall_image`'s [`Crop`] and
//! [`Normalization`]; `heimdall_image::resample` is the same computation on the host
//! (the CPU reference and fallback), which the tests hold this kernel to.
//!
//! ```no_run
//! use heimdall_gpu::preprocess::Preprocessor;
//! use heimdall_image::{Crop, Normalization};
//! # fn f(model: &heimdall_gpu::GpuModel, frame: &wgpu::TextureView) -> Result<(), heimdall_gpu::GpuError> {
//! let pre = Preprocessor::new(model, 0, Normalization::MINUS_ONE_TO_ONE)?;
//! let binding = pre.bind(frame)?; // once per texture: keep it while the texture lives
//! let ctx = model.context();
//! // Every frame: the ROI, then the preprocessing and the model's steps in one encoder.
//! pre.set_crop(&ctx.queue, &Crop::FULL)?;
//! let mut encoder = ctx.device.create_command_encoder(&Default::default());
//! pre.encode(&mut encoder, &binding);
//! model.encode(&mut encoder, 0..model.num_steps())?;
//! ctx.queue.submit([encoder.finish()]);
//! # Ok(()) }
//! ```

use bytemuck::{Pod, Zeroable};
use heimdall_image::{Border, Crop, Normalization};

use crate::context::GpuContext;
use crate::error::GpuError;
use crate::layout::Phwc4;
use crate::model::{GpuModel, InputTarget};
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, KernelSource};

fn check(crop: &Crop, norm: &Normalization) -> Result<(), GpuError> {
    if crop.is_finite() && norm.is_finite() {
        Ok(())
    } else {
        Err(GpuError::Unsupported(format!(
            "the crop {crop:?} or the normalisation {norm:?} is not finite"
        )))
    }
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct GpuPreprocessParams {
    m0: [f32; 4],
    m1: [f32; 4],
    scale: [f32; 4],
    offset: [f32; 4],
    border: [f32; 4],
    out_w: u32,
    out_h: u32,
    out_c: u32,
    border_mode: u32,
}

/// Source of the preprocessing kernel writing `precision`, re-encoding sRGB or not.
pub fn source(precision: Precision, srgb: bool) -> KernelSource {
    KernelSource {
        consts: vec![("SRGB", u32::from(srgb))],
        ..KernelSource::new("preprocess", vec![BindingDecl::write("y", precision)])
    }
}

/// The texture formats [`Preprocessor::bind`] accepts, and whether the view decodes sRGB.
fn srgb_of(format: wgpu::TextureFormat) -> Result<bool, GpuError> {
    use wgpu::TextureFormat as F;
    match format {
        F::Rgba8Unorm | F::Bgra8Unorm => Ok(false),
        F::Rgba8UnormSrgb | F::Bgra8UnormSrgb => Ok(true),
        other => Err(GpuError::Unsupported(format!(
            "preprocessing reads Rgba8Unorm(Srgb) or Bgra8Unorm(Srgb) textures, not {other:?}"
        ))),
    }
}

/// A bind group of one source texture for a [`Preprocessor`]: create it once per texture (it
/// keeps the view alive) and reuse it every frame.
#[derive(Debug)]
pub struct PreprocessBinding {
    bind_group: wgpu::BindGroup,
    // The pipeline and grid of the Preprocessor that made it: the bind group holds that
    // Preprocessor's uniform and target, so the binding always runs as its own (a binding
    // passed to another Preprocessor's `encode` cannot mismatch layouts or grids).
    pipeline: wgpu::ComputePipeline,
    groups: [u32; 2],
}

/// The preprocessing of one input of one model: its pipelines (for plain and sRGB views), its
/// uniform (the current crop and the normalisation) and its target, the input's slot.
///
/// The uniform is written with `queue.write_buffer`, which takes effect before the next
/// submission: one crop per submission per `Preprocessor` (make one per ROI to preprocess
/// several ROIs in one submission).
#[derive(Debug)]
pub struct Preprocessor {
    device: wgpu::Device,
    pipelines: [wgpu::ComputePipeline; 2],
    uniform: wgpu::Buffer,
    target: wgpu::Buffer,
    target_bytes: u64,
    out: [u32; 3],
    norm: Normalization,
}

impl Preprocessor {
    /// The preprocessing of input `input` of `model` (shape `[1, H, W, C]` with `C ≤ 4`; output
    /// channel `c` is the texture's channel `c` in RGBA order), with normalisation `norm`, and
    /// the full-frame crop until [`Preprocessor::set_crop`] is called.
    pub fn new(model: &GpuModel, input: usize, norm: Normalization) -> Result<Self, GpuError> {
        let target = model.input_target(input)?;
        Self::with_target(model.context(), target, model.pipeline_cache(), norm, input)
    }

    /// The preprocessing into `target` (an input slot, or a buffer of its own), its pipelines
    /// created through `cache`; `input` names the target in messages.
    fn with_target(
        ctx: &GpuContext,
        target: InputTarget,
        cache: Option<&wgpu::PipelineCache>,
        norm: Normalization,
        input: usize,
    ) -> Result<Self, GpuError> {
        check(&Crop::FULL, &norm)?;
        let g = target.geom;
        if g.c == 0 || g.c > 4 {
            return Err(GpuError::Unsupported(format!(
                "input {input} has {} channels: preprocessing writes 1 to 4 (from RGBA)",
                g.c
            )));
        }
        let device = &ctx.device;
        let max_groups = ctx.limits.max_compute_workgroups_per_dimension as usize;
        if g.w.div_ceil(8) > max_groups || g.h.div_ceil(8) > max_groups {
            return Err(GpuError::Unsupported(format!(
                "input {input} of {}x{} pixels exceeds the dispatch limit",
                g.h, g.w
            )));
        }
        let out = [g.w as u32, g.h as u32, g.c as u32];
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let make = |srgb: bool| -> Result<wgpu::ComputePipeline, GpuError> {
            let k = source(target.precision, srgb);
            let src = k.compose(ctx.params_space())?;
            crate::wgsl::validate(k.name, &src, k.uses_f16())?;
            let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("heimdall preprocess"),
                source: wgpu::ShaderSource::Wgsl(src.as_str().into()),
            });
            Ok(
                device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some("heimdall preprocess"),
                    layout: None,
                    module: &module,
                    entry_point: Some("main"),
                    compilation_options: Default::default(),
                    cache,
                }),
            )
        };
        let pipelines = (|| Ok::<_, GpuError>([make(false)?, make(true)?]))();
        let uniform = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("heimdall preprocess params"),
            size: std::mem::size_of::<GpuPreprocessParams>() as u64,
            usage: ctx.params_space().usage(),
            mapped_at_creation: false,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Wgpu(e.to_string()));
        }
        let p = Preprocessor {
            device: device.clone(),
            pipelines: pipelines?,
            uniform,
            target: target.buffer,
            target_bytes: target.bytes,
            out,
            norm,
        };
        p.set_crop(&ctx.queue, &Crop::FULL)?;
        Ok(p)
    }

    /// The input's shape `[H, W, C]`.
    pub fn output_shape(&self) -> [usize; 3] {
        [
            self.out[1] as usize,
            self.out[0] as usize,
            self.out[2] as usize,
        ]
    }

    /// A bind group reading `view`, whose format is its texture's (use
    /// [`Preprocessor::bind_as`] for a view of another format).
    pub fn bind(&self, view: &wgpu::TextureView) -> Result<PreprocessBinding, GpuError> {
        self.bind_as(view, view.texture().format())
    }

    /// A bind group reading `view` of format `format` (`Rgba8Unorm`, `Rgba8UnormSrgb`,
    /// `Bgra8Unorm` or `Bgra8UnormSrgb`; an sRGB view's decoding is undone in the shader, so
    /// the model sees the stored bytes / 255 either way). The texture needs
    /// `TEXTURE_BINDING` usage.
    pub fn bind_as(
        &self,
        view: &wgpu::TextureView,
        format: wgpu::TextureFormat,
    ) -> Result<PreprocessBinding, GpuError> {
        let srgb = srgb_of(format)?;
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let layout = self.pipelines[usize::from(srgb)].get_bind_group_layout(0);
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("heimdall preprocess"),
            layout: &layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: self.uniform.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: &self.target,
                        offset: 0,
                        size: wgpu::BufferSize::new(self.target_bytes),
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
        Ok(PreprocessBinding {
            bind_group,
            pipeline: self.pipelines[usize::from(srgb)].clone(),
            groups: [self.out[0].div_ceil(8), self.out[1].div_ceil(8)],
        })
    }

    /// Sets the crop of the next submission (a `queue.write_buffer` of 96 bytes); refuses
    /// non-finite values.
    pub fn set_crop(&self, queue: &wgpu::Queue, crop: &Crop) -> Result<(), GpuError> {
        check(crop, &self.norm)?;
        let m = crop.transform.to_rows();
        let (border_mode, border) = match crop.border {
            Border::Clamp => (0, [0.0; 4]),
            Border::Constant(v) => (1, v),
        };
        let p = GpuPreprocessParams {
            m0: [m[0], m[1], m[2], 0.0],
            m1: [m[3], m[4], m[5], 0.0],
            scale: self.norm.scale,
            offset: self.norm.offset,
            border,
            out_w: self.out[0],
            out_h: self.out[1],
            out_c: self.out[2],
            border_mode,
        };
        queue.write_buffer(&self.uniform, 0, bytemuck::bytes_of(&p));
        Ok(())
    }

    /// Records the preprocessing (one compute pass, one dispatch) into `encoder`; encode it
    /// before the model's first step in the same or an earlier submission. Like
    /// [`GpuModel::set_input`], it overwrites the input's slot, which liveness planning may share
    /// with intermediates of later steps: encode it only once every range of the model's previous
    /// run has been encoded. A binding always runs the preprocessing of the `Preprocessor` that
    /// created it (its uniform, its target).
    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder, binding: &PreprocessBinding) {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("heimdall preprocess"),
            timestamp_writes: None,
        });
        pass.set_pipeline(&binding.pipeline);
        pass.set_bind_group(0, &binding.bind_group, &[]);
        pass.dispatch_workgroups(binding.groups[0], binding.groups[1], 1);
    }
}

/// A frame for the preprocessor from host pixels: a new `Rgba8Unorm` texture (sampled, copy
/// destination) of `width` × `height` holding `rgba`, tightly packed rows of 4 bytes a pixel.
/// `view_formats` lists other formats its views may take (`Rgba8UnormSrgb` for an sRGB view).
/// A wrong length is a [`GpuError::Input`] (input 0) and a side over the device's limit
/// [`GpuError::Unsupported`], not wgpu validation errors.
pub fn upload_rgba8(
    ctx: &crate::GpuContext,
    label: &str,
    rgba: &[u8],
    (width, height): (u32, u32),
    view_formats: &[wgpu::TextureFormat],
) -> Result<wgpu::Texture, GpuError> {
    let expected = 4 * width as usize * height as usize;
    if rgba.len() != expected || expected == 0 {
        return Err(GpuError::Input {
            index: 0,
            expected,
            got: rgba.len(),
        });
    }
    let max = ctx.limits.max_texture_dimension_2d;
    if width > max || height > max {
        return Err(GpuError::Unsupported(format!(
            "a {width}x{height} frame: this device's textures are at most {max} wide and high"
        )));
    }
    let size = wgpu::Extent3d {
        width,
        height,
        depth_or_array_layers: 1,
    };
    let texture = ctx.device.create_texture(&wgpu::TextureDescriptor {
        label: Some(label),
        size,
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Rgba8Unorm,
        usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
        view_formats,
    });
    ctx.queue.write_texture(
        texture.as_image_copy(),
        rgba,
        wgpu::TexelCopyBufferLayout {
            offset: 0,
            bytes_per_row: Some(4 * width),
            rows_per_image: None,
        },
        size,
    );
    Ok(texture)
}

/// A model input as the preprocessing makes it, brought back to the host: `rgba` (tightly
/// packed RGBA8 rows, `width` × `height`) cropped with `crop`, resampled to `[H, W, C]`
/// (`shape`, `C ≤ 4`) and normalised with `norm` by the same kernel a [`Preprocessor`] runs
/// before a model, written in f32 to a buffer of its own and read back (NHWC `f32`). Blocking
/// (it waits for the device): for calibration off the frame path, e.g. the accuracy guard's
/// input ([`crate::guard`]) taken from a camera frame exactly as the model would see it.
pub fn preprocess_to_host(
    ctx: &GpuContext,
    rgba: &[u8],
    (width, height): (u32, u32),
    crop: &Crop,
    norm: Normalization,
    shape: [usize; 3],
) -> Result<Vec<f32>, GpuError> {
    let [h, w, c] = shape;
    let geom = Phwc4::of(&[1, h, w, c])?;
    let bytes = (geom.stored_values() * Precision::F32.bytes_per_value()) as u64;
    if bytes == 0 {
        return Err(GpuError::Unsupported(format!("an empty input {shape:?}")));
    }
    let texture = upload_rgba8(
        ctx,
        "heimdall calibration frame",
        rgba,
        (width, height),
        &[],
    )?;
    let view = texture.create_view(&wgpu::TextureViewDescriptor::default());
    let device = &ctx.device;
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("heimdall preprocessed input"),
        size: bytes,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("heimdall preprocessed input staging"),
        size: bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let target = InputTarget {
        buffer: buffer.clone(),
        bytes,
        geom,
        precision: Precision::F32,
    };
    let pre = Preprocessor::with_target(ctx, target, None, norm, 0)?;
    let binding = pre.bind(&view)?;
    pre.set_crop(&ctx.queue, crop)?;
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("heimdall preprocess to host"),
    });
    pre.encode(&mut encoder, &binding);
    encoder.copy_buffer_to_buffer(&buffer, 0, &staging, 0, bytes);
    ctx.queue.submit([encoder.finish()]);
    if let Some(e) = pollster::block_on(scope.pop()) {
        return Err(GpuError::Wgpu(e.to_string()));
    }
    let (tx, rx) = std::sync::mpsc::channel();
    staging.slice(..).map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    let mapped = std::cell::Cell::new(None);
    ctx.wait_until(|| match rx.try_recv() {
        Ok(r) => {
            mapped.set(Some(r));
            true
        }
        Err(std::sync::mpsc::TryRecvError::Empty) => false,
        Err(std::sync::mpsc::TryRecvError::Disconnected) => true,
    })?;
    let mapped = mapped
        .take()
        .ok_or_else(|| GpuError::Readback("the preprocessed input did not come back".into()))?;
    mapped.map_err(|e| GpuError::Readback(e.to_string()))?;
    let values = {
        let data = staging.slice(..).get_mapped_range();
        Precision::F32.decode_unpacked(&geom, &data)
    };
    staging.unmap();
    Ok(values)
}
