//! MediaPipe's `Landmarks2TransformMatrix` (version 2) on the GPU, with the semantics of the CPU
//! reference: `shaders/landmarks_to_transform.wgsl`, one thread building the 4×4 matrix (the
//! subset indices are a constant buffer of f32 integers). The matrix is stored in f32 whatever
//! the model's precision (see `crate::storage`): a matrix `[1, 4, 4]` has the PHWC4 geometry
//! `H = 1, W = 4, C = 4`, row `r` being vec4 `r`.

use heimdall_ir::Landmarks2TransformMatrixAttrs;

use crate::dispatch::{Dispatch, MATRIX, OpContext, Operand, u32_of};
use crate::params::shader_params;
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, KernelSource};

shader_params! {
    /// Uniform parameters of `shaders/landmarks_to_transform.wgsl`.
    struct GpuLandmarksToMatrixParams {
        count: u32,
        left: u32,
        right: u32,
        out_w: u32,
        out_h: u32,
        /// 1.0, unknown to the compiler (see the shader's `opaque`).
        one: f32,
        target_rotation: f32,
        scale_x: f32,
        scale_y: f32,
        /// -(out_w / 2) and -(out_h / 2), rounded to f32 on the host (as the reference does).
        neg_half_w: f32,
        neg_half_h: f32,
    }
}

/// Source of the landmarks-to-matrix kernel (`idx` is always f32).
pub fn source(lm: Precision, y: Precision) -> KernelSource {
    KernelSource::new(
        "landmarks_to_transform",
        vec![
            BindingDecl::read("lm", lm),
            BindingDecl::read("idx", Precision::F32),
            BindingDecl::write("y", y),
        ],
    )
    .with_params::<GpuLandmarksToMatrixParams>()
}

/// Builds a `Landmarks2TransformMatrix`.
pub fn build(
    ctx: &mut OpContext,
    a: &Landmarks2TransformMatrixAttrs,
) -> Result<Vec<Dispatch>, String> {
    let shape = ctx.in_shape(0)?;
    let [1, n, 3] = *shape else {
        return Err(format!("landmarks must be [1, N, 3], got {shape:?}"));
    };
    if ctx.out_geom()? != MATRIX {
        return Err(format!("output {:?} is not a 4×4 matrix", ctx.out_geom()?));
    }
    let in_range = |i: usize| i < n && i < 1 << 24;
    if a.subset_idxs.is_empty()
        || !a.subset_idxs.iter().all(|&i| in_range(i))
        || !in_range(a.left_rotation_idx)
        || !in_range(a.right_rotation_idx)
    {
        return Err(format!("landmark indices out of range for {n} landmarks"));
    }
    if a.output_width == 0 || a.output_height == 0 {
        return Err("empty output size".into());
    }
    let (lm_op, lm_p, _) = ctx.input_operand(0)?;
    // Indices as f32 integers (exact below 2^24), padded to whole vec4s.
    let mut idx: Vec<f32> = a.subset_idxs.iter().map(|&i| i as f32).collect();
    idx.resize(idx.len().next_multiple_of(4), 0.0);
    let idx_op = ctx.add_const("subset indices".into(), Precision::F32.encode(&idx));
    let p = GpuLandmarksToMatrixParams {
        count: u32_of(a.subset_idxs.len())?,
        left: u32_of(a.left_rotation_idx)?,
        right: u32_of(a.right_rotation_idx)?,
        out_w: u32_of(a.output_width)?,
        out_h: u32_of(a.output_height)?,
        one: 1.0,
        target_rotation: a.target_rotation_radians,
        scale_x: a.scale_x,
        scale_y: a.scale_y,
        neg_half_w: -((a.output_width as f64 / 2.0) as f32),
        neg_half_h: -((a.output_height as f64 / 2.0) as f32),
    };
    Ok(vec![Dispatch::new(
        source(lm_p, ctx.out_precision()?),
        &p,
        vec![lm_op, idx_op, Operand::Tensor(ctx.output()?)],
        1,
    )])
}

/// Every variant in precision `p` (the matrix in f32, or in `p` for the catalogue's sake), for
/// the catalogue.
pub fn catalogue(p: Precision) -> Vec<KernelSource> {
    vec![source(p, Precision::F32), source(p, p)]
}
