// gather: generic data movement for RESHAPE, PAD, STRIDED_SLICE and one input of CONCATENATION.
//   Output element with flat (row-major NHWC) index f is decomposed by a virtual 4-D shape
//   `dims` into v; per axis d, t = v[d] - lo[d] must lie in [0, count[d]) and then the input
//   coordinate is begin[d] + t * stride[d]. Outside elements become 0 (KEEP = 0) or keep the
//   output's previous value (KEEP = 1: the later inputs of a concatenation).
//   RESHAPE: dims = input shape, identity map. PAD: dims = output shape, lo = padding before,
//   count = input shape. STRIDED_SLICE: dims = count, begin/stride of the slice. CONCATENATION:
//   dims = output shape, lo = the input's offset along the axis, count = the input's shape.
// Layout: x, y in PHWC4 of their own shapes; element e is lane e % 4 of vec4 e / 4.
// Threads: one thread per output vec4, gathering its 4 lanes; columns fastest, rows, slices.
// Bindings: 0 params, x (read), y (write, read_write when KEEP = 1).
// Params: `GpuGatherParams` (heimdall-gpu src/kernels/gather.rs), declared by composition.

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = linear_index(wg, nwg, lid);
    if (t >= params.total) {
        return;
    }
    let ox = t % params.out_w;
    let oy = (t / params.out_w) % params.out_h;
    let s = t / (params.out_w * params.out_h);
    let i = (s * params.out_h + oy) * params.out_w + ox;
    var r = vec4<f32>(0.0);
    if (KEEP == 1u) {
        r = y_load(i);
    }
    for (var j = 0u; j < 4u; j++) {
        let oc = s * 4u + j;
        if (oc >= params.out_c) {
            r[j] = 0.0;
            continue;
        }
        var f = (oy * params.out_w + ox) * params.out_c + oc;
        var v: vec4<i32>;
        for (var d = 3; d >= 0; d--) {
            v[d] = i32(f % params.dims[d]);
            f = f / params.dims[d];
        }
        let tv = v - params.lo;
        if (any(tv < vec4<i32>(0)) || any(tv >= params.count)) {
            if (KEEP == 0u) {
                r[j] = 0.0;
            }
            continue;
        }
        let c = vec4<u32>(params.begin + tv * params.stride);
        r[j] = x_load1((((c.w / 4u) * params.in_h + c.y) * params.in_w + c.z) * 4u + c.w % 4u);
    }
    y_store(i, r);
}
