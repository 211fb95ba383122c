//! Max and average pooling (TFLite MAX_POOL_2D, AVERAGE_POOL_2D), NHWC, batch 1.
//!
//! Padded positions are skipped: the maximum is over valid positions only and the average
//! divides by the count of valid positions, as TFLite does. `Window::out_c` must equal `in_c`.
//! Output rows are split over [`Par`]; the epilogue (fused activation) runs per row.
//!
//! Dispatch: [`prepare`] resolves the window of a MAX_POOL_2D or AVERAGE_POOL_2D.

use heimdall_ir::{ConvAttrs, PoolAttrs};

use crate::kernels::window::valid_taps;
use crate::kernels::{Epilogue, Par, Window};
use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

const MIN_VALUES_PER_PART: usize = 1 << 16;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Max,
    Avg,
}

/// `output[oy, ox, c] = ep(max of input[iy, ix, c] over the valid window positions)`.
pub fn max_pool(par: &Par, w: &Window, input: &[f32], output: &mut [f32], ep: &Epilogue) {
    pool(par, w, input, output, ep, Kind::Max);
}

/// `output[oy, ox, c] = ep(mean of input[iy, ix, c] over the valid window positions)`.
pub fn avg_pool(par: &Par, w: &Window, input: &[f32], output: &mut [f32], ep: &Epilogue) {
    pool(par, w, input, output, ep, Kind::Avg);
}

fn pool(par: &Par, w: &Window, input: &[f32], output: &mut [f32], ep: &Epilogue, kind: Kind) {
    let c = w.in_c;
    debug_assert_eq!(w.out_c, c);
    debug_assert_eq!(input.len(), w.in_h * w.in_w * c);
    let row_len = w.out_w * c;
    debug_assert_eq!(output.len(), w.out_h * row_len);
    if row_len == 0 {
        return;
    }
    let min_rows = MIN_VALUES_PER_PART.div_ceil(row_len * w.k_h * w.k_w);
    par.for_rows(output, row_len, min_rows, |rows, out| {
        for (oy, out_row) in rows.zip(out.chunks_exact_mut(row_len)) {
            let (ky_lo, ky_hi) = valid_taps(oy, w.stride_h, w.dil_h, w.pad_top, w.in_h, w.k_h);
            for (ox, o) in out_row.chunks_exact_mut(c).enumerate() {
                let (kx_lo, kx_hi) = valid_taps(ox, w.stride_w, w.dil_w, w.pad_left, w.in_w, w.k_w);
                o.fill(if kind == Kind::Max {
                    f32::NEG_INFINITY
                } else {
                    0.0
                });
                for ky in ky_lo..ky_hi {
                    let iy = oy * w.stride_h + ky * w.dil_h - w.pad_top;
                    for kx in kx_lo..kx_hi {
                        let ix = ox * w.stride_w + kx * w.dil_w - w.pad_left;
                        let x = &input[(iy * w.in_w + ix) * c..][..c];
                        match kind {
                            Kind::Max => o
                                .iter_mut()
                                .zip(x)
                                .for_each(|(o, x)| *o = if *x > *o { *x } else { *o }),
                            Kind::Avg => o.iter_mut().zip(x).for_each(|(o, x)| *o += *x),
                        }
                    }
                }
                if kind == Kind::Avg {
                    let count = ((ky_hi - ky_lo) * (kx_hi - kx_lo)) as f32;
                    if count > 0.0 {
                        o.iter_mut().for_each(|o| *o /= count);
                    }
                }
            }
            if !ep.is_identity() {
                ep.apply(out_row, oy * row_len, c);
            }
        }
    });
}

/// A pool over a resolved window.
struct Pool {
    w: Window,
    kind: Kind,
}

impl Kernel for Pool {
    fn run(&self, io: StepIo<'_>) {
        pool(io.par, &self.w, io.inputs.get(0), io.out, io.ep, self.kind);
    }
}

/// Prepares a MAX_POOL_2D (`max`) or AVERAGE_POOL_2D.
pub(crate) fn prepare(cx: &PrepareCx, p: &PoolAttrs, max: bool) -> Result<Prepared, String> {
    let a = ConvAttrs {
        stride: p.stride,
        dilation: [1, 1],
        pad: p.pad,
    };
    let kind = if max { Kind::Max } else { Kind::Avg };
    Ok(Prepared::new(Pool {
        w: cx.window(p.filter, &a),
        kind,
    }))
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // naive references index on purpose
mod tests {
    use super::*;
    use crate::kernels::testutil::*;
    use proptest::prelude::*;

    fn reference(w: &Window, input: &[f32], max: bool) -> Vec<f32> {
        let mut out = vec![0.0; w.out_h * w.out_w * w.out_c];
        for oy in 0..w.out_h {
            for ox in 0..w.out_w {
                for ch in 0..w.in_c {
                    let mut vals = vec![];
                    for ky in 0..w.k_h {
                        for kx in 0..w.k_w {
                            let iy = (oy * w.stride_h + ky * w.dil_h) as isize - w.pad_top as isize;
                            let ix =
                                (ox * w.stride_w + kx * w.dil_w) as isize - w.pad_left as isize;
                            if iy >= 0 && ix >= 0 && iy < w.in_h as isize && ix < w.in_w as isize {
                                vals.push(
                                    input[(iy as usize * w.in_w + ix as usize) * w.in_c + ch]
                                        as f64,
                                );
                            }
                        }
                    }
                    let v = if max {
                        vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
                    } else {
                        vals.iter().sum::<f64>() / vals.len() as f64
                    };
                    out[(oy * w.out_w + ox) * w.out_c + ch] = v as f32;
                }
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn pool_matches_reference(w in windows(20, false), seed in 0u64..1000, max: bool) {
            // TFLite pools never have dilation, and every window holds a valid position.
            let w = Window { dil_h: 1, dil_w: 1, ..w };
            let w = crate::kernels::testutil::window(w.in_h, w.in_w, w.in_c, w.in_c, (w.k_h.min(w.in_h), w.k_w.min(w.in_w)), (w.stride_h, w.stride_w), 1, Padding::Same);
            let input = data(seed, w.in_h * w.in_w * w.in_c);
            let mut out = vec![f32::NAN; w.out_h * w.out_w * w.out_c];
            if max { max_pool(&Par::new(1), &w, &input, &mut out, &Epilogue::NONE) } else { avg_pool(&Par::new(1), &w, &input, &mut out, &Epilogue::NONE) }
            assert_close(&out, &reference(&w, &input, max));
        }
    }

    #[test]
    fn avg_pool_2x2_with_padding_hand_computed() {
        // 3x3 input, 2x2 window stride 2 SAME: 2x2 output, windows at the right/bottom edge
        // hang over the padding and average only their valid values.
        let w = window(3, 3, 1, 1, (2, 2), (2, 2), 1, Padding::Same);
        assert_eq!((w.out_h, w.out_w, w.pad_top, w.pad_left), (2, 2, 0, 0));
        let input = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0];
        let mut out = vec![0.0; 4];
        avg_pool(&Par::new(1), &w, &input, &mut out, &Epilogue::NONE);
        assert_eq!(out, vec![3.0, 4.5, 7.5, 9.0]);
        max_pool(&Par::new(1), &w, &input, &mut out, &Epilogue::NONE);
        assert_eq!(out, vec![5.0, 6.0, 8.0, 9.0]);
    }

    #[test]
    fn pool_threads_bit_identical() {
        let w = window(64, 64, 24, 24, (3, 3), (2, 2), 1, Padding::Same);
        let input = data(1, 64 * 64 * 24);
        let mut a = vec![0.0; w.out_h * w.out_w * 24];
        let mut b = a.clone();
        avg_pool(&Par::new(1), &w, &input, &mut a, &Epilogue::NONE);
        avg_pool(&Par::new(2), &w, &input, &mut b, &Epilogue::NONE);
        assert_eq!(a, b);
    }
}
