//! A GPU model output as an RGBA texture (`heimdall_gpu::tensor_to_rgba`), read back into an
//! image: what `stylize --backend gpu` writes, so the CLI runs the same GPU path a Bevy material
//! would sample.

use anyhow::Context;
use heimdall_gpu::GpuModel;
use heimdall_gpu::tensor_to_rgba::TensorToRgba;
use heimdall_vision::RgbaImage;

/// Converts output `output` of `model` (after a run; the slot still holds it) into an RGBA8
/// texture on the GPU and reads the texture back.
pub fn output_as_rgba(model: &GpuModel, output: usize) -> anyhow::Result<RgbaImage> {
    let ctx = model.context();
    let to_rgba = TensorToRgba::new(model, output)?;
    let [w, h] = to_rgba.size();
    let texture = ctx.device.create_texture(&wgpu::TextureDescriptor {
        label: Some("heimdall stylized"),
        size: wgpu::Extent3d {
            width: w,
            height: h,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Rgba8Unorm,
        usage: wgpu::TextureUsages::STORAGE_BINDING | wgpu::TextureUsages::COPY_SRC,
        view_formats: &[],
    });
    let binding = to_rgba.bind(&texture.create_view(&Default::default()))?;
    let row =
        (4 * w).div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
    let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("heimdall stylized readback"),
        size: u64::from(row) * u64::from(h),
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
        mapped_at_creation: false,
    });
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    to_rgba.encode(&mut encoder, &binding);
    encoder.copy_texture_to_buffer(
        texture.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &buffer,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(row),
                rows_per_image: None,
            },
        },
        texture.size(),
    );
    ctx.queue.submit([encoder.finish()]);
    let (tx, rx) = std::sync::mpsc::channel();
    buffer
        .slice(..)
        .map_async(wgpu::MapMode::Read, move |r| drop(tx.send(r)));
    ctx.device
        .poll(wgpu::PollType::Wait {
            submission_index: None,
            timeout: None,
        })
        .map_err(|e| anyhow::anyhow!("waiting for the GPU: {e}"))?;
    rx.recv()
        .context("the texture readback was dropped")?
        .map_err(|e| anyhow::anyhow!("mapping the texture readback: {e}"))?;
    let data = buffer.slice(..).get_mapped_range();
    let pixels: Vec<u8> = (0..h as usize)
        .flat_map(|y| data[y * row as usize..][..4 * w as usize].iter().copied())
        .collect();
    Ok(RgbaImage::from_raw(w, h, pixels)?)
}
