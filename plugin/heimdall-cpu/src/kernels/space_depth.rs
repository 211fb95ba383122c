//! Space-to-depth and CRD-ordered depth-to-space on NHWC tensors (batch 1).

/// `output [h/b, w/b, c*b*b]` with output channel `(i*b + j)*c + k` taken from input pixel
/// `(y*b + i, x*b + j)`, channel `k`.
pub fn space_to_depth(input: &[f32], h: usize, w: usize, c: usize, b: usize, output: &mut [f32]) {
    let (oh, ow) = (h / b, w / b);
    let mut o = 0;
    for y in 0..oh {
        for x in 0..ow {
            for i in 0..b {
                for j in 0..b {
                    let at = ((y * b + i) * w + x * b + j) * c;
                    output[o..o + c].copy_from_slice(&input[at..at + c]);
                    o += c;
                }
            }
        }
    }
}

/// `output [h*b, w*b, c/(b*b)]` where output pixel `(y*b + i, x*b + j)` channel `k` reads input
/// channel `k*b*b + i*b + j` (ONNX `DepthToSpace` with `mode="CRD"`).
pub fn depth_to_space_crd(
    input: &[f32],
    h: usize,
    w: usize,
    c: usize,
    b: usize,
    output: &mut [f32],
) {
    let oc = c / (b * b);
    let ow = w * b;
    for y in 0..h {
        for x in 0..w {
            let src = &input[(y * w + x) * c..][..c];
            for i in 0..b {
                for j in 0..b {
                    let dst = &mut output[((y * b + i) * ow + x * b + j) * oc..][..oc];
                    for (k, d) in dst.iter_mut().enumerate() {
                        *d = src[k * b * b + i * b + j];
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::data;

    #[test]
    fn crd_round_trip_through_reference() {
        let (h, w, c, b) = (2, 3, 8, 2);
        let x = data(5, h * w * c);
        let mut out = vec![0.0; x.len()];
        depth_to_space_crd(&x, h, w, c, b, &mut out);
        // Reference from the ONNX formula on NCHW indices.
        let oc = c / 4;
        for k in 0..oc {
            for yy in 0..h * b {
                for xx in 0..w * b {
                    let (y, i, x0, j) = (yy / b, yy % b, xx / b, xx % b);
                    let v = x[(y * w + x0) * c + k * 4 + i * 2 + j];
                    assert_eq!(out[(yy * w * b + xx) * oc + k], v);
                }
            }
        }
        let mut back = vec![0.0; x.len()];
        space_to_depth(&out, h * b, w * b, oc, b, &mut back);
        // DCR-ordered space-to-depth of a CRD depth-to-space permutes channels consistently.
        for p in 0..h * w {
            for i in 0..4 {
                for k in 0..oc {
                    assert_eq!(back[p * c + i * oc + k], x[p * c + k * 4 + i]);
                }
            }
        }
    }
}
