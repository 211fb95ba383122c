//! Values flowing between ONNX nodes: constants (folded at load) or IR tensors with the layout
//! the IR stores them in, and the conversions between layouts (NCHW models become NHWC).

use heimdall_ir::{OpKind, TensorId};

use crate::builder::Builder;
use crate::constant::Const;
use crate::error::{NodeResult, invalid};

/// How an IR tensor stores an ONNX tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// The IR shape is the ONNX shape.
    Native,
    /// ONNX `[N,C,H,W]` stored as IR `[N,H,W,C]`.
    Nhwc,
}

/// A computed tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tensor {
    pub id: TensorId,
    pub layout: Layout,
}

/// An ONNX value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Const(Const),
    Tensor(Tensor),
}

/// NCHW axis -> NHWC axis.
pub(crate) const NHWC_OF_NCHW: [usize; 4] = [0, 3, 1, 2];
/// Permutation taking NHWC data to NCHW (`out[i] = in[perm[i]]`).
pub(crate) const TO_NCHW: [usize; 4] = [0, 3, 1, 2];
/// Permutation taking NCHW data to NHWC.
pub(crate) const TO_NHWC: [usize; 4] = [0, 2, 3, 1];

/// The ONNX shape of an NHWC-stored `[n,h,w,c]`.
pub(crate) fn nchw_of(s: &[usize]) -> Vec<usize> {
    vec![s[0], s[3], s[1], s[2]]
}

/// The NHWC shape of an ONNX `[n,c,h,w]`.
pub(crate) fn nhwc_of(s: &[usize]) -> Vec<usize> {
    vec![s[0], s[2], s[3], s[1]]
}

/// Whether permuting `shape` by `perm` keeps the data order (only unit axes move).
pub(crate) fn is_reshape(shape: &[usize], perm: &[usize]) -> bool {
    let order: Vec<usize> = perm.iter().copied().filter(|&p| shape[p] != 1).collect();
    order.windows(2).all(|w| w[0] < w[1])
}

/// Transposes constant data: output axis `i` is input axis `perm[i]`.
pub(crate) fn permute_const(c: &Const, perm: &[usize]) -> Const {
    let r = c.shape.len();
    let out_shape: Vec<usize> = perm.iter().map(|&p| c.shape[p]).collect();
    let mut in_strides = vec![1usize; r];
    for d in (0..r.saturating_sub(1)).rev() {
        in_strides[d] = in_strides[d + 1] * c.shape[d + 1];
    }
    let n = c.values.len();
    let mut values = Vec::with_capacity(n);
    let mut coord = vec![0usize; r];
    for _ in 0..n {
        let at: usize = (0..r).map(|d| coord[d] * in_strides[perm[d]]).sum();
        values.push(c.values[at]);
        for d in (0..r).rev() {
            coord[d] += 1;
            if coord[d] < out_shape[d] {
                break;
            }
            coord[d] = 0;
        }
    }
    Const::new(out_shape, values, c.elem)
}

/// The ONNX shape of a value.
pub(crate) fn onnx_shape(b: &Builder, v: &Value) -> Vec<usize> {
    match v {
        Value::Const(c) => c.shape.clone(),
        Value::Tensor(t) => match t.layout {
            Layout::Native => b.shape(t.id).to_vec(),
            Layout::Nhwc => nchw_of(b.shape(t.id)),
        },
    }
}

/// Permutes an IR tensor (a reshape where only unit axes move).
pub(crate) fn permute(
    b: &mut Builder,
    id: TensorId,
    perm: &[usize],
    name: &str,
) -> NodeResult<TensorId> {
    let s = b.shape(id).to_vec();
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return Ok(id);
    }
    if is_reshape(&s, perm) {
        let shape = perm.iter().map(|&p| s[p]).collect();
        b.op_shaped(OpKind::Reshape, vec![id], name, shape)
    } else {
        b.op(
            OpKind::Transpose {
                perm: perm.to_vec(),
            },
            vec![id],
            name,
        )
    }
}

/// Reshapes an IR tensor (no op if the shape is already right).
pub(crate) fn reshape(
    b: &mut Builder,
    id: TensorId,
    shape: Vec<usize>,
    name: &str,
) -> NodeResult<TensorId> {
    if b.shape(id) == shape.as_slice() {
        return Ok(id);
    }
    b.op_shaped(OpKind::Reshape, vec![id], name, shape)
}

/// The value as an IR tensor in the ONNX shape.
pub(crate) fn native(b: &mut Builder, v: &Value, name: &str) -> NodeResult<TensorId> {
    match v {
        Value::Const(c) => b.constant(name, c.shape.clone(), c.as_f32()),
        Value::Tensor(t) => match t.layout {
            Layout::Native => Ok(t.id),
            Layout::Nhwc => permute(b, t.id, &TO_NCHW, &format!("{name}/to_nchw")),
        },
    }
}

/// The value as an NHWC IR tensor; values of rank < 4 get leading unit axes first (for
/// broadcasting against NHWC tensors).
pub(crate) fn nhwc(b: &mut Builder, v: &Value, name: &str) -> NodeResult<TensorId> {
    let shape = onnx_shape(b, v);
    if shape.len() > 4 {
        return invalid(format!("'{name}' of rank {} used as an image", shape.len()));
    }
    let mut s4 = vec![1; 4 - shape.len()];
    s4.extend(&shape);
    match v {
        Value::Const(c) => {
            let c4 = Const::new(s4, c.values.clone(), c.elem);
            let p = permute_const(&c4, &TO_NHWC);
            b.constant(name, p.shape.clone(), p.as_f32())
        }
        Value::Tensor(t) if t.layout == Layout::Nhwc => Ok(t.id),
        Value::Tensor(t) => {
            let r = reshape(b, t.id, s4, &format!("{name}/rank4"))?;
            permute(b, r, &TO_NHWC, &format!("{name}/to_nhwc"))
        }
    }
}

/// The value in the given layout.
pub(crate) fn in_layout(
    b: &mut Builder,
    v: &Value,
    layout: Layout,
    name: &str,
) -> NodeResult<TensorId> {
    match layout {
        Layout::Native => native(b, v, name),
        Layout::Nhwc => nhwc(b, v, name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constant::Elem;

    #[test]
    fn permute_const_transposes() {
        let c = Const::new(vec![2, 3], (0..6).map(|v| v as f64).collect(), Elem::Float);
        let t = permute_const(&c, &[1, 0]);
        assert_eq!(t.shape, vec![3, 2]);
        assert_eq!(t.values, vec![0., 3., 1., 4., 2., 5.]);
        assert!(is_reshape(&[1, 5, 1, 1], &[0, 2, 3, 1]));
        assert!(!is_reshape(&[1, 5, 2, 2], &[0, 2, 3, 1]));
    }
}
