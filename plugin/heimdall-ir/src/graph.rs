//! The graph: tensors, ops in topological order, inputs and outputs; validation.

use crate::error::IrError;
use crate::op::{Activation, Op};
use crate::shape::{OpShapes, broadcast};
use crate::tensor::{TensorId, TensorInfo};

/// A model as one topological list of ops over a table of tensors.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    /// Model name (file stem).
    pub name: String,
    /// Every tensor: activations, constants, inputs, outputs.
    pub tensors: Vec<TensorInfo>,
    /// Ops in execution (topological) order.
    pub ops: Vec<Op>,
    /// Graph inputs, in the model's order.
    pub inputs: Vec<TensorId>,
    /// Graph outputs, in the model's order.
    pub outputs: Vec<TensorId>,
}

/// Largest rank the IR accepts.
pub const MAX_RANK: usize = 4;

impl Graph {
    /// The tensor behind an id.
    pub fn tensor(&self, id: TensorId) -> &TensorInfo {
        &self.tensors[id.index()]
    }

    /// For each tensor, the index of the op producing it (None for inputs and constants).
    pub fn producers(&self) -> Vec<Option<usize>> {
        let mut p = vec![None; self.tensors.len()];
        for (i, op) in self.ops.iter().enumerate() {
            for o in &op.outputs {
                p[o.index()] = Some(i);
            }
        }
        p
    }

    /// For each tensor, the indices of the ops reading it (inputs and epilogues).
    pub fn consumers(&self) -> Vec<Vec<usize>> {
        let mut c = vec![Vec::new(); self.tensors.len()];
        for (i, op) in self.ops.iter().enumerate() {
            for t in op.reads() {
                if c[t.index()].last() != Some(&i) {
                    c[t.index()].push(i);
                }
            }
        }
        c
    }

    /// For each tensor, the index of the last op reading it; graph outputs live to the end
    /// (`usize::MAX`).
    pub fn last_uses(&self) -> Vec<Option<usize>> {
        let mut last = vec![None; self.tensors.len()];
        for (i, op) in self.ops.iter().enumerate() {
            for t in op.reads() {
                last[t.index()] = Some(i);
            }
        }
        for o in &self.outputs {
            last[o.index()] = Some(usize::MAX);
        }
        last
    }

    /// Checks references, topological order, ranks and every op's shapes. Errors name the op.
    pub fn validate(&self) -> Result<(), IrError> {
        self.validate_tensors()?;
        let mut available = self.available_inputs()?;
        for (index, op) in self.ops.iter().enumerate() {
            self.validate_op_order(op, &mut available)
                .and_then(|()| self.validate_op_shapes(op))
                .map_err(|message| IrError::Op {
                    index,
                    name: op.kind.name().to_string(),
                    message,
                })?;
        }
        for &o in &self.outputs {
            if o.index() >= self.tensors.len() || !available[o.index()] {
                return Err(IrError::Graph(format!(
                    "output tensor {} is never produced",
                    o.0
                )));
            }
        }
        Ok(())
    }

    /// Checks every tensor's rank, and that each dense constant holds one value per element.
    fn validate_tensors(&self) -> Result<(), IrError> {
        for (i, t) in self.tensors.iter().enumerate() {
            if t.shape.len() > MAX_RANK {
                return Err(IrError::Tensor {
                    index: i,
                    name: t.name.clone(),
                    message: format!("rank {} > {MAX_RANK}", t.shape.len()),
                });
            }
            if let Some(c) = &t.constant {
                let stored = if c.sparsity.is_some() {
                    None
                } else {
                    Some(t.numel())
                };
                if stored.is_some_and(|n| n != c.values.len()) {
                    return Err(IrError::Tensor {
                        index: i,
                        name: t.name.clone(),
                        message: format!("shape {:?} but {} values", t.shape, c.values.len()),
                    });
                }
            }
        }
        Ok(())
    }

    /// Which tensors hold values before the first op runs (the constants and the graph's
    /// inputs), checking that every input exists.
    fn available_inputs(&self) -> Result<Vec<bool>, IrError> {
        let mut available = vec![false; self.tensors.len()];
        for (i, t) in self.tensors.iter().enumerate() {
            available[i] = t.is_constant();
        }
        for &id in &self.inputs {
            let Some(a) = available.get_mut(id.index()) else {
                return Err(IrError::Graph(format!(
                    "input tensor {} does not exist",
                    id.0
                )));
            };
            *a = true;
        }
        Ok(available)
    }

    /// Checks that `op` reads only existing tensors already `available` and writes only
    /// existing ones not yet defined, then marks its outputs available.
    fn validate_op_order(&self, op: &Op, available: &mut [bool]) -> Result<(), String> {
        let nt = self.tensors.len();
        for t in op.reads() {
            if t.index() >= nt {
                return Err(format!("reads tensor {} which does not exist", t.0));
            }
            if !available[t.index()] {
                return Err(format!(
                    "reads tensor {} ('{}') before it is produced",
                    t.0,
                    self.tensor(t).name
                ));
            }
        }
        for o in &op.outputs {
            if o.index() >= nt {
                return Err(format!("writes tensor {} which does not exist", o.0));
            }
            if available[o.index()] {
                return Err(format!(
                    "writes tensor {} ('{}') which is already defined",
                    o.0,
                    self.tensor(*o).name
                ));
            }
            available[o.index()] = true;
        }
        Ok(())
    }

    /// Checks `op`'s declared output shapes against those its inputs give, and its epilogue
    /// (residual shape, fusable activation, PReLU alpha broadcasting to the output).
    fn validate_op_shapes(&self, op: &Op) -> Result<(), String> {
        let expected = self.infer_shapes(op)?;
        if expected.len() != op.outputs.len() {
            return Err(format!(
                "has {} outputs, expected {}",
                op.outputs.len(),
                expected.len()
            ));
        }
        for (o, e) in op.outputs.iter().zip(&expected) {
            let got = &self.tensor(*o).shape;
            if got.iter().product::<usize>() != e.iter().product::<usize>()
                || squeeze(got) != squeeze(e)
            {
                return Err(format!(
                    "output '{}' has shape {got:?}, its inputs give {e:?}",
                    self.tensor(*o).name
                ));
            }
        }
        if let Some(r) = op.epilogue.residual {
            let out = &self.tensor(op.outputs[0]).shape;
            if &self.tensor(r).shape != out {
                return Err(format!(
                    "residual shape {:?} differs from output {out:?}",
                    self.tensor(r).shape
                ));
            }
        }
        if let Activation::Unary(u) = op.epilogue.activation
            && !u.fusable()
        {
            return Err(format!(
                "{} cannot be fused as an epilogue activation",
                u.name()
            ));
        }
        if let Activation::Prelu(a) = op.epilogue.activation {
            let out = &self.tensor(op.outputs[0]).shape;
            if broadcast(out, &self.tensor(a).shape).as_ref() != Some(out) {
                return Err(format!(
                    "PReLU alpha {:?} does not broadcast to {out:?}",
                    self.tensor(a).shape
                ));
            }
        }
        Ok(())
    }

    /// The shapes op `op` sees: its inputs' and its declared outputs'.
    pub fn op_shapes(&self, op: &Op) -> OpShapes<'_> {
        let shape = |t: &TensorId| self.tensor(*t).shape.as_slice();
        OpShapes {
            inputs: op.inputs.iter().map(shape).collect(),
            outputs: op.outputs.iter().map(shape).collect(),
        }
    }

    /// Output shapes implied by an op's input shapes and attributes.
    pub fn infer_shapes(&self, op: &Op) -> Result<Vec<Vec<usize>>, String> {
        op.kind.infer(&self.op_shapes(op))
    }
}

/// A shape without its unit dimensions (for comparisons that ignore squeezed axes).
fn squeeze(s: &[usize]) -> Vec<usize> {
    s.iter().copied().filter(|&d| d != 1).collect()
}
