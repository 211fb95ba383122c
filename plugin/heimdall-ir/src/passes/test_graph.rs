//! Small graphs built by hand for the passes' unit tests.

use crate::graph::Graph;
use crate::tensor::{Constant, DType, TensorId, TensorInfo};

/// An empty graph.
pub(crate) fn empty() -> Graph {
    Graph {
        name: "t".into(),
        tensors: vec![],
        ops: vec![],
        inputs: vec![],
        outputs: vec![],
    }
}

/// Adds an f32 tensor of `shape` to `g` (a constant when `values` is given) and returns its id.
pub(crate) fn tensor(g: &mut Graph, shape: &[usize], values: Option<Vec<f32>>) -> TensorId {
    g.tensors.push(TensorInfo {
        name: format!("t{}", g.tensors.len()),
        shape: shape.to_vec(),
        dtype: DType::F32,
        constant: values.map(Constant::dense),
    });
    TensorId((g.tensors.len() - 1) as u32)
}
