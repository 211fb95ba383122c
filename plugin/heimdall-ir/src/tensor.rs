//! Tensors and constants.

use serde::Serialize;

use crate::sparse::Sparsity;

/// Index of a tensor in [`crate::Graph::tensors`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct TensorId(pub u32);

impl TensorId {
    /// The index as `usize`.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Element type of a tensor as stored in the model file. Activations are always computed in f32;
/// the type matters for constants (fp16 weights) and for reporting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum DType {
    /// 32-bit float.
    F32,
    /// 16-bit IEEE float (weights decoded by `DEQUANTIZE`).
    F16,
    /// 32-bit signed integer (shape and index tensors).
    I32,
    /// 64-bit signed integer.
    I64,
}

impl DType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F16 => 2,
            DType::F32 | DType::I32 => 4,
            DType::I64 => 8,
        }
    }
}

/// Constant data of a tensor, decoded to f32 at load.
#[derive(Clone, Debug, PartialEq)]
pub struct Constant {
    /// The values as f32. For a sparse constant these are the stored (non-zero) values in storage
    /// order; otherwise the dense tensor in row-major order.
    pub values: Vec<f32>,
    /// The original IEEE half-precision bits when the file stored the tensor as fp16 (same order
    /// as `values`). The GPU backend can upload these directly.
    pub fp16: Option<Vec<u16>>,
    /// Sparse layout of `values` (TFLite sparsity parameters), if the file stored it sparsely.
    pub sparsity: Option<Sparsity>,
}

impl Constant {
    /// A dense f32 constant.
    pub fn dense(values: Vec<f32>) -> Self {
        Constant {
            values,
            fp16: None,
            sparsity: None,
        }
    }

    /// Bytes the constant occupies in the model file's storage type.
    pub fn stored_bytes(&self) -> usize {
        let elem = if self.fp16.is_some() { 2 } else { 4 };
        self.values.len() * elem + self.sparsity.as_ref().map_or(0, Sparsity::index_bytes)
    }
}

/// A tensor of the graph.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorInfo {
    /// Name from the model file (for messages and reports).
    pub name: String,
    /// Shape, NHWC for 4-D tensors, rank ≤ 4 (a scalar has shape `[]`).
    pub shape: Vec<usize>,
    /// Storage type in the model file.
    pub dtype: DType,
    /// Data, for constants.
    pub constant: Option<Constant>,
}

impl TensorInfo {
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the tensor is a constant.
    pub fn is_constant(&self) -> bool {
        self.constant.is_some()
    }
}
