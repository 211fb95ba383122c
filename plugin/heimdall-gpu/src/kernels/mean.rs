//! MEAN over the height and/or width axes: an average pool whose window spans the reduced axes
//! (see [`super::pool`]); large windows use the work-group reduction.

use heimdall_ir::{Pad2d, PoolAttrs};

use super::{Dispatch, OpContext};

/// Builds a MEAN (axes within height and width of a 4-D input).
pub fn build(ctx: &mut OpContext, axes: &[usize]) -> Result<Vec<Dispatch>, String> {
    let rank = ctx.in_shape(0)?.len();
    let x = ctx.in_geom(0)?;
    let axes4: Vec<usize> = axes.iter().map(|a| a + 4 - rank).collect();
    if rank != 4 || axes4.iter().any(|&a| a != 1 && a != 2) {
        return Err(format!(
            "MEAN over axes {axes:?} of rank {rank}: only height/width are supported on the GPU"
        ));
    }
    let (rh, rw) = (axes4.contains(&1), axes4.contains(&2));
    let filter = [if rh { x.h } else { 1 }, if rw { x.w } else { 1 }];
    let attrs = PoolAttrs {
        filter,
        stride: [filter[0].max(1), filter[1].max(1)],
        pad: Pad2d::default(),
    };
    // The output keeps the non-reduced axes; a removed unit axis leaves the same PHWC4 order.
    let out = (if rh { 1 } else { x.h }, if rw { 1 } else { x.w });
    super::pool::build_window(ctx, &attrs, 1, out)
}
