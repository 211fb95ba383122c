//! CONCATENATION of every input along one axis.

use crate::shape::OpShapes;

/// Output shape of a concatenation along `axis`: the inputs must agree on every other axis.
pub fn infer(axis: usize, io: &OpShapes) -> Result<Vec<usize>, String> {
    let first = io.input(0)?;
    if axis >= first.len() {
        return Err(format!("axis {axis} out of range for {first:?}"));
    }
    let mut s = first.to_vec();
    s[axis] = 0;
    for (i, x) in io.inputs.iter().enumerate() {
        if x.len() != first.len()
            || x.iter()
                .zip(first)
                .enumerate()
                .any(|(d, (a, b))| d != axis && a != b)
        {
            return Err(format!(
                "input {i} {x:?} does not match {first:?} outside axis {axis}"
            ));
        }
        s[axis] += x[axis];
    }
    Ok(s)
}
