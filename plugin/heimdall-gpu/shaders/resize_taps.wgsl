// resize_taps: ONNX Resize of x [1, H, W, C] (nearest, linear or cubic, any coordinate
//   transformation) from per-axis taps resolved on the host by the IR's coordinate arithmetic
//   (heimdall_ir::ops::resize, which the CPU backend uses too), so both backends read the same
//   source positions.
//   CUBIC = 0: two taps per axis, y = lerp(lerp(x[r0,c0], x[r0,c1], wc), lerp(x[r1,c0], x[r1,c1],
//   wc), wr) (nearest: both taps equal, weight 0). CUBIC = 1: four taps per axis,
//   y = sum_ky wr[ky] * sum_kx wc[kx] * x[r[ky], c[kx]], in the CPU reference's order.
// Layout: x, y in PHWC4; taps (f32) hold two vec4 per output row, then two per output column:
//   input indices (as floats, exact below 2^24) and weights.
// Threads: one thread per output vec4; columns fastest, then rows, then slices.
// Bindings: 0 params, x (read), taps (read), y (write).
// Params: `GpuResizeTapsParams` (heimdall-gpu src/ops/resize.rs), declared by composition.

fn at(s: u32, y: f32, x: f32) -> vec4<f32> {
    return x_load((s * params.in_h + u32(y)) * params.in_w + u32(x));
}

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
    let ri = taps_load(2u * oy);
    let rw = taps_load(2u * oy + 1u);
    let ci = taps_load(2u * (params.out_h + ox));
    let cw = taps_load(2u * (params.out_h + ox) + 1u);
    var r = vec4<f32>(0.0);
    if (CUBIC == 0u) {
        let a = at(s, ri.x, ci.x);
        let b = at(s, ri.x, ci.y);
        let c = at(s, ri.y, ci.x);
        let d = at(s, ri.y, ci.y);
        let top = a + (b - a) * cw.x;
        let bottom = c + (d - c) * cw.x;
        r = top + (bottom - top) * rw.x;
    } else {
        for (var ky = 0u; ky < 4u; ky++) {
            var row = vec4<f32>(0.0);
            for (var kx = 0u; kx < 4u; kx++) {
                row += cw[kx] * at(s, ri[ky], ci[kx]);
            }
            r += rw[ky] * row;
        }
    }
    let i = (s * params.out_h + oy) * params.out_w + ox;
    y_store(i, keep_lanes(r, s, params.channels));
}
