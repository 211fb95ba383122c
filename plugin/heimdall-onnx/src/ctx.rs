//! The conversion context: the graph being built, the value of every ONNX name seen so far,
//! the opset, and how often each name is used (for fusions that must own their input).

use std::collections::{HashMap, HashSet};

use crate::builder::Builder;
use crate::constant::Const;
use crate::error::{NodeResult, invalid};
use crate::proto::NodeProto;
use crate::value::{Layout, Tensor, Value, onnx_shape};

/// State of one import.
pub(crate) struct Ctx {
    /// The IR graph under construction.
    pub b: Builder,
    /// Value of every ONNX name defined so far.
    pub values: HashMap<String, Value>,
    /// Version of the default ONNX domain.
    pub opset: i64,
    /// How many node inputs and graph outputs read each name.
    pub uses: HashMap<String, usize>,
    /// Node indices already consumed by a fusion.
    pub skip: HashSet<usize>,
}

impl Ctx {
    /// The value of input `i` of `n`, `None` when absent (`""` or past the end).
    pub fn input(&self, n: &NodeProto, i: usize) -> NodeResult<Option<Value>> {
        match n.input.get(i).map(String::as_str) {
            None | Some("") => Ok(None),
            Some(name) => match self.values.get(name) {
                Some(v) => Ok(Some(v.clone())),
                None => invalid(format!("input '{name}' is not defined before this node")),
            },
        }
    }

    /// The value of required input `i`.
    pub fn req(&self, n: &NodeProto, i: usize) -> NodeResult<Value> {
        self.input(n, i)?
            .map_or_else(|| invalid(format!("missing input {i}")), Ok)
    }

    /// Input `i` as a constant: `Ok(None)` when absent, an error when computed at run time.
    pub fn const_input(&self, n: &NodeProto, i: usize, what: &str) -> NodeResult<Option<Const>> {
        match self.input(n, i)? {
            None => Ok(None),
            Some(Value::Const(c)) => Ok(Some(c)),
            Some(Value::Tensor(_)) => crate::error::unsupported(format!(
                "{what} (input {i}) computed at run time (it must fold to a constant)"
            )),
        }
    }

    /// The ONNX shape of a value.
    pub fn shape(&self, v: &Value) -> Vec<usize> {
        onnx_shape(&self.b, v)
    }

    /// A name for an IR tensor derived from node output `n.output[0]`.
    pub fn out_name(&self, n: &NodeProto) -> String {
        n.output.first().cloned().unwrap_or_default()
    }

    /// Wraps a tensor id as a value.
    pub fn tensor(id: heimdall_ir::TensorId, layout: Layout) -> Value {
        Value::Tensor(Tensor { id, layout })
    }

    /// Number of uses of an ONNX name.
    pub fn uses_of(&self, name: &str) -> usize {
        self.uses.get(name).copied().unwrap_or(0)
    }
}
