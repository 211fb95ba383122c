//! The 1x1 convolution on cooperative matrices (`shaders/conv1x1_coop.wgsl`): a GEMM whose work
//! groups stage K tiles of x and w as f16 in work-group memory and whose subgroups multiply
//! 16x16x16 fragments on the tensor cores with f32 accumulators. Chosen for f16 inputs and
//! weights where the device has cooperative matrices ([`crate::coop`]); measurements:
//! `docs/gpu.md`, "The 1x1 convolution on tensor cores".

use std::fmt::Write as _;

use crate::coop::{COOP_64X64, COOP_TILES, CoopTile};
use crate::ops::conv1x1_params::GpuConv1x1Params;
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, EpilogueDecl, KernelSource};

/// The generated tile loop: this thread's share of the cooperative loads, the accumulators
/// `c_i_j` (pixel fragment `i`, channel fragment `j` of the subgroup), the K loop (loads of the
/// next tile into registers, the matrix products of this one from work-group memory, then the
/// stores of the next between two barriers) and the epilogue, one accumulator at a time through
/// the subgroup's scratch.
fn tile_loop(tile: CoopTile) -> String {
    let xq = tile.pixels() * tile.ks() / tile.threads();
    let wq = tile.kt * tile.slices() / tile.threads();
    let mut s = String::from(
        "// Generated (src/ops/conv1x1_coop.rs): the tile loop of one work group.\n\
         fn conv_tile(p0: u32, o0: u32, lid: u32) {\n\
         \x20   let sg = lid / 32u;\n\
         \x20   let lane = lid % 32u;\n\
         \x20   let wm = sg % WM;\n\
         \x20   let wn = sg / WM;\n\
         \x20   let nt = (params.in_slices + KS - 1u) / KS;\n\
         \x20   let rows = params.in_slices * 4u;\n",
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
                 {ind}xv_{q} = select(vec4<f16>(0.0), x_load_h(min(xi_{q}, params.in_slices - 1u) * params.pixels + xp_{q}), xi_{q} < params.in_slices);"
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
    s.push_str("        workgroupBarrier();\n");
    store(&mut s, "        ");
    s.push_str("        workgroupBarrier();\n    }\n    let sc = sg * 16u * CS;\n");
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
    s.push_str("}\n");
    s
}

/// Source of the cooperative-matrix 1x1 kernel for `tile`: f16 x and w (the only precision it
/// reads), any output and residual precision.
pub fn source(w: Precision, y: Precision, tile: CoopTile, epilogue: EpilogueDecl) -> KernelSource {
    KernelSource {
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
        extra: tile_loop(tile),
        // xs and ws are stored before the barrier preceding their reads, the scratch by the
        // subgroup before the barrier preceding its reads.
        zero_init_workgroup: false,
        coop_matrix: true,
        ..KernelSource::new(
            "conv1x1_coop",
            vec![
                BindingDecl::read("x", Precision::F16),
                BindingDecl::read("w", w),
                BindingDecl::read("bias", Precision::F32),
                BindingDecl::write("y", y),
            ],
        )
    }
    .with_params::<GpuConv1x1Params>()
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
        .map(|(ep, tile)| source(p, p, tile, ep))
        .collect();
    out.push(source(p, Precision::F32, COOP_64X64, EpilogueDecl::NONE));
    out
}
