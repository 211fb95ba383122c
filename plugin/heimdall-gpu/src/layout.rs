//! PHWC4: a `[H, W, C]` tensor (batch 1) stored as `ceil(C/4)` slices of `[H, W, 4]`,
//! zero-padded; vec4 index `(slice * H + y) * W + x`, element `e` is lane `e % 4` of vec4 `e / 4`.

use heimdall_ir::shape::as_nhwc;

use crate::error::GpuError;

/// The PHWC4 geometry of a tensor (its shape right-aligned into NHWC, batch 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phwc4 {
    /// Height.
    pub h: usize,
    /// Width.
    pub w: usize,
    /// Channels.
    pub c: usize,
}

impl Phwc4 {
    /// The geometry of a tensor shape (rank ≤ 4, leading dimension 1 when rank is 4).
    pub fn of(shape: &[usize]) -> Result<Phwc4, GpuError> {
        let [n, h, w, c] = as_nhwc(shape);
        if shape.len() > 4 || n != 1 {
            return Err(GpuError::Unsupported(format!(
                "tensor shape {shape:?}: the GPU backend needs batch 1 and rank ≤ 4"
            )));
        }
        Ok(Phwc4 { h, w, c })
    }

    /// Number of channel slices, `ceil(C / 4)` (at least 1 so empty tensors still bind).
    pub fn slices(&self) -> usize {
        self.c.div_ceil(4).max(1)
    }

    /// Number of values of the tensor itself (`h * w * c`, no padding lanes).
    pub fn values(&self) -> usize {
        self.h * self.w * self.c
    }

    /// Number of vec4 values stored.
    pub fn vec4s(&self) -> usize {
        self.slices() * self.h * self.w
    }

    /// Number of scalar values stored (including padding lanes).
    pub fn stored_values(&self) -> usize {
        4 * self.vec4s()
    }

    /// Packs NHWC values (`h * w * c` of them) into PHWC4 order, zero-padded.
    pub fn pack(&self, nhwc: &[f32]) -> Vec<f32> {
        let mut out = vec![0.0; self.stored_values()];
        self.pack_with(nhwc, &mut out, 0.0, |v| v);
        out
    }

    /// Packs NHWC values into PHWC4 order in `out` (`stored_values()` long), each converted by
    /// `put`, padding lanes set to `zero`; writes `out` front to back in one pass (the upload
    /// path: straight into the storage precision, no intermediate copy). Values beyond the
    /// end of a short `nhwc` (or of `out`) are left out.
    pub fn pack_with<T: Copy>(&self, nhwc: &[f32], out: &mut [T], zero: T, put: impl Fn(f32) -> T) {
        let (hw, c) = (self.h * self.w, self.c);
        for (s, dst) in out.chunks_mut(4 * hw).take(self.slices()).enumerate() {
            let lanes = c.saturating_sub(4 * s).min(4);
            if c == 4 {
                for (d, &v) in dst.iter_mut().zip(nhwc) {
                    *d = put(v);
                }
                continue;
            }
            for (p, d) in dst.chunks_exact_mut(4).enumerate() {
                let src = nhwc.get(p * c + 4 * s..).unwrap_or(&[]);
                for (l, d) in d.iter_mut().enumerate() {
                    *d = match src.get(l) {
                        Some(&v) if l < lanes => put(v),
                        _ => zero,
                    };
                }
            }
        }
    }

    /// Unpacks PHWC4 values into NHWC order (dropping padding lanes).
    pub fn unpack(&self, phwc4: &[f32]) -> Vec<f32> {
        self.unpack_with(phwc4, |v| v)
    }

    /// Unpacks PHWC4 values of any storage type into NHWC `f32`s, each converted by `get`, in
    /// one pass (the readback path: straight from the mapped staging buffer). Values missing
    /// from a short `phwc4` read as 0.
    pub fn unpack_with<T: Copy>(&self, phwc4: &[T], get: impl Fn(T) -> f32) -> Vec<f32> {
        let (hw, c) = (self.h * self.w, self.c);
        let mut out = vec![0.0; hw * c];
        if c == 0 {
            return out;
        }
        if c == 4 {
            for (d, &v) in out.iter_mut().zip(phwc4) {
                *d = get(v);
            }
            return out;
        }
        for (s, src) in phwc4.chunks(4 * hw).take(self.slices()).enumerate() {
            let lanes = c.saturating_sub(4 * s).min(4);
            for (p, v) in src.chunks_exact(4).enumerate() {
                let dst = &mut out[p * c + 4 * s..][..lanes];
                for (d, &v) in dst.iter_mut().zip(v) {
                    *d = get(v);
                }
            }
        }
        out
    }

    /// Scalar index of element `(y, x, ch)` in PHWC4 storage.
    pub fn index(&self, y: usize, x: usize, ch: usize) -> usize {
        (((ch / 4) * self.h + y) * self.w + x) * 4 + ch % 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_unpack_round_trip_and_padding() {
        let g = Phwc4::of(&[1, 2, 3, 5]).unwrap();
        assert_eq!((g.slices(), g.vec4s()), (2, 12));
        let v: Vec<f32> = (0..30).map(|i| i as f32 + 1.0).collect();
        let p = g.pack(&v);
        assert_eq!(p.len(), 48);
        // Element (y=0, x=1, c=4) is slice 1, vec4 (1*2+0)*3+1 = 7, lane 0.
        assert_eq!(p[7 * 4], v[5 + 4]); // pixel (0, 1) starts at 1 * 5
        // Padding lanes of slice 1 are zero.
        assert_eq!(&p[7 * 4 + 1..7 * 4 + 4], &[0.0, 0.0, 0.0]);
        assert_eq!(g.unpack(&p), v);
    }

    #[test]
    fn pack_and_unpack_agree_with_the_index_formula_for_every_channel_count() {
        for c in [1, 2, 3, 4, 5, 8, 9, 13] {
            let g = Phwc4::of(&[1, 3, 5, c]).unwrap();
            let v: Vec<f32> = (0..15 * c).map(|i| i as f32 + 0.5).collect();
            let p = g.pack(&v);
            assert_eq!(p.len(), g.stored_values());
            for y in 0..3 {
                for x in 0..5 {
                    for ch in 0..g.slices() * 4 {
                        let want = if ch < c { v[(y * 5 + x) * c + ch] } else { 0.0 };
                        assert_eq!(p[g.index(y, x, ch)], want, "c={c} y={y} x={x} ch={ch}");
                    }
                }
            }
            assert_eq!(g.unpack(&p), v, "c={c}");
            let halves = {
                let mut h = vec![0u16; g.stored_values()];
                g.pack_with(&v, &mut h, 0, |x| half::f16::from_f32(x).to_bits());
                h
            };
            let back = g.unpack_with(&halves, |b| half::f16::from_bits(b).to_f32());
            assert!(
                back.iter()
                    .zip(&v)
                    .all(|(a, b)| (a - b).abs() <= 1e-3 * b.abs())
            );
        }
    }

    #[test]
    fn low_rank_shapes_are_right_aligned() {
        assert_eq!(
            Phwc4::of(&[1, 896, 16]).unwrap(),
            Phwc4 {
                h: 1,
                w: 896,
                c: 16
            }
        );
        assert_eq!(Phwc4::of(&[63]).unwrap(), Phwc4 { h: 1, w: 1, c: 63 });
        assert!(Phwc4::of(&[2, 4, 4, 3]).is_err());
    }
}
