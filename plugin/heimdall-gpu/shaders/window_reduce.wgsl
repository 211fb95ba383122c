// window_reduce: max (MODE 0) or average (MODE 1) over a large window (global pools and MEAN
//   over height/width), one work group per output vec4; padded positions are skipped and the
//   average divides by the number of valid positions, as pool.wgsl.
//   y[oy, ox, c] = epilogue(reduce over valid (ky, kx) of x[oy*sh + ky - pt, ox*sw + kx - pl, c])
// Layout: x, y, res in PHWC4; accumulation in f32.
// Threads: work groups of RG threads (a power of two: 256 when there are few outputs, such as
//   a global pool, 64 otherwise; src/ops/pool.rs); work group g computes output vec4 g
//   (columns fastest, rows, slices); thread l visits window positions l, l + RG, ... (row and
//   column advanced incrementally, no division per position) and the group reduces in
//   work-group memory with a fixed tree (deterministic).
// Bindings: 0 params, x (read), y (write), epilogue bindings. Generated symbols used: RG, MODE,
//   x_load, y_store, epilogue, keep_lanes.
// Params: `GpuPoolParams` (heimdall-gpu src/ops/pool.rs), declared by composition.

var<workgroup> part: array<vec4<f32>, RG>;
var<workgroup> part_count: array<u32, RG>;

@compute @workgroup_size(RG)
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
        // Window position p = ky * k_w + kx, advanced by RG = step_y rows + step_x columns.
        var ky = lid / params.k_w;
        var kx = lid % params.k_w;
        let step_y = RG / params.k_w;
        let step_x = RG % params.k_w;
        let iy0 = i32(oy * params.stride_h) - i32(params.pad_top);
        let ix0 = i32(ox * params.stride_w) - i32(params.pad_left);
        for (var p = lid; p < params.k_h * params.k_w; p += RG) {
            let iy = iy0 + i32(ky);
            let ix = ix0 + i32(kx);
            if (iy >= 0 && iy < i32(params.in_h) && ix >= 0 && ix < i32(params.in_w)) {
                let v = x_load((s * params.in_h + u32(iy)) * params.in_w + u32(ix));
                if (MODE == 0u) {
                    acc = max(acc, v);
                } else {
                    acc += v;
                }
                count += 1u;
            }
            kx += step_x;
            ky += step_y;
            if (kx >= params.k_w) {
                kx -= params.k_w;
                ky += 1u;
            }
        }
    }
    part[lid] = acc;
    part_count[lid] = count;
    workgroupBarrier();
    for (var stride = RG / 2u; stride > 0u; stride = stride / 2u) {
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
