//! The graph: tensors, ops in topological order, inputs and outputs; validation.

use crate::error::IrError;
use crate::infer;
use crate::op::{Activation, Op, OpKind};
use crate::shape::{broadcast, window_out};
use crate::tensor::{TensorId, TensorInfo};

/// A model as one topological list of ops over a table of tensors.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    /// Model name (file stem).
    pub name: String,
    /// Every tensor: activations, constants, inputs, outputs.
    pub tensors: Vec<TensorInfo>,
    /// Ops in execution (topological) order.
    pub ops: Vec<Op>,
    /// Graph inputs, in the model's order.
    pub inputs: Vec<TensorId>,
    /// Graph outputs, in the model's order.
    pub outputs: Vec<TensorId>,
}

/// Largest rank the IR accepts.
pub const MAX_RANK: usize = 4;

impl Graph {
    /// The tensor behind an id.
    pub fn tensor(&self, id: TensorId) -> &TensorInfo {
        &self.tensors[id.index()]
    }

    /// For each tensor, the index of the op producing it (None for inputs and constants).
    pub fn producers(&self) -> Vec<Option<usize>> {
        let mut p = vec![None; self.tensors.len()];
        for (i, op) in self.ops.iter().enumerate() {
            for o in &op.outputs {
                p[o.index()] = Some(i);
            }
        }
        p
    }

    /// For each tensor, the indices of the ops reading it (inputs and epilogues).
    pub fn consumers(&self) -> Vec<Vec<usize>> {
        let mut c = vec![Vec::new(); self.tensors.len()];
        for (i, op) in self.ops.iter().enumerate() {
            for t in op.reads() {
                if c[t.index()].last() != Some(&i) {
                    c[t.index()].push(i);
                }
            }
        }
        c
    }

    /// For each tensor, the index of the last op reading it; graph outputs live to the end
    /// (`usize::MAX`).
    pub fn last_uses(&self) -> Vec<Option<usize>> {
        let mut last = vec![None; self.tensors.len()];
        for (i, op) in self.ops.iter().enumerate() {
            for t in op.reads() {
                last[t.index()] = Some(i);
            }
        }
        for o in &self.outputs {
            last[o.index()] = Some(usize::MAX);
        }
        last
    }

    /// Checks references, topological order, ranks and every op's shapes. Errors name the op.
    pub fn validate(&self) -> Result<(), IrError> {
        let nt = self.tensors.len();
        for (i, t) in self.tensors.iter().enumerate() {
            if t.shape.len() > MAX_RANK {
                return Err(IrError::Tensor {
                    index: i,
                    name: t.name.clone(),
                    message: format!("rank {} > {MAX_RANK}", t.shape.len()),
                });
            }
            if let Some(c) = &t.constant {
                let stored = if c.sparsity.is_some() {
                    None
                } else {
                    Some(t.numel())
                };
                if stored.is_some_and(|n| n != c.values.len()) {
                    return Err(IrError::Tensor {
                        index: i,
                        name: t.name.clone(),
                        message: format!("shape {:?} but {} values", t.shape, c.values.len()),
                    });
                }
            }
        }
        let mut available = vec![false; nt];
        for (i, t) in self.tensors.iter().enumerate() {
            available[i] = t.is_constant();
        }
        for &id in &self.inputs {
            let Some(a) = available.get_mut(id.index()) else {
                return Err(IrError::Graph(format!(
                    "input tensor {} does not exist",
                    id.0
                )));
            };
            *a = true;
        }
        for (index, op) in self.ops.iter().enumerate() {
            let err = |message: String| IrError::Op {
                index,
                name: op.kind.name().to_string(),
                message,
            };
            for t in op.reads() {
                if t.index() >= nt {
                    return Err(err(format!("reads tensor {} which does not exist", t.0)));
                }
                if !available[t.index()] {
                    return Err(err(format!(
                        "reads tensor {} ('{}') before it is produced",
                        t.0,
                        self.tensor(t).name
                    )));
                }
            }
            for o in &op.outputs {
                if o.index() >= nt {
                    return Err(err(format!("writes tensor {} which does not exist", o.0)));
                }
                if available[o.index()] {
                    return Err(err(format!(
                        "writes tensor {} ('{}') which is already defined",
                        o.0,
                        self.tensor(*o).name
                    )));
                }
                available[o.index()] = true;
            }
            let expected = self.infer_shapes(op).map_err(&err)?;
            if expected.len() != op.outputs.len() {
                return Err(err(format!(
                    "has {} outputs, expected {}",
                    op.outputs.len(),
                    expected.len()
                )));
            }
            for (o, e) in op.outputs.iter().zip(&expected) {
                let got = &self.tensor(*o).shape;
                if got.iter().product::<usize>() != e.iter().product::<usize>()
                    || squeeze(got) != squeeze(e)
                {
                    return Err(err(format!(
                        "output '{}' has shape {got:?}, its inputs give {e:?}",
                        self.tensor(*o).name
                    )));
                }
            }
            if let Some(r) = op.epilogue.residual {
                let out = &self.tensor(op.outputs[0]).shape;
                if &self.tensor(r).shape != out {
                    return Err(err(format!(
                        "residual shape {:?} differs from output {out:?}",
                        self.tensor(r).shape
                    )));
                }
            }
            if let Activation::Prelu(a) = op.epilogue.activation {
                let out = &self.tensor(op.outputs[0]).shape;
                if broadcast(out, &self.tensor(a).shape).as_ref() != Some(out) {
                    return Err(err(format!(
                        "PReLU alpha {:?} does not broadcast to {out:?}",
                        self.tensor(a).shape
                    )));
                }
            }
        }
        for &o in &self.outputs {
            if o.index() >= nt || !available[o.index()] {
                return Err(IrError::Graph(format!(
                    "output tensor {} is never produced",
                    o.0
                )));
            }
        }
        Ok(())
    }

    /// Output shapes implied by an op's input shapes and attributes.
    pub fn infer_shapes(&self, op: &Op) -> Result<Vec<Vec<usize>>, String> {
        let shape = |i: usize| -> Result<&[usize], String> {
            op.inputs
                .get(i)
                .map(|t| self.tensor(*t).shape.as_slice())
                .ok_or_else(|| format!("missing input {i}"))
        };
        let out_shape = |i: usize| -> Result<&[usize], String> {
            op.outputs
                .get(i)
                .map(|t| self.tensor(*t).shape.as_slice())
                .ok_or_else(|| format!("missing output {i}"))
        };
        let need_rank = |s: &[usize], r: usize, what: &str| -> Result<(), String> {
            if s.len() == r {
                Ok(())
            } else {
                Err(format!("{what} must have rank {r}, has shape {s:?}"))
            }
        };
        let bias_ok = |n: usize| -> Result<(), String> {
            match op.inputs.get(2) {
                Some(b) if self.tensor(*b).numel() != n => Err(format!(
                    "bias has {} values, expected {n}",
                    self.tensor(*b).numel()
                )),
                _ => Ok(()),
            }
        };
        Ok(match &op.kind {
            OpKind::Conv2d(a) => {
                let (x, f) = (shape(0)?, shape(1)?);
                need_rank(x, 4, "input")?;
                need_rank(f, 4, "filter")?;
                if f[3] != x[3] {
                    return Err(format!(
                        "filter {f:?} expects {} input channels, input has {}",
                        f[3], x[3]
                    ));
                }
                bias_ok(f[0])?;
                let [oh, ow] = conv_out(x, f, a)?;
                vec![vec![x[0], oh, ow, f[0]]]
            }
            OpKind::DepthwiseConv2d {
                attrs: a,
                multiplier,
            } => {
                let (x, f) = (shape(0)?, shape(1)?);
                need_rank(x, 4, "input")?;
                need_rank(f, 4, "filter")?;
                if f[3] != x[3] * multiplier {
                    return Err(format!(
                        "filter {f:?} does not match {} channels x multiplier {multiplier}",
                        x[3]
                    ));
                }
                bias_ok(f[3])?;
                let [oh, ow] = conv_out(x, f, a)?;
                vec![vec![x[0], oh, ow, f[3]]]
            }
            OpKind::TransposeConv2d(a) => {
                let (x, f) = (shape(0)?, shape(1)?);
                need_rank(x, 4, "input")?;
                need_rank(f, 4, "filter")?;
                if f[3] != x[3] {
                    return Err(format!(
                        "filter {f:?} expects {} input channels, input has {}",
                        f[3], x[3]
                    ));
                }
                bias_ok(f[0])?;
                let full_h = (x[1] - 1) * a.stride[0] + f[1];
                let full_w = (x[2] - 1) * a.stride[1] + f[2];
                let oh = full_h
                    .checked_sub(a.pad.top + a.pad.bottom)
                    .ok_or("cropping larger than the output")?;
                let ow = full_w
                    .checked_sub(a.pad.left + a.pad.right)
                    .ok_or("cropping larger than the output")?;
                vec![vec![x[0], oh, ow, f[0]]]
            }
            OpKind::FullyConnected => {
                let (x, w) = (shape(0)?, shape(1)?);
                need_rank(w, 2, "weights")?;
                let numel: usize = x.iter().product();
                if w[1] == 0 || !numel.is_multiple_of(w[1]) {
                    return Err(format!(
                        "input {x:?} is not a multiple of the weights' {} inputs",
                        w[1]
                    ));
                }
                bias_ok(w[0])?;
                let batch = numel / w[1];
                let out = out_shape(0)?;
                // keep_num_dims keeps the input's leading dims; otherwise [batch, O].
                if out.len() == x.len() && out.len() > 2 {
                    let mut s = x.to_vec();
                    *s.last_mut().unwrap() = w[0];
                    vec![s]
                } else {
                    vec![vec![batch, w[0]]]
                }
            }
            OpKind::MaxPool2d(p) | OpKind::AvgPool2d(p) => {
                let x = shape(0)?;
                need_rank(x, 4, "input")?;
                let oh = window_out(x[1], p.filter[0], p.stride[0], 1, p.pad.top + p.pad.bottom)
                    .ok_or("window larger than the input")?;
                let ow = window_out(x[2], p.filter[1], p.stride[1], 1, p.pad.left + p.pad.right)
                    .ok_or("window larger than the input")?;
                vec![vec![x[0], oh, ow, x[3]]]
            }
            OpKind::Mean { axes, keep_dims } => {
                let x = shape(0)?;
                if axes.iter().any(|&a| a >= x.len()) {
                    return Err(format!("axes {axes:?} out of range for {x:?}"));
                }
                let mut s = Vec::new();
                for (d, &n) in x.iter().enumerate() {
                    if axes.contains(&d) {
                        if *keep_dims {
                            s.push(1);
                        }
                    } else {
                        s.push(n);
                    }
                }
                vec![s]
            }
            OpKind::Add | OpKind::Sub | OpKind::Mul | OpKind::Prelu => {
                let (a, b) = (shape(0)?, shape(1)?);
                vec![
                    broadcast(a, b)
                        .ok_or_else(|| format!("shapes {a:?} and {b:?} do not broadcast"))?,
                ]
            }
            OpKind::Unary(_) | OpKind::Dequantize => vec![shape(0)?.to_vec()],
            OpKind::Densify => vec![shape(0)?.to_vec()],
            OpKind::Pad { pads } => {
                let x = shape(0)?;
                if pads.len() != x.len() {
                    return Err(format!("{} paddings for rank {}", pads.len(), x.len()));
                }
                vec![x.iter().zip(pads).map(|(n, p)| n + p[0] + p[1]).collect()]
            }
            OpKind::Reshape => {
                let (x, o) = (shape(0)?, out_shape(0)?);
                if x.iter().product::<usize>() != o.iter().product::<usize>() {
                    return Err(format!("cannot reshape {x:?} to {o:?}"));
                }
                vec![o.to_vec()]
            }
            OpKind::Concatenation { axis } => {
                let first = shape(0)?.to_vec();
                if *axis >= first.len() {
                    return Err(format!("axis {axis} out of range for {first:?}"));
                }
                let mut s = first.clone();
                s[*axis] = 0;
                for i in 0..op.inputs.len() {
                    let x = shape(i)?;
                    if x.len() != first.len()
                        || x.iter()
                            .zip(&first)
                            .enumerate()
                            .any(|(d, (a, b))| d != *axis && a != b)
                    {
                        return Err(format!(
                            "input {i} {x:?} does not match {first:?} outside axis {axis}"
                        ));
                    }
                    s[*axis] += x[*axis];
                }
                vec![s]
            }
            OpKind::ResizeBilinear { .. } => {
                let (x, o) = (shape(0)?, out_shape(0)?);
                need_rank(x, 4, "input")?;
                need_rank(o, 4, "output")?;
                vec![vec![x[0], o[1], o[2], x[3]]]
            }
            OpKind::DepthToSpace { block } => {
                let x = shape(0)?;
                need_rank(x, 4, "input")?;
                if *block == 0 || x[3] % (block * block) != 0 {
                    return Err(format!("{} channels not divisible by block {block}²", x[3]));
                }
                vec![vec![
                    x[0],
                    x[1] * block,
                    x[2] * block,
                    x[3] / (block * block),
                ]]
            }
            OpKind::StridedSlice(a) => {
                let x = shape(0)?;
                if a.begin.len() != x.len() || a.stride.len() != x.len() || a.count.len() != x.len()
                {
                    return Err(format!("slice of rank {} for input {x:?}", a.begin.len()));
                }
                for d in 0..x.len() {
                    let last = a.begin[d] + a.stride[d] * (a.count[d] as i64 - 1);
                    if a.count[d] > 0
                        && (a.begin[d] < 0
                            || a.begin[d] >= x[d] as i64
                            || last < 0
                            || last >= x[d] as i64)
                    {
                        return Err(format!("axis {d}: slice leaves the input ({x:?})"));
                    }
                }
                // Shrunk axes disappear from the output; compare ignoring unit dims.
                vec![a.count.clone()]
            }
            OpKind::Landmarks2TransformMatrix(attrs) => {
                vec![
                    crate::mediapipe::landmarks_to_transform_matrix_output_shape(
                        attrs,
                        &[shape(0)?],
                    )?,
                ]
            }
            OpKind::TransformTensorBilinear(attrs) => {
                vec![crate::mediapipe::transform_tensor_bilinear_output_shape(
                    attrs,
                    &[shape(0)?, shape(1)?],
                )?]
            }
            OpKind::TransformLandmarks(attrs) => {
                vec![crate::mediapipe::transform_landmarks_output_shape(
                    attrs,
                    &[shape(0)?, shape(1)?],
                )?]
            }
            OpKind::Transpose { perm } => vec![infer::transpose(shape(0)?, perm)?],
            OpKind::Math(_) => vec![shape(0)?.to_vec()],
            OpKind::Binary(_) => vec![infer::binary(shape(0)?, shape(1)?)?],
            OpKind::InstanceNorm { .. } => {
                let params = (1..op.inputs.len())
                    .map(shape)
                    .collect::<Result<Vec<_>, _>>()?;
                vec![infer::instance_norm(shape(0)?, &params)?]
            }
            OpKind::Resize(_) => {
                let (x, o) = (shape(0)?, out_shape(0)?);
                need_rank(x, 4, "input")?;
                need_rank(o, 4, "output")?;
                vec![vec![x[0], o[1], o[2], x[3]]]
            }
            OpKind::PadWith { pads, mode } => vec![infer::pad(shape(0)?, pads, mode)?],
            OpKind::Softmax { axis, .. } => {
                let x = shape(0)?;
                if *axis >= x.len() {
                    return Err(format!("axis {axis} out of range for {x:?}"));
                }
                vec![x.to_vec()]
            }
            OpKind::MatMul => vec![infer::matmul(shape(0)?, shape(1)?)?],
            OpKind::Reduce {
                axes, keep_dims, ..
            } => vec![infer::reduce(shape(0)?, axes, *keep_dims)?],
            OpKind::SpaceToDepth { block } => {
                vec![infer::block_rearrange(shape(0)?, *block, true)?]
            }
            OpKind::DepthToSpaceCrd { block } => {
                vec![infer::block_rearrange(shape(0)?, *block, false)?]
            }
            OpKind::Where => vec![infer::binary(
                &infer::binary(shape(0)?, shape(1)?)?,
                shape(2)?,
            )?],
        })
    }
}

/// Output height and width of a convolution window over `x [1,H,W,C]` with filter `f [_,kh,kw,_]`.
fn conv_out(x: &[usize], f: &[usize], a: &crate::ConvAttrs) -> Result<[usize; 2], String> {
    let oh = window_out(
        x[1],
        f[1],
        a.stride[0],
        a.dilation[0],
        a.pad.top + a.pad.bottom,
    );
    let ow = window_out(
        x[2],
        f[2],
        a.stride[1],
        a.dilation[1],
        a.pad.left + a.pad.right,
    );
    match (oh, ow) {
        (Some(oh), Some(ow)) => Ok([oh, ow]),
        _ => Err(format!(
            "window {}x{} larger than the padded input {x:?}",
            f[1], f[2]
        )),
    }
}

/// A shape without its unit dimensions (for comparisons that ignore squeezed axes).
fn squeeze(s: &[usize]) -> Vec<usize> {
    s.iter().copied().filter(|&d| d != 1).collect()
}
