// conv_coop: convolution as a GEMM on cooperative matrices (tensor cores: `enable
//   wgpu_cooperative_matrix;`, 16x16x16, f16 A and B, f32 accumulators), for f16 inputs and
//   weights on devices that have them (src/coop.rs, Tuning::conv_coop). A 1x1 conv (stride 1,
//   no padding) reduces over the input slices; a windowed one is an implicit GEMM whose K runs
//   over the taps (ky * k_w + kx, outer) and the input slices (inner), x read through the
//   window (zeros outside the input).
//   y[p, o] = epilogue(bias[o] + sum_k x_at(k, p) * w[k, o])
// Layout: x, y, res in PHWC4 (vec4 index = slice * H * W + pixel); w is pre-transformed to
//   [k_slice][in_lane][out_slice] vec4 (one row of the K x N matrix contiguous: 1x1 as the
//   tiled kernel's, src/ops/conv1x1_tiled.rs; windowed: src/ops/conv_coop.rs); bias is one
//   vec4 per slice.
// Threads: a work group of TG = 32 * WM * WN threads (WM x WN subgroups of 32: NVIDIA only)
//   owns BM = 16 * FM * WM pixels x BN = 16 * FN * WN output channels. Subgroup (wm, wn) =
//   (sg % WM, sg / WM) keeps FM x FN 16x16 f32 accumulators: pixels 16 * (FM * wm + i) ..,
//   channels 16 * (FN * wn + j) ... The reduction runs over K tiles of KT input channels (KS =
//   KT / 4 slices): x (BM x KT, row-major, rows padded to XS) and w (KT x BN, row-major, rows
//   padded to WS) are loaded cooperatively as vec4<f16> (coalesced), the next tile's global
//   loads issued before this tile's matrix products, and stored as f16 into work-group memory
//   between two barriers; each subgroup loads its A and B fragments from there. Input channels
//   past the end read zeros; pixels past the end read the last pixel (their outputs are not
//   stored).
//   Epilogue: each accumulator is stored into the subgroup's 16 x CS f32 scratch, read back as
//   (pixel, output slice) vec4s (two per thread), and written through bias, epilogue and
//   keep_lanes. Pixel tiles vary fastest across work groups.
//   The x loader `x_at(k, p)` and the tile loop `conv_tile` are generated (src/ops/conv_coop.rs).
// Bindings: 0 params (uniform), x (read f16), w (read f16), bias (read f32), y (write), then
//   the generated epilogue bindings (res, alpha). Generated symbols used: TG, WM, WN, FM, FN,
//   KT, KS, BM, BN, BNS, XS, WS, CS, conv_tile, x_at, x_load_h, w_load_h, bias_load, y_store,
//   epilogue, keep_lanes.
// Params: `GpuConv1x1Params` (1x1, src/ops/conv1x1_params.rs) or `GpuConvCoopParams`
//   (windowed, src/ops/conv_coop.rs), declared by composition.

// x tile [pixel][channel], w tile [channel][output channel], f16; f32 scratch per subgroup.
var<workgroup> xs: array<f16, BM * XS>;
var<workgroup> ws: array<f16, KT * WS>;
var<workgroup> cs: array<f32, WM * WN * 16u * CS>;

// Writes one accumulated output vec4 (pixel p, output slice o) if it exists.
fn store_out(p: u32, o: u32, acc: vec4<f32>) {
    if (p < params.pixels && o < params.out_slices) {
        let i = o * params.pixels + p;
        y_store(i, keep_lanes(epilogue(acc + bias_load(o), i, o), o, params.out_channels));
    }
}

// Stores a staged x vec4 (pixel m of the tile, slice k of the K tile) into xs.
fn put_x(m: u32, k: u32, v: vec4<f16>) {
    let b = m * XS + k * 4u;
    xs[b] = v.x;
    xs[b + 1u] = v.y;
    xs[b + 2u] = v.z;
    xs[b + 3u] = v.w;
}

// Stores a staged w vec4 (row r of the K tile, output slice n of the tile) into ws.
fn put_w(r: u32, n: u32, v: vec4<f16>) {
    let b = r * WS + n * 4u;
    ws[b] = v.x;
    ws[b + 1u] = v.y;
    ws[b + 2u] = v.z;
    ws[b + 3u] = v.w;
}

// The outputs of one accumulator, stored by its subgroup into its scratch `sc` (16 pixels x
// 16 channels, row-major, stride CS): pixels p0.., output slices o0.. (4 of them).
fn drain(sc: u32, lane: u32, p0: u32, o0: u32) {
    for (var q = 0u; q < 2u; q++) {
        let e = lane + q * 32u;
        let r = e % 16u;
        let s = e / 16u;
        let b = sc + r * CS + s * 4u;
        store_out(p0 + r, o0 + s, vec4<f32>(cs[b], cs[b + 1u], cs[b + 2u], cs[b + 3u]));
    }
}

@compute @workgroup_size(TG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wg.x + wg.y * nwg.x;
    // Uniform across the work group, so the barriers of conv_tile stay in uniform control flow.
    if (g >= params.tiles) {
        return;
    }
    let p0 = (g % params.pixel_tiles) * BM;
    let o0 = (g / params.pixel_tiles) * BNS;
    conv_tile(p0, o0, lid);
}
