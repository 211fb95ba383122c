//! Errors of graph construction and validation.

use thiserror::Error;

/// A graph that does not add up: the error names the op (index and name) and what is wrong.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum IrError {
    /// An op's inputs, outputs or attributes are inconsistent.
    #[error("op {index} ({name}): {message}")]
    Op {
        /// Index of the op in the graph's op list.
        index: usize,
        /// Name of the op kind.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// A tensor reference or a tensor itself is invalid.
    #[error("tensor {index} ({name}): {message}")]
    Tensor {
        /// Index of the tensor.
        index: usize,
        /// Tensor name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The graph as a whole is inconsistent (inputs, outputs, order).
    #[error("graph: {0}")]
    Graph(String),
}
