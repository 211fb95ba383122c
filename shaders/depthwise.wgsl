// depthwise: depthwise convolution (multiplier 1) with the window baked in: KH x KW taps,
//   strides SH, SW and dilations DH, DW are constants, padding is a parameter.
//   y[oy, ox, c] = epilogue(bias[c] + sum_{ky,kx} x[oy*SH + ky*DH - pt, ox*SW + kx*DW - pl, c]
//                                                * w[ky, kx, c])
// Layout: x, y, res in PHWC4; w pre-transformed to [ky][kx][slice] vec4; bias one vec4/slice.
// Threads: one thread computes BX consecutive output columns of one row of one slice; it loads
//   each needed input row segment once ((BX-1)*SW + (KW-1)*DW + 1 vec4s) and reuses it for all
//   BX outputs. Column blocks vary fastest, then rows, then slices.
// Bindings: 0 params, x (read), w (read), bias (read f32), y (write), epilogue bindings.
struct Params {
    in_h: u32,
    in_w: u32,
    slices: u32,
    channels: u32,
    out_h: u32,
    out_w: u32,
    pad_top: u32,
    pad_left: u32,
    col_blocks: u32,
    total: u32,
    _pad0: u32,
    _pad1: u32,
}
@group(0) @binding(0) var<uniform> params: Params;

const ROW: u32 = (BX - 1u) * SW + (KW - 1u) * DW + 1u;

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
    let ix0 = i32(ox0 * SW) - i32(params.pad_left);
    var acc: array<vec4<f32>, BX>;
    for (var ky = 0u; ky < KH; ky++) {
        let iy = i32(oy * SH + ky * DH) - i32(params.pad_top);
        if (iy < 0 || iy >= i32(params.in_h)) {
            continue;
        }
        let row_base = (s * params.in_h + u32(iy)) * params.in_w;
        var row = array<vec4<f32>, ROW>();
        for (var r = 0u; r < ROW; r++) {
            let ix = ix0 + i32(r);
            if (ix >= 0 && ix < i32(params.in_w)) {
                row[r] = x_load(row_base + u32(ix));
            }
        }
        for (var kx = 0u; kx < KW; kx++) {
            let wv = w_load((ky * KW + kx) * params.slices + s);
            for (var j = 0u; j < BX; j++) {
                acc[j] += row[j * SW + kx * DW] * wv;
            }
        }
    }
    let bias = bias_load(s);
    for (var j = 0u; j < BX; j++) {
        let ox = ox0 + j;
        if (ox >= params.out_w) {
            break;
        }
        let i = (s * params.out_h + oy) * params.out_w + ox;
        y_store(i, keep_lanes(epilogue(acc[j] + bias, i, s), s, params.channels));
    }
}
