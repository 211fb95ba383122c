//! TFLite operators to IR ops, one converter file per op family (the families of
//! `heimdall_ir::ops`); [`import_op`] resolves an operator's code, tensors and version and
//! dispatches to its converter. This file is the importer's registration list: a family is
//! named here and nowhere else in the crate.

mod binary;
mod concat;
mod conv;
mod fully_connected;
mod operator;
mod pad;
mod pool;
mod reduce;
mod resize;
mod space_depth;
mod strided_slice;
mod transpose_conv;

use heimdall_ir::{Graph, Op, OpKind, TensorId, UnaryKind};

use self::operator::{Converted, Operator};
use crate::builtin::B;
use crate::custom_options::{self, MEDIAPIPE_OP_VERSION};
use crate::error::ImportError;
use crate::schema_generated::tflite;

type Codes<'a> = flatbuffers::Vector<'a, flatbuffers::ForwardsUOffset<tflite::OperatorCode<'a>>>;

/// Highest op version of each builtin that heimdall implements (float kernels).
fn max_version(op: B) -> Option<i32> {
    Some(match op {
        B::ADD => 5,
        B::SUB => 5,
        B::MUL => 7,
        B::AVERAGE_POOL_2D | B::MAX_POOL_2D => 3,
        B::CONCATENATION => 4,
        B::CONV_2D => 8,
        B::DEPTHWISE_CONV_2D => 7,
        B::DEPTH_TO_SPACE => 2,
        B::DEQUANTIZE => 6,
        B::DENSIFY => 1,
        B::FULLY_CONNECTED => 13,
        B::LOGISTIC | B::RELU | B::RELU6 | B::RELU_N1_TO_1 | B::TANH => 3,
        B::HARD_SWISH | B::PRELU => 1,
        B::MEAN => 3,
        B::PAD => 4,
        B::RESHAPE => 1,
        B::RESIZE_BILINEAR => 4,
        B::STRIDED_SLICE => 8,
        B::TRANSPOSE_CONV => 4,
        _ => return None,
    })
}

/// An operator's code: its builtin, custom code and version.
struct Code<'a> {
    builtin: B,
    custom: Option<&'a str>,
    version: i32,
}

fn code<'a>(
    codes: &Codes<'a>,
    op: &tflite::Operator<'a>,
    index: usize,
) -> Result<Code<'a>, ImportError> {
    let i = op.opcode_index() as usize;
    if i >= codes.len() {
        return Err(ImportError::Op {
            index,
            name: "?".into(),
            message: format!("opcode index {i} out of range ({} codes)", codes.len()),
        });
    }
    let c = codes.get(i);
    // Schema 3a: the real code is the larger of the deprecated byte and the int field.
    let builtin = B(c.builtin_code().max(c.deprecated_builtin_code() as i32));
    Ok(Code {
        builtin,
        custom: c.custom_code(),
        version: c.version(),
    })
}

/// The name of an op: builtin name, or the custom code of a custom op.
pub(crate) fn op_name(
    codes: &Codes<'_>,
    op: &tflite::Operator<'_>,
    index: usize,
) -> Result<String, ImportError> {
    let c = code(codes, op, index)?;
    Ok(match (c.builtin, c.custom) {
        (B::CUSTOM, Some(name)) => name.to_string(),
        (b, _) => b.name(),
    })
}

/// Converts one operator.
pub(crate) fn import_op(
    graph: &Graph,
    codes: &Codes<'_>,
    op: &tflite::Operator<'_>,
    index: usize,
    file: &[u8],
) -> Result<Op, ImportError> {
    let c = code(codes, op, index)?;
    let name = op_name(codes, op, index)?;
    let (raw_inputs, outputs) =
        op_tensors(op, graph.tensors.len()).map_err(|message| ImportError::Op {
            index,
            name: name.clone(),
            message,
        })?;
    let cx = Operator {
        graph,
        op,
        index,
        name,
        raw_inputs,
        outputs,
        file,
    };
    check_version(&cx, &c)?;
    let converted = convert_builtin(&cx, &c)?;
    let mut op = Op::new(converted.kind, converted.inputs, cx.outputs);
    op.epilogue.activation = converted.activation;
    op.source = Some(index);
    Ok(op)
}

/// The inputs (`None` for an omitted optional input, -1 in the file) and outputs of `op`,
/// checked to be among the subgraph's `nt` tensors, with at least one output.
fn op_tensors(
    op: &tflite::Operator<'_>,
    nt: usize,
) -> Result<(Vec<Option<TensorId>>, Vec<TensorId>), String> {
    let raw_inputs: Vec<Option<TensorId>> = op
        .inputs()
        .map(|v| v.iter().collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|i| match i {
            -1 => Ok(None),
            i if i >= 0 && (i as usize) < nt => Ok(Some(TensorId(i as u32))),
            i => Err(format!("input refers to tensor {i}, the subgraph has {nt}")),
        })
        .collect::<Result<_, _>>()?;
    let outputs: Vec<TensorId> = op
        .outputs()
        .map(|v| v.iter().collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|i| {
            usize::try_from(i)
                .ok()
                .filter(|&i| i < nt)
                .map(|i| TensorId(i as u32))
                .ok_or_else(|| format!("output refers to tensor {i}, the subgraph has {nt}"))
        })
        .collect::<Result<_, _>>()?;
    if outputs.is_empty() {
        return Err("has no outputs".into());
    }
    Ok((raw_inputs, outputs))
}

/// Checks that heimdall implements the version `c` states of a builtin op (custom ops are
/// checked by [`convert_custom`]).
fn check_version(cx: &Operator, c: &Code<'_>) -> Result<(), ImportError> {
    if c.builtin != B::CUSTOM {
        match max_version(c.builtin) {
            None => return Err(cx.unsupported(String::new())),
            Some(max) if c.version > max || c.version < 1 => {
                return Err(cx.unsupported(format!(
                    "version {} (heimdall implements versions 1..={max})",
                    c.version
                )));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Converts the op `cx` of code `c` with the converter of its family.
fn convert_builtin(cx: &Operator, c: &Code<'_>) -> Result<Converted, ImportError> {
    let one = |kind: OpKind| -> Result<Converted, ImportError> {
        Ok(Converted::new(kind, vec![cx.input(0)?]))
    };
    Ok(match c.builtin {
        B::ADD | B::SUB | B::MUL | B::PRELU => binary::convert(cx, c.builtin)?,
        B::CONV_2D | B::DEPTHWISE_CONV_2D => conv::convert(cx, c.builtin)?,
        B::TRANSPOSE_CONV => transpose_conv::convert(cx)?,
        B::FULLY_CONNECTED => fully_connected::convert(cx)?,
        B::MAX_POOL_2D | B::AVERAGE_POOL_2D => pool::convert(cx, c.builtin)?,
        B::MEAN => reduce::convert(cx)?,
        B::PAD => pad::convert(cx)?,
        B::RESHAPE => one(OpKind::Reshape)?,
        B::CONCATENATION => concat::convert(cx)?,
        B::RESIZE_BILINEAR => resize::convert(cx)?,
        B::DEPTH_TO_SPACE => space_depth::convert(cx)?,
        B::STRIDED_SLICE => strided_slice::convert(cx)?,
        B::DEQUANTIZE => one(OpKind::Dequantize)?,
        B::DENSIFY => one(OpKind::Densify)?,
        B::RELU | B::RELU6 | B::RELU_N1_TO_1 | B::LOGISTIC | B::HARD_SWISH | B::TANH => {
            one(OpKind::Unary(match c.builtin {
                B::RELU => UnaryKind::Relu,
                B::RELU6 => UnaryKind::Relu6,
                B::RELU_N1_TO_1 => UnaryKind::ReluN1To1,
                B::LOGISTIC => UnaryKind::Logistic,
                B::HARD_SWISH => UnaryKind::HardSwish,
                _ => UnaryKind::Tanh,
            }))?
        }
        B::CUSTOM => convert_custom(cx, c.custom.unwrap_or(""), c.version)?,
        _ => return Err(cx.unsupported(String::new())),
    })
}

/// Converts a custom op: MediaPipe's `Convolution2DTransposeBias` and its face-landmark ops
/// (version 2, options parsed by [`custom_options`]).
fn convert_custom(cx: &Operator, custom: &str, version: i32) -> Result<Converted, ImportError> {
    let options = raw_custom_options(cx.op, cx.file).map_err(|e| cx.fail(e))?;
    let inputs = cx.all_inputs("a custom op")?;
    let mediapipe = matches!(
        custom,
        "Landmarks2TransformMatrix" | "TransformTensorBilinear" | "TransformLandmarks"
    );
    if mediapipe && version != MEDIAPIPE_OP_VERSION {
        return Err(cx.unsupported(format!(
            "version {version} (heimdall implements version {MEDIAPIPE_OP_VERSION})"
        )));
    }
    let fail = |e: String| cx.fail(e);
    let kind = match custom {
        "Convolution2DTransposeBias" => {
            return transpose_conv::convert_with_bias(cx, inputs, options);
        }
        "Landmarks2TransformMatrix" => OpKind::Landmarks2TransformMatrix(
            custom_options::parse_landmarks_to_transform_matrix(options).map_err(fail)?,
        ),
        "TransformTensorBilinear" => OpKind::TransformTensorBilinear(
            custom_options::parse_transform_tensor_bilinear(options).map_err(fail)?,
        ),
        "TransformLandmarks" => OpKind::TransformLandmarks(
            custom_options::parse_transform_landmarks(options).map_err(fail)?,
        ),
        _ => return Err(cx.unsupported("unknown custom op".into())),
    };
    Ok(Converted::new(kind, inputs))
}

/// The raw custom options of an operator (inline or, for large ones, elsewhere in the file).
fn raw_custom_options<'a>(op: &tflite::Operator<'a>, file: &'a [u8]) -> Result<&'a [u8], String> {
    if op.large_custom_options_size() > 0 {
        let start = usize::try_from(op.large_custom_options_offset())
            .map_err(|_| "options offset overflows")?;
        let size = usize::try_from(op.large_custom_options_size())
            .map_err(|_| "options size overflows")?;
        let end = start
            .checked_add(size)
            .filter(|&e| e <= file.len())
            .ok_or("custom options lie outside the file")?;
        return Ok(&file[start..end]);
    }
    Ok(op.custom_options().map(|v| v.bytes()).unwrap_or(&[]))
}
