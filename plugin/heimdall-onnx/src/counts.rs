//! Op statistics of an ONNX file without importing it (for `heimdall inspect`).

use prost::Message;

use crate::error::OnnxError;
use crate::proto::ModelProto;

/// Op types the importer maps (nodes of other types fail the import unless they fold to
/// constants: `Shape`-style subgraphs).
pub const SUPPORTED_OPS: &[&str] = &[
    "Abs",
    "Add",
    "AveragePool",
    "BatchNormalization",
    "Cast",
    "Ceil",
    "Clip",
    "Concat",
    "Constant",
    "ConstantOfShape",
    "Conv",
    "ConvTranspose",
    "DepthToSpace",
    "Div",
    "Dropout",
    "Elu",
    "Erf",
    "Exp",
    "Expand",
    "Flatten",
    "Floor",
    "Gather",
    "Gemm",
    "GlobalAveragePool",
    "GlobalMaxPool",
    "HardSigmoid",
    "HardSwish",
    "Identity",
    "InstanceNormalization",
    "LeakyRelu",
    "Log",
    "LogSoftmax",
    "MatMul",
    "Max",
    "MaxPool",
    "Mean",
    "Min",
    "Mul",
    "Neg",
    "PRelu",
    "Pad",
    "Pow",
    "Range",
    "Reciprocal",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceMax",
    "ReduceMean",
    "ReduceMin",
    "ReduceProd",
    "ReduceSum",
    "ReduceSumSquare",
    "Relu",
    "Reshape",
    "Resize",
    "Shape",
    "Sigmoid",
    "Size",
    "Slice",
    "Softmax",
    "Softplus",
    "Softsign",
    "SpaceToDepth",
    "Split",
    "Sqrt",
    "Squeeze",
    "Sub",
    "Sum",
    "Tanh",
    "Transpose",
    "Unsqueeze",
    "Upsample",
    "Where",
];

/// Whether the importer maps ops of this type.
pub fn is_supported(op_type: &str) -> bool {
    SUPPORTED_OPS.contains(&op_type)
}

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
