// transpose: ONNX Transpose of x (rank ≤ 4, right-aligned to 4 axes with the leading ones kept
//   in place): output axis i is input axis perm[i]. Output element with row-major flat index f is
//   decomposed by the output's 4-D shape into v, and reads x at c with c[perm[i]] = v[i].
// Layout: x, y in PHWC4 of their own shapes (batch 1).
// Threads: one thread per output vec4, gathering its 4 lanes; columns fastest, rows, slices.
// Bindings: 0 params, x (read), y (write).
// Params: `GpuTransposeParams` (heimdall-gpu src/ops/transpose.rs), declared by composition.

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
    var r = vec4<f32>(0.0);
    for (var j = 0u; j < 4u; j++) {
        let oc = s * 4u + j;
        if (oc >= params.y_c) {
            break;
        }
        var f = (oy * params.y_w + ox) * params.y_c + oc;
        var c: vec4<u32>;
        for (var k = 3; k >= 0; k--) {
            c[params.perm[k]] = f % params.out_dims[k];
            f = f / params.out_dims[k];
        }
        r[j] = x_load1((((c.w / 4u) * params.in_h + c.y) * params.in_w + c.z) * 4u + c.w % 4u);
    }
    y_store((s * params.y_h + oy) * params.y_w + ox, r);
}
