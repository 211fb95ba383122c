//! Load-time passes over the graph (DESIGN.md section 1).
//!
//! Each pass keeps the graph's outputs bit-for-bit the same up to float re-association inside a
//! fused epilogue (the test suite runs every model with passes on and off and compares). They run
//! in a fixed order by [`optimize`]:
//! 1. [`fold_weights`]: `DENSIFY` and `DEQUANTIZE` of constants become constants.
//! 2. [`fold_pad`]: a spatial zero `PAD` feeding only convolutions becomes their padding.
//! 3. [`fuse_gelu`]: the exact GELU written as `DIV`, `ERF`, `ADD`, `MUL`, `MUL` becomes one op.
//! 4. [`fuse_residual`]: an `ADD` of a producer's output and an earlier tensor becomes the
//!    producer's residual epilogue.
//! 5. [`fuse_activation`]: a following activation (ReLU, ReLU6, PReLU, hard-swish, logistic...)
//!    becomes the producer's epilogue activation.
//! 6. [`drop_reshapes`]: reshapes that change nothing their consumers can see disappear.
//! 7. [`fold_norm_affine`]: a per-channel `MUL` (and `ADD`) after a plain `INSTANCE_NORM`
//!    becomes its scale (and bias) input, the `ADD`'s fused epilogue the normalisation's.

mod fold_pad;
mod fold_weights;
mod fuse;
mod gelu;
mod norm_affine;
mod reshape;
mod rewrite;
#[cfg(test)]
mod test_graph;

pub use fold_pad::fold_pad;
pub use fold_weights::fold_weights;
pub use fuse::{fuse_activation, fuse_residual};
pub use gelu::fuse_gelu;
pub use norm_affine::fold_norm_affine;
pub use reshape::drop_reshapes;

use crate::IrError;
use crate::graph::Graph;

/// How many ops each pass removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassReport {
    /// `DENSIFY`/`DEQUANTIZE` ops folded into constants.
    pub weights_folded: usize,
    /// `PAD` ops folded into convolutions.
    pub pads_folded: usize,
    /// GELUs made from their elementary ops (five ops each).
    pub gelus_fused: usize,
    /// `ADD` ops fused as residual epilogues.
    pub residuals_fused: usize,
    /// Activation ops fused as epilogues.
    pub activations_fused: usize,
    /// Reshapes dropped.
    pub reshapes_dropped: usize,
    /// `MUL`/`ADD` ops folded into an instance normalisation's scale and bias.
    pub norm_affine_folded: usize,
}

/// Runs every pass in order and re-validates the graph.
pub fn optimize(graph: &mut Graph) -> Result<PassReport, IrError> {
    let report = PassReport {
        weights_folded: fold_weights(graph)?,
        pads_folded: fold_pad(graph),
        gelus_fused: fuse_gelu(graph),
        residuals_fused: fuse_residual(graph),
        activations_fused: fuse_activation(graph),
        reshapes_dropped: drop_reshapes(graph),
        norm_affine_folded: fold_norm_affine(graph),
    };
    graph.validate()?;
    Ok(report)
}
