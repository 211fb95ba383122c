// conv2d: generic 2-D convolution (any kernel size, stride, dilation, explicit zero padding);
//   also serves the first layer (3 input channels = one input slice).
//   y[oy, ox, o] = epilogue(bias[o] + sum_{ky,kx,i} x[oy*sh + ky*dh - pt, ox*sw + kx*dw - pl, i]
//                                                   * w[o, ky, kx, i])
// Layout: x, y, res in PHWC4 (vec4 index = (slice * H + y) * W + x); w pre-transformed to
//   [out_slice][ky][kx][in_slice][in_lane] vec4 (lanes = 4 output channels); bias one vec4/slice.
// Threads: one thread computes BX consecutive output columns of one row x BS consecutive output
//   slices; column blocks vary fastest, then rows, then slice blocks.
// Bindings: 0 params, x (read), w (read), bias (read f32), y (write), epilogue bindings.
struct Params {
    in_h: u32,
    in_w: u32,
    in_slices: u32,
    out_h: u32,
    out_w: u32,
    out_slices: u32,
    out_channels: u32,
    k_h: u32,
    k_w: u32,
    stride_h: u32,
    stride_w: u32,
    dil_h: u32,
    dil_w: u32,
    pad_top: u32,
    pad_left: u32,
    col_blocks: u32,
    total: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}
@group(0) @binding(0) var<uniform> params: Params;

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
    let o0 = (rest / params.out_h) * BS;
    var acc: array<vec4<f32>, BX * BS>;
    for (var ky = 0u; ky < params.k_h; ky++) {
        let iy = i32(oy * params.stride_h + ky * params.dil_h) - i32(params.pad_top);
        if (iy < 0 || iy >= i32(params.in_h)) {
            continue;
        }
        for (var kx = 0u; kx < params.k_w; kx++) {
            for (var i = 0u; i < params.in_slices; i++) {
                var xv = array<vec4<f32>, BX>();
                for (var j = 0u; j < BX; j++) {
                    let ix = i32((ox0 + j) * params.stride_w + kx * params.dil_w)
                        - i32(params.pad_left);
                    if (ix >= 0 && ix < i32(params.in_w)) {
                        xv[j] = x_load((i * params.in_h + u32(iy)) * params.in_w + u32(ix));
                    }
                }
                for (var b = 0u; b < BS; b++) {
                    let o = min(o0 + b, params.out_slices - 1u);
                    let base = (((o * params.k_h + ky) * params.k_w + kx) * params.in_slices + i) * 4u;
                    let w0 = w_load(base);
                    let w1 = w_load(base + 1u);
                    let w2 = w_load(base + 2u);
                    let w3 = w_load(base + 3u);
                    for (var j = 0u; j < BX; j++) {
                        let v = xv[j];
                        acc[b * BX + j] += w0 * v.x + w1 * v.y + w2 * v.z + w3 * v.w;
                    }
                }
            }
        }
    }
    for (var b = 0u; b < BS; b++) {
        let o = o0 + b;
        if (o >= params.out_slices) {
            break;
        }
        let bias = bias_load(o);
        for (var j = 0u; j < BX; j++) {
            let ox = ox0 + j;
            if (ox >= params.out_w) {
                break;
            }
            let i = (o * params.out_h + oy) * params.out_w + ox;
            y_store(i, keep_lanes(epilogue(acc[b * BX + j] + bias, i, o), o, params.out_channels));
        }
    }
}
