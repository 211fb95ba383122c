//! CONV_2D: 2-D convolution of `x [1,H,W,Ci]` with `filter [Co,kh,kw,Ci]` and an optional
//! `bias [Co]`; the window attributes ([`ConvAttrs`], [`Pad2d`]) are shared with the depthwise
//! and transposed convolutions.

use serde::Serialize;

use crate::shape::{OpShapes, need_rank, window_out};

/// Explicit spatial padding of a window op, in elements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Pad2d {
    /// Rows above.
    pub top: usize,
    /// Rows below.
    pub bottom: usize,
    /// Columns left.
    pub left: usize,
    /// Columns right.
    pub right: usize,
}

/// Attributes of a convolution (regular, depthwise or transposed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ConvAttrs {
    /// `[stride_h, stride_w]`.
    pub stride: [usize; 2],
    /// `[dilation_h, dilation_w]`.
    pub dilation: [usize; 2],
    /// Zero padding of the input (for transposed convs: cropping of the full output).
    pub pad: Pad2d,
}

impl ConvAttrs {
    /// Stride 1, dilation 1 and `pad` on every side: for a `2 * pad + 1` window, a convolution
    /// whose output has its input's height and width.
    pub fn unit_stride(pad: usize) -> ConvAttrs {
        ConvAttrs {
            stride: [1, 1],
            dilation: [1, 1],
            pad: Pad2d {
                top: pad,
                bottom: pad,
                left: pad,
                right: pad,
            },
        }
    }
}

/// Output shape of a CONV_2D.
pub fn infer(a: &ConvAttrs, io: &OpShapes) -> Result<Vec<usize>, String> {
    let (x, f) = (io.input(0)?, io.input(1)?);
    need_rank(x, 4, "input")?;
    need_rank(f, 4, "filter")?;
    if f[3] != x[3] {
        return Err(format!(
            "filter {f:?} expects {} input channels, input has {}",
            f[3], x[3]
        ));
    }
    check_bias(io, f[0])?;
    let [oh, ow] = window(x, f, a)?;
    Ok(vec![x[0], oh, ow, f[0]])
}

/// Multiply-adds of a CONV_2D: one filter window per output value.
pub fn macs(io: &OpShapes) -> u64 {
    let f = io.input_or_empty(1);
    let per_out = f.get(1..).map_or(0, |s| s.iter().product::<usize>()) as u64;
    io.output_numel() * per_out
}

/// Fails unless the optional bias (input 2) has `n` values.
pub(crate) fn check_bias(io: &OpShapes, n: usize) -> Result<(), String> {
    match io.inputs.get(2) {
        Some(b) if b.iter().product::<usize>() != n => Err(format!(
            "bias has {} values, expected {n}",
            b.iter().product::<usize>()
        )),
        _ => Ok(()),
    }
}

/// Output height and width of a convolution window over `x [1,H,W,C]` with filter
/// `f [_,kh,kw,_]`.
pub(crate) fn window(x: &[usize], f: &[usize], a: &ConvAttrs) -> Result<[usize; 2], String> {
    let oh = window_out(
        x[1],
        f[1],
        a.stride[0],
        a.dilation[0],
        a.pad.top + a.pad.bottom,
    );
    let ow = window_out(
        x[2],
        f[2],
        a.stride[1],
        a.dilation[1],
        a.pad.left + a.pad.right,
    );
    match (oh, ow) {
        (Some(oh), Some(ow)) => Ok([oh, ow]),
        _ => Err(format!(
            "window {}x{} larger than the padded input {x:?}",
            f[1], f[2]
        )),
    }
}
