// fully_connected: y[o] = epilogue(bias[o] + sum_f x_flat[f] * w[o, f]), batch 1.
// Layout: x in PHWC4 of its own 4-D shape (P vec4 positions); w pre-transformed at compile time
//   into x's PHWC4 order: [out_slice][position][out_lane] vec4 over the 4 input lanes, zero where
//   a lane is padding; bias one vec4/slice; y in PHWC4 of [1, 1, 1, O] (vec4 index = slice).
// Threads: one work group of WG threads per output slice; thread l sums positions l, l + WG, ...
//   then the group reduces in work-group memory with a fixed tree (deterministic).
// Bindings: 0 params, x (read), w (read), bias (read f32), y (write), epilogue bindings.
// Params: `GpuFullyConnectedParams` (heimdall-gpu src/ops/fully_connected.rs), declared by composition.

var<workgroup> partial: array<vec4<f32>, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let o = wg.x + wg.y * nwg.x;
    var acc = vec4<f32>(0.0);
    if (o < params.out_slices) {
        for (var p = lid; p < params.positions; p += WG) {
            let v = x_load(p);
            let base = (o * params.positions + p) * 4u;
            acc += vec4<f32>(dot(v, w_load(base)), dot(v, w_load(base + 1u)),
                             dot(v, w_load(base + 2u)), dot(v, w_load(base + 3u)));
        }
    }
    partial[lid] = acc;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        if (lid < stride) {
            partial[lid] = partial[lid] + partial[lid + stride];
        }
        workgroupBarrier();
    }
    if (lid == 0u && o < params.out_slices) {
        y_store(o, keep_lanes(epilogue(partial[0] + bias_load(o), o, o), o, params.out_channels));
    }
}
