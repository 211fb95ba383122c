//! Import errors.

use heimdall_ir::IrError;
use thiserror::Error;

/// Why a model file could not be imported.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ImportError {
    /// The bytes are not a valid flatbuffer of the TFLite schema.
    #[error("not a valid TFLite flatbuffer: {0}")]
    Flatbuffer(String),
    /// The model's top-level structure is unusable.
    #[error("invalid model: {0}")]
    Model(String),
    /// A tensor is invalid (shape, type, data size, sparsity).
    #[error("tensor {index} ('{name}'): {message}")]
    Tensor {
        /// Tensor index in the subgraph.
        index: usize,
        /// Tensor name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// An op that heimdall has no implementation for.
    #[error("op {index} ({name}) is not supported{}", if .message.is_empty() { String::new() } else { format!(": {}", .message) })]
    Unsupported {
        /// Op index in the subgraph.
        index: usize,
        /// Op name (builtin name or custom code).
        name: String,
        /// Detail (version, option), possibly empty.
        message: String,
    },
    /// A supported op whose inputs, outputs or options are inconsistent.
    #[error("op {index} ({name}): {message}")]
    Op {
        /// Op index in the subgraph.
        index: usize,
        /// Op name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The imported graph failed validation.
    #[error(transparent)]
    Graph(#[from] IrError),
}
