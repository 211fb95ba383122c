// transpose_conv: transposed 2-D convolution (e.g. 2x2 stride 2) with bias, as a gather: every
//   output pixel sums the input pixels whose scattered window covers it.
//   y[oy, ox, o] = epilogue(bias[o] + sum over (iy, ky) with iy*sh + ky = oy + pt, (ix, kx) with
//                  ix*sw + kx = ox + pl, and i: x[iy, ix, i] * w[o, ky, kx, i])
// Layout: x, y, res in PHWC4; w pre-transformed to [out_slice][ky][kx][in_slice][in_lane] vec4
//   (lanes = 4 output channels); bias one vec4/slice.
// Threads: one thread per output vec4 (pixel x output slice); columns fastest, then rows, then
//   slices.
// Bindings: 0 params, x (read), w (read), bias (read f32), y (write), epilogue bindings.
// Params: `GpuTransposeConvParams` (heimdall-gpu src/ops/transpose_conv.rs), declared by composition.

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = linear_index(wg, nwg, lid);
    if (t >= params.total) {
        return;
    }
    let ox = t % params.out_w;
    let oy = (t / params.out_w) % params.out_h;
    let o = t / (params.out_w * params.out_h);
    var acc = vec4<f32>(0.0);
    for (var ky = 0u; ky < params.k_h; ky++) {
        let ty = i32(oy + params.pad_top) - i32(ky);
        if (ty < 0 || u32(ty) % params.stride_h != 0u) {
            continue;
        }
        let iy = u32(ty) / params.stride_h;
        if (iy >= params.in_h) {
            continue;
        }
        for (var kx = 0u; kx < params.k_w; kx++) {
            let tx = i32(ox + params.pad_left) - i32(kx);
            if (tx < 0 || u32(tx) % params.stride_w != 0u) {
                continue;
            }
            let ix = u32(tx) / params.stride_w;
            if (ix >= params.in_w) {
                continue;
            }
            for (var i = 0u; i < params.in_slices; i++) {
                let v = x_load((i * params.in_h + iy) * params.in_w + ix);
                let base = (((o * params.k_h + ky) * params.k_w + kx) * params.in_slices + i) * 4u;
                acc += w_load(base) * v.x + w_load(base + 1u) * v.y + w_load(base + 2u) * v.z
                    + w_load(base + 3u) * v.w;
            }
        }
    }
    let i = (o * params.out_h + oy) * params.out_w + ox;
    y_store(i, keep_lanes(epilogue(acc + bias_load(o), i, o), o, params.out_channels));
}
