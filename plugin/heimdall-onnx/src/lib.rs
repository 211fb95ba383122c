//! ONNX importer of heimdall: decodes the ONNX protobuf (messages generated at build time from
//! the committed `onnx.proto` by prost, with protox as the pure-Rust schema compiler) and maps
//! the graph to heimdall's NHWC graph IR.
//!
//! - NCHW images become NHWC: convolution weights are transposed at load, and every value
//!   carries its [`Layout`] so that layout changes happen only where an op needs the other
//!   layout (reshapes, matrix products), never around convolutions.
//! - Nodes whose inputs are all constants are evaluated at load (shape subgraphs), so models
//!   exported with dynamic shapes become static once the inputs' shapes are known
//!   ([`ImportOptions::input_shapes`]).
//! - `BatchNormalization` is folded into the preceding convolution; instance normalisation
//!   (the op, or the ReduceMean/Sub/Pow/Div pattern PyTorch exports) becomes one op.
//! - Errors name the node (index, name, op type) or tensor; hostile files never panic.
#![warn(missing_docs)]

mod attrs;
mod builder;
pub mod constant;
mod counts;
mod ctx;
mod error;
mod fold;
mod import;
mod ops;
pub mod proto;
mod shapes;
mod value;

pub use counts::op_counts;
pub use error::OnnxError;
pub use import::{BoundaryTensor, ImportOptions, OnnxModel, import};
pub use ops::{SUPPORTED_OPS, is_supported};
pub use value::Layout;
