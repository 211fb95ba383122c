//! Convolutions on cooperative matrices (`shaders/conv_coop.wgsl`): a GEMM (1x1) or implicit
//! GEMM (windowed: K runs over the window's taps and the input slices) whose work groups stage K
//! tiles of x and w as f16 in work-group memory and whose subgroups multiply 16x16x16 fragments
//! on the tensor cores with f32 accumulators. Chosen for f16 inputs and weights where the device
//! has cooperative matrices ([`crate::coop`]); measurements: `docs/gpu.md`, "Convolutions on
//! tensor cores".

use std::fmt::Write as _;

use crate::coop::{COOP_64X64, COOP_TILES, CoopTile};
use crate::ops::conv1x1_params::GpuConv1x1Params;
use crate::params::shader_params;
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, EpilogueDecl, KernelSource};

shader_params! {
    /// Uniform parameters of `shaders/conv_coop.wgsl` for a windowed convolution (a 1x1 one
    /// takes [`GpuConv1x1Params`]): the 1x1 fields first, then `k_slices` (taps x input slices,
    /// the reduction in slices) and the window's geometry.
    struct GpuConvCoopParams {
        pixels: u32,
        in_slices: u32,
        out_slices: u32,
        out_channels: u32,
        pixel_tiles: u32,
        tiles: u32,
        k_slices: u32,
        in_h: u32,
        in_w: u32,
        out_w: u32,
        k_w: u32,
        stride_h: u32,
        stride_w: u32,
        dil_h: u32,
        dil_w: u32,
        pad_top: u32,
        pad_left: u32,
    }
}

/// The generated x loader `x_at(q, p)`: K slice `q` (input slice, or tap-major taps x input
/// slices of a window) of output pixel `p`, zero past the reduction and outside the input.
fn x_loader(windowed: bool) -> &'static str {
    if windowed {
        "fn x_at(q: u32, p: u32) -> vec4<f16> {\n\
         \x20   let t = q / params.in_slices;\n\
         \x20   let s = q % params.in_slices;\n\
         \x20   let iy = i32((p / params.out_w) * params.stride_h + (t / params.k_w) * params.dil_h) - i32(params.pad_top);\n\
         \x20   let ix = i32((p % params.out_w) * params.stride_w + (t % params.k_w) * params.dil_w) - i32(params.pad_left);\n\
         \x20   let inside = q < params.k_slices && iy >= 0 && ix >= 0 && iy < i32(params.in_h) && ix < i32(params.in_w);\n\
         \x20   let y = u32(clamp(iy, 0, i32(params.in_h) - 1));\n\
         \x20   let x = u32(clamp(ix, 0, i32(params.in_w) - 1));\n\
         \x20   return select(vec4<f16>(0.0), x_load_h((min(s, params.in_slices - 1u) * params.in_h + y) * params.in_w + x), inside);\n\
         }\n"
    } else {
        "fn x_at(q: u32, p: u32) -> vec4<f16> {\n\
         \x20   return select(vec4<f16>(0.0), x_load_h(min(q, params.in_slices - 1u) * params.pixels + p), q < params.in_slices);\n\
         }\n"
    }
}

/// The generated tile loop: this thread's share of the cooperative loads, the accumulators
/// `c_i_j` (pixel fragment `i`, channel fragment `j` of the subgroup), the K loop (loads of the
/// next tile into registers, the matrix products of this one from work-group memory, then the
/// stores of the next between two barriers) and the epilogue, one accumulator at a time through
/// the subgroup's scratch.
fn tile_loop(tile: CoopTile, windowed: bool) -> String {
    let xq = tile.pixels() * tile.ks() / tile.threads();
    let wq = tile.kt * tile.slices() / tile.threads();
    let k = if windowed { "k_slices" } else { "in_slices" };
    let mut s = format!(
        "// Generated (src/ops/conv_coop.rs): the x loader and the tile loop of one work group.\n\
         {}\
         fn conv_tile(p0: u32, o0: u32, lid: u32) {{\n\
         \x20   let sg = lid / 32u;\n\
         \x20   let lane = lid % 32u;\n\
         \x20   let wm = sg % WM;\n\
         \x20   let wn = sg / WM;\n\
         \x20   let nt = (params.{k} + KS - 1u) / KS;\n\
         \x20   let rows = params.{k} * 4u;\n",
        x_loader(windowed)
    );
    for q in 0..xq {
        let _ = writeln!(
            s,
            "    let xe_{q} = lid + {off}u;\n\
             \x20   let xk_{q} = xe_{q} / BM;\n\
             \x20   let xm_{q} = xe_{q} % BM;\n\
             \x20   let xp_{q} = min(p0 + xm_{q}, params.pixels - 1u);\n\
             \x20   var xv_{q} = vec4<f16>(0.0);",
            off = q * tile.threads()
        );
    }
    for q in 0..wq {
        let _ = writeln!(
            s,
            "    let we_{q} = lid + {off}u;\n\
             \x20   let wr_{q} = we_{q} / BNS;\n\
             \x20   let wn_{q} = we_{q} % BNS;\n\
             \x20   let wo_{q} = min(o0 + wn_{q}, params.out_slices - 1u);\n\
             \x20   var wv_{q} = vec4<f16>(0.0);",
            off = q * tile.threads()
        );
    }
    let load = |s: &mut String, k: &str, ind: &str| {
        for q in 0..xq {
            let _ = writeln!(
                s,
                "{ind}let xi_{q} = {k} + xk_{q};\n\
                 {ind}xv_{q} = x_at(xi_{q}, xp_{q});"
            );
        }
        for q in 0..wq {
            let _ = writeln!(
                s,
                "{ind}let wi_{q} = {k} * 4u + wr_{q};\n\
                 {ind}wv_{q} = select(vec4<f16>(0.0), w_load_h(min(wi_{q}, rows - 1u) * params.out_slices + wo_{q}), wi_{q} < rows);"
            );
        }
    };
    let store = |s: &mut String, ind: &str| {
        for q in 0..xq {
            let _ = writeln!(s, "{ind}put_x(xm_{q}, xk_{q}, xv_{q});");
        }
        for q in 0..wq {
            let _ = writeln!(s, "{ind}put_w(wr_{q}, wn_{q}, wv_{q});");
        }
    };
    for i in 0..tile.fm {
        for j in 0..tile.fn_ {
            let _ = writeln!(s, "    var c_{i}_{j} = coop_mat16x16<f32, C>();");
        }
    }
    s.push_str("    // The first K tile.\n    {\n");
    load(&mut s, "0u", "        ");
    store(&mut s, "        ");
    s.push_str("    }\n    workgroupBarrier();\n");
    s.push_str(
        "    for (var t = 0u; t < nt; t++) {\n\
         \x20       // The next K tile's loads (zeros past the end), issued before this one's products.\n\
         \x20       let kn = (t + 1u) * KS;\n",
    );
    load(&mut s, "kn", "        ");
    k_tile_products(&mut s, tile);
    s.push_str("        workgroupBarrier();\n");
    store(&mut s, "        ");
    s.push_str("        workgroupBarrier();\n    }\n    let sc = sg * 16u * CS;\n");
    drain_accumulators(&mut s, tile);
    s.push_str("}\n");
    s
}

/// The matrix products of one K tile from work-group memory: per 16-deep step `kk`, the
/// subgroup's A fragments of pixels, B fragments of channels, and their products accumulated.
fn k_tile_products(s: &mut String, tile: CoopTile) {
    for kk in 0..tile.kt / 16 {
        for i in 0..tile.fm {
            let _ = writeln!(
                s,
                "        let a_{kk}_{i} = coopLoadT<coop_mat16x16<f16, A>>(&xs[(wm * {fm}u + {i}u) * 16u * XS + {k}u], XS);",
                fm = tile.fm,
                k = 16 * kk
            );
        }
        for j in 0..tile.fn_ {
            let _ = writeln!(
                s,
                "        let b_{kk}_{j} = coopLoadT<coop_mat16x16<f16, B>>(&ws[{k}u * WS + (wn * {fnn}u + {j}u) * 16u], WS);",
                fnn = tile.fn_,
                k = 16 * kk
            );
        }
        for i in 0..tile.fm {
            for j in 0..tile.fn_ {
                let _ = writeln!(
                    s,
                    "        c_{i}_{j} = coopMultiplyAdd(a_{kk}_{i}, b_{kk}_{j}, c_{i}_{j});"
                );
            }
        }
    }
}

/// The epilogue: each accumulator through the subgroup's scratch (`drain`), between barriers.
fn drain_accumulators(s: &mut String, tile: CoopTile) {
    for i in 0..tile.fm {
        for j in 0..tile.fn_ {
            let _ = writeln!(
                s,
                "    coopStoreT(c_{i}_{j}, &cs[sc], CS);\n\
             \x20   workgroupBarrier();\n\
             \x20   drain(sc, lane, p0 + (wm * {fm}u + {i}u) * 16u, o0 + (wn * {fnn}u + {j}u) * 4u);\n\
             \x20   workgroupBarrier();",
                fm = tile.fm,
                fnn = tile.fn_
            );
        }
    }
}

/// Source of the cooperative-matrix convolution for `tile`, 1x1 (parameters
/// `GpuConv1x1Params`) or `windowed` (`GpuConvCoopParams`): f16 x and w (the only precision
/// it reads), any output and residual precision.
pub fn source(
    w: Precision,
    y: Precision,
    tile: CoopTile,
    epilogue: EpilogueDecl,
    windowed: bool,
) -> KernelSource {
    let k = KernelSource {
        consts: vec![
            ("TG", tile.threads()),
            ("WM", tile.wm),
            ("WN", tile.wn),
            ("FM", tile.fm),
            ("FN", tile.fn_),
            ("KT", tile.kt),
            ("KS", tile.ks()),
            ("BM", tile.pixels()),
            ("BN", tile.channels()),
            ("BNS", tile.slices()),
            ("XS", tile.x_stride()),
            ("WS", tile.w_stride()),
            ("CS", CoopTile::SCRATCH_STRIDE),
        ],
        epilogue,
        extra: tile_loop(tile, windowed),
        // xs and ws are stored before the barrier preceding their reads, the scratch by the
        // subgroup before the barrier preceding its reads.
        zero_init_workgroup: false,
        coop_matrix: true,
        ..KernelSource::new(
            "conv_coop",
            vec![
                BindingDecl::read("x", Precision::F16),
                BindingDecl::read("w", w),
                BindingDecl::read("bias", Precision::F32),
                BindingDecl::write("y", y),
            ],
        )
    };
    match windowed {
        true => k.with_params::<GpuConvCoopParams>(),
        false => k.with_params::<GpuConv1x1Params>(),
    }
}

/// Filter `[co, kh, kw, ci]` as the K x N matrix of the windowed kernel: row
/// `(tap * in_slices + slice) * 4 + lane` (taps `ky * kw + kx`) of `out_slices` vec4s (output
/// lanes), zero-padded; for a 1x1 filter, [`super::conv1x1_tiled::transform_filter`].
pub fn transform_filter(f: &[f32], co: usize, kh: usize, kw: usize, ci: usize) -> Vec<f32> {
    let (os, is) = (co.div_ceil(4), ci.div_ceil(4));
    let mut out = vec![0.0; kh * kw * is * 4 * os * 4];
    for o in 0..co {
        for t in 0..kh * kw {
            for i in 0..ci {
                let row = t * is * 4 + i;
                out[(row * os + o / 4) * 4 + o % 4] = f[(o * kh * kw + t) * ci + i];
            }
        }
    }
    out
}

/// Every tile with representative epilogues, for the catalogue (naga validates them without a
/// device); only in f16 (the kernel reads f16), also one writing an f32 graph output.
pub fn catalogue(p: Precision) -> Vec<KernelSource> {
    if p != Precision::F16 {
        return Vec::new();
    }
    let mut out: Vec<KernelSource> = EpilogueDecl::representative(p)
        .into_iter()
        .zip(COOP_TILES.into_iter().cycle())
        .enumerate()
        .map(|(i, (ep, tile))| source(p, p, tile, ep, i % 2 == 1))
        .collect();
    out.push(source(
        p,
        Precision::F32,
        COOP_64X64,
        EpilogueDecl::NONE,
        false,
    ));
    out.push(source(
        p,
        Precision::F32,
        COOP_64X64,
        EpilogueDecl::NONE,
        true,
    ));
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn windowed_filter_of_a_1x1_is_the_tiled_one() {
        let f: Vec<f32> = (0..5 * 7).map(|v| v as f32).collect();
        assert_eq!(
            super::transform_filter(&f, 5, 1, 1, 7),
            super::super::conv1x1_tiled::transform_filter(&f, 5, 7)
        );
        // 2 taps (1x2), ci = 1, co = 1: rows 0 (tap 0) and 4 (tap 1).
        let t = super::transform_filter(&[3.0, 4.0], 1, 1, 2, 1);
        assert_eq!(t.len(), 2 * 4 * 4);
        assert_eq!((t[0], t[16]), (3.0, 4.0));
    }
}
