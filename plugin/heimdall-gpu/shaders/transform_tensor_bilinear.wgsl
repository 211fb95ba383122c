// transform_tensor_bilinear: MediaPipe custom op TransformTensorBilinear (version 2), as the CPU
//   reference (heimdall-cpu src/ops/transform_tensor_bilinear.rs): output pixel (x, y)
//   samples the source at (m0 x + m1 y + m3', m4 x + m5 y + m7') with the pixel-centre
//   correction m3' = m3 + (m0 / 2 + m1 / 2 - 1/2), m7' = m7 + (m4 / 2 + m5 / 2 - 1/2) (the
//   third column meets z = 0). A point outside [0, W-1] x [0, H-1] (or NaN) gives 0 in every
//   channel; otherwise the bilinear mix of the 4 surrounding pixels, a right / lower neighbour
//   beyond the last column / row (reached only with weight 0, on the border) counting as 0.
//   Source points are rounded exactly as the reference rounds them (`opaque`, `corrected`): an
//   ulp there moves a sample by 4e-6 pixel at x = 50, a relative change of 1e-5 on rough maps.
// Layout: x, y in PHWC4; m is the [1, 4, 4] matrix in PHWC4 (H = 1, W = 4, C = 4): row r is
//   vec4 r, so m_load(0) = (m0, m1, m2, m3) and m_load(1) = (m4, m5, m6, m7).
// Threads: one thread per output vec4 (4 channels of one pixel); columns fastest, then rows,
//   then slices. Every thread reads the two matrix rows (16 bytes each, cached).
// Bindings: 0 params, x (read), m (read), y (write).
// Params: `GpuTransformTensorParams` (heimdall-gpu src/ops/transform_tensor_bilinear.rs), declared by composition.

// `v` through a multiplication by a runtime 1.0: the same value, but one the compiler can
// neither fuse with a following addition (`a * b + c` into a fused multiply-add, one rounding
// instead of the reference's two: at most `fma(a * b, 1.0, c)` remains, which rounds the same),
// nor reassociate across (Mesa turns `((a + b) + c) + d` into `((a + d) + b) + c`, an ulp off the
// reference for a third of the pixels), nor simplify (`(a + b) - a` into `b` defeats `two_sum`).
fn opaque(v: f32) -> f32 {
    return v * params.one;
}

// (s, e) with s = a + b rounded and s + e = a + b exactly (Knuth's TwoSum).
fn two_sum(a: f32, b: f32) -> vec2<f32> {
    let s = opaque(a + b);
    let bb = opaque(s - a);
    let e = (a - opaque(s - bb)) + (b - bb);
    return vec2<f32>(s, e);
}

// t + (m_x / 2 + m_y / 2 - 1/2) rounded once to f32, as the reference's double arithmetic does
// (a naive f32 sum rounds three times and is one ulp off for a few percent of matrices).
fn corrected(t: f32, m_x: f32, m_y: f32) -> f32 {
    let s1 = two_sum(m_x * 0.5, m_y * 0.5);
    let s2 = two_sum(s1.x, -0.5);
    let s3 = two_sum(t, s2.x);
    return s3.x + ((s1.y + s2.y) + s3.y);
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
    let r0 = m_load(0u);
    let r1 = m_load(1u);
    // Pixel-centre correction folded into the translation column.
    let m3 = corrected(r0.w, r0.x, r0.y);
    let m7 = corrected(r1.w, r1.x, r1.y);
    let fx = f32(ox);
    let fy = f32(oy);
    // Each product rounded on its own, summed left to right, as the reference; the third column
    // times a runtime zero (NaN for an infinite or NaN entry, as in the reference).
    let sx = opaque(opaque(opaque(r0.x * fx) + opaque(r0.y * fy)) + r0.z * params.zero) + m3;
    let sy = opaque(opaque(opaque(r1.x * fx) + opaque(r1.y * fy)) + r1.z * params.zero) + m7;
    let max_x = f32(params.in_w - 1u);
    let max_y = f32(params.in_h - 1u);
    let i = (s * params.out_h + oy) * params.out_w + ox;
    // Written so that NaN lands in the zero branch.
    let inside = sx >= 0.0 && sx <= max_x && sy >= 0.0 && sy <= max_y;
    if (!inside) {
        y_store(i, vec4<f32>(0.0));
        return;
    }
    let flx = floor(sx);
    let fly = floor(sy);
    let wx = sx - flx;
    let wy = sy - fly;
    // Clamped so that no read leaves the tensor whatever the driver does with the comparisons.
    let x0 = min(u32(flx), params.in_w - 1u);
    let y0 = min(u32(fly), params.in_h - 1u);
    let has_right = x0 + 1u < params.in_w;
    let has_below = y0 + 1u < params.in_h;
    let x1 = select(x0, x0 + 1u, has_right);
    let y1 = select(y0, y0 + 1u, has_below);
    let base = s * params.in_h;
    let q11 = x_load((base + y0) * params.in_w + x0);
    let q21 = select(vec4<f32>(0.0), x_load((base + y0) * params.in_w + x1), has_right);
    let q12 = select(vec4<f32>(0.0), x_load((base + y1) * params.in_w + x0), has_below);
    let q22 = select(vec4<f32>(0.0), x_load((base + y1) * params.in_w + x1),
        has_right && has_below);
    // The reference rounds `w * q` to f32 but computes `(1 - w) * q` and the sum in double:
    // a fused multiply-add of the rounded product rounds the same way.
    let one = vec4<f32>(params.one);
    let upper = fma(vec4<f32>(1.0 - wx), q11, (wx * q21) * one);
    let lower = fma(vec4<f32>(1.0 - wx), q12, (wx * q22) * one);
    y_store(i, fma(vec4<f32>(1.0 - wy), upper, (wy * lower) * one));
}
