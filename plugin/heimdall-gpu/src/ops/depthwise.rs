//! DEPTHWISE_CONV_2D (multiplier 1): `shaders/depthwise.wgsl` with the window (taps, strides,
//! dilations) baked in, several output columns per thread. Weights are pre-transformed to
//! `[ky][kx][slice]` vec4.

use heimdall_ir::ConvAttrs;

use crate::dispatch::{Dispatch, OpContext, Operand, TileMap, groups_for, u32_of};
use crate::params::shader_params;
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, EpilogueDecl, KernelSource, WORKGROUP_SIZE};

shader_params! {
    /// Uniform parameters of `shaders/depthwise.wgsl`.
    struct GpuDepthwiseParams {
        in_h: u32,
        in_w: u32,
        slices: u32,
        channels: u32,
        out_h: u32,
        out_w: u32,
        pad_top: u32,
        pad_left: u32,
        col_blocks: u32,
        total: u32,
    }
}

/// Source of the depthwise kernel for a `k` window with `stride` and `dilation`, `bx` output
/// columns per thread.
pub fn source(
    x: Precision,
    y: Precision,
    k: [u32; 2],
    stride: [u32; 2],
    dilation: [u32; 2],
    bx: u32,
    epilogue: EpilogueDecl,
) -> KernelSource {
    KernelSource {
        consts: vec![
            ("KH", k[0]),
            ("KW", k[1]),
            ("SH", stride[0]),
            ("SW", stride[1]),
            ("DH", dilation[0]),
            ("DW", dilation[1]),
            ("BX", bx),
        ],
        epilogue,
        extra: dw_tile(k, stride, dilation, bx),
        ..KernelSource::new(
            "depthwise",
            vec![
                BindingDecl::read("x", x),
                BindingDecl::read("w", x),
                BindingDecl::read("bias", Precision::F32),
                BindingDecl::write("y", y),
            ],
        )
    }
    .with_params::<GpuDepthwiseParams>()
}

/// The generated, fully unrolled tile of `shaders/depthwise.wgsl`: `bx` output columns of one
/// row and slice, window `k`, `stride`, `dilation`. Per window row the input vec4s the columns
/// share are loaded once into named variables (`r_<ky>_<n>`), each tap's weight once (`w_<ky>_<kx>`),
/// and every output accumulates in its own named variable (`a_<j>`), in the same order (rows,
/// then taps) for every blocking.
fn dw_tile(k: [u32; 2], stride: [u32; 2], dilation: [u32; 2], bx: u32) -> String {
    use std::fmt::Write as _;
    let row = (bx - 1) * stride[1] + (k[1] - 1) * dilation[1] + 1;
    let mut s = String::from(
        "// Generated (src/ops/depthwise.rs): the BX columns of one thread, unrolled.\n\
         fn dw_tile(ox0: u32, oy: u32, s: u32) {\n\
         \x20   let ix0 = i32(ox0 * SW) - i32(params.pad_left);\n\
         \x20   let iy0 = i32(oy * SH) - i32(params.pad_top);\n",
    );
    for j in 0..bx {
        let _ = writeln!(s, "    var a_{j} = vec4<f32>(0.0);");
    }
    for ky in 0..k[0] {
        let _ = writeln!(s, "    let iy_{ky} = iy0 + {};", ky * dilation[0]);
        for n in 0..row {
            let _ = writeln!(s, "    let r_{ky}_{n} = x_at(s, iy_{ky}, ix0 + {n});");
        }
        for kx in 0..k[1] {
            let _ = writeln!(
                s,
                "    let w_{ky}_{kx} = w_load({}u * params.slices + s);",
                ky * k[1] + kx
            );
            for j in 0..bx {
                let n = j * stride[1] + kx * dilation[1];
                let _ = writeln!(s, "    a_{j} = fma(r_{ky}_{n}, w_{ky}_{kx}, a_{j});");
            }
        }
    }
    for j in 0..bx {
        let _ = writeln!(s, "    store_out(ox0 + {j}u, oy, s, a_{j});");
    }
    s.push_str("}\n");
    s
}

/// Filter `[1, kh, kw, c]` to `[ky][kx][slice]` vec4, zero-padded (shared with the fused
/// depthwise + 1x1 kernel, `kernels::fused`).
pub(crate) fn transform_weights(f: &[f32], kh: usize, kw: usize, c: usize) -> Vec<f32> {
    let s = c.div_ceil(4);
    let mut w = vec![0.0f32; kh * kw * s * 4];
    for ky in 0..kh {
        for kx in 0..kw {
            for ch in 0..c {
                w[((ky * kw + kx) * s + ch / 4) * 4 + ch % 4] = f[(ky * kw + kx) * c + ch];
            }
        }
    }
    w
}

/// Builds a DEPTHWISE_CONV_2D.
pub fn build(
    ctx: &mut OpContext,
    a: &ConvAttrs,
    multiplier: usize,
) -> Result<Vec<Dispatch>, String> {
    let x = ctx.in_geom(0)?;
    let y = ctx.out_geom()?;
    let fshape = ctx.in_shape(1)?.to_vec();
    let [1, kh, kw, c] = fshape[..] else {
        return Err(format!("filter shape {fshape:?} is not [1, kh, kw, c]"));
    };
    if multiplier != 1 || c != x.c || y.c != c {
        return Err(format!(
            "depth multiplier {multiplier} ({} -> {c} channels) is not supported on the GPU",
            x.c
        ));
    }
    if kh > 7 || kw > 7 || a.stride[0] > 4 || a.stride[1] > 4 || a.dilation.iter().any(|&d| d > 4) {
        return Err(format!(
            "window {kh}x{kw} stride {:?} dilation {:?} too large for the depthwise kernel",
            a.stride, a.dilation
        ));
    }
    let s = x.slices();
    let w = transform_weights(ctx.constant(1)?, kh, kw, c);
    // Weights share the input's accessor precision choice: the op's weight precision.
    let wp = ctx.weights;
    let w_op = ctx.add_const("depthwise weights".into(), wp.encode(&w));
    let bias = ctx.bias(2, c)?;
    let xp = ctx.precisions[ctx.op.inputs[0].index()];
    let yp = ctx.out_precision()?;
    let (ep, ep_ops) = ctx.epilogue()?;
    let mut operands = vec![
        Operand::Tensor(ctx.op.inputs[0]),
        w_op,
        bias,
        Operand::Tensor(ctx.output()?),
    ];
    operands.extend(ep_ops);
    let bx = [4usize, 2]
        .into_iter()
        .find(|&b| y.w.div_ceil(b) * y.h * s >= ctx.tuning.min_threads)
        .unwrap_or(1);
    let col_blocks = y.w.div_ceil(bx);
    let total = col_blocks * y.h * s;
    let p = GpuDepthwiseParams {
        in_h: u32_of(x.h)?,
        in_w: u32_of(x.w)?,
        slices: u32_of(s)?,
        channels: u32_of(c)?,
        out_h: u32_of(y.h)?,
        out_w: u32_of(y.w)?,
        pad_top: u32_of(a.pad.top)?,
        pad_left: u32_of(a.pad.left)?,
        col_blocks: u32_of(col_blocks)?,
        total: u32_of(total)?,
    };
    let mut src = source(
        xp,
        yp,
        [kh as u32, kw as u32],
        [a.stride[0] as u32, a.stride[1] as u32],
        [a.dilation[0] as u32, a.dilation[1] as u32],
        bx as u32,
        ep,
    );
    src.bindings[1].precision = wp;
    Ok(vec![
        Dispatch::new(src, &p, operands, groups_for(total)).with_tiles(TileMap::Rows {
            threads: WORKGROUP_SIZE,
            total: u32_of(total)?,
            col_blocks: u32_of(col_blocks)?,
            bx: bx as u32,
        }),
    ])
}

/// Representative variants in precision `p`, for the catalogue.
pub fn catalogue(p: Precision) -> Vec<KernelSource> {
    let mut out: Vec<KernelSource> = EpilogueDecl::representative(p)
        .into_iter()
        .map(|ep| source(p, p, [3, 3], [2, 2], [1, 1], 4, ep))
        .collect();
    out.push(source(p, p, [5, 5], [1, 1], [1, 1], 4, EpilogueDecl::NONE));
    out
}
