//! Block rearrangements on the GPU: DEPTH_TO_SPACE in DCR order (TFLite) is
//! `shaders/depth_to_space.wgsl`; SPACE_TO_DEPTH and DEPTH_TO_SPACE in CRD order (ONNX
//! `mode="CRD"`) are `shaders/space_depth.wgsl`.

use heimdall_ir::BlockOrder;

use crate::dispatch::{Dispatch, OpContext, Operand, groups_for, u32_of};
use crate::params::shader_params;
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, KernelSource};

/// Builds a DEPTH_TO_SPACE in `order`.
pub fn build_depth_to_space(
    ctx: &mut OpContext,
    block: usize,
    order: BlockOrder,
) -> Result<Vec<Dispatch>, String> {
    match order {
        BlockOrder::Dcr => build_dcr(ctx, block),
        BlockOrder::Crd => build_rearrange(ctx, block, Rearrange::DepthToSpaceCrd),
    }
}

/// Builds a SPACE_TO_DEPTH.
pub fn build_space_to_depth(ctx: &mut OpContext, block: usize) -> Result<Vec<Dispatch>, String> {
    build_rearrange(ctx, block, Rearrange::SpaceToDepth)
}

shader_params! {
    /// Uniform parameters of `shaders/depth_to_space.wgsl`.
    struct GpuDepthToSpaceParams {
        in_h: u32,
        in_w: u32,
        out_h: u32,
        out_w: u32,
        out_c: u32,
        block: u32,
        total: u32,
    }
}

/// Source of the DCR depth-to-space kernel.
pub fn dcr_source(x: Precision, y: Precision) -> KernelSource {
    KernelSource::new(
        "depth_to_space",
        vec![BindingDecl::read("x", x), BindingDecl::write("y", y)],
    )
    .with_params::<GpuDepthToSpaceParams>()
}

/// Builds a DEPTH_TO_SPACE in DCR order.
fn build_dcr(ctx: &mut OpContext, block: usize) -> Result<Vec<Dispatch>, String> {
    let x = ctx.in_geom(0)?;
    let y = ctx.out_geom()?;
    if block == 0 || y.h != x.h * block || y.w != x.w * block || y.c * block * block != x.c {
        return Err(format!(
            "depth to space of {x:?} to {y:?} with block {block}"
        ));
    }
    let total = y.vec4s();
    let p = GpuDepthToSpaceParams {
        in_h: u32_of(x.h)?,
        in_w: u32_of(x.w)?,
        out_h: u32_of(y.h)?,
        out_w: u32_of(y.w)?,
        out_c: u32_of(y.c)?,
        block: u32_of(block)?,
        total: u32_of(total)?,
    };
    let xp = ctx.precisions[ctx.op.inputs[0].index()];
    Ok(vec![Dispatch::new(
        dcr_source(xp, ctx.out_precision()?),
        &p,
        vec![
            Operand::Tensor(ctx.op.inputs[0]),
            Operand::Tensor(ctx.output()?),
        ],
        groups_for(total),
    )])
}

shader_params! {
    /// Uniform parameters of `shaders/space_depth.wgsl`.
    struct GpuSpaceDepthParams {
        in_h: u32,
        in_w: u32,
        in_c: u32,
        block: u32,
        out_h: u32,
        out_w: u32,
        out_c: u32,
        total: u32,
    }
}

/// What `shaders/space_depth.wgsl` rearranges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rearrange {
    /// SPACE_TO_DEPTH.
    SpaceToDepth,
    /// DEPTH_TO_SPACE in CRD order.
    DepthToSpaceCrd,
}

/// Source of the space-to-depth / CRD depth-to-space kernel.
pub fn source(x: Precision, y: Precision, op: Rearrange) -> KernelSource {
    let crd = op == Rearrange::DepthToSpaceCrd;
    KernelSource {
        consts: vec![("CRD", crd as u32)],
        ..KernelSource::new(
            "space_depth",
            vec![BindingDecl::read("x", x), BindingDecl::write("y", y)],
        )
    }
    .with_params::<GpuSpaceDepthParams>()
}

/// Builds a SPACE_TO_DEPTH or a DEPTH_TO_SPACE in CRD order.
fn build_rearrange(
    ctx: &mut OpContext,
    block: usize,
    op: Rearrange,
) -> Result<Vec<Dispatch>, String> {
    let crd = op == Rearrange::DepthToSpaceCrd;
    let x = ctx.in_geom(0)?;
    let y = ctx.out_geom()?;
    let b = block;
    let ok = b > 0
        && if crd {
            x.c % (b * b) == 0 && y.h == x.h * b && y.w == x.w * b && y.c == x.c / (b * b)
        } else {
            x.h % b == 0 && x.w % b == 0 && y.h == x.h / b && y.w == x.w / b && y.c == x.c * b * b
        };
    if !ok {
        return Err(format!("block {b} from {x:?} to {y:?}"));
    }
    let (x_op, xp, _) = ctx.input_operand(0)?;
    let total = y.vec4s();
    let p = GpuSpaceDepthParams {
        in_h: u32_of(x.h)?,
        in_w: u32_of(x.w)?,
        in_c: u32_of(x.c)?,
        block: u32_of(b)?,
        out_h: u32_of(y.h)?,
        out_w: u32_of(y.w)?,
        out_c: u32_of(y.c)?,
        total: u32_of(total)?,
    };
    Ok(vec![Dispatch::new(
        source(xp, ctx.out_precision()?, op),
        &p,
        vec![x_op, Operand::Tensor(ctx.output()?)],
        groups_for(total),
    )])
}

/// Every variant in precision `p`, for the catalogue.
pub fn catalogue(p: Precision) -> Vec<KernelSource> {
    vec![
        dcr_source(p, p),
        source(p, p, Rearrange::SpaceToDepth),
        source(p, p, Rearrange::DepthToSpaceCrd),
    ]
}
