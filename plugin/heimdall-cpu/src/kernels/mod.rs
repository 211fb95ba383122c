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
pub mod layout;
pub mod par;
pub mod pool;
pub mod reduce;
pub mod resize;
#[cfg(test)]
mod testutil;
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

#[cfg(test)]
mod perf_probe {
    use super::*;
    use std::time::Instant;

    fn min_time(mut f: impl FnMut()) -> f64 {
        let mut best = f64::MAX;
        for _ in 0..300 {
            let t = Instant::now();
            f();
            best = best.min(t.elapsed().as_secs_f64());
        }
        best
    }

    fn win(h: usize, c: usize, oc: usize, k: usize, s: usize) -> Window {
        let o = h.div_ceil(s);
        let p = ((o - 1) * s + k).saturating_sub(h) / 2;
        Window { in_h: h, in_w: h, in_c: c, out_h: o, out_w: o, out_c: oc, k_h: k, k_w: k, stride_h: s, stride_w: s, dil_h: 1, dil_w: 1, pad_top: p, pad_left: p }
    }

    #[test]
    #[ignore]
    fn probe() {
        let par = Par::new(1);
        for (h, c, oc, k, s) in [(64, 32, 64, 1, 1), (16, 128, 128, 1, 1), (32, 32, 32, 3, 1), (128, 3, 24, 3, 2)] {
            let w = win(h, c, oc, k, s);
            let conv = PackedConv::new(&vec![0.5; oc * k * k * c], None, w);
            let input = vec![1.0; h * h * c];
            let mut out = vec![0.0; w.out_h * w.out_w * oc];
            let mut scratch = vec![0.0; conv.scratch_len(&par)];
            let t = min_time(|| conv.run(&par, &input, &mut out, &mut scratch, &Epilogue::NONE));
            let fl = 2.0 * (w.out_h * w.out_w * oc * k * k * c) as f64;
            eprintln!("conv {h}x{h}x{c}->{oc} k{k}s{s}: {:.1} us {:.1} GFLOP/s", t * 1e6, fl / t / 1e9);
        }
        for (h, c, k, s) in [(64, 32, 3, 1), (64, 32, 5, 1), (64, 32, 3, 2), (32, 88, 5, 1)] {
            let w = win(h, c, c, k, s);
            let dw = PackedDepthwise::new(&vec![0.5; k * k * c], None, w);
            let input = vec![1.0; h * h * c];
            let mut out = vec![0.0; w.out_h * w.out_w * c];
            let t = min_time(|| dw.run(&par, &input, &mut out, &Epilogue::NONE));
            let fl = 2.0 * (w.out_h * w.out_w * c * k * k) as f64;
            eprintln!("dw {h}x{h}x{c} k{k}s{s}: {:.1} us {:.1} GFLOP/s", t * 1e6, fl / t / 1e9);
        }
    }
}
