// conv1x1_tiled: 1x1 convolution (stride 1, no padding) as a GEMM with both operands staged in
//   work-group memory, for large enough layers (on NVIDIA: src/context.rs, Tuning).
//   y[p, o] = epilogue(bias[o] + sum_i x[p, i] * w[o, i])
// Layout: x, y, res in PHWC4 (vec4 index = slice * H * W + pixel); w is pre-transformed to
//   [in_slice][in_lane][out_slice] vec4 (lanes = 4 output channels: one row of the K x N matrix
//   is contiguous, see src/ops/conv1x1_tiled.rs); bias is one vec4 per slice.
// Threads: a work group of TG = GX * GY threads owns a tile of BM = TM * GX pixels x BNS =
//   TN * GY output slices. Thread (tx, ty) = (lid % GX, lid / GX) computes pixels
//   tile + j * GX + tx (j < TM) x output slices tile + b * GY + ty (b < TN): TM * TN vec4
//   accumulators in registers (named variables), so a warp's loads from work-group memory read
//   consecutive vec4s (x) or a few broadcast ones (w), free of bank conflicts.
//   The reduction runs over K tiles of BKS input slices: each tile of x (BKS x BM vec4, as
//   loaded, 4 input lanes each) and of w (4 * BKS rows x BNS vec4) is loaded cooperatively
//   (coalesced), stored into one of two work-group buffers, and read by every thread; the
//   global loads of tile t + 1 are issued before the FMAs of tile t and stored into the other
//   buffer after them, so one barrier per tile suffices. Input slices past the end read zeros.
//   Pixel tiles vary fastest across work groups.
//   The tile loop, `conv_tile`, is generated for TM, TN, GX, GY, BKS (src/ops/conv1x1_tiled.rs).
// Bindings: 0 params (uniform), x (read), w (read), bias (read f32), y (write), then the
//   generated epilogue bindings (res, alpha). Generated symbols used: TG, GX, GY, TM, TN, BKS,
//   BKR (= 4 * BKS), BM, BNS, conv_tile, x_load, w_load, bias_load, y_store, epilogue, keep_lanes.
// Params: `GpuConv1x1Params` (heimdall-gpu src/ops/conv.rs), declared by composition.

// Staged tiles, two buffers each: x as [buffer][slice][j][tx] (pixel j * GX + tx of the tile),
// w as [buffer][row = slice * 4 + lane][b][ty] (output slice b * GY + ty of the tile).
var<workgroup> xs: array<array<array<array<vec4<f32>, GX>, TM>, BKS>, 2>;
var<workgroup> ws: array<array<array<array<vec4<f32>, GY>, TN>, BKR>, 2>;

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
    // Uniform across the work group, so the barriers of conv_tile stay in uniform control flow.
    if (g >= params.tiles) {
        return;
    }
    let p0 = (g % params.pixel_tiles) * BM;
    let o0 = (g / params.pixel_tiles) * BNS;
    conv_tile(p0, o0, lid);
}
