// pool: max (MODE 0) or average (MODE 1) pooling; padded positions are skipped (the average
//   divides by the number of valid positions), as TFLite.
//   y[oy, ox, c] = epilogue(reduce over valid (ky, kx) of x[oy*sh + ky - pt, ox*sw + kx - pl, c])
// Layout: x, y, res in PHWC4; accumulation in f32.
// Threads: one thread per output vec4; columns fastest, then rows, then slices.
// Bindings: 0 params, x (read), y (write), epilogue bindings.
// Params: `GpuPoolParams` (heimdall-gpu src/ops/pool.rs), declared by composition.

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
    var acc = vec4<f32>(0.0);
    if (MODE == 0u) {
        acc = vec4<f32>(-3.0e38);
    }
    var count = 0u;
    for (var ky = 0u; ky < params.k_h; ky++) {
        let iy = i32(oy * params.stride_h + ky) - i32(params.pad_top);
        if (iy < 0 || iy >= i32(params.in_h)) {
            continue;
        }
        for (var kx = 0u; kx < params.k_w; kx++) {
            let ix = i32(ox * params.stride_w + kx) - i32(params.pad_left);
            if (ix < 0 || ix >= i32(params.in_w)) {
                continue;
            }
            let v = x_load((s * params.in_h + u32(iy)) * params.in_w + u32(ix));
            if (MODE == 0u) {
                acc = max(acc, v);
            } else {
                acc += v;
            }
            count += 1u;
        }
    }
    if (MODE == 1u && count > 0u) {
        acc = acc / f32(count);
    }
    let i = (s * params.out_h + oy) * params.out_w + ox;
    y_store(i, keep_lanes(epilogue(acc, i, s), s, params.channels));
}
