//! 2-D convolution (TFLite CONV_2D), NHWC, batch 1.
//!
//! The filter (OHWI) is packed once into a [`PackedB`] of shape `[k_h * k_w * in_c, out_c]`.
//! A 1x1 stride-1 unpadded convolution is one matrix product of the input
//! `[in_h * in_w, in_c]` with it (split over [`Par`] as pixel blocks by output-channel panels). Every other convolution
//! runs per output row (rows split over [`Par`]): its interior pixels (whole window inside the
//! input) read the input in place as an implicit im2col (the product walks the window's
//! `k_h` contiguous runs of `k_w * in_c` values), and only its edge pixels are gathered into an
//! im2col buffer (one output row, in the caller's scratch). The epilogue runs on each block or
//! row while it is in cache. The padding reads as zeros, or, for a convolution that took over
//! the `PAD_REFLECT` before it ([`PackedConv::with_reflect_padding`]), as the input mirrored at
//! its edges: the output rows then read a ring of mirrored input rows ([`reflect`]).
//!
//! Dispatch: [`prepare`] packs the filter of a CONV_2D once, or (weights computed at run time,
//! the passes off) packs it on every run.

pub(crate) mod fp16;
mod reflect;

use heimdall_ir::ConvAttrs;

use crate::kernels::gemm::PackedB;
use crate::kernels::par::{SplitCache, Tile};
use crate::kernels::tail::{Tail, finish};
use crate::kernels::{Epilogue, Isa, Par, Window};
use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

/// Multiply-accumulates a part must have at least before the work is split (about 4 µs of
/// one core).
const MIN_MACS_PER_PART: usize = 1 << 17;

/// A convolution with its filter packed for the matrix-product kernel.
#[derive(Clone, Debug)]
pub struct PackedConv {
    w: Window,
    b: PackedB,
    direct: bool,
    block: usize,
    /// Offsets (relative to a window's top-left input value) of the window's contiguous runs,
    /// each `seg_len` values long: the implicit im2col of interior pixels.
    segs: Vec<usize>,
    seg_len: usize,
    /// Output columns whose horizontal taps all fall inside the input.
    int_cols: (usize, usize),
    /// The padding mirrors the input (`PAD_REFLECT`: `cb|abc|ba`) instead of reading zeros:
    /// the ring of padded rows the output rows read.
    reflect: Option<reflect::Band>,
    /// The 1x1 path's split for the thread count it was last run with.
    split: SplitCache,
    /// Ops after the products fused into the convolution (then never in the stores).
    tail: Option<Tail>,
}

/// Values of scratch a convolution of geometry `w` needs when run with `threads` threads:
/// 0 for a 1x1 stride-1 unpadded convolution, else one output row of im2col per thread
/// (`threads * out_w * k_h * k_w * in_c`).
pub fn conv_scratch_len(w: &Window, threads: usize) -> usize {
    scratch_len(w, false, threads)
}

/// [`conv_scratch_len`], with reflect padding or not (then each thread's part holds the larger
/// of an im2col row and a ring of padded rows).
fn scratch_len(w: &Window, reflect: bool, threads: usize) -> usize {
    let per_part = if is_direct(w) {
        0
    } else if reflect {
        (w.out_w * patch_len(w)).max(reflect::Band::len(w))
    } else {
        w.out_w * patch_len(w)
    };
    threads.max(1) * per_part
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

/// Output pixels per block of the direct (1x1) path: the epilogue runs on a block while it is
/// in cache.
fn block_pixels(w: &Window) -> usize {
    let px = w.out_h * w.out_w;
    (16384 / patch_len(w).max(1)).clamp(12, 480).min(px.max(1))
}

impl PackedConv {
    /// Packs an OHWI filter `[out_c, k_h, k_w, in_c]` and an optional bias of `out_c` values
    /// for the geometry `w`, for the widest instruction set this CPU runs ([`Isa::detect`]).
    pub fn new(filter_ohwi: &[f32], bias: Option<&[f32]>, w: Window) -> PackedConv {
        PackedConv::with_isa(Isa::detect(), filter_ohwi, bias, w)
    }

    /// [`PackedConv::new`] for the matrix-product kernel of `isa` (the portable one if this
    /// CPU lacks it): for tests and benchmarks that compare instruction sets.
    pub fn with_isa(isa: Isa, filter_ohwi: &[f32], bias: Option<&[f32]>, w: Window) -> PackedConv {
        let kdim = patch_len(&w);
        debug_assert_eq!(filter_ohwi.len(), w.out_c * kdim);
        let b = PackedB::with_isa(isa, kdim, w.out_c, bias, |k, o| filter_ohwi[o * kdim + k]);
        let row = w.in_w * w.in_c;
        let (segs, seg_len) = if w.dil_w == 1 {
            (
                (0..w.k_h).map(|ky| ky * w.dil_h * row).collect(),
                w.k_w * w.in_c,
            )
        } else {
            let taps = (0..w.k_h).flat_map(|ky| {
                (0..w.k_w).map(move |kx| ky * w.dil_h * row + kx * w.dil_w * w.in_c)
            });
            (taps.collect(), w.in_c)
        };
        let reach = (w.k_w - 1) * w.dil_w;
        let lo = w.pad_left.div_ceil(w.stride_w).min(w.out_w);
        let hi = if w.in_w + w.pad_left > reach {
            ((w.in_w + w.pad_left - reach - 1) / w.stride_w + 1).min(w.out_w)
        } else {
            0
        };
        PackedConv {
            w,
            b,
            direct: is_direct(&w),
            block: block_pixels(&w),
            segs,
            seg_len,
            int_cols: (lo, hi.max(lo)),
            reflect: None,
            split: SplitCache::default(),
            tail: None,
        }
    }

    /// The same convolution followed by `tail` (the per-channel add of a constant, and a GELU,
    /// fused into it): `gelu?(ep(conv + shift[c]))`, each step the separate op's, so the bits
    /// are those of the convolution then the ops. Not with reflect padding.
    pub fn with_tail(self, tail: Tail) -> PackedConv {
        assert!(
            self.reflect.is_none() && tail.shift.len() == self.w.out_c,
            "conv: a tail of {} channels on {:?}",
            tail.shift.len(),
            self.w
        );
        PackedConv {
            tail: Some(tail),
            ..self
        }
    }

    /// The same convolution with its padding read as the input mirrored at its edges, without
    /// repeating the edge (a `PAD_REFLECT` of `pad_top`/`pad_left` rows and columns before, and
    /// whatever the output size implies after, fused into the convolution). Every padding must
    /// be less than the input's size along its axis, as ONNX's reflect padding requires.
    pub fn with_reflect_padding(self) -> PackedConv {
        assert!(self.tail.is_none(), "conv: reflect padding after a tail");
        PackedConv {
            reflect: Some(reflect::Band::new(&self.w)),
            ..self
        }
    }

    /// The geometry this convolution was packed for.
    pub fn window(&self) -> &Window {
        &self.w
    }

    /// The instruction set of the matrix-product kernel this convolution runs.
    pub fn isa(&self) -> Isa {
        self.b.isa()
    }

    /// Values of scratch [`PackedConv::run`] needs with `par` (see [`conv_scratch_len`]; with
    /// reflect padding, a ring of padded rows per thread if that is more).
    pub fn scratch_len(&self, par: &Par) -> usize {
        scratch_len(&self.w, self.reflect.is_some(), par.threads())
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
        let n = w.out_c;
        let px = w.out_h * w.out_w;
        debug_assert_eq!(input.len(), w.in_h * w.in_w * w.in_c);
        debug_assert_eq!(output.len(), px * n);
        if px == 0 || n == 0 {
            return;
        }
        assert!(
            input.len() >= w.in_h * w.in_w * w.in_c,
            "conv: input too short"
        );
        if self.direct {
            self.run_direct(par, input, output, ep);
        } else {
            self.run_rows(par, input, output, scratch, ep);
        }
    }

    /// [`PackedConv::run`] of a 1x1 stride-1 unpadded convolution: one matrix product of the
    /// input pixels with the filter, split as [`PackedConv::direct_split`] says.
    fn run_direct(&self, par: &Par, input: &[f32], output: &mut [f32], ep: &Epilogue) {
        let w = &self.w;
        let n = w.out_c;
        let (mr, nr) = (self.b.tile_rows(), self.b.panel_cols());
        let (row_parts, col_parts) = self.direct_split(par);
        let fused = self.b.fuses(ep) && self.tail.is_none();
        par.for_even_grid(
            output,
            n,
            (row_parts, mr),
            (col_parts, nr),
            |rows, cols, tile| {
                if fused {
                    // The epilogue in the micro-kernels' stores: the tile is written once.
                    // SAFETY: input rows `rows` hold `in_c` values each (`run` asserted the
                    // input's length, rows < px); the tile's rows of `cols.len()` values at
                    // the tile's stride are its own; `cols.start` is a multiple of the panel
                    // width (the grid's column alignment); the residual has the output's shape.
                    unsafe {
                        self.b.gemm_tile(
                            input.as_ptr().add(rows.start * w.in_c),
                            w.in_c,
                            &[0],
                            w.in_c,
                            rows.len(),
                            cols.clone(),
                            tile.as_mut_ptr(),
                            n,
                            (!ep.is_identity()).then_some((ep, rows.start * n + cols.start)),
                        );
                    }
                    return;
                }
                self.direct_blocks(input, rows, cols, tile, ep);
            },
        );
    }

    /// How [`PackedConv::run_direct`] splits the output on `par`'s threads, `(row_parts,
    /// col_parts)` (computed once per thread count): pixels by output-channel panels cut
    /// evenly ([`Par::even_grid`]: every thread the same share, a run of rows; a 1x1
    /// convolution of few pixels and many channels, 8x8 or 2x2 at the end of a backbone,
    /// splits over its channels too). An expansion (more output channels than input) whose
    /// weights outweigh the values it reads and writes, with a panel for every thread, is cut
    /// into one band of output channels a thread instead: a thread then reads only its band's
    /// weights, where whole rows of pixels make every thread read all of them
    /// (hand_landmark_lite's 7x7 112 -> 672: 301 KB of weights against 22 KB in and 132 KB
    /// out, its four expansions ~10 % faster at 4 threads, 14 % at 2; projections cut so
    /// were slower, their input rows spread over every thread's cache).
    fn direct_split(&self, par: &Par) -> (usize, usize) {
        self.split.get_or(par.threads(), || {
            let w = &self.w;
            let (n, kdim, px) = (w.out_c, patch_len(w), w.out_h * w.out_w);
            let (mr, nr) = (self.b.tile_rows(), self.b.panel_cols());
            let work = px * kdim * n;
            let grid = par.even_grid(px, n, work, MIN_MACS_PER_PART, mr, nr);
            let threads = par.threads();
            let weight_bound = kdim * n > px * (kdim + n);
            if grid.0 * grid.1 > 1
                && n > kdim
                && weight_bound
                && n.div_ceil(nr) >= threads
                && work / threads >= MIN_MACS_PER_PART / 2
            {
                (1, threads)
            } else {
                grid
            }
        })
    }

    /// One tile (output pixels `rows`, channels `cols`) of [`PackedConv::run_direct`] with
    /// the epilogue not fused into the products: blocks of [`block_pixels`] pixels, the
    /// epilogue run on each block while it is in cache.
    #[inline(always)]
    fn direct_blocks(
        &self,
        input: &[f32],
        rows: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
        tile: &mut Tile<'_>,
        ep: &Epilogue,
    ) {
        let w = &self.w;
        let n = w.out_c;
        let mut m0 = rows.start;
        while m0 < rows.end {
            let mb = self.block.min(rows.end - m0);
            let t0 = m0 - rows.start;
            // SAFETY: as in `run_direct`, for rows m0..m0+mb.
            unsafe {
                self.b.gemm_tile(
                    input.as_ptr().add(m0 * w.in_c),
                    w.in_c,
                    &[0],
                    w.in_c,
                    mb,
                    cols.clone(),
                    tile.as_mut_ptr().add(t0 * n),
                    n,
                    None,
                );
            }
            let tail = self.tail.as_ref();
            if cols.len() == n {
                finish(tail, tile.span(t0..t0 + mb), m0 * n, n, ep);
            } else {
                for i in 0..mb {
                    finish(tail, tile.row(t0 + i), (m0 + i) * n + cols.start, n, ep);
                }
            }
            m0 += mb;
        }
    }

    /// Output pixels `rows` of a 1x1 stride-1 unpadded convolution from `a`, their input
    /// (`rows.len()` pixels of `in_c` values), into `out` (`rows.len()` pixels of `out_c`),
    /// `ep` applied as to the whole output: the values [`PackedConv::run`] computes there (the
    /// same products, the epilogue in the micro-kernels' stores where they fuse it, after them
    /// where not). For a kernel that consumes the output as it is made
    /// (`crate::ops::expand_dw`).
    pub(crate) fn direct_rows(
        &self,
        a: &[f32],
        rows: std::ops::Range<usize>,
        out: &mut [f32],
        ep: &Epilogue,
    ) {
        let w = &self.w;
        let (n, m) = (w.out_c, rows.len());
        assert!(
            self.direct
                && a.len() >= m * w.in_c
                && out.len() >= m * n
                && rows.end <= w.out_h * w.out_w,
            "conv: direct rows outside the output"
        );
        if m == 0 {
            return;
        }
        let fused = self.b.fuses(ep) && self.tail.is_none();
        let fused_ep = (fused && !ep.is_identity()).then_some((ep, rows.start * n));
        // SAFETY: `a` holds `m` rows of `in_c` values and `out` `m` rows of `n` (asserted);
        // the residual, if any, has the output's shape (the step's contract).
        unsafe {
            self.b.gemm_tile(
                a.as_ptr(),
                w.in_c,
                &[0],
                w.in_c,
                m,
                0..n,
                out.as_mut_ptr(),
                n,
                fused_ep,
            );
        }
        if !fused {
            finish(self.tail.as_ref(), &mut out[..m * n], rows.start * n, n, ep);
        }
    }

    /// Whether this is a 1x1 stride-1 unpadded convolution, one matrix product
    /// ([`PackedConv::direct_rows`] computes its rows).
    pub(crate) fn is_pointwise(&self) -> bool {
        self.direct
    }

    /// [`PackedConv::run`] of every other convolution: output rows split over `par`, each
    /// part with its share of `scratch` (an im2col row, or a ring of reflect-padded rows).
    fn run_rows(
        &self,
        par: &Par,
        input: &[f32],
        output: &mut [f32],
        scratch: &mut [f32],
        ep: &Epilogue,
    ) {
        let w = &self.w;
        let (n, kdim) = (w.out_c, patch_len(w));
        let row_len = w.out_w * n;
        let per_part = self.scratch_len(par) / par.threads().max(1);
        let min_rows = MIN_MACS_PER_PART.div_ceil((row_len * kdim).max(1));
        par.for_rows_scratch(
            output,
            row_len,
            min_rows,
            scratch,
            per_part,
            |rows, out, sc| {
                if let Some(band) = &self.reflect {
                    return band.rows((&self.w, &self.b, self.seg_len), input, rows, out, sc, ep);
                }
                let fused = self.b.fuses(ep) && self.tail.is_none();
                for (oy, out_row) in rows.zip(out.chunks_exact_mut(row_len)) {
                    let row_ep = (fused && !ep.is_identity()).then_some((ep, oy * row_len));
                    self.row(input, oy, out_row, sc, row_ep);
                    if !fused {
                        finish(self.tail.as_ref(), out_row, oy * row_len, n, ep);
                    }
                }
            },
        );
    }

    /// One output row: interior pixels read the input in place (segmented product), edge
    /// pixels go through im2col in `scratch`; `ep` (the row's first value's element of the
    /// output) fused into the products' stores where given.
    fn row(
        &self,
        input: &[f32],
        oy: usize,
        out_row: &mut [f32],
        scratch: &mut [f32],
        ep: Option<(&Epilogue, usize)>,
    ) {
        let w = &self.w;
        let (n, kdim) = (w.out_c, patch_len(w));
        let top = oy * w.stride_h;
        let rows_inside = top >= w.pad_top && top - w.pad_top + (w.k_h - 1) * w.dil_h < w.in_h;
        let (lo, hi) = if rows_inside {
            self.int_cols
        } else {
            (w.out_w, w.out_w)
        };
        if hi > lo {
            let base = ((top - w.pad_top) * w.in_w + lo * w.stride_w - w.pad_left) * w.in_c;
            // SAFETY: every tap of pixels lo..hi of this row lies inside the input (interior
            // rows and columns), so each segment of each of those rows is in `input`, whose
            // length `run` asserted.
            unsafe {
                self.b.gemm_segmented_ep(
                    input.as_ptr().add(base),
                    w.stride_w * w.in_c,
                    &self.segs,
                    self.seg_len,
                    hi - lo,
                    &mut out_row[lo * n..hi * n],
                    ep.map(|(e, o)| (e, o + lo * n)),
                );
            }
        }
        for (a, b) in [(0, lo), (hi.max(lo), w.out_w)] {
            if b > a {
                let col = &mut scratch[..(b - a) * kdim];
                im2col(w, input, oy * w.out_w + a, b - a, col);
                let part_ep = ep.map(|(e, o)| (e, o + a * n));
                self.b
                    .gemm_ep(col, kdim, b - a, &mut out_row[a * n..b * n], part_ep);
            }
        }
    }
}

/// Copies a short run (often 3 to a few hundred values) without a `memcpy` call.
#[inline(always)]
fn copy_short(dst: &mut [f32], src: &[f32]) {
    if dst.len() >= 64 {
        dst.copy_from_slice(src);
    } else {
        for (d, s) in dst.iter_mut().zip(src) {
            *d = *s;
        }
    }
}

/// Gathers the receptive fields of output pixels `m0..m0 + mb` into `col` (`[mb, k_h*k_w*in_c]`,
/// zeros where the window hangs over the padding).
fn im2col(w: &Window, input: &[f32], m0: usize, mb: usize, col: &mut [f32]) {
    let (c, kw) = (w.in_c, w.k_w);
    let kdim = patch_len(w);
    let seg = kw * c;
    let in_row = w.in_w * c;
    let (mut oy, mut ox) = (m0 / w.out_w, m0 % w.out_w);
    for row in col[..mb * kdim].chunks_exact_mut(kdim) {
        let ix0 = (ox * w.stride_w).wrapping_sub(w.pad_left);
        let contiguous = w.dil_w == 1 && ix0 < w.in_w && ix0 + kw <= w.in_w;
        for (ky, dst) in row.chunks_exact_mut(seg).enumerate() {
            let iy = (oy * w.stride_h + ky * w.dil_h).wrapping_sub(w.pad_top);
            if iy >= w.in_h {
                dst.fill(0.0);
            } else if contiguous {
                let start = iy * in_row + ix0 * c;
                copy_short(dst, &input[start..start + seg]);
            } else {
                let src_row = &input[iy * in_row..(iy + 1) * in_row];
                for (kx, d) in dst.chunks_exact_mut(c).enumerate() {
                    let ix = (ox * w.stride_w + kx * w.dil_w).wrapping_sub(w.pad_left);
                    if ix < w.in_w {
                        copy_short(d, &src_row[ix * c..(ix + 1) * c]);
                    } else {
                        d.fill(0.0);
                    }
                }
            }
        }
        ox += 1;
        if ox == w.out_w {
            ox = 0;
            oy += 1;
        }
    }
}

impl Kernel for PackedConv {
    fn run(&self, io: StepIo<'_>) {
        PackedConv::run(self, io.par, io.inputs.get(0), io.out, io.scratch, io.ep);
    }
}

/// A CONV_2D whose filter or bias is computed at run time: packed on every run (with reflect
/// padding when the flag is set).
struct DynamicConv(Window, bool);

impl Kernel for DynamicConv {
    fn run(&self, io: StepIo<'_>) {
        let bias = (io.inputs.len() > 2).then(|| io.inputs.get(2));
        let conv = PackedConv::new(io.inputs.get(1), bias, self.0);
        let conv = if self.1 {
            conv.with_reflect_padding()
        } else {
            conv
        };
        conv.run(io.par, io.inputs.get(0), io.out, io.scratch, io.ep);
    }
}

/// Prepares a CONV_2D; one that reads input 0 through a fused reflect pad
/// ([`PrepareCx::reflect_pad`]) pads it by mirroring instead (its own padding must be zero).
pub(crate) fn prepare(cx: &PrepareCx, a: &ConvAttrs) -> Result<Prepared, String> {
    let f = cx.shape(1);
    let mut w = cx.window([f[1], f[2]], a);
    let reflect = cx.reflect_pad.is_some();
    if let Some([top, left]) = cx.reflect_pad {
        if a.pad != heimdall_ir::Pad2d::default() {
            return Err(format!(
                "a fused reflect pad on a padded convolution ({:?})",
                a.pad
            ));
        }
        (w.pad_top, w.pad_left) = (top, left);
    }
    if cx.tail.is_some() && (reflect || cx.weights_dynamic()) {
        return Err("a fused tail on a reflect-padded or dynamic convolution".into());
    }
    if cx.f16
        && !reflect
        && !cx.weights_dynamic()
        && let Some(k) = fp16::F16Conv::new(cx.constant(1)?, cx.bias(2)?, w)
    {
        let scratch = fp16::scratch_len(&w, cx.threads);
        let k = match cx.tail.clone() {
            Some(tail) => k.with_tail(tail),
            None => k,
        };
        return Ok(Prepared {
            f16: true,
            ..Prepared::with_scratch(k, scratch)
        });
    }
    if let Some(tail) = cx.tail.clone() {
        let k = PackedConv::new(cx.constant(1)?, cx.bias(2)?, w).with_tail(tail);
        return Ok(Prepared::with_scratch(
            k,
            scratch_len(&w, false, cx.threads),
        ));
    }
    let scratch = scratch_len(&w, reflect, cx.threads);
    if cx.weights_dynamic() {
        return Ok(Prepared::with_scratch(DynamicConv(w, reflect), scratch));
    }
    let k = PackedConv::new(cx.constant(1)?, cx.bias(2)?, w);
    let k = if reflect { k.with_reflect_padding() } else { k };
    Ok(Prepared::with_scratch(k, scratch))
}

#[cfg(test)]
mod tests;
