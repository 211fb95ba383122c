//! Transposed convolution (TFLite TRANSPOSE_CONV and MediaPipe's
//! `Convolution2DTransposeBias`), NHWC, batch 1.
//!
//! Geometry in [`Window`]: `in_*` is the transposed convolution's input, `out_*` its output
//! (the explicit output shape), `k_*` the filter, `stride_*` the upsampling factor, `pad_top` /
//! `pad_left` the padding resolved by the importer. Input pixel `(iy, ix)` and tap `(ky, kx)`
//! contribute to output pixel `(iy * stride_h + ky * dil_h - pad_top, ix * stride_w +
//! kx * dil_w - pad_left)` when it lies inside the output.
//!
//! Computed as one matrix product `[in_h * in_w, in_c] x [in_c, k_h * k_w * out_c]` into the
//! caller's scratch, then a gather per output row (bias first, then taps in `(ky, kx)` order for each pixel),
//! so no two threads ever add into the same value and the result does not depend on threads.
//!
//! Dispatch: [`prepare`] packs the filter once, or (weights computed at run time, the passes
//! off) on every run.

use heimdall_ir::ConvAttrs;

use crate::kernels::gemm::PackedB;
use crate::kernels::tail::{Tail, finish};
use crate::kernels::{Epilogue, Par, Window};
use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

const MIN_MACS_PER_PART: usize = 1 << 18;

/// A transposed convolution with its filter packed for the matrix-product kernel.
#[derive(Clone, Debug)]
pub struct PackedTransposeConv {
    w: Window,
    b: PackedB,
    bias: Vec<f32>,
    /// Ops after the products fused into the convolution.
    tail: Option<Tail>,
}

/// Values of scratch a transposed convolution of geometry `w` needs (any thread count).
pub fn transpose_conv_scratch_len(w: &Window) -> usize {
    w.in_h * w.in_w * w.k_h * w.k_w * w.out_c
}

impl PackedTransposeConv {
    /// Packs a filter `[out_c, k_h, k_w, in_c]` and an optional bias of `out_c` values for the
    /// geometry `w`.
    pub fn new(filter_ohwi: &[f32], bias: Option<&[f32]>, w: Window) -> PackedTransposeConv {
        let taps = w.k_h * w.k_w;
        debug_assert_eq!(filter_ohwi.len(), w.out_c * taps * w.in_c);
        let (ic, oc) = (w.in_c, w.out_c);
        let b = PackedB::new(ic, taps * oc, None, |i, j| {
            let (t, o) = (j / oc, j % oc);
            filter_ohwi[(o * taps + t) * ic + i]
        });
        let bias = bias.map_or_else(|| vec![0.0; oc], <[f32]>::to_vec);
        PackedTransposeConv {
            w,
            b,
            bias,
            tail: None,
        }
    }

    /// The same transposed convolution followed by `tail` (the per-channel add of a constant,
    /// and a GELU, fused into it): `gelu?(ep(conv + shift[c]))`, each step the separate op's,
    /// so the bits are those of the convolution then the ops.
    pub fn with_tail(self, tail: Tail) -> PackedTransposeConv {
        assert_eq!(
            tail.shift.len(),
            self.w.out_c,
            "transpose conv: tail channels"
        );
        PackedTransposeConv {
            tail: Some(tail),
            ..self
        }
    }

    /// The geometry this transposed convolution was packed for.
    pub fn window(&self) -> &Window {
        &self.w
    }

    /// Values of scratch [`PackedTransposeConv::run`] needs.
    pub fn scratch_len(&self) -> usize {
        transpose_conv_scratch_len(&self.w)
    }

    /// `output = ep(bias + transposed convolution of input)`; `input` is
    /// `[in_h, in_w, in_c]`, `output` `[out_h, out_w, out_c]`, `scratch` at least
    /// [`PackedTransposeConv::scratch_len`] values.
    pub fn run(
        &self,
        par: &Par,
        input: &[f32],
        output: &mut [f32],
        scratch: &mut [f32],
        ep: &Epilogue,
    ) {
        let w = &self.w;
        let (oc, taps) = (w.out_c, w.k_h * w.k_w);
        let n = taps * oc;
        debug_assert_eq!(input.len(), w.in_h * w.in_w * w.in_c);
        debug_assert_eq!(output.len(), w.out_h * w.out_w * oc);
        let px_in = w.in_h * w.in_w;
        if n == 0 || output.is_empty() {
            return;
        }
        let col = &mut scratch[..px_in * n];
        let min_rows = MIN_MACS_PER_PART.div_ceil((n * w.in_c).max(1));
        par.for_rows(col, n, min_rows, |rows, c| {
            self.b
                .gemm(&input[rows.start * w.in_c..], w.in_c, rows.len(), c);
        });
        let col = &*col;
        let row_len = w.out_w * oc;
        let min_rows = (1usize << 15).div_ceil((row_len * taps).max(1));
        par.for_rows(output, row_len, min_rows, |rows, out| {
            for (oy, out_row) in rows.zip(out.chunks_exact_mut(row_len)) {
                if oc == 1 {
                    out_row.fill(self.bias[0]);
                } else {
                    for o in out_row.chunks_exact_mut(oc) {
                        o.copy_from_slice(&self.bias);
                    }
                }
                // Taps in (ky, kx) order for every pixel of the row; for one tap, the input
                // columns that reach the row (no division per pixel).
                for ky in 0..w.k_h {
                    let Some(iy) = source(oy, ky, w.dil_h, w.pad_top, w.stride_h, w.in_h) else {
                        continue;
                    };
                    let col_row = &col[iy * w.in_w * n..(iy + 1) * w.in_w * n];
                    for kx in 0..w.k_w {
                        let (ix_lo, ix_hi) = tap_columns(w, kx);
                        if ix_hi == ix_lo {
                            continue;
                        }
                        let tap = (ky * w.k_w + kx) * oc;
                        let ox_lo = ix_lo * w.stride_w + kx * w.dil_w - w.pad_left;
                        if oc == 1 {
                            // One value per pixel (a segmentation mask): strided, no slices.
                            let dst = out_row[ox_lo..].iter_mut().step_by(w.stride_w);
                            let src = col_row[ix_lo * n + tap..].iter().step_by(n);
                            for (o, s) in dst.zip(src).take(ix_hi - ix_lo) {
                                *o += *s;
                            }
                            continue;
                        }
                        for ix in ix_lo..ix_hi {
                            let ox = ix * w.stride_w + kx * w.dil_w - w.pad_left;
                            let src = &col_row[ix * n + tap..][..oc];
                            for (o, s) in out_row[ox * oc..(ox + 1) * oc].iter_mut().zip(src) {
                                *o += *s;
                            }
                        }
                    }
                }
                if !ep.is_identity() || self.tail.is_some() {
                    finish(self.tail.as_ref(), out_row, oy * row_len, oc, ep);
                }
            }
        });
    }
}

/// The input columns `ix_lo..ix_hi` whose tap `kx` lands inside the output:
/// `0 <= ix * stride_w + kx * dil_w - pad_left < out_w`.
fn tap_columns(w: &Window, kx: usize) -> (usize, usize) {
    let off = kx * w.dil_w;
    let lo = w.pad_left.saturating_sub(off).div_ceil(w.stride_w);
    let hi = (w.out_w + w.pad_left)
        .saturating_sub(off)
        .div_ceil(w.stride_w)
        .min(w.in_w);
    (lo, hi.max(lo))
}

/// The input index `i < n` with `i * stride + t * dil - pad == o`, if any.
#[inline]
fn source(o: usize, t: usize, dil: usize, pad: usize, stride: usize, n: usize) -> Option<usize> {
    let v = (o + pad).checked_sub(t * dil)?;
    (v % stride == 0 && v / stride < n).then_some(v / stride)
}

impl Kernel for PackedTransposeConv {
    fn run(&self, io: StepIo<'_>) {
        PackedTransposeConv::run(self, io.par, io.inputs.get(0), io.out, io.scratch, io.ep);
    }
}

/// A TRANSPOSE_CONV whose filter or bias is computed at run time: packed on every run.
struct DynamicTransposeConv(Window);

impl Kernel for DynamicTransposeConv {
    fn run(&self, io: StepIo<'_>) {
        let bias = (io.inputs.len() > 2).then(|| io.inputs.get(2));
        PackedTransposeConv::new(io.inputs.get(1), bias, self.0).run(
            io.par,
            io.inputs.get(0),
            io.out,
            io.scratch,
            io.ep,
        );
    }
}

/// Prepares a TRANSPOSE_CONV.
pub(crate) fn prepare(cx: &PrepareCx, a: &ConvAttrs) -> Result<Prepared, String> {
    let f = cx.shape(1);
    let w = cx.window([f[1], f[2]], a);
    if cx.weights_dynamic() {
        if cx.tail.is_some() {
            return Err("a fused tail on a dynamic transposed convolution".into());
        }
        let scratch = transpose_conv_scratch_len(&w);
        return Ok(Prepared::with_scratch(DynamicTransposeConv(w), scratch));
    }
    let k = PackedTransposeConv::new(cx.constant(1)?, cx.bias(2)?, w);
    let k = match cx.tail.clone() {
        Some(tail) => k.with_tail(tail),
        None => k,
    };
    let scratch = k.scratch_len();
    Ok(Prepared::with_scratch(k, scratch))
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // naive references index on purpose
mod tests {
    use super::*;
    use crate::kernels::Act;
    use crate::kernels::testutil::*;
    use proptest::prelude::*;

    /// A transposed convolution problem with a naive (scatter) reference.
    #[derive(Debug)]
    struct TransposeConvProblem {
        w: Window,
        input: Vec<f32>,
        filter: Vec<f32>,
        bias: Option<Vec<f32>>,
    }

    impl TransposeConvProblem {
        fn new(w: Window, seed: u64, bias: bool) -> Self {
            TransposeConvProblem {
                w,
                input: data(seed, w.in_h * w.in_w * w.in_c),
                filter: data(seed + 1, w.out_c * w.k_h * w.k_w * w.in_c),
                bias: bias.then(|| data(seed + 2, w.out_c)),
            }
        }

        fn reference(&self) -> Vec<f32> {
            let w = &self.w;
            let mut acc = vec![0.0f64; w.out_h * w.out_w * w.out_c];
            for iy in 0..w.in_h {
                for ix in 0..w.in_w {
                    for ky in 0..w.k_h {
                        for kx in 0..w.k_w {
                            let oy = (iy * w.stride_h + ky * w.dil_h) as isize - w.pad_top as isize;
                            let ox =
                                (ix * w.stride_w + kx * w.dil_w) as isize - w.pad_left as isize;
                            if oy < 0 || ox < 0 || oy >= w.out_h as isize || ox >= w.out_w as isize
                            {
                                continue;
                            }
                            for o in 0..w.out_c {
                                for i in 0..w.in_c {
                                    acc[(oy as usize * w.out_w + ox as usize) * w.out_c + o] += self
                                        .input[(iy * w.in_w + ix) * w.in_c + i]
                                        as f64
                                        * self.filter[((o * w.k_h + ky) * w.k_w + kx) * w.in_c + i]
                                            as f64;
                                }
                            }
                        }
                    }
                }
            }
            acc.iter()
                .enumerate()
                .map(|(i, v)| {
                    (v + self.bias.as_ref().map_or(0.0, |b| b[i % w.out_c]) as f64).max(0.0) as f32
                })
                .collect()
        }

        /// The reference over the absolute values of the input, filter and bias (its ReLU then
        /// changes nothing): each output's terms' magnitudes, the scale of its rounding error.
        fn magnitude(&self) -> Vec<f32> {
            TransposeConvProblem {
                w: self.w,
                input: abs(&self.input),
                filter: abs(&self.filter),
                bias: self.bias.as_deref().map(abs),
            }
            .reference()
        }

        fn run(&self, par: &Par) -> Vec<f32> {
            let t = PackedTransposeConv::new(&self.filter, self.bias.as_deref(), self.w);
            let mut out = vec![f32::NAN; self.w.out_h * self.w.out_w * self.w.out_c];
            let mut scratch = vec![f32::NAN; t.scratch_len()];
            t.run(
                par,
                &self.input,
                &mut out,
                &mut scratch,
                &Epilogue::act(Act::Relu),
            );
            out
        }
    }

    fn transpose_windows() -> impl Strategy<Value = Window> {
        (
            1..8usize,
            1..8usize,
            1..12usize,
            1..12usize,
            1..4usize,
            1..4usize,
            1..4usize,
            0..3usize,
            0..3usize,
            0..3usize,
        )
            .prop_map(|(h, w, ic, oc, k, s, d, pt, pl, extra)| {
                let d = if k == 1 { 1 } else { d.min(2) };
                let full_h = (h - 1) * s + (k - 1) * d + 1;
                let full_w = (w - 1) * s + (k - 1) * d + 1;
                let out_h = (full_h + extra).saturating_sub(pt).max(1);
                let out_w = (full_w + extra).saturating_sub(pl).max(1);
                Window {
                    in_h: h,
                    in_w: w,
                    in_c: ic,
                    out_h,
                    out_w,
                    out_c: oc,
                    k_h: k,
                    k_w: k,
                    stride_h: s,
                    stride_w: s,
                    dil_h: d,
                    dil_w: d,
                    pad_top: pt,
                    pad_left: pl,
                }
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn transpose_conv_matches_reference(w in transpose_windows(), seed in 0u64..1000, bias: bool) {
            let p = TransposeConvProblem::new(w, seed, bias);
            // Outputs whose terms cancel carry the rounding of the large terms: the error is
            // measured against the sums of absolute values (a value of 0.0017 from five terms
            // near 0.5 missed a plain 1e-5 relative bound by its f32 rounding alone).
            assert_close_scaled(&p.run(&Par::new(1)), &p.reference(), &p.magnitude());
        }
    }

    #[test]
    fn transpose_conv_2x2_stride2_hand_computed() {
        // One input channel, one output channel: each input value is spread over a 2x2 block
        // scaled by the filter, plus bias.
        let w = Window {
            in_h: 1,
            in_w: 2,
            in_c: 1,
            out_h: 2,
            out_w: 4,
            out_c: 1,
            k_h: 2,
            k_w: 2,
            stride_h: 2,
            stride_w: 2,
            dil_h: 1,
            dil_w: 1,
            pad_top: 0,
            pad_left: 0,
        };
        let t = PackedTransposeConv::new(&[1.0, 2.0, 3.0, 4.0], Some(&[0.5]), w);
        let mut out = vec![0.0; 8];
        t.run(
            &Par::new(1),
            &[1.0, 10.0],
            &mut out,
            &mut vec![0.0; t.scratch_len()],
            &Epilogue::NONE,
        );
        assert_eq!(out, vec![1.5, 2.5, 10.5, 20.5, 3.5, 4.5, 30.5, 40.5]);
    }

    #[test]
    fn transpose_conv_threads_bit_identical() {
        let w = Window {
            in_h: 64,
            in_w: 64,
            in_c: 16,
            out_h: 128,
            out_w: 128,
            out_c: 8,
            k_h: 2,
            k_w: 2,
            stride_h: 2,
            stride_w: 2,
            dil_h: 1,
            dil_w: 1,
            pad_top: 0,
            pad_left: 0,
        };
        let p = TransposeConvProblem::new(w, 9, true);
        assert_eq!(p.run(&Par::new(1)), p.run(&Par::new(2)));
    }
}
