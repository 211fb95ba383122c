//! INSTANCE_NORM (ONNX `InstanceNormalization`): `shaders/instance_norm.wgsl` in three
//! dispatches — per-chunk statistics over the whole device, a per-slice merge, then the
//! normalisation — through a small f32 scratch buffer of the step; scale and bias may be
//! constants or run-time tensors; the normalisation applies the op's fused epilogue (the ReLU,
//! residual add or logistic after conditional instance normalisation's shift, which the passes
//! fold into the op).

use crate::dispatch::{Dispatch, OpContext, Operand, groups_for, u32_of};
use crate::params::shader_params;
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, EpilogueDecl, KernelSource};

/// Positions per statistics chunk (one work group of [`crate::wgsl::WORKGROUP_SIZE`] threads).
pub const CHUNK: u32 = 1024;

shader_params! {
    /// Uniform parameters of `shaders/instance_norm.wgsl` (every phase).
    struct GpuInstanceNormParams {
        h: u32,
        w: u32,
        channels: u32,
        slices: u32,
        epsilon: f32,
        chunks: u32,
        stats_base: u32,
        total: u32,
    }
}

/// The three dispatches of an instance normalisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Per-chunk statistics over the whole device.
    Statistics,
    /// Per-slice merge of the chunks' statistics.
    Merge,
    /// The normalisation itself.
    Normalise,
}

impl Phase {
    /// Every phase, in dispatch order.
    pub const ALL: [Phase; 3] = [Phase::Statistics, Phase::Merge, Phase::Normalise];

    /// The kernel's `PHASE` constant.
    fn code(self) -> u32 {
        match self {
            Phase::Statistics => 0,
            Phase::Merge => 1,
            Phase::Normalise => 2,
        }
    }
}

/// Source of phase `phase` of the instance norm kernel; `scale` and `bias` are the precisions
/// of those inputs when they are bound; `epilogue` is applied by the normalising phase (the
/// others take none). Bindings a phase does not use are stubs (see the shader's header).
pub fn source(
    phase: Phase,
    x: Precision,
    scale: Option<Precision>,
    bias: Option<Precision>,
    y: Precision,
    epilogue: EpilogueDecl,
) -> KernelSource {
    let stub = |name: &'static str| BindingDecl::stub(name, Precision::F32);
    let opt = |name: &'static str, p: Option<Precision>, used: bool| match p {
        Some(p) if used => BindingDecl::read(name, p),
        _ => stub(name),
    };
    let stats = BindingDecl::read_write("stats", Precision::F32);
    let (xb, yb, extra) = if phase == Phase::Normalise {
        (
            BindingDecl::read("x", x),
            BindingDecl::write("y", y),
            String::new(),
        )
    } else {
        let xb = if phase == Phase::Statistics {
            BindingDecl::read("x", x)
        } else {
            stub("x")
        };
        (
            xb,
            stub("y"),
            "fn y_store(i: u32, v: vec4<f32>) {}\n".to_string(),
        )
    };
    KernelSource {
        consts: vec![
            ("PHASE", phase.code()),
            ("CHUNK", CHUNK),
            ("HAS_SCALE", scale.is_some() as u32),
            ("HAS_BIAS", bias.is_some() as u32),
        ],
        extra,
        epilogue: if phase == Phase::Normalise {
            epilogue
        } else {
            EpilogueDecl::NONE
        },
        ..KernelSource::new(
            "instance_norm",
            vec![
                xb,
                opt("scale", scale, phase == Phase::Merge),
                opt("bias", bias, phase == Phase::Normalise),
                stats,
                yb,
            ],
        )
    }
    .with_params::<GpuInstanceNormParams>()
}

/// Builds an INSTANCE_NORM of `x [1,H,W,C]` with optional `scale [C]` and `bias [C]`.
pub fn build(ctx: &mut OpContext, epsilon: f32) -> Result<Vec<Dispatch>, String> {
    let x = ctx.in_geom(0)?;
    let y = ctx.out_geom()?;
    if x != y {
        return Err(format!("instance norm of {x:?} into {y:?}"));
    }
    let (x_op, xp, _) = ctx.input_operand(0)?;
    let mut side = [None, None];
    for (k, slot) in side.iter_mut().enumerate() {
        if ctx.op.inputs.len() > k + 1 {
            let (o, p, g) = ctx.input_operand(k + 1)?;
            if g.c != x.c || g.h != 1 || g.w != 1 {
                return Err(format!("input {} is {g:?}, expected [{}]", k + 1, x.c));
            }
            *slot = Some((o, p));
        }
    }
    let (scale, bias) = (side[0], side[1]);
    let slices = x.slices();
    let chunks = (x.h * x.w).div_ceil(CHUNK as usize);
    let stats_vec4s = 2 * slices * chunks + 2 * slices;
    let stats = ctx.add_const(
        "instance norm statistics (scratch)".into(),
        vec![0u8; 16 * stats_vec4s],
    );
    let p = GpuInstanceNormParams {
        h: u32_of(x.h)?,
        w: u32_of(x.w)?,
        channels: u32_of(x.c)?,
        slices: u32_of(slices)?,
        epsilon,
        chunks: u32_of(chunks)?,
        stats_base: u32_of(2 * slices * chunks)?,
        total: u32_of(x.vec4s())?,
    };
    let (sp, bp) = (scale.map(|s| s.1), bias.map(|b| b.1));
    let yp = ctx.out_precision()?;
    let out = Operand::Tensor(ctx.output()?);
    let (ep, ep_ops) = ctx.epilogue()?;
    let mut merge = Vec::new();
    merge.extend(scale.map(|s| s.0));
    merge.push(stats);
    let mut apply = vec![x_op];
    apply.extend(bias.map(|b| b.0));
    apply.extend([stats, out]);
    apply.extend(ep_ops);
    let none = EpilogueDecl::NONE;
    Ok(vec![
        Dispatch::new(
            source(Phase::Statistics, xp, sp, bp, yp, none),
            &p,
            vec![x_op, stats],
            u32_of(slices * chunks)?,
        ),
        Dispatch::new(
            source(Phase::Merge, xp, sp, bp, yp, none),
            &p,
            merge,
            groups_for(slices),
        ),
        Dispatch::new(
            source(Phase::Normalise, xp, sp, bp, yp, ep),
            &p,
            apply,
            groups_for(x.vec4s()),
        ),
    ])
}

/// Every phase in precision `p` with and without scale and bias (bound in `p` or f32), and the
/// normalisation with each representative epilogue, for the catalogue.
pub fn catalogue(p: Precision) -> Vec<KernelSource> {
    let mut out = Vec::new();
    for phase in Phase::ALL {
        for side in [None, Some(p), Some(Precision::F32)] {
            out.push(source(phase, p, side, side, p, EpilogueDecl::NONE));
        }
    }
    for ep in EpilogueDecl::representative(p) {
        out.push(source(Phase::Normalise, p, Some(p), Some(p), p, ep));
    }
    out
}
