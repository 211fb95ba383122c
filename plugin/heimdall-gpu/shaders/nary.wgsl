// nary: the ONNX element-wise ops of one to three operands with NumPy broadcasting over H, W and
//   C: Math (y = f(a): clip, leaky ReLU, hard sigmoid, ELU, erf, sqrt, exp, log, ...), Binary
//   (y = f(a, b): div, pow, max, min, comparisons giving 1.0 or 0.0) and Where
//   (y = a != 0 ? b : c). `combine(a, b, c)` is generated per op (see kernels/nary.rs); absent
//   operands are stubs that read zero. f0 and f1 are the op's float parameters (clip bounds,
//   alpha, beta), in the uniform so that infinite bounds need no WGSL literal; inf and nan are
//   set by the host for the same reason.
// Layout: a, b, c, y in PHWC4 of their own shapes (right-aligned to NHWC, batch 1); a size-1
//   axis broadcasts, an operand with one channel is splat over all lanes; padding lanes of y are
//   zeroed.
// Threads: one thread per output vec4; columns fastest, then rows, then slices.
// Bindings: 0 params, a (read), [b (read)], [c (read)], y (write).
// Params: `GpuNaryParams` (heimdall-gpu src/kernels/nary.rs), declared by composition.

// Index of the vec4 (same channels) or of lane 0 (one channel) an operand of `d` reads for
// output position (y, x, slice s).
fn operand_index(d: vec4<u32>, y: u32, x: u32, s: u32) -> u32 {
    let yy = select(y, 0u, d.x == 1u);
    let xx = select(x, 0u, d.y == 1u);
    if (d.z == params.out_c) {
        return (s * d.x + yy) * d.y + xx;
    }
    return (yy * d.y + xx) * 4u;
}

fn load_a(y: u32, x: u32, s: u32) -> vec4<f32> {
    let i = operand_index(params.a_dims, y, x, s);
    if (params.a_dims.z == params.out_c) {
        return a_load(i);
    }
    return vec4<f32>(a_load1(i));
}

fn load_b(y: u32, x: u32, s: u32) -> vec4<f32> {
    let i = operand_index(params.b_dims, y, x, s);
    if (params.b_dims.z == params.out_c) {
        return b_load(i);
    }
    return vec4<f32>(b_load1(i));
}

fn load_c(y: u32, x: u32, s: u32) -> vec4<f32> {
    let i = operand_index(params.c_dims, y, x, s);
    if (params.c_dims.z == params.out_c) {
        return c_load(i);
    }
    return vec4<f32>(c_load1(i));
}

// erf as the CPU reference: a Taylor series below 0.5, Abramowitz-Stegun 7.1.26 above.
fn erf4(x: vec4<f32>) -> vec4<f32> {
    let x2 = x * x;
    let p = 1.0 + x2 * (-1.0 / 3.0 + x2 * (1.0 / 10.0 + x2 * (-1.0 / 42.0 + x2 * (1.0 / 216.0
        - x2 / 1320.0))));
    let small = 1.1283791670955126 * x * p;
    let a = abs(x);
    let t = 1.0 / (1.0 + 0.3275911 * a);
    let poly = t * (0.2548296 + t * (-0.28449674 + t * (1.4214137 + t * (-1.4531521
        + t * 1.0614054))));
    let large = sign(x) * (1.0 - poly * exp(-a * a));
    return select(large, small, a < vec4<f32>(0.5));
}

// a^b as the CPU reference: exact shortcuts for b = 2, 1 and 0.5; a negative base with an
// integer exponent keeps the sign of (-1)^b; otherwise NaN for a negative base.
fn pow1(a: f32, b: f32) -> f32 {
    if (b == 2.0) {
        return a * a;
    }
    if (b == 1.0) {
        return a;
    }
    if (b == 0.5) {
        return sqrt(a);
    }
    if (b == 0.0) {
        return 1.0;
    }
    if (a == 0.0) {
        return select(0.0, params.inf, b < 0.0);
    }
    let m = exp2(b * log2(abs(a)));
    if (a > 0.0) {
        return m;
    }
    if (floor(b) != b) {
        return params.nan;
    }
    let odd = abs(b) < 16777216.0 && (i32(abs(b)) & 1) == 1;
    return select(m, -m, odd);
}

fn pow4(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(pow1(a.x, b.x), pow1(a.y, b.y), pow1(a.z, b.z), pow1(a.w, b.w));
}

fn flag(c: vec4<bool>) -> vec4<f32> {
    return select(vec4<f32>(0.0), vec4<f32>(1.0), c);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = linear_index(wg, nwg, lid);
    if (t >= params.total) {
        return;
    }
    let x = t % params.out_w;
    let y = (t / params.out_w) % params.out_h;
    let s = t / (params.out_w * params.out_h);
    let r = combine(load_a(y, x, s), load_b(y, x, s), load_c(y, x, s));
    let i = (s * params.out_h + y) * params.out_w + x;
    y_store(i, keep_lanes(r, s, params.out_c));
}
