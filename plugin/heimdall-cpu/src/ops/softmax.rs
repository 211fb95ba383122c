//! Softmax and log-softmax along one axis.
//!
//! Dispatch: [`prepare`].

use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

/// Softmax of `input` (of `shape`) along `axis` into `output`; `log` gives log-softmax.
pub fn softmax(input: &[f32], shape: &[usize], axis: usize, log: bool, output: &mut [f32]) {
    let n = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| o * n * inner + k * inner + i;
            let max = (0..n)
                .map(|k| input[at(k)])
                .fold(f32::NEG_INFINITY, f32::max);
            let sum: f32 = (0..n).map(|k| (input[at(k)] - max).exp()).sum();
            for k in 0..n {
                let z = input[at(k)] - max;
                output[at(k)] = if log { z - sum.ln() } else { z.exp() / sum };
            }
        }
    }
}

/// A softmax of an input of known shape.
struct Softmax {
    shape: Vec<usize>,
    axis: usize,
    log: bool,
}

impl Kernel for Softmax {
    fn run(&self, io: StepIo<'_>) {
        softmax(io.inputs.get(0), &self.shape, self.axis, self.log, io.out);
    }
}

/// Prepares a SOFTMAX (`log`: LOG_SOFTMAX) along `axis`.
pub(crate) fn prepare(cx: &PrepareCx, axis: usize, log: bool) -> Result<Prepared, String> {
    Ok(Prepared::new(Softmax {
        shape: cx.shape(0),
        axis,
        log,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::{assert_close, data};

    #[test]
    fn softmax_matches_reference() {
        let shape = [2, 5, 3];
        let x = data(7, 30);
        let mut out = vec![0.0; 30];
        softmax(&x, &shape, 1, false, &mut out);
        let mut reference = vec![0.0; 30];
        for a in 0..2 {
            for c in 0..3 {
                let e: Vec<f64> = (0..5)
                    .map(|k| (x[a * 15 + k * 3 + c] as f64).exp())
                    .collect();
                let s: f64 = e.iter().sum();
                for k in 0..5 {
                    reference[a * 15 + k * 3 + c] = (e[k] / s) as f32;
                }
            }
        }
        assert_close(&out, &reference);
        let mut logs = vec![0.0; 30];
        softmax(&x, &shape, 1, true, &mut logs);
        let ln: Vec<f32> = reference.iter().map(|v| v.ln()).collect();
        assert_close(&logs, &ln);
    }
}
