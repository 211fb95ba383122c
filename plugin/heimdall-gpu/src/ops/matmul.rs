//! MATMUL (ONNX `MatMul` of two tensors, batch broadcast): `shaders/matmul.wgsl`. Constant
//! right-hand sides are fully connected ops by the time they reach the backend; this kernel
//! takes constants too (uploaded in PHWC4).

use crate::dispatch::{Dispatch, OpContext, Operand, groups_for, u32_of};
use crate::params::shader_params;
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, KernelSource};

shader_params! {
    /// Uniform parameters of `shaders/matmul.wgsl`.
    struct GpuMatMulParams {
        m: u32,
        k: u32,
        n: u32,
        batch: u32,
        a_h: u32,
        b_h: u32,
        total: u32,
    }
}

/// Source of the matrix product kernel.
pub fn source(a: Precision, b: Precision, y: Precision) -> KernelSource {
    KernelSource::new(
        "matmul",
        vec![
            BindingDecl::read("a", a),
            BindingDecl::read("b", b),
            BindingDecl::write("y", y),
        ],
    )
    .with_params::<GpuMatMulParams>()
}

/// Builds a MATMUL `a [..., M, K] x b [..., K, N]` (ranks 2 to 4, batch axes broadcast).
pub fn build(ctx: &mut OpContext) -> Result<Vec<Dispatch>, String> {
    let (ra, rb) = (ctx.in_shape(0)?.len(), ctx.in_shape(1)?.len());
    if ra < 2 || rb < 2 {
        return Err(format!(
            "matmul of ranks {ra} and {rb}: the GPU needs ranks ≥ 2"
        ));
    }
    let (a_op, ap, a) = ctx.input_operand(0)?;
    let (b_op, bp, b) = ctx.input_operand(1)?;
    let y = ctx.out_geom()?;
    let bcast = |v: usize| v == y.h || v == 1;
    if a.c != b.w || y.w != a.w || y.c != b.c || !bcast(a.h) || !bcast(b.h) {
        return Err(format!("matmul of {a:?} and {b:?} into {y:?}"));
    }
    let total = y.vec4s();
    let p = GpuMatMulParams {
        m: u32_of(y.w)?,
        k: u32_of(a.c)?,
        n: u32_of(y.c)?,
        batch: u32_of(y.h)?,
        a_h: u32_of(a.h)?,
        b_h: u32_of(b.h)?,
        total: u32_of(total)?,
    };
    Ok(vec![Dispatch::new(
        source(ap, bp, ctx.out_precision()?),
        &p,
        vec![a_op, b_op, Operand::Tensor(ctx.output()?)],
        groups_for(total),
    )])
}

/// Every variant in precision `p`, for the catalogue.
pub fn catalogue(p: Precision) -> Vec<KernelSource> {
    vec![source(p, p, p)]
}
