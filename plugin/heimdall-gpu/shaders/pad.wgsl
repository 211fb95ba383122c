// pad: ONNX Pad of x (rank ≤ 4, batch 1) with MODE 0 = constant `value`, 1 = reflect
//   (mirror without repeating the edge, period 2(n-1)), 2 = edge (repeat the border), as the CPU
//   reference: output coordinate o reads input coordinate src(o - before) along each axis.
// Layout: x, y in PHWC4 of their own shapes. Where the channel axis is not padded, whole vec4s
//   are copied (padding lanes stay zero); otherwise each lane is gathered.
// Threads: one thread per output vec4; columns fastest, then rows, then slices.
// Bindings: 0 params, x (read), y (write).
// Params: `GpuPadParams` (heimdall-gpu src/ops/pad.rs), declared by composition.

// Input index along an axis of n values for the shifted output index v, or -1 (constant fill).
fn src(v: i32, n: i32) -> i32 {
    if (v >= 0 && v < n) {
        return v;
    }
    if (params.mode == 2u) {
        return clamp(v, 0, n - 1);
    }
    if (params.mode == 1u) {
        // The reflection is even (index -k reads k) with period 2(n-1), so it is taken of |v|
        // in unsigned arithmetic. The signed form ((v % p) + p) % p was right on lavapipe but
        // not on an H100 (NVIDIA's Vulkan driver): there -1 % 6 came out as 3, the remainder
        // of -1 read as unsigned, and reflect padding read the far edge (onnx_kernels'
        // `pad_with`, now ops_layout's; multistyle26 rel-L2 0.25).
        let period = u32(max(2 * (n - 1), 1));
        let m = i32(u32(abs(v)) % period);
        return select(i32(period) - m, m, m < n);
    }
    return -1;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = linear_index(wg, nwg, lid);
    if (t >= params.total) {
        return;
    }
    let oh = u32(params.out_dims.y);
    let ow = u32(params.out_dims.z);
    let oc = u32(params.out_dims.w);
    let ih = u32(params.in_dims.y);
    let iw = u32(params.in_dims.z);
    let ox = t % ow;
    let oy = (t / ow) % oh;
    let s = t / (ow * oh);
    let iy = src(i32(oy) - params.before.y, params.in_dims.y);
    let ix = src(i32(ox) - params.before.z, params.in_dims.z);
    var r = vec4<f32>(params.value);
    if (params.before.w == 0 && params.in_dims.w == params.out_dims.w) {
        if (iy >= 0 && ix >= 0) {
            r = x_load((s * ih + u32(iy)) * iw + u32(ix));
        }
    } else {
        for (var j = 0u; j < 4u; j++) {
            let ic = src(i32(s * 4u + j) - params.before.w, params.in_dims.w);
            if (iy >= 0 && ix >= 0 && ic >= 0) {
                let c = u32(ic);
                r[j] = x_load1((((c / 4u) * ih + u32(iy)) * iw + u32(ix)) * 4u + c % 4u);
            }
        }
    }
    y_store((s * oh + oy) * ow + ox, keep_lanes(r, s, oc));
}
