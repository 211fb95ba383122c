//! Errors of the GPU backend.

use thiserror::Error;

/// Everything that can go wrong compiling or running a model on the GPU.
#[derive(Debug, Error)]
pub enum GpuError {
    /// No adapter or device could be created.
    #[error("no GPU: {0}")]
    NoDevice(String),
    /// The options passed to the compile step are invalid (e.g. a tuning the device cannot run).
    #[error("invalid options: {0}")]
    Options(String),
    /// The model uses something the GPU backend does not support.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// An op failed to compile for the GPU.
    #[error("op {index} ({name}): {message}")]
    Op {
        /// Op index in the graph.
        index: usize,
        /// Op name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The device's limits cannot run some ops' kernels (too many storage buffers per shader
    /// stage, a binding too large): every such op, known before anything is created on the
    /// device ([`crate::check_limits`]).
    #[error("the device's limits: {0}")]
    Limits(#[from] crate::limits::LimitsError),
    /// A composed shader did not validate (a bug of the backend: please report it).
    #[error("shader {name}: {message}")]
    Shader {
        /// Kernel name.
        name: String,
        /// Validator message.
        message: String,
    },
    /// wgpu reported a validation or out-of-memory error.
    #[error("wgpu: {0}")]
    Wgpu(String),
    /// A range of steps is out of bounds or contains a CPU step.
    #[error("steps {start}..{end}: {message}")]
    Range {
        /// Range start.
        start: usize,
        /// Range end.
        end: usize,
        /// What is wrong.
        message: String,
    },
    /// An input index or length is wrong.
    #[error("input {index}: expected {expected} values, got {got}")]
    Input {
        /// Input index.
        index: usize,
        /// Values expected (0 if the index does not exist).
        expected: usize,
        /// Values given.
        got: usize,
    },
    /// Readback was requested in the wrong state (e.g. twice without taking the result).
    #[error("readback: {0}")]
    Readback(String),
    /// The graph is invalid.
    #[error(transparent)]
    Graph(#[from] heimdall_ir::IrError),
}
