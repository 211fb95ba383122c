// cache_lists: publishes the length of every cached dispatch's work group list in the list's
//   header (heimdall-gpu src/conv_cache/mod.rs), where the cached kernel's entry point reads it:
//   the first `count` work groups of the dispatch take the listed ids and compute them, any
//   others return at once; and the indirect arguments of a dispatch of exactly `count` groups
//   (x = min(count, max_x), y = ceil(count / x)), used where empty work groups are not free
//   (a CPU device).
// Bindings: 0 params, table (read), counters (read_write: atomics), tiles, args.
// Params: `GpuCacheListsParams` (heimdall-gpu src/conv_cache.rs), declared by composition.

@group(0) @binding(1) var<storage, read> table: array<u32>;
@group(0) @binding(2) var<storage, read_write> counters: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> tiles: array<u32>;
@group(0) @binding(4) var<storage, read_write> args: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let k = wg.x * 64u + lid;
    if (k >= params.entries) {
        return;
    }
    let count = atomicLoad(&counters[1u + k]);
    tiles[table[k * 20u + 3u]] = count;
    let x = min(count, params.max_x);
    args[k * 3u] = x;
    args[k * 3u + 1u] = select(1u, (count + x - 1u) / max(x, 1u), x > 0u);
    args[k * 3u + 2u] = 1u;
}
