//! Receptive fields: which input pixels each tensor's pixels depend on.

use crate::graph::Graph;
use crate::ops::OpKind;
use crate::tensor::TensorId;

/// The input pixels an output pixel `(y, x)` reads, through every op before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// Rows `y * stride[0] - offset[0] ..= y * stride[0] - offset[0] + size[0] - 1`, and the
    /// same for columns with index 1 (clipped to the input by the caller).
    Local {
        /// Input pixels per output pixel.
        stride: [i64; 2],
        /// How far the field starts before `y * stride` (padding, accumulated).
        offset: [i64; 2],
        /// Extent of the field in input pixels.
        size: [i64; 2],
    },
    /// The whole input (after a global pooling, a reshape, a resize ...).
    Global,
}

impl Field {
    /// The field of the input tensor itself: each pixel reads itself.
    pub const IDENTITY: Field = Field::Local {
        stride: [1, 1],
        offset: [0, 0],
        size: [1, 1],
    };

    /// The field after a window op (convolution, pooling) of effective extent `window`
    /// (`(k - 1) * dilation + 1`), `stride` and leading padding `pad` (top, left).
    pub fn window(self, window: [usize; 2], stride: [usize; 2], pad: [usize; 2]) -> Field {
        match self {
            Field::Local {
                stride: s,
                offset: o,
                size: r,
            } => Field::Local {
                stride: [s[0] * stride[0] as i64, s[1] * stride[1] as i64],
                offset: [o[0] + pad[0] as i64 * s[0], o[1] + pad[1] as i64 * s[1]],
                size: [
                    r[0] + (window[0] as i64 - 1) * s[0],
                    r[1] + (window[1] as i64 - 1) * s[1],
                ],
            },
            Field::Global => Field::Global,
        }
    }

    /// The field of an op reading pixels with both fields at the same output position.
    pub fn union(self, other: Field) -> Field {
        match (self, other) {
            (
                Field::Local {
                    stride: sa,
                    offset: oa,
                    size: ra,
                },
                Field::Local {
                    stride: sb,
                    offset: ob,
                    size: rb,
                },
            ) if sa == sb => {
                let mut offset = [0; 2];
                let mut size = [0; 2];
                for d in 0..2 {
                    offset[d] = oa[d].max(ob[d]);
                    size[d] = (ra[d] - oa[d]).max(rb[d] - ob[d]) + offset[d];
                }
                Field::Local {
                    stride: sa,
                    offset,
                    size,
                }
            }
            _ => Field::Global,
        }
    }

    /// The rectangle of input pixels (inclusive rows, then inclusive columns) that output rows
    /// `rows` and columns `cols` read, clipped to an `in_hw` input; `None` when it lies entirely
    /// in the padding, `Some(whole input)` for a global field.
    pub fn input_rect(
        &self,
        rows: [usize; 2],
        cols: [usize; 2],
        in_hw: [usize; 2],
    ) -> Option<[[usize; 2]; 2]> {
        match *self {
            Field::Global => Some([[0, in_hw[0] - 1], [0, in_hw[1] - 1]]),
            Field::Local {
                stride,
                offset,
                size,
            } => {
                let mut out = [[0usize; 2]; 2];
                for (d, range) in [rows, cols].into_iter().enumerate() {
                    let lo = range[0] as i64 * stride[d] - offset[d];
                    let hi = range[1] as i64 * stride[d] - offset[d] + size[d] - 1;
                    let lo = lo.max(0);
                    let hi = hi.min(in_hw[d] as i64 - 1);
                    if lo > hi {
                        return None;
                    }
                    out[d] = [lo as usize, hi as usize];
                }
                Some(out)
            }
        }
    }
}

/// How a tensor depends on the cached input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dep {
    /// A constant, or computed from constants only: never changes.
    Static,
    /// A function of the image input through this field (and of constants).
    Field(Field),
    /// Depends on another model input: never cached.
    Volatile,
}

impl Dep {
    fn join(self, other: Dep) -> Dep {
        match (self, other) {
            (Dep::Volatile, _) | (_, Dep::Volatile) => Dep::Volatile,
            (Dep::Static, d) | (d, Dep::Static) => d,
            (Dep::Field(a), Dep::Field(b)) => Dep::Field(a.union(b)),
        }
    }
}

/// The cache's view of a graph: the image input and every tensor's dependence on it.
#[derive(Clone, Debug, PartialEq)]
pub struct CachePlan {
    /// The image input (`[1, H, W, C]`).
    pub input: TensorId,
    /// Its height and width.
    pub in_hw: [usize; 2],
    /// Its channels.
    pub channels: usize,
    /// Per tensor of the graph.
    pub deps: Vec<Dep>,
    /// Per op: whether it may keep last run's values where its field is clean (index below
    /// the layer limit, one `[1, H, W, C]` output that depends on the input only).
    pub cacheable: Vec<bool>,
}

impl CachePlan {
    /// The plan for `graph`, whose image input is its first input (`[1, H, W, C]`, `C ≤ 4`);
    /// ops from index `layers` on are never cached. An error when the graph has no such input.
    pub fn new(graph: &Graph, layers: usize) -> Result<CachePlan, String> {
        let &input = graph.inputs.first().ok_or("the model has no input")?;
        let shape = &graph.tensor(input).shape;
        let [1, h, w, c] = shape[..] else {
            return Err(format!(
                "the conv cache needs an image input [1, H, W, C], got {shape:?}"
            ));
        };
        if !(1..=4).contains(&c) || h == 0 || w == 0 {
            return Err(format!(
                "the conv cache needs an image input with 1–4 channels, got {shape:?}"
            ));
        }
        let mut deps: Vec<Dep> = graph
            .tensors
            .iter()
            .map(|t| {
                if t.constant.is_some() {
                    Dep::Static
                } else {
                    Dep::Volatile
                }
            })
            .collect();
        deps[input.index()] = Dep::Field(Field::IDENTITY);
        let mut cacheable = vec![false; graph.ops.len()];
        for (i, op) in graph.ops.iter().enumerate() {
            let out_dep = op_dep(graph, op, &deps);
            for &o in &op.outputs {
                deps[o.index()] = out_dep;
            }
            let spatial = match op.outputs.as_slice() {
                [o] => matches!(graph.tensor(*o).shape[..], [1, _, _, _]),
                _ => false,
            };
            cacheable[i] = i < layers && spatial && matches!(out_dep, Dep::Field(_));
        }
        Ok(CachePlan {
            input,
            in_hw: [h, w],
            channels: c,
            deps,
            cacheable,
        })
    }

    /// The field of tensor `t`, if it depends on the input only.
    pub fn field(&self, t: TensorId) -> Option<Field> {
        match self.deps.get(t.index()) {
            Some(Dep::Field(f)) => Some(*f),
            _ => None,
        }
    }
}

/// The dependence of an op's outputs.
fn op_dep(graph: &Graph, op: &crate::op::Op, deps: &[Dep]) -> Dep {
    let out_shape = op
        .outputs
        .first()
        .map(|o| graph.tensor(*o).shape.clone())
        .unwrap_or_default();
    let spatial_out = matches!(out_shape[..], [1, _, _, _]);
    // Inputs whose pixels do not line up with the output's (broadcast over H and W, or of
    // another rank) read the whole field: global.
    let aligned = |t: TensorId| -> Dep {
        match deps[t.index()] {
            Dep::Field(f) => {
                let s = &graph.tensor(t).shape;
                let same_hw =
                    spatial_out && s.len() == 4 && s[1] == out_shape[1] && s[2] == out_shape[2];
                Dep::Field(if same_hw { f } else { Field::Global })
            }
            d => d,
        }
    };
    let epilogue = op
        .epilogue
        .tensors()
        .fold(Dep::Static, |acc, t| acc.join(aligned(t)));
    let main = match &op.kind {
        OpKind::Conv2d(a) | OpKind::DepthwiseConv2d { attrs: a, .. } => {
            let x = op.inputs[0];
            let w = op
                .inputs
                .get(1)
                .map(|f| graph.tensor(*f).shape.clone())
                .unwrap_or_default();
            let rest = op.inputs[1..]
                .iter()
                .fold(Dep::Static, |acc, t| acc.join(deps[t.index()]));
            let x_dep = match deps[x.index()] {
                Dep::Field(f) if w.len() == 4 && spatial_out => {
                    let k = [
                        (w[1] - 1) * a.dilation[0] + 1,
                        (w[2] - 1) * a.dilation[1] + 1,
                    ];
                    Dep::Field(f.window(k, a.stride, [a.pad.top, a.pad.left]))
                }
                Dep::Field(_) => Dep::Field(Field::Global),
                d => d,
            };
            x_dep.join(rest)
        }
        OpKind::MaxPool2d(p) | OpKind::AvgPool2d(p) => match deps[op.inputs[0].index()] {
            Dep::Field(f) if spatial_out => {
                Dep::Field(f.window(p.filter, p.stride, [p.pad.top, p.pad.left]))
            }
            Dep::Field(_) => Dep::Field(Field::Global),
            d => d,
        },
        OpKind::Unary(_) | OpKind::Binary(_) | OpKind::Where => op
            .inputs
            .iter()
            .fold(Dep::Static, |acc, t| acc.join(aligned(*t))),
        OpKind::Concatenation { axis: 3 } if spatial_out => op
            .inputs
            .iter()
            .fold(Dep::Static, |acc, t| acc.join(aligned(*t))),
        OpKind::Pad { pads, mode } if spatial_out && pads.len() == 4 => {
            let spatial = pads[1] != [0, 0] || pads[2] != [0, 0];
            match deps[op.inputs[0].index()] {
                Dep::Field(f) if !spatial => Dep::Field(f),
                Dep::Field(Field::Local {
                    stride,
                    offset,
                    size,
                }) if matches!(mode, crate::ops::pad::PadMode::Constant(_)) => {
                    Dep::Field(Field::Local {
                        stride,
                        offset: [
                            offset[0] + pads[1][0] as i64 * stride[0],
                            offset[1] + pads[2][0] as i64 * stride[1],
                        ],
                        size,
                    })
                }
                Dep::Field(_) => Dep::Field(Field::Global),
                d => d,
            }
        }
        _ => op.inputs.iter().fold(Dep::Static, |acc, t| {
            acc.join(match deps[t.index()] {
                Dep::Field(_) => Dep::Field(Field::Global),
                d => d,
            })
        }),
    };
    main.join(epilogue)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_3x3_stride_2_conv_after_a_3x3_conv_reads_a_7x7_window() {
        // conv 3x3 s1 pad 1: pixel y reads y-1..y+1.
        let a = Field::IDENTITY.window([3, 3], [1, 1], [1, 1]);
        assert_eq!(
            a.input_rect([5, 5], [5, 5], [64, 64]),
            Some([[4, 6], [4, 6]])
        );
        // then 3x3 s2 pad 1: output y reads a's rows 2y-1..2y+1, i.e. input 2y-2..2y+2.
        let b = a.window([3, 3], [2, 2], [1, 1]);
        assert_eq!(
            b.input_rect([5, 5], [5, 5], [64, 64]),
            Some([[8, 12], [8, 12]])
        );
        // At the edge the rectangle is clipped to the input.
        assert_eq!(
            b.input_rect([0, 0], [0, 1], [64, 64]),
            Some([[0, 2], [0, 4]])
        );
    }

    #[test]
    fn the_union_covers_both_fields_and_mixed_strides_are_global() {
        let a = Field::IDENTITY.window([3, 3], [1, 1], [1, 1]);
        let b = Field::IDENTITY.window([5, 5], [1, 1], [0, 0]);
        let u = a.union(b);
        // a: y-1..y+1, b: y..y+4 → y-1..y+4.
        assert_eq!(
            u.input_rect([10, 10], [10, 10], [64, 64]),
            Some([[9, 14], [9, 14]])
        );
        let c = Field::IDENTITY.window([2, 2], [2, 2], [0, 0]);
        assert_eq!(a.union(c), Field::Global);
        assert_eq!(
            Field::Global.input_rect([0, 0], [0, 0], [8, 9]),
            Some([[0, 7], [0, 8]])
        );
    }
}
