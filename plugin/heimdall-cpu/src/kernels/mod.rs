//! f32 CPU kernels on plain NHWC slices (batch 1).
//!
//! Kernels know nothing of the graph IR: the executor (`crate::exec`) resolves tensors to
//! slices of its arena and calls these functions. Every kernel writes its whole output, never
//! allocates (scratch space is planned by the caller through the `*_scratch_len` functions),
//! and splits its work over the [`Par`] handle it is given.

pub mod conv;
pub mod depthwise;
pub mod elementwise;
pub mod epilogue;
pub mod fully_connected;
mod gemm;
pub mod interp;
pub mod layout;
pub mod math;
pub mod matmul;
mod nd;
pub mod norm;
pub mod pad_mode;
pub mod par;
pub mod pool;
pub mod reduce;
pub mod reduce_ops;
pub mod resize;
pub mod select;
pub mod softmax;
pub mod space_depth;
#[cfg(test)]
mod testutil;
pub mod transpose;
pub mod transpose_conv;

pub use epilogue::{Act, Epilogue};
pub use par::Par;

pub use conv::{PackedConv, conv_scratch_len};
pub use depthwise::PackedDepthwise;
pub use elementwise::{BinaryOp, activation, binary, broadcast_shape, prelu};
pub use fully_connected::PackedFullyConnected;
pub use layout::{concat, copy, depth_to_space, pad, strided_slice, strided_slice_len};
pub use pool::{avg_pool, max_pool};
pub use reduce::mean;
pub use resize::{ResizeBilinear, resize_bilinear};
pub use transpose_conv::{PackedTransposeConv, transpose_conv_scratch_len};

/// Geometry of a 2-D convolution or pooling window over an NHWC tensor (batch 1).
///
/// Padding is explicit: SAME padding is resolved by the importer and folded `PAD` ops add to it.
/// Padded positions read as zero for convolutions and are skipped for pooling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Input height, width, channels.
    pub in_h: usize,
    /// Input width.
    pub in_w: usize,
    /// Input channels.
    pub in_c: usize,
    /// Output height.
    pub out_h: usize,
    /// Output width.
    pub out_w: usize,
    /// Output channels.
    pub out_c: usize,
    /// Kernel (filter) height.
    pub k_h: usize,
    /// Kernel width.
    pub k_w: usize,
    /// Vertical stride.
    pub stride_h: usize,
    /// Horizontal stride.
    pub stride_w: usize,
    /// Vertical dilation.
    pub dil_h: usize,
    /// Horizontal dilation.
    pub dil_w: usize,
    /// Rows of padding above the input.
    pub pad_top: usize,
    /// Columns of padding left of the input.
    pub pad_left: usize,
}
