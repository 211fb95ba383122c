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
    Limits(#[from] LimitsError),
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

/// A device limit a kernel can exceed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Limit {
    /// `max_storage_buffers_per_shader_stage`: buffers one kernel binds (its parameters
    /// included where they live in a storage buffer, [`crate::GpuContext::params_space`]).
    StorageBuffersPerStage,
    /// `max_storage_buffer_binding_size`: the bytes of one bound tensor or weight buffer.
    StorageBindingSize,
}

impl Limit {
    /// How the limit reads in a sentence ("5 storage buffers per shader stage").
    fn unit(self) -> &'static str {
        match self {
            Limit::StorageBuffersPerStage => "storage buffers per shader stage",
            Limit::StorageBindingSize => "bytes in one storage binding",
        }
    }
}

/// One op whose kernels need more of a limit than the device allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitShortfall {
    /// The op's index in the graph.
    pub op: usize,
    /// The op's name (`CONV_2D`).
    pub name: String,
    /// The limit.
    pub limit: Limit,
    /// What its kernels need.
    pub needs: u64,
    /// What the device allows.
    pub allows: u64,
}

impl std::fmt::Display for LimitShortfall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "op {} ({}) needs {} {}, the device allows {}",
            self.op,
            self.name,
            self.needs,
            self.limit.unit(),
            self.allows
        )
    }
}

/// The ops of a model that a device's limits cannot run (never empty).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", describe(.shortfalls))]
pub struct LimitsError {
    /// Every op over a limit, in graph order.
    pub shortfalls: Vec<LimitShortfall>,
}

impl LimitsError {
    /// How many ops are over a limit.
    pub fn ops(&self) -> usize {
        let mut ops: Vec<usize> = self.shortfalls.iter().map(|s| s.op).collect();
        ops.dedup();
        ops.len()
    }
}

/// The first shortfall in full, then how many more ops there are ("op 3 (CONV_2D) needs 5
/// storage buffers per shader stage, the device allows 4 (and 41 more ops)").
fn describe(shortfalls: &[LimitShortfall]) -> String {
    let Some(first) = shortfalls.first() else {
        return "no limit exceeded".into();
    };
    let mut ops: Vec<usize> = shortfalls.iter().map(|s| s.op).collect();
    ops.dedup();
    match ops.len() {
        1 => first.to_string(),
        n => format!("{first} (and {} more ops)", n - 1),
    }
}
