//! The building blocks every CPU kernel shares ([`Par`], [`Epilogue`], [`Window`], the packed
//! matrix product, 4-D index helpers), and the kernels of every op family (`crate::ops`)
//! re-exported as functions and types on plain NHWC slices (batch 1), for benchmarks and tools.
//!
//! A kernel writes its whole output, never allocates (scratch space is planned by the caller
//! through the `*_scratch_len` functions), and splits its work over the [`Par`] handle it is
//! given.

pub mod denormals;
pub mod epilogue;
pub(crate) mod gemm;
pub mod isa;
pub(crate) mod nd;
pub mod par;
pub mod tail;
#[cfg(test)]
pub(crate) mod testutil;
pub(crate) mod threads;
pub mod vmath;
pub mod window;

pub use epilogue::{Act, Epilogue};
pub use isa::Isa;
pub use par::Par;
pub use tail::Tail;
pub use window::Window;

pub use crate::ops::binary::{BinaryOp, add_channel_padded, binary, prelu};
pub use crate::ops::concat::{concat, concat_on};
pub use crate::ops::conv::fp16::F16Conv;
pub use crate::ops::conv::{PackedConv, conv_scratch_len};
pub use crate::ops::depthwise::PackedDepthwise;
pub use crate::ops::fully_connected::PackedFullyConnected;
pub use crate::ops::instance_norm::{PaddedOutput, instance_norm};
pub use crate::ops::pad::pad;
pub use crate::ops::pool::{avg_pool, max_pool, pool_scratch_len};
pub use crate::ops::reduce::{Fold, mean, mean_on, reduce};
pub use crate::ops::reshape::copy;
pub use crate::ops::resize::{ResizeBilinear, resize_bilinear, resize_four_tap, resize_two_tap};
pub use crate::ops::space_depth::depth_to_space;
pub use crate::ops::strided_slice::{strided_slice, strided_slice_len};
pub use crate::ops::transpose_conv::{PackedTransposeConv, transpose_conv_scratch_len};
pub use crate::ops::unary::{activation, map};
