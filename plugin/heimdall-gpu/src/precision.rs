//! Storage precision of tensors and weights, and host-side conversion to and from bytes.

use half::f16;

use crate::layout::Phwc4;

/// How a tensor's values are stored in GPU memory. Arithmetic is f32, except in the convolutions
/// of f16 ops with [`crate::Tuning::f16_arithmetic`] on ([`crate::arith`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Precision {
    /// 32-bit floats (`array<vec4<f32>>`).
    F32,
    /// IEEE half floats with the `shader-f16` feature (`array<vec4<f16>>`, `enable f16;`).
    F16,
    /// Half floats packed two per `u32` (`array<vec2<u32>>`, `pack2x16float` /
    /// `unpack2x16float`): half the memory traffic on devices without `shader-f16`.
    PackedF16,
}

impl Precision {
    /// Every precision, for tests and catalogues.
    pub const ALL: [Precision; 3] = [Precision::F32, Precision::F16, Precision::PackedF16];

    /// Bytes per stored value.
    pub fn bytes_per_value(self) -> usize {
        match self {
            Precision::F32 => 4,
            Precision::F16 | Precision::PackedF16 => 2,
        }
    }

    /// Encodes f32 values as this precision's bytes (little-endian). F16 and packed f16 have the
    /// same bytes: `pack2x16float` puts the first value in the low half of the word.
    pub fn encode(self, values: &[f32]) -> Vec<u8> {
        match self {
            Precision::F32 => bytemuck::cast_slice(values).to_vec(),
            Precision::F16 | Precision::PackedF16 => values
                .iter()
                .flat_map(|&v| f16::from_f32(v).to_bits().to_le_bytes())
                .collect(),
        }
    }

    /// Decodes bytes of this precision into f32 values.
    pub fn decode(self, bytes: &[u8]) -> Vec<f32> {
        match self {
            Precision::F32 => bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            Precision::F16 | Precision::PackedF16 => bytes
                .chunks_exact(2)
                .map(|b| f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32())
                .collect(),
        }
    }

    /// Packs NHWC values into PHWC4 order as this precision's bytes in one pass, in `scratch`
    /// (kept by the caller between calls: no allocation once it has grown), and returns those
    /// bytes (the same bytes as `encode(&geom.pack(nhwc))`).
    pub(crate) fn encode_packed<'a>(
        self,
        geom: &Phwc4,
        nhwc: &[f32],
        scratch: &'a mut Vec<u32>,
    ) -> &'a [u8] {
        let n = geom.stored_values();
        let words = match self {
            Precision::F32 => n,
            Precision::F16 | Precision::PackedF16 => n.div_ceil(2),
        };
        if scratch.len() < words {
            scratch.resize(words, 0);
        }
        let words = &mut scratch[..words];
        match self {
            Precision::F32 => {
                geom.pack_with(nhwc, bytemuck::cast_slice_mut(words), 0.0, |v| v);
            }
            Precision::F16 | Precision::PackedF16 => {
                let halves: &mut [u16] = bytemuck::cast_slice_mut(words);
                geom.pack_with(nhwc, &mut halves[..n], 0, |v| f16::from_f32(v).to_bits());
            }
        }
        &bytemuck::cast_slice(words)[..n * self.bytes_per_value()]
    }

    /// Unpacks PHWC4 bytes of this precision into NHWC `f32`s in one pass (the same values as
    /// `geom.unpack(&self.decode(bytes))`).
    pub(crate) fn decode_unpacked(self, geom: &Phwc4, bytes: &[u8]) -> Vec<f32> {
        match self {
            Precision::F32 => match bytemuck::try_cast_slice::<u8, f32>(bytes) {
                Ok(v) => geom.unpack_with(v, |x| x),
                Err(_) => geom.unpack(&self.decode(bytes)),
            },
            Precision::F16 | Precision::PackedF16 => {
                match bytemuck::try_cast_slice::<u8, u16>(bytes) {
                    Ok(v) => geom.unpack_with(v, |b| f16::from_bits(b).to_f32()),
                    Err(_) => geom.unpack(&self.decode(bytes)),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip() {
        let v = [1.0f32, -2.5, 0.0, 65504.0, 1e-3];
        for p in Precision::ALL {
            let back = p.decode(&p.encode(&v));
            assert_eq!(back.len(), v.len());
            for (a, b) in back.iter().zip(&v) {
                assert!(
                    (a - b).abs() <= 1e-3 * b.abs().max(1e-3),
                    "{p:?}: {a} vs {b}"
                );
            }
        }
        assert_eq!(Precision::F16.encode(&[1.0]), vec![0x00, 0x3c]);
    }

    #[test]
    fn one_pass_packing_gives_the_bytes_of_pack_then_encode() {
        let g = Phwc4::of(&[1, 2, 3, 6]).unwrap();
        let v: Vec<f32> = (0..36).map(|i| i as f32 * 0.37 - 4.0).collect();
        let mut scratch = vec![7u32; 3]; // too short and dirty: must grow and be overwritten
        for p in Precision::ALL {
            let bytes = p.encode_packed(&g, &v, &mut scratch).to_vec();
            assert_eq!(bytes, p.encode(&g.pack(&v)), "{p:?}");
            assert_eq!(
                p.decode_unpacked(&g, &bytes),
                g.unpack(&p.decode(&bytes)),
                "{p:?}"
            );
        }
    }
}
