//! The tiled 1x1 convolution (`shaders/conv1x1_tiled.wgsl`): a GEMM whose work groups stage
//! K tiles of both operands in work-group memory (double-buffered) and give each thread a
//! register tile of `TM` pixels x `TN` output slices. Used on NVIDIA GPUs for layers large
//! enough ([`choose_tile`], [`crate::context::Tuning::conv1x1_tiles`]); small grids keep the
//! blocked and split-reduction kernels of [`super::conv`]. Measurements: `docs/gpu.md`, "The
//! tiled 1x1 convolution".

use std::fmt::Write as _;

use crate::context::Tuning;
use crate::ops::conv1x1_params::GpuConv1x1Params;
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, EpilogueDecl, KernelSource};

pub use crate::tiles::{Conv1x1Tile, TILE_64X64, TILE_128X64, TILE_128X128, TILES};

/// The tile a 1x1 conv of `pixels` pixels, `in_slices` input and `out_slices` output slices
/// takes under `t`, or `None` to keep the other kernels. A tile of [`Tuning::conv1x1_tiles`]
/// qualifies if it fits the device's work groups, its output slices are at least half used
/// (`2 * out_slices >= tile slices`) and its grid keeps at least
/// [`Tuning::conv1x1_tiled_min_threads`] threads; of those, the one that pads the output slices
/// least, the first (largest) on a tie. The reduction needs at least
/// [`Tuning::conv1x1_tiled_min_slices`] input slices.
pub fn choose_tile(
    t: &Tuning,
    pixels: usize,
    in_slices: usize,
    out_slices: usize,
) -> Option<Conv1x1Tile> {
    if in_slices < t.conv1x1_tiled_min_slices.max(1) || pixels == 0 {
        return None;
    }
    let padded = |tile: &Conv1x1Tile| out_slices.next_multiple_of(tile.slices() as usize);
    t.conv1x1_tiles
        .iter()
        .copied()
        .filter(|tile| {
            let groups = pixels.div_ceil(tile.pixels() as usize)
                * out_slices.div_ceil(tile.slices() as usize);
            tile.fits(t.max_workgroup, t.max_workgroup_storage)
                && 2 * out_slices >= tile.slices() as usize
                && groups * tile.threads() as usize >= t.conv1x1_tiled_min_threads
        })
        .min_by_key(padded)
}

/// Filter `[co, 1, 1, ci]` to `[in_slice][in_lane][out_slice]` vec4 (output lanes), zero-padded:
/// row `i` (input channel) of the K x N matrix is `out_slices` consecutive vec4s.
pub fn transform_filter(f: &[f32], co: usize, ci: usize) -> Vec<f32> {
    let (os, is) = (co.div_ceil(4), ci.div_ceil(4));
    let mut out = vec![0.0; is * 4 * os * 4];
    for o in 0..co {
        for i in 0..ci {
            out[(i * os + o / 4) * 4 + o % 4] = f[o * ci + i];
        }
    }
    out
}

/// The generated tile loop of `shaders/conv1x1_tiled.wgsl`: this thread's share of the
/// cooperative loads (indices hoisted out of the loop), the named accumulators `a_b_j` (output
/// slice `b * GY + ty`, pixel `j * GX + tx`), the double-buffered K loop (loads of the next
/// tile, the FMAs of this one from work-group memory, the stores of the next, one barrier),
/// then the stores through the epilogue.
fn tile_loop(tile: Conv1x1Tile) -> String {
    let Conv1x1Tile { tm, tn, bks, .. } = tile;
    let xq = bks * tile.pixels() / tile.threads();
    let wq = 4 * bks * tile.slices() / tile.threads();
    let mut s = String::from(
        "// Generated (src/ops/conv1x1_tiled.rs): the tile loop of one work group.\n\
         fn conv_tile(p0: u32, o0: u32, lid: u32) {\n\
         \x20   let tx = lid % GX;\n\
         \x20   let ty = lid / GX;\n\
         \x20   let nt = (params.in_slices + BKS - 1u) / BKS;\n\
         \x20   let rows = params.in_slices * 4u;\n",
    );
    // This thread's loads: x element e = lid + q * TG of the tile is slice e / BM, pixel e % BM;
    // w element e is row e / BNS, output slice e % BNS (consecutive threads, consecutive vec4s).
    for q in 0..xq {
        let _ = writeln!(
            s,
            "    let xe_{q} = lid + {off}u;\n\
             \x20   let xk_{q} = xe_{q} / BM;\n\
             \x20   let xm_{q} = xe_{q} % BM;\n\
             \x20   let xp_{q} = min(p0 + xm_{q}, params.pixels - 1u);\n\
             \x20   let xj_{q} = xm_{q} / GX;\n\
             \x20   let xt_{q} = xm_{q} % GX;",
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
             \x20   let wb_{q} = wn_{q} / GY;\n\
             \x20   let wt_{q} = wn_{q} % GY;",
            off = q * tile.threads()
        );
    }
    // Loads of the K tile starting at input slice `k` into the staging registers.
    let load = |s: &mut String, k: &str, ind: &str| {
        for q in 0..xq {
            let _ = writeln!(
                s,
                "{ind}let xi_{q} = {k} + xk_{q};\n\
                 {ind}xv_{q} = select(vec4<f32>(0.0), x_load(min(xi_{q}, params.in_slices - 1u) * params.pixels + xp_{q}), xi_{q} < params.in_slices);"
            );
        }
        for q in 0..wq {
            let _ = writeln!(
                s,
                "{ind}let wi_{q} = {k} * 4u + wr_{q};\n\
                 {ind}wv_{q} = select(vec4<f32>(0.0), w_load(min(wi_{q}, rows - 1u) * params.out_slices + wo_{q}), wi_{q} < rows);"
            );
        }
    };
    let store = |s: &mut String, buf: &str, ind: &str| {
        for q in 0..xq {
            let _ = writeln!(s, "{ind}xs[{buf}][xk_{q}][xj_{q}][xt_{q}] = xv_{q};");
        }
        for q in 0..wq {
            let _ = writeln!(s, "{ind}ws[{buf}][wr_{q}][wb_{q}][wt_{q}] = wv_{q};");
        }
    };
    for q in 0..xq {
        let _ = writeln!(s, "    var xv_{q} = vec4<f32>(0.0);");
    }
    for q in 0..wq {
        let _ = writeln!(s, "    var wv_{q} = vec4<f32>(0.0);");
    }
    for b in 0..tn {
        for j in 0..tm {
            let _ = writeln!(s, "    var a_{b}_{j} = vec4<f32>(0.0);");
        }
    }
    s.push_str("    // The first K tile into buffer 0.\n    {\n");
    load(&mut s, "0u", "        ");
    store(&mut s, "0u", "        ");
    s.push_str("    }\n    workgroupBarrier();\n");
    s.push_str(
        "    for (var t = 0u; t < nt; t++) {\n\
         \x20       let cur = t & 1u;\n\
         \x20       // The next K tile's loads (zeros past the end), issued before this one's FMAs.\n\
         \x20       let kn = (t + 1u) * BKS;\n",
    );
    load(&mut s, "kn", "        ");
    k_tile_fmas(&mut s, tile);
    store(&mut s, "cur ^ 1u", "        ");
    s.push_str("        workgroupBarrier();\n    }\n");
    for b in 0..tn {
        for j in 0..tm {
            let _ = writeln!(
                s,
                "    store_out(p0 + {j}u * GX + tx, o0 + {b}u * GY + ty, a_{b}_{j});"
            );
        }
    }
    s.push_str("}\n");
    s
}

/// The FMAs of one K tile from work-group memory buffer `cur`: per input slice `k` of the tile,
/// the thread's pixels' x values and each lane's weights of its output slices, accumulated.
fn k_tile_fmas(s: &mut String, tile: Conv1x1Tile) {
    let Conv1x1Tile { tm, tn, bks, .. } = tile;
    let lanes = ["x", "y", "z", "w"];
    for k in 0..bks {
        for j in 0..tm {
            let _ = writeln!(s, "        let x_{k}_{j} = xs[cur][{k}][{j}][tx];");
        }
        for (l, lane) in lanes.iter().enumerate() {
            for b in 0..tn {
                let _ = writeln!(
                    s,
                    "        let w_{k}_{l}_{b} = ws[cur][{r}][{b}][ty];",
                    r = 4 * k + l as u32
                );
            }
            for b in 0..tn {
                for j in 0..tm {
                    let _ = writeln!(
                        s,
                        "        a_{b}_{j} = fma(w_{k}_{l}_{b}, vec4<f32>(x_{k}_{j}.{lane}), a_{b}_{j});"
                    );
                }
            }
        }
    }
}

/// Source of the tiled 1x1 kernel for `tile` (f32 arithmetic; any storage precision).
pub fn source(
    x: Precision,
    w: Precision,
    y: Precision,
    tile: Conv1x1Tile,
    epilogue: EpilogueDecl,
) -> KernelSource {
    KernelSource {
        consts: vec![
            ("TG", tile.threads()),
            ("GX", tile.gx),
            ("GY", tile.gy),
            ("TM", tile.tm),
            ("TN", tile.tn),
            ("BKS", tile.bks),
            ("BKR", 4 * tile.bks),
            ("BM", tile.pixels()),
            ("BNS", tile.slices()),
        ],
        epilogue,
        extra: tile_loop(tile),
        // Every element of both buffers is stored before the barrier that precedes its reads:
        // the pipeline need not zero them (H100: 0.0650 vs 0.0657 ms on the probe's layer).
        zero_init_workgroup: false,
        ..KernelSource::new(
            "conv1x1_tiled",
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

/// Every tile with representative epilogues in precision `p`, for the catalogue; in f16, also
/// an f16 kernel writing an f32 graph output.
pub fn catalogue(p: Precision) -> Vec<KernelSource> {
    let mut out: Vec<KernelSource> = EpilogueDecl::representative(p)
        .into_iter()
        .zip(TILES.into_iter().cycle())
        .map(|(ep, tile)| source(p, p, p, tile, ep))
        .collect();
    if p == Precision::F16 {
        out.push(source(
            Precision::F16,
            Precision::F16,
            Precision::F32,
            TILE_128X128,
            EpilogueDecl::NONE,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_fit_webgpu_default_limits() {
        let l = wgpu::Limits::default();
        for t in TILES {
            assert!(
                t.fits(
                    l.max_compute_invocations_per_workgroup,
                    l.max_compute_workgroup_storage_size
                ),
                "{t}"
            );
            assert_eq!(Conv1x1Tile::parse(&t.name()), Some(t));
            let counts = format!("{},{},{},{},{}", t.tm, t.tn, t.gx, t.gy, t.bks);
            assert_eq!(Conv1x1Tile::parse_counts(&counts), Some(t));
        }
        assert_eq!(TILE_128X128.storage_bytes(), 16384);
        assert!(!TILE_128X128.fits(128, 16384));
        assert_eq!(Conv1x1Tile::parse_counts("8,2,16,16"), None);
        assert_eq!(Conv1x1Tile::parse_counts("9,2,16,16,2"), None);
    }

    #[test]
    fn filter_rows_are_contiguous_over_output_channels() {
        // co = 5 (2 slices), ci = 3 (1 slice): f[o][i] = 10 o + i.
        let f: Vec<f32> = (0..5)
            .flat_map(|o| (0..3).map(move |i| (10 * o + i) as f32))
            .collect();
        let t = transform_filter(&f, 5, 3);
        assert_eq!(t.len(), 4 * 2 * 4);
        // Row i = 1: channels 0..4 then 4 (and zero padding).
        assert_eq!(&t[8..16], &[1.0, 11.0, 21.0, 31.0, 41.0, 0.0, 0.0, 0.0]);
        // Row 3 (past ci) is zero.
        assert!(t[24..].iter().all(|&v| v == 0.0));
    }
}
