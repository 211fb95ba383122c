// probe_fma: the device's FMA rate in the precision of `V` (vec4<f32>, or vec4<f16> with
//   `enable f16;`, generated before this file by src/probe.rs). Every thread runs 8 independent
//   vec4 chains a = fma(a, b, c) (32 independent scalar chains), written out 4 times per loop
//   turn (no inner loop: a loop turn costs a counter, and wgpu's loop bounding another, which
//   the probe's module skips): 128 dependent-chain FMAs per loop turn, 2 flops each. The result is
//   stored only when it equals an impossible value, so the chains cannot be removed and memory
//   traffic is nil.
// Layout: out is a vec4<f32> sink of one element.
// Threads: work groups of 64 folded into 2-D; `threads` of them are counted by the host.
// Bindings: 0 params (uniform: iterations, b, c), 1 out (read_write).
// Params: `GpuFmaParams` (heimdall-gpu src/probe.rs), declared before this file by the probe.
@group(0) @binding(1) var<storage, read_write> out: array<vec4<f32>>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>) {
    let s = f32(lid) * 1e-3 + f32(wg.x & 15u) * 1e-4;
    let b = V(vec4<f32>(params.b));
    let c = V(vec4<f32>(params.c));
    var a0 = V(vec4<f32>(s, s + 0.1, s + 0.2, s + 0.3));
    var a1 = a0 + V(0.01);
    var a2 = a0 + V(0.02);
    var a3 = a0 + V(0.03);
    var a4 = a0 + V(0.04);
    var a5 = a0 + V(0.05);
    var a6 = a0 + V(0.06);
    var a7 = a0 + V(0.07);
    for (var i = 0u; i < params.iterations; i++) {
        a0 = fma(a0, b, c);
        a1 = fma(a1, b, c);
        a2 = fma(a2, b, c);
        a3 = fma(a3, b, c);
        a4 = fma(a4, b, c);
        a5 = fma(a5, b, c);
        a6 = fma(a6, b, c);
        a7 = fma(a7, b, c);
        a0 = fma(a0, b, c);
        a1 = fma(a1, b, c);
        a2 = fma(a2, b, c);
        a3 = fma(a3, b, c);
        a4 = fma(a4, b, c);
        a5 = fma(a5, b, c);
        a6 = fma(a6, b, c);
        a7 = fma(a7, b, c);
        a0 = fma(a0, b, c);
        a1 = fma(a1, b, c);
        a2 = fma(a2, b, c);
        a3 = fma(a3, b, c);
        a4 = fma(a4, b, c);
        a5 = fma(a5, b, c);
        a6 = fma(a6, b, c);
        a7 = fma(a7, b, c);
        a0 = fma(a0, b, c);
        a1 = fma(a1, b, c);
        a2 = fma(a2, b, c);
        a3 = fma(a3, b, c);
        a4 = fma(a4, b, c);
        a5 = fma(a5, b, c);
        a6 = fma(a6, b, c);
        a7 = fma(a7, b, c);
    }
    let r = vec4<f32>(((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)));
    if (r.x == -1234.5) {
        out[0] = r;
    }
}
