//! Mapping decisions on small hand-built models: BatchNormalization folds into the preceding
//! convolution, NCHW images become NHWC without runtime transposes around convolutions, shape
//! subgraphs fold to constants, and dynamic inputs without a shape are a clear error.

use heimdall_cpu::{CpuModel, CpuOptions};
use heimdall_onnx::proto::{
    AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    TensorShapeProto, TypeProto, ValueInfoProto, tensor_shape_proto::Dimension,
    tensor_shape_proto::dimension, type_proto,
};
use heimdall_onnx::{ImportOptions, OnnxError, import};
use prost::Message;

fn value_info(name: &str, dims: &[Option<i64>]) -> ValueInfoProto {
    let dim = dims
        .iter()
        .map(|d| Dimension {
            denotation: None,
            value: Some(match d {
                Some(v) => dimension::Value::DimValue(*v),
                None => dimension::Value::DimParam("n".into()),
            }),
        })
        .collect();
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            denotation: None,
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: Some(1),
                shape: Some(TensorShapeProto { dim }),
            })),
        }),
        ..Default::default()
    }
}

fn tensor(name: &str, dims: &[i64], values: &[f32]) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(1),
        float_data: values.to_vec(),
        ..Default::default()
    }
}

fn ints_tensor(name: &str, values: &[i64]) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        dims: vec![values.len() as i64],
        data_type: Some(7),
        int64_data: values.to_vec(),
        ..Default::default()
    }
}

fn node(op: &str, inputs: &[&str], outputs: &[&str], attrs: Vec<AttributeProto>) -> NodeProto {
    NodeProto {
        op_type: Some(op.into()),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        attribute: attrs,
        ..Default::default()
    }
}

fn ints(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        ints: v.to_vec(),
        r#type: Some(7),
        ..Default::default()
    }
}

fn model(graph: GraphProto) -> Vec<u8> {
    ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(13),
        }],
        graph: Some(graph),
        ..Default::default()
    }
    .encode_to_vec()
}

fn data(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| {
            (((i as u32).wrapping_mul(2654435761).wrapping_add(seed) >> 8) % 1000) as f32 / 500.0
                - 1.0
        })
        .collect()
}

/// Conv (2 -> 3 channels, 3x3, pad 1) + BatchNormalization + Relu on a 1x2x5x4 NCHW input.
fn conv_bn_model() -> (Vec<u8>, Vec<f32>, Vec<f32>, [Vec<f32>; 4]) {
    let w = data(3 * 2 * 9, 1);
    let x = data(2 * 5 * 4, 2);
    let bn = [
        vec![1.5, -0.5, 2.0],
        vec![0.1, 0.2, -0.3],
        vec![0.05, -0.1, 0.2],
        vec![0.9, 1.1, 0.5],
    ];
    let graph = GraphProto {
        node: vec![
            node(
                "Conv",
                &["x", "w"],
                &["c"],
                vec![ints("pads", &[1, 1, 1, 1])],
            ),
            node(
                "BatchNormalization",
                &["c", "s", "b", "m", "v"],
                &["n"],
                vec![],
            ),
            node("Relu", &["n"], &["y"], vec![]),
        ],
        initializer: vec![
            tensor("w", &[3, 2, 3, 3], &w),
            tensor("s", &[3], &bn[0]),
            tensor("b", &[3], &bn[1]),
            tensor("m", &[3], &bn[2]),
            tensor("v", &[3], &bn[3]),
        ],
        input: vec![value_info("x", &[Some(1), Some(2), Some(5), Some(4)])],
        output: vec![value_info("y", &[Some(1), Some(3), Some(5), Some(4)])],
        ..Default::default()
    };
    (model(graph), w, x, bn)
}

#[test]
fn batch_norm_folds_into_conv_and_matches_reference() {
    let (bytes, w, x, bn) = conv_bn_model();
    let m = import(&bytes, "conv_bn", &ImportOptions::default()).expect("import");
    let names: Vec<&str> = m.graph.ops.iter().map(|o| o.kind.name()).collect();
    assert_eq!(names, ["CONV_2D", "RELU"], "BN folded, no transposes");
    // Run with the NCHW input transposed to NHWC at the boundary.
    let mut cpu = CpuModel::compile(&m.graph, CpuOptions { threads: 1 }).expect("compile");
    let mut nhwc = vec![0.0; x.len()];
    for c in 0..2 {
        for p in 0..20 {
            nhwc[p * 2 + c] = x[c * 20 + p];
        }
    }
    cpu.set_input(0, &nhwc).expect("input");
    cpu.run().expect("run");
    let out = cpu.output(0).expect("output");
    // Naive NCHW reference.
    for o in 0..3 {
        for y in 0..5i64 {
            for xx in 0..4i64 {
                let mut acc = 0.0f64;
                for c in 0..2 {
                    for ky in 0..3i64 {
                        for kx in 0..3i64 {
                            let (iy, ix) = (y + ky - 1, xx + kx - 1);
                            if (0..5).contains(&iy) && (0..4).contains(&ix) {
                                acc += w[((o * 2 + c) * 3 + ky as usize) * 3 + kx as usize] as f64
                                    * x[c * 20 + (iy * 4 + ix) as usize] as f64;
                            }
                        }
                    }
                }
                let norm = (acc - bn[2][o] as f64) / (bn[3][o] as f64 + 1e-5).sqrt()
                    * bn[0][o] as f64
                    + bn[1][o] as f64;
                let got = out[((y * 4 + xx) as usize) * 3 + o] as f64;
                assert!(
                    (got - norm.max(0.0)).abs() < 1e-5,
                    "{got} vs {}",
                    norm.max(0.0)
                );
            }
        }
    }
}

#[test]
fn shape_subgraph_folds_and_dynamic_input_is_named() {
    // y = Reshape(x, Concat(Shape(x)[0:1], [-1])): a flatten written as a shape subgraph.
    let graph = GraphProto {
        node: vec![
            node("Shape", &["x"], &["s"], vec![]),
            node("Slice", &["s", "zero", "one"], &["s0"], vec![]),
            node(
                "Concat",
                &["s0", "minus_one"],
                &["t"],
                vec![ints_attr("axis", 0)],
            ),
            node("Reshape", &["x", "t"], &["y"], vec![]),
        ],
        initializer: vec![
            ints_tensor("zero", &[0]),
            ints_tensor("one", &[1]),
            ints_tensor("minus_one", &[-1]),
        ],
        input: vec![value_info("x", &[None, Some(3), Some(4)])],
        output: vec![value_info("y", &[None, Some(12)])],
        ..Default::default()
    };
    let bytes = model(graph);
    match import(&bytes, "dyn", &ImportOptions::default()) {
        Err(e @ OnnxError::DynamicShape { .. }) => {
            assert!(e.to_string().contains("--input-shape x=1x3x4"), "{e}")
        }
        other => panic!("expected a dynamic-shape error, got {other:?}"),
    }
    let options = ImportOptions {
        input_shapes: vec![("x".into(), vec![2, 3, 4])],
        ..Default::default()
    };
    let m = import(&bytes, "dyn", &options).expect("import");
    let names: Vec<&str> = m.graph.ops.iter().map(|o| o.kind.name()).collect();
    assert_eq!(names, ["RESHAPE"]);
    assert_eq!(m.outputs[0].shape, vec![2, 12]);
}

fn ints_attr(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        i: Some(v),
        r#type: Some(2),
        ..Default::default()
    }
}
