//! One op of the graph: its kind, its tensors and its fused epilogue.

use serde::Serialize;

use crate::ops::OpKind;
use crate::ops::unary::UnaryKind;
use crate::tensor::TensorId;

/// Activation applied in an op's epilogue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub enum Activation {
    /// Identity.
    #[default]
    None,
    /// An element-wise function; only the TFLite activations ([`UnaryKind::fusable`]) are
    /// fused into epilogues.
    Unary(UnaryKind),
    /// Parametric ReLU with the given (constant) alpha tensor, broadcast over the output.
    Prelu(TensorId),
}

/// What an op applies to its result before storing it: `activation(result + residual)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Epilogue {
    /// A tensor of the output's shape added before the activation (a fused residual `ADD`).
    pub residual: Option<TensorId>,
    /// The activation.
    pub activation: Activation,
}

impl Epilogue {
    /// Whether the epilogue does nothing.
    pub fn is_identity(&self) -> bool {
        self.residual.is_none() && self.activation == Activation::None
    }

    /// Tensors the epilogue reads.
    pub fn tensors(&self) -> impl Iterator<Item = TensorId> {
        let alpha = match self.activation {
            Activation::Prelu(t) => Some(t),
            _ => None,
        };
        self.residual.into_iter().chain(alpha)
    }
}

/// One op of the graph.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Op {
    /// Kind and attributes.
    pub kind: OpKind,
    /// Input tensors (see [`OpKind`] for the conventions).
    pub inputs: Vec<TensorId>,
    /// Output tensors.
    pub outputs: Vec<TensorId>,
    /// Fused epilogue (identity unless a pass fused something).
    pub epilogue: Epilogue,
    /// Index of the op in the model file it came from (before passes), for messages.
    pub source: Option<usize>,
}

impl Op {
    /// A new op with an identity epilogue.
    pub fn new(kind: OpKind, inputs: Vec<TensorId>, outputs: Vec<TensorId>) -> Self {
        Op {
            kind,
            inputs,
            outputs,
            epilogue: Epilogue::default(),
            source: None,
        }
    }

    /// Every tensor the op reads: its inputs and those of its epilogue.
    pub fn reads(&self) -> impl Iterator<Item = TensorId> + '_ {
        self.inputs.iter().copied().chain(self.epilogue.tensors())
    }
}
