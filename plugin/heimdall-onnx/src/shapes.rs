//! ONNX shape semantics shared by constant folding and the op mapping: axis normalisation,
//! `Reshape` targets, `Slice` ranges, `Squeeze`/`Unsqueeze`, broadcasting.

use crate::error::{NodeResult, invalid};

/// Normalises a possibly negative axis for rank `rank`.
pub(crate) fn axis(a: i64, rank: usize) -> NodeResult<usize> {
    let r = rank as i64;
    let n = if a < 0 { a + r } else { a };
    if (0..r).contains(&n) {
        Ok(n as usize)
    } else {
        invalid(format!("axis {a} out of range for rank {rank}"))
    }
}

/// Normalised, sorted, unique axes.
pub(crate) fn axes(list: &[i64], rank: usize) -> NodeResult<Vec<usize>> {
    let mut v = list
        .iter()
        .map(|&a| axis(a, rank))
        .collect::<NodeResult<Vec<_>>>()?;
    v.sort_unstable();
    let n = v.len();
    v.dedup();
    if v.len() != n {
        return invalid(format!("repeated axes in {list:?}"));
    }
    Ok(v)
}

/// The output shape of `Reshape(x, target)` with ONNX's `0` (copy) and `-1` (infer) rules.
pub(crate) fn reshape_target(
    input: &[usize],
    target: &[i64],
    allow_zero: bool,
) -> NodeResult<Vec<usize>> {
    let numel: usize = input.iter().product();
    let mut out = Vec::with_capacity(target.len());
    let mut infer = None;
    for (i, &t) in target.iter().enumerate() {
        match t {
            -1 if infer.is_none() => {
                infer = Some(i);
                out.push(1);
            }
            0 if !allow_zero => match input.get(i) {
                Some(&d) => out.push(d),
                None => {
                    return invalid(format!(
                        "reshape target {target:?}: 0 beyond the input's rank"
                    ));
                }
            },
            t if t >= 0 => out.push(t as usize),
            _ => return invalid(format!("invalid reshape target {target:?}")),
        }
    }
    let known = out
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| {
            crate::error::NodeError::Invalid(format!("reshape target {target:?} overflows"))
        })?;
    if let Some(i) = infer {
        if known == 0 || !numel.is_multiple_of(known) {
            return invalid(format!("cannot reshape {input:?} to {target:?}"));
        }
        out[i] = numel / known;
    } else if known != numel {
        return invalid(format!("cannot reshape {input:?} to {target:?}"));
    }
    Ok(out)
}

/// One axis of a resolved slice: first index, step, count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SliceAxis {
    pub begin: i64,
    pub step: i64,
    pub count: usize,
}

/// Resolves ONNX `Slice` inputs into per-axis ranges over `shape` (axes not named are whole).
pub(crate) fn slice_ranges(
    shape: &[usize],
    starts: &[i64],
    ends: &[i64],
    axes_in: Option<&[i64]>,
    steps: Option<&[i64]>,
) -> NodeResult<Vec<SliceAxis>> {
    let rank = shape.len();
    let mut out: Vec<SliceAxis> = shape
        .iter()
        .map(|&d| SliceAxis {
            begin: 0,
            step: 1,
            count: d,
        })
        .collect();
    let default_axes: Vec<i64> = (0..starts.len() as i64).collect();
    let axes_list = axes_in.unwrap_or(&default_axes);
    if ends.len() != starts.len()
        || axes_list.len() != starts.len()
        || steps.is_some_and(|s| s.len() != starts.len())
    {
        return invalid("slice starts/ends/axes/steps differ in length");
    }
    for (i, &a) in axes_list.iter().enumerate() {
        let ax = axis(a, rank)?;
        let dim = shape[ax] as i64;
        let step = steps.map_or(1, |s| s[i]);
        if step == 0 {
            return invalid("slice step 0");
        }
        let norm = |v: i64| if v < 0 { v.saturating_add(dim) } else { v };
        let (s, e) = (norm(starts[i]), norm(ends[i]));
        let (s, e) = if step > 0 {
            (s.clamp(0, dim), e.clamp(0, dim))
        } else {
            (s.clamp(0, dim - 1), e.clamp(-1, dim - 1))
        };
        let count = if step > 0 {
            if e > s { (e - s + step - 1) / step } else { 0 }
        } else if s > e {
            (s - e + (-step) - 1) / (-step)
        } else {
            0
        };
        out[ax] = SliceAxis {
            begin: s,
            step,
            count: count as usize,
        };
    }
    Ok(out)
}

/// NumPy broadcast of two shapes.
pub(crate) fn broadcast(a: &[usize], b: &[usize]) -> NodeResult<Vec<usize>> {
    heimdall_ir::shape::broadcast(a, b).map_or_else(
        || invalid(format!("shapes {a:?} and {b:?} do not broadcast")),
        Ok,
    )
}

/// The shape after `Unsqueeze` at `axes` (relative to the output rank).
pub(crate) fn unsqueeze(shape: &[usize], list: &[i64]) -> NodeResult<Vec<usize>> {
    let rank = shape.len() + list.len();
    let ax = axes(list, rank)?;
    let mut it = shape.iter();
    Ok((0..rank)
        .map(|d| {
            if ax.contains(&d) {
                1
            } else {
                *it.next().unwrap_or(&1)
            }
        })
        .collect())
}

/// The shape after `Squeeze` at `axes` (all unit axes when `None`).
pub(crate) fn squeeze(shape: &[usize], list: Option<&[i64]>) -> NodeResult<Vec<usize>> {
    match list {
        None => Ok(shape.iter().copied().filter(|&d| d != 1).collect()),
        Some(l) => {
            let ax = axes(l, shape.len())?;
            if let Some(&a) = ax.iter().find(|&&a| shape[a] != 1) {
                return invalid(format!("cannot squeeze axis {a} of {shape:?}"));
            }
            Ok(shape
                .iter()
                .enumerate()
                .filter(|(d, _)| !ax.contains(d))
                .map(|(_, &s)| s)
                .collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reshape_and_slice_rules() {
        assert_eq!(
            reshape_target(&[2, 3, 4], &[0, -1], false).unwrap(),
            vec![2, 12]
        );
        assert!(reshape_target(&[2, 3], &[4, -1], false).is_err());
        // Reversal with INT64_MIN-like ends, as PyTorch exports it.
        let r = slice_ranges(
            &[4, 2],
            &[-1],
            &[-9223372036854775807],
            Some(&[0]),
            Some(&[-1]),
        )
        .unwrap();
        assert_eq!(
            r[0],
            SliceAxis {
                begin: 3,
                step: -1,
                count: 4
            }
        );
        let r = slice_ranges(&[10], &[2], &[i64::MAX], None, Some(&[3])).unwrap();
        assert_eq!(
            r[0],
            SliceAxis {
                begin: 2,
                step: 3,
                count: 3
            }
        );
        assert_eq!(unsqueeze(&[3, 4], &[0, -1]).unwrap(), vec![1, 3, 4, 1]);
    }
}
