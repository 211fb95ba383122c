// conv1x1: 1x1 convolution (stride 1, no padding) as a blocked matrix product.
//   y[p, o] = epilogue(bias[o] + sum_i x[p, i] * w[o, i])
// Layout: x, y, res in PHWC4 (vec4 index = slice * H * W + pixel); w is pre-transformed to
//   [out_slice][in_slice][in_lane] vec4 (lanes = 4 output channels); bias is one vec4 per slice.
// Threads: one thread computes BP consecutive pixels x BS consecutive output slices; the pixel
//   block varies fastest across threads so that neighbours read neighbouring pixels.
// Bindings: 0 params (uniform), x (read), w (read), bias (read f32), y (write), then the
//   generated epilogue bindings (res, alpha). Generated symbols used: BP, BS, WG, x_load,
//   w_load, bias_load, y_store, epilogue, keep_lanes, linear_index.
struct Params {
    pixels: u32,
    in_slices: u32,
    out_slices: u32,
    out_channels: u32,
    pixel_blocks: u32,
    total: u32,
    _pad0: u32,
    _pad1: u32,
}
@group(0) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = linear_index(wg, nwg, lid);
    if (t >= params.total) {
        return;
    }
    let p0 = (t % params.pixel_blocks) * BP;
    let o0 = (t / params.pixel_blocks) * BS;
    var acc: array<vec4<f32>, BP * BS>;
    for (var i = 0u; i < params.in_slices; i++) {
        var xv = array<vec4<f32>, BP>();
        for (var j = 0u; j < BP; j++) {
            let p = min(p0 + j, params.pixels - 1u);
            xv[j] = x_load(i * params.pixels + p);
        }
        for (var b = 0u; b < BS; b++) {
            let o = min(o0 + b, params.out_slices - 1u);
            let base = (o * params.in_slices + i) * 4u;
            let w0 = w_load(base);
            let w1 = w_load(base + 1u);
            let w2 = w_load(base + 2u);
            let w3 = w_load(base + 3u);
            for (var j = 0u; j < BP; j++) {
                let v = xv[j];
                acc[b * BP + j] += w0 * v.x + w1 * v.y + w2 * v.z + w3 * v.w;
            }
        }
    }
    for (var b = 0u; b < BS; b++) {
        let o = o0 + b;
        if (o >= params.out_slices) {
            break;
        }
        let bias = bias_load(o);
        for (var j = 0u; j < BP; j++) {
            let p = p0 + j;
            if (p >= params.pixels) {
                break;
            }
            let i = o * params.pixels + p;
            y_store(i, keep_lanes(epilogue(acc[b * BP + j] + bias, i, o), o, params.out_channels));
        }
    }
}
