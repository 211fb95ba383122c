//! A cached dispatch, and the CPU reference of `shaders/cache_tiles.wgsl`: which of its work
//! groups a run recomputes, for tests and tools.

use heimdall_ir::conv_cache::{BlockGrid, Field};

use crate::dispatch::TileMap;

/// A dispatch that keeps last run's values where its field is clean.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CachedDispatch {
    /// Its step (op index).
    pub step: usize,
    /// Its work groups.
    pub workgroups: u32,
    /// Which pixels each work group writes.
    pub tiles: TileMap,
    /// The output's receptive field on the input.
    pub field: Field,
    /// The output's height and width.
    pub out_hw: [u32; 2],
}

/// The work groups of `d` that a run recomputes under the dirty-block `mask` of `grid` over an
/// `in_hw` input: the CPU reference of `shaders/cache_tiles.wgsl`, for tests and tools.
pub fn dirty_workgroups(
    d: &CachedDispatch,
    grid: &BlockGrid,
    in_hw: [usize; 2],
    mask: &[bool],
) -> u32 {
    let [out_h, out_w] = [d.out_hw[0] as usize, d.out_hw[1] as usize];
    let dirty =
        |rows: [usize; 2], cols: [usize; 2]| grid.field_dirty(&d.field, rows, cols, in_hw, mask);
    let all_cols = [0, out_w - 1];
    (0..d.workgroups as usize)
        .filter(|&g| match d.tiles {
            TileMap::Rows { .. } => {
                let [threads, total, cb, bx] = d.tiles.words().map(|v| v as usize);
                let t0 = g * threads;
                let t1 = (t0 + threads).min(total) - 1;
                let (y0, y1) = ((t0 / cb) % out_h, (t1 / cb) % out_h);
                let (z0, z1) = (t0 / cb / out_h, t1 / cb / out_h);
                if z0 == z1 && y0 == y1 {
                    dirty(
                        [y0, y0],
                        [(t0 % cb) * bx, ((t1 % cb) * bx + bx).min(out_w) - 1],
                    )
                } else if z0 == z1 {
                    dirty([y0, y1], all_cols)
                } else if z1 == z0 + 1 {
                    dirty([y0, out_h - 1], all_cols) || dirty([0, y1], all_cols)
                } else {
                    dirty([0, out_h - 1], all_cols)
                }
            }
            TileMap::PixelTiles { .. } => {
                let [pixel_tiles, tp, ..] = d.tiles.words().map(|v| v as usize);
                let p0 = (g % pixel_tiles) * tp;
                let p1 = (p0 + tp).min(out_h * out_w) - 1;
                let (y0, y1) = (p0 / out_w, p1 / out_w);
                if y0 == y1 {
                    dirty([y0, y0], [p0 % out_w, p1 % out_w])
                } else {
                    dirty([y0, y1], all_cols)
                }
            }
        })
        .count() as u32
}
