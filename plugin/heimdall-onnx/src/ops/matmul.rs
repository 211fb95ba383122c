//! `MatMul` and `Gemm` (a fully connected op when the right-hand side is constant), in the ONNX
//! layout.

use heimdall_ir::{BinaryFn, OpKind, TensorId};

use crate::attrs::Attrs;
use crate::constant::{Const, Elem};
use crate::ctx::Ctx;
use crate::error::{NodeResult, invalid};
use crate::proto::NodeProto;
use crate::value::{Layout, Value, native, permute, permute_const, reshape};

/// `MatMul` with NumPy semantics (1-D operands promoted).
pub(crate) fn matmul(cx: &mut Ctx, n: &NodeProto) -> NodeResult<Value> {
    let name = cx.out_name(n);
    let (a, b) = (cx.req(n, 0)?, cx.req(n, 1)?);
    let (sa, sb) = (cx.shape(&a), cx.shape(&b));
    if sa.is_empty() || sb.is_empty() {
        return invalid("MatMul of a scalar");
    }
    let a2 = if sa.len() == 1 {
        vec![1, sa[0]]
    } else {
        sa.clone()
    };
    let b2 = if sb.len() == 1 {
        vec![sb[0], 1]
    } else {
        sb.clone()
    };
    let mut out =
        heimdall_ir::ops::matmul::shape(&a2, &b2).map_err(crate::error::NodeError::Invalid)?;
    let aid = native(&mut cx.b, &a, &format!("{name}/a"))?;
    let aid = reshape(&mut cx.b, aid, a2.clone(), &format!("{name}/a2"))?;
    let id = match &b {
        Value::Const(c) if b2.len() == 2 => {
            // Constant [K, N] right-hand side: fully connected with weights [N, K].
            let w = permute_const(&Const::new(b2.clone(), c.values.clone(), c.elem), &[1, 0]);
            let wid =
                cx.b.constant(&format!("{name}/weights"), w.shape.clone(), w.as_f32())?;
            cx.b.op_shaped(OpKind::FullyConnected, vec![aid, wid], &name, out.clone())?
        }
        _ => {
            let bid = native(&mut cx.b, &b, &format!("{name}/b"))?;
            let bid = reshape(&mut cx.b, bid, b2.clone(), &format!("{name}/b2"))?;
            cx.b.op(OpKind::MatMul, vec![aid, bid], &name)?
        }
    };
    if sa.len() == 1 {
        out.remove(out.len() - 2);
    }
    if sb.len() == 1 {
        out.pop();
    }
    Ok(Ctx::tensor(
        reshape(&mut cx.b, id, out, &format!("{name}/out"))?,
        Layout::Native,
    ))
}

/// `Gemm`: `alpha * A' B' + beta * C`.
pub(crate) fn gemm(cx: &mut Ctx, n: &NodeProto) -> NodeResult<Value> {
    let at = Attrs::of(n);
    let name = cx.out_name(n);
    let (alpha, beta) = (
        at.float_or("alpha", 1.0) as f64,
        at.float_or("beta", 1.0) as f64,
    );
    let (ta, tb) = (at.int_or("transA", 0) != 0, at.int_or("transB", 0) != 0);
    let (a, b) = (cx.req(n, 0)?, cx.req(n, 1)?);
    let (sa, sb) = (cx.shape(&a), cx.shape(&b));
    if sa.len() != 2 || sb.len() != 2 {
        return invalid(format!("Gemm of {sa:?} and {sb:?}"));
    }
    let mut aid = native(&mut cx.b, &a, &format!("{name}/a"))?;
    if ta {
        aid = permute(&mut cx.b, aid, &[1, 0], &format!("{name}/at"))?;
    }
    let (m, k) = if ta { (sa[1], sa[0]) } else { (sa[0], sa[1]) };
    let nn = if tb { sb[0] } else { sb[1] };
    if (if tb { sb[1] } else { sb[0] }) != k {
        return invalid(format!("Gemm inner dimensions differ: {sa:?} x {sb:?}"));
    }
    let g = GemmShape {
        m,
        k,
        n: nn,
        tb,
        alpha,
        beta,
    };
    let c = cx.input(n, 2)?;
    let mut y: TensorId = match &b {
        Value::Const(bc) => {
            let (id, fused) = gemm_fc(cx, &name, aid, bc, c.as_ref(), &g)?;
            if fused || c.is_none() || beta == 0.0 {
                return Ok(Ctx::tensor(
                    reshape(&mut cx.b, id, vec![m, nn], &name)?,
                    Layout::Native,
                ));
            }
            id
        }
        _ => gemm_matmul(cx, &name, aid, &b, &g)?,
    };
    if let Some(cv) = c.filter(|_| beta != 0.0) {
        let cid = gemm_c(cx, &name, &cv, beta)?;
        y = cx.b.op(
            OpKind::Binary(BinaryFn::Add),
            vec![y, cid],
            &format!("{name}/sum"),
        )?;
    }
    Ok(Ctx::tensor(
        reshape(&mut cx.b, y, vec![m, nn], &name)?,
        Layout::Native,
    ))
}

/// The scalars and sizes of a `Gemm`: A' is `[m, k]`, B' `[k, n]` (B transposed if `tb`).
struct GemmShape {
    m: usize,
    k: usize,
    n: usize,
    tb: bool,
    alpha: f64,
    beta: f64,
}

/// `alpha * A' B'` of a `Gemm` with constant B (`bc`) as a fully connected op on `aid`
/// (weights `[n, k]` scaled by alpha), with `beta * C` as its bias where C is a constant
/// vector of `n`: the op's output and whether it took the bias.
fn gemm_fc(
    cx: &mut Ctx,
    name: &str,
    aid: TensorId,
    bc: &Const,
    c: Option<&Value>,
    g: &GemmShape,
) -> NodeResult<(TensorId, bool)> {
    let c_shape = c.map(|c| cx.shape(c));
    let bias_fits = c_shape
        .as_ref()
        .is_none_or(|s| s.iter().product::<usize>() == g.n && s.last() == Some(&g.n));
    // Weights [N, K] scaled by alpha.
    let w = if g.tb {
        bc.clone()
    } else {
        permute_const(bc, &[1, 0])
    };
    let wv: Vec<f32> = w.values.iter().map(|&v| (v * g.alpha) as f32).collect();
    let wid =
        cx.b.constant(&format!("{name}/weights"), vec![g.n, g.k], wv)?;
    let mut inputs = vec![aid, wid];
    if let (Some(Value::Const(cc)), true) = (c, bias_fits) {
        let bv: Vec<f32> = cc.values.iter().map(|&v| (v * g.beta) as f32).collect();
        inputs.push(cx.b.constant(&format!("{name}/bias"), vec![g.n], bv)?);
    }
    let fused = inputs.len() == 3;
    let id = cx.b.op_shaped(
        OpKind::FullyConnected,
        inputs,
        &format!("{name}/fc"),
        vec![g.m, g.n],
    )?;
    Ok((id, fused))
}

/// `alpha * A' B'` of a `Gemm` with a computed B (`b`): a matrix product of `aid` and B',
/// scaled unless alpha is 1.
fn gemm_matmul(
    cx: &mut Ctx,
    name: &str,
    aid: TensorId,
    b: &Value,
    g: &GemmShape,
) -> NodeResult<TensorId> {
    let mut bid = native(&mut cx.b, b, &format!("{name}/b"))?;
    if g.tb {
        bid = permute(&mut cx.b, bid, &[1, 0], &format!("{name}/bt"))?;
    }
    let mut id =
        cx.b.op(OpKind::MatMul, vec![aid, bid], &format!("{name}/mm"))?;
    if g.alpha != 1.0 {
        let s =
            cx.b.constant(&format!("{name}/alpha"), vec![], vec![g.alpha as f32])?;
        id = cx.b.op(
            OpKind::Binary(BinaryFn::Mul),
            vec![id, s],
            &format!("{name}/scaled"),
        )?;
    }
    Ok(id)
}

/// `beta * C` of a `Gemm` in the ONNX layout: a constant scaled at load, or a computed value
/// times beta unless beta is 1.
fn gemm_c(cx: &mut Ctx, name: &str, cv: &Value, beta: f64) -> NodeResult<TensorId> {
    Ok(match cv {
        Value::Const(cc) => {
            let scaled = Const::new(
                cc.shape.clone(),
                cc.values.iter().map(|&v| v * beta).collect(),
                Elem::Float,
            );
            native(&mut cx.b, &Value::Const(scaled), &format!("{name}/c"))?
        }
        v => {
            let id = native(&mut cx.b, v, &format!("{name}/c"))?;
            if beta == 1.0 {
                id
            } else {
                let s =
                    cx.b.constant(&format!("{name}/beta"), vec![], vec![beta as f32])?;
                cx.b.op(
                    OpKind::Binary(BinaryFn::Mul),
                    vec![id, s],
                    &format!("{name}/c_scaled"),
                )?
            }
        }
    })
}
