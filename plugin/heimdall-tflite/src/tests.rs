//! Import errors on small hand-built models: each names the op index, the op name and what is
//! wrong.

use flatbuffers::{FlatBufferBuilder, WIPOffset};

use crate::schema_generated::tflite::*;
use crate::{ImportError, import};

/// One op of a hand-built model: builtin code, version, input and output tensor indices.
struct TestOp {
    code: i32,
    version: i32,
    inputs: Vec<i32>,
    outputs: Vec<i32>,
    conv: bool,
}

/// Builds a one-subgraph model: `tensors` are (shape, constant f32 data) pairs.
fn model(
    tensors: &[(Vec<i32>, Option<Vec<f32>>)],
    ops: &[TestOp],
    inputs: &[i32],
    outputs: &[i32],
) -> Vec<u8> {
    let mut b = FlatBufferBuilder::new();
    let (buffers, ts) = tensors_and_buffers(&mut b, tensors);
    let mut codes = Vec::new();
    let mut operators = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let (code, operator) = build_op(&mut b, i, op);
        codes.push(code);
        operators.push(operator);
    }
    let ts = b.create_vector(&ts);
    let operators = b.create_vector(&operators);
    let (inputs, outputs) = (b.create_vector(inputs), b.create_vector(outputs));
    let sg = SubGraph::create(
        &mut b,
        &SubGraphArgs {
            tensors: Some(ts),
            inputs: Some(inputs),
            outputs: Some(outputs),
            operators: Some(operators),
            name: None,
        },
    );
    let subgraphs = b.create_vector(&[sg]);
    let codes = b.create_vector(&codes);
    let buffers = b.create_vector(&buffers);
    let m = Model::create(
        &mut b,
        &ModelArgs {
            version: 3,
            operator_codes: Some(codes),
            subgraphs: Some(subgraphs),
            buffers: Some(buffers),
            ..Default::default()
        },
    );
    finish_model_buffer(&mut b, m);
    b.finished_data().to_vec()
}

/// The model's tensors, FLOAT32 and named `t`, and its buffers: buffer 0 empty, then one per
/// constant tensor, in the tensors' order.
fn tensors_and_buffers<'b>(
    b: &mut FlatBufferBuilder<'b>,
    tensors: &[(Vec<i32>, Option<Vec<f32>>)],
) -> (Vec<WIPOffset<Buffer<'b>>>, Vec<WIPOffset<Tensor<'b>>>) {
    let mut buffers = vec![Buffer::create(b, &BufferArgs::default())];
    let mut ts = Vec::new();
    for (shape, data) in tensors {
        let buffer = match data {
            Some(values) => {
                let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
                let data = b.create_vector(&bytes);
                buffers.push(Buffer::create(
                    b,
                    &BufferArgs {
                        data: Some(data),
                        ..Default::default()
                    },
                ));
                buffers.len() as u32 - 1
            }
            None => 0,
        };
        let shape = b.create_vector(shape);
        let name = b.create_string("t");
        ts.push(Tensor::create(
            b,
            &TensorArgs {
                shape: Some(shape),
                type_: TensorType::FLOAT32,
                buffer,
                name: Some(name),
                ..Default::default()
            },
        ));
    }
    (buffers, ts)
}

/// The model's op `i`: its operator code (index `i`) and the operator on its tensors, with
/// VALID stride-1 Conv2D options when `op.conv`.
fn build_op<'b>(
    b: &mut FlatBufferBuilder<'b>,
    i: usize,
    op: &TestOp,
) -> (WIPOffset<OperatorCode<'b>>, WIPOffset<Operator<'b>>) {
    let code = OperatorCode::create(
        b,
        &OperatorCodeArgs {
            deprecated_builtin_code: op.code.min(127) as i8,
            custom_code: None,
            version: op.version,
            builtin_code: op.code,
        },
    );
    let inputs = b.create_vector(&op.inputs);
    let outputs = b.create_vector(&op.outputs);
    let (options_type, options) = if op.conv {
        let o = Conv2DOptions::create(
            b,
            &Conv2DOptionsArgs {
                padding: Padding::VALID,
                stride_w: 1,
                stride_h: 1,
                ..Default::default()
            },
        );
        (BuiltinOptions::Conv2DOptions, Some(o.as_union_value()))
    } else {
        (BuiltinOptions::NONE, None)
    };
    let operator = Operator::create(
        b,
        &OperatorArgs {
            opcode_index: i as u32,
            inputs: Some(inputs),
            outputs: Some(outputs),
            builtin_options_type: options_type,
            builtin_options: options,
            ..Default::default()
        },
    );
    (code, operator)
}

fn conv_model(version: i32, out_channels: i32) -> Vec<u8> {
    // x [1,4,4,2] -> 1x1 conv with 3 filters -> y [1,4,4,out_channels].
    let tensors = [
        (vec![1, 4, 4, 2], None),
        (vec![3, 1, 1, 2], Some(vec![1.0; 6])),
        (vec![3], Some(vec![0.0; 3])),
        (vec![1, 4, 4, out_channels], None),
    ];
    model(
        &tensors,
        &[TestOp {
            code: 3,
            version,
            inputs: vec![0, 1, 2],
            outputs: vec![3],
            conv: true,
        }],
        &[0],
        &[3],
    )
}

#[test]
fn a_valid_hand_built_model_imports() {
    let g = import(&conv_model(1, 3), "conv").expect("valid model");
    assert_eq!(g.ops.len(), 1);
    assert_eq!(g.ops[0].kind.name(), "CONV_2D");
}

#[test]
fn unsupported_op_names_index_and_name() {
    // GATHER (36) is not implemented.
    let tensors = [(vec![4], None), (vec![4], None)];
    let bytes = model(
        &tensors,
        &[TestOp {
            code: 36,
            version: 1,
            inputs: vec![0],
            outputs: vec![1],
            conv: false,
        }],
        &[0],
        &[1],
    );
    match import(&bytes, "gather") {
        Err(ImportError::Unsupported { index: 0, name, .. }) => assert_eq!(name, "GATHER"),
        other => panic!("expected an unsupported-op error, got {other:?}"),
    }
}

#[test]
fn newer_op_version_is_refused_with_the_version() {
    let err = import(&conv_model(99, 3), "conv").unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, ImportError::Unsupported { index: 0, .. }),
        "{err:?}"
    );
    assert!(
        text.contains("CONV_2D") && text.contains("version 99"),
        "{text}"
    );
}

#[test]
fn inconsistent_output_shape_names_the_op() {
    // The file claims 5 output channels where the filter gives 3.
    let err = import(&conv_model(1, 5), "conv").unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("op 0 (CONV_2D)")
            && text.contains("[1, 4, 4, 5]")
            && text.contains("[1, 4, 4, 3]"),
        "{text}"
    );
}

#[test]
fn tensor_index_out_of_range_names_the_op() {
    let tensors = [(vec![4], None), (vec![4], None)];
    let bytes = model(
        &tensors,
        &[TestOp {
            code: 19,
            version: 1,
            inputs: vec![7],
            outputs: vec![1],
            conv: false,
        }],
        &[0],
        &[1],
    );
    let text = import(&bytes, "relu").unwrap_err().to_string();
    assert!(
        text.contains("op 0 (RELU)") && text.contains("tensor 7"),
        "{text}"
    );
}
