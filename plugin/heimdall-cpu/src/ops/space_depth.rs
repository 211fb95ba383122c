//! Block rearrangements on NHWC tensors (batch 1): DEPTH_TO_SPACE in DCR order (TFLite) and
//! CRD order (ONNX `mode="CRD"`), and SPACE_TO_DEPTH.
//!
//! Dispatch: [`prepare`] picks the kernel of the order.

use heimdall_ir::BlockOrder;

use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

/// TFLite DEPTH_TO_SPACE (DCR order): input `[h, w, c]` to output `[h * block, w * block,
/// c / (block * block)]`, `out[y * block + by, x * block + bx, oc] = in[y, x, (by * block + bx)
/// * (c / block^2) + oc]`.
pub fn depth_to_space(
    input: &[f32],
    h: usize,
    w: usize,
    c: usize,
    block: usize,
    output: &mut [f32],
) {
    debug_assert!(block > 0 && c.is_multiple_of(block * block));
    debug_assert_eq!(input.len(), h * w * c);
    debug_assert_eq!(output.len(), input.len());
    let oc = c / (block * block);
    let ow = w * block;
    for y in 0..h {
        for by in 0..block {
            let out_row = &mut output[(y * block + by) * ow * oc..][..ow * oc];
            for x in 0..w {
                let src = &input[(y * w + x) * c + by * block * oc..][..block * oc];
                out_row[x * block * oc..(x + 1) * block * oc].copy_from_slice(src);
            }
        }
    }
}

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

/// Which rearrangement.
#[derive(Clone, Copy)]
enum Rearrange {
    DepthToSpaceDcr,
    DepthToSpaceCrd,
    SpaceToDepth,
}

/// A block rearrangement of `[h, w, c]`.
struct Block {
    op: Rearrange,
    h: usize,
    w: usize,
    c: usize,
    block: usize,
}

impl Kernel for Block {
    fn run(&self, io: StepIo<'_>) {
        let (x, (h, w, c, b)) = (io.inputs.get(0), (self.h, self.w, self.c, self.block));
        match self.op {
            Rearrange::DepthToSpaceDcr => depth_to_space(x, h, w, c, b, io.out),
            Rearrange::DepthToSpaceCrd => depth_to_space_crd(x, h, w, c, b, io.out),
            Rearrange::SpaceToDepth => space_to_depth(x, h, w, c, b, io.out),
        }
    }
}

/// Prepares a DEPTH_TO_SPACE (`order`) or, with `order` `None`, a SPACE_TO_DEPTH.
pub(crate) fn prepare(
    cx: &PrepareCx,
    block: usize,
    order: Option<BlockOrder>,
) -> Result<Prepared, String> {
    let x = cx.shape(0);
    let op = match order {
        Some(BlockOrder::Dcr) => Rearrange::DepthToSpaceDcr,
        Some(BlockOrder::Crd) => Rearrange::DepthToSpaceCrd,
        None => Rearrange::SpaceToDepth,
    };
    Ok(Prepared::new(Block {
        op,
        h: x[1],
        w: x[2],
        c: x[3],
        block,
    }))
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // naive references index on purpose
mod dcr_tests {
    use super::*;
    use crate::kernels::testutil::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn depth_to_space_matches_reference(h in 1..5usize, w in 1..5usize, oc in 1..4usize, block in 1..4usize, seed in 0u64..1000) {
            let c = oc * block * block;
            let input = data(seed, h * w * c);
            let mut reference = vec![0.0; input.len()];
            for y in 0..h * block { for x in 0..w * block { for o in 0..oc {
                reference[(y * w * block + x) * oc + o] = input[((y / block) * w + x / block) * c + ((y % block) * block + x % block) * oc + o];
            }}}
            let mut out = vec![f32::NAN; input.len()];
            depth_to_space(&input, h, w, c, block, &mut out);
            prop_assert_eq!(out, reference);
        }
    }
}

#[cfg(test)]
mod crd_tests {
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
