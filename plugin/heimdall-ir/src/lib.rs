//! Graph IR of heimdall: tensors with NHWC shapes (batch 1, rank ≤ 4), constants, and ops in one
//! topological order.
//!
//! Every importer (TFLite, ONNX) produces a [`Graph`]; load-time [`passes`] fold weight
//! decoding, fuse activations and residual adds into their producers and fold explicit padding;
//! every backend executes the same op list, so partitioning is by op-index ranges over it
//! (Heimdall's `RunPartial(start, end)`).
//!
//! The op set is [`OpKind`]; each op family has one file in [`ops`] with its attributes, shape
//! inference and cost (`docs/adding-an-op.md` is the recipe for a new one).
#![warn(missing_docs)]

pub mod conv_cache;
pub mod cost;
pub mod error;
pub mod graph;
pub mod op;
pub mod ops;
pub mod passes;
pub mod shape;
pub mod sparse;
pub mod tensor;

pub use error::IrError;
pub use graph::Graph;
pub use op::{Activation, Epilogue, Op};
pub use ops::OpKind;
pub use ops::binary::BinaryFn;
pub use ops::conv::{ConvAttrs, Pad2d};
pub use ops::landmarks_to_transform::Landmarks2TransformMatrixAttrs;
pub use ops::pad::PadMode;
pub use ops::pool::PoolAttrs;
pub use ops::reduce::ReduceKind;
pub use ops::resize::{CoordMode, NearestMode, ResizeAttrs, ResizeMode, ResizeScale};
pub use ops::space_depth::BlockOrder;
pub use ops::strided_slice::StridedSliceAttrs;
pub use ops::transform_landmarks::TransformLandmarksAttrs;
pub use ops::transform_tensor_bilinear::TransformTensorBilinearAttrs;
pub use ops::unary::UnaryKind;
pub use tensor::{Constant, DType, TensorId, TensorInfo};
