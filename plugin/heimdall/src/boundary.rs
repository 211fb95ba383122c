//! A model's inputs and outputs as the file states them (names, shapes, layouts), and the
//! layout changes at the boundary: ONNX images are NCHW in the file and NHWC in the IR, so
//! `.npy` tensors are transposed on the way in and out, and nowhere else.

use heimdall_ir::Graph;
use heimdall_onnx::{Layout, OnnxModel};

/// One input or output of a model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoTensor {
    /// Name in the file.
    pub name: String,
    /// Shape in the file's layout.
    pub shape: Vec<usize>,
    /// Whether the file's layout is NCHW while the IR stores NHWC.
    pub nchw: bool,
}

/// The inputs and outputs of a model, in the IR's order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelIo {
    /// Inputs.
    pub inputs: Vec<IoTensor>,
    /// Outputs.
    pub outputs: Vec<IoTensor>,
}

impl ModelIo {
    /// The boundary of a graph whose file layout is the IR's (TFLite).
    pub fn of_graph(g: &Graph) -> ModelIo {
        let io = |ids: &[heimdall_ir::TensorId]| {
            ids.iter()
                .map(|&t| IoTensor {
                    name: g.tensor(t).name.clone(),
                    shape: g.tensor(t).shape.clone(),
                    nchw: false,
                })
                .collect()
        };
        ModelIo {
            inputs: io(&g.inputs),
            outputs: io(&g.outputs),
        }
    }

    /// The boundary of an imported ONNX model.
    pub fn of_onnx(m: &OnnxModel) -> ModelIo {
        let io = |b: &[heimdall_onnx::BoundaryTensor]| {
            b.iter()
                .map(|t| IoTensor {
                    name: t.name.clone(),
                    shape: t.shape.clone(),
                    nchw: t.layout == Layout::Nhwc,
                })
                .collect()
        };
        ModelIo {
            inputs: io(&m.inputs),
            outputs: io(&m.outputs),
        }
    }
}

impl IoTensor {
    /// File-layout data (e.g. NCHW) to the IR's layout.
    pub fn to_ir(&self, data: &[f32]) -> Vec<f32> {
        if self.nchw && self.shape.len() == 4 {
            let s = &self.shape;
            transpose4(data, [s[0], s[1], s[2], s[3]], [0, 2, 3, 1])
        } else {
            data.to_vec()
        }
    }

    /// IR-layout data to the file's layout.
    pub fn from_ir(&self, data: &[f32]) -> Vec<f32> {
        if self.nchw && self.shape.len() == 4 {
            let s = &self.shape;
            transpose4(data, [s[0], s[2], s[3], s[1]], [0, 3, 1, 2])
        } else {
            data.to_vec()
        }
    }
}

/// Transposes a rank-4 tensor of shape `s`: output axis `i` is input axis `perm[i]`.
fn transpose4(x: &[f32], s: [usize; 4], perm: [usize; 4]) -> Vec<f32> {
    let st = [s[1] * s[2] * s[3], s[2] * s[3], s[3], 1];
    let os = perm.map(|p| s[p]);
    let mut out = Vec::with_capacity(x.len());
    for a in 0..os[0] {
        for b in 0..os[1] {
            for c in 0..os[2] {
                for d in 0..os[3] {
                    let i = [a, b, c, d];
                    let mut at = 0;
                    for k in 0..4 {
                        at += i[k] * st[perm[k]];
                    }
                    out.push(x.get(at).copied().unwrap_or(0.0));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nchw_round_trip() {
        let t = IoTensor {
            name: "x".into(),
            shape: vec![1, 2, 3, 4],
            nchw: true,
        };
        let x: Vec<f32> = (0..24).map(|v| v as f32).collect();
        let ir = t.to_ir(&x);
        // NHWC [0, h=0, w=1, c=1] = NCHW [0, 1, 0, 1] = 12 + 1.
        assert_eq!(ir[2 + 1], 13.0);
        assert_eq!(t.from_ir(&ir), x);
    }
}
