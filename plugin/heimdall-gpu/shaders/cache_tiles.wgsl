// cache_tiles: the work groups of the convolution cache's ops that must run this time
//   (heimdall-gpu src/conv_cache.rs). One thread per work group of every cached dispatch: from
//   the dispatch's thread order (its table entry) it finds the output rows and columns the work
//   group writes, maps them through the op's receptive field to a rectangle of input pixels,
//   and appends the work group to the dispatch's list when a block there is dirty (any block,
//   for a global field). The CPU reference of the field arithmetic is heimdall-ir
//   src/conv_cache/fields.rs.
// Table entry (ENTRY u32s): 0 kind (0 rows, 1 pixel tiles), 1 first thread, 2 work groups,
//   3 list (u32 index of its header in `tiles`), 4 threads per group | pixel tiles,
//   5 total threads | pixels per tile, 6 column blocks, 7 columns per block, 8 out_h, 9 out_w,
//   10 global field, 12..17 field stride (y, x), offset (y, x), size (y, x) as i32.
// A list: [count, groups x, groups y, 0, work group ids...].
// Bindings: 0 params, table, mask, counters ([0] dirty blocks, [1 + k] list k's length), tiles.
// Params: `GpuCacheTilesParams` (heimdall-gpu src/conv_cache.rs), declared by composition.

@group(0) @binding(1) var<storage, read> table: array<u32>;
@group(0) @binding(2) var<storage, read> mask: array<u32>;
@group(0) @binding(3) var<storage, read_write> counters: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> tiles: array<u32>;

const ENTRY: u32 = 20u;

// Whether output rows r0..=r1, columns c0..=c1 of entry `e` read a dirty block.
fn rect_dirty(e: u32, r0: u32, r1: u32, c0: u32, c1: u32) -> bool {
    if (table[e + 10u] != 0u) {
        return atomicLoad(&counters[0]) > 0u;
    }
    let sy = i32(table[e + 12u]);
    let sx = i32(table[e + 13u]);
    let oy = i32(table[e + 14u]);
    let ox = i32(table[e + 15u]);
    let ry = i32(table[e + 16u]);
    let rx = i32(table[e + 17u]);
    let iy0 = max(i32(r0) * sy - oy, 0);
    let iy1 = min(i32(r1) * sy - oy + ry - 1, i32(params.in_h) - 1);
    let ix0 = max(i32(c0) * sx - ox, 0);
    let ix1 = min(i32(c1) * sx - ox + rx - 1, i32(params.in_w) - 1);
    if (iy0 > iy1 || ix0 > ix1) {
        return false;
    }
    let by1 = min(u32(iy1) / params.block_h, params.grid_h - 1u);
    let bx1 = min(u32(ix1) / params.block_w, params.grid_w - 1u);
    for (var by = u32(iy0) / params.block_h; by <= by1; by++) {
        for (var bx = u32(ix0) / params.block_w; bx <= bx1; bx++) {
            if (mask[by * params.grid_w + bx] != 0u) {
                return true;
            }
        }
    }
    return false;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wg.x + wg.y * nwg.x) * 64u + lid;
    if (i >= params.threads) {
        return;
    }
    // The entry whose threads hold `i`: the last one starting at or before it (binary search).
    var lo = 0u;
    var hi = params.entries;
    while (hi - lo > 1u) {
        let mid = (lo + hi) / 2u;
        if (table[mid * ENTRY + 1u] <= i) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let k = lo;
    let e = k * ENTRY;
    let g = i - table[e + 1u];
    let out_h = table[e + 8u];
    let out_w = table[e + 9u];
    var dirty = false;
    if (table[e] == 0u) {
        let cb = table[e + 6u];
        let bx = table[e + 7u];
        let t0 = g * table[e + 4u];
        let t1 = min(t0 + table[e + 4u], table[e + 5u]) - 1u;
        let y0 = (t0 / cb) % out_h;
        let y1 = (t1 / cb) % out_h;
        let z0 = t0 / cb / out_h;
        let z1 = t1 / cb / out_h;
        if (z0 == z1 && y0 == y1) {
            dirty = rect_dirty(e, y0, y0, (t0 % cb) * bx, min((t1 % cb) * bx + bx, out_w) - 1u);
        } else if (z0 == z1) {
            dirty = rect_dirty(e, y0, y1, 0u, out_w - 1u);
        } else if (z1 == z0 + 1u) {
            dirty = rect_dirty(e, y0, out_h - 1u, 0u, out_w - 1u)
                || rect_dirty(e, 0u, y1, 0u, out_w - 1u);
        } else {
            dirty = rect_dirty(e, 0u, out_h - 1u, 0u, out_w - 1u);
        }
    } else {
        let tp = table[e + 5u];
        let p0 = (g % table[e + 4u]) * tp;
        let p1 = min(p0 + tp, out_h * out_w) - 1u;
        let y0 = p0 / out_w;
        let y1 = p1 / out_w;
        if (y0 == y1) {
            dirty = rect_dirty(e, y0, y0, p0 % out_w, p1 % out_w);
        } else {
            dirty = rect_dirty(e, y0, y1, 0u, out_w - 1u);
        }
    }
    if (dirty) {
        let at = atomicAdd(&counters[1u + k], 1u);
        tiles[table[e + 3u] + 4u + at] = g;
    }
}
