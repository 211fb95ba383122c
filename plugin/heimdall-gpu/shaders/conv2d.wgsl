// conv2d: generic 2-D convolution (any kernel size, stride, dilation, explicit zero padding);
//   also serves the first layer (3 input channels = one input slice).
//   y[oy, ox, o] = epilogue(bias[o] + sum_{ky,kx,i} x[oy*sh + ky*dh - pt, ox*sw + kx*dw - pl, i]
//                                                   * w[o, ky, kx, i])
// Layout: x, y, res in PHWC4 (vec4 index = (slice * H + y) * W + x); w pre-transformed to
//   [out_slice][ky][kx][in_slice][in_lane] vec4 (lanes = 4 output channels); bias one vec4/slice.
// Threads: one thread computes BX consecutive output columns of one row x BS consecutive output
//   slices; column blocks vary fastest, then rows, then slice blocks. The tile, `conv_tile`, is
//   generated for BX x BS (src/ops/conv.rs) with named accumulators (registers, not a
//   dynamically indexed array) and one FMA chain per accumulator and input slice; columns
//   outside the input read zero (a clamped load, then a select). With f16 arithmetic
//   (src/arith.rs) it loads `vec4<f16>` (x_load_h, w_load_h) and accumulates in f16, adding each
//   tap's f16 partial sums (of at most 16 input slices) into f32 where the reduction is long.
// Bindings: 0 params, x (read), w (read), bias (read f32), y (write), epilogue bindings.
// Params: `GpuConv2dParams` (heimdall-gpu src/ops/conv.rs), declared by composition.

// Writes one accumulated output vec4 (row oy, column ox, output slice o) if it exists.
fn store_out(ox: u32, oy: u32, o: u32, acc: vec4<f32>) {
    if (ox < params.out_w && o < params.out_slices) {
        let i = (o * params.out_h + oy) * params.out_w + ox;
        y_store(i, keep_lanes(epilogue(acc + bias_load(o), i, o), o, params.out_channels));
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
    let o0 = (rest / params.out_h) * BS;
    conv_tile(ox0, oy, o0);
}
