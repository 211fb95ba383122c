//! `shaders/gather.wgsl`: a per-axis affine map from a virtual 4-D index space to the input (see
//! the shader's header), the copy behind RESHAPE, zero PAD, STRIDED_SLICE and CONCATENATION (a
//! [`Map`] each; a concatenation is one dispatch per input, every dispatch after the first
//! keeping the elements it does not own). Shared by the `reshape`, `pad`, `strided_slice` and
//! `concat` families.

use crate::dispatch::{Dispatch, OpContext, Operand, groups_for, u32_of};
use crate::params::shader_params;
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, KernelSource};

shader_params! {
    /// Uniform parameters of `shaders/gather.wgsl`.
    struct GpuGatherParams {
        dims: [u32; 4],
        lo: [i32; 4],
        count: [i32; 4],
        begin: [i32; 4],
        stride: [i32; 4],
        in_h: u32,
        in_w: u32,
        out_h: u32,
        out_w: u32,
        out_c: u32,
        total: u32,
    }
}

/// Source of the gather kernel; `keep` keeps elements outside the mapped region (the output is
/// read-write either way, so the kernel's `KEEP` branch always type-checks).
pub fn source(x: Precision, y: Precision, keep: bool) -> KernelSource {
    let out = BindingDecl::read_write("y", y);
    KernelSource {
        consts: vec![("KEEP", keep as u32)],
        ..KernelSource::new("gather", vec![BindingDecl::read("x", x), out])
    }
    .with_params::<GpuGatherParams>()
}

/// Both variants in precision `p`, for the catalogue.
pub fn catalogue(p: Precision) -> Vec<KernelSource> {
    [false, true].map(|keep| source(p, p, keep)).to_vec()
}

/// Where each output element of the virtual 4-D index space `dims` comes from: along axis `d`,
/// output index `o` in `lo[d]..lo[d] + count[d]` reads input index
/// `begin[d] + (o - lo[d]) * stride[d]`; elsewhere the output is zero (or kept).
pub struct Map {
    /// The virtual index space (the output's, or the input's for a reshape).
    pub dims: [usize; 4],
    /// First mapped index per axis.
    pub lo: [i64; 4],
    /// Mapped indices per axis.
    pub count: [usize; 4],
    /// Input index of the first mapped index per axis.
    pub begin: [i64; 4],
    /// Input step per mapped index per axis.
    pub stride: [i64; 4],
}

fn i32_of(v: i64) -> Result<i32, String> {
    i32::try_from(v).map_err(|_| format!("{v} does not fit in 32 bits"))
}

/// The dispatch copying input `input` of `ctx`'s op through `m` into its output (`keep`:
/// elements outside the map keep their value).
pub fn dispatch(ctx: &mut OpContext, input: usize, m: Map, keep: bool) -> Result<Dispatch, String> {
    let (x_op, xp, x) = ctx.input_operand(input)?;
    let y = ctx.out_geom()?;
    let total = y.vec4s();
    let p = GpuGatherParams {
        dims: [
            u32_of(m.dims[0])?,
            u32_of(m.dims[1])?,
            u32_of(m.dims[2])?,
            u32_of(m.dims[3])?,
        ],
        lo: [
            i32_of(m.lo[0])?,
            i32_of(m.lo[1])?,
            i32_of(m.lo[2])?,
            i32_of(m.lo[3])?,
        ],
        count: [
            i32_of(m.count[0] as i64)?,
            i32_of(m.count[1] as i64)?,
            i32_of(m.count[2] as i64)?,
            i32_of(m.count[3] as i64)?,
        ],
        begin: [
            i32_of(m.begin[0])?,
            i32_of(m.begin[1])?,
            i32_of(m.begin[2])?,
            i32_of(m.begin[3])?,
        ],
        stride: [
            i32_of(m.stride[0])?,
            i32_of(m.stride[1])?,
            i32_of(m.stride[2])?,
            i32_of(m.stride[3])?,
        ],
        in_h: u32_of(x.h)?,
        in_w: u32_of(x.w)?,
        out_h: u32_of(y.h)?,
        out_w: u32_of(y.w)?,
        out_c: u32_of(y.c)?,
        total: u32_of(total)?,
    };
    if m.dims.contains(&0) {
        return Err("empty tensor".into());
    }
    Ok(Dispatch::new(
        source(xp, ctx.out_precision()?, keep),
        &p,
        vec![x_op, Operand::Tensor(ctx.output()?)],
        groups_for(total),
    ))
}
