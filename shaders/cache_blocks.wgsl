// cache_blocks: change detection of the convolution cache (heimdall-gpu src/conv_cache.rs; the
//   CPU reference is heimdall-ir src/conv_cache/blocks.rs, which this follows operation for
//   operation). One work group per block of the model's image input: a histogram of BINS bins
//   per channel (channels 0..3 of slice 0), its chi-square distance to the histogram stored when
//   the block was last recomputed, and the decision: dirty when over the threshold, expired (by
//   runs or milliseconds) or on a full run. A dirty block stores its new histogram and stamps.
// Layout: x in PHWC4 (slice 0 holds channels 0..3); state per block: channels * bins reference
//   counts, then the run and the millisecond of its last recomputation.
// Bindings: 0 params, x (read), state, mask (one u32 per block), counters ([0]: dirty blocks),
//   run ([0] run index, [1] now in ms, [2] 1 on a full run).
// Params: `GpuCacheBlocksParams` (heimdall-gpu src/conv_cache.rs), declared by composition.

@group(0) @binding(2) var<storage, read_write> state: array<u32>;
@group(0) @binding(3) var<storage, read_write> mask: array<u32>;
@group(0) @binding(4) var<storage, read_write> counters: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read> run: array<u32>;

var<workgroup> hist: array<atomic<u32>, 256>;

// The bin of `v`: floor((v - lo) * scale), clamped to 0..bins (NaN to 0).
fn bin_of(v: f32) -> u32 {
    let b = floor((v - params.lo) * params.scale);
    if (!(b >= 0.0)) {
        return 0u;
    }
    return u32(min(b, f32(params.bins - 1u)));
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let b = wg.x + wg.y * nwg.x;
    if (b >= params.blocks) {
        return;
    }
    let nb = params.channels * params.bins;
    for (var i = lid; i < nb; i += 64u) {
        atomicStore(&hist[i], 0u);
    }
    workgroupBarrier();
    let y0 = (b / params.grid_w) * params.block_h;
    let x0 = (b % params.grid_w) * params.block_w;
    let h = min(params.block_h, params.in_h - y0);
    let w = min(params.block_w, params.in_w - x0);
    let n = h * w;
    for (var p = lid; p < n; p += 64u) {
        let v = x_load((y0 + p / w) * params.in_w + x0 + p % w);
        for (var c = 0u; c < params.channels; c++) {
            atomicAdd(&hist[c * params.bins + bin_of(v[c])], 1u);
        }
    }
    workgroupBarrier();
    if (lid != 0u) {
        return;
    }
    let base = b * (nb + 2u);
    var sum = 0.0;
    for (var i = 0u; i < nb; i++) {
        let a = atomicLoad(&hist[i]);
        let r = state[base + i];
        let s = a + r;
        if (s > 0u) {
            let d = f32(a) - f32(r);
            sum += d * d / f32(s);
        }
    }
    let chi = sum / (f32(n) * f32(params.channels));
    let now_run = run[0];
    let now_ms = run[1];
    let expired = (params.expiry_runs > 0u && now_run - state[base + nb] >= params.expiry_runs)
        || (params.expiry_ms > 0u && now_ms - state[base + nb + 1u] >= params.expiry_ms);
    let dirty = run[2] != 0u || chi > params.threshold || expired;
    if (dirty) {
        for (var i = 0u; i < nb; i++) {
            state[base + i] = atomicLoad(&hist[i]);
        }
        state[base + nb] = now_run;
        state[base + nb + 1u] = now_ms;
        atomicAdd(&counters[0], 1u);
    }
    mask[b] = select(0u, 1u, dirty);
}
