// window_reduce: max (MODE 0) or average (MODE 1) over a large window (global pools and MEAN
//   over height/width), one work group per output vec4; padded positions are skipped and the
//   average divides by the number of valid positions, as pool.wgsl.
//   y[oy, ox, c] = epilogue(reduce over valid (ky, kx) of x[oy*sh + ky - pt, ox*sw + kx - pl, c])
// Layout: x, y, res in PHWC4; accumulation in f32.
// Threads: work group g computes output vec4 g (columns fastest, rows, slices); thread l visits
//   window positions l, l + WG, ... and the group reduces in work-group memory with a fixed tree
//   (deterministic).
// Bindings: 0 params, x (read), y (write), epilogue bindings.
struct Params {
    in_h: u32,
    in_w: u32,
    out_h: u32,
    out_w: u32,
    channels: u32,
    k_h: u32,
    k_w: u32,
    stride_h: u32,
    stride_w: u32,
    pad_top: u32,
    pad_left: u32,
    total: u32,
}
@group(0) @binding(0) var<uniform> params: Params;

var<workgroup> part: array<vec4<f32>, WG>;
var<workgroup> part_count: array<u32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = wg.x + wg.y * nwg.x;
    let valid_out = t < params.total;
    let ox = t % params.out_w;
    let oy = (t / params.out_w) % params.out_h;
    let s = t / (params.out_w * params.out_h);
    var acc = vec4<f32>(0.0);
    if (MODE == 0u) {
        acc = vec4<f32>(-3.0e38);
    }
    var count = 0u;
    if (valid_out) {
        for (var p = lid; p < params.k_h * params.k_w; p += WG) {
            let iy = i32(oy * params.stride_h + p / params.k_w) - i32(params.pad_top);
            let ix = i32(ox * params.stride_w + p % params.k_w) - i32(params.pad_left);
            if (iy < 0 || iy >= i32(params.in_h) || ix < 0 || ix >= i32(params.in_w)) {
                continue;
            }
            let v = x_load((s * params.in_h + u32(iy)) * params.in_w + u32(ix));
            if (MODE == 0u) {
                acc = max(acc, v);
            } else {
                acc += v;
            }
            count += 1u;
        }
    }
    part[lid] = acc;
    part_count[lid] = count;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        if (lid < stride) {
            if (MODE == 0u) {
                part[lid] = max(part[lid], part[lid + stride]);
            } else {
                part[lid] = part[lid] + part[lid + stride];
            }
            part_count[lid] = part_count[lid] + part_count[lid + stride];
        }
        workgroupBarrier();
    }
    if (lid == 0u && valid_out) {
        var r = part[0];
        if (MODE == 1u && part_count[0] > 0u) {
            r = r / f32(part_count[0]);
        }
        let i = (s * params.out_h + oy) * params.out_w + ox;
        y_store(i, keep_lanes(epilogue(r, i, s), s, params.channels));
    }
}
