//! RESHAPE: the values copied as they are (row-major order is kept).
//!
//! Dispatch: [`prepare`].

use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

/// `output = input`, e.g. for RESHAPE.
pub fn copy(input: &[f32], output: &mut [f32]) {
    output.copy_from_slice(input);
}

/// A copy of the input.
pub(crate) struct Copy;

impl Kernel for Copy {
    fn run(&self, io: StepIo<'_>) {
        copy(io.inputs.get(0), io.out);
    }
}

/// Prepares a RESHAPE.
pub(crate) fn prepare(_cx: &PrepareCx) -> Result<Prepared, String> {
    Ok(Prepared::new(Copy))
}
