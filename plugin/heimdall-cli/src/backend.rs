//! Which backend a command runs a model on.

use clap::ValueEnum;

/// Backends a model can run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// The f32 CPU backend.
    Cpu,
    /// The GPU backend (WGSL on a Vulkan/Metal/DX12 device of the CLI's own; lavapipe where
    /// there is no GPU).
    Gpu,
}
