//! `tensor_to_rgba` against a host reference written here from the kernel's documented formula
//! (`shaders/tensor_to_rgba.wgsl`: each channel `clip(x, 0, 1) · 255 + 0.5` truncated, NaN to 0,
//! alpha 255 for 3 channels), itself checked on hand-computed pixels: a model output of known
//! values (a copy graph fed values in −0.2..1.2, NaN included; every storage precision)
//! converted on the GPU into an RGBA8 storage texture, read back, equal byte for byte to the
//! reference on the output the model returns; hand-computed pixels (values f16 stores exactly,
//! out of range, NaN, rounding ties) equal to the GPU's in every precision; and bad textures are
//! refused.

use heimdall_gpu::tensor_to_rgba::TensorToRgba;
use heimdall_gpu::{GpuContext, GpuModel, GpuOptions, Precision};
mod common;

use common::GraphBuilder;
use heimdall_ir::{Epilogue, Graph, OpKind};

/// The host reference: `[H, W, 3]` values to RGBA8 bytes, each channel `clip(x, 0, 1) · 255 +
/// 0.5` truncated (NaN is 0), alpha 255.
fn host_rgba(hwc: &[f32]) -> Vec<u8> {
    hwc.chunks_exact(3)
        .flat_map(|px| {
            let byte = |v: f32| {
                let c = if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) };
                (c * 255.0 + 0.5).floor() as u8
            };
            [byte(px[0]), byte(px[1]), byte(px[2]), 255]
        })
        .collect()
}

/// Hand-computed pixels of a 3×2 image (values f16 stores exactly, so every precision holds
/// them): the input `[2, 3, 3]` and the RGBA bytes.
#[rustfmt::skip]
const HAND: ([f32; 18], [u8; 24]) = (
    [
        // 0, 1, 0.5 · 255 + 0.5 = 128 exactly (a tie rounds up).
        0.0, 1.0, 0.5,
        // Out of range clamps; NaN is 0.
        -0.25, 1.5, f32::NAN,
        // 63.75 + 0.5, 191.25 + 0.5, 31.875 + 0.5 truncated.
        0.25, 0.75, 0.125,
        // 15.9375 + 0.5, 223.125 + 0.5, 255/256 · 255 = 254.004 + 0.5.
        0.0625, 0.875, 0.996_093_75,
        // −0, 2⁻⁹ · 255 + 0.5 = 0.998 (0), 2⁻⁸ · 255 + 0.5 = 1.496 (1).
        -0.0, 0.001_953_125, 0.003_906_25,
        // Far out of range.
        3.0, -3.0, 0.5,
    ],
    [
        0, 255, 128, 255,
        0, 255, 0, 255,
        64, 191, 32, 255,
        16, 223, 254, 255,
        0, 0, 1, 255,
        255, 0, 128, 255,
    ],
);

fn copy_graph([h, w, c]: [usize; 3]) -> Graph {
    let mut b = GraphBuilder::default();
    let x = b.input(&[1, h, w, c]);
    let t = b.op(
        OpKind::Reshape,
        vec![x],
        &[1, h * w, c],
        Epilogue::default(),
    );
    let y = b.op(OpKind::Reshape, vec![t], &[1, h, w, c], Epilogue::default());
    b.finish(vec![y])
}

fn texture(ctx: &GpuContext, w: u32, h: u32, usage: wgpu::TextureUsages) -> wgpu::Texture {
    ctx.device.create_texture(&wgpu::TextureDescriptor {
        label: Some("rgba"),
        size: wgpu::Extent3d {
            width: w,
            height: h,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Rgba8Unorm,
        usage,
        view_formats: &[],
    })
}

fn read_texture(ctx: &GpuContext, tex: &wgpu::Texture, w: u32, h: u32) -> Vec<u8> {
    let row = (4 * w).div_ceil(256) * 256;
    let buf = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("rgba readback"),
        size: u64::from(row * h),
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
        mapped_at_creation: false,
    });
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    encoder.copy_texture_to_buffer(
        tex.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &buf,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(row),
                rows_per_image: None,
            },
        },
        tex.size(),
    );
    ctx.queue.submit([encoder.finish()]);
    buf.slice(..)
        .map_async(wgpu::MapMode::Read, |r| r.expect("map"));
    ctx.device
        .poll(wgpu::PollType::Wait {
            submission_index: None,
            timeout: None,
        })
        .expect("poll");
    let data = buf.slice(..).get_mapped_range();
    (0..h as usize)
        .flat_map(|y| data[y * row as usize..][..4 * w as usize].to_vec())
        .collect()
}

#[test]
fn texture_pixels_are_the_tensor_conversion() {
    // The tests' shared device (None, saying so, under HEIMDALL_SKIP_GPU=1).
    let Some(gpu) = common::gpu() else { return };
    let ctx = gpu.ctx.clone();
    let (w, h) = (37u32, 19u32);
    for precision in Precision::ALL {
        let model = GpuModel::compile(
            &ctx,
            &copy_graph([h as usize, w as usize, 3]),
            GpuOptions::new(precision),
        )
        .expect("compile");
        let mut values: Vec<f32> = (0..w * h * 3)
            .map(|i| ((i * 7919) % 1400) as f32 / 1000.0 - 0.2)
            .collect();
        values[5] = f32::NAN;
        // The model's output as stored (f16 rounds), read back by the model itself.
        let out = model.run(&[&values]).expect("run").remove(0);
        let to_rgba = TensorToRgba::new(&model, 0).expect("tensor_to_rgba");
        assert_eq!(to_rgba.size(), [w, h]);
        let tex = texture(
            &ctx,
            w,
            h,
            wgpu::TextureUsages::STORAGE_BINDING | wgpu::TextureUsages::COPY_SRC,
        );
        let binding = to_rgba
            .bind(&tex.create_view(&Default::default()))
            .expect("bind");
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        to_rgba.encode(&mut encoder, &binding);
        ctx.queue.submit([encoder.finish()]);
        let got = read_texture(&ctx, &tex, w, h);
        let want = host_rgba(&out);
        let diff = got.iter().zip(&want).filter(|(a, b)| a != b).count();
        println!("{precision:?}: {diff} of {} bytes differ", got.len());
        assert_eq!(got, want, "{precision:?}");
    }
}

/// The host reference gives the hand-computed pixels, and so does the GPU in every precision.
#[test]
fn hand_computed_pixels() {
    let (values, want) = HAND;
    assert_eq!(host_rgba(&values), want);
    let Some(gpu) = common::gpu() else { return };
    let ctx = gpu.ctx.clone();
    let (w, h) = (3u32, 2u32);
    for precision in Precision::ALL {
        let model = GpuModel::compile(&ctx, &copy_graph([2, 3, 3]), GpuOptions::new(precision))
            .expect("compile");
        model.run(&[&values]).expect("run");
        let to_rgba = TensorToRgba::new(&model, 0).expect("tensor_to_rgba");
        let tex = texture(
            &ctx,
            w,
            h,
            wgpu::TextureUsages::STORAGE_BINDING | wgpu::TextureUsages::COPY_SRC,
        );
        let binding = to_rgba
            .bind(&tex.create_view(&Default::default()))
            .expect("bind");
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        to_rgba.encode(&mut encoder, &binding);
        ctx.queue.submit([encoder.finish()]);
        assert_eq!(read_texture(&ctx, &tex, w, h), want, "{precision:?}");
    }
    gpu.assert_no_errors();
}

#[test]
fn bad_textures_and_outputs_are_refused() {
    // The tests' shared device (None, saying so, under HEIMDALL_SKIP_GPU=1).
    let Some(gpu) = common::gpu() else { return };
    let ctx = gpu.ctx.clone();
    let model = GpuModel::compile(
        &ctx,
        &copy_graph([8, 8, 3]),
        GpuOptions::new(Precision::F32),
    )
    .expect("compile");
    let to_rgba = TensorToRgba::new(&model, 0).expect("tensor_to_rgba");
    let small = texture(&ctx, 4, 8, wgpu::TextureUsages::STORAGE_BINDING);
    assert!(
        to_rgba
            .bind(&small.create_view(&Default::default()))
            .is_err()
    );
    let no_storage = texture(&ctx, 8, 8, wgpu::TextureUsages::TEXTURE_BINDING);
    assert!(
        to_rgba
            .bind(&no_storage.create_view(&Default::default()))
            .is_err()
    );
    assert!(TensorToRgba::new(&model, 1).is_err());
    let five = GpuModel::compile(
        &ctx,
        &copy_graph([8, 8, 5]),
        GpuOptions::new(Precision::F32),
    )
    .expect("compile");
    assert!(TensorToRgba::new(&five, 0).is_err());
}
