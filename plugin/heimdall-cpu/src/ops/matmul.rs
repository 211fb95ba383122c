//! Batched matrix product with broadcast batch dimensions (rank at most 4), both operands
//! computed at run time (ONNX `MatMul`; constant right-hand sides become fully connected ops).
//!
//! Dispatch: [`prepare`].

use crate::kernels::nd::dims4;
use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

/// `output[..., m, n] = sum_k a[..., m, k] * b[..., k, n]`.
pub fn matmul(a: &[f32], a_shape: &[usize], b: &[f32], b_shape: &[usize], output: &mut [f32]) {
    let (da, db) = (dims4(a_shape), dims4(b_shape));
    let (m, k, n) = (da[2], da[3], db[3]);
    let batch = [da[0].max(db[0]), da[1].max(db[1])];
    let mut o = 0;
    for i in 0..batch[0] {
        for j in 0..batch[1] {
            let pick = |d: &[usize; 4]| ((i % d[0]) * d[1] + (j % d[1])) * d[2] * d[3];
            let (pa, pb) = (&a[pick(&da)..], &b[pick(&db)..]);
            let out = &mut output[o..o + m * n];
            out.fill(0.0);
            for r in 0..m {
                for kk in 0..k {
                    let x = pa[r * k + kk];
                    for (y, w) in out[r * n..(r + 1) * n]
                        .iter_mut()
                        .zip(&pb[kk * n..(kk + 1) * n])
                    {
                        *y += x * w;
                    }
                }
            }
            o += m * n;
        }
    }
}

/// A product of two operands of known shapes.
struct MatMul {
    a: Vec<usize>,
    b: Vec<usize>,
}

impl Kernel for MatMul {
    fn run(&self, io: StepIo<'_>) {
        matmul(io.inputs.get(0), &self.a, io.inputs.get(1), &self.b, io.out);
    }
}

/// Prepares a MATMUL.
pub(crate) fn prepare(cx: &PrepareCx) -> Result<Prepared, String> {
    Ok(Prepared::new(MatMul {
        a: cx.shape(0),
        b: cx.shape(1),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::{assert_close, data};

    #[test]
    fn broadcast_matmul_matches_reference() {
        let (ash, bsh) = ([2, 3, 4], [1, 4, 5]);
        let (a, b) = (data(1, 24), data(2, 20));
        let mut out = vec![0.0; 30];
        matmul(&a, &ash, &b, &bsh, &mut out);
        let mut reference = vec![0.0; 30];
        for t in 0..2 {
            for r in 0..3 {
                for c in 0..5 {
                    reference[t * 15 + r * 5 + c] = (0..4)
                        .map(|k| a[t * 12 + r * 4 + k] as f64 * b[k * 5 + c] as f64)
                        .sum::<f64>() as f32;
                }
            }
        }
        assert_close(&out, &reference);
    }
}
