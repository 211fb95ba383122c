//! MATMUL: `a [..., M, K] x b [..., K, N]` with broadcast batch dimensions (ONNX `MatMul` of
//! two computed tensors; constant right-hand sides become FULLY_CONNECTED at import).

use crate::shape::{OpShapes, broadcast};

/// Output shape of a (batched, broadcast) matrix product.
pub fn infer(io: &OpShapes) -> Result<Vec<usize>, String> {
    shape(io.input(0)?, io.input(1)?)
}

/// The shape of the product of `a` and `b`, or an error when they do not multiply.
pub fn shape(a: &[usize], b: &[usize]) -> Result<Vec<usize>, String> {
    if a.len() < 2 || b.len() < 2 {
        return Err(format!("matmul of {a:?} and {b:?}: both need rank >= 2"));
    }
    let (m, k) = (a[a.len() - 2], a[a.len() - 1]);
    let (k2, n) = (b[b.len() - 2], b[b.len() - 1]);
    if k != k2 {
        return Err(format!(
            "matmul of {a:?} and {b:?}: inner dimensions differ"
        ));
    }
    let mut out = broadcast(&a[..a.len() - 2], &b[..b.len() - 2])
        .ok_or_else(|| format!("matmul batch dimensions of {a:?} and {b:?} do not broadcast"))?;
    out.extend([m, n]);
    Ok(out)
}

/// Multiply-adds of a matrix product: `K` per output value.
pub fn macs(io: &OpShapes) -> u64 {
    io.output_numel() * io.input_or_empty(0).last().copied().unwrap_or(0) as u64
}
