//! 2-D convolution (TFLite CONV_2D), NHWC, batch 1.
//!
//! The filter (OHWI) is packed once into a [`PackedB`] of shape `[k_h * k_w * in_c, out_c]`.
//! A 1x1 stride-1 unpadded convolution is one matrix product of the input
//! `[in_h * in_w, in_c]` with it; every other convolution gathers blocks of output pixels into an
//! im2col buffer (the caller's scratch) and runs the same product. Output pixels are split into
//! contiguous ranges over [`Par`]; the epilogue runs on each block while it is in cache.

use super::gemm::PackedB;
use super::{Epilogue, Par, Window};

/// Multiply-accumulates a part must have at least before the work is split.
const MIN_MACS_PER_PART: usize = 1 << 18;

/// A convolution with its filter packed for the matrix-product kernel.
#[derive(Clone, Debug)]
pub struct PackedConv {
    w: Window,
    b: PackedB,
    direct: bool,
    block: usize,
}

/// Values of scratch a convolution of geometry `w` needs when run with `threads` threads
/// (0 for a 1x1 stride-1 unpadded convolution).
pub fn conv_scratch_len(w: &Window, threads: usize) -> usize {
    if is_direct(w) {
        0
    } else {
        threads.max(1) * block_pixels(w) * patch_len(w)
    }
}

fn is_direct(w: &Window) -> bool {
    w.k_h == 1
        && w.k_w == 1
        && w.stride_h == 1
        && w.stride_w == 1
        && w.pad_top == 0
        && w.pad_left == 0
        && w.in_h == w.out_h
        && w.in_w == w.out_w
}

fn patch_len(w: &Window) -> usize {
    w.k_h * w.k_w * w.in_c
}

/// Output pixels per im2col (or direct) block: the block's im2col rows stay in L2.
fn block_pixels(w: &Window) -> usize {
    let px = w.out_h * w.out_w;
    (16384 / patch_len(w).max(1)).clamp(12, 480).min(px.max(1))
}

impl PackedConv {
    /// Packs an OHWI filter `[out_c, k_h, k_w, in_c]` and an optional bias of `out_c` values
    /// for the geometry `w`.
    pub fn new(filter_ohwi: &[f32], bias: Option<&[f32]>, w: Window) -> PackedConv {
        let kdim = patch_len(&w);
        debug_assert_eq!(filter_ohwi.len(), w.out_c * kdim);
        let b = PackedB::new(kdim, w.out_c, bias, |k, o| filter_ohwi[o * kdim + k]);
        PackedConv {
            w,
            b,
            direct: is_direct(&w),
            block: block_pixels(&w),
        }
    }

    /// The geometry this convolution was packed for.
    pub fn window(&self) -> &Window {
        &self.w
    }

    /// Values of scratch [`PackedConv::run`] needs with `par` (see [`conv_scratch_len`]).
    pub fn scratch_len(&self, par: &Par) -> usize {
        conv_scratch_len(&self.w, par.threads())
    }

    /// `output[oy, ox, o] = ep(bias[o] + sum input[iy, ix, i] * filter[o, ky, kx, i])` over the
    /// window; `input` is `[in_h, in_w, in_c]`, `output` `[out_h, out_w, out_c]`, `scratch` at
    /// least [`PackedConv::scratch_len`] values.
    pub fn run(
        &self,
        par: &Par,
        input: &[f32],
        output: &mut [f32],
        scratch: &mut [f32],
        ep: &Epilogue,
    ) {
        let w = &self.w;
        let (n, kdim) = (w.out_c, patch_len(w));
        let px = w.out_h * w.out_w;
        debug_assert_eq!(input.len(), w.in_h * w.in_w * w.in_c);
        debug_assert_eq!(output.len(), px * n);
        if px == 0 || n == 0 {
            return;
        }
        let per_part = if self.direct { 0 } else { self.block * kdim };
        let min_rows = MIN_MACS_PER_PART.div_ceil((kdim * n).max(1));
        let parts = par.parts(px, min_rows);
        let scratch = &mut scratch[..per_part * parts];
        par.for_rows_scratch(output, n, min_rows, scratch, per_part, |rows, out, sc| {
            let mut m0 = rows.start;
            while m0 < rows.end {
                let mb = self.block.min(rows.end - m0);
                let c = &mut out[(m0 - rows.start) * n..(m0 - rows.start + mb) * n];
                if self.direct {
                    self.b.gemm(&input[m0 * w.in_c..], w.in_c, mb, c);
                } else {
                    let col = &mut sc[..mb * kdim];
                    im2col(w, input, m0, mb, col);
                    self.b.gemm(col, kdim, mb, c);
                }
                if !ep.is_identity() {
                    ep.apply(c, m0 * n, n);
                }
                m0 += mb;
            }
        });
    }
}

/// Gathers the receptive fields of output pixels `m0..m0 + mb` into `col` (`[mb, k_h*k_w*in_c]`,
/// zeros where the window hangs over the padding).
fn im2col(w: &Window, input: &[f32], m0: usize, mb: usize, col: &mut [f32]) {
    let (c, kw) = (w.in_c, w.k_w);
    let kdim = patch_len(w);
    for (p, row) in (m0..m0 + mb).zip(col.chunks_exact_mut(kdim)) {
        let (oy, ox) = (p / w.out_w, p % w.out_w);
        for ky in 0..w.k_h {
            let dst = &mut row[ky * kw * c..(ky + 1) * kw * c];
            let iy = (oy * w.stride_h + ky * w.dil_h).wrapping_sub(w.pad_top);
            if iy >= w.in_h {
                dst.fill(0.0);
                continue;
            }
            let src_row = &input[iy * w.in_w * c..(iy + 1) * w.in_w * c];
            let ix0 = (ox * w.stride_w).wrapping_sub(w.pad_left);
            if w.dil_w == 1 && ix0 < w.in_w && ix0 + kw <= w.in_w {
                dst.copy_from_slice(&src_row[ix0 * c..(ix0 + kw) * c]);
                continue;
            }
            for kx in 0..kw {
                let ix = (ox * w.stride_w + kx * w.dil_w).wrapping_sub(w.pad_left);
                let d = &mut dst[kx * c..(kx + 1) * c];
                if ix < w.in_w {
                    d.copy_from_slice(&src_row[ix * c..(ix + 1) * c]);
                } else {
                    d.fill(0.0);
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // naive references index on purpose
mod tests {
    use super::*;
    use crate::kernels::Act;
    use crate::kernels::testutil::*;
    use proptest::prelude::*;

    /// A convolution problem with a naive reference.
    #[derive(Debug)]
    struct ConvProblem {
        w: Window,
        input: Vec<f32>,
        filter: Vec<f32>,
        bias: Option<Vec<f32>>,
        residual: Option<Vec<f32>>,
        relu6: bool,
    }

    impl ConvProblem {
        fn new(w: Window, seed: u64, bias: bool, residual: bool, relu6: bool) -> Self {
            let input = data(seed, w.in_h * w.in_w * w.in_c);
            let filter = data(seed + 1, w.out_c * w.k_h * w.k_w * w.in_c);
            let bias = bias.then(|| data(seed + 2, w.out_c));
            let residual = residual.then(|| data(seed + 3, w.out_h * w.out_w * w.out_c));
            ConvProblem {
                w,
                input,
                filter,
                bias,
                residual,
                relu6,
            }
        }

        fn reference(&self) -> Vec<f32> {
            let w = &self.w;
            let mut out = vec![0.0; w.out_h * w.out_w * w.out_c];
            for oy in 0..w.out_h {
                for ox in 0..w.out_w {
                    for o in 0..w.out_c {
                        let mut s = self.bias.as_ref().map_or(0.0, |b| b[o]) as f64;
                        for ky in 0..w.k_h {
                            for kx in 0..w.k_w {
                                let iy =
                                    (oy * w.stride_h + ky * w.dil_h) as isize - w.pad_top as isize;
                                let ix =
                                    (ox * w.stride_w + kx * w.dil_w) as isize - w.pad_left as isize;
                                if iy < 0
                                    || ix < 0
                                    || iy >= w.in_h as isize
                                    || ix >= w.in_w as isize
                                {
                                    continue;
                                }
                                for i in 0..w.in_c {
                                    let x = self.input
                                        [(iy as usize * w.in_w + ix as usize) * w.in_c + i];
                                    let f =
                                        self.filter[((o * w.k_h + ky) * w.k_w + kx) * w.in_c + i];
                                    s += x as f64 * f as f64;
                                }
                            }
                        }
                        let idx = (oy * w.out_w + ox) * w.out_c + o;
                        if let Some(r) = &self.residual {
                            s += r[idx] as f64;
                        }
                        if self.relu6 {
                            s = s.clamp(0.0, 6.0);
                        }
                        out[idx] = s as f32;
                    }
                }
            }
            out
        }

        fn run(&self, par: &Par) -> Vec<f32> {
            let conv = PackedConv::new(&self.filter, self.bias.as_deref(), self.w);
            let mut out = vec![f32::NAN; self.w.out_h * self.w.out_w * self.w.out_c];
            let mut scratch = vec![f32::NAN; conv.scratch_len(par)];
            let ep = Epilogue {
                residual: self.residual.as_deref(),
                act: if self.relu6 { Act::Relu6 } else { Act::None },
            };
            conv.run(par, &self.input, &mut out, &mut scratch, &ep);
            out
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn conv_matches_reference(w in windows(20, true), seed in 0u64..1000, bias: bool, residual: bool, relu6: bool) {
            let p = ConvProblem::new(w, seed, bias, residual, relu6);
            assert_close(&p.run(&Par::new(1)), &p.reference());
        }
    }

    #[test]
    fn conv_1x1_and_first_layer_shapes() {
        for w in [
            window(17, 9, 13, 37, (1, 1), (1, 1), 1, Padding::Valid),
            window(33, 31, 3, 24, (3, 3), (2, 2), 1, Padding::Same),
            window(16, 16, 32, 16, (1, 1), (2, 2), 1, Padding::Same),
            window(9, 9, 8, 8, (3, 3), (3, 3), 1, Padding::Valid),
        ] {
            let p = ConvProblem::new(w, 7, true, true, false);
            assert_close(&p.run(&Par::new(1)), &p.reference());
        }
    }

    #[test]
    fn conv_hand_computed() {
        // 2x2 input, 1 channel, 2x2 filter of ones, SAME (pad bottom/right only): sums of the
        // window anchored at each pixel.
        let w = window(2, 2, 1, 1, (2, 2), (1, 1), 1, Padding::Same);
        let conv = PackedConv::new(&[1.0, 1.0, 1.0, 1.0], Some(&[0.5]), w);
        let mut out = vec![0.0; 4];
        conv.run(
            &Par::new(1),
            &[1.0, 2.0, 3.0, 4.0],
            &mut out,
            &mut vec![0.0; conv.scratch_len(&Par::new(1))],
            &Epilogue::NONE,
        );
        assert_eq!(out, vec![10.5, 6.5, 7.5, 4.5]);
    }

    #[test]
    fn conv_threads_bit_identical() {
        for w in [
            window(64, 64, 32, 64, (1, 1), (1, 1), 1, Padding::Valid),
            window(37, 41, 19, 21, (3, 3), (2, 2), 1, Padding::Same),
        ] {
            let p = ConvProblem::new(w, 3, true, true, true);
            assert_eq!(p.run(&Par::new(1)), p.run(&Par::new(2)));
            assert_eq!(p.run(&Par::new(1)), p.run(&Par::new(3)));
        }
    }
}
