//! The import driver: decode the protobuf, create inputs (with their static shapes) and
//! initializers, fold or convert every node in order, collect the outputs.

use std::collections::{HashMap, HashSet};

use heimdall_ir::{Graph, TensorId};
use prost::Message;

use crate::attrs::Attrs;
use crate::builder::Builder;
use crate::constant::{Const, Elem, dtype};
use crate::ctx::Ctx;
use crate::error::{NodeError, OnnxError};
use crate::proto::{
    GraphProto, ModelProto, NodeProto, ValueInfoProto, tensor_shape_proto::dimension, type_proto,
};
use crate::value::{Layout, Value, nhwc_of};
use crate::{fold, ops};

/// Options of an import.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImportOptions {
    /// Static shapes (ONNX layout, e.g. `[1, 3, 512, 512]`) for inputs, by name; required for
    /// inputs with dynamic dimensions, and override the model's shape where given.
    pub input_shapes: Vec<(String, Vec<usize>)>,
    /// Inputs whose values are known at load time, by name: they become constants (and fold
    /// like initializers) instead of graph inputs.
    pub input_values: Vec<(String, Const)>,
}

/// One graph input or output at the model's boundary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundaryTensor {
    /// ONNX name.
    pub name: String,
    /// ONNX shape (e.g. NCHW).
    pub shape: Vec<usize>,
    /// How the IR stores it: [`Layout::Nhwc`] tensors must be transposed at the boundary.
    pub layout: Layout,
}

/// An imported model: the IR graph and how its inputs and outputs map to the ONNX ones.
#[derive(Clone, Debug, PartialEq)]
pub struct OnnxModel {
    /// The graph (NHWC, not yet optimised by the load-time passes).
    pub graph: Graph,
    /// Graph inputs in the IR's input order.
    pub inputs: Vec<BoundaryTensor>,
    /// Graph outputs in the IR's output order.
    pub outputs: Vec<BoundaryTensor>,
    /// Version of the default ONNX opset the model imports.
    pub opset: i64,
}

/// Ops that read their first input as an image (NCHW -> NHWC).
pub(crate) const IMAGE_OPS: &[&str] = &[
    "Conv",
    "ConvTranspose",
    "MaxPool",
    "AveragePool",
    "GlobalAveragePool",
    "GlobalMaxPool",
    "BatchNormalization",
    "InstanceNormalization",
    "Resize",
    "Upsample",
    "DepthToSpace",
    "SpaceToDepth",
];

/// Ops that need their inputs in the ONNX layout.
const NATIVE_OPS: &[&str] = &[
    "Reshape",
    "Flatten",
    "Transpose",
    "MatMul",
    "Gemm",
    "Squeeze",
    "Unsqueeze",
    "Shape",
    "Size",
];

/// Imports ONNX protobuf bytes; `name` names the graph.
pub fn import(bytes: &[u8], name: &str, options: &ImportOptions) -> Result<OnnxModel, OnnxError> {
    let model = ModelProto::decode(bytes).map_err(|e| OnnxError::Protobuf(e.to_string()))?;
    let graph = model
        .graph
        .as_ref()
        .ok_or_else(|| OnnxError::Model("the model has no graph".into()))?;
    let opset = default_opset(&model);
    let mut cx = Ctx {
        b: Builder::new(name),
        values: HashMap::new(),
        opset,
        uses: HashMap::new(),
        skip: HashSet::new(),
    };
    count_uses(&mut cx, graph);
    add_initializers(&mut cx, graph)?;
    let inputs = add_inputs(&mut cx, graph, options)?;
    add_constant_nodes(&mut cx, graph)?;
    convert_nodes(&mut cx, graph)?;
    let (outputs, out_ids) = collect_outputs(&mut cx, graph)?;
    let graph = cx.b.finish(out_ids);
    graph.validate()?;
    Ok(OnnxModel {
        graph,
        inputs,
        outputs,
        opset,
    })
}

/// Version of the default ONNX domain the model imports (1 if it names none).
fn default_opset(model: &ModelProto) -> i64 {
    let mut opset = None;
    for o in &model.opset_import {
        match o.domain.as_deref() {
            None | Some("") | Some("ai.onnx") => opset = o.version,
            _ => {}
        }
    }
    opset.unwrap_or(1)
}

/// Counts into `cx.uses` how many node inputs and graph outputs read each name.
fn count_uses(cx: &mut Ctx, graph: &GraphProto) {
    for n in &graph.node {
        for i in &n.input {
            *cx.uses.entry(i.clone()).or_default() += 1;
        }
    }
    for o in &graph.output {
        *cx.uses
            .entry(o.name.clone().unwrap_or_default())
            .or_default() += 1;
    }
}

/// Defines every initializer of `graph` as a constant value.
fn add_initializers(cx: &mut Ctx, graph: &GraphProto) -> Result<(), OnnxError> {
    for t in &graph.initializer {
        let tname = t.name.clone().unwrap_or_default();
        let c = Const::from_proto(t).map_err(|message| OnnxError::Tensor {
            name: tname.clone(),
            message,
        })?;
        cx.values.insert(tname, Value::Const(c));
    }
    Ok(())
}

/// Defines the graph's inputs: a constant where `options` gives its value, else an IR input
/// (NHWC when an image op reads it); the boundary tensors of the IR inputs, in order.
fn add_inputs(
    cx: &mut Ctx,
    graph: &GraphProto,
    options: &ImportOptions,
) -> Result<Vec<BoundaryTensor>, OnnxError> {
    let mut inputs = Vec::new();
    for vi in &graph.input {
        let iname = vi.name.clone().unwrap_or_default();
        if cx.values.contains_key(&iname) {
            continue; // an initializer listed as an input (IR version < 4)
        }
        if let Some((_, c)) = options.input_values.iter().find(|(n, _)| *n == iname) {
            cx.values.insert(iname, Value::Const(c.clone()));
            continue;
        }
        let shape = input_shape(vi, &iname, options)?;
        let layout = if shape.len() == 4 && is_image_input(&iname, &graph.node) {
            Layout::Nhwc
        } else {
            Layout::Native
        };
        let ir_shape = match layout {
            Layout::Nhwc => nhwc_of(&shape),
            Layout::Native => shape.clone(),
        };
        let id =
            cx.b.input(&iname, ir_shape)
                .map_err(|e| OnnxError::Tensor {
                    name: iname.clone(),
                    message: node_message(e),
                })?;
        cx.values.insert(iname.clone(), Ctx::tensor(id, layout));
        inputs.push(BoundaryTensor {
            name: iname,
            shape,
            layout,
        });
    }
    Ok(inputs)
}

/// Defines the values of the graph's `Constant` nodes, before any other node is converted:
/// fusions look ahead at constants defined later in the file.
fn add_constant_nodes(cx: &mut Ctx, graph: &GraphProto) -> Result<(), OnnxError> {
    for n in &graph.node {
        if n.op_type.as_deref() == Some("Constant") && n.domain.as_deref().unwrap_or("").is_empty()
        {
            let c = constant_node(n).map_err(|e| OnnxError::Tensor {
                name: n.output.first().cloned().unwrap_or_default(),
                message: node_message(e),
            })?;
            if let Some(o) = n.output.first() {
                cx.values.insert(o.clone(), Value::Const(c));
            }
        }
    }
    Ok(())
}

/// Converts (or folds) every other node in order, skipping those a fusion consumed, and
/// defines their outputs.
fn convert_nodes(cx: &mut Ctx, graph: &GraphProto) -> Result<(), OnnxError> {
    for (index, n) in graph.node.iter().enumerate() {
        let op = n.op_type.as_deref().unwrap_or("");
        if op == "Constant" || cx.skip.contains(&index) {
            continue;
        }
        cx.b.source = Some(index);
        let outs = convert_node(cx, n, index, &graph.node).map_err(|e| {
            let (name, op_type) = (n.name.clone().unwrap_or_default(), op.to_string());
            match e {
                NodeError::Unsupported(message) => OnnxError::Unsupported {
                    index,
                    name,
                    op_type,
                    message,
                },
                NodeError::Invalid(message) => OnnxError::Node {
                    index,
                    name,
                    op_type,
                    message,
                },
            }
        })?;
        for (o, v) in n.output.iter().zip(outs) {
            if !o.is_empty() {
                cx.values.insert(o.clone(), v);
            }
        }
    }
    Ok(())
}

/// The graph's outputs: their boundary tensors and IR tensors (a constant output added to the
/// IR as a constant tensor).
fn collect_outputs(
    cx: &mut Ctx,
    graph: &GraphProto,
) -> Result<(Vec<BoundaryTensor>, Vec<TensorId>), OnnxError> {
    let mut outputs = Vec::new();
    let mut out_ids = Vec::new();
    for vi in &graph.output {
        let oname = vi.name.clone().unwrap_or_default();
        let v = cx.values.get(&oname).cloned().ok_or_else(|| {
            OnnxError::Model(format!("output '{oname}' is not computed by any node"))
        })?;
        let shape = cx.shape(&v);
        let (id, layout) = match v {
            Value::Tensor(t) => (t.id, t.layout),
            Value::Const(c) => (
                cx.b.constant(&oname, c.shape.clone(), c.as_f32())
                    .map_err(|e| OnnxError::Tensor {
                        name: oname.clone(),
                        message: node_message(e),
                    })?,
                Layout::Native,
            ),
        };
        out_ids.push(id);
        outputs.push(BoundaryTensor {
            name: oname,
            shape,
            layout,
        });
    }
    Ok((outputs, out_ids))
}

/// The message of a node error, without its kind.
fn node_message(e: NodeError) -> String {
    match e {
        NodeError::Unsupported(m) | NodeError::Invalid(m) => m,
    }
}

/// Converts one node: folds it when all inputs are constants, else maps it to IR ops.
fn convert_node(
    cx: &mut Ctx,
    n: &NodeProto,
    index: usize,
    nodes: &[NodeProto],
) -> Result<Vec<Value>, NodeError> {
    let op = n.op_type.as_deref().unwrap_or("");
    if !n.domain.as_deref().unwrap_or("").is_empty() && n.domain.as_deref() != Some("ai.onnx") {
        return Err(NodeError::Unsupported(format!(
            "domain '{}'",
            n.domain.as_deref().unwrap_or("")
        )));
    }
    let mut consts = Vec::with_capacity(n.input.len());
    let mut all_const = true;
    for i in 0..n.input.len() {
        match cx.input(n, i)? {
            Some(Value::Const(c)) => consts.push(Some(c)),
            Some(Value::Tensor(_)) => {
                all_const = false;
                consts.push(None);
            }
            None => consts.push(None),
        }
    }
    if all_const {
        let refs: Vec<Option<&Const>> = consts.iter().map(Option::as_ref).collect();
        if let Some(v) = fold::eval(op, &Attrs::of(n), &refs, cx.opset)? {
            return Ok(v.into_iter().map(Value::Const).collect());
        }
    }
    ops::convert(cx, n, index, nodes)
}

/// The value of a `Constant` node.
fn constant_node(n: &NodeProto) -> Result<Const, NodeError> {
    let a = Attrs::of(n);
    if let Some(t) = a.tensor("value")? {
        return Ok(t);
    }
    if let Some(f) = a.float("value_float") {
        return Ok(Const::scalar(f as f64, Elem::Float));
    }
    if let Some(i) = a.int("value_int") {
        return Ok(Const::scalar(i as f64, Elem::Int));
    }
    if let Some(v) = a.floats("value_floats") {
        return Ok(Const::new(
            vec![v.len()],
            v.iter().map(|&x| x as f64).collect(),
            Elem::Float,
        ));
    }
    if let Some(v) = a.ints("value_ints") {
        return Ok(Const::ints(v));
    }
    Err(NodeError::Unsupported(
        "Constant without a supported value attribute".into(),
    ))
}

/// The static ONNX shape of a graph input.
fn input_shape(
    vi: &ValueInfoProto,
    name: &str,
    options: &ImportOptions,
) -> Result<Vec<usize>, OnnxError> {
    let tensor = match vi.r#type.as_ref().and_then(|t| t.value.as_ref()) {
        Some(type_proto::Value::TensorType(t)) => t,
        _ => {
            return Err(OnnxError::Tensor {
                name: name.into(),
                message: "input is not a tensor".into(),
            });
        }
    };
    let et = tensor.elem_type.unwrap_or(0);
    if et != dtype::FLOAT {
        return Err(OnnxError::Tensor {
            name: name.into(),
            message: format!("input of element type {et}: only float32 inputs are supported"),
        });
    }
    if let Some((_, s)) = options.input_shapes.iter().find(|(n, _)| n == name) {
        return Ok(s.clone());
    }
    let dims = tensor
        .shape
        .as_ref()
        .map(|s| s.dim.as_slice())
        .unwrap_or(&[]);
    let mut shape = Vec::new();
    let mut dynamic = false;
    let mut shown = Vec::new();
    for d in dims {
        match d.value {
            Some(dimension::Value::DimValue(v)) if v > 0 => {
                shape.push(v as usize);
                shown.push(v.to_string());
            }
            Some(dimension::Value::DimParam(ref p)) => {
                dynamic = true;
                shown.push(p.clone());
            }
            _ => {
                dynamic = true;
                shown.push("?".into());
            }
        }
    }
    if dynamic {
        let example: Vec<String> = dims
            .iter()
            .enumerate()
            .map(|(i, d)| match d.value {
                Some(dimension::Value::DimValue(v)) if v > 0 => v.to_string(),
                _ if i == 0 => "1".into(),
                _ => "512".into(),
            })
            .collect();
        return Err(OnnxError::DynamicShape {
            input: name.into(),
            shape: format!("[{}]", shown.join(", ")),
            example: example.join("x"),
        });
    }
    Ok(shape)
}

/// Whether a rank-4 graph input should be stored NHWC: not when every use needs the ONNX
/// layout (reshapes, matrix products, weights of convolutions).
fn is_image_input(name: &str, nodes: &[NodeProto]) -> bool {
    let mut used = false;
    for n in nodes {
        let op = n.op_type.as_deref().unwrap_or("");
        for (i, input) in n.input.iter().enumerate() {
            if input != name {
                continue;
            }
            used = true;
            let weight = matches!(op, "Conv" | "ConvTranspose") && i > 0;
            if !(weight || NATIVE_OPS.contains(&op) || (IMAGE_OPS.contains(&op) && i > 0)) {
                return true;
            }
        }
    }
    !used
}
