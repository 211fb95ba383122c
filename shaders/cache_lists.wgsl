// cache_lists: publishes the length of every cached dispatch's work group list in the list's
//   header (heimdall-gpu src/conv_cache.rs), where the cached kernel's entry point reads it: the
//   dispatch covers the op's whole grid, its first `count` work groups take the listed ids and
//   compute them, the others return at once.
// Bindings: 0 params, table (read), counters (read_write: atomics), tiles.
// Params: `GpuCacheListsParams` (heimdall-gpu src/conv_cache.rs), declared by composition.

@group(0) @binding(1) var<storage, read> table: array<u32>;
@group(0) @binding(2) var<storage, read_write> counters: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> tiles: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let k = wg.x * 64u + lid;
    if (k >= params.entries) {
        return;
    }
    tiles[table[k * 20u + 3u]] = atomicLoad(&counters[1u + k]);
}
