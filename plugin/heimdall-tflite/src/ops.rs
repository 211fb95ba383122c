//! TFLite operators to IR ops.

use heimdall_ir::shape::same_padding;
use heimdall_ir::{
    Activation, BinaryFn, BlockOrder, ConvAttrs, Graph, Op, OpKind, Pad2d, PadMode, PoolAttrs,
    ReduceKind, ResizeAttrs, StridedSliceAttrs, TensorId, UnaryKind,
};

use crate::builtin::B;
use crate::schema_generated::tflite;
use crate::tensors::int_values;
use crate::{ImportError, mediapipe_options};

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
    let fail = |message: String| ImportError::Op {
        index,
        name: name.clone(),
        message,
    };
    let nt = graph.tensors.len();
    // Optional inputs are -1.
    let raw_inputs: Vec<Option<TensorId>> = op
        .inputs()
        .map(|v| v.iter().collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|i| match i {
            -1 => Ok(None),
            i if i >= 0 && (i as usize) < nt => Ok(Some(TensorId(i as u32))),
            i => Err(fail(format!(
                "input refers to tensor {i}, the subgraph has {nt}"
            ))),
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
                .ok_or_else(|| {
                    fail(format!(
                        "output refers to tensor {i}, the subgraph has {nt}"
                    ))
                })
        })
        .collect::<Result<_, _>>()?;
    if outputs.is_empty() {
        return Err(fail("has no outputs".into()));
    }
    let input = |i: usize| -> Result<TensorId, ImportError> {
        raw_inputs
            .get(i)
            .copied()
            .flatten()
            .ok_or_else(|| fail(format!("missing input {i}")))
    };
    let optional = |i: usize| raw_inputs.get(i).copied().flatten();
    let shape = |t: TensorId| graph.tensor(t).shape.clone();
    let const_ints = |t: TensorId, what: &str| -> Result<Vec<i64>, ImportError> {
        int_values(graph.tensor(t))
            .ok_or_else(|| fail(format!("{what} must be a constant integer tensor")))
    };
    if c.builtin != B::CUSTOM {
        match max_version(c.builtin) {
            None => {
                return Err(ImportError::Unsupported {
                    index,
                    name,
                    message: String::new(),
                });
            }
            Some(max) if c.version > max || c.version < 1 => {
                return Err(ImportError::Unsupported {
                    index,
                    name,
                    message: format!(
                        "version {} (heimdall implements versions 1..={max})",
                        c.version
                    ),
                });
            }
            _ => {}
        }
    }
    let missing = || fail("missing or mismatched builtin options".into());
    let act = |a: tflite::ActivationFunctionType| -> Result<Activation, ImportError> {
        Ok(match a {
            tflite::ActivationFunctionType::NONE => Activation::None,
            tflite::ActivationFunctionType::RELU => Activation::Unary(UnaryKind::Relu),
            tflite::ActivationFunctionType::RELU6 => Activation::Unary(UnaryKind::Relu6),
            tflite::ActivationFunctionType::RELU_N1_TO_1 => Activation::Unary(UnaryKind::ReluN1To1),
            tflite::ActivationFunctionType::TANH => Activation::Unary(UnaryKind::Tanh),
            other => return Err(fail(format!("fused activation {other:?} is not supported"))),
        })
    };
    let stride = |h: i32, w: i32| -> Result<[usize; 2], ImportError> {
        match (usize::try_from(h), usize::try_from(w)) {
            (Ok(h), Ok(w)) if h > 0 && w > 0 && h <= 4096 && w <= 4096 => Ok([h, w]),
            _ => Err(fail(format!("invalid stride {h}x{w}"))),
        }
    };
    // Resolves SAME/VALID padding for a window over a 4-D input.
    let window_pad = |x: &[usize],
                      k: [usize; 2],
                      s: [usize; 2],
                      d: [usize; 2],
                      p: tflite::Padding|
     -> Result<Pad2d, ImportError> {
        if x.len() != 4 {
            return Err(fail(format!("input must be 4-D, has shape {x:?}")));
        }
        if k[0] == 0 || k[1] == 0 {
            return Err(fail("window of size zero".into()));
        }
        Ok(match p {
            tflite::Padding::SAME => {
                let (_, t, b) = same_padding(x[1], k[0], s[0], d[0]);
                let (_, l, r) = same_padding(x[2], k[1], s[1], d[1]);
                Pad2d {
                    top: t,
                    bottom: b,
                    left: l,
                    right: r,
                }
            }
            tflite::Padding::VALID => Pad2d::default(),
            other => return Err(fail(format!("padding {other:?} is not supported"))),
        })
    };
    let dims = |v: &[usize], n: usize, what: &str| -> Result<(), ImportError> {
        if v.len() == n {
            Ok(())
        } else {
            Err(fail(format!("{what} must have rank {n}, has shape {v:?}")))
        }
    };
    let mut inputs: Vec<TensorId>;
    let mut activation = Activation::None;
    let kind = match c.builtin {
        B::ADD | B::SUB | B::MUL => {
            inputs = vec![input(0)?, input(1)?];
            let (kind, a) = match c.builtin {
                B::ADD => (
                    OpKind::Binary(BinaryFn::Add),
                    op.builtin_options_as_add_options()
                        .map(|o| o.fused_activation_function()),
                ),
                B::SUB => (
                    OpKind::Binary(BinaryFn::Sub),
                    op.builtin_options_as_sub_options()
                        .map(|o| o.fused_activation_function()),
                ),
                _ => (
                    OpKind::Binary(BinaryFn::Mul),
                    op.builtin_options_as_mul_options()
                        .map(|o| o.fused_activation_function()),
                ),
            };
            activation = act(a.unwrap_or(tflite::ActivationFunctionType::NONE))?;
            kind
        }
        B::CONV_2D | B::DEPTHWISE_CONV_2D => {
            inputs = vec![input(0)?, input(1)?];
            inputs.extend(optional(2));
            let (x, f) = (shape(inputs[0]), shape(inputs[1]));
            dims(&f, 4, "filter")?;
            let (s, d, p, a, mult) = if c.builtin == B::CONV_2D {
                let o = op
                    .builtin_options_as_conv_2_doptions()
                    .ok_or_else(missing)?;
                (
                    stride(o.stride_h(), o.stride_w())?,
                    stride(o.dilation_h_factor(), o.dilation_w_factor())?,
                    o.padding(),
                    o.fused_activation_function(),
                    0,
                )
            } else {
                let o = op
                    .builtin_options_as_depthwise_conv_2_doptions()
                    .ok_or_else(missing)?;
                (
                    stride(o.stride_h(), o.stride_w())?,
                    stride(o.dilation_h_factor(), o.dilation_w_factor())?,
                    o.padding(),
                    o.fused_activation_function(),
                    o.depth_multiplier(),
                )
            };
            activation = act(a)?;
            let pad = window_pad(&x, [f[1], f[2]], s, d, p)?;
            let attrs = ConvAttrs {
                stride: s,
                dilation: d,
                pad,
            };
            if c.builtin == B::CONV_2D {
                OpKind::Conv2d(attrs)
            } else {
                let channels = x.get(3).copied().unwrap_or(0);
                // Some converters write 0: the multiplier then follows from the shapes.
                let multiplier = if mult > 0 {
                    mult as usize
                } else {
                    f[3].checked_div(channels).unwrap_or(0)
                };
                if multiplier == 0 || channels * multiplier != f[3] {
                    return Err(fail(format!(
                        "depth multiplier {mult} does not fit {channels} input channels and filter {f:?}"
                    )));
                }
                OpKind::DepthwiseConv2d { attrs, multiplier }
            }
        }
        B::TRANSPOSE_CONV => {
            // Inputs: output_shape, filter, x, optional bias.
            inputs = vec![input(2)?, input(1)?];
            inputs.extend(optional(3));
            let o = op
                .builtin_options_as_transpose_conv_options()
                .ok_or_else(missing)?;
            activation = act(o.fused_activation_function())?;
            let s = stride(o.stride_h(), o.stride_w())?;
            transpose_conv(
                &shape(inputs[0]),
                &shape(inputs[1]),
                &shape(outputs[0]),
                s,
                o.padding() == tflite::Padding::VALID,
            )
            .map_err(fail)?
        }
        B::FULLY_CONNECTED => {
            inputs = vec![input(0)?, input(1)?];
            inputs.extend(optional(2));
            let o = op
                .builtin_options_as_fully_connected_options()
                .ok_or_else(missing)?;
            if o.weights_format() != tflite::FullyConnectedOptionsWeightsFormat::DEFAULT {
                return Err(fail("shuffled weights are not supported".into()));
            }
            activation = act(o.fused_activation_function())?;
            OpKind::FullyConnected
        }
        B::MAX_POOL_2D | B::AVERAGE_POOL_2D => {
            inputs = vec![input(0)?];
            let o = op
                .builtin_options_as_pool_2_doptions()
                .ok_or_else(missing)?;
            let f = stride(o.filter_height(), o.filter_width())?;
            let s = stride(o.stride_h(), o.stride_w())?;
            if o.fused_activation_function() != tflite::ActivationFunctionType::NONE {
                return Err(ImportError::Unsupported {
                    index,
                    name,
                    message: "fused activation on a pool".into(),
                });
            }
            let pad = window_pad(&shape(inputs[0]), f, s, [1, 1], o.padding())?;
            let attrs = PoolAttrs {
                filter: f,
                stride: s,
                pad,
            };
            if c.builtin == B::MAX_POOL_2D {
                OpKind::MaxPool2d(attrs)
            } else {
                OpKind::AvgPool2d(attrs)
            }
        }
        B::MEAN => {
            inputs = vec![input(0)?];
            let rank = shape(inputs[0]).len() as i64;
            let mut axes = Vec::new();
            for a in const_ints(input(1)?, "axes")? {
                let a = if a < 0 { a + rank } else { a };
                if !(0..rank).contains(&a) {
                    return Err(fail(format!("axis {a} out of range for rank {rank}")));
                }
                axes.push(a as usize);
            }
            axes.sort_unstable();
            axes.dedup();
            let keep_dims = op
                .builtin_options_as_reducer_options()
                .is_some_and(|o| o.keep_dims());
            OpKind::Reduce {
                kind: ReduceKind::Mean,
                axes,
                keep_dims,
            }
        }
        B::PAD => {
            inputs = vec![input(0)?];
            let x = shape(inputs[0]);
            let p = const_ints(input(1)?, "paddings")?;
            if p.len() != 2 * x.len() || p.iter().any(|&v| !(0..=4096).contains(&v)) {
                return Err(fail(format!("paddings {p:?} do not fit input {x:?}")));
            }
            OpKind::Pad {
                pads: p
                    .chunks(2)
                    .map(|c| [c[0] as usize, c[1] as usize])
                    .collect(),
                mode: PadMode::ZERO,
            }
        }
        B::RESHAPE => {
            inputs = vec![input(0)?];
            OpKind::Reshape
        }
        B::CONCATENATION => {
            inputs = raw_inputs
                .iter()
                .map(|t| t.ok_or_else(|| fail("optional input in a concatenation".into())))
                .collect::<Result<_, _>>()?;
            if inputs.is_empty() {
                return Err(fail("no inputs".into()));
            }
            let o = op
                .builtin_options_as_concatenation_options()
                .ok_or_else(missing)?;
            activation = act(o.fused_activation_function())?;
            if activation != Activation::None {
                return Err(ImportError::Unsupported {
                    index,
                    name,
                    message: "fused activation on a concatenation".into(),
                });
            }
            let rank = shape(inputs[0]).len() as i64;
            let axis = if o.axis() < 0 {
                o.axis() as i64 + rank
            } else {
                o.axis() as i64
            };
            if !(0..rank).contains(&axis) {
                return Err(fail(format!(
                    "axis {} out of range for rank {rank}",
                    o.axis()
                )));
            }
            OpKind::Concatenation {
                axis: axis as usize,
            }
        }
        B::RESIZE_BILINEAR => {
            inputs = vec![input(0)?];
            let o = op.builtin_options_as_resize_bilinear_options();
            let size = const_ints(input(1)?, "size")?;
            let out = shape(outputs[0]);
            if size.len() != 2
                || out.len() != 4
                || size[0] != out[1] as i64
                || size[1] != out[2] as i64
            {
                return Err(fail(format!("size {size:?} does not match output {out:?}")));
            }
            let attrs = ResizeAttrs::tflite_bilinear(
                o.is_some_and(|o| o.align_corners()),
                o.is_some_and(|o| o.half_pixel_centers()),
            )
            .map_err(|message| ImportError::Unsupported {
                index,
                name: name.clone(),
                message,
            })?;
            OpKind::Resize(attrs)
        }
        B::DEPTH_TO_SPACE => {
            inputs = vec![input(0)?];
            let o = op
                .builtin_options_as_depth_to_space_options()
                .ok_or_else(missing)?;
            let block = usize::try_from(o.block_size())
                .ok()
                .filter(|&b| (1..=64).contains(&b))
                .ok_or_else(|| fail(format!("invalid block size {}", o.block_size())))?;
            OpKind::DepthToSpace {
                block,
                order: BlockOrder::Dcr,
            }
        }
        B::STRIDED_SLICE => {
            inputs = vec![input(0)?];
            let o = op
                .builtin_options_as_strided_slice_options()
                .ok_or_else(missing)?;
            let x = shape(inputs[0]);
            let attrs = strided_slice(
                &x,
                &const_ints(input(1)?, "begin")?,
                &const_ints(input(2)?, "end")?,
                &const_ints(input(3)?, "strides")?,
                [
                    o.begin_mask(),
                    o.end_mask(),
                    o.ellipsis_mask(),
                    o.new_axis_mask(),
                    o.shrink_axis_mask(),
                ],
                o.offset(),
            )
            .map_err(fail)?;
            OpKind::StridedSlice(attrs)
        }
        B::DEQUANTIZE => {
            inputs = vec![input(0)?];
            OpKind::Dequantize
        }
        B::DENSIFY => {
            inputs = vec![input(0)?];
            OpKind::Densify
        }
        B::RELU | B::RELU6 | B::RELU_N1_TO_1 | B::LOGISTIC | B::HARD_SWISH | B::TANH => {
            inputs = vec![input(0)?];
            OpKind::Unary(match c.builtin {
                B::RELU => UnaryKind::Relu,
                B::RELU6 => UnaryKind::Relu6,
                B::RELU_N1_TO_1 => UnaryKind::ReluN1To1,
                B::LOGISTIC => UnaryKind::Logistic,
                B::HARD_SWISH => UnaryKind::HardSwish,
                _ => UnaryKind::Tanh,
            })
        }
        B::PRELU => {
            inputs = vec![input(0)?, input(1)?];
            OpKind::Binary(BinaryFn::Prelu)
        }
        B::CUSTOM => {
            let options = custom_options(op, file).map_err(&fail)?;
            inputs = raw_inputs
                .iter()
                .map(|t| t.ok_or_else(|| fail("optional input in a custom op".into())))
                .collect::<Result<_, _>>()?;
            let custom = c.custom.unwrap_or("");
            let mediapipe = matches!(
                custom,
                "Landmarks2TransformMatrix" | "TransformTensorBilinear" | "TransformLandmarks"
            );
            if mediapipe && c.version != mediapipe_options::MEDIAPIPE_OP_VERSION {
                return Err(ImportError::Unsupported {
                    index,
                    name,
                    message: format!(
                        "version {} (heimdall implements version {})",
                        c.version,
                        mediapipe_options::MEDIAPIPE_OP_VERSION
                    ),
                });
            }
            match custom {
                "Convolution2DTransposeBias" => {
                    if inputs.len() != 3 {
                        return Err(fail(format!(
                            "expected 3 inputs (x, filter, bias), got {}",
                            inputs.len()
                        )));
                    }
                    let (valid, s) = transpose_conv_bias_options(options).map_err(&fail)?;
                    let s = stride(s[0], s[1])?;
                    transpose_conv(
                        &shape(inputs[0]),
                        &shape(inputs[1]),
                        &shape(outputs[0]),
                        s,
                        valid,
                    )
                    .map_err(fail)?
                }
                "Landmarks2TransformMatrix" => OpKind::Landmarks2TransformMatrix(
                    mediapipe_options::parse_landmarks_to_transform_matrix(options)
                        .map_err(&fail)?,
                ),
                "TransformTensorBilinear" => OpKind::TransformTensorBilinear(
                    mediapipe_options::parse_transform_tensor_bilinear(options).map_err(&fail)?,
                ),
                "TransformLandmarks" => OpKind::TransformLandmarks(
                    mediapipe_options::parse_transform_landmarks(options).map_err(&fail)?,
                ),
                _ => {
                    return Err(ImportError::Unsupported {
                        index,
                        name,
                        message: "unknown custom op".into(),
                    });
                }
            }
        }
        _ => {
            return Err(ImportError::Unsupported {
                index,
                name,
                message: String::new(),
            });
        }
    };
    let mut op = Op::new(kind, inputs, outputs);
    op.epilogue.activation = activation;
    op.source = Some(index);
    Ok(op)
}

fn custom_options<'a>(op: &tflite::Operator<'a>, file: &'a [u8]) -> Result<&'a [u8], String> {
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

/// MediaPipe's `Convolution2DTransposeBias` stores a raw `TfLiteTransposeConvParams`
/// (`padding` enum, `stride_width`, `stride_height`, all 32-bit little endian; padding 1 = SAME,
/// 2 = VALID). Returns (valid, [stride_h, stride_w]).
fn transpose_conv_bias_options(bytes: &[u8]) -> Result<(bool, [i32; 2]), String> {
    if bytes.len() < 12 {
        return Err(format!("options of {} bytes, expected 12", bytes.len()));
    }
    let word = |i: usize| {
        i32::from_le_bytes([
            bytes[4 * i],
            bytes[4 * i + 1],
            bytes[4 * i + 2],
            bytes[4 * i + 3],
        ])
    };
    let valid = match word(0) {
        1 => false,
        2 => true,
        p => return Err(format!("unknown padding {p}")),
    };
    Ok((valid, [word(2), word(1)]))
}

/// A transposed convolution producing `out` from `x` and `filter [Co,kh,kw,Ci]`.
fn transpose_conv(
    x: &[usize],
    f: &[usize],
    out: &[usize],
    s: [usize; 2],
    valid: bool,
) -> Result<OpKind, String> {
    if x.len() != 4 || f.len() != 4 || out.len() != 4 {
        return Err(format!(
            "expected 4-D input, filter and output, got {x:?}, {f:?}, {out:?}"
        ));
    }
    if x[1] == 0 || x[2] == 0 {
        return Err(format!("empty input {x:?}"));
    }
    let full = [(x[1] - 1) * s[0] + f[1], (x[2] - 1) * s[1] + f[2]];
    let total_h = full[0]
        .checked_sub(out[1])
        .ok_or("output larger than the full transposed output")?;
    let total_w = full[1]
        .checked_sub(out[2])
        .ok_or("output larger than the full transposed output")?;
    if valid && (total_h > 0 || total_w > 0) && (out[1] != x[1] * s[0] || out[2] != x[2] * s[1]) {
        // VALID keeps the full output; anything else is inconsistent.
        return Err(format!(
            "VALID transposed conv of {x:?} cannot give {out:?}"
        ));
    }
    let pad = Pad2d {
        top: total_h / 2,
        bottom: total_h - total_h / 2,
        left: total_w / 2,
        right: total_w - total_w / 2,
    };
    Ok(OpKind::TransposeConv2d(ConvAttrs {
        stride: s,
        dilation: [1, 1],
        pad,
    }))
}

/// Resolves TFLite strided-slice masks into per-axis begin/stride/count.
fn strided_slice(
    x: &[usize],
    begin: &[i64],
    end: &[i64],
    strides: &[i64],
    masks: [i32; 5],
    offset: bool,
) -> Result<StridedSliceAttrs, String> {
    let [
        begin_mask,
        end_mask,
        ellipsis_mask,
        new_axis_mask,
        shrink_mask,
    ] = masks;
    if ellipsis_mask != 0 || new_axis_mask != 0 {
        return Err("ellipsis and new-axis masks are not supported".into());
    }
    let r = x.len();
    if begin.len() != r || end.len() != r || strides.len() != r {
        return Err(format!(
            "begin/end/strides of length {}/{}/{} for rank {r}",
            begin.len(),
            end.len(),
            strides.len()
        ));
    }
    let mut out = StridedSliceAttrs {
        begin: vec![],
        stride: vec![],
        count: vec![],
    };
    for d in 0..r {
        let dim = x[d] as i64;
        let s = strides[d];
        if s == 0 || s.abs() > 1 << 20 {
            return Err(format!("axis {d}: stride {s}"));
        }
        let norm = |v: i64| if v < 0 { v + dim } else { v };
        let (lo, hi) = if s > 0 { (0, dim) } else { (-1, dim - 1) };
        let mut b = if begin_mask & (1 << d) != 0 {
            if s > 0 { 0 } else { dim - 1 }
        } else {
            norm(begin[d]).clamp(lo, hi)
        };
        let mut e = if end_mask & (1 << d) != 0 {
            if s > 0 { dim } else { -1 }
        } else if offset {
            (b + end[d]).clamp(lo, hi)
        } else {
            norm(end[d]).clamp(lo, hi)
        };
        let mut step = s;
        if shrink_mask & (1 << d) != 0 {
            b = norm(begin[d]);
            if !(0..dim).contains(&b) {
                return Err(format!("axis {d}: shrunk index {} out of range", begin[d]));
            }
            e = b + 1;
            step = 1;
        }
        let count = if step > 0 {
            ((e - b).max(0) + step - 1) / step
        } else {
            ((b - e).max(0) - step - 1) / -step
        };
        out.begin.push(b);
        out.stride.push(step);
        out.count.push(count as usize);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_slice_masks() {
        // x[:, 1:3, ::2, -1] on [1, 4, 5, 6].
        let a = strided_slice(
            &[1, 4, 5, 6],
            &[0, 1, 0, -1],
            &[1, 3, 0, 0],
            &[1, 1, 2, 1],
            [0b0101, 0b0101, 0, 0, 0b1000],
            false,
        )
        .unwrap();
        assert_eq!(a.begin, vec![0, 1, 0, 5]);
        assert_eq!(a.count, vec![1, 2, 3, 1]);
        // Negative stride: x[3:0:-1] on [5] gives indices 3, 2, 1.
        let a = strided_slice(&[5], &[3], &[0], &[-1], [0, 0, 0, 0, 0], false).unwrap();
        assert_eq!((a.begin[0], a.stride[0], a.count[0]), (3, -1, 3));
        assert!(strided_slice(&[5], &[0], &[1], &[0], [0; 5], false).is_err());
    }

    #[test]
    fn transpose_conv_same_2x2() {
        // 2x2 stride 2 SAME: 8x8 -> 16x16, no cropping.
        let k = transpose_conv(
            &[1, 8, 8, 16],
            &[4, 2, 2, 16],
            &[1, 16, 16, 4],
            [2, 2],
            false,
        )
        .unwrap();
        assert_eq!(
            k,
            OpKind::TransposeConv2d(ConvAttrs {
                stride: [2, 2],
                dilation: [1, 1],
                pad: Pad2d::default()
            })
        );
        // 3x3 stride 2 SAME: full 17, output 16, crop 0 before and 1 after.
        let k = transpose_conv(
            &[1, 8, 8, 16],
            &[4, 3, 3, 16],
            &[1, 16, 16, 4],
            [2, 2],
            false,
        )
        .unwrap();
        assert_eq!(
            k,
            OpKind::TransposeConv2d(ConvAttrs {
                stride: [2, 2],
                dilation: [1, 1],
                pad: Pad2d {
                    top: 0,
                    bottom: 1,
                    left: 0,
                    right: 1
                }
            })
        );
    }
}
