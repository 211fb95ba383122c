//! STRIDED_SLICE with begin, stride and count resolved per axis (the importers apply masks).

use serde::Serialize;

use crate::shape::OpShapes;

/// A strided slice with begin/end/stride already resolved per input axis (masks applied).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StridedSliceAttrs {
    /// First index per axis.
    pub begin: Vec<i64>,
    /// Step per axis (non-zero, may be negative).
    pub stride: Vec<i64>,
    /// Number of elements taken per axis.
    pub count: Vec<usize>,
}

/// Output shape of a strided slice: `count` (shrunk axes disappear from the declared output,
/// which shape validation compares ignoring unit dimensions).
pub fn infer(a: &StridedSliceAttrs, io: &OpShapes) -> Result<Vec<usize>, String> {
    let x = io.input(0)?;
    if a.begin.len() != x.len() || a.stride.len() != x.len() || a.count.len() != x.len() {
        return Err(format!("slice of rank {} for input {x:?}", a.begin.len()));
    }
    for d in 0..x.len() {
        let last = a.begin[d] + a.stride[d] * (a.count[d] as i64 - 1);
        if a.count[d] > 0
            && (a.begin[d] < 0 || a.begin[d] >= x[d] as i64 || last < 0 || last >= x[d] as i64)
        {
            return Err(format!("axis {d}: slice leaves the input ({x:?})"));
        }
    }
    Ok(a.count.clone())
}
