//! 1-D window ops (`Conv`, `ConvTranspose`, `MaxPool`, `AveragePool` on `[N, C, L]`) run as 2-D
//! ops on `[N, C, 1, L]`: the node is rewritten with a unit height, the result reshaped back.

use crate::constant::Const;
use crate::ctx::Ctx;
use crate::error::NodeResult;
use crate::proto::{AttributeProto, NodeProto};
use crate::value::{Layout, Value, native, reshape};

/// Whether `n` is a 1-D window op (its first input has rank 3).
pub(crate) fn is_1d(cx: &Ctx, n: &NodeProto) -> bool {
    matches!(cx.input(n, 0), Ok(Some(v)) if cx.shape(&v).len() == 3)
}

/// Inserts a unit height into a 1-D attribute list: `[k]` -> `[1, k]`, pads `[b, e]` ->
/// `[0, b, 0, e]`.
fn lift_attr(a: &AttributeProto) -> AttributeProto {
    let mut a = a.clone();
    let name = a.name.as_deref().unwrap_or("");
    a.ints = match (name, a.ints.as_slice()) {
        ("pads", [b, e]) => vec![0, *b, 0, *e],
        ("kernel_shape" | "strides" | "dilations", [k]) => vec![1, *k],
        ("output_padding", [k]) => vec![0, *k],
        ("output_shape", [k]) => vec![1, *k],
        (_, v) => v.to_vec(),
    };
    a
}

/// Runs `f` on the 2-D form of a 1-D node and returns its result as `[N, C', L']`.
pub(crate) fn lift(
    cx: &mut Ctx,
    n: &NodeProto,
    f: fn(&mut Ctx, &NodeProto) -> NodeResult<Value>,
) -> NodeResult<Value> {
    let name = cx.out_name(n);
    let mut lifted = n.clone();
    lifted.attribute = n.attribute.iter().map(lift_attr).collect();
    for i in 0..n.input.len() {
        let Some(v) = cx.input(n, i)? else { continue };
        let s = cx.shape(&v);
        // Data and weights get a unit height; biases stay as they are.
        let v4 = if s.len() == 3 {
            let s4 = vec![s[0], s[1], 1, s[2]];
            match &v {
                Value::Const(c) => Value::Const(Const::new(s4, c.values.clone(), c.elem)),
                t => {
                    let id = native(&mut cx.b, t, &format!("{name}/in{i}"))?;
                    Ctx::tensor(
                        reshape(&mut cx.b, id, s4, &format!("{name}/in{i}_2d"))?,
                        Layout::Native,
                    )
                }
            }
        } else {
            v
        };
        let key = format!("{name}/lifted_input_{i}");
        cx.values.insert(key.clone(), v4);
        lifted.input[i] = key;
    }
    let out = f(cx, &lifted)?;
    let s = cx.shape(&out);
    let id = native(&mut cx.b, &out, &format!("{name}/out"))?;
    let r = reshape(&mut cx.b, id, vec![s[0], s[1], s[3]], &name)?;
    Ok(Ctx::tensor(r, Layout::Native))
}
