// softmax: ONNX Softmax / LogSoftmax (LOG = 1) of x (rank ≤ 4, right-aligned to [1, H, W, C])
//   along one axis, as the CPU reference: m = max over the axis, s = sum of exp(x - m) in axis
//   order, y = exp(x - m) / s or (x - m) - log(s).
// Layout: x, y in PHWC4 of the same shape; `dims` is the right-aligned 4-D shape and `axis` the
//   axis in it.
// Threads: one thread per output vec4; each lane walks its own line along the axis (a line is
//   re-read by the threads of its other elements: fine for the short axes of classifier heads).
// Bindings: 0 params, x (read), y (write).
// Params: `GpuSoftmaxParams` (heimdall-gpu src/ops/softmax.rs), declared by composition.

fn element(v: vec4<u32>) -> u32 {
    return (((v.w / 4u) * params.h + v.y) * params.w + v.z) * 4u + v.w % 4u;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = linear_index(wg, nwg, lid);
    if (t >= params.total) {
        return;
    }
    let ox = t % params.w;
    let oy = (t / params.w) % params.h;
    let s = t / (params.w * params.h);
    let n = params.dims[params.axis];
    var r = vec4<f32>(0.0);
    for (var j = 0u; j < 4u; j++) {
        let oc = s * 4u + j;
        if (oc >= params.c) {
            break;
        }
        var v = vec4<u32>(0u, oy, ox, oc);
        let own = v[params.axis];
        var m = -3.4028235e38;
        for (var k = 0u; k < n; k++) {
            v[params.axis] = k;
            m = max(m, x_load1(element(v)));
        }
        var sum = 0.0;
        for (var k = 0u; k < n; k++) {
            v[params.axis] = k;
            sum += exp(x_load1(element(v)) - m);
        }
        v[params.axis] = own;
        let z = x_load1(element(v)) - m;
        if (LOG == 1u) {
            r[j] = z - log(sum);
        } else {
            r[j] = exp(z) / sum;
        }
    }
    y_store((s * params.h + oy) * params.w + ox, r);
}
