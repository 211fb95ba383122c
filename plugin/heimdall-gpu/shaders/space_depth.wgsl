// space_depth: SPACE_TO_DEPTH (CRD = 0; output channel (i * b + j) * C + c of block position
//   (i, j)) and ONNX DepthToSpace in CRD order (CRD = 1; output (y * b + i, x * b + j, k) reads
//   input channel k * b * b + i * b + j at (y, x)), as the CPU reference. (TFLite's DCR
//   depth-to-space is depth_to_space.wgsl.)
// Layout: x, y in PHWC4 ([1, H, W, C], batch 1).
// Threads: one thread per output vec4, gathering its 4 lanes; columns fastest, rows, slices.
// Bindings: 0 params, x (read), y (write).
// Params: `GpuSpaceDepthParams` (heimdall-gpu src/ops/space_depth.rs), declared by composition.

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
    var r = vec4<f32>(0.0);
    for (var j = 0u; j < 4u; j++) {
        let oc = s * 4u + j;
        if (oc >= params.out_c) {
            break;
        }
        var iy: u32;
        var ix: u32;
        var ic: u32;
        if (CRD == 0u) {
            let ij = oc / params.in_c;
            iy = oy * b + ij / b;
            ix = ox * b + ij % b;
            ic = oc % params.in_c;
        } else {
            iy = oy / b;
            ix = ox / b;
            ic = oc * b * b + (oy % b) * b + ox % b;
        }
        r[j] = x_load1((((ic / 4u) * params.in_h + iy) * params.in_w + ix) * 4u + ic % 4u);
    }
    y_store((s * params.out_h + oy) * params.out_w + ox, r);
}
