//! STRIDED_SLICE: begin, end and strides (constant inputs) and the masks resolved into the IR's
//! per-axis begin, stride and count.

use heimdall_ir::{OpKind, StridedSliceAttrs};

use super::operator::{Converted, Operator};
use crate::error::ImportError;

/// Converts a STRIDED_SLICE.
pub(crate) fn convert(cx: &Operator) -> Result<Converted, ImportError> {
    let inputs = vec![cx.input(0)?];
    let o = cx
        .op
        .builtin_options_as_strided_slice_options()
        .ok_or_else(|| cx.missing())?;
    let x = cx.shape(inputs[0]);
    let attrs = strided_slice(
        &x,
        &cx.const_ints(cx.input(1)?, "begin")?,
        &cx.const_ints(cx.input(2)?, "end")?,
        &cx.const_ints(cx.input(3)?, "strides")?,
        [
            o.begin_mask(),
            o.end_mask(),
            o.ellipsis_mask(),
            o.new_axis_mask(),
            o.shrink_axis_mask(),
        ],
        o.offset(),
    )
    .map_err(|e| cx.fail(e))?;
    Ok(Converted::new(OpKind::StridedSlice(attrs), inputs))
}

/// Resolves TFLite strided-slice masks into per-axis begin/stride/count.
fn strided_slice(
    x: &[usize],
    begin: &[i64],
    end: &[i64],
    strides: &[i64],
    masks: [i32; 5],
    offset: bool,
) -> Result<StridedSliceAttrs, String> {
    let [
        begin_mask,
        end_mask,
        ellipsis_mask,
        new_axis_mask,
        shrink_mask,
    ] = masks;
    if ellipsis_mask != 0 || new_axis_mask != 0 {
        return Err("ellipsis and new-axis masks are not supported".into());
    }
    let r = x.len();
    if begin.len() != r || end.len() != r || strides.len() != r {
        return Err(format!(
            "begin/end/strides of length {}/{}/{} for rank {r}",
            begin.len(),
            end.len(),
            strides.len()
        ));
    }
    let mut out = StridedSliceAttrs {
        begin: vec![],
        stride: vec![],
        count: vec![],
    };
    for d in 0..r {
        let dim = x[d] as i64;
        let s = strides[d];
        if s == 0 || s.abs() > 1 << 20 {
            return Err(format!("axis {d}: stride {s}"));
        }
        let norm = |v: i64| if v < 0 { v + dim } else { v };
        let (lo, hi) = if s > 0 { (0, dim) } else { (-1, dim - 1) };
        let mut b = if begin_mask & (1 << d) != 0 {
            if s > 0 { 0 } else { dim - 1 }
        } else {
            norm(begin[d]).clamp(lo, hi)
        };
        let mut e = if end_mask & (1 << d) != 0 {
            if s > 0 { dim } else { -1 }
        } else if offset {
            (b + end[d]).clamp(lo, hi)
        } else {
            norm(end[d]).clamp(lo, hi)
        };
        let mut step = s;
        if shrink_mask & (1 << d) != 0 {
            b = norm(begin[d]);
            if !(0..dim).contains(&b) {
                return Err(format!("axis {d}: shrunk index {} out of range", begin[d]));
            }
            e = b + 1;
            step = 1;
        }
        let count = if step > 0 {
            ((e - b).max(0) + step - 1) / step
        } else {
            ((b - e).max(0) - step - 1) / -step
        };
        out.begin.push(b);
        out.stride.push(step);
        out.count.push(count as usize);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_slice_masks() {
        // x[:, 1:3, ::2, -1] on [1, 4, 5, 6].
        let a = strided_slice(
            &[1, 4, 5, 6],
            &[0, 1, 0, -1],
            &[1, 3, 0, 0],
            &[1, 1, 2, 1],
            [0b0101, 0b0101, 0, 0, 0b1000],
            false,
        )
        .unwrap();
        assert_eq!(a.begin, vec![0, 1, 0, 5]);
        assert_eq!(a.count, vec![1, 2, 3, 1]);
        // Negative stride: x[3:0:-1] on [5] gives indices 3, 2, 1.
        let a = strided_slice(&[5], &[3], &[0], &[-1], [0, 0, 0, 0, 0], false).unwrap();
        assert_eq!((a.begin[0], a.stride[0], a.count[0]), (3, -1, 3));
        assert!(strided_slice(&[5], &[0], &[1], &[0], [0; 5], false).is_err());
    }
}
