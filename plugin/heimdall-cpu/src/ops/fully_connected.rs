//! Fully-connected layer (TFLite FULLY_CONNECTED): `y = x W^T + b` for each input row.
//!
//! Dispatch: [`prepare`] packs the weights once, or (weights computed at run time, the passes
//! off) on every run.

use crate::kernels::gemm::PackedB;
use crate::kernels::{Epilogue, Par};
use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

const MIN_MACS_PER_PART: usize = 1 << 18;

/// A fully-connected layer with its weights packed for the matrix-product kernel.
#[derive(Clone, Debug)]
pub struct PackedFullyConnected {
    inputs: usize,
    outputs: usize,
    b: PackedB,
}

impl PackedFullyConnected {
    /// Packs weights `[outputs, inputs]` and an optional bias of `outputs` values.
    pub fn new(
        weights_out_in: &[f32],
        bias: Option<&[f32]>,
        inputs: usize,
        outputs: usize,
    ) -> PackedFullyConnected {
        debug_assert_eq!(weights_out_in.len(), inputs * outputs);
        let b = PackedB::new(inputs, outputs, bias, |i, o| weights_out_in[o * inputs + i]);
        PackedFullyConnected { inputs, outputs, b }
    }

    /// Input features per row.
    pub fn inputs(&self) -> usize {
        self.inputs
    }

    /// Output features per row.
    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// `output[r, o] = ep(bias[o] + sum_i input[r, i] * W[o, i])` for each of the
    /// `input.len() / inputs` rows; `output` is `[rows, outputs]`. Needs no scratch.
    pub fn run(&self, par: &Par, input: &[f32], output: &mut [f32], ep: &Epilogue) {
        let rows = input.len() / self.inputs.max(1);
        debug_assert_eq!(output.len(), rows * self.outputs);
        if self.outputs == 0 || rows == 0 {
            return;
        }
        let min_rows = MIN_MACS_PER_PART.div_ceil(self.inputs * self.outputs);
        par.for_rows(output, self.outputs, min_rows, |r, out| {
            self.b
                .gemm(&input[r.start * self.inputs..], self.inputs, r.len(), out);
            if !ep.is_identity() {
                ep.apply(out, r.start * self.outputs, self.outputs);
            }
        });
    }
}

impl Kernel for PackedFullyConnected {
    fn run(&self, io: StepIo<'_>) {
        PackedFullyConnected::run(self, io.par, io.inputs.get(0), io.out, io.ep);
    }
}

/// A FULLY_CONNECTED whose weights or bias are computed at run time: packed on every run.
struct DynamicFullyConnected {
    inputs: usize,
    outputs: usize,
}

impl Kernel for DynamicFullyConnected {
    fn run(&self, io: StepIo<'_>) {
        let bias = (io.inputs.len() > 2).then(|| io.inputs.get(2));
        PackedFullyConnected::new(io.inputs.get(1), bias, self.inputs, self.outputs).run(
            io.par,
            io.inputs.get(0),
            io.out,
            io.ep,
        );
    }
}

/// Prepares a FULLY_CONNECTED.
pub(crate) fn prepare(cx: &PrepareCx) -> Result<Prepared, String> {
    let w = cx.shape(1);
    let (inputs, outputs) = (w[1], w[0]);
    if cx.weights_dynamic() {
        return Ok(Prepared::new(DynamicFullyConnected { inputs, outputs }));
    }
    Ok(Prepared::new(PackedFullyConnected::new(
        cx.constant(1)?,
        cx.bias(2)?,
        inputs,
        outputs,
    )))
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // naive references index on purpose
mod tests {
    use super::*;
    use crate::kernels::Act;
    use crate::kernels::testutil::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(100))]
        #[test]
        fn fully_connected_matches_reference(rows in 1..5usize, inputs in 1..70usize, outputs in 1..40usize, seed in 0u64..1000, bias: bool) {
            let x = data(seed, rows * inputs);
            let wt = data(seed + 1, inputs * outputs);
            let b = bias.then(|| data(seed + 2, outputs));
            // The result, and the sums of the terms' magnitudes: a sum whose terms cancel
            // carries the rounding of its large terms (`assert_close_scaled`).
            let mut reference = vec![0.0; rows * outputs];
            let mut magnitude = vec![0.0; rows * outputs];
            for r in 0..rows {
                for o in 0..outputs {
                    let bias = b.as_ref().map_or(0.0, |b| b[o]) as f64;
                    let (mut s, mut m) = (bias, bias.abs());
                    for i in 0..inputs {
                        let t = x[r * inputs + i] as f64 * wt[o * inputs + i] as f64;
                        s += t;
                        m += t.abs();
                    }
                    reference[r * outputs + o] = s.max(0.0) as f32;
                    magnitude[r * outputs + o] = m as f32;
                }
            }
            let fc = PackedFullyConnected::new(&wt, b.as_deref(), inputs, outputs);
            let mut out = vec![f32::NAN; rows * outputs];
            fc.run(&Par::new(1), &x, &mut out, &Epilogue::act(Act::Relu));
            assert_close_scaled(&out, &reference, &magnitude);
        }
    }
}
