//! Op statistics of an ONNX file without importing it (for `heimdall inspect`).

use prost::Message;

use crate::error::OnnxError;
use crate::proto::ModelProto;

/// Nodes of the main graph by op type, in order of first appearance.
pub fn op_counts(bytes: &[u8]) -> Result<Vec<(String, usize)>, OnnxError> {
    let model = ModelProto::decode(bytes).map_err(|e| OnnxError::Protobuf(e.to_string()))?;
    let graph = model
        .graph
        .ok_or_else(|| OnnxError::Model("the model has no graph".into()))?;
    let mut counts: Vec<(String, usize)> = Vec::new();
    for n in &graph.node {
        let name = n.op_type.clone().unwrap_or_default();
        match counts.iter_mut().find(|(k, _)| *k == name) {
            Some((_, c)) => *c += 1,
            None => counts.push((name, 1)),
        }
    }
    Ok(counts)
}
