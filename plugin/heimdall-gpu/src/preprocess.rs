//! Camera frame to model input: one compute dispatch (`shaders/preprocess.wgsl`) that reads an
//! RGBA8 texture, applies an affine crop (crop, resize, flip, rotation: MediaPipe's rotated
//! ROIs), resamples bilinearly with clamp-to-edge or a constant border, normalises per channel
//! and writes the model's PHWC4 input slot in its storage precision, so the frame never leaves
//! the GPU. [`preprocess_cpu`] is the same computation on the host (the CPU fallback).
//!
//! ```no_run
//! use heimdall_gpu::preprocess::{CropTransform, Normalization, Preprocessor};
//! # fn f(model: &heimdall_gpu::GpuModel, frame: &wgpu::TextureView) -> Result<(), heimdall_gpu::GpuError> {
//! let pre = Preprocessor::new(model, 0, Normalization::MINUS_ONE_TO_ONE)?;
//! let binding = pre.bind(frame)?; // once per texture: keep it while the texture lives
//! let ctx = model.context();
//! // Every frame: the ROI, then the preprocessing and the model's steps in one encoder.
//! pre.set_transform(&ctx.queue, &CropTransform::IDENTITY)?;
//! let mut encoder = ctx.device.create_command_encoder(&Default::default());
//! pre.encode(&mut encoder, &binding);
//! model.encode(&mut encoder, 0..model.num_steps())?;
//! ctx.queue.submit([encoder.finish()]);
//! # Ok(()) }
//! ```

use bytemuck::{Pod, Zeroable};

use crate::error::GpuError;
use crate::model::GpuModel;
use crate::precision::Precision;
use crate::shaders::write;
use crate::wgsl::KernelSource;

/// Per-channel normalisation `out = pixel * scale + offset`, with `pixel` in [0, 1] (the byte
/// divided by 255) and channels in RGBA order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Normalization {
    /// Multiplier per channel (R, G, B, A).
    pub scale: [f32; 4],
    /// Offset per channel (R, G, B, A).
    pub offset: [f32; 4],
}

impl Normalization {
    /// [-1, 1]: `2 * pixel - 1` (MediaPipe's face, hand and pose models).
    pub const MINUS_ONE_TO_ONE: Normalization = Normalization {
        scale: [2.0; 4],
        offset: [-1.0; 4],
    };
    /// [0, 1]: the pixel as is (selfie segmentation, style transfer).
    pub const ZERO_TO_ONE: Normalization = Normalization {
        scale: [1.0; 4],
        offset: [0.0; 4],
    };

    /// `(pixel - mean) / std` per channel, with `mean` and `std` in [0, 1] units (ImageNet:
    /// mean `[0.485, 0.456, 0.406]`, std `[0.229, 0.224, 0.225]`); alpha passes through.
    pub fn mean_std(mean: [f32; 3], std: [f32; 3]) -> Normalization {
        let mut n = Normalization::ZERO_TO_ONE;
        for c in 0..3 {
            n.scale[c] = 1.0 / std[c];
            n.offset[c] = -mean[c] / std[c];
        }
        n
    }

    fn validate(&self) -> Result<(), GpuError> {
        if self.scale.iter().chain(&self.offset).all(|v| v.is_finite()) {
            Ok(())
        } else {
            Err(GpuError::Unsupported(format!(
                "normalisation {self:?} is not finite"
            )))
        }
    }
}

/// What a bilinear tap outside the source texture reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Border {
    /// The nearest edge texel (clamp-to-edge).
    Clamp,
    /// A constant RGBA value in pixel units ([0, 1], before normalisation). MediaPipe's zero
    /// border for rotated ROIs is `Constant([0.0; 4])` (black, which [-1, 1] maps to -1).
    Constant([f32; 4]),
}

/// The affine map from output pixels to source texture coordinates, and the border mode.
///
/// `matrix` maps the centre of output pixel `(x, y)`, normalised to `(u, v) = ((x + 0.5) / W,
/// (y + 0.5) / H)` in [0, 1]², to a source point `(s, t)` normalised to [0, 1]² of the texture
/// (`(0, 0)` its top-left corner, `(1, 1)` its bottom-right corner):
/// `s = m[0][0] u + m[0][1] v + m[0][2]`, `t = m[1][0] u + m[1][1] v + m[1][2]`.
/// The source is sampled bilinearly around that point, texel `i` having its centre at
/// `(i + 0.5) / size`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CropTransform {
    /// Rows of the 2x3 matrix.
    pub matrix: [[f32; 3]; 2],
    /// What taps outside the texture read.
    pub border: Border,
}

impl CropTransform {
    /// The whole frame, resized to the model's input.
    pub const IDENTITY: CropTransform = CropTransform {
        matrix: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
        border: Border::Clamp,
    };

    /// The axis-aligned rectangle `[x0, x1] x [y0, y1]` (normalised source coordinates),
    /// resized to the model's input; `x0 > x1` flips horizontally, `y0 > y1` vertically.
    pub fn rect(x0: f32, y0: f32, x1: f32, y1: f32) -> CropTransform {
        CropTransform {
            matrix: [[x1 - x0, 0.0, x0], [0.0, y1 - y0, y0]],
            border: Border::Clamp,
        }
    }

    /// MediaPipe's rotated ROI (`NormalizedRect`): centre `(cx, cy)` and size `(w, h)`
    /// normalised to the image, `rotation` in radians (positive turns the ROI clockwise on
    /// screen, y pointing down), on an image of `image_w x image_h` pixels (rotation happens in
    /// pixels, so non-square images do not shear). `flip` mirrors the ROI horizontally (the
    /// output's left is the ROI's right). The border is MediaPipe's zero border.
    pub fn rotated_rect(
        center: [f32; 2],
        size: [f32; 2],
        rotation: f32,
        image_w: f32,
        image_h: f32,
        flip: bool,
    ) -> CropTransform {
        let (sin, cos) = rotation.sin_cos();
        let (a, b) = (size[0] * image_w, size[1] * image_h); // ROI size in pixels
        let fx = if flip { -1.0 } else { 1.0 };
        // src_px = c_px + R [(u' - 0.5) a, (v - 0.5) b], u' = u or 1 - u; normalised by image.
        let (ux, vx) = (cos * a * fx / image_w, -sin * b / image_w);
        let (uy, vy) = (sin * a * fx / image_h, cos * b / image_h);
        CropTransform {
            matrix: [
                [ux, vx, center[0] - 0.5 * (ux + vx)],
                [uy, vy, center[1] - 0.5 * (uy + vy)],
            ],
            border: Border::Constant([0.0; 4]),
        }
    }

    /// The source point (normalised) of the normalised output point `(u, v)`.
    pub fn apply(&self, u: f32, v: f32) -> [f32; 2] {
        let m = &self.matrix;
        [
            m[0][0] * u + m[0][1] * v + m[0][2],
            m[1][0] * u + m[1][1] * v + m[1][2],
        ]
    }

    fn validate(&self) -> Result<(), GpuError> {
        let border_ok = match self.border {
            Border::Clamp => true,
            Border::Constant(v) => v.iter().all(|x| x.is_finite()),
        };
        if self.matrix.iter().flatten().all(|v| v.is_finite()) && border_ok {
            Ok(())
        } else {
            Err(GpuError::Unsupported(format!(
                "crop transform {self:?} is not finite"
            )))
        }
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

/// Where the preprocessing writes: the input's slot buffer, geometry and precision.
pub(crate) struct InputTarget {
    pub buffer: wgpu::Buffer,
    pub bytes: u64,
    pub geom: crate::layout::Phwc4,
    pub precision: Precision,
}

/// Source of the preprocessing kernel writing `precision`, re-encoding sRGB or not.
pub fn source(precision: Precision, srgb: bool) -> KernelSource {
    KernelSource {
        consts: vec![("SRGB", u32::from(srgb))],
        ..KernelSource::new("preprocess", vec![write("y", precision)])
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
    /// the identity crop until [`Preprocessor::set_transform`] is called.
    pub fn new(model: &GpuModel, input: usize, norm: Normalization) -> Result<Self, GpuError> {
        norm.validate()?;
        let target = model.input_target(input)?;
        let g = target.geom;
        if g.c == 0 || g.c > 4 {
            return Err(GpuError::Unsupported(format!(
                "input {input} has {} channels: preprocessing writes 1 to 4 (from RGBA)",
                g.c
            )));
        }
        let ctx = model.context();
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
            let src = k.compose()?;
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
                    cache: model.pipeline_cache(),
                }),
            )
        };
        let pipelines = (|| Ok::<_, GpuError>([make(false)?, make(true)?]))();
        let uniform = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("heimdall preprocess params"),
            size: std::mem::size_of::<GpuPreprocessParams>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
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
        p.set_transform(&ctx.queue, &CropTransform::IDENTITY)?;
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
    pub fn set_transform(&self, queue: &wgpu::Queue, crop: &CropTransform) -> Result<(), GpuError> {
        crop.validate()?;
        let m = crop.matrix;
        let (border_mode, border) = match crop.border {
            Border::Clamp => (0, [0.0; 4]),
            Border::Constant(v) => (1, v),
        };
        let p = GpuPreprocessParams {
            m0: [m[0][0], m[0][1], m[0][2], 0.0],
            m1: [m[1][0], m[1][1], m[1][2], 0.0],
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

/// The preprocessing on the host, for the CPU backend: `rgba` holds `width * height` RGBA8
/// pixels row by row (top row first); the result is `[out_h, out_w, out_c]` (NHWC, batch 1)
/// f32 with `out_c ≤ 4`, the same computation as the GPU kernel (which agrees to f32 rounding).
pub fn preprocess_cpu(
    rgba: &[u8],
    width: usize,
    height: usize,
    crop: &CropTransform,
    norm: &Normalization,
    out_shape: [usize; 3],
) -> Result<Vec<f32>, GpuError> {
    crop.validate()?;
    norm.validate()?;
    let [out_h, out_w, out_c] = out_shape;
    if width == 0
        || height == 0
        || width.checked_mul(height).and_then(|n| n.checked_mul(4)) != Some(rgba.len())
    {
        return Err(GpuError::Unsupported(format!(
            "an RGBA8 image of {width}x{height} pixels needs {} bytes, got {}",
            width.saturating_mul(height).saturating_mul(4),
            rgba.len()
        )));
    }
    if !(1..=4).contains(&out_c) || width > i32::MAX as usize || height > i32::MAX as usize {
        return Err(GpuError::Unsupported(format!(
            "preprocessing writes 1 to 4 channels from images below 2^31 pixels a side, not {out_c} channels"
        )));
    }
    let (w, h) = (width as i32, height as i32);
    let tap = |x: i32, y: i32| -> [f32; 4] {
        if let Border::Constant(v) = crop.border
            && (x < 0 || y < 0 || x >= w || y >= h)
        {
            return v;
        }
        let at = (y.clamp(0, h - 1) as usize * width + x.clamp(0, w - 1) as usize) * 4;
        std::array::from_fn(|c| f32::from(rgba[at + c]) / 255.0)
    };
    let mut out = Vec::with_capacity(out_h * out_w * out_c);
    for y in 0..out_h {
        for x in 0..out_w {
            let u = (x as f32 + 0.5) / out_w as f32;
            let v = (y as f32 + 0.5) / out_h as f32;
            let [s, t] = crop.apply(u, v);
            let (px, py) = (s * width as f32 - 0.5, t * height as f32 - 0.5);
            let (fx0, fy0) = (px.floor(), py.floor());
            let (fx, fy) = (px - fx0, py - fy0);
            let (limx, limy) = (width as f32 + 2.0, height as f32 + 2.0);
            let (x0, y0) = (fx0.clamp(-limx, limx) as i32, fy0.clamp(-limy, limy) as i32);
            let (a, b, c, d) = (
                tap(x0, y0),
                tap(x0 + 1, y0),
                tap(x0, y0 + 1),
                tap(x0 + 1, y0 + 1),
            );
            for ch in 0..out_c {
                let top = a[ch] + (b[ch] - a[ch]) * fx;
                let bottom = c[ch] + (d[ch] - c[ch]) * fx;
                let pixel = top + (bottom - top) * fy;
                out.push(pixel * norm.scale[ch] + norm.offset[ch]);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_reads_pixel_centres() {
        // 2x2 image, identity crop to 2x2: the exact bytes.
        let rgba = [
            0u8, 255, 51, 255, 102, 0, 0, 255, 255, 255, 255, 255, 0, 0, 0, 0,
        ];
        let out = preprocess_cpu(
            &rgba,
            2,
            2,
            &CropTransform::IDENTITY,
            &Normalization::ZERO_TO_ONE,
            [2, 2, 3],
        )
        .unwrap();
        assert_eq!(
            out,
            vec![0.0, 1.0, 0.2, 0.4, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
        );
    }

    #[test]
    fn rotated_rect_maps_centre_and_corners() {
        // A quarter turn of a square ROI on a square image: the ROI's own top-left corner has
        // turned clockwise (y down) to the top-right of the axis-aligned square.
        let t = CropTransform::rotated_rect(
            [0.5, 0.5],
            [0.5, 0.5],
            std::f32::consts::FRAC_PI_2,
            100.0,
            100.0,
            false,
        );
        let c = t.apply(0.5, 0.5);
        assert!((c[0] - 0.5).abs() < 1e-6 && (c[1] - 0.5).abs() < 1e-6);
        let tl = t.apply(0.0, 0.0);
        assert!(
            (tl[0] - 0.75).abs() < 1e-6 && (tl[1] - 0.25).abs() < 1e-6,
            "{tl:?}"
        );
        let flipped = CropTransform::rotated_rect([0.5, 0.5], [0.5, 0.5], 0.0, 100.0, 100.0, true);
        let tl = flipped.apply(0.0, 0.0);
        assert!(
            (tl[0] - 0.75).abs() < 1e-6 && (tl[1] - 0.25).abs() < 1e-6,
            "{tl:?}"
        );
    }

    #[test]
    fn bad_inputs_are_errors() {
        let crop = CropTransform::IDENTITY;
        let n = Normalization::ZERO_TO_ONE;
        assert!(preprocess_cpu(&[0; 15], 2, 2, &crop, &n, [2, 2, 3]).is_err());
        assert!(preprocess_cpu(&[0; 16], 2, 2, &crop, &n, [2, 2, 5]).is_err());
        let mut nan = crop;
        nan.matrix[0][0] = f32::NAN;
        assert!(preprocess_cpu(&[0; 16], 2, 2, &nan, &n, [2, 2, 3]).is_err());
    }
}
