// probe_copy: the device's memory bandwidth, dst[i] = src[i] over a buffer larger than any
//   cache (read + write bytes counted by the host).
// Layout: src, dst are arrays of vec4<f32>, `count` of them.
// Threads: one vec4 per thread, work groups of 64 folded into 2-D (consecutive threads read
//   consecutive vec4s: coalesced).
// Bindings: 0 params (uniform: count), 1 src (read), 2 dst (read_write).
// Params: `GpuCopyParams` (heimdall-gpu src/probe.rs), declared before this file by the probe.
@group(0) @binding(1) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<f32>>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = (wg.x + wg.y * nwg.x) * 64u + lid;
    if (i < params.count) {
        dst[i] = src[i];
    }
}
