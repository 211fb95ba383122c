//! Per-channel mean and sum of squared deviations of an NHWC tensor `[hw, c]`, in f64, the
//! same for every thread count.
//!
//! The pixels are cut into blocks of [`BLOCK_PIXELS`]. Each block is read as a flat run of
//! values in groups of `lanes` ([`lanes`]: a multiple of both `c` and 16, so lane `j` always
//! holds channel `j % c` and the loops run on whole AVX-512 vectors whatever `c` is); a block's
//! lane sums and centred lane sums of squares (two passes over a block that stays in cache) are
//! independent of the others and computed over [`Par`]. The blocks are then merged in block
//! order (Chan et al.'s pairwise update, `M2 = Σ M2_b + n_b (mean_b - mean)²`, free of
//! cancellation).

use crate::kernels::Par;

/// Pixels per block of the statistics (a multiple of 16, so that every block but the last is
/// a whole number of lane groups).
pub(super) const BLOCK_PIXELS: usize = 256;

/// Lanes of the statistics' loops for `c` channels: the least common multiple of `c` and 16
/// when it is at most 256 (3 channels: 48; 4 and 8: 16; 32: 32), else `c`.
pub(super) fn lanes(c: usize) -> usize {
    let (mut a, mut b) = (c.max(1), 16);
    while b != 0 {
        (a, b) = (b, a % b);
    }
    let lcm = c.max(1) / a * 16;
    if lcm <= 256 { lcm } else { c.max(1) }
}

/// Pixels of block `b` of `hw` pixels.
fn block_pixels(b: usize, hw: usize) -> usize {
    ((b + 1) * BLOCK_PIXELS).min(hw) - b * BLOCK_PIXELS
}

/// f64 values of the scratch [`channel_stats`] uses for `hw` pixels of `c` channels.
pub(super) fn partial_len(hw: usize, c: usize) -> usize {
    hw.div_ceil(BLOCK_PIXELS) * 2 * lanes(c)
}

/// Per channel of `input [hw, c]`, the mean and the sum of squared deviations from it, in
/// f64. `partial` holds [`partial_len`] values of scratch.
pub(super) fn channel_stats(
    par: &Par,
    input: &[f32],
    c: usize,
    partial: &mut [f64],
) -> (Vec<f64>, Vec<f64>) {
    let l = lanes(c);
    let hw = input.len() / c;
    let partial = &mut partial[..partial_len(hw, c)];
    par.for_chunks(partial, 2 * l, 1, |b, acc| {
        let end = ((b + 1) * BLOCK_PIXELS).min(hw);
        block_widest(&input[b * BLOCK_PIXELS * c..end * c], c, acc);
    });
    let mut mean = vec![0f64; c];
    for (b, block) in partial.chunks_exact(2 * l).enumerate() {
        let n = block_pixels(b, hw) as f64;
        for (m, bm) in mean.iter_mut().zip(&block[..c]) {
            *m += bm * n;
        }
    }
    mean.iter_mut().for_each(|m| *m /= hw as f64);
    let mut m2 = vec![0f64; c];
    for (b, block) in partial.chunks_exact(2 * l).enumerate() {
        let n = block_pixels(b, hw) as f64;
        let (bm, bm2) = block.split_at(l);
        for (k, ((t, m), bm)) in m2.iter_mut().zip(&mean).zip(bm).enumerate() {
            let lanes_m2: f64 = bm2[k..].iter().step_by(c).sum();
            *t += lanes_m2 + n * (bm - m) * (bm - m);
        }
    }
    (mean, m2)
}

/// One block's statistics into `acc` (`2 * lanes(c)` values): its mean per channel repeated
/// over the first half's lanes (lane `j`: channel `j % c`), then its centred sums of squares
/// per lane in the second half (the lanes of a channel still to be added up). The common lane
/// counts run on fixed-size accumulators that stay in registers; every count computes the same
/// sums in the same order.
#[inline(always)]
fn block_inline(block: &[f32], c: usize, acc: &mut [f64]) {
    match acc.len() / 2 {
        16 => block_fixed::<16>(block, c, acc),
        32 => block_fixed::<32>(block, c, acc),
        48 => block_fixed::<48>(block, c, acc),
        64 => block_fixed::<64>(block, c, acc),
        _ => {
            let (mean, m2) = acc.split_at_mut(acc.len() / 2);
            block_lanes(block, c, mean, m2);
        }
    }
}

/// [`block_lanes`] on `L` lanes held in local arrays, then stored into `acc`.
#[inline(always)]
fn block_fixed<const L: usize>(block: &[f32], c: usize, acc: &mut [f64]) {
    let (mut mean, mut m2) = ([0f64; L], [0f64; L]);
    block_lanes(block, c, &mut mean, &mut m2);
    acc[..L].copy_from_slice(&mean);
    acc[L..2 * L].copy_from_slice(&m2);
}

/// The block's lane means (repeated per channel) into `mean` and centred lane sums of squares
/// into `m2` (both `lanes(c)` long).
#[inline(always)]
fn block_lanes(block: &[f32], c: usize, mean: &mut [f64], m2: &mut [f64]) {
    let l = mean.len();
    mean.fill(0.0);
    let mut groups = block.chunks_exact(l);
    for g in &mut groups {
        for (a, x) in mean.iter_mut().zip(g) {
            *a += *x as f64;
        }
    }
    for (a, x) in mean.iter_mut().zip(groups.remainder()) {
        *a += *x as f64;
    }
    // Lanes to channels, in lane order, then the channel means back over every lane.
    for j in c..l {
        mean[j % c] += mean[j];
    }
    let n = (block.len() / c) as f64;
    mean[..c].iter_mut().for_each(|s| *s /= n);
    for j in c..l {
        mean[j] = mean[j % c];
    }
    m2.fill(0.0);
    let mut groups = block.chunks_exact(l);
    for g in &mut groups {
        for ((a, x), m) in m2.iter_mut().zip(g).zip(mean.iter()) {
            let d = *x as f64 - m;
            *a += d * d;
        }
    }
    for ((a, x), m) in m2.iter_mut().zip(groups.remainder()).zip(mean.iter()) {
        let d = *x as f64 - m;
        *a += d * d;
    }
}

/// [`block_inline`] compiled for the widest vectors the CPU has: adds, subtractions and
/// products only (no fused multiply-add), so every ISA gives the same bits.
fn block_widest(block: &[f32], c: usize, acc: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (checked just above).
            unsafe { block_avx512(block, c, acc) };
            return;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            unsafe { block_avx2(block, c, acc) };
            return;
        }
    }
    block_inline(block, c, acc);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn block_avx512(block: &[f32], c: usize, acc: &mut [f64]) {
    block_inline(block, c, acc);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn block_avx2(block: &[f32], c: usize, acc: &mut [f64]) {
    block_inline(block, c, acc);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::data;

    #[test]
    fn lanes_hold_whole_pixels_and_vectors() {
        for c in 1..300 {
            let l = lanes(c);
            assert_eq!(l % c, 0, "{c}");
            assert!(l.is_multiple_of(16) || l == c, "{c}");
            assert_eq!((BLOCK_PIXELS * c) % l, 0, "{c}");
        }
        assert_eq!([lanes(3), lanes(4), lanes(8), lanes(32)], [48, 16, 16, 32]);
    }

    /// Means and sums of squared deviations of shifted data (mean 1000, spread 1) against a
    /// plain two-pass computation in f64, over shapes with a partial last block and lane group.
    #[test]
    fn stats_match_two_passes_in_f64() {
        for (hw, c) in [(1, 1), (17, 3), (300, 4), (513, 5), (1000, 32), (70, 300)] {
            let x: Vec<f32> = data(hw as u64, hw * c).iter().map(|v| v + 1000.0).collect();
            let mut partial = vec![f64::NAN; partial_len(hw, c)];
            let (mean, m2) = channel_stats(&Par::new(1), &x, c, &mut partial);
            for ch in 0..c {
                let vals: Vec<f64> = (0..hw).map(|p| x[p * c + ch] as f64).collect();
                let m = vals.iter().sum::<f64>() / hw as f64;
                let v = vals.iter().map(|x| (x - m) * (x - m)).sum::<f64>();
                assert!(
                    (mean[ch] - m).abs() <= 1e-12 * m.abs(),
                    "{hw}x{c} mean {ch}"
                );
                assert!(
                    (m2[ch] - v).abs() <= 1e-9 * v.max(1e-30),
                    "{hw}x{c} m2 {ch}"
                );
            }
        }
    }
}
