//! Shape helpers: broadcasting and padding arithmetic, and [`OpShapes`], what an op's shape
//! inference and cost see.

/// The shapes one op sees: its inputs' and its outputs' as the graph declares them (shape
/// inference checks the declared outputs against what the inputs imply; a reshape takes its
/// output shape from them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpShapes<'a> {
    /// Shapes of the op's inputs, in order.
    pub inputs: Vec<&'a [usize]>,
    /// Declared shapes of the op's outputs, in order.
    pub outputs: Vec<&'a [usize]>,
}

impl<'a> OpShapes<'a> {
    /// The shape of input `i`, or an error naming it.
    pub fn input(&self, i: usize) -> Result<&'a [usize], String> {
        self.inputs
            .get(i)
            .copied()
            .ok_or_else(|| format!("missing input {i}"))
    }

    /// The declared shape of output `i`, or an error naming it.
    pub fn output(&self, i: usize) -> Result<&'a [usize], String> {
        self.outputs
            .get(i)
            .copied()
            .ok_or_else(|| format!("missing output {i}"))
    }

    /// The shape of input `i`, empty when there is none (for costs, which never fail).
    pub fn input_or_empty(&self, i: usize) -> &'a [usize] {
        self.inputs.get(i).copied().unwrap_or_default()
    }

    /// Elements of input `i` (0 when there is none).
    pub fn input_numel(&self, i: usize) -> u64 {
        self.inputs
            .get(i)
            .map_or(0, |s| s.iter().product::<usize>() as u64)
    }

    /// Elements of output 0 (0 when there is none).
    pub fn output_numel(&self) -> u64 {
        self.outputs
            .first()
            .map_or(0, |s| s.iter().product::<usize>() as u64)
    }

    /// The shapes with only the first `n` inputs (an error names the first missing one).
    pub fn leading(&self, n: usize) -> Result<OpShapes<'a>, String> {
        if self.inputs.len() < n {
            return Err(format!("missing input {}", self.inputs.len()));
        }
        Ok(OpShapes {
            inputs: self.inputs[..n].to_vec(),
            outputs: self.outputs.clone(),
        })
    }

    /// Fails unless the op has exactly `n` inputs (`op` names it in the message).
    pub fn expect_inputs(&self, op: &str, n: usize) -> Result<(), String> {
        if self.inputs.len() == n {
            Ok(())
        } else {
            Err(format!(
                "{op}: expected {n} input(s), got {}",
                self.inputs.len()
            ))
        }
    }
}

/// Fails unless `s` has rank `r` (`what` names the tensor in the message).
pub fn need_rank(s: &[usize], r: usize, what: &str) -> Result<(), String> {
    if s.len() == r {
        Ok(())
    } else {
        Err(format!("{what} must have rank {r}, has shape {s:?}"))
    }
}

/// Fails unless `shape` holds one 4×4 matrix (`[1, 4, 4]`, `[4, 4]` or `[1, 1, 4, 4]`); `op`
/// names the op in the message.
pub fn check_matrix4(op: &str, shape: &[usize]) -> Result<(), String> {
    let ok = shape.len() >= 2
        && shape.len() <= 4
        && shape[shape.len() - 2..] == [4, 4]
        && shape[..shape.len() - 2].iter().all(|&d| d == 1);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{op}: the matrix input must have shape [1, 4, 4], got {shape:?}"
        ))
    }
}

/// NumPy-style broadcast of two shapes (aligned at the last dimension).
pub fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    let mut out = vec![0; rank];
    for i in 0..rank {
        let da = if i + a.len() >= rank {
            a[i + a.len() - rank]
        } else {
            1
        };
        let db = if i + b.len() >= rank {
            b[i + b.len() - rank]
        } else {
            1
        };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}

/// Output size and leading padding of TFLite `SAME` padding along one axis.
/// Returns `(out, pad_before, pad_after)`. TFLite's formula in signed arithmetic that saturates,
/// so that no size read from a model's bytes makes it panic or wrap: an empty axis (`input` 0)
/// gives an empty output, a zero stride is taken as 1, a total padding beyond `usize` is
/// `usize::MAX` (the callers check the shapes they build).
pub fn same_padding(
    input: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
) -> (usize, usize, usize) {
    let stride = stride.max(1);
    let out = input.div_ceil(stride);
    let wide = |v: usize| v as i128;
    let effective = (wide(kernel) - 1)
        .max(0)
        .saturating_mul(wide(dilation))
        .saturating_add(1);
    let total = (wide(out) - 1)
        .saturating_mul(wide(stride))
        .saturating_add(effective)
        .saturating_sub(wide(input))
        .max(0);
    let total = usize::try_from(total).unwrap_or(usize::MAX);
    (out, total / 2, total - total / 2)
}

/// Output size of a window along one axis with explicit padding, or `None` when the window does
/// not fit.
pub fn window_out(
    input: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
    pad: usize,
) -> Option<usize> {
    let effective = (kernel.checked_sub(1)?).checked_mul(dilation)? + 1;
    let padded = input.checked_add(pad)?;
    if padded < effective || stride == 0 {
        return None;
    }
    Some((padded - effective) / stride + 1)
}

/// Row-major strides of a shape.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// The shape as four NHWC dimensions, padding missing leading dimensions with 1.
pub fn as_nhwc(shape: &[usize]) -> [usize; 4] {
    let mut out = [1; 4];
    let n = shape.len().min(4);
    out[4 - n..].copy_from_slice(&shape[shape.len() - n..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_rules() {
        assert_eq!(broadcast(&[1, 4, 4, 8], &[8]), Some(vec![1, 4, 4, 8]));
        assert_eq!(
            broadcast(&[1, 4, 1, 8], &[1, 1, 5, 1]),
            Some(vec![1, 4, 5, 8])
        );
        assert_eq!(broadcast(&[3], &[4]), None);
        assert_eq!(broadcast(&[], &[2, 3]), Some(vec![2, 3]));
    }

    #[test]
    fn same_padding_matches_tflite() {
        // 128 input, 3x3 stride 2: out 64, total pad = 63*2+3-128 = 1 -> (0, 1).
        assert_eq!(same_padding(128, 3, 2, 1), (64, 0, 1));
        // 5x5 stride 1 on 16: out 16, total 4 -> (2, 2).
        assert_eq!(same_padding(16, 5, 1, 1), (16, 2, 2));
        // 2x2 stride 2 on 7: out 4, total 3*2+2-7 = 1 -> (0, 1).
        assert_eq!(same_padding(7, 2, 2, 1), (4, 0, 1));
    }

    /// Sizes from a model's bytes (found by the `tflite` fuzz target: an empty input axis made
    /// `out - 1` underflow) give TFLite's signed result or saturate; nothing wraps or panics.
    #[test]
    fn same_padding_of_hostile_sizes() {
        // Empty axis, 3x3 stride 1: out 0, total = -1 + 3 - 0 = 2 -> (1, 1).
        assert_eq!(same_padding(0, 3, 1, 1), (0, 1, 1));
        // A kernel and dilation whose window exceeds usize: the padding saturates.
        let max = usize::MAX;
        assert_eq!(same_padding(1, max, 1, 2), (1, max / 2, max - max / 2));
        assert_eq!(same_padding(5, 3, 0, 1), same_padding(5, 3, 1, 1));
        assert_eq!(same_padding(max, 1, max, 1), (1, 0, 0));
    }

    #[test]
    fn window_out_valid() {
        assert_eq!(window_out(130, 3, 2, 1, 0), Some(64));
        assert_eq!(window_out(2, 3, 1, 1, 0), None);
        assert_eq!(window_out(5, 1, 1, 1, 0), Some(5));
    }
}
