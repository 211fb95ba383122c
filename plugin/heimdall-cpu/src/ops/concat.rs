//! CONCATENATION along one axis: exact copies. Shapes have rank at most 4. The output's
//! outer rows (one per index of the dimensions before the axis: a pixel, for channels) are
//! split over [`Par`].
//!
//! Dispatch: [`prepare`] records the inputs' shapes.

use crate::kernels::Par;
use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

/// Values a part copies at least before the rows are split over threads (about 2 µs of one
/// core's copying; PP-OCR's first concatenation, 368x656 pixels of 48 channels, ran 5.8 ms on
/// one thread of seven, `docs/measurements/contention/2026-12-02-h200-events`).
const MIN_VALUES_PER_PART: usize = 1 << 14;

/// Concatenates `inputs` (each a tensor and its shape, all of one rank, equal except along
/// `axis`) along `axis` into `output`.
pub fn concat(inputs: &[(&[f32], &[usize])], axis: usize, output: &mut [f32]) {
    let Some((_, first)) = inputs.first() else {
        return;
    };
    debug_assert!(axis < first.len());
    let outer: usize = first[..axis].iter().product();
    let mut o = 0;
    for i in 0..outer {
        for (data, shape) in inputs {
            let chunk: usize = shape[axis..].iter().product();
            output[o..o + chunk].copy_from_slice(&data[i * chunk..(i + 1) * chunk]);
            o += chunk;
        }
    }
    debug_assert_eq!(o, output.len());
}

/// [`concat()`] split over `par`'s threads by the output's outer rows (each part copies the
/// inputs' pieces of its rows, in order): the same values, whatever the split.
pub fn concat_on(par: &Par, inputs: &[(&[f32], &[usize])], axis: usize, output: &mut [f32]) {
    let Some((_, first)) = inputs.first() else {
        return;
    };
    debug_assert!(axis < first.len());
    let outer: usize = first[..axis].iter().product();
    let row_len = output.len().checked_div(outer).unwrap_or(0);
    if row_len == 0 || par.chunks(output.len(), MIN_VALUES_PER_PART) < 2 {
        return concat(inputs, axis, output);
    }
    debug_assert_eq!(row_len * outer, output.len());
    let min_rows = MIN_VALUES_PER_PART.div_ceil(row_len);
    par.for_rows(output, row_len, min_rows, |rows, out| {
        let mut o = 0;
        for i in rows {
            for (data, shape) in inputs {
                let chunk: usize = shape[axis..].iter().product();
                out[o..o + chunk].copy_from_slice(&data[i * chunk..(i + 1) * chunk]);
                o += chunk;
            }
        }
    });
}

/// A concatenation of inputs of known shapes.
struct Concat {
    shapes: Vec<Vec<usize>>,
    axis: usize,
}

impl Kernel for Concat {
    fn run(&self, io: StepIo<'_>) {
        // No allocation per run for the usual few inputs (the models concatenate 2 or 3).
        const STACK: usize = 8;
        let shapes = &self.shapes;
        if shapes.len() <= STACK {
            let mut parts: [(&[f32], &[usize]); STACK] = [(&[], &[]); STACK];
            for (i, shape) in shapes.iter().enumerate() {
                parts[i] = (io.inputs.get(i), shape.as_slice());
            }
            concat_on(io.par, &parts[..shapes.len()], self.axis, io.out);
        } else {
            let parts: Vec<(&[f32], &[usize])> = (0..shapes.len())
                .map(|i| (io.inputs.get(i), shapes[i].as_slice()))
                .collect();
            concat_on(io.par, &parts, self.axis, io.out);
        }
    }
}

/// Prepares a CONCATENATION along `axis`.
pub(crate) fn prepare(cx: &PrepareCx, axis: usize) -> Result<Prepared, String> {
    Ok(Prepared::new(Concat {
        shapes: (0..cx.op.inputs.len()).map(|i| cx.shape(i)).collect(),
        axis,
    }))
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // naive references index on purpose
mod tests {
    use super::*;
    use crate::kernels::testutil::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn concat_matches_reference(shape in proptest::collection::vec(1..4usize, 1..=4), axis_pick in 0..4usize, sizes in proptest::collection::vec(1..4usize, 1..4), seed in 0u64..1000) {
            let axis = axis_pick % shape.len();
            let tensors: Vec<(Vec<f32>, Vec<usize>)> = sizes.iter().enumerate().map(|(i, &s)| {
                let mut sh = shape.clone();
                sh[axis] = s;
                (data(seed + i as u64, sh.iter().product()), sh)
            }).collect();
            let mut oshape = shape.clone();
            oshape[axis] = sizes.iter().sum();
            let total: usize = oshape.iter().product();
            let reference: Vec<f32> = (0..total).map(|i| {
                let mut c = coords(i, &oshape);
                for (data, sh) in &tensors {
                    if c[axis] < sh[axis] { return data[flat(&c, sh)]; }
                    c[axis] -= sh[axis];
                }
                unreachable!()
            }).collect();
            let inputs: Vec<(&[f32], &[usize])> = tensors.iter().map(|(d, s)| (d.as_slice(), s.as_slice())).collect();
            let mut out = vec![f32::NAN; total];
            concat(&inputs, axis, &mut out);
            prop_assert_eq!(out, reference);
        }
    }
}
