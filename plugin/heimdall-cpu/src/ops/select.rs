//! Element-wise select with NumPy broadcasting of three operands (ONNX `Where`), rank <= 4.
//!
//! Dispatch: [`prepare`] records the operands' shapes.

use crate::kernels::nd::{dims4, for_each4, strides4};
use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

/// Strides of `shape` broadcast to rank 4 (0 along broadcast axes).
fn bstrides(shape: &[usize]) -> [usize; 4] {
    let d = dims4(shape);
    let s = strides4(&d);
    std::array::from_fn(|k| if d[k] == 1 { 0 } else { s[k] })
}

/// `output = cond != 0 ? x : y` over the broadcast of the three shapes (`out_shape`).
pub fn select(
    cond: (&[f32], &[usize]),
    x: (&[f32], &[usize]),
    y: (&[f32], &[usize]),
    out_shape: &[usize],
    output: &mut [f32],
) {
    let (sc, sx, sy) = (bstrides(cond.1), bstrides(x.1), bstrides(y.1));
    let at = |s: &[usize; 4], c: &[usize; 4]| (0..4).map(|k| s[k] * c[k]).sum::<usize>();
    for_each4(&dims4(out_shape), |i, c| {
        output[i] = if cond.0[at(&sc, &c)] != 0.0 {
            x.0[at(&sx, &c)]
        } else {
            y.0[at(&sy, &c)]
        };
    });
}

/// A select over three broadcast operands.
struct Select {
    shapes: [Vec<usize>; 3],
    out: Vec<usize>,
}

impl Kernel for Select {
    fn run(&self, io: StepIo<'_>) {
        let i = io.inputs;
        select(
            (i.get(0), &self.shapes[0]),
            (i.get(1), &self.shapes[1]),
            (i.get(2), &self.shapes[2]),
            &self.out,
            io.out,
        );
    }
}

/// Prepares a SELECT.
pub(crate) fn prepare(cx: &PrepareCx) -> Result<Prepared, String> {
    Ok(Prepared::new(Select {
        shapes: [cx.shape(0), cx.shape(1), cx.shape(2)],
        out: cx.out_shape(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_broadcasts_like_numpy() {
        // np.where([[1],[0]], [1, 2, 3], -1.0) -> [[1, 2, 3], [-1, -1, -1]]
        let mut out = [0.0; 6];
        select(
            (&[1.0, 0.0], &[2, 1]),
            (&[1.0, 2.0, 3.0], &[3]),
            (&[-1.0], &[]),
            &[2, 3],
            &mut out,
        );
        assert_eq!(out, [1.0, 2.0, 3.0, -1.0, -1.0, -1.0]);
    }
}
