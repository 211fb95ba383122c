//! The normalising pass: `y = (x - mean) * mul + add` per channel on whole vectors, the
//! statistics turned into that affine map ([`affine`]), and the dense output written in blocks
//! that the epilogue then runs over in cache.

use super::stats;
use crate::kernels::{Epilogue, Par};

/// Values a part of the normalising pass must have at least before it is split over threads.
pub(super) const MIN_VALUES_PER_PART: usize = 1 << 15;

/// Values normalised before the epilogue runs over them (still in the first-level cache).
const EPILOGUE_BLOCK: usize = 4096;

/// The per-channel affine map of the normalisation, `y = (x - mean) * mul + add`, each
/// repeated over two lane groups (`2 * lanes` values, lane `j`: channel `j % c`), so that a
/// run starting at any pixel finds its pattern at lane `start % lanes`.
pub(super) struct Affine {
    lanes: usize,
    mean: Vec<f32>,
    mul: Vec<f32>,
    add: Vec<f32>,
}

impl Affine {
    /// The three patterns for a run starting at value `offset` of the tensor.
    pub(super) fn at(&self, offset: usize) -> (&[f32], &[f32], &[f32]) {
        let s = offset % self.lanes;
        let r = s..s + self.lanes;
        (&self.mean[r.clone()], &self.mul[r.clone()], &self.add[r])
    }
}

/// `out = (x - mean) * mul + add` over whole lane groups (`mean`, `mul`, `add`: one group),
/// then the tail.
#[inline(always)]
fn normalise_inline(x: &[f32], out: &mut [f32], mean: &[f32], mul: &[f32], add: &[f32]) {
    let l = mean.len();
    let mut xs = x.chunks_exact(l);
    let mut os = out.chunks_exact_mut(l);
    for (o, x) in (&mut os).zip(&mut xs) {
        for ((((o, x), m), k), a) in o.iter_mut().zip(x).zip(mean).zip(mul).zip(add) {
            *o = (x - m) * k + a;
        }
    }
    let (o, x) = (os.into_remainder(), xs.remainder());
    for ((((o, x), m), k), a) in o.iter_mut().zip(x).zip(mean).zip(mul).zip(add) {
        *o = (x - m) * k + a;
    }
}

/// [`normalise_inline`] compiled for the widest vectors the CPU has (a subtraction, a product
/// and an addition, never fused: the same bits in every ISA).
pub(super) fn normalise_widest(x: &[f32], out: &mut [f32], mean: &[f32], mul: &[f32], add: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (checked just above).
            unsafe { normalise_avx512(x, out, mean, mul, add) };
            return;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            unsafe { normalise_avx2(x, out, mean, mul, add) };
            return;
        }
    }
    normalise_inline(x, out, mean, mul, add);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn normalise_avx512(x: &[f32], out: &mut [f32], mean: &[f32], mul: &[f32], add: &[f32]) {
    normalise_inline(x, out, mean, mul, add);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn normalise_avx2(x: &[f32], out: &mut [f32], mean: &[f32], mul: &[f32], add: &[f32]) {
    normalise_inline(x, out, mean, mul, add);
}

/// The statistics of `input [hw, c]` turned into the affine map of the normalisation.
pub(super) fn affine(
    par: &Par,
    input: &[f32],
    c: usize,
    scale: Option<&[f32]>,
    bias: Option<&[f32]>,
    eps: f32,
) -> Affine {
    let hw = input.len() / c;
    let mut partial = vec![0f64; stats::partial_len(hw, c)];
    let (mean, m2) = stats::channel_stats(par, input, c, &mut partial);
    let lanes = stats::lanes(c);
    let pattern = |f: &dyn Fn(usize) -> f32| (0..2 * lanes).map(|j| f(j % c)).collect();
    Affine {
        lanes,
        mean: pattern(&|i| mean[i] as f32),
        mul: pattern(&|i| {
            let inv = 1.0 / (m2[i] / hw as f64 + eps as f64).sqrt();
            (inv * scale.map_or(1.0, |s| s[i] as f64)) as f32
        }),
        add: pattern(&|i| bias.map_or(0.0, |b| b[i])),
    }
}

/// The dense output `[hw, c]` of the normalisation by `map`, rows split over [`Par`], the
/// epilogue applied to each block of [`EPILOGUE_BLOCK`] values after it is normalised.
pub(super) fn normalise_dense(
    par: &Par,
    input: &[f32],
    c: usize,
    map: &Affine,
    ep: &Epilogue,
    output: &mut [f32],
) {
    let min_rows = MIN_VALUES_PER_PART.div_ceil(c);
    par.for_rows(output, c, min_rows, |rows, out| {
        let first = rows.start * c;
        let x = &input[first..rows.end * c];
        for (i, (o, x)) in out
            .chunks_mut(EPILOGUE_BLOCK)
            .zip(x.chunks(EPILOGUE_BLOCK))
            .enumerate()
        {
            let offset = first + i * EPILOGUE_BLOCK;
            let (m, k, a) = map.at(offset);
            normalise_widest(x, o, m, k, a);
            if !ep.is_identity() {
                ep.apply(o, offset, c);
            }
        }
    });
}
