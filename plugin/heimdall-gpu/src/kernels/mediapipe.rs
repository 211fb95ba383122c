//! The MediaPipe custom ops (version 2) of face_landmark_with_attention, with the semantics of
//! the CPU reference (`heimdall_cpu::mediapipe`):
//!
//! * `Landmarks2TransformMatrix`: `shaders/landmarks_to_matrix.wgsl`, one thread building the
//!   4×4 matrix (the subset indices are a constant buffer of f32 integers).
//! * `TransformTensorBilinear`: `shaders/transform_tensor_bilinear.wgsl`, one thread per output
//!   vec4.
//! * `TransformLandmarks`: `shaders/transform_landmarks.wgsl`, one thread per landmark.
//!
//! A matrix `[1, 4, 4]` has the PHWC4 geometry `H = 1, W = 4, C = 4`: row `r` is vec4 `r`. The
//! matrices are stored in f32 whatever the model's precision (see `tensor_precisions` in
//! `model.rs`); a constant matrix input is uploaded in f32 too.

use bytemuck::{Pod, Zeroable};
use heimdall_ir::Landmarks2TransformMatrixAttrs;

use super::{Dispatch, OpContext, Operand, groups_for, u32_of};
use crate::layout::Phwc4;
use crate::precision::Precision;
use crate::shaders::{read, write};
use crate::wgsl::KernelSource;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct GpuLandmarksToMatrixParams {
    count: u32,
    left: u32,
    right: u32,
    out_w: u32,
    out_h: u32,
    one: f32,
    _pad: [u32; 2],
    target_rotation: f32,
    scale_x: f32,
    scale_y: f32,
    neg_half_w: f32,
    neg_half_h: f32,
    _pad_f: [f32; 3],
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct GpuTransformTensorParams {
    in_h: u32,
    in_w: u32,
    out_h: u32,
    out_w: u32,
    total: u32,
    one: f32,
    zero: f32,
    _pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct GpuTransformLandmarksParams {
    count: u32,
    one: f32,
    zero: f32,
    _pad: u32,
}

/// The geometry of a 4×4 matrix (`[1, 4, 4]`, `[4, 4]` or `[1, 1, 4, 4]`).
const MATRIX: Phwc4 = Phwc4 { h: 1, w: 4, c: 4 };

/// Source of the landmarks-to-matrix kernel (`idx` is always f32).
pub fn landmarks_to_matrix_source(lm: Precision, y: Precision) -> KernelSource {
    KernelSource::new(
        "landmarks_to_matrix",
        vec![read("lm", lm), read("idx", Precision::F32), write("y", y)],
    )
}

/// Source of the bilinear tensor-warp kernel.
pub fn transform_tensor_source(x: Precision, m: Precision, y: Precision) -> KernelSource {
    KernelSource::new(
        "transform_tensor_bilinear",
        vec![read("x", x), read("m", m), write("y", y)],
    )
}

/// Source of the landmark-transform kernel.
pub fn transform_landmarks_source(x: Precision, m: Precision, y: Precision) -> KernelSource {
    KernelSource::new(
        "transform_landmarks",
        vec![read("x", x), read("m", m), write("y", y)],
    )
}

/// The matrix input `i` as an operand: a tensor binds its slot in its own precision, a constant
/// is uploaded in f32 (not at the weights' precision: its translation column is in pixels).
fn matrix_operand(ctx: &mut OpContext, i: usize) -> Result<(Operand, Precision), String> {
    let g = ctx.in_geom(i)?;
    if g != MATRIX {
        return Err(format!(
            "the matrix input must be [1, 4, 4], got {:?}",
            ctx.in_shape(i)?
        ));
    }
    let id = ctx.op.inputs[i];
    if ctx.graph.tensor(id).constant.is_some() {
        let values = g.pack(ctx.constant(i)?);
        let op = ctx.add_const("matrix".into(), Precision::F32.encode(&values));
        Ok((op, Precision::F32))
    } else {
        Ok((Operand::Tensor(id), ctx.precisions[id.index()]))
    }
}

/// Builds a `Landmarks2TransformMatrix`.
pub fn build_landmarks_to_matrix(
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
        _pad: [0; 2],
        target_rotation: a.target_rotation_radians,
        scale_x: a.scale_x,
        scale_y: a.scale_y,
        neg_half_w: -((a.output_width as f64 / 2.0) as f32),
        neg_half_h: -((a.output_height as f64 / 2.0) as f32),
        _pad_f: [0.0; 3],
    };
    Ok(vec![Dispatch {
        source: landmarks_to_matrix_source(lm_p, ctx.out_precision()?),
        params: bytemuck::bytes_of(&p).to_vec(),
        operands: vec![lm_op, idx_op, Operand::Tensor(ctx.output()?)],
        workgroups: 1,
    }])
}

/// Builds a `TransformTensorBilinear` (the output size comes from the output's shape).
pub fn build_transform_tensor(ctx: &mut OpContext) -> Result<Vec<Dispatch>, String> {
    let x = ctx.in_geom(0)?;
    let y = ctx.out_geom()?;
    if ctx.in_shape(0)?.len() != 4 || x.c != y.c || x.h == 0 || x.w == 0 {
        return Err(format!("transform of {x:?} to {y:?}"));
    }
    let (x_op, xp, _) = ctx.input_operand(0)?;
    let (m_op, mp) = matrix_operand(ctx, 1)?;
    let total = y.vec4s();
    let p = GpuTransformTensorParams {
        in_h: u32_of(x.h)?,
        in_w: u32_of(x.w)?,
        out_h: u32_of(y.h)?,
        out_w: u32_of(y.w)?,
        total: u32_of(total)?,
        one: 1.0,
        zero: 0.0,
        _pad: 0,
    };
    Ok(vec![Dispatch {
        source: transform_tensor_source(xp, mp, ctx.out_precision()?),
        params: bytemuck::bytes_of(&p).to_vec(),
        operands: vec![x_op, m_op, Operand::Tensor(ctx.output()?)],
        workgroups: groups_for(total),
    }])
}

/// Builds a `TransformLandmarks`.
pub fn build_transform_landmarks(ctx: &mut OpContext) -> Result<Vec<Dispatch>, String> {
    let shape = ctx.in_shape(0)?;
    let [1, n, 2 | 3] = *shape else {
        return Err(format!("landmarks must be [1, N, 2|3], got {shape:?}"));
    };
    if ctx.out_geom()? != ctx.in_geom(0)? {
        return Err(format!(
            "output {:?} differs from the landmarks {shape:?}",
            ctx.out_geom()?
        ));
    }
    let (x_op, xp, _) = ctx.input_operand(0)?;
    let (m_op, mp) = matrix_operand(ctx, 1)?;
    let p = GpuTransformLandmarksParams {
        count: u32_of(n)?,
        one: 1.0,
        zero: 0.0,
        _pad: 0,
    };
    Ok(vec![Dispatch {
        source: transform_landmarks_source(xp, mp, ctx.out_precision()?),
        params: bytemuck::bytes_of(&p).to_vec(),
        operands: vec![x_op, m_op, Operand::Tensor(ctx.output()?)],
        workgroups: groups_for(n),
    }])
}

/// Every variant the backend can compose for precision `p` (matrices in f32, and in `p` for a
/// matrix produced elsewhere), for the naga validation test.
pub fn catalogue(p: Precision) -> Vec<KernelSource> {
    let mut out = vec![landmarks_to_matrix_source(p, Precision::F32)];
    for m in [Precision::F32, p] {
        out.push(transform_tensor_source(p, m, p));
        out.push(transform_landmarks_source(p, m, p));
    }
    out.push(landmarks_to_matrix_source(p, p));
    out
}
