// depth_to_space: TFLite DEPTH_TO_SPACE (DCR order):
//   y[y*B + by, x*B + bx, oc] = x[y, x, (by*B + bx) * OC + oc]
// Layout: x, y in PHWC4; element e of a PHWC4 tensor is lane e % 4 of vec4 e / 4.
// Threads: one thread per output vec4, gathering its 4 lanes; columns fastest, rows, slices.
// Bindings: 0 params, x (read), y (write).
// Params: `GpuDepthToSpaceParams` (heimdall-gpu src/ops/space_depth.rs), declared by composition.

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
    let b = params.block;
    let iy = oy / b;
    let ix = ox / b;
    let first = ((oy % b) * b + ox % b) * params.out_c;
    var r = vec4<f32>(0.0);
    for (var j = 0u; j < 4u; j++) {
        let oc = s * 4u + j;
        if (oc < params.out_c) {
            let ic = first + oc;
            r[j] = x_load1((((ic / 4u) * params.in_h + iy) * params.in_w + ix) * 4u + ic % 4u);
        }
    }
    y_store((s * params.out_h + oy) * params.out_w + ox, r);
}
