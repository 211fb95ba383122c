//! Folds `DENSIFY` and `DEQUANTIZE` of constants into constants.

use crate::IrError;
use crate::graph::Graph;
use crate::ops::OpKind;
use crate::sparse::densify;
use crate::tensor::{Constant, DType};

/// Replaces every `DENSIFY`/`DEQUANTIZE` whose input is a constant by a constant output, keeping
/// the fp16 bits of dequantized weights. Returns the number of ops removed.
pub fn fold_weights(graph: &mut Graph) -> Result<usize, IrError> {
    let mut ops: Vec<Option<crate::Op>> = Vec::with_capacity(graph.ops.len());
    let mut folded = 0;
    for (index, op) in std::mem::take(&mut graph.ops).into_iter().enumerate() {
        let foldable = matches!(op.kind, OpKind::Dequantize | OpKind::Densify)
            && op.inputs.len() == 1
            && op.outputs.len() == 1
            && graph.tensor(op.inputs[0]).constant.is_some();
        if !foldable {
            ops.push(Some(op));
            continue;
        }
        let input = graph.tensor(op.inputs[0]).clone();
        let c = input.constant.expect("checked above");
        let out = op.outputs[0];
        let folded_constant = match op.kind {
            OpKind::Densify => match &c.sparsity {
                Some(sp) => {
                    let shape = graph.tensor(out).shape.clone();
                    let err = |message: String| IrError::Op {
                        index,
                        name: "DENSIFY".into(),
                        message,
                    };
                    let values = densify(sp, &c.values, &shape).map_err(err)?;
                    let fp16 = match &c.fp16 {
                        Some(bits) => Some(densify(sp, bits, &shape).map_err(err)?),
                        None => None,
                    };
                    Constant {
                        values,
                        fp16,
                        sparsity: None,
                    }
                }
                None => Constant {
                    sparsity: None,
                    ..c
                },
            },
            _ => Constant {
                sparsity: None,
                ..c
            },
        };
        let t = &mut graph.tensors[out.index()];
        if matches!(op.kind, OpKind::Dequantize) {
            t.dtype = DType::F32;
        } else {
            t.dtype = input.dtype;
        }
        t.constant = Some(folded_constant);
        folded += 1;
    }
    graph.ops = ops.into_iter().flatten().collect();
    Ok(folded)
}
