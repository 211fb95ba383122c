// matmul: ONNX MatMul of two run-time tensors, y[t, m, n] = sum_k a[t, m, k] * b[t, k, n], with
//   the batch axis t broadcast where an operand has one (a rank-2 operand has one).
// Layout: PHWC4 with the batch as H, rows as W and columns as C (right-aligned shapes, batch 1):
//   a (a_h, M, K), b (b_h, K, N), y (T, M, N); padding lanes of a are zero, so a vec4 of four k
//   needs no mask, but rows of b beyond K are not read. Accumulation in f32, k ascending.
// Threads: one thread per output vec4 (four consecutive n); columns (m) fastest, then batch, then
//   slices of N.
// Bindings: 0 params, a (read), b (read), y (write).
// Params: `GpuMatMulParams` (heimdall-gpu src/ops/matmul.rs), declared by composition.

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = linear_index(wg, nwg, lid);
    if (t >= params.total) {
        return;
    }
    let m = t % params.m;
    let tb = (t / params.m) % params.batch;
    let s = t / (params.m * params.batch);
    let ah = select(tb, 0u, params.a_h == 1u);
    let bh = select(tb, 0u, params.b_h == 1u);
    let k_slices = (params.k + 3u) / 4u;
    var acc = vec4<f32>(0.0);
    for (var ks = 0u; ks < k_slices; ks++) {
        let av = a_load((ks * params.a_h + ah) * params.m + m);
        for (var j = 0u; j < 4u; j++) {
            let k = ks * 4u + j;
            if (k < params.k) {
                acc += av[j] * b_load((s * params.b_h + bh) * params.k + k);
            }
        }
    }
    let i = (s * params.batch + tb) * params.m + m;
    y_store(i, keep_lanes(acc, s, params.n));
}
