//! Arithmetic precision of the convolution kernels: f32 FMAs (whatever the storage), or
//! `vec4<f16>` FMAs where the device has `SHADER_F16` and the op stores f16, with f32
//! accumulation where the reduction is long. Chosen per op by [`Arith::choose`].
//!
//! Why chunks: an f16 running sum of `n` products carries a rounding error growing with `n`
//! (about `sqrt(n)` half-ulps of the sum, 2^-11 each). Sums of at most [`F16_TERMS`] products
//! stay in f16; longer ones add f16 partial sums of at most [`F16_TERMS`] products into f32
//! accumulators (one conversion and add per partial, a few percent of the FMAs).

use crate::precision::Precision;

/// The longest sum of products kept in one f16 accumulator.
pub const F16_TERMS: usize = 64;

/// [`F16_TERMS`], or `HEIMDALL_F16_TERMS=N` (for experiments: the cost of the f32 chunks).
fn f16_terms() -> usize {
    static TERMS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *TERMS.get_or_init(|| {
        std::env::var("HEIMDALL_F16_TERMS")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|&n| n > 0)
            .unwrap_or(F16_TERMS)
    })
}

/// How a kernel computes its sums of products.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arith {
    /// f32 FMAs and accumulators; f16 storage is converted on load (the fallback).
    F32,
    /// `vec4<f16>` FMAs into f16 accumulators over the whole reduction (short reductions).
    F16,
    /// `vec4<f16>` FMAs; f16 partial sums of this many input slices (4 products each) are
    /// added into f32 accumulators (long reductions).
    F16Chunked(u32),
}

impl Arith {
    /// The arithmetic of an op summing `terms` products, `chunk_terms` of them per unit the
    /// kernel can flush at (an input slice: 4), when f16 arithmetic is `enabled`
    /// ([`crate::Tuning::f16_arithmetic`]) and its input, weights and output all store
    /// [`Precision::F16`] (an op producing a graph output, or reading an f32 tensor, stays f32).
    pub fn choose(
        enabled: bool,
        [x, w, y]: [Precision; 3],
        terms: usize,
        chunk_terms: usize,
    ) -> Arith {
        if !enabled || [x, w, y] != [Precision::F16; 3] {
            return Arith::F32;
        }
        let limit = f16_terms();
        if terms <= limit {
            Arith::F16
        } else {
            Arith::F16Chunked((limit / chunk_terms.max(1)).max(1) as u32)
        }
    }

    /// Whether the kernel computes in f16.
    pub fn is_f16(self) -> bool {
        self != Arith::F32
    }

    /// WGSL type of the FMA operands (`vec4<f32>` or `vec4<f16>`).
    pub fn vec(self) -> &'static str {
        if self.is_f16() {
            "vec4<f16>"
        } else {
            "vec4<f32>"
        }
    }

    /// Suffix of the generated load accessor giving [`Arith::vec`] values (`_load_h` for f16).
    pub fn load(self) -> &'static str {
        if self.is_f16() { "_load_h" } else { "_load" }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Precision::{F16, F32, PackedF16};

    #[test]
    fn f16_arithmetic_only_for_f16_ops_and_chunked_when_long() {
        assert_eq!(Arith::choose(true, [F16; 3], 64, 4), Arith::F16);
        assert_eq!(Arith::choose(true, [F16; 3], 65, 4), Arith::F16Chunked(16));
        assert_eq!(
            Arith::choose(true, [F16; 3], 1152, 36),
            Arith::F16Chunked(1)
        );
        assert_eq!(Arith::choose(false, [F16; 3], 16, 4), Arith::F32);
        assert_eq!(Arith::choose(true, [F16, F16, F32], 16, 4), Arith::F32);
        assert_eq!(Arith::choose(true, [PackedF16; 3], 16, 4), Arith::F32);
    }
}
