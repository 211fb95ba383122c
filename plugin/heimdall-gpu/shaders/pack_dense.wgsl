// pack_dense: a graph input as the host holds it (dense NHWC f32, `h * w * c` values) into its
//   PHWC4 slot in the slot's storage precision, padding lanes zero. The host uploads the dense
//   values as they are (one copy) and this kernel does the layout and precision conversion
//   (the host reference: `Phwc4::pack` then `Precision::encode`).
// Layout: dense[(y * w + x) * c + ch]; y in PHWC4 (vec4 index (slice * h + y) * w + x).
// Threads: 1-D over the vec4s of y (work groups folded into 2-D when there are many).
// Bindings: 0 params (uniform), 1 y (write, generated), 2 dense (read, array<f32>).
// Generated symbols used: y_store, linear_index.
struct Params {
    h: u32,
    w: u32,
    c: u32,
    vec4s: u32,
}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(2) var<storage, read> dense: array<f32>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = linear_index(wg, nwg, lid);
    if (i >= params.vec4s) {
        return;
    }
    let hw = params.h * params.w;
    let slice = i / hw;
    let p = i - slice * hw;
    let first = slice * 4u;
    let base = p * params.c + first;
    var v = vec4<f32>(0.0);
    for (var l = 0u; l < 4u; l++) {
        if (first + l < params.c) {
            v[l] = dense[base + l];
        }
    }
    y_store(i, v);
}
