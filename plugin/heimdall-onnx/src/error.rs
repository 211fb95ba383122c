//! Import errors: each names the node (index, name, op type) or the tensor it is about.

use heimdall_ir::IrError;
use thiserror::Error;

/// Why an ONNX model could not be imported.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum OnnxError {
    /// The bytes are not a valid ONNX protobuf.
    #[error("not a valid ONNX protobuf: {0}")]
    Protobuf(String),
    /// The model's top-level structure is unusable (no graph, unknown opset domain...).
    #[error("invalid model: {0}")]
    Model(String),
    /// A tensor (initializer, constant or graph input) is invalid or of an unsupported type.
    #[error("tensor '{name}': {message}")]
    Tensor {
        /// Tensor name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// A graph input has a dimension that is not fixed and no shape was given for it.
    #[error(
        "input '{input}' has a dynamic shape {shape}: give it a static one, e.g. \
         --input-shape {input}={example}"
    )]
    DynamicShape {
        /// Input name.
        input: String,
        /// The shape as the model states it (`?` or a name for dynamic dimensions).
        shape: String,
        /// An example static shape for the message.
        example: String,
    },
    /// An op (or an attribute value of it) that heimdall has no implementation for.
    #[error("node {index} ('{name}', {op_type}) is not supported: {message}")]
    Unsupported {
        /// Node index in the ONNX graph.
        index: usize,
        /// Node name.
        name: String,
        /// ONNX op type.
        op_type: String,
        /// What is not supported.
        message: String,
    },
    /// A supported op whose inputs or attributes are inconsistent.
    #[error("node {index} ('{name}', {op_type}): {message}")]
    Node {
        /// Node index in the ONNX graph.
        index: usize,
        /// Node name.
        name: String,
        /// ONNX op type.
        op_type: String,
        /// What is wrong.
        message: String,
    },
    /// The imported graph failed validation.
    #[error(transparent)]
    Graph(#[from] IrError),
}

/// The error of one node, before the node's identity is attached.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NodeError {
    /// Not supported (op, attribute value, type, rank).
    Unsupported(String),
    /// Inconsistent.
    Invalid(String),
}

/// Result of converting one node.
pub(crate) type NodeResult<T> = Result<T, NodeError>;

/// Shorthand for an inconsistency.
pub(crate) fn invalid<T>(message: impl Into<String>) -> NodeResult<T> {
    Err(NodeError::Invalid(message.into()))
}

/// Shorthand for something not supported.
pub(crate) fn unsupported<T>(message: impl Into<String>) -> NodeResult<T> {
    Err(NodeError::Unsupported(message.into()))
}

impl From<String> for NodeError {
    fn from(message: String) -> Self {
        NodeError::Invalid(message)
    }
}
