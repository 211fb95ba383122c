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
        for y in 0..self.h {
            for x in 0..self.w {
                for ch in 0..self.c {
                    out[self.index(y, x, ch)] = nhwc[(y * self.w + x) * self.c + ch];
                }
            }
        }
        out
    }

    /// Unpacks PHWC4 values into NHWC order (dropping padding lanes).
    pub fn unpack(&self, phwc4: &[f32]) -> Vec<f32> {
        let mut out = Vec::with_capacity(self.h * self.w * self.c);
        for y in 0..self.h {
            for x in 0..self.w {
                for ch in 0..self.c {
                    out.push(phwc4[self.index(y, x, ch)]);
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
