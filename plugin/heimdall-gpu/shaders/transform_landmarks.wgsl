// transform_landmarks: MediaPipe custom op TransformLandmarks (version 2), as the CPU reference
//   (heimdall-cpu src/ops/transform_landmarks.rs): landmark (x, y[, z]) becomes
//   (m0 x + m1 y + m3, m4 x + m5 y + m7[, z]) (the third column meets z = 0), z copied.
// Layout: x and y are [1, N, D], D = 2 or 3, in PHWC4 (H = 1, W = N, C = D): landmark i is
//   vec4 i, lanes x, y[, z], padding lanes zero (lane z of a 2-D landmark is padding, copied as
//   the zero it is). m is the [1, 4, 4] matrix in PHWC4 (H = 1, W = 4, C = 4): row r is vec4 r.
// Threads: one thread per landmark.
// Bindings: 0 params, x (read), m (read), y (write).
// Params: `GpuTransformLandmarksParams` (heimdall-gpu src/ops/transform_landmarks.rs), declared by composition.

// `v` times a runtime 1.0: the same value, which the compiler can neither fuse with a following
// addition into a fused multiply-add nor reassociate across, so sums round as the reference's.
fn opaque(v: f32) -> f32 {
    return v * params.one;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = linear_index(wg, nwg, lid);
    if (t >= params.count) {
        return;
    }
    let r0 = m_load(0u);
    let r1 = m_load(1u);
    let p = x_load(t);
    // ((m0 x + m1 y) + m2 0) + m3 with each product and sum rounded as in the reference; the
    // third column times a runtime zero (NaN for an infinite or NaN entry, as in the reference).
    let qx = opaque(opaque(opaque(r0.x * p.x) + opaque(r0.y * p.y)) + r0.z * params.zero) + r0.w;
    let qy = opaque(opaque(opaque(r1.x * p.x) + opaque(r1.y * p.y)) + r1.z * params.zero) + r1.w;
    y_store(t, vec4<f32>(qx, qy, p.z, 0.0));
}
