//! RESHAPE: the same values in row-major order under the output's declared shape.

use crate::shape::OpShapes;

/// Output shape of a reshape: the declared one, if it holds as many values as the input.
pub fn infer(io: &OpShapes) -> Result<Vec<usize>, String> {
    let (x, o) = (io.input(0)?, io.output(0)?);
    if x.iter().product::<usize>() != o.iter().product::<usize>() {
        return Err(format!("cannot reshape {x:?} to {o:?}"));
    }
    Ok(o.to_vec())
}
