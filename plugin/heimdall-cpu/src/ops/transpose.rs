//! Axis permutation of a tensor of rank at most 4 (ONNX `Transpose`).
//!
//! Dispatch: [`prepare`].

use crate::kernels::nd::{dims4, for_each4, strides4};
use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

/// `output[o] = input[i]` where output axis `d` is input axis `perm[d]`.
pub fn transpose(input: &[f32], shape: &[usize], perm: &[usize], output: &mut [f32]) {
    debug_assert_eq!(shape.len(), perm.len());
    let off = 4 - shape.len();
    let d = dims4(shape);
    let s = strides4(&d);
    let mut p4 = [0, 1, 2, 3];
    for (i, &p) in perm.iter().enumerate() {
        p4[off + i] = off + p;
    }
    let od = [d[p4[0]], d[p4[1]], d[p4[2]], d[p4[3]]];
    let os = [s[p4[0]], s[p4[1]], s[p4[2]], s[p4[3]]];
    for_each4(&od, |i, c| {
        output[i] = input[c[0] * os[0] + c[1] * os[1] + c[2] * os[2] + c[3] * os[3]];
    });
}

/// A permutation of an input of known shape.
struct Transpose {
    shape: Vec<usize>,
    perm: Vec<usize>,
}

impl Kernel for Transpose {
    fn run(&self, io: StepIo<'_>) {
        transpose(io.inputs.get(0), &self.shape, &self.perm, io.out);
    }
}

/// Prepares a TRANSPOSE by `perm`.
pub(crate) fn prepare(cx: &PrepareCx, perm: &[usize]) -> Result<Prepared, String> {
    Ok(Prepared::new(Transpose {
        shape: cx.shape(0),
        perm: perm.to_vec(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::data;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn transpose_matches_reference(shape in proptest::collection::vec(1..5usize, 1..=4), seed in 0u64..100, rot in 0usize..4) {
            let r = shape.len();
            let perm: Vec<usize> = (0..r).map(|i| (i + rot) % r).rev().collect();
            let x = data(seed, shape.iter().product());
            let mut out = vec![0.0; x.len()];
            transpose(&x, &shape, &perm, &mut out);
            // Reference: walk input coordinates and scatter.
            let oshape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
            for (flat, v) in x.iter().enumerate() {
                let mut rem = flat;
                let mut c = vec![0; r];
                for d in (0..r).rev() { c[d] = rem % shape[d]; rem /= shape[d]; }
                let mut o = 0;
                for d in 0..r { o = o * oshape[d] + c[perm[d]]; }
                prop_assert_eq!(out[o], *v);
            }
        }
    }
}
