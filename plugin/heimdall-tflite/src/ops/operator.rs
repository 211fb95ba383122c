//! One TFLite operator being imported: its code, resolved input and output tensors, and the
//! checks every converter shares (input presence, constant integer inputs, fused activations,
//! strides, SAME/VALID padding), each failing with an [`ImportError`] that names the op.

use heimdall_ir::shape::same_padding;
use heimdall_ir::{Activation, Graph, OpKind, Pad2d, TensorId, UnaryKind};

use crate::error::ImportError;
use crate::schema_generated::tflite;
use crate::tensors::int_values;

/// What a converter makes of an operator: the IR op's kind, its inputs and the operator's fused
/// activation.
pub(crate) struct Converted {
    /// The IR op kind.
    pub kind: OpKind,
    /// Its inputs.
    pub inputs: Vec<TensorId>,
    /// The fused activation (the op's epilogue).
    pub activation: Activation,
}

impl Converted {
    /// An op without a fused activation.
    pub fn new(kind: OpKind, inputs: Vec<TensorId>) -> Self {
        Converted {
            kind,
            inputs,
            activation: Activation::None,
        }
    }
}

/// One operator of the model file and the graph it is imported into.
pub(crate) struct Operator<'a, 'g> {
    /// The graph so far (every tensor, the ops before this one).
    pub graph: &'g Graph,
    /// The operator.
    pub op: &'g tflite::Operator<'a>,
    /// Its index in the file.
    pub index: usize,
    /// Its name (builtin name or custom code).
    pub name: String,
    /// Its inputs in the file's order (`None`: an omitted optional input).
    pub raw_inputs: Vec<Option<TensorId>>,
    /// Its outputs.
    pub outputs: Vec<TensorId>,
    /// The model file (custom options may lie outside the flatbuffer tables).
    pub file: &'a [u8],
}

impl Operator<'_, '_> {
    /// An error about this op.
    pub fn fail(&self, message: String) -> ImportError {
        ImportError::Op {
            index: self.index,
            name: self.name.clone(),
            message,
        }
    }

    /// This op (or one of its options) is not supported.
    pub fn unsupported(&self, message: String) -> ImportError {
        ImportError::Unsupported {
            index: self.index,
            name: self.name.clone(),
            message,
        }
    }

    /// The builtin options are missing or of another op.
    pub fn missing(&self) -> ImportError {
        self.fail("missing or mismatched builtin options".into())
    }

    /// Input `i`, which must be present.
    pub fn input(&self, i: usize) -> Result<TensorId, ImportError> {
        self.raw_inputs
            .get(i)
            .copied()
            .flatten()
            .ok_or_else(|| self.fail(format!("missing input {i}")))
    }

    /// Input `i` if present.
    pub fn optional(&self, i: usize) -> Option<TensorId> {
        self.raw_inputs.get(i).copied().flatten()
    }

    /// Every input, none of which may be omitted.
    pub fn all_inputs(&self, what: &str) -> Result<Vec<TensorId>, ImportError> {
        self.raw_inputs
            .iter()
            .map(|t| t.ok_or_else(|| self.fail(format!("optional input in {what}"))))
            .collect()
    }

    /// The shape of tensor `t`.
    pub fn shape(&self, t: TensorId) -> Vec<usize> {
        self.graph.tensor(t).shape.clone()
    }

    /// The values of tensor `t`, which must be a constant integer tensor (`what` names it).
    pub fn const_ints(&self, t: TensorId, what: &str) -> Result<Vec<i64>, ImportError> {
        int_values(self.graph.tensor(t))
            .ok_or_else(|| self.fail(format!("{what} must be a constant integer tensor")))
    }

    /// The epilogue activation of a fused activation function.
    pub fn activation(&self, a: tflite::ActivationFunctionType) -> Result<Activation, ImportError> {
        Ok(match a {
            tflite::ActivationFunctionType::NONE => Activation::None,
            tflite::ActivationFunctionType::RELU => Activation::Unary(UnaryKind::Relu),
            tflite::ActivationFunctionType::RELU6 => Activation::Unary(UnaryKind::Relu6),
            tflite::ActivationFunctionType::RELU_N1_TO_1 => Activation::Unary(UnaryKind::ReluN1To1),
            tflite::ActivationFunctionType::TANH => Activation::Unary(UnaryKind::Tanh),
            other => {
                return Err(self.fail(format!("fused activation {other:?} is not supported")));
            }
        })
    }

    /// A stride (or dilation, or window) of `h x w`, each in `1..=4096`.
    pub fn stride(&self, h: i32, w: i32) -> Result<[usize; 2], ImportError> {
        match (usize::try_from(h), usize::try_from(w)) {
            (Ok(h), Ok(w)) if h > 0 && w > 0 && h <= 4096 && w <= 4096 => Ok([h, w]),
            _ => Err(self.fail(format!("invalid stride {h}x{w}"))),
        }
    }

    /// The explicit padding of SAME/VALID padding for a window `k` with strides `s` and
    /// dilations `d` over a 4-D input `x`.
    pub fn window_pad(
        &self,
        x: &[usize],
        k: [usize; 2],
        s: [usize; 2],
        d: [usize; 2],
        p: tflite::Padding,
    ) -> Result<Pad2d, ImportError> {
        if x.len() != 4 {
            return Err(self.fail(format!("input must be 4-D, has shape {x:?}")));
        }
        if k[0] == 0 || k[1] == 0 {
            return Err(self.fail("window of size zero".into()));
        }
        Ok(match p {
            tflite::Padding::SAME => {
                let (_, t, b) = same_padding(x[1], k[0], s[0], d[0]);
                let (_, l, r) = same_padding(x[2], k[1], s[1], d[1]);
                Pad2d {
                    top: t,
                    bottom: b,
                    left: l,
                    right: r,
                }
            }
            tflite::Padding::VALID => Pad2d::default(),
            other => return Err(self.fail(format!("padding {other:?} is not supported"))),
        })
    }

    /// Fails unless `v` has rank `n` (`what` names the tensor).
    pub fn dims(&self, v: &[usize], n: usize, what: &str) -> Result<(), ImportError> {
        if v.len() == n {
            Ok(())
        } else {
            Err(self.fail(format!("{what} must have rank {n}, has shape {v:?}")))
        }
    }
}
