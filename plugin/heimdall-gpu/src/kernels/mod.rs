//! Kernel builders: one module per kernel family. Each turns an op of the graph into
//! [`Dispatch`]es (composed source, uniform parameters, operands, work-group count) and
//! pre-transforms its weights into the kernel's layout once, at compile time.

pub mod conv;
pub mod depth_to_space;
pub mod depthwise;
pub mod elementwise;
pub mod fully_connected;
pub mod gather;
pub mod instance_norm;
pub mod matmul;
pub mod mean;
pub mod mediapipe;
pub mod nary;
pub mod onnx;
pub mod pad_with;
pub mod pool;
pub mod reduce;
pub mod resize;
pub mod resize_taps;
pub mod softmax;
pub mod space_depth;
pub mod transpose;
pub mod transpose_conv;

use heimdall_ir::{Activation, BinaryFn, BlockOrder, Graph, Op, OpKind, ReduceKind, TensorId};

use crate::layout::Phwc4;
use crate::precision::Precision;
use crate::wgsl::{EpilogueAct, EpilogueDecl, WORKGROUP_SIZE};

/// A buffer bound to a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    /// A tensor of the graph (an activation planned in a slot).
    Tensor(TensorId),
    /// A constant buffer of the model (weights, bias, alpha, constant inputs): its index.
    Const(usize),
}

/// A constant buffer's contents.
#[derive(Clone, Debug)]
pub struct ConstBuffer {
    /// What it is, for labels.
    pub label: String,
    /// Bytes to upload.
    pub bytes: Vec<u8>,
}

/// One compute dispatch of a step.
#[derive(Clone, Debug)]
pub struct Dispatch {
    /// The kernel's composition.
    pub source: crate::wgsl::KernelSource,
    /// Uniform parameter bytes (binding 0).
    pub params: Vec<u8>,
    /// Buffers for bindings 1.., in order (kernel, then epilogue).
    pub operands: Vec<Operand>,
    /// Number of work groups (folded into 2-D at encode time).
    pub workgroups: u32,
}

/// Work groups needed for `items` threads.
pub fn groups_for(items: usize) -> u32 {
    items.div_ceil(WORKGROUP_SIZE as usize) as u32
}

/// What kernel builders see: the graph, the op, storage precisions, and the constants store.
pub struct OpContext<'a> {
    /// The graph.
    pub graph: &'a Graph,
    /// The op being built.
    pub op: &'a Op,
    /// Storage precision of every tensor.
    pub precisions: &'a [Precision],
    /// Precision of this op's weights and constant inputs.
    pub weights: Precision,
    /// Blocking choices for the device (family, work-group sizes, outputs per thread).
    pub tuning: crate::context::Tuning,
    /// Constant buffers of the model; builders append.
    pub consts: &'a mut Vec<ConstBuffer>,
}

impl OpContext<'_> {
    /// The shape of input `i`.
    pub fn in_shape(&self, i: usize) -> Result<&[usize], String> {
        self.op
            .inputs
            .get(i)
            .map(|t| self.graph.tensor(*t).shape.as_slice())
            .ok_or_else(|| format!("missing input {i}"))
    }

    /// The PHWC4 geometry of input `i`.
    pub fn in_geom(&self, i: usize) -> Result<Phwc4, String> {
        Phwc4::of(self.in_shape(i)?).map_err(|e| e.to_string())
    }

    /// The op's (single) output tensor.
    pub fn output(&self) -> Result<TensorId, String> {
        match self.op.outputs.as_slice() {
            [o] => Ok(*o),
            _ => Err(format!("{} outputs, expected 1", self.op.outputs.len())),
        }
    }

    /// The PHWC4 geometry of the output.
    pub fn out_geom(&self) -> Result<Phwc4, String> {
        Phwc4::of(&self.graph.tensor(self.output()?).shape).map_err(|e| e.to_string())
    }

    /// Storage precision of the output.
    pub fn out_precision(&self) -> Result<Precision, String> {
        Ok(self.precisions[self.output()?.index()])
    }

    /// The dense constant values of input `i` (weights), or an error naming it.
    pub fn constant(&self, i: usize) -> Result<&[f32], String> {
        let id = *self.op.inputs.get(i).ok_or(format!("missing input {i}"))?;
        let t = self.graph.tensor(id);
        match &t.constant {
            Some(c) if c.sparsity.is_none() => Ok(&c.values),
            Some(_) => Err(format!(
                "input {i} ('{}') is sparse: run the passes",
                t.name
            )),
            None => Err(format!(
                "input {i} ('{}') must be a constant (weights computed at run time are not supported on the GPU)",
                t.name
            )),
        }
    }

    /// Adds a constant buffer and returns its operand.
    pub fn add_const(&mut self, label: String, bytes: Vec<u8>) -> Operand {
        self.consts.push(ConstBuffer { label, bytes });
        Operand::Const(self.consts.len() - 1)
    }

    /// Bias of `channels` output channels from input `i` (zeros if absent), one f32 vec4 per
    /// slice.
    pub fn bias(&mut self, i: usize, channels: usize) -> Result<Operand, String> {
        let mut v = vec![0.0f32; 4 * channels.div_ceil(4).max(1)];
        if self.op.inputs.len() > i {
            let b = self.constant(i)?;
            if b.len() != channels {
                return Err(format!("bias has {} values, expected {channels}", b.len()));
            }
            v[..channels].copy_from_slice(b);
        }
        Ok(self.add_const("bias".into(), Precision::F32.encode(&v)))
    }

    /// An input as an operand with its precision and geometry: tensors bind their slot,
    /// constants are uploaded in PHWC4 at the op's weight precision.
    pub fn input_operand(&mut self, i: usize) -> Result<(Operand, Precision, Phwc4), String> {
        let id = *self.op.inputs.get(i).ok_or(format!("missing input {i}"))?;
        let g = self.in_geom(i)?;
        if self.graph.tensor(id).constant.is_some() {
            let values = g.pack(self.constant(i)?);
            let p = self.weights;
            let op = self.add_const(format!("constant input {i}"), p.encode(&values));
            Ok((op, p, g))
        } else {
            Ok((Operand::Tensor(id), self.precisions[id.index()], g))
        }
    }

    /// The op's fused epilogue and the operands it binds (residual tensor, PReLU alphas).
    pub fn epilogue(&mut self) -> Result<(EpilogueDecl, Vec<Operand>), String> {
        let ep = self.op.epilogue;
        let mut operands = Vec::new();
        let residual = match ep.residual {
            Some(r) if self.graph.tensor(r).constant.is_some() => {
                // A constant residual (ONNX: a bias added after a conv, fused as a residual):
                // uploaded in the output's PHWC4 geometry at the weights' precision.
                let t = self.graph.tensor(r);
                let g = Phwc4::of(&t.shape).map_err(|e| e.to_string())?;
                if g != self.out_geom()? {
                    return Err(format!(
                        "constant residual {:?} for output {:?}",
                        t.shape,
                        self.out_geom()?
                    ));
                }
                let values = match &t.constant {
                    Some(c) if c.sparsity.is_none() => g.pack(&c.values),
                    _ => return Err(format!("residual '{}' must be a dense constant", t.name)),
                };
                let p = self.weights;
                operands.push(self.add_const("constant residual".into(), p.encode(&values)));
                Some(p)
            }
            Some(r) => {
                operands.push(Operand::Tensor(r));
                Some(self.precisions[r.index()])
            }
            None => None,
        };
        let act = match ep.activation {
            Activation::None => EpilogueAct::None,
            Activation::Unary(u) => EpilogueAct::Unary(u),
            Activation::Prelu(a) => {
                let c = self.out_geom()?.c;
                let alpha = self.alpha_values(a, c)?;
                operands.push(self.add_const("prelu alpha".into(), Precision::F32.encode(&alpha)));
                EpilogueAct::Prelu
            }
        };
        Ok((EpilogueDecl { residual, act }, operands))
    }

    /// PReLU alphas broadcast to one f32 vec4 per slice of `c` channels.
    fn alpha_values(&self, a: TensorId, c: usize) -> Result<Vec<f32>, String> {
        let t = self.graph.tensor(a);
        let values = match &t.constant {
            Some(k) if k.sparsity.is_none() => &k.values,
            _ => return Err(format!("PReLU alpha '{}' must be a dense constant", t.name)),
        };
        let mut v = vec![0.0f32; 4 * c.div_ceil(4).max(1)];
        match values.len() {
            1 => v[..c].fill(values[0]),
            n if n == c => v[..c].copy_from_slice(values),
            n => return Err(format!("PReLU alpha of {n} values for {c} channels")),
        }
        Ok(v)
    }
}

/// Builds the dispatches of one op (the op must have a GPU kernel, see [`crate::plan`]).
pub fn build(ctx: &mut OpContext) -> Result<Vec<Dispatch>, String> {
    match &ctx.op.kind {
        OpKind::Conv2d(a) => conv::build(ctx, a),
        OpKind::DepthwiseConv2d { attrs, multiplier } => depthwise::build(ctx, attrs, *multiplier),
        OpKind::TransposeConv2d(a) => transpose_conv::build(ctx, a),
        OpKind::FullyConnected => fully_connected::build(ctx),
        OpKind::MaxPool2d(p) => pool::build(ctx, p, 0),
        OpKind::AvgPool2d(p) => pool::build(ctx, p, 1),
        OpKind::Reduce {
            kind: ReduceKind::Mean,
            axes,
            ..
        } => mean::build(ctx, axes),
        OpKind::Binary(BinaryFn::Add) => elementwise::build(ctx, 1),
        OpKind::Binary(BinaryFn::Sub) => elementwise::build(ctx, 2),
        OpKind::Binary(BinaryFn::Mul) => elementwise::build(ctx, 3),
        OpKind::Binary(BinaryFn::Prelu) => elementwise::build(ctx, 4),
        OpKind::Unary(u) if u.fusable() => elementwise::build(ctx, 0),
        OpKind::Resize(a) if a.tflite_flags().is_some() => {
            let (align_corners, half_pixel_centers) = a.tflite_flags().expect("checked");
            resize::build(ctx, align_corners, half_pixel_centers)
        }
        OpKind::DepthToSpace {
            block,
            order: BlockOrder::Dcr,
        } => depth_to_space::build(ctx, *block),
        OpKind::Reshape => gather::build_reshape(ctx),
        OpKind::Pad { pads, mode } if mode.is_zero() => gather::build_pad(ctx, pads),
        OpKind::StridedSlice(a) => gather::build_strided_slice(ctx, a),
        OpKind::Concatenation { axis } => gather::build_concat(ctx, *axis),
        OpKind::Transpose { perm } => transpose::build(ctx, perm),
        OpKind::Unary(f) => nary::build(ctx, nary::NaryFn::Math(*f)),
        OpKind::Binary(f) => nary::build(ctx, nary::NaryFn::Binary(*f)),
        OpKind::Where => nary::build(ctx, nary::NaryFn::Where),
        OpKind::InstanceNorm { epsilon } => instance_norm::build(ctx, *epsilon),
        OpKind::Resize(a) => resize_taps::build(ctx, a),
        OpKind::Pad { pads, mode } => pad_with::build(ctx, pads, *mode),
        OpKind::Softmax { axis, log } => softmax::build(ctx, *axis, *log),
        OpKind::MatMul => matmul::build(ctx),
        OpKind::Reduce { kind, axes, .. } => reduce::build(ctx, *kind, axes),
        OpKind::SpaceToDepth { block } => space_depth::build(ctx, *block, false),
        OpKind::DepthToSpace {
            block,
            order: BlockOrder::Crd,
        } => space_depth::build(ctx, *block, true),
        OpKind::Landmarks2TransformMatrix(a) => mediapipe::build_landmarks_to_matrix(ctx, a),
        OpKind::TransformTensorBilinear(_) => mediapipe::build_transform_tensor(ctx),
        OpKind::TransformLandmarks(_) => mediapipe::build_transform_landmarks(ctx),
        other => Err(format!("{} has no GPU kernel", other.name())),
    }
}

/// Right-aligns a per-axis list of rank ≤ 4 into 4 axes, filling leading axes with `fill`.
pub fn align4<T: Copy>(v: &[T], fill: T) -> Result<[T; 4], String> {
    if v.len() > 4 {
        return Err(format!("rank {} > 4", v.len()));
    }
    let mut out = [fill; 4];
    out[4 - v.len()..].copy_from_slice(v);
    Ok(out)
}

/// `u32` of a size, or an error when it does not fit.
pub fn u32_of(v: usize) -> Result<u32, String> {
    u32::try_from(v).map_err(|_| format!("size {v} does not fit in 32 bits"))
}
