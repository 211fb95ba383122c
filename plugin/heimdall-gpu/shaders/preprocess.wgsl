// preprocess: camera frame (an RGBA8 texture) to a model's PHWC4 input: affine crop, bilinear
//   resampling, per-channel normalisation.
//   s = M * (u, v, 1), (u, v) = ((x + 0.5) / out_w, (y + 0.5) / out_h): the output pixel centre
//   normalised to [0, 1]^2 maps to the source point s, normalised to [0, 1]^2 of the texture.
//   The source is sampled bilinearly around s (texel centres at (i + 0.5) / size); a tap
//   outside the texture is clamped to the edge (BORDER_MODE 0) or takes params.border (1).
//   out = pixel * params.scale + params.offset per channel (pixel in [0, 1], RGBA order).
// Layout: y in PHWC4 with out_c ≤ 4 channels (one slice: vec4 index = y * out_w + x), lanes
//   beyond out_c zero. The texture is read with textureLoad (no sampler, no filtering feature);
//   SRGB = 1 re-encodes the linear values an sRGB view returns (rounded to bytes), so the model
//   sees the stored bytes / 255 whatever the view.
// Threads: 8x8 work groups over (x, y); one thread per output pixel.
// Bindings: 0 params (uniform), 1 y (write, generated), 2 src (texture_2d<f32>).
// Generated symbols used: SRGB, y_store.
struct Params {
    m0: vec4<f32>,
    m1: vec4<f32>,
    scale: vec4<f32>,
    offset: vec4<f32>,
    border: vec4<f32>,
    out_w: u32,
    out_h: u32,
    out_c: u32,
    border_mode: u32,
}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(2) var src: texture_2d<f32>;

// Linear to sRGB, rounded to the nearest byte: the view decoded a byte k to linear, this
// recovers k / 255 exactly (pow and the decode are approximate on some devices, well within
// half a byte).
fn srgb_encode(l: vec4<f32>) -> vec4<f32> {
    let c = clamp(l.rgb, vec3<f32>(0.0), vec3<f32>(1.0));
    let lo = c * 12.92;
    let hi = 1.055 * pow(c, vec3<f32>(1.0 / 2.4)) - 0.055;
    let e = select(hi, lo, c <= vec3<f32>(0.0031308));
    return vec4<f32>(round(e * 255.0) / 255.0, l.a);
}

fn tap(x: i32, y: i32, size: vec2<i32>) -> vec4<f32> {
    if (params.border_mode != 0u && (x < 0 || y < 0 || x >= size.x || y >= size.y)) {
        return params.border;
    }
    let p = clamp(vec2<i32>(x, y), vec2<i32>(0), size - vec2<i32>(1));
    var v = textureLoad(src, p, 0);
    if (SRGB != 0u) {
        v = srgb_encode(v);
    }
    return v;
}

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= params.out_w || gid.y >= params.out_h) {
        return;
    }
    let size = vec2<i32>(textureDimensions(src, 0));
    let u = (f32(gid.x) + 0.5) / f32(params.out_w);
    let v = (f32(gid.y) + 0.5) / f32(params.out_h);
    let s = vec2<f32>(
        params.m0.x * u + params.m0.y * v + params.m0.z,
        params.m1.x * u + params.m1.y * v + params.m1.z,
    );
    let p = s * vec2<f32>(size) - 0.5;
    let f0 = floor(p);
    let f = p - f0;
    // Far outside the texture the taps saturate (no i32 overflow); the result is the same.
    let lim = vec2<f32>(size) + 2.0;
    let i0 = vec2<i32>(clamp(f0, -lim, lim));
    let a = tap(i0.x, i0.y, size);
    let b = tap(i0.x + 1, i0.y, size);
    let c = tap(i0.x, i0.y + 1, size);
    let d = tap(i0.x + 1, i0.y + 1, size);
    let top = a + (b - a) * f.x;
    let bottom = c + (d - c) * f.x;
    let pixel = top + (bottom - top) * f.y;
    let out = pixel * params.scale + params.offset;
    let lanes = vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(params.out_c);
    y_store(gid.y * params.out_w + gid.x, select(vec4<f32>(0.0), out, lanes));
}
