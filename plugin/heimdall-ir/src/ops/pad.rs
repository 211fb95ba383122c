//! PAD: padding of every dimension, `pads[d] = [before, after]`, filled with a constant
//! (TFLite `PAD`, ONNX `Pad` mode `constant`), a mirror (`reflect`) or the edge (`edge`).

use serde::Serialize;

use crate::shape::OpShapes;

/// How padded positions are filled.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum PadMode {
    /// A constant value.
    Constant(f32),
    /// Mirror without repeating the edge (`abc` -> `cb|abc|ba`).
    Reflect,
    /// Repeat the edge value.
    Edge,
}

impl PadMode {
    /// Zero padding (TFLite's `PAD`): the padding a convolution can absorb.
    pub const ZERO: PadMode = PadMode::Constant(0.0);

    /// Whether this fills with zeros.
    pub fn is_zero(&self) -> bool {
        matches!(self, PadMode::Constant(v) if *v == 0.0)
    }

    /// A short upper-case name of a pad with this mode.
    pub fn op_name(&self) -> &'static str {
        match self {
            PadMode::Constant(_) => "PAD",
            PadMode::Reflect => "PAD_REFLECT",
            PadMode::Edge => "PAD_EDGE",
        }
    }
}

/// Output shape of a pad; reflect needs each pad smaller than the axis, edge a non-empty axis.
pub fn infer(pads: &[[usize; 2]], mode: &PadMode, io: &OpShapes) -> Result<Vec<usize>, String> {
    shape(io.input(0)?, pads, mode)
}

/// The shape of `x` padded by `pads` in `mode`, or an error when the mode cannot pad it so.
pub fn shape(x: &[usize], pads: &[[usize; 2]], mode: &PadMode) -> Result<Vec<usize>, String> {
    if pads.len() != x.len() {
        return Err(format!("{} paddings for rank {}", pads.len(), x.len()));
    }
    for (d, (&n, p)) in x.iter().zip(pads).enumerate() {
        let ok = match mode {
            PadMode::Constant(_) => true,
            PadMode::Reflect => p[0] < n && p[1] < n || p[0] + p[1] == 0,
            PadMode::Edge => n > 0 || p[0] + p[1] == 0,
        };
        if !ok {
            return Err(format!(
                "axis {d} of {n} cannot be padded by {p:?} in {mode:?} mode"
            ));
        }
    }
    Ok(x.iter().zip(pads).map(|(n, p)| n + p[0] + p[1]).collect())
}
