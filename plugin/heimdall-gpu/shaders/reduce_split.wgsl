// reduce_split: the reductions of `reduce.wgsl` (FOLD 0..9, the same order) for small outputs
//   with long reductions (a [26, 32] -> [32] sum of multistyle26: 8 output vec4s of 26 terms
//   each), where one thread per output vec4 leaves the GPU idle on one serial chain of loads.
//   One work group per output vec4: thread lid folds terms q = lid, lid + WG, ... of each of the
//   4 lanes from the fold's identity, then the work group combines its WG partial results in
//   work-group memory (a tree of barriers) and thread 0 finishes (sqrt, log, mean) and stores.
// Layout: as reduce.wgsl (x in PHWC4 of its shape, y in PHWC4 of the output shape).
// Threads: WG per work group, work groups folded into 2-D; work group g = output vec4 g
//   (columns fastest, then rows, then slices).
// Bindings: 0 params, x (read), y (write).
// Params: `GpuReduceParams` (heimdall-gpu src/ops/reduce.rs), declared by composition.

var<workgroup> part: array<vec4<f32>, WG>;

fn decompose(f: u32, d: vec4<u32>) -> vec4<u32> {
    var v: vec4<u32>;
    var r = f;
    for (var k = 3; k >= 0; k--) {
        v[k] = r % d[k];
        r = r / d[k];
    }
    return v;
}

// The identity of the fold: -max / +max f32 for Max / Min, 1 for Prod, else 0.
fn identity() -> f32 {
    switch FOLD {
        case 1u: { return -3.4028235e38; }
        case 2u: { return 3.4028235e38; }
        case 3u: { return 1.0; }
        default: { return 0.0; }
    }
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

// Combines two partial results (sums of the per-term values for the additive folds).
fn combine(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    switch FOLD {
        case 1u: { return max(a, b); }
        case 2u: { return min(a, b); }
        case 3u: { return a * b; }
        default: { return a + b; }
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = wg.x + wg.y * nwg.x;
    // Uniform across the work group, so the barriers below stay in uniform control flow.
    if (t >= params.total) {
        return;
    }
    let ox = t % params.y_w;
    let oy = (t / params.y_w) % params.y_h;
    let s = t / (params.y_w * params.y_h);
    let count = params.red_dims.x * params.red_dims.y * params.red_dims.z * params.red_dims.w;
    var r = vec4<f32>(identity());
    for (var j = 0u; j < 4u; j++) {
        let oc = s * 4u + j;
        if (oc >= params.y_c) {
            break;
        }
        let v = decompose((oy * params.y_w + ox) * params.y_c + oc, params.out_dims);
        var acc = identity();
        for (var q = lid; q < count; q += WG) {
            let c = v + decompose(q, params.red_dims);
            let e = (((c.w / 4u) * params.in_h + c.y) * params.in_w + c.z) * 4u + c.w % 4u;
            acc = fold(acc, x_load1(e));
        }
        r[j] = acc;
    }
    part[lid] = r;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h = h / 2u) {
        if (lid < h) {
            part[lid] = combine(part[lid], part[lid + h]);
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        var o = part[0];
        if (FOLD == 6u) {
            o = sqrt(o);
        } else if (FOLD == 7u || FOLD == 8u) {
            o = log(o);
        } else if (FOLD == 9u) {
            o = o / f32(count);
        }
        // Lanes past the channels stay zero (PHWC4 padding).
        let c = vec4<u32>(0u, 1u, 2u, 3u) + vec4<u32>(s * 4u);
        y_store(t, select(vec4<f32>(0.0), o, c < vec4<u32>(params.y_c)));
    }
}
