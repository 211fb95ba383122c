//! Graph IR of heimdall: tensors with NHWC shapes (batch 1, rank ≤ 4), constants, and ops in one
//! topological order.
//!
//! Every importer (TFLite, ONNX) produces a [`Graph`]; load-time [`passes`] fold weight
//! decoding, fuse activations and residual adds into their producers and fold explicit padding;
//! every backend executes the same op list, so partitioning is by op-index ranges over it
//! (Heimdall's `RunPartial(start, end)`).
#![warn(missing_docs)]

pub mod cost;
pub mod error;
pub mod graph;
pub mod infer;
pub mod math;
pub mod mediapipe;
pub mod op;
pub mod passes;
pub mod shape;
pub mod sparse;
pub mod tensor;

pub use error::IrError;
pub use graph::Graph;
pub use math::{
    BinaryFn, CoordMode, MathFn, NearestMode, PadMode, ReduceKind, ResizeAttrs, ResizeMode,
};
pub use op::{
    Activation, ConvAttrs, Epilogue, Op, OpKind, Pad2d, PoolAttrs, StridedSliceAttrs, UnaryKind,
};
pub use tensor::{Constant, DType, TensorId, TensorInfo};
