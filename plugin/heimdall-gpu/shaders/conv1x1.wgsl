// conv1x1: 1x1 convolution (stride 1, no padding) as a blocked matrix product.
//   y[p, o] = epilogue(bias[o] + sum_i x[p, i] * w[o, i])
// Layout: x, y, res in PHWC4 (vec4 index = slice * H * W + pixel); w is pre-transformed to
//   [out_slice][in_slice][in_lane] vec4 (lanes = 4 output channels); bias is one vec4 per slice.
// Threads: work groups of TG threads (chosen per GPU family, src/ops/conv.rs); a work group
//   owns a tile of TG * BP pixels x BS output slices, and its thread `lid` computes pixels
//   tile + j * TG + lid (j < BP) x the BS slices, so one load instruction of a warp reads TG
//   consecutive pixels (coalesced) and every thread of a work group reads the same weights
//   (uniform: a broadcast). Pixel tiles vary fastest across work groups.
//   The inner loop, `conv_tile`, is generated for BP x BS (src/ops/conv.rs): the BP * BS
//   accumulators are named variables, not an array, so they stay in registers on drivers that
//   would put a dynamically indexed array in local memory; each accumulates a chain of FMAs.
//   With f16 arithmetic (src/arith.rs) the tile loads `vec4<f16>` (x_load_h, w_load_h) and
//   accumulates in f16, adding f16 partial sums of 16 input slices into f32 where the reduction
//   is long; it hands store_out f32 either way.
// Bindings: 0 params (uniform), x (read), w (read), bias (read f32), y (write), then the
//   generated epilogue bindings (res, alpha). Generated symbols used: BP, BS, TG, conv_tile,
//   x_load, w_load (x_load_h, w_load_h in f16 arithmetic), bias_load, y_store, epilogue,
//   keep_lanes.
// Params: `GpuConv1x1Params` (heimdall-gpu src/ops/conv.rs), declared by composition.

// Writes one accumulated output vec4 (pixel p, output slice o) if it exists.
fn store_out(p: u32, o: u32, acc: vec4<f32>) {
    if (p < params.pixels && o < params.out_slices) {
        let i = o * params.pixels + p;
        y_store(i, keep_lanes(epilogue(acc + bias_load(o), i, o), o, params.out_channels));
    }
}

@compute @workgroup_size(TG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = wg.x + wg.y * nwg.x;
    if (g >= params.tiles) {
        return;
    }
    let p0 = (g % params.pixel_tiles) * (TG * BP) + lid;
    let o0 = (g / params.pixel_tiles) * BS;
    conv_tile(p0, o0);
}
