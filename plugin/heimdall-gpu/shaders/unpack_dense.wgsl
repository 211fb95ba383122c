// unpack_dense: a graph output from its PHWC4 slot (any storage precision) to dense NHWC f32,
//   `h * w * c` values with no padding lanes, so the readback copies and maps only what the
//   host returns and the host converts nothing (the host reference: `Precision::decode` then
//   `Phwc4::unpack`).
// Layout: x in PHWC4 (vec4 index (slice * h + y) * w + x); dense[(y * w + x) * c + ch].
// Threads: 1-D over the vec4s of x (work groups folded into 2-D when there are many).
// Bindings: 0 params (uniform), 1 x (read, generated), 2 dense (read_write, array<f32>).
// Generated symbols used: x_load, linear_index.
struct Params {
    h: u32,
    w: u32,
    c: u32,
    vec4s: u32,
}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(2) var<storage, read_write> dense: array<f32>;

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
    let v = x_load(i);
    for (var l = 0u; l < 4u; l++) {
        if (first + l < params.c) {
            dense[base + l] = v[l];
        }
    }
}
