// instance_norm: ONNX InstanceNormalization of x [1, H, W, C] per channel over H and W:
//   y = (x - mean) * (scale / sqrt(var + epsilon)) + bias (biased variance); scale and bias are
//   optional (HAS_SCALE, HAS_BIAS: 1 and 0 when absent) and may be computed at run time.
//   Three dispatches (PHASE), so that a large image keeps the device busy:
//   PHASE 0: work group g takes chunk k = g % chunks of slice s = g / chunks (CHUNK positions)
//     and stores its mean and M2 (sum of squared deviations from that mean: two passes over the
//     chunk, no cancellation) in stats[2g], stats[2g + 1].
//   PHASE 1: thread s merges the chunks of slice s in order (Chan et al.'s pairwise update, also
//     free of cancellation) and stores mean and scale / sqrt(var + epsilon) at stats_base + 2s.
//   PHASE 2: one thread per vec4 of x applies y = epilogue((x - mean) * mul + bias): the op's
//     fused epilogue (residual add, activation; none in the other phases).
// Layout: x, y in PHWC4; scale and bias are [C] tensors in PHWC4 (one vec4 per slice); stats is
//   an f32 scratch of vec4 (four channels at once), written and read within the step.
// Threads: PHASE 0: one work group per (slice, chunk), thread l visits positions l, l + WG, ...
//   of the chunk and the group reduces in work-group memory with a fixed tree (deterministic).
//   PHASE 1: one thread per slice. PHASE 2: one thread per vec4, columns fastest, rows, slices.
// Bindings: 0 params, x (read; stub in PHASE 1), scale (read in PHASE 1 when present, else
//   stub), bias (read in PHASE 2 when present, else stub), stats (read_write), y (write in
//   PHASE 2, else a stub whose store does nothing), then PHASE 2's epilogue bindings.
// Params: `GpuInstanceNormParams` (heimdall-gpu src/ops/instance_norm.rs), declared by composition.

var<workgroup> part: array<vec4<f32>, WG>;

// Sum of `v` over the work group (every thread gets it).
fn group_sum(v: vec4<f32>, lid: u32) -> vec4<f32> {
    part[lid] = v;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        if (lid < stride) {
            part[lid] = part[lid] + part[lid + stride];
        }
        workgroupBarrier();
    }
    let r = part[0];
    workgroupBarrier();
    return r;
}

// Positions of chunk k of a slice of n positions.
fn chunk_len(k: u32, n: u32) -> u32 {
    return min(n - min(n, k * CHUNK), CHUNK);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let n = params.h * params.w;
    if (PHASE == 0u) {
        // Uniform across the group: every thread of a surplus group returns together.
        let g = wg.x + wg.y * nwg.x;
        if (g >= params.slices * params.chunks) {
            return;
        }
        let s = g / params.chunks;
        let k = g % params.chunks;
        let base = s * n + k * CHUNK;
        let len = chunk_len(k, n);
        var acc = vec4<f32>(0.0);
        for (var p = lid; p < len; p += WG) {
            acc += x_load(base + p);
        }
        let mean = group_sum(acc, lid) / f32(max(len, 1u));
        var dev = vec4<f32>(0.0);
        for (var p = lid; p < len; p += WG) {
            let d = x_load(base + p) - mean;
            dev += d * d;
        }
        let m2 = group_sum(dev, lid);
        if (lid == 0u) {
            stats_store(2u * g, mean);
            stats_store(2u * g + 1u, m2);
        }
        return;
    }
    let t = linear_index(wg, nwg, lid);
    if (PHASE == 1u) {
        if (t >= params.slices) {
            return;
        }
        var count = 0.0;
        var mean = vec4<f32>(0.0);
        var m2 = vec4<f32>(0.0);
        for (var k = 0u; k < params.chunks; k++) {
            let nk = f32(chunk_len(k, n));
            let g = t * params.chunks + k;
            let delta = stats_load(2u * g) - mean;
            let total = count + nk;
            mean += delta * (nk / total);
            m2 += stats_load(2u * g + 1u) + delta * delta * (count * nk / total);
            count = total;
        }
        var mul = 1.0 / sqrt(m2 / max(count, 1.0) + params.epsilon);
        if (HAS_SCALE == 1u) {
            mul = mul * scale_load(t);
        }
        stats_store(params.stats_base + 2u * t, mean);
        stats_store(params.stats_base + 2u * t + 1u, mul);
        return;
    }
    if (t >= params.total) {
        return;
    }
    let s = t / n;
    let mean = stats_load(params.stats_base + 2u * s);
    let mul = stats_load(params.stats_base + 2u * s + 1u);
    var add = vec4<f32>(0.0);
    if (HAS_BIAS == 1u) {
        add = bias_load(s);
    }
    y_store(t, keep_lanes(epilogue((x_load(t) - mean) * mul + add, t, s), s, params.channels));
}
