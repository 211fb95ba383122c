// landmarks_to_transform: MediaPipe custom op Landmarks2TransformMatrix (version 2), as the
//   CPU reference (heimdall-cpu src/ops/landmarks_to_transform.rs):
//   rotation = target - atan2(R.y - L.y, R.x - L.x); the subset landmarks rotated by `rotation`
//   give an axis-aligned box (w, h, middle); the middle rotated back is the centre c; with
//   r = -rotation, s_x = scale_x * w / out_w, s_y = scale_y * h / out_h the output is
//   Shift(c) . Rot(r) . Scale(s_x, s_y) . Shift(-out_w / 2, -out_h / 2), row-major 4x4.
//   atan2, sin and cos are computed here (Cephes-style minimax polynomials, about 1 ulp) rather
//   than with WGSL's builtins, whose required accuracy is only 2^-11 absolute (sin, cos) and
//   4096 ulp (atan2): the matrix places every sample of the crop, so it must not depend on the
//   driver's approximations.
// Layout: lm is [1, N, 3] in PHWC4 (H = 1, W = N, C = 3): landmark i is vec4 i, lanes x, y, z.
//   idx holds the subset indices as f32 values (exact integers), four per vec4.
//   y is [1, 4, 4] in PHWC4 (H = 1, W = 4, C = 4): matrix row r is vec4 r, lanes the columns.
// Threads: one work group; thread 0 computes the whole matrix (a loop over the subset, with
//   MediaPipe's strict min/max comparisons in subset order) and writes its 4 rows.
// Bindings: 0 params, lm (read), idx (read f32), y (write).
// Params: `GpuLandmarksToMatrixParams` (heimdall-gpu src/ops/landmarks_to_transform.rs), declared by composition.

const PI: f32 = 3.14159265358979;
const PI_2: f32 = 1.57079632679490;
const PI_4: f32 = 0.785398163397448;

// `v` times a runtime 1.0: the same value, which the compiler can neither fuse with a following
// addition into a fused multiply-add nor reassociate across (Mesa reorders chains of additions),
// so that sums round as the reference's (and the reductions below keep their extra precision).
fn opaque(v: f32) -> f32 {
    return v * params.one;
}

// atan(x) for x >= 0 (Cephes atanf: reduction to |z| <= tan(pi/8), degree-4 polynomial in z^2).
fn atan_pos(x: f32) -> f32 {
    var y = 0.0;
    var z = x;
    if (x > 2.414213562373095) {
        y = PI_2;
        z = -1.0 / x;
    } else if (x > 0.4142135623730950) {
        y = PI_4;
        z = (x - 1.0) / (x + 1.0);
    }
    let zz = z * z;
    let p = (((8.05374449538e-2 * zz - 1.38776856032e-1) * zz + 1.99777106478e-1) * zz
        - 3.33329491539e-1) * zz * z + z;
    return y + opaque(p);
}

// atan2(y, x) in (-pi, pi], with the quadrant conventions of libm for finite arguments
// (atan2(+-0, +0) = +-0, atan2(+-0, -0) = +-pi); NaN in, NaN out.
fn atan2_acc(y: f32, x: f32) -> f32 {
    if (y != y || x != x) {
        return y + x;
    }
    let y_neg = (bitcast<u32>(y) >> 31u) != 0u;
    let x_neg = (bitcast<u32>(x) >> 31u) != 0u;
    let ay = abs(y);
    let ax = abs(x);
    var a: f32;
    if (ay == 0.0) {
        a = select(0.0, PI, x_neg);
    } else if (ax == 0.0) {
        a = PI_2;
    } else if (ay > ax) {
        // atan(ay / ax) = pi/2 - atan(ax / ay): keeps the quotient <= 1.
        a = PI_2 - atan_pos(ax / ay);
        if (x_neg) {
            a = PI - a;
        }
    } else {
        a = atan_pos(ay / ax);
        if (x_neg) {
            a = PI - a;
        }
    }
    return select(a, -a, y_neg);
}

// (sin x, cos x): Cody-Waite reduction by pi/2 (three-part constant), Cephes sinf/cosf
// polynomials on [-pi/4, pi/4]. Exactly odd (sin) and even (cos) in x, like libm.
fn sin_cos(x: f32) -> vec2<f32> {
    let ax = abs(x);
    let k = floor(ax * 0.636619772367581 + 0.5);
    // pi/2 = DP1 + DP2 + DP3, DP1 and DP2 with few significant bits (k * DP exact).
    let r = opaque(opaque(ax - k * 1.5703125) - k * 4.837512969970703125e-4)
        - k * 7.54978995489188216e-8;
    let z = r * r;
    let s = ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * r + r;
    let c = opaque(((2.443315711809948e-5 * z - 1.388731625493765e-3) * z
        + 4.166664568298827e-2) * z * z - 0.5 * z) + 1.0;
    let q = u32(k) & 3u;
    var sv = s;
    var cv = c;
    if (q == 1u) {
        sv = c;
        cv = -s;
    } else if (q == 2u) {
        sv = -s;
        cv = -c;
    } else if (q == 3u) {
        sv = -c;
        cv = s;
    }
    let neg = (bitcast<u32>(x) >> 31u) != 0u;
    return vec2<f32>(select(sv, -sv, neg), cv);
}

fn landmark(i: u32) -> vec2<f32> {
    return lm_load(i).xy;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32) {
    if (lid != 0u) {
        return;
    }
    // Rotation that brings the left-to-right axis to the target angle.
    let l = landmark(params.left);
    let rr = landmark(params.right);
    let rotation = params.target_rotation - atan2_acc(rr.y - l.y, rr.x - l.x);
    let sc = sin_cos(rotation);
    let sin_a = sc.x;
    let cos_a = sc.y;
    // Axis-aligned box of the rotated subset: strict comparisons from the first point.
    let p0 = landmark(u32(idx_load1(0u)));
    var min_x = opaque(cos_a * p0.x) + opaque(-sin_a * p0.y);
    var min_y = opaque(sin_a * p0.x) + opaque(cos_a * p0.y);
    var max_x = min_x;
    var max_y = min_y;
    for (var k = 1u; k < params.count; k++) {
        let p = landmark(u32(idx_load1(k)));
        let x = opaque(cos_a * p.x) + opaque(-sin_a * p.y);
        let y = opaque(sin_a * p.x) + opaque(cos_a * p.y);
        if (max_x < x) {
            max_x = x;
        }
        if (max_y < y) {
            max_y = y;
        }
        if (min_x > x) {
            min_x = x;
        }
        if (min_y > y) {
            min_y = y;
        }
    }
    let crop_w = max_x - min_x;
    let crop_h = max_y - min_y;
    let mid_x = (min_x + max_x) / 2.0;
    let mid_y = (min_y + max_y) / 2.0;
    // Rotating back by -rotation: cos(-a) = cos a, sin(-a) = -sin a.
    let cos_b = cos_a;
    let sin_b = -sin_a;
    let centre_x = opaque(cos_b * mid_x) + opaque(-sin_b * mid_y);
    let centre_y = opaque(sin_b * mid_x) + opaque(cos_b * mid_y);
    // r = -rotation.
    let cos_r = cos_a;
    let sin_r = -sin_a;
    let s_x = params.scale_x * crop_w / f32(params.out_w);
    let s_y = params.scale_y * crop_h / f32(params.out_h);
    let m00 = cos_r * s_x;
    let m01 = -sin_r * s_y;
    let m10 = sin_r * s_x;
    let m11 = cos_r * s_y;
    let m03 = opaque(opaque(m00 * params.neg_half_w) + opaque(m01 * params.neg_half_h))
        + centre_x;
    let m13 = opaque(opaque(m10 * params.neg_half_w) + opaque(m11 * params.neg_half_h))
        + centre_y;
    y_store(0u, vec4<f32>(m00, m01, 0.0, m03));
    y_store(1u, vec4<f32>(m10, m11, 0.0, m13));
    y_store(2u, vec4<f32>(0.0, 0.0, 1.0, 0.0));
    y_store(3u, vec4<f32>(0.0, 0.0, 0.0, 1.0));
}
