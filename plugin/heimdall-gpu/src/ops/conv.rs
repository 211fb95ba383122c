//! CONV_2D: `shaders/conv1x1.wgsl` (1x1, stride 1, no padding: a blocked matrix product),
//! `shaders/conv1x1_splitk.wgsl` (1x1 with the reduction split over a work group, for small
//! grids), `shaders/conv1x1_tiled.wgsl` (1x1 as a GEMM tiled through work-group memory, for
//! large layers: [`super::conv1x1_tiled`]; [`conv1x1_kernel`] chooses) and `shaders/conv2d.wgsl`
//! (any window). Weights are pre-transformed to `[out_slice][ky][kx][in_slice][in_lane]` vec4
//! over 4 output channels (the tiled kernel's K-major: [`super::conv1x1_tiled::transform_filter`]).

use heimdall_ir::{ConvAttrs, Pad2d};

use crate::arith::Arith;
use crate::context::{GpuContext, Tuning};
use crate::coop::CoopTile;
use crate::dispatch::{Dispatch, OpContext, Operand, TileMap, groups_for, u32_of};
use crate::layout::Phwc4;
pub(crate) use crate::ops::conv1x1_params::GpuConv1x1Params;
use crate::ops::conv1x1_tiled::{self, Conv1x1Tile};
use crate::params::shader_params;
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, EpilogueDecl, KernelSource, WORKGROUP_SIZE};

shader_params! {
    /// Uniform parameters of `shaders/conv2d.wgsl`.
    struct GpuConv2dParams {
        in_h: u32,
        in_w: u32,
        in_slices: u32,
        out_h: u32,
        out_w: u32,
        out_slices: u32,
        out_channels: u32,
        k_h: u32,
        k_w: u32,
        stride_h: u32,
        stride_w: u32,
        dil_h: u32,
        dil_w: u32,
        pad_top: u32,
        pad_left: u32,
        col_blocks: u32,
        total: u32,
    }
}

/// Source of the 1x1 kernel with `bp` pixels x `bs` output slices per thread and work groups
/// of 64 threads.
pub fn conv1x1_source(
    x: Precision,
    w: Precision,
    y: Precision,
    bp: u32,
    bs: u32,
    epilogue: EpilogueDecl,
) -> KernelSource {
    conv1x1_source_tg(
        x,
        w,
        y,
        Conv1x1Blocking { bp, bs, tg: 64 },
        epilogue,
        Arith::F32,
    )
}

/// How the 1x1 kernel is blocked: pixels and output slices per thread, threads per work group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv1x1Blocking {
    /// Pixels per thread.
    pub bp: u32,
    /// Output slices (4 channels each) per thread.
    pub bs: u32,
    /// Threads per work group.
    pub tg: u32,
}

impl std::fmt::Display for Conv1x1Blocking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} px x {} slices per thread, {} threads per work group",
            self.bp, self.bs, self.tg
        )
    }
}

/// The blocking of a 1x1 conv of `pixels` pixels, `out_slices` output slices on `ctx`'s device
/// (see [`crate::context::Tuning`]).
pub fn conv1x1_blocking(ctx: &GpuContext, pixels: usize, out_slices: usize) -> Conv1x1Blocking {
    blocking_for(&ctx.tuning(), pixels, out_slices)
}

fn blocking_for(t: &Tuning, pixels: usize, out_slices: usize) -> Conv1x1Blocking {
    let (bp, bs) = t.conv_block(out_slices, |p, s| {
        pixels.div_ceil(p as usize) * out_slices.div_ceil(s as usize)
    });
    Conv1x1Blocking {
        bp,
        bs,
        tg: t.conv1x1_workgroup,
    }
}

/// Which kernel a 1x1 convolution runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conv1x1Kernel {
    /// `conv1x1_splitk.wgsl`: work groups of `tg` threads, the reduction split in `ks` parts.
    SplitK {
        /// Threads per work group.
        tg: u32,
        /// Parts of the reduction.
        ks: u32,
    },
    /// `conv1x1.wgsl` with this blocking, computing in this arithmetic.
    Blocked(Conv1x1Blocking, Arith),
    /// `conv1x1_tiled.wgsl` with this tile (f32 arithmetic).
    Tiled(Conv1x1Tile),
    /// `conv_coop.wgsl` with this tile (cooperative matrices, f16 products, f32 sums).
    Coop(CoopTile),
}

impl std::fmt::Display for Conv1x1Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Conv1x1Kernel::SplitK { tg, ks } => {
                write!(
                    f,
                    "split reduction, {ks} parts, {tg} threads per work group"
                )
            }
            Conv1x1Kernel::Blocked(b, _) => write!(f, "{b}"),
            Conv1x1Kernel::Tiled(t) => write!(f, "{t}"),
            Conv1x1Kernel::Coop(t) => write!(f, "{t}"),
        }
    }
}

/// The kernel of a 1x1 conv of `pixels` pixels, `in_slices` input and `out_slices` output
/// slices under `t`, were it to compute in `arith`: the split reduction for small grids with
/// long reductions ([`Tuning::split_k`]), else the tiled kernel where a tile suits the layer
/// ([`conv1x1_tiled::choose_tile`]; f32 arithmetic only), else the blocked kernel.
pub fn conv1x1_kernel(
    t: &Tuning,
    pixels: usize,
    in_slices: usize,
    out_slices: usize,
    arith: Arith,
) -> Conv1x1Kernel {
    conv1x1_kernel_for(t, [Precision::F32; 2], pixels, in_slices, out_slices, arith)
}

/// [`conv1x1_kernel`] for input and weights stored in `inputs`: where both are f16 and the
/// tuning has cooperative matrices ([`Tuning::conv_coop`], [`crate::coop::choose`]), the
/// cooperative-matrix kernel takes the place of the tiled one (f32 arithmetic only).
pub fn conv1x1_kernel_for(
    t: &Tuning,
    inputs: [Precision; 2],
    pixels: usize,
    in_slices: usize,
    out_slices: usize,
    arith: Arith,
) -> Conv1x1Kernel {
    let tg = t.conv1x1_workgroup;
    if let Some(ks) = t
        .split_k(pixels * out_slices, in_slices)
        .filter(|&ks| tg.is_multiple_of(ks))
    {
        return Conv1x1Kernel::SplitK { tg, ks };
    }
    if arith == Arith::F32
        && let Some(tile) = crate::coop::choose(t.conv_coop, inputs, pixels, in_slices, out_slices)
    {
        return Conv1x1Kernel::Coop(tile);
    }
    if arith == Arith::F32
        && let Some(tile) = conv1x1_tiled::choose_tile(t, pixels, in_slices, out_slices)
    {
        return Conv1x1Kernel::Tiled(tile);
    }
    Conv1x1Kernel::Blocked(blocking_for(t, pixels, out_slices), arith)
}

/// One input slice into accumulator `a` (weights `w_b_l`, input `x_j`, operands of type `v`):
/// `a += w_b_0 * x_j.x + ... + w_b_3 * x_j.w` as a chain of four `fma`s.
fn mad4(a: &str, b: u32, j: u32, v: &str) -> String {
    format!(
        "{a} = fma(w_{b}_3, {v}(x_{j}.w), fma(w_{b}_2, {v}(x_{j}.z), \
         fma(w_{b}_1, {v}(x_{j}.y), fma(w_{b}_0, {v}(x_{j}.x), {a}))));"
    )
}

/// The generated inner loop of `shaders/conv1x1.wgsl` for `bp` pixels x `bs` output slices:
/// named accumulators `a_b_j` (slice `b`, pixel `j`), clamped pixel and weight offsets hoisted
/// out of the loop, one FMA chain per accumulator and input slice, then the stores. In f16
/// arithmetic the FMAs take `vec4<f16>` operands into accumulators `h_b_j`; chunked, the loop
/// runs over chunks of input slices whose f16 sums are added into f32 accumulators `a_b_j`.
fn conv1x1_tile(bp: u32, bs: u32, arith: Arith) -> String {
    use std::fmt::Write as _;
    let (v, ld) = (arith.vec(), arith.load());
    let acc = if arith.is_f16() { "h" } else { "a" };
    let mut s = String::from(
        "// Generated (src/ops/conv.rs): the BP x BS tile of one thread.\n\
         fn conv_tile(p0: u32, o0: u32) {\n",
    );
    for j in 0..bp {
        let _ = writeln!(
            s,
            "    let pc_{j} = min(p0 + {j}u * TG, params.pixels - 1u);"
        );
    }
    for b in 0..bs {
        let _ = writeln!(
            s,
            "    let wo_{b} = min(o0 + {b}u, params.out_slices - 1u) * params.in_slices * 4u;"
        );
        for j in 0..bp {
            let _ = match arith {
                Arith::F16 => writeln!(s, "    var h_{b}_{j} = vec4<f16>(0.0);"),
                _ => writeln!(s, "    var a_{b}_{j} = vec4<f32>(0.0);"),
            };
        }
    }
    let (ind, lo, hi) = match arith {
        Arith::F16Chunked(ch) => {
            let _ = writeln!(
                s,
                "    for (var i0 = 0u; i0 < params.in_slices; i0 += {ch}u) {{\n\
                 \x20       let i1 = min(i0 + {ch}u, params.in_slices);"
            );
            for b in 0..bs {
                for j in 0..bp {
                    let _ = writeln!(s, "        var h_{b}_{j} = vec4<f16>(0.0);");
                }
            }
            ("        ", "i0", "i1")
        }
        _ => ("    ", "0u", "params.in_slices"),
    };
    let _ = writeln!(s, "{ind}for (var i = {lo}; i < {hi}; i++) {{");
    let _ = writeln!(s, "{ind}    let xi = i * params.pixels;");
    for j in 0..bp {
        let _ = writeln!(s, "{ind}    let x_{j} = x{ld}(xi + pc_{j});");
    }
    for b in 0..bs {
        let _ = writeln!(s, "{ind}    let wb_{b} = wo_{b} + i * 4u;");
        for l in 0..4 {
            let _ = writeln!(s, "{ind}    let w_{b}_{l} = w{ld}(wb_{b} + {l}u);");
        }
        for j in 0..bp {
            let _ = writeln!(s, "{ind}    {}", mad4(&format!("{acc}_{b}_{j}"), b, j, v));
        }
    }
    let _ = writeln!(s, "{ind}}}");
    if let Arith::F16Chunked(_) = arith {
        for b in 0..bs {
            for j in 0..bp {
                let _ = writeln!(s, "        a_{b}_{j} += vec4<f32>(h_{b}_{j});");
            }
        }
        s.push_str("    }\n");
    }
    for b in 0..bs {
        for j in 0..bp {
            let a = match arith {
                Arith::F16 => format!("vec4<f32>(h_{b}_{j})"),
                _ => format!("a_{b}_{j}"),
            };
            let _ = writeln!(s, "    store_out(p0 + {j}u * TG, o0 + {b}u, {a});");
        }
    }
    s.push_str("}\n");
    s
}

/// The generated tile of `shaders/conv2d.wgsl` for `bx` columns x `bs` output slices, in
/// `arith` (as [`conv1x1_tile`]; chunked, each tap's input slices are summed in chunks).
fn conv2d_tile(bx: u32, bs: u32, arith: Arith) -> String {
    use std::fmt::Write as _;
    let (v, ld) = (arith.vec(), arith.load());
    let acc = if arith.is_f16() { "h" } else { "a" };
    let mut s = String::from(
        "// Generated (src/ops/conv.rs): the BX x BS tile of one thread.\n\
         fn conv_tile(ox0: u32, oy: u32, o0: u32) {\n\
         \x20   let taps = params.k_h * params.k_w * params.in_slices * 4u;\n\
         \x20   let plane = params.in_h * params.in_w;\n",
    );
    for b in 0..bs {
        let _ = writeln!(
            s,
            "    let wo_{b} = min(o0 + {b}u, params.out_slices - 1u) * taps;"
        );
        for j in 0..bx {
            let _ = match arith {
                Arith::F16 => writeln!(s, "    var h_{b}_{j} = vec4<f16>(0.0);"),
                _ => writeln!(s, "    var a_{b}_{j} = vec4<f32>(0.0);"),
            };
        }
    }
    s.push_str(
        "    for (var ky = 0u; ky < params.k_h; ky++) {\n\
         \x20       let iy = i32(oy * params.stride_h + ky * params.dil_h) - i32(params.pad_top);\n\
         \x20       if (iy < 0 || iy >= i32(params.in_h)) {\n\
         \x20           continue;\n\
         \x20       }\n\
         \x20       for (var kx = 0u; kx < params.k_w; kx++) {\n\
         \x20           let wk = (ky * params.k_w + kx) * params.in_slices * 4u;\n",
    );
    for j in 0..bx {
        let _ = writeln!(
            s,
            "            let ix_{j} = i32((ox0 + {j}u) * params.stride_w + kx * params.dil_w) - i32(params.pad_left);\n\
             \x20           let ok_{j} = ix_{j} >= 0 && ix_{j} < i32(params.in_w);\n\
             \x20           let xr_{j} = u32(iy) * params.in_w + u32(clamp(ix_{j}, 0, i32(params.in_w) - 1));"
        );
    }
    let ind = match arith {
        Arith::F16Chunked(ch) => {
            let _ = writeln!(
                s,
                "            for (var i0 = 0u; i0 < params.in_slices; i0 += {ch}u) {{\n\
                 \x20               let i1 = min(i0 + {ch}u, params.in_slices);"
            );
            for b in 0..bs {
                for j in 0..bx {
                    let _ = writeln!(s, "                var h_{b}_{j} = vec4<f16>(0.0);");
                }
            }
            s.push_str("                for (var i = i0; i < i1; i++) {\n");
            "                    "
        }
        _ => {
            s.push_str("            for (var i = 0u; i < params.in_slices; i++) {\n");
            "                "
        }
    };
    for j in 0..bx {
        let _ = writeln!(
            s,
            "{ind}let x_{j} = select({v}(0.0), x{ld}(i * plane + xr_{j}), ok_{j});"
        );
    }
    for b in 0..bs {
        let _ = writeln!(s, "{ind}let wb_{b} = wo_{b} + wk + i * 4u;");
        for l in 0..4 {
            let _ = writeln!(s, "{ind}let w_{b}_{l} = w{ld}(wb_{b} + {l}u);");
        }
        for j in 0..bx {
            let _ = writeln!(s, "{ind}{}", mad4(&format!("{acc}_{b}_{j}"), b, j, v));
        }
    }
    if let Arith::F16Chunked(_) = arith {
        s.push_str("                }\n");
        for b in 0..bs {
            for j in 0..bx {
                let _ = writeln!(s, "                a_{b}_{j} += vec4<f32>(h_{b}_{j});");
            }
        }
    }
    s.push_str("            }\n        }\n    }\n");
    for b in 0..bs {
        for j in 0..bx {
            let a = match arith {
                Arith::F16 => format!("vec4<f32>(h_{b}_{j})"),
                _ => format!("a_{b}_{j}"),
            };
            let _ = writeln!(s, "    store_out(ox0 + {j}u, oy, o0 + {b}u, {a});");
        }
    }
    s.push_str("}\n");
    s
}

/// Source of the 1x1 kernel with the given blocking, computing in `arith`.
pub fn conv1x1_source_tg(
    x: Precision,
    w: Precision,
    y: Precision,
    b: Conv1x1Blocking,
    epilogue: EpilogueDecl,
    arith: Arith,
) -> KernelSource {
    KernelSource {
        consts: vec![("BP", b.bp), ("BS", b.bs), ("TG", b.tg)],
        epilogue,
        extra: conv1x1_tile(b.bp, b.bs, arith),
        f16_arith: arith.is_f16(),
        ..KernelSource::new(
            "conv1x1",
            vec![
                BindingDecl::read("x", x),
                BindingDecl::read("w", w),
                BindingDecl::read("bias", Precision::F32),
                BindingDecl::write("y", y),
            ],
        )
    }
    .with_params::<GpuConv1x1Params>()
}

/// Source of the split-reduction 1x1 kernel (`shaders/conv1x1_splitk.wgsl`): work groups of
/// `tg` threads, the reduction split into `ks` parts (`ks` divides `tg`).
pub fn conv1x1_splitk_source(
    x: Precision,
    w: Precision,
    y: Precision,
    tg: u32,
    ks: u32,
    epilogue: EpilogueDecl,
) -> KernelSource {
    KernelSource {
        consts: vec![("TG", tg), ("TP", tg / ks), ("KS", ks)],
        epilogue,
        ..KernelSource::new(
            "conv1x1_splitk",
            vec![
                BindingDecl::read("x", x),
                BindingDecl::read("w", w),
                BindingDecl::read("bias", Precision::F32),
                BindingDecl::write("y", y),
            ],
        )
    }
    .with_params::<GpuConv1x1Params>()
}

/// Source of the generic kernel with `bx` columns x `bs` output slices per thread, computing
/// in `arith`.
pub fn conv2d_source(
    x: Precision,
    w: Precision,
    y: Precision,
    [bx, bs]: [u32; 2],
    epilogue: EpilogueDecl,
    arith: Arith,
) -> KernelSource {
    KernelSource {
        consts: vec![("BX", bx), ("BS", bs)],
        epilogue,
        extra: conv2d_tile(bx, bs, arith),
        f16_arith: arith.is_f16(),
        ..KernelSource::new(
            "conv2d",
            vec![
                BindingDecl::read("x", x),
                BindingDecl::read("w", w),
                BindingDecl::read("bias", Precision::F32),
                BindingDecl::write("y", y),
            ],
        )
    }
    .with_params::<GpuConv2dParams>()
}

/// Filter `[co, kh, kw, ci]` to `[out_slice][ky][kx][in_slice][in_lane]` vec4 (output lanes),
/// zero-padded. Shared with TRANSPOSE_CONV.
pub fn transform_filter(f: &[f32], co: usize, kh: usize, kw: usize, ci: usize) -> Vec<f32> {
    let (os, is) = (co.div_ceil(4), ci.div_ceil(4));
    let mut out = vec![0.0; os * kh * kw * is * 16];
    for o in 0..co {
        for ky in 0..kh {
            for kx in 0..kw {
                for i in 0..ci {
                    let at = ((((o / 4 * kh + ky) * kw + kx) * is + i / 4) * 4 + i % 4) * 4 + o % 4;
                    out[at] = f[((o * kh + ky) * kw + kx) * ci + i];
                }
            }
        }
    }
    out
}

/// Builds a CONV_2D.
pub fn build(ctx: &mut OpContext, a: &ConvAttrs) -> Result<Vec<Dispatch>, String> {
    let x = ctx.in_geom(0)?;
    let fshape = ctx.in_shape(1)?.to_vec();
    let [co, kh, kw, ci] = fshape[..] else {
        return Err(format!("filter shape {fshape:?} is not 4-D"));
    };
    if ci != x.c {
        return Err(format!("filter expects {ci} channels, input has {}", x.c));
    }
    let y = ctx.out_geom()?;
    if (y.h, y.w) == (1, 1) && (kh, kw) == (x.h, x.w) && a.pad == Pad2d::default() && x.h * x.w > 1
    {
        // The window covers the whole input (a classifier head such as pose_landmark_full's
        // 2x2x288 -> 195): a fully connected layer over the flattened input, whose kernel
        // reduces across a work group instead of one thread running the whole sum.
        let f = ctx.constant(1)?.to_vec();
        return super::fully_connected::build_with(ctx, &f, co, kh * kw * ci);
    }
    let (is, os) = (x.slices(), y.slices());
    let pointwise = kh == 1
        && kw == 1
        && a.stride == [1, 1]
        && a.pad == Pad2d::default()
        && (x.h, x.w) == (y.h, y.w);
    let tuning = ctx.tuning;
    let xp = ctx.precisions[ctx.op.inputs[0].index()];
    let wp = ctx.weights;
    let yp = ctx.out_precision()?;
    let arith = |terms, chunk| Arith::choose(tuning.f16_arithmetic, [xp, wp, yp], terms, chunk);
    let kernel1x1 =
        pointwise.then(|| conv1x1_kernel_for(&tuning, [xp, wp], y.h * y.w, is, os, arith(ci, 4)));
    // A windowed conv on cooperative matrices (an implicit GEMM over taps x input slices).
    let coop_window = match (pointwise, tuning.conv_coop) {
        (false, Some(rule)) if rule.windowed && arith(kh * kw * ci, 4) == Arith::F32 => {
            crate::coop::choose(Some(rule), [xp, wp], y.h * y.w, kh * kw * is, os)
        }
        _ => None,
    };
    // The tiled and cooperative-matrix kernels read their weights K-major, the others
    // `[out_slice][ky][kx][in_slice]`.
    let w = match kernel1x1 {
        Some(Conv1x1Kernel::Tiled(_) | Conv1x1Kernel::Coop(_)) => {
            conv1x1_tiled::transform_filter(ctx.constant(1)?, co, ci)
        }
        _ if coop_window.is_some() => {
            super::conv_coop::transform_filter(ctx.constant(1)?, co, kh, kw, ci)
        }
        _ => transform_filter(ctx.constant(1)?, co, kh, kw, ci),
    };
    let w_op = ctx.add_const("conv weights".into(), wp.encode(&w));
    let bias = ctx.bias(2, co)?;
    let x_op = Operand::Tensor(ctx.op.inputs[0]);
    let (ep, ep_ops) = ctx.epilogue()?;
    let mut operands = vec![x_op, w_op, bias, Operand::Tensor(ctx.output()?)];
    operands.extend(ep_ops);
    let conv = ConvDispatch {
        a,
        x,
        y,
        kernel: [kh, kw],
        slices: [is, os],
        precisions: [xp, wp, yp],
        ep,
        operands,
    };
    match (kernel1x1, coop_window) {
        (Some(kernel), _) => conv.pointwise(kernel),
        (None, Some(t)) => conv.coop_window(t),
        (None, None) => conv.direct(&tuning, arith(kh * kw * ci, 4)),
    }
}

/// What a convolution's dispatch is built from, once [`build`] has chosen its kernel.
struct ConvDispatch<'a> {
    a: &'a ConvAttrs,
    x: Phwc4,
    y: Phwc4,
    /// Filter height and width.
    kernel: [usize; 2],
    /// Input and output slices.
    slices: [usize; 2],
    /// Input, weights and output.
    precisions: [Precision; 3],
    ep: EpilogueDecl,
    operands: Vec<Operand>,
}

impl ConvDispatch<'_> {
    /// A 1x1 convolution through `kernel`.
    fn pointwise(self, kernel: Conv1x1Kernel) -> Result<Vec<Dispatch>, String> {
        let ConvDispatch {
            y,
            slices: [is, os],
            precisions: [xp, wp, yp],
            ep,
            operands,
            ..
        } = self;
        let pixels = y.h * y.w;
        let (source, pixel_tiles, slice_tiles, tile_pixels) = match kernel {
            Conv1x1Kernel::SplitK { tg, ks } => (
                conv1x1_splitk_source(xp, wp, yp, tg, ks, ep),
                pixels.div_ceil((tg / ks) as usize),
                os,
                tg / ks,
            ),
            Conv1x1Kernel::Blocked(b, arith) => (
                conv1x1_source_tg(xp, wp, yp, b, ep, arith),
                pixels.div_ceil((b.bp * b.tg) as usize),
                os.div_ceil(b.bs as usize),
                b.bp * b.tg,
            ),
            Conv1x1Kernel::Tiled(t) => (
                conv1x1_tiled::source(xp, wp, yp, t, ep),
                pixels.div_ceil(t.pixels() as usize),
                os.div_ceil(t.slices() as usize),
                t.pixels(),
            ),
            Conv1x1Kernel::Coop(t) => (
                super::conv_coop::source(wp, yp, t, ep, false),
                pixels.div_ceil(t.pixels() as usize),
                os.div_ceil(t.slices() as usize),
                t.pixels(),
            ),
        };
        let tiles = pixel_tiles * slice_tiles;
        let p = GpuConv1x1Params {
            pixels: u32_of(pixels)?,
            in_slices: u32_of(is)?,
            out_slices: u32_of(os)?,
            out_channels: u32_of(y.c)?,
            pixel_tiles: u32_of(pixel_tiles)?,
            tiles: u32_of(tiles)?,
        };
        Ok(vec![
            Dispatch::new(source, &p, operands, u32_of(tiles)?).with_tiles(TileMap::PixelTiles {
                pixel_tiles: u32_of(pixel_tiles)?,
                tile_pixels,
            }),
        ])
    }

    /// A windowed convolution on cooperative matrices tiled by `t`.
    fn coop_window(self, t: CoopTile) -> Result<Vec<Dispatch>, String> {
        let ConvDispatch {
            a,
            x,
            y,
            kernel: [kh, kw],
            slices: [is, os],
            precisions: [_, wp, yp],
            ep,
            operands,
        } = self;
        let pixels = y.h * y.w;
        let pixel_tiles = pixels.div_ceil(t.pixels() as usize);
        let tiles = pixel_tiles * os.div_ceil(t.slices() as usize);
        let p = super::conv_coop::GpuConvCoopParams {
            pixels: u32_of(pixels)?,
            in_slices: u32_of(is)?,
            out_slices: u32_of(os)?,
            out_channels: u32_of(y.c)?,
            pixel_tiles: u32_of(pixel_tiles)?,
            tiles: u32_of(tiles)?,
            k_slices: u32_of(kh * kw * is)?,
            in_h: u32_of(x.h)?,
            in_w: u32_of(x.w)?,
            out_w: u32_of(y.w)?,
            k_w: u32_of(kw)?,
            stride_h: u32_of(a.stride[0])?,
            stride_w: u32_of(a.stride[1])?,
            dil_h: u32_of(a.dilation[0])?,
            dil_w: u32_of(a.dilation[1])?,
            pad_top: u32_of(a.pad.top)?,
            pad_left: u32_of(a.pad.left)?,
        };
        let source = super::conv_coop::source(wp, yp, t, ep, true);
        Ok(vec![Dispatch::new(source, &p, operands, u32_of(tiles)?)])
    }

    /// The direct convolution, blocked by `tuning`, computing in `arith`.
    fn direct(self, tuning: &Tuning, arith: Arith) -> Result<Vec<Dispatch>, String> {
        let ConvDispatch {
            a,
            x,
            y,
            kernel: [kh, kw],
            slices: [is, os],
            precisions: [xp, wp, yp],
            ep,
            operands,
        } = self;
        let (bx, bs) = tuning.conv_block(os, |c, s| {
            y.w.div_ceil(c as usize) * y.h * os.div_ceil(s as usize)
        });
        let col_blocks = y.w.div_ceil(bx as usize);
        let total = col_blocks * y.h * os.div_ceil(bs as usize);
        let p = GpuConv2dParams {
            in_h: u32_of(x.h)?,
            in_w: u32_of(x.w)?,
            in_slices: u32_of(is)?,
            out_h: u32_of(y.h)?,
            out_w: u32_of(y.w)?,
            out_slices: u32_of(os)?,
            out_channels: u32_of(y.c)?,
            k_h: u32_of(kh)?,
            k_w: u32_of(kw)?,
            stride_h: u32_of(a.stride[0])?,
            stride_w: u32_of(a.stride[1])?,
            dil_h: u32_of(a.dilation[0])?,
            dil_w: u32_of(a.dilation[1])?,
            pad_top: u32_of(a.pad.top)?,
            pad_left: u32_of(a.pad.left)?,
            col_blocks: u32_of(col_blocks)?,
            total: u32_of(total)?,
        };
        Ok(vec![
            Dispatch::new(
                conv2d_source(xp, wp, yp, [bx, bs], ep, arith),
                &p,
                operands,
                groups_for(total),
            )
            .with_tiles(TileMap::Rows {
                threads: WORKGROUP_SIZE,
                total: u32_of(total)?,
                col_blocks: u32_of(col_blocks)?,
                bx,
            }),
        ])
    }
}

/// Every variant in precision `p` with representative blockings and epilogues, for the
/// catalogue; in f16, also an f16 kernel writing an f32 graph output.
pub fn catalogue(p: Precision) -> Vec<KernelSource> {
    let mut out = Vec::new();
    for ep in EpilogueDecl::representative(p) {
        out.push(conv1x1_source(p, p, p, 4, 2, ep));
        out.push(conv1x1_splitk_source(p, p, p, 64, 16, ep));
        out.push(conv2d_source(p, p, p, [2, 2], ep, Arith::F32));
    }
    // f16 arithmetic, short and chunked, from f16 and from f32 storage.
    let f16 = [Arith::F16, Arith::F16Chunked(4)];
    for (arith, ep) in f16.into_iter().zip(EpilogueDecl::representative(p)) {
        let b = Conv1x1Blocking {
            bp: 4,
            bs: 2,
            tg: 64,
        };
        out.push(conv1x1_source_tg(p, p, p, b, ep, arith));
        out.push(conv2d_source(p, p, p, [2, 2], ep, arith));
    }
    if p == Precision::F16 {
        out.push(conv1x1_source(
            Precision::F16,
            Precision::F16,
            Precision::F32,
            1,
            1,
            EpilogueDecl::NONE,
        ));
    }
    out
}
