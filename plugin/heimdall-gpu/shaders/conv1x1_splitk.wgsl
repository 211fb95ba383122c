// conv1x1_splitk: 1x1 convolution (stride 1, no padding) with its reduction split across the
//   threads of a work group, for small grids with long reductions (e.g. 7x7x1152->192, where
//   one thread per output would run a chain of 288 input slices with the GPU mostly idle).
//   y[p, o] = epilogue(bias[o] + sum_i x[p, i] * w[o, i])
// Layout: x, y, res in PHWC4 (vec4 index = slice * H * W + pixel); w is pre-transformed to
//   [out_slice][in_slice][in_lane] vec4 (lanes = 4 output channels), as for conv1x1; bias is one
//   vec4 per slice.
// Threads: work groups of TG = TP * KS threads own TP consecutive pixels x one output slice;
//   thread `lid` takes pixel lane lid % TP (consecutive threads read consecutive pixels) and
//   part k = lid / TP of the reduction (input slices k, k + KS, k + 2 KS, ...). The KS partial
//   sums meet in work-group memory and the part-0 thread of each pixel adds them in a fixed
//   order (so the result does not depend on scheduling) and stores through the epilogue.
//   Pixel tiles vary fastest across work groups.
// Bindings: 0 params (uniform), x (read), w (read), bias (read f32), y (write), then the
//   generated epilogue bindings (res, alpha). Generated symbols used: TG, TP, KS, x_load,
//   w_load, bias_load, y_store, epilogue, keep_lanes.
// Params: `GpuConv1x1Params` (heimdall-gpu src/ops/conv.rs), declared by composition.

var<workgroup> partial: array<vec4<f32>, TG>;

@compute @workgroup_size(TG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = wg.x + wg.y * nwg.x;
    // Uniform across the work group, so the barrier below stays in uniform control flow.
    if (g >= params.tiles) {
        return;
    }
    let lane = lid % TP;
    let part = lid / TP;
    let p = (g % params.pixel_tiles) * TP + lane;
    let o = g / params.pixel_tiles;
    let pc = min(p, params.pixels - 1u);
    let wo = o * params.in_slices * 4u;
    var acc = vec4<f32>(0.0);
    for (var i = part; i < params.in_slices; i += KS) {
        let x = x_load(i * params.pixels + pc);
        let wb = wo + i * 4u;
        acc = fma(w_load(wb + 3u), vec4<f32>(x.w), fma(w_load(wb + 2u), vec4<f32>(x.z),
              fma(w_load(wb + 1u), vec4<f32>(x.y), fma(w_load(wb), vec4<f32>(x.x), acc))));
    }
    partial[lid] = acc;
    workgroupBarrier();
    if (part == 0u && p < params.pixels) {
        var sum = partial[lane];
        for (var k = 1u; k < KS; k++) {
            sum += partial[k * TP + lane];
        }
        let i = o * params.pixels + p;
        y_store(i, keep_lanes(epilogue(sum + bias_load(o), i, o), o, params.out_channels));
    }
}
