//! Max and average pooling (TFLite MAX_POOL_2D, AVERAGE_POOL_2D), NHWC, batch 1.
//!
//! Padded positions are skipped: the maximum is over valid positions only and the average
//! divides by the count of valid positions, as TFLite does. `Window::out_c` must equal `in_c`.
//! Output pixels by channel blocks are split over [`Par`]; a global average sums fixed blocks
//! of pixels in parallel and adds their sums in block order. The epilogue (fused activation)
//! runs per tile.
//!
//! Dispatch: [`prepare`] resolves the window of a MAX_POOL_2D or AVERAGE_POOL_2D.

use heimdall_ir::{ConvAttrs, PoolAttrs};

use crate::kernels::window::valid_taps;
use crate::kernels::{Epilogue, Par, Window};
use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

/// Window taps (output values times window size) a part must have at least before the work is
/// split over threads (about 3 µs of one core's time: a job costs the pool ~1 µs when its threads spin, and a
/// thread's parts are the rows it wrote in the op before, `crate::kernels::threads`).
const MIN_VALUES_PER_PART: usize = 1 << 14;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Max,
    Avg,
}

/// `output[oy, ox, c] = ep(max of input[iy, ix, c] over the valid window positions)`.
pub fn max_pool(par: &Par, w: &Window, input: &[f32], output: &mut [f32], ep: &Epilogue) {
    pool(par, w, input, output, ep, Kind::Max, &mut []);
}

/// `output[oy, ox, c] = ep(mean of input[iy, ix, c] over the valid window positions)`.
/// A global average (one output pixel whose window is the whole input) is split over the
/// threads when `scratch` holds [`pool_scratch_len`] values, and summed on one thread
/// otherwise.
pub fn avg_pool(
    par: &Par,
    w: &Window,
    input: &[f32],
    output: &mut [f32],
    ep: &Epilogue,
    scratch: &mut [f32],
) {
    pool(par, w, input, output, ep, Kind::Avg, scratch);
}

/// Input pixels per partial sum of a global average: the sums of fixed blocks, added in block
/// order, whatever the threads.
const GLOBAL_BLOCK_PIXELS: usize = 256;

/// Values of scratch [`avg_pool`] needs to split a global average over threads (0 for other
/// windows): one partial sum per block of `GLOBAL_BLOCK_PIXELS` input pixels and channel.
pub fn pool_scratch_len(w: &Window) -> usize {
    if is_global(w) {
        (w.in_h * w.in_w).div_ceil(GLOBAL_BLOCK_PIXELS) * w.in_c
    } else {
        0
    }
}

/// Whether the window is one output pixel over the whole input, unpadded.
fn is_global(w: &Window) -> bool {
    (w.out_h, w.out_w, w.pad_top, w.pad_left) == (1, 1, 0, 0)
        && w.k_h == w.in_h
        && w.k_w == w.in_w
        && w.dil_h == 1
        && w.dil_w == 1
}

/// The mean over all pixels of `input` (`[pixels, c]`) into `out`, as the in-order sum of
/// per-block partial sums computed in parallel into `partial`.
fn global_avg(par: &Par, input: &[f32], c: usize, out: &mut [f32], partial: &mut [f32]) {
    let pixels = input.len() / c;
    let blocks = pixels.div_ceil(GLOBAL_BLOCK_PIXELS);
    let partial = &mut partial[..blocks * c];
    let min_blocks = MIN_VALUES_PER_PART.div_ceil(GLOBAL_BLOCK_PIXELS * c);
    par.for_chunks(partial, c, min_blocks, |b, acc| {
        acc.fill(0.0);
        let p0 = b * GLOBAL_BLOCK_PIXELS;
        let p1 = (p0 + GLOBAL_BLOCK_PIXELS).min(pixels);
        crate::kernels::isa::widest(|| block_sum(&input[p0 * c..p1 * c], c, acc));
    });
    out.fill(0.0);
    for acc in partial.chunks_exact(c) {
        out.iter_mut().zip(acc).for_each(|(o, a)| *o += *a);
    }
    let count = pixels as f32;
    out.iter_mut().for_each(|o| *o /= count);
}

/// Values summed per lane by [`block_sum`] before its lanes are folded into channels.
const SUM_LANES: usize = 256;

/// `acc[ch] += sum of x[p * c + ch]` over the pixels of `x`. For few channels the sum runs
/// over lanes of [`SUM_LANES`] values (`SUM_LANES / c` pixels side by side, one long loop),
/// the lanes then added per channel in lane order: a fixed order, whatever the threads.
#[inline(always)]
fn block_sum(x: &[f32], c: usize, acc: &mut [f32]) {
    if c > SUM_LANES / 2 {
        for x in x.chunks_exact(c) {
            acc.iter_mut().zip(x).for_each(|(a, x)| *a += *x);
        }
        return;
    }
    let len = SUM_LANES / c * c;
    let mut lanes = [0f32; SUM_LANES];
    let (whole, rest) = x.split_at(x.len() / len * len);
    for piece in whole.chunks_exact(len) {
        lanes[..len]
            .iter_mut()
            .zip(piece)
            .for_each(|(a, x)| *a += *x);
    }
    for (l, a) in lanes[..len].iter_mut().zip(rest) {
        *l += *a;
    }
    for row in lanes[..len].chunks_exact(c) {
        acc.iter_mut().zip(row).for_each(|(a, x)| *a += *x);
    }
}

fn pool(
    par: &Par,
    w: &Window,
    input: &[f32],
    output: &mut [f32],
    ep: &Epilogue,
    kind: Kind,
    scratch: &mut [f32],
) {
    let c = w.in_c;
    debug_assert_eq!(w.out_c, c);
    debug_assert_eq!(input.len(), w.in_h * w.in_w * c);
    let px = w.out_h * w.out_w;
    debug_assert_eq!(output.len(), px * c);
    if px == 0 || c == 0 {
        return;
    }
    if kind == Kind::Avg && is_global(w) && scratch.len() >= pool_scratch_len(w) {
        global_avg(par, input, c, output, scratch);
        if !ep.is_identity() {
            ep.apply(output, 0, c);
        }
        return;
    }
    // Pixels by channel blocks: a pool of few output pixels splits over its channels too.
    let work = px * c * w.k_h * w.k_w;
    let (tile_px, tile_c) = par.grid(px, c, work, MIN_VALUES_PER_PART, 1, 16);
    par.for_grid(output, c, tile_px, tile_c, |pixels, chans, tile| {
        crate::kernels::isa::widest(|| {
            pool_tile(w, input, kind, pixels.clone(), chans.clone(), tile)
        });
        if !ep.is_identity() {
            if chans.len() == c {
                ep.apply(tile.span(0..pixels.len()), pixels.start * c, c);
            } else {
                for (i, p) in pixels.enumerate() {
                    ep.apply(tile.row(i), p * c + chans.start, c);
                }
            }
        }
    });
}

/// Output pixels `pixels` (row-major), channels `chans`, of a pool into `tile` (one row per
/// pixel).
#[inline(always)]
fn pool_tile(
    w: &Window,
    input: &[f32],
    kind: Kind,
    pixels: std::ops::Range<usize>,
    chans: std::ops::Range<usize>,
    tile: &mut crate::kernels::par::Tile<'_>,
) {
    let c = w.in_c;
    // Output rows and columns whose whole window is inside the input.
    let inside = |o: usize, s: usize, d: usize, pad: usize, n: usize, k: usize| {
        o * s >= pad && o * s - pad + (k - 1) * d < n
    };
    // The offsets of a whole window's taps from its first, in the order they are taken (rows,
    // then columns): the same for every pixel whose window is inside the input.
    let mut taps = [0usize; MAX_FAST_TAPS];
    let n_taps = w.k_h * w.k_w;
    let fast = kind == Kind::Max && n_taps <= MAX_FAST_TAPS;
    if fast {
        for ky in 0..w.k_h {
            for kx in 0..w.k_w {
                taps[ky * w.k_w + kx] = (ky * w.dil_h * w.in_w + kx * w.dil_w) * c;
            }
        }
    }
    {
        for (i, p) in pixels.clone().enumerate() {
            let (oy, ox) = (p / w.out_w, p % w.out_w);
            if fast
                && inside(oy, w.stride_h, w.dil_h, w.pad_top, w.in_h, w.k_h)
                && inside(ox, w.stride_w, w.dil_w, w.pad_left, w.in_w, w.k_w)
            {
                // Every tap valid: the window's values read at fixed offsets.
                let base = ((oy * w.stride_h - w.pad_top) * w.in_w + ox * w.stride_w - w.pad_left)
                    * c
                    + chans.start;
                max_of_taps(input, base, &taps[..n_taps], tile.row(i));
                continue;
            }
            let (ky_lo, ky_hi) = valid_taps(oy, w.stride_h, w.dil_h, w.pad_top, w.in_h, w.k_h);
            let (kx_lo, kx_hi) = valid_taps(ox, w.stride_w, w.dil_w, w.pad_left, w.in_w, w.k_w);
            let o = tile.row(i);
            o.fill(if kind == Kind::Max {
                f32::NEG_INFINITY
            } else {
                0.0
            });
            for ky in ky_lo..ky_hi {
                let iy = oy * w.stride_h + ky * w.dil_h - w.pad_top;
                for kx in kx_lo..kx_hi {
                    let ix = ox * w.stride_w + kx * w.dil_w - w.pad_left;
                    let x = &input[(iy * w.in_w + ix) * c..][chans.clone()];
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
    }
}

/// Most taps of a window the interior path of a max pool takes (5x5 and smaller).
const MAX_FAST_TAPS: usize = 25;

/// Channels a max pool keeps in registers at a time.
const MAX_BLOCK: usize = 16;

/// `o[ch] = max over t in taps of input[base + t + ch]`, starting from negative infinity and
/// taking a value only when it is greater (`x > m ? x : m`, in the taps' order: the bits of
/// the tap-by-tap loop, NaNs skipped), in blocks of [`MAX_BLOCK`] channels held in registers.
#[inline(always)]
fn max_of_taps(input: &[f32], base: usize, taps: &[usize], o: &mut [f32]) {
    let mut blocks = o.chunks_exact_mut(MAX_BLOCK);
    let mut at = base;
    for block in &mut blocks {
        let mut m = [f32::NEG_INFINITY; MAX_BLOCK];
        for &t in taps {
            let x: &[f32; MAX_BLOCK] = input[at + t..at + t + MAX_BLOCK]
                .try_into()
                .expect("a block of MAX_BLOCK values");
            for (m, x) in m.iter_mut().zip(x) {
                *m = if *x > *m { *x } else { *m };
            }
        }
        block.copy_from_slice(&m);
        at += MAX_BLOCK;
    }
    let rest = blocks.into_remainder();
    if !rest.is_empty() {
        rest.fill(f32::NEG_INFINITY);
        for &t in taps {
            let x = &input[at + t..at + t + rest.len()];
            for (m, x) in rest.iter_mut().zip(x) {
                *m = if *x > *m { *x } else { *m };
            }
        }
    }
}

/// A pool over a resolved window.
struct Pool {
    w: Window,
    kind: Kind,
}

impl Kernel for Pool {
    fn run(&self, io: StepIo<'_>) {
        let (w, input) = (&self.w, io.inputs.get(0));
        pool(io.par, w, input, io.out, io.ep, self.kind, io.scratch);
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
    let w = cx.window(p.filter, &a);
    let scratch = if max { 0 } else { pool_scratch_len(&w) };
    Ok(Prepared::with_scratch(Pool { w, kind }, scratch))
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
            if max { max_pool(&Par::new(1), &w, &input, &mut out, &Epilogue::NONE) } else { avg_pool(&Par::new(1), &w, &input, &mut out, &Epilogue::NONE, &mut []) }
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
        avg_pool(&Par::new(1), &w, &input, &mut out, &Epilogue::NONE, &mut []);
        assert_eq!(out, vec![3.0, 4.5, 7.5, 9.0]);
        max_pool(&Par::new(1), &w, &input, &mut out, &Epilogue::NONE);
        assert_eq!(out, vec![5.0, 6.0, 8.0, 9.0]);
    }

    /// The interior path of a max pool (blocks of 16 channels and a remainder) matches the
    /// reference on windows with and without padding, at channel counts below, at and past a
    /// block, on 1 and 3 threads; NaNs are skipped and the first of equal values is kept, as
    /// the tap-by-tap loop does.
    #[test]
    fn max_pool_interior_blocks_match_the_reference() {
        for c in [3, 16, 24, 40, 64] {
            for (k, s, pad) in [
                (2, 2, Padding::Valid),
                (3, 2, Padding::Same),
                (3, 1, Padding::Same),
                (5, 1, Padding::Same),
            ] {
                let w = window(13, 11, c, c, (k, k), (s, s), 1, pad);
                let input = data(7, 13 * 11 * c);
                let want = reference(&w, &input, true);
                for threads in [1, 3] {
                    let mut out = vec![f32::NAN; w.out_h * w.out_w * c];
                    max_pool(&Par::new(threads), &w, &input, &mut out, &Epilogue::NONE);
                    assert_eq!(out, want, "c {c}, {k}x{k} stride {s}, {threads} threads");
                }
            }
        }
        // One 2x2 window of 17 channels: a NaN tap is skipped, and of +0 and -0 (equal) the
        // first taken is kept, in the block and in the remainder.
        let w = window(2, 2, 17, 17, (2, 2), (2, 2), 1, Padding::Valid);
        let mut input = vec![-1.0f32; 4 * 17];
        input[0] = f32::NAN;
        input[17] = 2.0;
        input[1] = 0.0;
        input[17 + 1] = -0.0;
        input[16] = -0.0;
        input[17 + 16] = 0.0;
        let mut out = vec![f32::NAN; 17];
        max_pool(&Par::new(1), &w, &input, &mut out, &Epilogue::NONE);
        assert_eq!(out[0], 2.0);
        assert_eq!(out[1].to_bits(), 0.0f32.to_bits());
        assert_eq!(out[16].to_bits(), (-0.0f32).to_bits());
        assert!(out[2..16].iter().all(|v| *v == -1.0));
    }

    #[test]
    fn pool_threads_bit_identical() {
        let w = window(64, 64, 24, 24, (3, 3), (2, 2), 1, Padding::Same);
        let input = data(1, 64 * 64 * 24);
        let mut a = vec![0.0; w.out_h * w.out_w * 24];
        let mut b = a.clone();
        avg_pool(&Par::new(1), &w, &input, &mut a, &Epilogue::NONE, &mut []);
        avg_pool(&Par::new(2), &w, &input, &mut b, &Epilogue::NONE, &mut []);
        assert_eq!(a, b);
    }

    /// A global average (128x128 pixels, and one block's worth) sums its blocks on any number
    /// of threads with the same bits, matches the reference with and without scratch, and a
    /// max pool of few pixels split over channels matches too.
    #[test]
    fn global_avg_and_few_pixel_pools_split_over_threads() {
        for (h, wd, c) in [(128, 128, 16), (16, 16, 96), (7, 9, 40)] {
            let w = window(h, wd, c, c, (h, wd), (h, wd), 1, Padding::Valid);
            assert!(is_global(&w));
            let input = data(4, h * wd * c);
            let reference = reference(&w, &input, false);
            let mut scratch = vec![f32::NAN; pool_scratch_len(&w)];
            let mut one = vec![f32::NAN; c];
            avg_pool(
                &Par::new(1),
                &w,
                &input,
                &mut one,
                &Epilogue::NONE,
                &mut scratch,
            );
            assert_close(&one, &reference);
            for threads in [2, 5, 16] {
                let mut out = vec![f32::NAN; c];
                avg_pool(
                    &Par::new(threads),
                    &w,
                    &input,
                    &mut out,
                    &Epilogue::NONE,
                    &mut scratch,
                );
                assert_eq!(one, out, "{h}x{wd}x{c} {threads} threads");
            }
            let mut serial = vec![f32::NAN; c];
            avg_pool(
                &Par::new(4),
                &w,
                &input,
                &mut serial,
                &Epilogue::NONE,
                &mut [],
            );
            assert_close(&serial, &reference);
        }
        let w = window(12, 12, 256, 256, (3, 3), (2, 2), 1, Padding::Same);
        let input = data(5, 12 * 12 * 256);
        let mut one = vec![f32::NAN; w.out_h * w.out_w * 256];
        max_pool(&Par::new(1), &w, &input, &mut one, &Epilogue::NONE);
        assert_close(&one, &reference(&w, &input, true));
        for threads in [3, 16] {
            let mut out = vec![f32::NAN; one.len()];
            max_pool(&Par::new(threads), &w, &input, &mut out, &Epilogue::NONE);
            assert_eq!(one, out);
        }
    }
}
