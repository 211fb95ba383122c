//! Mapping of ONNX nodes to IR ops, one module per op family. This file is the importer's
//! registration list: an op type is named here ([`SUPPORTED_OPS`] and its arm in [`convert`]).

mod conv;
mod elementwise;
mod lift1d;
mod matmul;
mod norm;
mod pool;
mod reshape;
mod resize;
mod slice;
mod softmax;

use crate::ctx::Ctx;
use crate::error::{NodeResult, unsupported};
use crate::proto::NodeProto;
use crate::value::Value;

/// Op types the importer maps: those `convert` maps and those whose nodes fold to constants
/// (`Shape`-style subgraphs); nodes of other types fail the import.
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

/// Converts a node whose inputs are not all constants.
pub(crate) fn convert(
    cx: &mut Ctx,
    n: &NodeProto,
    index: usize,
    nodes: &[NodeProto],
) -> NodeResult<Vec<Value>> {
    let op = n.op_type.as_deref().unwrap_or("");
    let one = |v: Value| Ok(vec![v]);
    if matches!(op, "Conv" | "ConvTranspose" | "MaxPool" | "AveragePool") && lift1d::is_1d(cx, n) {
        let f = match op {
            "Conv" => conv::conv,
            "ConvTranspose" => conv::conv_transpose,
            _ => pool::pool,
        };
        return one(lift1d::lift(cx, n, f)?);
    }
    match op {
        "Conv" => one(conv::conv(cx, n)?),
        "ConvTranspose" => one(conv::conv_transpose(cx, n)?),
        "BatchNormalization" => one(norm::batch_norm(cx, n)?),
        "InstanceNormalization" => one(norm::instance_norm(cx, n)?),
        "ReduceMean" => match norm::instance_norm_pattern(cx, n, index, nodes)? {
            Some(v) => one(v),
            None => one(pool::reduce(cx, n)?),
        },
        "ReduceSum" | "ReduceMax" | "ReduceMin" | "ReduceProd" | "ReduceSumSquare" | "ReduceL1"
        | "ReduceL2" | "ReduceLogSum" | "ReduceLogSumExp" => one(pool::reduce(cx, n)?),
        "MaxPool" | "AveragePool" => one(pool::pool(cx, n)?),
        "GlobalAveragePool" | "GlobalMaxPool" => one(pool::global_pool(cx, n)?),
        "Relu" | "Sigmoid" | "Tanh" | "HardSwish" | "LeakyRelu" | "HardSigmoid" | "Elu" | "Erf"
        | "Sqrt" | "Exp" | "Log" | "Abs" | "Neg" | "Reciprocal" | "Floor" | "Ceil" | "Softplus"
        | "Softsign" | "Clip" => one(elementwise::unary(cx, n)?),
        "Add" | "Sub" | "Mul" | "Div" | "Pow" | "Max" | "Min" | "Sum" | "Mean" | "PRelu"
        | "Less" | "Greater" | "Equal" | "LessOrEqual" | "GreaterOrEqual" | "Where" => {
            one(elementwise::binary(cx, n)?)
        }
        "Identity" | "Dropout" => one(cx.req(n, 0)?),
        "Cast" => one(elementwise::cast(cx, n)?),
        "CastLike" => one(elementwise::cast_like(cx, n)?),
        "Shape" | "Size" => one(reshape::shape_of(cx, n)?),
        "Reshape" | "Flatten" | "Squeeze" | "Unsqueeze" => one(reshape::reshape(cx, n)?),
        "Transpose" => one(reshape::transpose(cx, n)?),
        "Concat" => one(slice::concat(cx, n)?),
        "Slice" => one(slice::slice(cx, n)?),
        "Split" => slice::split(cx, n),
        "Pad" => one(slice::pad(cx, n)?),
        "DepthToSpace" | "SpaceToDepth" => one(reshape::depth_space(cx, n)?),
        "Resize" | "Upsample" => one(resize::resize(cx, n)?),
        "MatMul" => one(matmul::matmul(cx, n)?),
        "Gemm" => one(matmul::gemm(cx, n)?),
        "Softmax" | "LogSoftmax" => one(softmax::softmax(cx, n)?),
        _ => unsupported(format!("op type {op}")),
    }
}
