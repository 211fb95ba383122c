//! The geometry of a convolution or pooling window over an NHWC tensor, and which of its taps
//! fall inside the input.

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

/// The taps `lo..hi` of a window of `k` taps whose input index `o * stride + t * dil - pad`
/// falls inside `0..n`.
#[inline]
pub(crate) fn valid_taps(
    o: usize,
    stride: usize,
    dil: usize,
    pad: usize,
    n: usize,
    k: usize,
) -> (usize, usize) {
    let start = o * stride;
    // First t with start + t * dil >= pad.
    let lo = if start >= pad {
        0
    } else {
        (pad - start).div_ceil(dil)
    };
    // First t with start + t * dil >= pad + n.
    let hi = (pad + n).saturating_sub(start).div_ceil(dil);
    (lo.min(k), hi.min(k).max(lo.min(k)))
}
