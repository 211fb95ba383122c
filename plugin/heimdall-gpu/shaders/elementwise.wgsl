// elementwise: y = epilogue(a OP b) with NumPy broadcasting over H, W and C (a size-1 axis
//   broadcasts; a single channel is splat over all lanes). OP (a constant) is 0 = a only (unary
//   ops: the activation lives in the epilogue), 1 = add, 2 = sub, 3 = mul, 4 = PReLU (b = alpha).
// Layout: a, b, y, res in PHWC4 of their own 4-D shapes (batch 1).
// Threads: one thread per output vec4; columns fastest, then rows, then slices.
// Bindings: 0 params, a (read), [b (read) when OP != 0], y (write), epilogue bindings.
// Params: `GpuElementwiseParams` (heimdall-gpu src/kernels/elementwise.rs), declared by composition.

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = linear_index(wg, nwg, lid);
    if (t >= params.total) {
        return;
    }
    let x = t % params.out_w;
    let y = (t / params.out_w) % params.out_h;
    let s = t / (params.out_w * params.out_h);
    let ay = select(y, 0u, params.a_h == 1u);
    let ax = select(x, 0u, params.a_w == 1u);
    var a: vec4<f32>;
    if (params.a_c == params.out_c) {
        a = a_load((s * params.a_h + ay) * params.a_w + ax);
    } else {
        a = vec4<f32>(a_load1((ay * params.a_w + ax) * 4u));
    }
    var r = a;
    if (OP != 0u) {
        let by = select(y, 0u, params.b_h == 1u);
        let bx = select(x, 0u, params.b_w == 1u);
        var b: vec4<f32>;
        if (params.b_c == params.out_c) {
            b = b_load((s * params.b_h + by) * params.b_w + bx);
        } else {
            b = vec4<f32>(b_load1((by * params.b_w + bx) * 4u));
        }
        r = combine(a, b);
    }
    let i = (s * params.out_h + y) * params.out_w + x;
    y_store(i, keep_lanes(epilogue(r, i, s), s, params.out_c));
}
