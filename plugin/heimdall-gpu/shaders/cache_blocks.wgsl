// cache_blocks: change detection of the convolution cache (heimdall-gpu src/conv_cache.rs; the
//   CPU reference is heimdall-ir src/conv_cache/blocks.rs, which this follows operation for
//   operation). One work group per block of the model's image input: a histogram of `bins` bins
//   per channel (channels 0..3 of slice 0) and the sums of the values quantised to 0..1024 over
//   a 4 x 4 grid of cells; the histogram's chi-square distance and the cell means' largest
//   change against those stored when the block was last recomputed; the decision: dirty when
//   either is over its threshold, expired (by runs or milliseconds) or on a full run. A dirty
//   block stores its new statistics and stamps.
// Layout: x in PHWC4 (slice 0 holds channels 0..3); state per block: channels * bins reference
//   counts, channels * 16 cell sums, then the run and the millisecond of its last
//   recomputation.
// Bindings: 0 params, x (read), state, mask (one u32 per block), counters ([0]: dirty blocks),
//   run ([0] run index, [1] now in ms, [2] 1 on a full run).
// Params: `GpuCacheBlocksParams` (heimdall-gpu src/conv_cache.rs), declared by composition.

@group(0) @binding(2) var<storage, read_write> state: array<u32>;
@group(0) @binding(3) var<storage, read_write> mask: array<u32>;
@group(0) @binding(4) var<storage, read_write> counters: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read> run: array<u32>;

// Histogram counts (channels * bins), then cell sums (channels * 16).
var<workgroup> hist: array<atomic<u32>, 320>;

// The bin of `v`: floor((v - lo) * scale), clamped to 0..bins (NaN to 0).
fn bin_of(v: f32, scale: f32, bins: u32) -> u32 {
    let b = floor((v - params.lo) * scale);
    if (!(b >= 0.0)) {
        return 0u;
    }
    return u32(min(b, f32(bins - 1u)));
}

// Pixels along cell `k` of a block side of `n` pixels (pixel p is in cell p * 4 / n).
fn cell_extent(k: u32, n: u32) -> u32 {
    return ((k + 1u) * n + 3u) / 4u - (k * n + 3u) / 4u;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let b = wg.x + wg.y * nwg.x;
    if (b >= params.blocks) {
        return;
    }
    let nb = params.channels * params.bins;
    let per = nb + params.channels * 16u;
    for (var i = lid; i < per; i += 64u) {
        atomicStore(&hist[i], 0u);
    }
    workgroupBarrier();
    let y0 = (b / params.grid_w) * params.block_h;
    let x0 = (b % params.grid_w) * params.block_w;
    let h = min(params.block_h, params.in_h - y0);
    let w = min(params.block_w, params.in_w - x0);
    let n = h * w;
    for (var p = lid; p < n; p += 64u) {
        let py = p / w;
        let px = p % w;
        let v = x_load((y0 + py) * params.in_w + x0 + px);
        let cell = (py * 4u / h) * 4u + px * 4u / w;
        for (var c = 0u; c < params.channels; c++) {
            atomicAdd(&hist[c * params.bins + bin_of(v[c], params.scale, params.bins)], 1u);
            atomicAdd(&hist[nb + c * 16u + cell], bin_of(v[c], params.qscale, 1024u));
        }
    }
    workgroupBarrier();
    if (lid != 0u) {
        return;
    }
    let base = b * (per + 2u);
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
    var moved = 0.0;
    for (var i = nb; i < per; i++) {
        let a = atomicLoad(&hist[i]);
        let r = state[base + i];
        let cell = (i - nb) % 16u;
        let count = cell_extent(cell / 4u, h) * cell_extent(cell % 4u, w);
        if (count > 0u) {
            let d = select(r - a, a - r, a > r);
            moved = max(moved, f32(d) / (f32(count) * 1024.0));
        }
    }
    let now_run = run[0];
    let now_ms = run[1];
    let expired = (params.expiry_runs > 0u && now_run - state[base + per] >= params.expiry_runs)
        || (params.expiry_ms > 0u && now_ms - state[base + per + 1u] >= params.expiry_ms);
    let dirty = run[2] != 0u || chi > params.threshold || moved > params.cell_threshold
        || expired;
    if (dirty) {
        for (var i = 0u; i < per; i++) {
            state[base + i] = atomicLoad(&hist[i]);
        }
        state[base + per] = now_run;
        state[base + per + 1u] = now_ms;
        atomicAdd(&counters[0], 1u);
    }
    mask[b] = select(0u, 1u, dirty);
}
