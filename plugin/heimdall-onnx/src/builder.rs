//! The IR graph under construction: tensors and ops appended in topological order, every op's
//! output shape inferred (or checked) by the IR itself; `finish` drops what the outputs do not
//! need.

use heimdall_ir::graph::MAX_RANK;
use heimdall_ir::{Constant, DType, Graph, Op, OpKind, TensorId, TensorInfo};

use crate::error::{NodeResult, invalid, unsupported};

/// Builds an IR [`Graph`].
pub(crate) struct Builder {
    pub graph: Graph,
    /// ONNX node index attached to ops created now.
    pub source: Option<usize>,
}

impl Builder {
    /// An empty graph named `name`.
    pub fn new(name: &str) -> Builder {
        Builder {
            graph: Graph {
                name: name.to_string(),
                tensors: Vec::new(),
                ops: Vec::new(),
                inputs: Vec::new(),
                outputs: Vec::new(),
            },
            source: None,
        }
    }

    fn tensor(&mut self, name: String, shape: Vec<usize>, constant: Option<Vec<f32>>) -> TensorId {
        let id = TensorId(self.graph.tensors.len() as u32);
        self.graph.tensors.push(TensorInfo {
            name,
            shape,
            dtype: DType::F32,
            constant: constant.map(Constant::dense),
        });
        id
    }

    /// The IR shape of a tensor.
    pub fn shape(&self, id: TensorId) -> &[usize] {
        &self.graph.tensor(id).shape
    }

    /// The values of a constant tensor.
    pub fn constant_values(&self, id: TensorId) -> Option<&[f32]> {
        self.graph
            .tensor(id)
            .constant
            .as_ref()
            .map(|c| c.values.as_slice())
    }

    /// A graph input of the given (IR) shape.
    pub fn input(&mut self, name: &str, shape: Vec<usize>) -> NodeResult<TensorId> {
        check_rank(&shape)?;
        let id = self.tensor(name.to_string(), shape, None);
        self.graph.inputs.push(id);
        Ok(id)
    }

    /// A constant tensor.
    pub fn constant(
        &mut self,
        name: &str,
        shape: Vec<usize>,
        values: Vec<f32>,
    ) -> NodeResult<TensorId> {
        check_rank(&shape)?;
        if shape.iter().product::<usize>() != values.len() {
            return invalid(format!(
                "constant '{name}' of shape {shape:?} with {} values",
                values.len()
            ));
        }
        Ok(self.tensor(name.to_string(), shape, Some(values)))
    }

    /// Appends an op whose output shape the IR infers from its inputs.
    pub fn op(&mut self, kind: OpKind, inputs: Vec<TensorId>, name: &str) -> NodeResult<TensorId> {
        let out = self.tensor(name.to_string(), Vec::new(), None);
        let mut op = Op::new(kind, inputs, vec![out]);
        op.source = self.source;
        let shapes = self.graph.infer_shapes(&op);
        match shapes {
            Ok(s) if s.len() == 1 => {
                check_rank(&s[0]).inspect_err(|_| {
                    self.graph.tensors.pop();
                })?;
                self.graph.tensors[out.index()].shape = s[0].clone();
                self.graph.ops.push(op);
                Ok(out)
            }
            Ok(_) => {
                self.graph.tensors.pop();
                invalid(format!("{} has several outputs", op.kind.name()))
            }
            Err(e) => {
                self.graph.tensors.pop();
                invalid(format!("{}: {e}", op.kind.name()))
            }
        }
    }

    /// Appends an op whose output shape is given (reshape, resize, slice...); the IR checks it.
    pub fn op_shaped(
        &mut self,
        kind: OpKind,
        inputs: Vec<TensorId>,
        name: &str,
        shape: Vec<usize>,
    ) -> NodeResult<TensorId> {
        check_rank(&shape)?;
        let out = self.tensor(name.to_string(), shape.clone(), None);
        let mut op = Op::new(kind, inputs, vec![out]);
        op.source = self.source;
        match self.graph.infer_shapes(&op) {
            Ok(s)
                if s.len() == 1
                    && s[0].iter().product::<usize>() == shape.iter().product::<usize>() =>
            {
                self.graph.ops.push(op);
                Ok(out)
            }
            Ok(s) => {
                self.graph.tensors.pop();
                invalid(format!(
                    "{}: output {shape:?}, inputs give {s:?}",
                    op.kind.name()
                ))
            }
            Err(e) => {
                self.graph.tensors.pop();
                invalid(format!("{}: {e}", op.kind.name()))
            }
        }
    }

    /// The finished graph with `outputs`, without ops and tensors that do not lead to them.
    pub fn finish(mut self, outputs: Vec<TensorId>) -> Graph {
        let g = &mut self.graph;
        let mut needed = vec![false; g.tensors.len()];
        for o in &outputs {
            needed[o.index()] = true;
        }
        for i in &g.inputs {
            needed[i.index()] = true;
        }
        let mut keep = vec![false; g.ops.len()];
        for (i, op) in g.ops.iter().enumerate().rev() {
            if op.outputs.iter().any(|o| needed[o.index()]) {
                keep[i] = true;
                for t in op.reads() {
                    needed[t.index()] = true;
                }
            }
        }
        let ops: Vec<Op> = std::mem::take(&mut g.ops)
            .into_iter()
            .zip(keep)
            .filter_map(|(op, k)| k.then_some(op))
            .collect();
        // Renumber the tensors that are still used.
        let mut map = vec![None; g.tensors.len()];
        let mut tensors = Vec::new();
        for (i, t) in std::mem::take(&mut g.tensors).into_iter().enumerate() {
            if needed[i] {
                map[i] = Some(TensorId(tensors.len() as u32));
                tensors.push(t);
            }
        }
        let remap = |t: TensorId| map[t.index()].unwrap_or(t);
        g.ops = ops
            .into_iter()
            .map(|mut op| {
                op.inputs.iter_mut().for_each(|t| *t = remap(*t));
                op.outputs.iter_mut().for_each(|t| *t = remap(*t));
                op
            })
            .collect();
        g.tensors = tensors;
        g.inputs = g.inputs.iter().map(|&t| remap(t)).collect();
        g.outputs = outputs.into_iter().map(remap).collect();
        self.graph
    }
}

/// Largest tensor the importer creates (elements), so that hostile files cannot make the
/// backends allocate unbounded memory.
pub(crate) const MAX_ELEMENTS: usize = 1 << 28;

/// Rejects tensors the IR cannot hold.
fn check_rank(shape: &[usize]) -> NodeResult<()> {
    if shape.len() > MAX_RANK {
        return unsupported(format!(
            "tensor of rank {} (the IR holds rank <= {MAX_RANK})",
            shape.len()
        ));
    }
    if shape.contains(&0) {
        return unsupported(format!("empty tensor of shape {shape:?}"));
    }
    match shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d)) {
        Some(n) if n <= MAX_ELEMENTS => Ok(()),
        _ => unsupported(format!(
            "tensor of shape {shape:?} (more than {MAX_ELEMENTS} elements)"
        )),
    }
}
