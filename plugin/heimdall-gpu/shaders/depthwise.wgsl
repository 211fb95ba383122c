// depthwise: depthwise convolution (multiplier 1) with the window baked in: KH x KW taps,
//   strides SH, SW and dilations DH, DW are constants, padding is a parameter.
//   y[oy, ox, c] = epilogue(bias[c] + sum_{ky,kx} x[oy*SH + ky*DH - pt, ox*SW + kx*DW - pl, c]
//                                                * w[ky, kx, c])
// Layout: x, y, res in PHWC4; w pre-transformed to [ky][kx][slice] vec4; bias one vec4/slice.
// Threads: one thread computes BX consecutive output columns of one row of one slice. Column
//   blocks vary fastest, then rows, then slices.
//   The window, `dw_tile`, is generated for the constants (src/ops/depthwise.rs) and fully
//   unrolled: per window row, the (BX-1)*SW + (KW-1)*DW + 1 input vec4s the BX outputs need
//   are loaded once into named variables (clamped indices, zero outside the input through a
//   select: no branches), then each tap's weight is loaded once and FMAed into the BX named
//   accumulators. Named variables stay in registers, where an array indexed in a loop may not.
// Bindings: 0 params, x (read), w (read), bias (read f32), y (write), epilogue bindings.
//   Generated symbols used: KH, KW, SH, SW, DH, DW, BX, dw_tile, x_load, w_load, bias_load,
//   y_store, epilogue, keep_lanes, linear_index.
// Params: `GpuDepthwiseParams` (heimdall-gpu src/ops/depthwise.rs), declared by composition.

// Input vec4 at row `iy`, column `ix` of slice `s`, zero outside the input.
fn x_at(s: u32, iy: i32, ix: i32) -> vec4<f32> {
    let inside = iy >= 0 && iy < i32(params.in_h) && ix >= 0 && ix < i32(params.in_w);
    let cy = u32(clamp(iy, 0, i32(params.in_h) - 1));
    let cx = u32(clamp(ix, 0, i32(params.in_w) - 1));
    return select(vec4<f32>(0.0), x_load((s * params.in_h + cy) * params.in_w + cx), inside);
}

// Writes output column `ox` of row `oy`, slice `s`, if it exists.
fn store_out(ox: u32, oy: u32, s: u32, acc: vec4<f32>) {
    if (ox < params.out_w) {
        let i = (s * params.out_h + oy) * params.out_w + ox;
        y_store(i, keep_lanes(epilogue(acc + bias_load(s), i, s), s, params.channels));
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = linear_index(wg, nwg, lid);
    if (t >= params.total) {
        return;
    }
    let ox0 = (t % params.col_blocks) * BX;
    let rest = t / params.col_blocks;
    let oy = rest % params.out_h;
    let s = rest / params.out_h;
    dw_tile(ox0, oy, s);
}
