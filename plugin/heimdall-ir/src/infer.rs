//! Shape inference of the ops that came with the ONNX importer (called by
//! [`crate::Graph::infer_shapes`]).

use crate::math::PadMode;
use crate::shape::broadcast;

/// Output shape of a transpose.
pub fn transpose(x: &[usize], perm: &[usize]) -> Result<Vec<usize>, String> {
    let mut seen = vec![false; x.len()];
    if perm.len() != x.len() {
        return Err(format!("permutation {perm:?} for rank {}", x.len()));
    }
    for &p in perm {
        if p >= x.len() || std::mem::replace(&mut seen[p], true) {
            return Err(format!("{perm:?} is not a permutation"));
        }
    }
    Ok(perm.iter().map(|&p| x[p]).collect())
}

/// Output shape of a broadcast binary op.
pub fn binary(a: &[usize], b: &[usize]) -> Result<Vec<usize>, String> {
    broadcast(a, b).ok_or_else(|| format!("shapes {a:?} and {b:?} do not broadcast"))
}

/// Output shape of a reduction.
pub fn reduce(x: &[usize], axes: &[usize], keep_dims: bool) -> Result<Vec<usize>, String> {
    if axes.iter().any(|&a| a >= x.len()) {
        return Err(format!("axes {axes:?} out of range for {x:?}"));
    }
    Ok(x.iter()
        .enumerate()
        .filter_map(|(d, &n)| match (axes.contains(&d), keep_dims) {
            (false, _) => Some(n),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect())
}

/// Output shape of instance normalisation of `x [1,H,W,C]` with optional `[C]` scale and bias.
pub fn instance_norm(x: &[usize], params: &[&[usize]]) -> Result<Vec<usize>, String> {
    if x.len() < 3 {
        return Err(format!("input must have rank 3 or 4, has shape {x:?}"));
    }
    let c = x[x.len() - 1];
    for p in params {
        if p.iter().product::<usize>() != c {
            return Err(format!("scale/bias {p:?} does not have {c} values"));
        }
    }
    Ok(x.to_vec())
}

/// Output shape of a padding with a mode; reflect needs each pad smaller than the axis.
pub fn pad(x: &[usize], pads: &[[usize; 2]], mode: &PadMode) -> Result<Vec<usize>, String> {
    if pads.len() != x.len() {
        return Err(format!("{} paddings for rank {}", pads.len(), x.len()));
    }
    for (d, (&n, p)) in x.iter().zip(pads).enumerate() {
        let ok = match mode {
            PadMode::Constant(_) => true,
            PadMode::Reflect => p[0] < n && p[1] < n || p[0] + p[1] == 0,
            PadMode::Edge => n > 0 || p[0] + p[1] == 0,
        };
        if !ok {
            return Err(format!(
                "axis {d} of {n} cannot be padded by {p:?} in {mode:?} mode"
            ));
        }
    }
    Ok(x.iter().zip(pads).map(|(n, p)| n + p[0] + p[1]).collect())
}

/// Output shape of a (batched, broadcast) matrix product.
pub fn matmul(a: &[usize], b: &[usize]) -> Result<Vec<usize>, String> {
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

/// Output shape of space-to-depth or depth-to-space on `x [1,H,W,C]`.
pub fn block_rearrange(x: &[usize], block: usize, to_depth: bool) -> Result<Vec<usize>, String> {
    if x.len() != 4 || block == 0 {
        return Err(format!(
            "input {x:?} must have rank 4 and block {block} >= 1"
        ));
    }
    let bb = block * block;
    if to_depth {
        if !x[1].is_multiple_of(block) || !x[2].is_multiple_of(block) {
            return Err(format!("{x:?} not divisible by block {block}"));
        }
        Ok(vec![x[0], x[1] / block, x[2] / block, x[3] * bb])
    } else {
        if !x[3].is_multiple_of(bb) {
            return Err(format!("{} channels not divisible by block {block}²", x[3]));
        }
        Ok(vec![x[0], x[1] * block, x[2] * block, x[3] / bb])
    }
}
