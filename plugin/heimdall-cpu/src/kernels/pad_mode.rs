//! Padding of a tensor of rank at most 4 with a constant, reflected or replicated border.

use super::nd::{dims4, strides4};

/// How padded positions are filled.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fill {
    /// A constant.
    Constant(f32),
    /// Mirror without repeating the edge.
    Reflect,
    /// Repeat the edge.
    Edge,
}

/// The input index that output index `x` (before subtracting the leading pad) reads along an
/// axis of `n` values, or `None` for a constant fill.
fn source(x: isize, n: isize, fill: Fill) -> Option<isize> {
    if (0..n).contains(&x) {
        return Some(x);
    }
    match fill {
        Fill::Constant(_) => None,
        Fill::Edge => Some(x.clamp(0, n - 1)),
        Fill::Reflect => {
            // Period 2(n-1); n == 1 reflects onto itself.
            let period = (2 * (n - 1)).max(1);
            let m = x.rem_euclid(period);
            Some(if m < n { m } else { period - m })
        }
    }
}

/// Pads `input` of `shape` by `pads[d] = (before, after)` into `output`. Rows of the innermost
/// axis are copied whole where that axis is not padded (NHWC images padded in H and W).
pub fn pad_with(
    input: &[f32],
    shape: &[usize],
    pads: &[(usize, usize)],
    fill: Fill,
    output: &mut [f32],
) {
    let off = 4 - shape.len();
    let d = dims4(shape);
    let s = strides4(&d);
    let mut before = [0usize; 4];
    let mut od = d;
    for (i, p) in pads.iter().enumerate() {
        before[off + i] = p.0;
        od[off + i] += p.0 + p.1;
    }
    let value = match fill {
        Fill::Constant(v) => v,
        _ => 0.0,
    };
    let inner_padded = od[3] != d[3];
    let row = od[3];
    let mut o = 0;
    for a in 0..od[0] {
        for b in 0..od[1] {
            for c in 0..od[2] {
                let out = &mut output[o..o + row];
                o += row;
                let src = [a, b, c]
                    .iter()
                    .enumerate()
                    .try_fold(0usize, |acc, (k, &x)| {
                        source(x as isize - before[k] as isize, d[k] as isize, fill)
                            .map(|i| acc + i as usize * s[k])
                    });
                let Some(base) = src else {
                    out.fill(value);
                    continue;
                };
                if !inner_padded {
                    out.copy_from_slice(&input[base..base + row]);
                    continue;
                }
                for (x, v) in out.iter_mut().enumerate() {
                    *v = match source(x as isize - before[3] as isize, d[3] as isize, fill) {
                        Some(i) => input[base + i as usize],
                        None => value,
                    };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reflect_edge_constant_on_a_row() {
        let x = [1.0, 2.0, 3.0];
        let mut out = [0.0; 7];
        pad_with(&x, &[3], &[(2, 2)], Fill::Reflect, &mut out);
        assert_eq!(out, [3.0, 2.0, 1.0, 2.0, 3.0, 2.0, 1.0]);
        pad_with(&x, &[3], &[(2, 2)], Fill::Edge, &mut out);
        assert_eq!(out, [1.0, 1.0, 1.0, 2.0, 3.0, 3.0, 3.0]);
        pad_with(&x, &[3], &[(1, 3)], Fill::Constant(-1.0), &mut out);
        assert_eq!(out, [-1.0, 1.0, 2.0, 3.0, -1.0, -1.0, -1.0]);
    }

    #[test]
    fn nhwc_rows_match_per_element_reference() {
        // [1, 3, 4, 2] padded by 2 in H and W, every mode, against a per-element walk.
        let shape = [1, 3, 4, 2];
        let x: Vec<f32> = (0..24).map(|v| v as f32).collect();
        let pads = [(0, 0), (2, 1), (1, 2), (0, 0)];
        for fill in [Fill::Reflect, Fill::Edge, Fill::Constant(7.0)] {
            let mut out = vec![0.0; 6 * 7 * 2];
            pad_with(&x, &shape, &pads, fill, &mut out);
            for y in 0..6isize {
                for xx in 0..7isize {
                    for c in 0..2 {
                        let sy = source(y - 2, 3, fill);
                        let sx = source(xx - 1, 4, fill);
                        let expect = match (sy, sx) {
                            (Some(a), Some(b)) => x[(a as usize * 4 + b as usize) * 2 + c],
                            _ => 7.0,
                        };
                        assert_eq!(out[(y as usize * 7 + xx as usize) * 2 + c], expect);
                    }
                }
            }
        }
    }

    #[test]
    fn reflect_2d_matches_numpy() {
        // np.pad(np.arange(6).reshape(2,3), ((1,1),(2,0)), 'reflect')
        let x: Vec<f32> = (0..6).map(|v| v as f32).collect();
        let mut out = vec![0.0; 4 * 5];
        pad_with(&x, &[2, 3], &[(1, 1), (2, 0)], Fill::Reflect, &mut out);
        let expect = [
            5., 4., 3., 4., 5., 2., 1., 0., 1., 2., 5., 4., 3., 4., 5., 2., 1., 0., 1., 2.,
        ];
        assert_eq!(out, expect);
    }
}
