// resize_bilinear: TFLite RESIZE_BILINEAR (align_corners or half_pixel_centers), with the same
//   source coordinates, clamping, weights and order of operations as the CPU reference.
// Layout: x, y in PHWC4; scale_h and scale_w are f32 bit patterns computed on the host.
// Threads: one thread per output vec4; columns fastest, then rows, then slices.
// Bindings: 0 params, x (read), y (write).
// Params: `GpuResizeParams` (heimdall-gpu src/ops/resize.rs), declared by composition.

fn source(v: u32, scale: f32) -> f32 {
    if (params.half_pixel != 0u) {
        return (f32(v) + 0.5) * scale - 0.5;
    }
    return f32(v) * scale;
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
    let fy = source(oy, bitcast<f32>(params.scale_h));
    let fx = source(ox, bitcast<f32>(params.scale_w));
    let y0 = u32(max(i32(floor(fy)), 0));
    let y1 = u32(max(min(i32(ceil(fy)), i32(params.in_h) - 1), 0));
    let x0 = u32(max(i32(floor(fx)), 0));
    let x1 = u32(max(min(i32(ceil(fx)), i32(params.in_w) - 1), 0));
    let dy = fy - f32(y0);
    let dx = fx - f32(x0);
    let base = s * params.in_h;
    let p00 = x_load((base + y0) * params.in_w + x0);
    let p10 = x_load((base + y1) * params.in_w + x0);
    let p01 = x_load((base + y0) * params.in_w + x1);
    let p11 = x_load((base + y1) * params.in_w + x1);
    let r = p00 * (1.0 - dy) * (1.0 - dx) + p10 * dy * (1.0 - dx) + p01 * (1.0 - dy) * dx
        + p11 * dy * dx;
    let i = (s * params.out_h + oy) * params.out_w + ox;
    y_store(i, keep_lanes(r, s, params.channels));
}
