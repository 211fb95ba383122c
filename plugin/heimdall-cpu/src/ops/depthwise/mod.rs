//! Depthwise convolution (TFLite DEPTHWISE_CONV_2D), NHWC, batch 1.
//!
//! Filter layout `[1, k_h, k_w, in_c * multiplier]` is already the kernel's layout (taps outer,
//! channels contiguous), so packing only copies it. On AVX-512 each output row is split into
//! edge pixels (taps clipped by padding, one pixel at a time) and interior pixels, computed 8 at
//! a time with 8 independent accumulators per 16-channel vector (masked for the channel tail);
//! 3x3 and 5x5 filters have unrolled variants, and at stride 1 each input vector of a filter row
//! is loaded once for all 8 pixels. Other CPUs and channel multipliers above 1 use a portable
//! channel loop. The output is split over [`Par`] as pixel ranges by channel blocks; the
//! epilogue runs per row piece. Every value sums
//! `bias + taps in (ky, kx) order`, whichever variant or split computes it.
//!
//! Dispatch: [`prepare`] copies the filter of a DEPTHWISE_CONV_2D once, or (weights computed at
//! run time, the passes off) on every run.

use heimdall_ir::ConvAttrs;

use crate::kernels::window::valid_taps;
use std::ops::Range;

#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "aarch64")]
mod neon;

use crate::kernels::par::{CHUNKS_PER_THREAD, SplitCache, Tile};
use crate::kernels::tail::{Tail, finish};
use crate::kernels::{Epilogue, Isa, Par, Window};
use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

/// Multiply-accumulates a part must have at least before rows are split over threads
/// (about 3 µs of one core's time: a job costs the pool ~1 µs when its threads spin, and a
/// thread's parts are the rows it wrote in the op before, `crate::kernels::threads`).
const MIN_MACS_PER_PART: usize = 1 << 15;

/// A depthwise convolution with its filter and bias copied into the kernel's layout.
#[derive(Clone, Debug)]
pub struct PackedDepthwise {
    w: Window,
    mult: usize,
    weights: Vec<f32>,
    bias: Vec<f32>,
    /// The kernels' instruction set: AVX-512, NEON or portable.
    isa: Isa,
    /// The last split computed, for the thread count it was computed for.
    split: SplitCache,
    /// Ops after the products fused into the convolution.
    tail: Option<Tail>,
}

impl PackedDepthwise {
    /// Packs a TFLite depthwise filter `[1, k_h, k_w, out_c]` (`out_c = in_c * multiplier`)
    /// and an optional bias of `out_c` values for the geometry `w`, for the widest instruction
    /// set this CPU runs.
    pub fn new(filter: &[f32], bias: Option<&[f32]>, w: Window) -> PackedDepthwise {
        PackedDepthwise::with_isa(Isa::detect(), filter, bias, w)
    }

    /// [`PackedDepthwise::new`] for the kernels of `isa`: AVX-512 or NEON where this CPU has
    /// it, the filter has at most 16 rows and the channel multiplier is 1, else the portable
    /// kernels (AVX2 has no depthwise kernel of its own). For tests and benchmarks that compare
    /// instruction sets; [`PackedDepthwise::isa`] says which one runs.
    pub fn with_isa(isa: Isa, filter: &[f32], bias: Option<&[f32]>, w: Window) -> PackedDepthwise {
        debug_assert_eq!(filter.len(), w.k_h * w.k_w * w.out_c);
        debug_assert!(w.in_c > 0 && w.out_c.is_multiple_of(w.in_c));
        let mult = w.out_c / w.in_c.max(1);
        let bias = bias.map_or_else(|| vec![0.0; w.out_c], <[f32]>::to_vec);
        let simd = mult == 1 && {
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            {
                w.k_h <= MAX_TAPS
            }
            #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
            {
                false
            }
        };
        let isa = match isa.or_portable() {
            Isa::Avx512 | Isa::Neon if simd => isa,
            _ => Isa::Portable,
        };
        PackedDepthwise {
            w,
            mult,
            weights: filter.to_vec(),
            bias,
            isa,
            split: SplitCache::default(),
            tail: None,
        }
    }

    /// The same convolution followed by `tail` (the per-channel add of a constant, and a GELU,
    /// fused into it): `gelu?(ep(conv + shift[c]))`, each step the separate op's, so the bits
    /// are those of the convolution then the ops.
    pub fn with_tail(self, tail: Tail) -> PackedDepthwise {
        assert_eq!(tail.shift.len(), self.w.out_c, "depthwise: tail channels");
        PackedDepthwise {
            tail: Some(tail),
            ..self
        }
    }

    /// The instruction set of the kernels this convolution runs.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// The geometry this convolution was packed for.
    pub fn window(&self) -> &Window {
        &self.w
    }

    /// `output[oy, ox, c] = ep(bias[c] + sum input[iy, ix, c / mult] * filter[ky, kx, c])`;
    /// `input` is `[in_h, in_w, in_c]`, `output` `[out_h, out_w, out_c]`. Needs no scratch.
    ///
    /// The output is split over [`Par`] as whole output rows by channel blocks of 16, cut
    /// evenly so that every thread gets the same share (`PackedDepthwise::split`): at small
    /// resolutions (14x14, 7x7) there are too few rows for many threads, but enough rows times
    /// channel blocks.
    pub fn run(&self, par: &Par, input: &[f32], output: &mut [f32], ep: &Epilogue) {
        let w = &self.w;
        let c = w.out_c;
        let px = w.out_h * w.out_w;
        debug_assert_eq!(input.len(), w.in_h * w.in_w * w.in_c);
        debug_assert_eq!(output.len(), px * c);
        if px == 0 || c == 0 {
            return;
        }
        assert!(
            input.len() >= w.in_h * w.in_w * w.in_c && output.len() >= px * c,
            "depthwise: buffers too short"
        );
        let split = self.split(par);
        let mut row_cuts = [0usize; MAX_ROW_PARTS + 1];
        for (i, cut) in row_cuts[..=split.rows].iter_mut().enumerate() {
            *cut = w.out_h * i / split.rows * w.out_w;
        }
        let mut col_cuts = [0usize; MAX_COL_PARTS + 1];
        let blocks = c.div_ceil(16);
        for (j, cut) in col_cuts[..=split.cols].iter_mut().enumerate() {
            *cut = (blocks * j / split.cols * 16).min(c);
        }
        let (row_cuts, col_cuts) = (&row_cuts[..=split.rows], &col_cuts[..=split.cols]);
        let src = InputRows::dense(input, w.in_w * w.in_c);
        par.for_tiles(output, c, row_cuts, col_cuts, |pixels, chans, tile| {
            let mut p = pixels.start;
            while p < pixels.end {
                let (oy, ox0) = (p / w.out_w, p % w.out_w);
                let ox1 = (pixels.end - oy * w.out_w).min(w.out_w);
                let first = p - pixels.start;
                self.row(src, oy, ox0..ox1, chans.clone(), tile, first);
                self.finish_row(tile, first, p..p + (ox1 - ox0), chans.clone(), ep);
                p += ox1 - ox0;
            }
        });
    }

    /// Output row `oy` whole (every pixel and channel) from the input rows `src` into tile
    /// rows `first..first + out_w`, the epilogue and tail applied as [`PackedDepthwise::run`]
    /// applies them there: the values `run` computes for that row. For a kernel that makes
    /// the input rows itself (`crate::ops::expand_dw`).
    pub(crate) fn output_row(
        &self,
        src: InputRows<'_>,
        oy: usize,
        tile: &mut Tile<'_>,
        first: usize,
        ep: &Epilogue,
    ) {
        let w = &self.w;
        assert!(
            oy < w.out_h && first + w.out_w <= tile.rows() && tile.cols() == w.out_c,
            "depthwise: row outside the output or the tile"
        );
        self.row(src, oy, 0..w.out_w, 0..w.out_c, tile, first);
        let p = oy * w.out_w;
        self.finish_row(tile, first, p..p + w.out_w, 0..w.out_c, ep);
    }

    /// The epilogue and tail on output pixels `pixels` (tile rows from `first`), channels
    /// `chans`.
    fn finish_row(
        &self,
        tile: &mut Tile<'_>,
        first: usize,
        pixels: Range<usize>,
        chans: Range<usize>,
        ep: &Epilogue,
    ) {
        let c = self.w.out_c;
        let tail = self.tail.as_ref();
        if ep.is_identity() && tail.is_none() {
            return;
        }
        if chans.len() == c {
            let span = tile.span(first..first + pixels.len());
            finish(tail, span, pixels.start * c, c, ep);
        } else {
            for (i, p) in pixels.enumerate() {
                finish(tail, tile.row(first + i), p * c + chans.start, c, ep);
            }
        }
    }

    /// How [`PackedDepthwise::run`] splits the output over `par`'s threads (computed once per
    /// thread count): parts of at least about [`MIN_MACS_PER_PART`] multiply-accumulates, at
    /// most [`CHUNKS_PER_THREAD`] per thread, a multiple of the thread count where there are
    /// that many, as `rows` parts of whole output rows (a row's edge pixels and groups of 8
    /// stay together) by `cols` parts of channel blocks, whichever cuts make the largest
    /// thread's share (parts handed out by position, [`Par::first_part`]) smallest. On a
    /// 14x14 map and 4 threads that is 14 rows by 2 channel halves, 7 parts a thread (whole
    /// rows alone give 3, 4, 3 and 4 rows); on 7x7x672 at 5x5, 7 rows by 4 channel quarters.
    fn split(&self, par: &Par) -> Split {
        let (rows, cols) = self.split.get_or(par.threads(), || {
            let s = plan_split(par, &self.w);
            (s.rows, s.cols)
        });
        Split { rows, cols }
    }

    /// Output pixels `ox` of row `oy`, channels `chans`, into tile rows `first..` (one per
    /// pixel).
    fn row(
        &self,
        src: InputRows<'_>,
        oy: usize,
        ox: Range<usize>,
        chans: Range<usize>,
        tile: &mut Tile<'_>,
        first: usize,
    ) {
        let w = &self.w;
        let (ky_lo, ky_hi) = valid_taps(oy, w.stride_h, w.dil_h, w.pad_top, w.in_h, w.k_h);
        let mut t = DwTarget {
            tile,
            first,
            ox0: ox.start,
        };
        if self.mult != 1 {
            self.row_multiplier(src, oy, ky_lo, ky_hi, ox, chans, &mut t);
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if self.isa == Isa::Avx512 {
            // SAFETY: AVX-512F was detected at construction; shapes are checked by `run`, the
            // pixel and channel ranges lie inside the output and its tile.
            unsafe { self.row_avx512(src, oy, ky_lo, ky_hi, ox, chans, &mut t) };
            return;
        }
        #[cfg(target_arch = "aarch64")]
        if self.isa == Isa::Neon {
            // SAFETY: NEON was detected at construction; as above.
            unsafe { self.row_neon(src, oy, ky_lo, ky_hi, ox, chans, &mut t) };
            return;
        }
        self.row_portable(src, oy, ky_lo, ky_hi, ox, chans, &mut t);
    }

    #[allow(clippy::too_many_arguments)]
    fn row_portable(
        &self,
        src: InputRows<'_>,
        oy: usize,
        ky_lo: usize,
        ky_hi: usize,
        oxs: Range<usize>,
        chans: Range<usize>,
        t: &mut DwTarget<'_, '_>,
    ) {
        let w = &self.w;
        let c = w.out_c;
        for ox in oxs {
            let out = t.pixel(ox);
            let (kx_lo, kx_hi) = valid_taps(ox, w.stride_w, w.dil_w, w.pad_left, w.in_w, w.k_w);
            out.copy_from_slice(&self.bias[chans.clone()]);
            for ky in ky_lo..ky_hi {
                let iy = oy * w.stride_h + ky * w.dil_h - w.pad_top;
                for kx in kx_lo..kx_hi {
                    let ix = ox * w.stride_w + kx * w.dil_w - w.pad_left;
                    let x = &src.row(iy)[ix * c..][chans.clone()];
                    let f = &self.weights[(ky * w.k_w + kx) * c..][chans.clone()];
                    for ((o, x), f) in out.iter_mut().zip(x).zip(f) {
                        *o += x * f;
                    }
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn row_multiplier(
        &self,
        src: InputRows<'_>,
        oy: usize,
        ky_lo: usize,
        ky_hi: usize,
        oxs: Range<usize>,
        chans: Range<usize>,
        t: &mut DwTarget<'_, '_>,
    ) {
        let w = &self.w;
        let c = w.out_c;
        for ox in oxs {
            let out = t.pixel(ox);
            let (kx_lo, kx_hi) = valid_taps(ox, w.stride_w, w.dil_w, w.pad_left, w.in_w, w.k_w);
            out.copy_from_slice(&self.bias[chans.clone()]);
            for ky in ky_lo..ky_hi {
                let iy = oy * w.stride_h + ky * w.dil_h - w.pad_top;
                for kx in kx_lo..kx_hi {
                    let ix = ox * w.stride_w + kx * w.dil_w - w.pad_left;
                    let x = &src.row(iy)[ix * w.in_c..][..w.in_c];
                    let f = &self.weights[(ky * w.k_w + kx) * c..][..c];
                    for (o, oc) in out.iter_mut().zip(chans.clone()) {
                        *o += x[oc / self.mult] * f[oc];
                    }
                }
            }
        }
    }

    /// The valid input rows of output row `oy` (taps `ky_lo..ky_hi`), their filter rows, and
    /// the interior part `lo..hi` of `oxs` (every horizontal tap inside the input), for the
    /// SIMD kernels.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[allow(clippy::too_many_arguments)]
    fn simd_row(
        &self,
        src: InputRows<'_>,
        oy: usize,
        ky_lo: usize,
        ky_hi: usize,
        oxs: &Range<usize>,
        chans: &Range<usize>,
        t: &mut DwTarget<'_, '_>,
    ) -> (DwRow, usize, usize) {
        let w = self.w;
        let c = w.out_c;
        assert!(src.row_len >= w.in_w * c && oxs.end <= w.out_w);
        assert!(ky_hi <= w.k_h && w.k_h <= MAX_TAPS);
        assert!(chans.start.is_multiple_of(16) && chans.end <= c);
        assert!(t.first + oxs.len() <= t.tile.rows() && chans.len() == t.tile.cols());
        // Valid rows of this output row: input row and filter row pointers.
        let mut rows = [std::ptr::null::<f32>(); MAX_TAPS];
        let mut wrows = [std::ptr::null::<f32>(); MAX_TAPS];
        let nky = ky_hi - ky_lo;
        for (j, ky) in (ky_lo..ky_hi).enumerate() {
            let iy = oy * w.stride_h + ky * w.dil_h - w.pad_top;
            rows[j] = src.row(iy).as_ptr();
            wrows[j] = self.weights[ky * w.k_w * c..].as_ptr();
        }
        let stride = t.tile.stride();
        // SAFETY: tile row `first` is inside the tile (asserted above).
        let out0 = unsafe { t.tile.as_mut_ptr().add(t.first * stride) };
        let tap = DwRow {
            rows,
            wrows,
            nky,
            c,
            sw: w.stride_w,
            dw: w.dil_w,
            pl: w.pad_left,
            blocks: chans.start / 16..chans.end.div_ceil(16),
            chans: chans.clone(),
            ox0: oxs.start,
            out: out0,
            out_stride: stride,
        };
        // Interior output columns: every horizontal tap is inside the input.
        let reach = (w.k_w - 1) * w.dil_w;
        let int_lo = w.pad_left.div_ceil(w.stride_w).min(w.out_w);
        let int_hi = if w.in_w + w.pad_left > reach {
            ((w.in_w + w.pad_left - reach - 1) / w.stride_w + 1).min(w.out_w)
        } else {
            0
        };
        let int_hi = int_hi.max(int_lo);
        let (lo, hi) = (
            int_lo.clamp(oxs.start, oxs.end),
            int_hi.clamp(oxs.start, oxs.end),
        );
        (tap, lo, hi)
    }

    /// # Safety
    /// The CPU must support AVX-512F; `src` must hold the window's rows, `oxs` lie inside
    /// the row and `t`'s tile, `chans` start at a multiple of 16 and lie inside the tile's
    /// columns.
    #[cfg(target_arch = "x86_64")]
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f")]
    unsafe fn row_avx512(
        &self,
        src: InputRows<'_>,
        oy: usize,
        ky_lo: usize,
        ky_hi: usize,
        oxs: Range<usize>,
        chans: Range<usize>,
        t: &mut DwTarget<'_, '_>,
    ) {
        let w = self.w;
        let (tap, lo, hi) = self.simd_row(src, oy, ky_lo, ky_hi, &oxs, &chans, t);
        let bias = self.bias.as_ptr();
        // SAFETY: pointers come from the asserted slices; taps are restricted to valid input
        // columns (`valid_taps`, or the interior range), channels to the tile's blocks and `c`
        // by the masks, pixels to `oxs` (tile rows `first..first + oxs.len()`).
        unsafe {
            for ox in (oxs.start..lo).chain(hi..oxs.end) {
                let (kx_lo, kx_hi) = valid_taps(ox, w.stride_w, w.dil_w, w.pad_left, w.in_w, w.k_w);
                tap.pixel(ox, kx_lo, kx_hi, bias);
            }
            let mut ox = lo;
            while ox + 8 <= hi {
                // Stride 1 reuses input vectors across pixels; for stride 2 the plain
                // unrolled kernel measured faster.
                match (w.k_w, w.stride_w, w.dil_w) {
                    (3, 1, 1) => tap.pixels_slide::<8, 3, 1>(ox, bias),
                    (5, 1, 1) => tap.pixels_slide::<8, 5, 1>(ox, bias),
                    (3, _, _) => tap.pixels_k::<8, 3>(ox, bias),
                    (5, _, _) => tap.pixels_k::<8, 5>(ox, bias),
                    _ => tap.pixels::<8>(ox, 0, w.k_w, bias),
                }
                ox += 8;
            }
            while ox + 4 <= hi {
                tap.pixels::<4>(ox, 0, w.k_w, bias);
                ox += 4;
            }
            while ox < hi {
                tap.pixel(ox, 0, w.k_w, bias);
                ox += 1;
            }
        }
    }

    /// # Safety
    /// The CPU must support NEON; as [`PackedDepthwise::row_avx512`] otherwise.
    #[cfg(target_arch = "aarch64")]
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "neon")]
    unsafe fn row_neon(
        &self,
        src: InputRows<'_>,
        oy: usize,
        ky_lo: usize,
        ky_hi: usize,
        oxs: Range<usize>,
        chans: Range<usize>,
        t: &mut DwTarget<'_, '_>,
    ) {
        let w = self.w;
        let (tap, lo, hi) = self.simd_row(src, oy, ky_lo, ky_hi, &oxs, &chans, t);
        let bias = self.bias.as_ptr();
        // SAFETY: as in `row_avx512`: taps restricted to valid input columns, channels to the
        // tile's (`chans`, whole vectors then single values), pixels to `oxs`.
        unsafe {
            for ox in (oxs.start..lo).chain(hi..oxs.end) {
                let (kx_lo, kx_hi) = valid_taps(ox, w.stride_w, w.dil_w, w.pad_left, w.in_w, w.k_w);
                tap.pixel_neon(ox, kx_lo, kx_hi, bias);
            }
            let mut ox = lo;
            while ox + 8 <= hi {
                match (w.k_w, w.stride_w, w.dil_w) {
                    (3, 1, 1) => tap.pixels_slide_neon::<8, 3, 1>(ox, bias),
                    (5, 1, 1) => tap.pixels_slide_neon::<8, 5, 1>(ox, bias),
                    (3, 2, 1) => tap.pixels_slide_neon::<8, 3, 2>(ox, bias),
                    (5, 2, 1) => tap.pixels_slide_neon::<8, 5, 2>(ox, bias),
                    _ => tap.pixels_neon::<8>(ox, 0, w.k_w, bias),
                }
                ox += 8;
            }
            while ox + 4 <= hi {
                tap.pixels_neon::<4>(ox, 0, w.k_w, bias);
                ox += 4;
            }
            while ox < hi {
                tap.pixel_neon(ox, 0, w.k_w, bias);
                ox += 1;
            }
        }
    }
}

/// One output row of a depthwise convolution on a SIMD path: the valid input rows and their
/// filter rows, and where the pixels go.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
struct DwRow {
    rows: [*const f32; MAX_TAPS],
    wrows: [*const f32; MAX_TAPS],
    nky: usize,
    c: usize,
    sw: usize,
    dw: usize,
    pl: usize,
    /// Channel blocks of 16 to compute (AVX-512).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    blocks: Range<usize>,
    /// Channels to compute (NEON: vectors of 4, then single values).
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    chans: Range<usize>,
    /// Pixel `ox` is stored at `out + (ox - ox0) * out_stride`, channel `ch` at
    /// `ch - chans.start` (`(b - blocks.start) * 16` for block `b`) from there.
    ox0: usize,
    out: *mut f32,
    out_stride: usize,
}

/// Most filter rows a depthwise filter may have on the SIMD paths.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const MAX_TAPS: usize = 16;

/// Where a depthwise convolution reads its input rows: the whole input tensor, or a ring of
/// rows a kernel computes as it goes (row `iy` in slot `iy % slots`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct InputRows<'a> {
    data: &'a [f32],
    /// Values per input row (`in_w * in_c`).
    row_len: usize,
    /// Slots of the ring; 0 for the whole tensor.
    slots: usize,
}

impl<'a> InputRows<'a> {
    /// The whole input, rows of `row_len` values.
    pub(crate) fn dense(data: &'a [f32], row_len: usize) -> InputRows<'a> {
        InputRows {
            data,
            row_len,
            slots: 0,
        }
    }

    /// A ring of `slots` rows of `row_len` values in `data`: input row `iy` is slot
    /// `iy % slots`.
    pub(crate) fn ring(data: &'a [f32], row_len: usize, slots: usize) -> InputRows<'a> {
        assert!(
            slots > 0 && data.len() >= slots * row_len,
            "depthwise: ring too short"
        );
        InputRows {
            data,
            row_len,
            slots,
        }
    }

    /// Input row `iy` (all its pixels and channels).
    #[inline]
    fn row(&self, iy: usize) -> &'a [f32] {
        let slot = if self.slots == 0 { iy } else { iy % self.slots };
        &self.data[slot * self.row_len..(slot + 1) * self.row_len]
    }
}

/// Where one output row's pixels go: tile row `first + ox - ox0` holds pixel `ox`.
struct DwTarget<'t, 'a> {
    tile: &'t mut Tile<'a>,
    first: usize,
    ox0: usize,
}

impl DwTarget<'_, '_> {
    /// The tile's channels of pixel `ox`.
    fn pixel(&mut self, ox: usize) -> &mut [f32] {
        self.tile.row(self.first + ox - self.ox0)
    }
}

/// Most parts of whole output rows a split makes.
const MAX_ROW_PARTS: usize = 64;
/// Most parts of channel blocks a split makes.
const MAX_COL_PARTS: usize = 16;
/// What a part costs beyond its multiply-accumulates (claiming it, setting up its rows), in
/// multiply-accumulates: between two splits of the same largest share, the one of fewer parts.
const PART_COST: usize = 2048;

/// A split of a depthwise output: `rows` parts of whole output rows, cut evenly (part `i`
/// holds rows `out_h * i / rows..out_h * (i + 1) / rows`), by `cols` parts of channel blocks
/// of 16, cut likewise; parts numbered row-major.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Split {
    rows: usize,
    cols: usize,
}

/// The split [`PackedDepthwise::split`] describes, for the geometry `w` on `par`.
fn plan_split(par: &Par, w: &Window) -> Split {
    let threads = par.threads();
    let work = w.out_h * w.out_w * w.out_c * w.k_h * w.k_w;
    let max_parts = (work / MIN_MACS_PER_PART).min(CHUNKS_PER_THREAD * threads);
    if threads <= 1 || max_parts <= 1 {
        return Split { rows: 1, cols: 1 };
    }
    let want = if max_parts >= threads {
        max_parts / threads * threads
    } else {
        max_parts
    };
    // Whole rows first; where they do not even out the threads' shares, every row by the
    // fewest channel parts that make enough parts, up to the first count that is a multiple
    // of the threads. Channels are split only inside rows: a thread's share stays a run of
    // rows, the rows its thread wrote in the op before (`crate::kernels::threads`).
    let rows = want.min(w.out_h).min(MAX_ROW_PARTS);
    let mut best = (
        largest_share(par, w, Split { rows, cols: 1 }),
        Split { rows, cols: 1 },
    );
    let blocks = w.out_c.div_ceil(16);
    for cols in want.div_ceil(w.out_h).max(2)..=blocks.min(MAX_COL_PARTS) {
        let s = Split {
            rows: w.out_h,
            cols,
        };
        if s.rows > MAX_ROW_PARTS || work / (s.rows * cols) < MIN_MACS_PER_PART / 4 {
            break;
        }
        let share = largest_share(par, w, s);
        if share < best.0 {
            best = (share, s);
        }
        if (s.rows * cols).is_multiple_of(threads) {
            break;
        }
    }
    best.1
}

/// The largest share of one thread under `s` on `par`'s threads, in multiply-accumulates plus
/// [`PART_COST`] a part, with parts handed out by position.
fn largest_share(par: &Par, w: &Window, s: Split) -> usize {
    let blocks = w.out_c.div_ceil(16);
    let rows = |i: usize| w.out_h * (i + 1) / s.rows - w.out_h * i / s.rows;
    let chans = |j: usize| {
        let cut = |j: usize| (blocks * j / s.cols * 16).min(w.out_c);
        cut(j + 1) - cut(j)
    };
    let cost =
        |p: usize| rows(p / s.cols) * w.out_w * chans(p % s.cols) * w.k_h * w.k_w + PART_COST;
    let parts = s.rows * s.cols;
    (0..par.threads())
        .map(|t| {
            (par.first_part(t, parts)..par.first_part(t + 1, parts))
                .map(cost)
                .sum()
        })
        .max()
        .unwrap_or(0)
}

impl Kernel for PackedDepthwise {
    fn run(&self, io: StepIo<'_>) {
        PackedDepthwise::run(self, io.par, io.inputs.get(0), io.out, io.ep);
    }
}

/// A DEPTHWISE_CONV_2D whose filter or bias is computed at run time: copied on every run.
struct DynamicDepthwise(Window);

impl Kernel for DynamicDepthwise {
    fn run(&self, io: StepIo<'_>) {
        let bias = (io.inputs.len() > 2).then(|| io.inputs.get(2));
        PackedDepthwise::new(io.inputs.get(1), bias, self.0).run(
            io.par,
            io.inputs.get(0),
            io.out,
            io.ep,
        );
    }
}

/// Prepares a DEPTHWISE_CONV_2D.
pub(crate) fn prepare(cx: &PrepareCx, a: &ConvAttrs) -> Result<Prepared, String> {
    let f = cx.shape(1);
    let w = cx.window([f[1], f[2]], a);
    if cx.weights_dynamic() {
        if cx.tail.is_some() {
            return Err("a fused tail on a dynamic depthwise convolution".into());
        }
        return Ok(Prepared::new(DynamicDepthwise(w)));
    }
    let k = PackedDepthwise::new(cx.constant(1)?, cx.bias(2)?, w);
    Ok(Prepared::new(match cx.tail.clone() {
        Some(tail) => k.with_tail(tail),
        None => k,
    }))
}

#[cfg(test)]
mod tests;
