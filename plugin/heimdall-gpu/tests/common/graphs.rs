//! Shapes and graph pieces shared by the kernel tests: SAME/VALID padding, fused epilogues,
//! shapes of a rank and broadcasting operands.

use heimdall_ir::shape::{same_padding, window_out};
use heimdall_ir::{Activation, Epilogue, Pad2d, TensorId, UnaryKind};

use super::GraphBuilder;

/// Padding and output size along one axis: SAME (TFLite) or VALID.
fn axis(input: usize, k: usize, stride: usize, dil: usize, same: bool) -> Option<(usize, usize)> {
    if same {
        let (out, before, _) = same_padding(input, k, stride, dil);
        Some((out, before))
    } else {
        window_out(input, k, stride, dil, 0).map(|o| (o, 0))
    }
}

/// Output size and Pad2d for SAME/VALID given both axes; `None` where VALID has no output.
pub fn pad2d(
    ih: usize,
    iw: usize,
    k: [usize; 2],
    s: [usize; 2],
    d: [usize; 2],
    same: bool,
) -> Option<(usize, usize, Pad2d)> {
    let (oh, top) = axis(ih, k[0], s[0], d[0], same)?;
    let (ow, left) = axis(iw, k[1], s[1], d[1], same)?;
    let bottom = ((oh - 1) * s[0] + (k[0] - 1) * d[0] + 1).saturating_sub(ih + top);
    let right = ((ow - 1) * s[1] + (k[1] - 1) * d[1] + 1).saturating_sub(iw + left);
    Some((
        oh,
        ow,
        Pad2d {
            top,
            bottom,
            left,
            right,
        },
    ))
}

/// An epilogue: `act` 0 none, 1 relu, 2 relu6, 3 hard-swish, 4 logistic, 5 PReLU, 6 tanh,
/// 7 relu-n1-to-1; optionally a residual input of the output's shape.
pub fn epilogue(b: &mut GraphBuilder, act: u8, residual: bool, out: &[usize]) -> Epilogue {
    let activation = match act {
        1 => Activation::Unary(UnaryKind::Relu),
        2 => Activation::Unary(UnaryKind::Relu6),
        3 => Activation::Unary(UnaryKind::HardSwish),
        4 => Activation::Unary(UnaryKind::Logistic),
        5 => Activation::Prelu(b.constant(&[*out.last().unwrap()], 77)),
        6 => Activation::Unary(UnaryKind::Tanh),
        7 => Activation::Unary(UnaryKind::ReluN1To1),
        _ => Activation::None,
    };
    Epilogue {
        residual: residual.then(|| b.input(out)),
        activation,
    }
}

/// A shape of `rank` from `dims` (batch 1 for rank 4).
pub fn shape_of(rank: usize, dims: [usize; 4]) -> Vec<usize> {
    let mut s = dims[4 - rank..].to_vec();
    if rank == 4 {
        s[0] = 1;
    }
    s
}

/// `out` with axes switched to 1 by `mask` (bit d of the right-aligned axis d) and the leading
/// `drop` axes removed: a shape that broadcasts to `out`.
pub fn broadcast_from(out: &[usize], mask: u8, drop: usize) -> Vec<usize> {
    let n = out.len();
    let mut s: Vec<usize> = out
        .iter()
        .enumerate()
        .map(|(i, &d)| if mask >> (n - 1 - i) & 1 == 1 { 1 } else { d })
        .collect();
    s.drain(..drop.min(n.saturating_sub(1)));
    s
}

/// An operand of `shape`: a graph input, or a constant when `constant`.
pub fn operand(b: &mut GraphBuilder, shape: &[usize], constant: bool, seed: u64) -> TensorId {
    if constant {
        b.constant(shape, seed)
    } else {
        b.input(shape)
    }
}
