// reduce: reductions (ONNX ReduceSum, Max, Min, Prod, SumSquare, L1, L2, LogSum, LogSumExp,
//   Mean; FOLD 0..9 in that order; a mean over height and width runs as an average pool) of x
//   (rank ≤ 4, right-aligned to [1, H, W, C]) over any set of axes.
//   Output element with row-major flat index f is decomposed by the kept-dims shape `out_dims`
//   (reduced axes of size 1) into v; it folds x[v + u] over every u of the reduced box
//   `red_dims` (size 1 on kept axes), in row-major order, accumulating in f32.
// Layout: x in PHWC4 of its shape; y in PHWC4 of the output shape (with or without the reduced
//   axes: the flat order is the same).
// Threads: one thread per output vec4, folding its 4 lanes one after another; columns fastest,
//   then rows, then slices.
// Bindings: 0 params, x (read), y (write).
// Params: `GpuReduceParams` (heimdall-gpu src/ops/reduce.rs), declared by composition.

fn decompose(f: u32, d: vec4<u32>) -> vec4<u32> {
    var v: vec4<u32>;
    var r = f;
    for (var k = 3; k >= 0; k--) {
        v[k] = r % d[k];
        r = r / d[k];
    }
    return v;
}

fn fold(acc: f32, x: f32) -> f32 {
    switch FOLD {
        case 1u: { return max(acc, x); }
        case 2u: { return min(acc, x); }
        case 3u: { return acc * x; }
        case 4u, 6u: { return acc + x * x; }
        case 5u: { return acc + abs(x); }
        case 8u: { return acc + exp(x); }
        default: { return acc + x; }
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = linear_index(wg, nwg, lid);
    if (t >= params.total) {
        return;
    }
    let ox = t % params.y_w;
    let oy = (t / params.y_w) % params.y_h;
    let s = t / (params.y_w * params.y_h);
    let count = params.red_dims.x * params.red_dims.y * params.red_dims.z * params.red_dims.w;
    var r = vec4<f32>(0.0);
    for (var j = 0u; j < 4u; j++) {
        let oc = s * 4u + j;
        if (oc >= params.y_c) {
            break;
        }
        let v = decompose((oy * params.y_w + ox) * params.y_c + oc, params.out_dims);
        var acc = 0.0;
        if (FOLD == 3u) {
            acc = 1.0;
        }
        for (var q = 0u; q < count; q++) {
            let c = v + decompose(q, params.red_dims);
            let e = (((c.w / 4u) * params.in_h + c.y) * params.in_w + c.z) * 4u + c.w % 4u;
            let x = x_load1(e);
            if (q == 0u && (FOLD == 1u || FOLD == 2u)) {
                acc = x;
            } else {
                acc = fold(acc, x);
            }
        }
        if (FOLD == 6u) {
            acc = sqrt(acc);
        } else if (FOLD == 7u || FOLD == 8u) {
            acc = log(acc);
        } else if (FOLD == 9u) {
            acc = acc / f32(count);
        }
        r[j] = acc;
    }
    y_store((s * params.y_h + oy) * params.y_w + ox, r);
}
