//! What a convolution applies after its products when the CPU fused the ops after it into it
//! (`crate::fuse_tail`): the per-channel `ADD` of a constant (a bias the model keeps apart,
//! as PP-OCR's exported batch normalisations do), then the op's [`Epilogue`] (the add's
//! residual and activation), then a `GELU`. Each is the operation the fused op ran, in its
//! order, so the output has the unfused ops' bits.

use crate::kernels::{Epilogue, vmath};

/// The ops after a convolution's products, fused into it.
#[derive(Clone, Debug, PartialEq)]
pub struct Tail {
    /// Per output channel, added to the products (one value per channel).
    pub shift: Vec<f32>,
    /// A `GELU` of the result, after the epilogue.
    pub gelu: bool,
}

impl Tail {
    /// `out = gelu?(ep(out + shift[c]))` in place, `out` a piece of the output tensor starting
    /// at element `offset`, of `channels` channels (`shift`'s length).
    pub fn apply(&self, out: &mut [f32], offset: usize, channels: usize, ep: &Epilogue) {
        debug_assert_eq!(self.shift.len(), channels);
        crate::kernels::isa::widest(|| add_channels(out, offset, &self.shift));
        ep.apply(out, offset, channels);
        if self.gelu {
            vmath::gelu_in_place(out);
        }
    }
}

/// `out[i] += shift[(offset + i) % shift.len()]`: the first partial row, then whole rows.
#[inline(always)]
fn add_channels(out: &mut [f32], offset: usize, shift: &[f32]) {
    let n = shift.len();
    if n == 0 {
        return;
    }
    let c0 = offset % n;
    let head = (n - c0).min(out.len());
    let (first, rest) = out.split_at_mut(head);
    for (x, s) in first.iter_mut().zip(&shift[c0..]) {
        *x += *s;
    }
    for row in rest.chunks_mut(n) {
        for (x, s) in row.iter_mut().zip(shift) {
            *x += *s;
        }
    }
}

/// Applies `tail` (when there is one, else `ep` alone) to a piece of the output: see
/// [`Tail::apply`].
pub(crate) fn finish(
    tail: Option<&Tail>,
    out: &mut [f32],
    offset: usize,
    channels: usize,
    ep: &Epilogue,
) {
    match tail {
        Some(t) => t.apply(out, offset, channels, ep),
        None => ep.apply(out, offset, channels),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::Act;
    use crate::kernels::testutil::data;

    /// Pieces starting anywhere in a row: the add of the channel's value, the epilogue, the
    /// GELU, as three separate passes over the whole tensor compute them.
    #[test]
    fn pieces_give_the_separate_passes() {
        let (rows, c) = (7, 5);
        let x = data(1, rows * c);
        let shift = data(2, c);
        let res = data(3, rows * c);
        let alpha = [0.25];
        let cases = [
            (Some(&res[..]), Act::Relu),
            (None, Act::Relu),
            (Some(&res[..]), Act::None),
            (None, Act::None),
            (Some(&res[..]), Act::Prelu(&alpha)),
        ];
        for (gelu, (residual, act)) in [false, true]
            .into_iter()
            .flat_map(|g| cases.map(|c| (g, c)))
        {
            let tail = Tail {
                shift: shift.clone(),
                gelu,
            };
            let ep = Epilogue { residual, act };
            let mut want: Vec<f32> = x
                .iter()
                .enumerate()
                .map(|(i, v)| v + shift[i % c])
                .collect();
            ep.apply(&mut want, 0, c);
            if gelu {
                want.iter_mut().for_each(|v| *v = vmath::gelu(*v));
            }
            for cut in [0, 1, 3, 5, 12, 34, 35] {
                let mut got = x.clone();
                let (a, b) = got.split_at_mut(cut);
                tail.apply(a, 0, c, &ep);
                tail.apply(b, cut, c, &ep);
                assert_eq!(got, want, "cut at {cut}, gelu {gelu}, {ep:?}");
            }
        }
    }
}
