//! DENSIFY of a sparse constant, when the load-time passes did not fold it: the stored values
//! scattered to their dense positions.
//!
//! Dispatch: [`prepare`] resolves the positions once.

use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

/// The dense position of each stored value.
struct Densify(Vec<usize>);

impl Kernel for Densify {
    fn run(&self, io: StepIo<'_>) {
        io.out.fill(0.0);
        for (&p, &v) in self.0.iter().zip(io.inputs.get(0)) {
            io.out[p] = v;
        }
    }
}

/// Prepares a DENSIFY.
pub(crate) fn prepare(cx: &PrepareCx) -> Result<Prepared, String> {
    let t = cx.graph.tensor(cx.op.inputs[0]);
    let c = t.constant.as_ref().ok_or("DENSIFY of a non-constant")?;
    let sp = c.sparsity.as_ref().ok_or("DENSIFY of a dense constant")?;
    // Dense position of each stored value: densify the sequence 1, 2, 3, ...
    let ordinals: Vec<u32> = (1..=c.values.len() as u32).collect();
    let dense = heimdall_ir::sparse::densify(sp, &ordinals, &t.shape)?;
    let mut positions = vec![0usize; c.values.len()];
    for (p, &o) in dense.iter().enumerate() {
        if o > 0 {
            positions[o as usize - 1] = p;
        }
    }
    Ok(Prepared::new(Densify(positions)))
}
