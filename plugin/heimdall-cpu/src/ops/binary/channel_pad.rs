//! The `ADD` of a tensor and a zero `PAD` of another's channels fused into it
//! ([`crate::fuse`]): `full + pad(x)` without the padded copy of `x`.
//!
//! Dispatch: AVX-512 where the CPU has it (per pixel, 16 channels at a time, `x`'s values
//! loaded under a mask that reads zeros beyond its channels), else the portable loops. Both add
//! exactly what the pad then the add do: `full + x` on `x`'s channels, `full + 0.0` beyond them
//! (which turns -0 into +0), so every ISA and thread count gives the same bits.

use crate::kernels::{Epilogue, Isa, Par};
use crate::step::{Kernel, Prepared, StepIo};

/// Values a part must have at least before the pixels are split over threads (as the other
/// elementwise ops: about 3 µs of one core's time).
const MIN_VALUES_PER_PART: usize = 1 << 13;

/// `output = ep(full + x)` where `x` is `full`'s tensor with fewer channels (`in_c` of the
/// `channels` per pixel) padded with zeros at their end: an `ADD` of a zero channel `PAD` fused
/// into it (by the compile-time fusion pass, `fuse.rs`), the values and operations of the pad
/// then the add. Pixels are split over `par`.
pub fn add_channel_padded(
    par: &Par,
    full: &[f32],
    x: &[f32],
    channels: usize,
    in_c: usize,
    output: &mut [f32],
    ep: &Epilogue,
) {
    add_channel_padded_with(Isa::detect(), par, full, x, channels, in_c, output, ep);
}

/// [`add_channel_padded`] with the kernels of `isa` (the portable ones where this CPU lacks
/// it): for tests that compare them.
#[allow(clippy::too_many_arguments)]
pub(crate) fn add_channel_padded_with(
    isa: Isa,
    par: &Par,
    full: &[f32],
    x: &[f32],
    channels: usize,
    in_c: usize,
    output: &mut [f32],
    ep: &Epilogue,
) {
    assert!(
        in_c <= channels,
        "add_channel_padded: {in_c} > {channels} channels"
    );
    let pixels = output.len().checked_div(channels).unwrap_or(0);
    assert!(
        full.len() == output.len() && x.len() == pixels * in_c,
        "add_channel_padded: operand lengths"
    );
    let isa = isa.or_portable();
    let min_rows = MIN_VALUES_PER_PART.div_ceil(channels.max(1));
    par.for_rows(output, channels, min_rows, |rows, out| {
        let f = &full[rows.start * channels..rows.end * channels];
        let x = &x[rows.start * in_c..rows.end * in_c];
        match isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the CPU has AVX-512F (`or_portable`); `out` and `f` hold `rows.len()`
            // pixels of `channels` values, `x` of `in_c`.
            Isa::Avx512 => unsafe { avx512(out, f, x, channels, in_c) },
            _ => portable(out, f, x, channels, in_c),
        }
        if !ep.is_identity() {
            ep.apply(out, rows.start * channels, channels);
        }
    });
}

/// The portable loops: per pixel, `x`'s channels then the padded ones.
fn portable(out: &mut [f32], f: &[f32], x: &[f32], channels: usize, in_c: usize) {
    for ((o, f), x) in out
        .chunks_exact_mut(channels)
        .zip(f.chunks_exact(channels))
        .zip(
            x.chunks_exact(in_c.max(1))
                .chain(std::iter::repeat(&[][..])),
        )
    {
        let (o_in, o_pad) = o.split_at_mut(in_c);
        let (f_in, f_pad) = f.split_at(in_c);
        for ((o, f), x) in o_in.iter_mut().zip(f_in).zip(x) {
            *o = f + x;
        }
        for (o, f) in o_pad.iter_mut().zip(f_pad) {
            *o = f + 0.0;
        }
    }
}

/// Per pixel, 16 channels at a time: `full`'s under the mask of the channels left, `x`'s under
/// the mask of its channels left (zeros beyond them), added and stored under the first mask.
///
/// # Safety
/// The CPU has AVX-512F; `out` and `f` hold `out.len() / channels` pixels of `channels` values
/// and `x` as many of `in_c`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn avx512(out: &mut [f32], f: &[f32], x: &[f32], channels: usize, in_c: usize) {
    use std::arch::x86_64::*;
    let mask = |n: usize| -> __mmask16 {
        if n >= 16 {
            0xFFFF
        } else {
            ((1u32 << n) - 1) as __mmask16
        }
    };
    let pixels = out.len().checked_div(channels).unwrap_or(0);
    debug_assert!(f.len() >= pixels * channels && x.len() >= pixels * in_c);
    let (o, f, x) = (out.as_mut_ptr(), f.as_ptr(), x.as_ptr());
    for p in 0..pixels {
        let mut j = 0;
        while j < channels {
            let (m, mx) = (mask(channels - j), mask(in_c.saturating_sub(j)));
            // SAFETY: lanes under `m` lie in pixel `p`'s `channels` values of `f` and `out`,
            // lanes under `mx` in its `in_c` values of `x` (masked lanes are not accessed).
            unsafe {
                let fv = _mm512_maskz_loadu_ps(m, f.add(p * channels + j));
                let xv = _mm512_maskz_loadu_ps(mx, x.add(p * in_c + j));
                _mm512_mask_storeu_ps(o.add(p * channels + j), m, _mm512_add_ps(fv, xv));
            }
            j += 16;
        }
    }
}

/// An `ADD` of a tensor and a fused channel pad's input.
struct AddChannelPadded {
    /// Which input is the pad's input.
    padded: usize,
    channels: usize,
    in_c: usize,
}

impl Kernel for AddChannelPadded {
    fn run(&self, io: StepIo<'_>) {
        let (full, x) = (io.inputs.get(1 - self.padded), io.inputs.get(self.padded));
        add_channel_padded(io.par, full, x, self.channels, self.in_c, io.out, io.ep);
    }
}

/// The kernel of an `ADD` whose input `padded` (of shape `a` if 0, else `b`) is the input of a
/// zero channel pad fused into it.
pub(super) fn prepare(padded: usize, a: &[usize], b: &[usize]) -> Result<Prepared, String> {
    let (x, full) = if padded == 0 { (a, b) } else { (b, a) };
    let (Some((&channels, full_px)), Some((&in_c, x_px))) = (full.split_last(), x.split_last())
    else {
        return Err("a channel-padded add of scalars".into());
    };
    if in_c > channels || full_px != x_px || padded > 1 {
        return Err(format!(
            "cannot add {x:?} padded to the channels of {full:?}"
        ));
    }
    Ok(Prepared::new(AddChannelPadded {
        padded,
        channels,
        in_c,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::Act;
    use crate::kernels::testutil::data;

    /// Every ISA this CPU runs gives the pad-then-add's bits (signed zeros included: -0 plus
    /// the pad's +0 is +0), with and without an epilogue, for channel counts around the
    /// 16-lane vector.
    #[test]
    fn every_isa_gives_the_pad_then_add_bits() {
        for (in_c, channels) in [(24, 28), (16, 16), (15, 17), (1, 40), (33, 48), (0, 3)] {
            let pixels = 37;
            let mut full = data(1, pixels * channels);
            full[..channels].fill(-0.0);
            let mut x = data(2, pixels * in_c);
            x[..in_c].fill(-0.0);
            let mut padded = vec![0.0f32; pixels * channels];
            for p in 0..pixels {
                padded[p * channels..p * channels + in_c]
                    .copy_from_slice(&x[p * in_c..(p + 1) * in_c]);
            }
            let relu = Epilogue {
                residual: None,
                act: Act::Relu,
            };
            for ep in [Epilogue::NONE, relu] {
                let mut want: Vec<f32> = full.iter().zip(&padded).map(|(f, p)| f + p).collect();
                if !ep.is_identity() {
                    ep.apply(&mut want, 0, channels);
                }
                for isa in Isa::available() {
                    let mut out = vec![f32::NAN; want.len()];
                    let par = Par::new(1);
                    add_channel_padded_with(isa, &par, &full, &x, channels, in_c, &mut out, &ep);
                    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&out), bits(&want), "{isa:?} {in_c} -> {channels}");
                }
            }
        }
    }
}
