//! Errors of the CPU backend.

use thiserror::Error;

/// Why a graph could not be compiled or run on the CPU backend.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum CpuError {
    /// An op the backend cannot prepare (unsupported attribute combination).
    #[error("op {index} ({name}): {message}")]
    Op {
        /// Op index in the graph.
        index: usize,
        /// Op name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// An input of the wrong size.
    #[error("input {index}: expected shape {expected:?} ({} values), got {got} values", expected.iter().product::<usize>())]
    InputShape {
        /// Input index.
        index: usize,
        /// The model's input shape.
        expected: Vec<usize>,
        /// Number of values given.
        got: usize,
    },
    /// Rows of a length that does not divide an input ([`crate::CpuModel::fill_input`]).
    #[error("input {index}: rows of {row_len} values do not divide its shape {expected:?}")]
    InputRows {
        /// Input index.
        index: usize,
        /// The model's input shape.
        expected: Vec<usize>,
        /// The row length given.
        row_len: usize,
    },
    /// An input or output index that does not exist.
    #[error("no {what} {index} (the model has {count})")]
    NoSuchTensor {
        /// "input" or "output".
        what: &'static str,
        /// Requested index.
        index: usize,
        /// How many exist.
        count: usize,
    },
    /// An op range outside the model.
    #[error("op range {start}..{end} is outside the model's {len} ops")]
    Range {
        /// Range start.
        start: usize,
        /// Range end.
        end: usize,
        /// Number of ops.
        len: usize,
    },
    /// A convolution cache configuration that `ConvCacheConfig::validate` rejects.
    #[error("conv cache config: {0}")]
    CacheConfig(String),
    /// A model the convolution cache cannot serve: its first input is not an image
    /// `[1, H, W, C ≤ 4]`.
    #[error("conv cache: {0}")]
    CacheInput(String),
}
