//! Constant folding: ONNX nodes whose inputs are all constants are evaluated at load (shape
//! subgraphs such as Shape/Gather/Unsqueeze/Concat, pad computations, weight preprocessing), so
//! that dynamic-shaped exports become static for a given input size.

use crate::attrs::Attrs;
use crate::constant::{Const, Elem, dtype, elem_of};
use crate::error::{NodeResult, invalid, unsupported};
use crate::shapes;
use crate::value::permute_const;

/// Inputs of a node as constants (`None` for an absent optional input).
pub(crate) type Inputs<'a> = [Option<&'a Const>];

fn req<'a>(ins: &Inputs<'a>, i: usize) -> NodeResult<&'a Const> {
    match ins.get(i).copied().flatten() {
        Some(c) => Ok(c),
        None => invalid(format!("missing input {i}")),
    }
}

/// Largest constant folding produces (elements), to keep hostile files from exhausting memory.
const MAX_FOLDED: usize = 1 << 22;

/// Evaluates `op` on constant inputs; `None` when the op is not one that folds.
pub(crate) fn eval(
    op: &str,
    a: &Attrs,
    ins: &Inputs,
    opset: i64,
) -> NodeResult<Option<Vec<Const>>> {
    let one = |c: Const| Ok(Some(vec![c]));
    match op {
        "Identity" | "Dropout" => one(req(ins, 0)?.clone()),
        "Cast" => one(cast(a, ins)?),
        "CastLike" => one(cast_like(ins)?),
        "Shape" => one(shape_of(a, ins)?),
        "Size" => one(Const::scalar(req(ins, 0)?.numel() as f64, Elem::Int)),
        "Reshape" => {
            let (x, t) = (req(ins, 0)?, req(ins, 1)?);
            let shape =
                shapes::reshape_target(&x.shape, &t.as_i64(), a.int_or("allowzero", 0) != 0)?;
            one(Const::new(shape, x.values.clone(), x.elem))
        }
        "Flatten" => one(flatten(a, ins)?),
        "Squeeze" | "Unsqueeze" => one(squeeze(op, a, ins)?),
        "Concat" => {
            let parts: Vec<&Const> = ins.iter().flatten().copied().collect();
            one(concat(&parts, a.int_or("axis", 0))?)
        }
        "Gather" => one(gather(req(ins, 0)?, req(ins, 1)?, a.int_or("axis", 0))?),
        "Slice" => one(slice_node(a, ins, opset)?),
        "Transpose" => one(transpose(a, ins)?),
        "ConstantOfShape" => one(constant_of_shape(a, ins)?),
        "Range" => one(range(ins)?),
        "Expand" => {
            let (x, s) = (req(ins, 0)?, req(ins, 1)?);
            let target: Vec<usize> = s.as_i64().iter().map(|&d| d.max(0) as usize).collect();
            let shape = shapes::broadcast(&x.shape, &target)?;
            one(broadcast_to(x, &shape)?)
        }
        "Add" | "Sub" | "Mul" | "Div" | "Pow" | "Max" | "Min" | "Equal" | "Less" | "Greater"
        | "LessOrEqual" | "GreaterOrEqual" | "And" | "Or" | "Mod" | "Sum" => {
            one(binary_chain(op, a, ins)?)
        }
        "Where" => one(select(ins)?),
        "Neg" | "Abs" | "Sqrt" | "Exp" | "Log" | "Floor" | "Ceil" | "Relu" | "Sigmoid" | "Tanh"
        | "Reciprocal" | "Not" | "Round" | "Sign" => one(unary(op, req(ins, 0)?)),
        _ => Ok(None),
    }
}

/// `Cast`: input 0 converted to the type of attribute `to`.
fn cast(a: &Attrs, ins: &Inputs) -> NodeResult<Const> {
    let x = req(ins, 0)?;
    let to = a.int_or("to", dtype::FLOAT as i64) as i32;
    let elem = elem_of(to)
        .ok_or_else(|| crate::error::NodeError::Unsupported(format!("cast to type {to}")))?;
    let values = x
        .values
        .iter()
        .map(|&v| match elem {
            Elem::Float if to == dtype::FLOAT => v as f32 as f64,
            Elem::Float => v,
            Elem::Int => v.trunc(),
            Elem::Bool => (v != 0.0) as u8 as f64,
        })
        .collect();
    Ok(Const::new(x.shape.clone(), values, elem))
}

/// `CastLike`: input 0 converted to the element type of input 1.
fn cast_like(ins: &Inputs) -> NodeResult<Const> {
    let (x, like) = (req(ins, 0)?, req(ins, 1)?);
    let values = x
        .values
        .iter()
        .map(|&v| match like.elem {
            Elem::Float => v as f32 as f64,
            Elem::Int => v.trunc(),
            Elem::Bool => (v != 0.0) as u8 as f64,
        })
        .collect();
    Ok(Const::new(x.shape.clone(), values, like.elem))
}

/// `Shape`: the dims `start..end` (attributes) of input 0's shape.
fn shape_of(a: &Attrs, ins: &Inputs) -> NodeResult<Const> {
    let x = req(ins, 0)?;
    let r = x.shape.len() as i64;
    let clampi = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
    let (s, e) = (clampi(a.int_or("start", 0)), clampi(a.int_or("end", r)));
    let dims: Vec<i64> = x.shape[s..e.max(s)].iter().map(|&d| d as i64).collect();
    Ok(Const::ints(&dims))
}

/// `Flatten`: input 0 as a matrix split at attribute `axis`.
fn flatten(a: &Attrs, ins: &Inputs) -> NodeResult<Const> {
    let x = req(ins, 0)?;
    let ax = flatten_axis(a.int_or("axis", 1), x.shape.len())?;
    let shape = vec![
        x.shape[..ax].iter().product(),
        x.shape[ax..].iter().product(),
    ];
    Ok(Const::new(shape, x.values.clone(), x.elem))
}

/// `Squeeze` or `Unsqueeze` (`op`) of input 0 along the axes of input 1 or attribute `axes`.
fn squeeze(op: &str, a: &Attrs, ins: &Inputs) -> NodeResult<Const> {
    let x = req(ins, 0)?;
    let list: Option<Vec<i64>> = match ins.get(1).copied().flatten() {
        Some(c) => Some(c.as_i64()),
        None => a.ints("axes").map(<[i64]>::to_vec),
    };
    let shape = if op == "Squeeze" {
        shapes::squeeze(&x.shape, list.as_deref())?
    } else {
        shapes::unsqueeze(&x.shape, list.as_deref().unwrap_or(&[]))?
    };
    Ok(Const::new(shape, x.values.clone(), x.elem))
}

/// `Slice` of input 0, its ranges from attributes (before opset 10) or inputs 1 to 4.
fn slice_node(a: &Attrs, ins: &Inputs, opset: i64) -> NodeResult<Const> {
    let x = req(ins, 0)?;
    let (starts, ends, axes, steps) = if opset < 10 {
        (
            a.ints("starts").unwrap_or(&[]).to_vec(),
            a.ints("ends").unwrap_or(&[]).to_vec(),
            a.ints("axes").map(<[i64]>::to_vec),
            None,
        )
    } else {
        (
            req(ins, 1)?.as_i64(),
            req(ins, 2)?.as_i64(),
            ins.get(3).copied().flatten().map(Const::as_i64),
            ins.get(4).copied().flatten().map(Const::as_i64),
        )
    };
    let r = shapes::slice_ranges(&x.shape, &starts, &ends, axes.as_deref(), steps.as_deref())?;
    Ok(slice(x, &r))
}

/// `Transpose` of input 0 by attribute `perm` (reversed axes without it).
fn transpose(a: &Attrs, ins: &Inputs) -> NodeResult<Const> {
    let x = req(ins, 0)?;
    let perm: Vec<usize> = match a.ints("perm") {
        Some(p) => p
            .iter()
            .map(|&v| shapes::axis(v, x.shape.len()))
            .collect::<NodeResult<_>>()?,
        None => (0..x.shape.len()).rev().collect(),
    };
    if heimdall_ir::ops::transpose::shape(&x.shape, &perm).is_err() {
        return invalid(format!("invalid permutation {perm:?}"));
    }
    Ok(permute_const(x, &perm))
}

/// `ConstantOfShape`: the shape input 0 filled with attribute `value` (0.0 without it).
fn constant_of_shape(a: &Attrs, ins: &Inputs) -> NodeResult<Const> {
    let s = req(ins, 0)?;
    let shape = s
        .as_i64()
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| format!("negative dimension {d}")))
        .collect::<Result<Vec<_>, _>>()?;
    let n = checked_numel(&shape)?;
    let v = a
        .tensor("value")?
        .unwrap_or(Const::scalar(0.0, Elem::Float));
    let fill = v.values.first().copied().unwrap_or(0.0);
    Ok(Const::new(shape, vec![fill; n], v.elem))
}

/// `Range`: start (input 0) up to limit (input 1) by delta (input 2).
fn range(ins: &Inputs) -> NodeResult<Const> {
    let (s, l, d) = (req(ins, 0)?, req(ins, 1)?, req(ins, 2)?);
    let (s0, l0, d0) = (first(s)?, first(l)?, first(d)?);
    if d0 == 0.0 {
        return invalid("Range with delta 0");
    }
    let n = ((l0 - s0) / d0).ceil().max(0.0);
    if n > MAX_FOLDED as f64 {
        return invalid("Range too long");
    }
    let values: Vec<f64> = (0..n as usize).map(|i| s0 + i as f64 * d0).collect();
    Ok(Const::new(vec![values.len()], values, s.elem))
}

/// A binary `op` applied left to right over the present inputs (`Sum` of many, or two).
fn binary_chain(op: &str, a: &Attrs, ins: &Inputs) -> NodeResult<Const> {
    let parts: Vec<&Const> = ins.iter().flatten().copied().collect();
    let Some((first_c, rest)) = parts.split_first() else {
        return invalid("no inputs");
    };
    let mut acc = (*first_c).clone();
    for c in rest {
        acc = binary(op, &acc, c, a)?;
    }
    Ok(acc)
}

/// `Where`: input 1 where input 0 is true, else input 2, all broadcast together.
fn select(ins: &Inputs) -> NodeResult<Const> {
    let (c, x, y) = (req(ins, 0)?, req(ins, 1)?, req(ins, 2)?);
    let shape = shapes::broadcast(&shapes::broadcast(&c.shape, &x.shape)?, &y.shape)?;
    let (c, x, y) = (
        broadcast_to(c, &shape)?,
        broadcast_to(x, &shape)?,
        broadcast_to(y, &shape)?,
    );
    let values = (0..c.numel())
        .map(|i| {
            if c.values[i] != 0.0 {
                x.values[i]
            } else {
                y.values[i]
            }
        })
        .collect();
    Ok(Const::new(shape, values, x.elem))
}

/// The elementwise unary `op` of `x` (float results rounded to f32).
fn unary(op: &str, x: &Const) -> Const {
    let f = |v: f64| match op {
        "Neg" => -v,
        "Abs" => v.abs(),
        "Sqrt" => v.sqrt(),
        "Exp" => v.exp(),
        "Log" => v.ln(),
        "Floor" => v.floor(),
        "Ceil" => v.ceil(),
        "Relu" => v.max(0.0),
        "Sigmoid" => 1.0 / (1.0 + (-v).exp()),
        "Tanh" => v.tanh(),
        "Reciprocal" => 1.0 / v,
        "Not" => (v == 0.0) as u8 as f64,
        "Round" => v.round_ties_even(),
        _ => v.signum() * (v != 0.0) as u8 as f64,
    };
    let values = x
        .values
        .iter()
        .map(|&v| f(v))
        .map(|v| {
            if x.elem == Elem::Float {
                v as f32 as f64
            } else {
                v
            }
        })
        .collect();
    Const::new(x.shape.clone(), values, x.elem)
}

fn first(c: &Const) -> NodeResult<f64> {
    match c.values.first() {
        Some(&v) => Ok(v),
        None => invalid("empty scalar"),
    }
}

fn checked_numel(shape: &[usize]) -> NodeResult<usize> {
    match shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d)) {
        Some(n) if n <= MAX_FOLDED => Ok(n),
        _ => unsupported(format!("constant of shape {shape:?} is too large to fold")),
    }
}

/// The `Flatten` split axis (in 0..=rank).
pub(crate) fn flatten_axis(a: i64, rank: usize) -> NodeResult<usize> {
    let r = rank as i64;
    let n = if a < 0 { a + r } else { a };
    if (0..=r).contains(&n) {
        Ok(n as usize)
    } else {
        invalid(format!("axis {a} out of range"))
    }
}

/// `x` broadcast to `shape`.
pub(crate) fn broadcast_to(x: &Const, shape: &[usize]) -> NodeResult<Const> {
    if x.shape == shape {
        return Ok(x.clone());
    }
    let n = checked_numel(shape)?;
    let r = shape.len();
    let off = r - x.shape.len().min(r);
    let mut strides = vec![0usize; r];
    let mut s = 1;
    for d in (0..x.shape.len()).rev() {
        if x.shape[d] != 1 {
            strides[off + d] = s;
        }
        s *= x.shape[d];
    }
    let mut values = Vec::with_capacity(n);
    let mut coord = vec![0usize; r];
    for _ in 0..n {
        values.push(x.values[(0..r).map(|d| coord[d] * strides[d]).sum::<usize>()]);
        for d in (0..r).rev() {
            coord[d] += 1;
            if coord[d] < shape[d] {
                break;
            }
            coord[d] = 0;
        }
    }
    Ok(Const::new(shape.to_vec(), values, x.elem))
}

fn binary(op: &str, x: &Const, y: &Const, a: &Attrs) -> NodeResult<Const> {
    let shape = shapes::broadcast(&x.shape, &y.shape)?;
    let (bx, by) = (broadcast_to(x, &shape)?, broadcast_to(y, &shape)?);
    let int = x.elem == Elem::Int && y.elem == Elem::Int;
    let fmod = a.int_or("fmod", 0) != 0;
    let mut elem = if int { Elem::Int } else { Elem::Float };
    if matches!(
        op,
        "Equal" | "Less" | "Greater" | "LessOrEqual" | "GreaterOrEqual" | "And" | "Or"
    ) {
        elem = Elem::Bool;
    }
    let values = bx
        .values
        .iter()
        .zip(&by.values)
        .map(|(&u, &v)| {
            let r = match op {
                "Add" | "Sum" => u + v,
                "Sub" => u - v,
                "Mul" => u * v,
                "Div" if int => {
                    if v == 0.0 {
                        0.0
                    } else {
                        (u / v).trunc()
                    }
                }
                "Div" => u / v,
                "Pow" => u.powf(v),
                "Max" => u.max(v),
                "Min" => u.min(v),
                "Equal" => (u == v) as u8 as f64,
                "Less" => (u < v) as u8 as f64,
                "Greater" => (u > v) as u8 as f64,
                "LessOrEqual" => (u <= v) as u8 as f64,
                "GreaterOrEqual" => (u >= v) as u8 as f64,
                "And" => (u != 0.0 && v != 0.0) as u8 as f64,
                "Or" => (u != 0.0 || v != 0.0) as u8 as f64,
                _ if fmod || !int => u % v,
                _ => {
                    if v == 0.0 {
                        0.0
                    } else {
                        u - v * (u / v).floor()
                    }
                }
            };
            if elem == Elem::Float {
                r as f32 as f64
            } else {
                r
            }
        })
        .collect();
    Ok(Const::new(shape, values, elem))
}

/// Concatenation of constants along `axis`.
pub(crate) fn concat(parts: &[&Const], axis: i64) -> NodeResult<Const> {
    let Some(first) = parts.first() else {
        return invalid("Concat of nothing");
    };
    let r = first.shape.len();
    let ax = shapes::axis(axis, r)?;
    let outer: usize = first.shape[..ax].iter().product();
    let mut shape = first.shape.clone();
    shape[ax] = 0;
    for p in parts {
        if p.shape.len() != r || (0..r).any(|d| d != ax && p.shape[d] != first.shape[d]) {
            return invalid(format!(
                "Concat of {:?} and {:?} along {ax}",
                first.shape, p.shape
            ));
        }
        shape[ax] += p.shape[ax];
    }
    let mut values = Vec::with_capacity(shape.iter().product());
    for o in 0..outer {
        for p in parts {
            let inner: usize = p.shape[ax..].iter().product();
            values.extend_from_slice(&p.values[o * inner..(o + 1) * inner]);
        }
    }
    Ok(Const::new(shape, values, first.elem))
}

/// `Gather` of constants.
fn gather(x: &Const, idx: &Const, axis: i64) -> NodeResult<Const> {
    let ax = shapes::axis(axis, x.shape.len())?;
    let n = x.shape[ax] as i64;
    let outer: usize = x.shape[..ax].iter().product();
    let inner: usize = x.shape[ax + 1..].iter().product();
    let mut shape = x.shape[..ax].to_vec();
    shape.extend(&idx.shape);
    shape.extend(&x.shape[ax + 1..]);
    checked_numel(&shape)?;
    let mut values = Vec::new();
    for o in 0..outer {
        for &i in &idx.as_i64() {
            let i = if i < 0 { i + n } else { i };
            if !(0..n).contains(&i) {
                return invalid(format!("Gather index {i} out of range {n}"));
            }
            let at = (o * n as usize + i as usize) * inner;
            values.extend_from_slice(&x.values[at..at + inner]);
        }
    }
    Ok(Const::new(shape, values, x.elem))
}

/// A resolved slice of a constant.
fn slice(x: &Const, r: &[shapes::SliceAxis]) -> Const {
    let shape: Vec<usize> = r.iter().map(|s| s.count).collect();
    let rank = shape.len();
    let mut strides = vec![1usize; rank];
    for d in (0..rank.saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * x.shape[d + 1];
    }
    let n: usize = shape.iter().product();
    let mut values = Vec::with_capacity(n);
    let mut coord = vec![0usize; rank];
    for _ in 0..n {
        let at: i64 = (0..rank)
            .map(|d| (r[d].begin + r[d].step * coord[d] as i64) * strides[d] as i64)
            .sum();
        values.push(x.values[at as usize]);
        for d in (0..rank).rev() {
            coord[d] += 1;
            if coord[d] < shape[d] {
                break;
            }
            coord[d] = 0;
        }
    }
    Const::new(shape, values, x.elem)
}
