//! Reductions other than the mean (ONNX `ReduceSum`, `ReduceMax`, ...) over any set of axes of a
//! tensor of rank at most 4, accumulated in f64.

use super::nd::{dims4, for_each4, strides4};

/// How values combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fold {
    /// Sum.
    Sum,
    /// Mean.
    Mean,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
    /// Product.
    Prod,
    /// Sum of squares.
    SumSquare,
    /// Sum of absolute values.
    L1,
    /// Euclidean norm.
    L2,
    /// Log of the sum.
    LogSum,
    /// Log of the sum of exponentials.
    LogSumExp,
}

/// Reduces `input` of `shape` over `axes` into `output` (the kept dimensions, row-major).
pub fn reduce(input: &[f32], shape: &[usize], axes: &[usize], fold: Fold, output: &mut [f32]) {
    let off = 4 - shape.len();
    let d = dims4(shape);
    let mut od = d;
    for &a in axes {
        od[off + a] = 1;
    }
    let os = strides4(&od);
    let init = match fold {
        Fold::Max => f64::NEG_INFINITY,
        Fold::Min => f64::INFINITY,
        Fold::Prod => 1.0,
        _ => 0.0,
    };
    let mut acc = vec![init; output.len()];
    for_each4(&d, |i, c| {
        let o = (0..4).map(|k| c[k].min(od[k] - 1) * os[k]).sum::<usize>();
        let x = input[i] as f64;
        let a = &mut acc[o];
        *a = match fold {
            Fold::Sum | Fold::Mean | Fold::LogSum => *a + x,
            Fold::Max => a.max(x),
            Fold::Min => a.min(x),
            Fold::Prod => *a * x,
            Fold::SumSquare | Fold::L2 => *a + x * x,
            Fold::L1 => *a + x.abs(),
            Fold::LogSumExp => *a + x.exp(),
        };
    });
    let count: usize = axes.iter().map(|&a| shape[a]).product();
    for (o, a) in output.iter_mut().zip(acc) {
        *o = match fold {
            Fold::Mean => a / count.max(1) as f64,
            Fold::L2 => a.sqrt(),
            Fold::LogSum | Fold::LogSumExp => a.ln(),
            _ => a,
        } as f32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduce_over_axes_matches_reference() {
        // shape [2, 3]: rows 0..3 and 3..6.
        let x = [1.0, -2.0, 3.0, 4.0, 5.0, -6.0];
        let mut out = [0.0; 3];
        reduce(&x, &[2, 3], &[0], Fold::Sum, &mut out);
        assert_eq!(out, [5.0, 3.0, -3.0]);
        let mut out = [0.0; 2];
        reduce(&x, &[2, 3], &[1], Fold::Max, &mut out);
        assert_eq!(out, [3.0, 5.0]);
        reduce(&x, &[2, 3], &[1], Fold::L1, &mut out);
        assert_eq!(out, [6.0, 15.0]);
        let mut one = [0.0; 1];
        reduce(&x, &[2, 3], &[0, 1], Fold::Prod, &mut one);
        assert_eq!(one, [720.0]);
        reduce(&x, &[2, 3], &[0, 1], Fold::Mean, &mut one);
        assert_eq!(one, [5.0 / 6.0]);
    }
}
