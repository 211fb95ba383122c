//! DEQUANTIZE of an fp16 constant to f32 (exact), when the load-time passes did not fold it.
//!
//! Dispatch: [`prepare`] keeps the constant's fp16 bits.

use crate::ops::reshape::Copy;
use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

fn half_to_f32(bits: u16) -> f32 {
    // IEEE binary16 to binary32, exact.
    let sign = ((bits >> 15) as u32) << 31;
    let exp = ((bits >> 10) & 0x1f) as u32;
    let mant = (bits & 0x3ff) as u32;
    let v = match (exp, mant) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: value = m * 2^-24.
            let f = m as f32 * f32::from_bits(0x3380_0000);
            return if sign != 0 { -f } else { f };
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(v)
}

/// The fp16 bits of the constant input.
struct Dequantize(Vec<u16>);

impl Kernel for Dequantize {
    fn run(&self, io: StepIo<'_>) {
        io.out
            .iter_mut()
            .zip(&self.0)
            .for_each(|(o, &b)| *o = half_to_f32(b));
    }
}

/// Prepares a DEQUANTIZE: the constant's fp16 bits converted on every run, or a copy of an
/// input that has none.
pub(crate) fn prepare(cx: &PrepareCx) -> Result<Prepared, String> {
    let t = cx.graph.tensor(cx.op.inputs[0]);
    let bits = t.constant.as_ref().and_then(|c| {
        if c.sparsity.is_none() {
            c.fp16.clone()
        } else {
            None
        }
    });
    Ok(match bits {
        Some(bits) => Prepared::new(Dequantize(bits)),
        None => Prepared::new(Copy),
    })
}

#[cfg(test)]
mod tests {
    use super::half_to_f32;

    #[test]
    fn half_conversion_is_exact() {
        // 1.0, -2.0, 65504 (max), smallest subnormal 2^-24, 0.333 ≈ 0x3555.
        assert_eq!(half_to_f32(0x3c00), 1.0);
        assert_eq!(half_to_f32(0xc000), -2.0);
        assert_eq!(half_to_f32(0x7bff), 65504.0);
        assert_eq!(half_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(half_to_f32(0x3555), 0.333_251_95);
        assert!(half_to_f32(0x7c00).is_infinite());
    }
}
