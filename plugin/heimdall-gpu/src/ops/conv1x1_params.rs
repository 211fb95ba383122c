//! The uniform parameters every 1x1 convolution kernel shares (plain, blocked; split-k; tiled),
//! apart from the kernels so that their modules need not import each other.

use crate::params::shader_params;

shader_params! {
    /// Uniform parameters of `shaders/conv1x1.wgsl`, `shaders/conv1x1_splitk.wgsl` and
    /// `shaders/conv1x1_tiled.wgsl`.
    struct GpuConv1x1Params {
        pixels: u32,
        in_slices: u32,
        out_slices: u32,
        out_channels: u32,
        pixel_tiles: u32,
        tiles: u32,
    }
}
