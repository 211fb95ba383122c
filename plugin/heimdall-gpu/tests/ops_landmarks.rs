//! The GPU kernels of the MediaPipe custom ops (`Landmarks2TransformMatrix`,
//! `TransformTensorBilinear`, `TransformLandmarks`: `src/ops/landmarks_to_transform.rs`,
//! `transform_tensor_bilinear.rs`, `transform_landmarks.rs`) against the CPU reference (the same
//! families in heimdall-cpu), on seeded random cases: random landmarks, rotations (every
//! quadrant), anisotropic scales and target angles, odd crop sizes, feature maps with channel
//! counts not divisible by 4 and odd sizes, matrices that send part of the crop outside the
//! source (the zero border) and hand-picked border cases (samples exactly on the last
//! row/column, just past it, NaN), and the three chained as in face_landmark_with_attention.
//! Each case is a `common::Case` on given inputs (the one harness): relative L2 ≤ 1e-5 in f32,
//! ≤ 3e-3 in f16 and packed f16 (the graphs get `common::with_trailer` so that f16 really is
//! stored), no wgpu error. Whole-model placement is in `placement.rs`. Needs a GPU adapter
//! (lavapipe in CI); `HEIMDALL_SKIP_GPU=1` skips.

mod common;

use common::{Case, GraphBuilder, run_cpu};
use heimdall_gpu::Precision;
use heimdall_ir::{
    BinaryFn, Epilogue, Graph, Landmarks2TransformMatrixAttrs, OpKind, TransformLandmarksAttrs,
    TransformTensorBilinearAttrs, UnaryKind,
};

/// A small seeded generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `[lo, hi)`.
    fn f(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next() >> 40) as f32 / (1u64 << 24) as f32)
    }

    /// Uniform in `lo..hi`.
    fn u(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo) as u64) as usize
    }
}

/// `graph` on `inputs` against the CPU backend in every precision ([`Case::given`]: relative L2
/// within the kernel tolerance); panics above it. Returns the largest error per precision (f32,
/// f16, packed f16).
fn check(what: &str, graph: &Graph, inputs: &[Vec<f32>]) -> [f64; 3] {
    Case::given(what, graph.clone(), inputs.to_vec())
        .check()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn report(name: &str, worst: [f64; 3]) {
    println!(
        "{name}: worst relative L2 vs CPU: f32 {:.2e}, f16 {:.2e}, packed f16 {:.2e}",
        worst[0], worst[1], worst[2]
    );
}

fn merge(a: &mut [f64; 3], b: [f64; 3]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = x.max(y);
    }
}

/// `v` rounded to f16 values: what an f16 graph input stores, so that the f16 runs see the same
/// landmarks as the CPU reference. (Otherwise the f16 rounding of landmarks at about 100 pixels,
/// up to 1/32 pixel, turns and shifts the crop enough to change it by about 2e-2 relative on the
/// random feature maps of these tests: a property of storing landmarks in f16, as the model does
/// in f16 whichever backend runs these ops, not of the kernels.)
fn f16_exact(v: Vec<f32>) -> Vec<f32> {
    Precision::F16.decode(&Precision::F16.encode(&v))
}

/// Random landmarks `[1, n, 3]`: a cloud of half-size `spread` around `centre`, z random;
/// f16-exact.
fn landmarks(rng: &mut Rng, n: usize, centre: (f32, f32), spread: f32) -> Vec<f32> {
    f16_exact(
        (0..n)
            .flat_map(|_| {
                [
                    centre.0 + rng.f(-spread, spread),
                    centre.1 + rng.f(-spread, spread),
                    rng.f(-10.0, 10.0),
                ]
            })
            .collect(),
    )
}

/// Random `Landmarks2TransformMatrix` attributes for `n` landmarks; the rotation landmarks are
/// distinct unless `same_axis`.
fn l2tm_attrs(rng: &mut Rng, n: usize, same_axis: bool) -> Landmarks2TransformMatrixAttrs {
    let left = rng.u(0, n);
    let right = if same_axis {
        left
    } else {
        (left + rng.u(1, n)) % n
    };
    let count = rng.u(1, 2 * n);
    Landmarks2TransformMatrixAttrs {
        subset_idxs: (0..count).map(|_| rng.u(0, n)).collect(),
        left_rotation_idx: left,
        right_rotation_idx: right,
        target_rotation_radians: if rng.u(0, 3) == 0 {
            0.0
        } else {
            rng.f(-4.0, 4.0)
        },
        output_height: rng.u(1, 40),
        output_width: rng.u(1, 40),
        scale_x: rng.f(0.5, 3.0),
        scale_y: rng.f(0.5, 3.0),
    }
}

fn l2tm_graph(attrs: Landmarks2TransformMatrixAttrs, n: usize) -> Graph {
    let mut b = GraphBuilder::default();
    let lm = b.input(&[1, n, 3]);
    let m = b.op(
        OpKind::Landmarks2TransformMatrix(attrs),
        vec![lm],
        &[1, 4, 4],
        Epilogue::default(),
    );
    b.finish(vec![m])
}

/// `Landmarks2TransformMatrix` on random clouds: every quadrant of the rotation axis, random
/// target angles (beyond ±π too), scales, crop sizes, subsets with repeats; a degenerate axis
/// (left = right: atan2(0, 0)).
#[test]
fn landmarks_to_transform_matrix_matches_cpu() {
    let mut worst = [0.0; 3];
    for seed in 0..16u64 {
        let mut rng = Rng::new(seed);
        let n = rng.u(2, 90);
        let centre = (rng.f(20.0, 170.0), rng.f(20.0, 170.0));
        let spread = rng.f(5.0, 40.0);
        let lm = landmarks(&mut rng, n, centre, spread);
        let attrs = l2tm_attrs(&mut rng, n, seed == 3);
        let what = format!("Landmarks2TransformMatrix seed {seed} ({n} landmarks, {attrs:?})");
        merge(&mut worst, check(&what, &l2tm_graph(attrs, n), &[lm]));
    }
    report("Landmarks2TransformMatrix", worst);
}

/// The real model's configuration: 468 landmarks in a 192×192 frame, 80 subset indices, a 16×16
/// crop, scale 1.5 (as face_landmark_with_attention's crops), the rotation axis at random angles.
#[test]
fn landmarks_to_transform_matrix_model_like() {
    let mut worst = [0.0; 3];
    for seed in 0..8u64 {
        let mut rng = Rng::new(100 + seed);
        let n = 468;
        let lm = landmarks(&mut rng, n, (96.0, 96.0), 60.0);
        let attrs = Landmarks2TransformMatrixAttrs {
            subset_idxs: (0..80).map(|_| rng.u(0, n)).collect(),
            left_rotation_idx: 61,
            right_rotation_idx: 291,
            target_rotation_radians: 0.0,
            output_height: 16,
            output_width: 16,
            scale_x: 1.5,
            scale_y: 1.5,
        };
        let what = format!("Landmarks2TransformMatrix model-like seed {seed}");
        merge(&mut worst, check(&what, &l2tm_graph(attrs, n), &[lm]));
    }
    report("Landmarks2TransformMatrix (model-like)", worst);
}

/// A row-major 4×4 matrix with linear part `[[a, b], [c, d]]` and translation `(tx, ty)`; the
/// third column and the last two rows hold junk the consumers must ignore (the third column
/// meets z = 0).
fn matrix(a: f32, b: f32, tx: f32, c: f32, d: f32, ty: f32) -> Vec<f32> {
    vec![
        a, b, 7.0, tx, c, d, -3.0, ty, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0,
    ]
}

/// A random matrix: a rotation by any angle times anisotropic scales in `scale`, translation
/// in the ranges `t`.
fn random_matrix(rng: &mut Rng, scale: (f32, f32), t: ((f32, f32), (f32, f32))) -> Vec<f32> {
    let theta = rng.f(-3.2, 3.2);
    let (s, c) = theta.sin_cos();
    let (sx, sy) = (rng.f(scale.0, scale.1), rng.f(scale.0, scale.1));
    matrix(
        c * sx,
        -s * sy,
        rng.f(t.0.0, t.0.1),
        s * sx,
        c * sy,
        rng.f(t.1.0, t.1.1),
    )
}

/// A random matrix (rotation, scales in `scale`) mapping the centre of an `out` = (w, h) crop
/// to `centre`.
fn centred_matrix(
    rng: &mut Rng,
    scale: (f32, f32),
    out: (usize, usize),
    centre: (f32, f32),
) -> Vec<f32> {
    let mut m = random_matrix(rng, scale, ((0.0, 0.0), (0.0, 0.0)));
    let (cx, cy) = (out.0 as f32 / 2.0, out.1 as f32 / 2.0);
    m[3] = centre.0 - (m[0] * cx + m[1] * cy);
    m[7] = centre.1 - (m[4] * cx + m[5] * cy);
    m
}

fn ttb_graph(h: usize, w: usize, c: usize, oh: usize, ow: usize) -> Graph {
    let mut b = GraphBuilder::default();
    let x = b.input(&[1, h, w, c]);
    let m = b.input(&[1, 4, 4]);
    let attrs = TransformTensorBilinearAttrs {
        output_height: oh,
        output_width: ow,
    };
    let y = b.op(
        OpKind::TransformTensorBilinear(attrs),
        vec![x, m],
        &[1, oh, ow, c],
        Epilogue::default(),
    );
    b.finish(vec![y])
}

/// Zero pixels (every channel 0) of an NHWC result: the samples outside the source.
fn zero_pixels(v: &[f32], c: usize) -> usize {
    v.chunks_exact(c)
        .filter(|p| p.iter().all(|&x| x == 0.0))
        .count()
}

/// `TransformTensorBilinear` on random feature maps (odd sizes, 1-pixel rows and columns included,
/// channel counts mostly not divisible by 4) through random rotations, scales and translations
/// chosen so that most crops sample both inside and outside the source: the bilinear interior and
/// the zero border are both exercised (counted on the reference).
#[test]
fn transform_tensor_bilinear_matches_cpu() {
    let mut worst = [0.0; 3];
    let mut both = 0;
    for seed in 0..16u64 {
        let mut rng = Rng::new(1000 + seed);
        let (h, w) = (rng.u(1, 24), rng.u(1, 24));
        let c = [1, 2, 3, 5, 6, 7, 9, 13, 4, 32][rng.u(0, 10)];
        let (oh, ow) = (rng.u(1, 20), rng.u(1, 20));
        // Crops of about the source's size, their centre mapped near the source (up to a
        // quarter of its size outside), so that most cases sample both inside and outside.
        let base = h.max(w) as f32 / oh.max(ow) as f32;
        let centre = (rng.f(-0.25, 1.25) * w as f32, rng.f(-0.25, 1.25) * h as f32);
        let m = centred_matrix(&mut rng, (0.4 * base, 1.6 * base), (ow, oh), centre);
        let x = common::data(seed, h * w * c);
        let g = ttb_graph(h, w, c, oh, ow);
        let what = format!("TransformTensorBilinear seed {seed} ({h}x{w}x{c} -> {oh}x{ow})");
        let inputs = vec![x, m];
        let zeros = zero_pixels(&run_cpu(&g, &inputs)[0], c);
        println!("{what}: {zeros} of {} pixels outside", oh * ow);
        both += usize::from(zeros > 0 && zeros < oh * ow);
        merge(&mut worst, check(&what, &g, &inputs));
    }
    assert!(
        both >= 8,
        "only {both} cases sample both inside and outside"
    );
    report("TransformTensorBilinear", worst);
}

/// The real model's shape (48×48×32 → 16×16×32) and matrices like its crops (scales 1/2 to 2,
/// any rotation), centred anywhere in [0, 56)², so that some crops reach over the border.
#[test]
fn transform_tensor_bilinear_model_like() {
    let mut worst = [0.0; 3];
    let mut outside = 0;
    for seed in 0..6u64 {
        let mut rng = Rng::new(2000 + seed);
        let centre = (rng.f(0.0, 56.0), rng.f(0.0, 56.0));
        let m = centred_matrix(&mut rng, (0.5, 2.0), (16, 16), centre);
        let x = common::data(seed + 7, 48 * 48 * 32);
        let g = ttb_graph(48, 48, 32, 16, 16);
        let inputs = vec![x, m];
        outside += zero_pixels(&run_cpu(&g, &inputs)[0], 32);
        merge(
            &mut worst,
            check(
                &format!("TransformTensorBilinear model-like seed {seed}"),
                &g,
                &inputs,
            ),
        );
    }
    assert!(
        outside > 0 && outside < 6 * 16 * 16,
        "{outside} samples outside"
    );
    report("TransformTensorBilinear (model-like)", worst);
}

/// Border cases on a 3×4 source with 5 channels: identity into a larger crop (last row/column
/// outside), samples exactly on the last column/row (inclusive, the missing neighbours weigh 0),
/// just past it (zero), just before 0 (zero), a 90° rotation, a downscale by 2 (pixel-centre
/// correction), an upscale by 2 (its first column at -0.25: zero), and NaN, huge and infinite
/// third-column matrices (all zero: the third column meets z = 0, and ∞ · 0 is NaN).
#[test]
fn transform_tensor_bilinear_border_cases() {
    let (h, w, c) = (3, 4, 5);
    let x: Vec<f32> = common::data(42, h * w * c)
        .iter()
        .map(|v| v + 2.0)
        .collect();
    let cases: Vec<(&str, Vec<f32>, usize, usize)> = vec![
        (
            "identity, larger crop",
            matrix(1.0, 0.0, 0.0, 0.0, 1.0, 0.0),
            5,
            6,
        ),
        (
            "last column exactly",
            matrix(1.0, 0.0, 3.0, 0.0, 1.0, 0.5),
            1,
            1,
        ),
        (
            "last row exactly",
            matrix(1.0, 0.0, 2.5, 0.0, 1.0, 2.0),
            1,
            1,
        ),
        ("corner exactly", matrix(1.0, 0.0, 3.0, 0.0, 1.0, 2.0), 1, 1),
        (
            "just past the last column",
            matrix(1.0, 0.0, 3.001, 0.0, 1.0, 1.0),
            1,
            1,
        ),
        (
            "just past the last row",
            matrix(1.0, 0.0, 1.0, 0.0, 1.0, 2.001),
            1,
            1,
        ),
        (
            "just before 0",
            matrix(1.0, 0.0, -0.001, 0.0, 1.0, 0.5),
            2,
            2,
        ),
        (
            "half-pixel shift",
            matrix(1.0, 0.0, 0.5, 0.0, 1.0, 0.25),
            3,
            4,
        ),
        (
            "rotation by 90°",
            matrix(0.0, -1.0, 4.0, 1.0, 0.0, 0.0),
            4,
            3,
        ),
        ("downscale by 2", matrix(2.0, 0.0, 0.0, 0.0, 2.0, 0.0), 2, 2),
        ("upscale by 2", matrix(0.5, 0.0, 0.0, 0.0, 0.5, 0.0), 7, 9),
        ("NaN", matrix(f32::NAN, 0.0, 0.0, 0.0, 1.0, 0.0), 2, 2),
        (
            "infinite third column",
            {
                let mut m = matrix(1.0, 0.0, 0.5, 0.0, 1.0, 0.5);
                m[2] = f32::INFINITY;
                m
            },
            2,
            2,
        ),
        ("huge", matrix(1e30, 0.0, 0.0, 0.0, 1.0, 0.0), 2, 2),
    ];
    let mut worst = [0.0; 3];
    for (name, m, oh, ow) in cases {
        let g = ttb_graph(h, w, c, oh, ow);
        merge(
            &mut worst,
            check(
                &format!("TransformTensorBilinear {name}"),
                &g,
                &[x.clone(), m],
            ),
        );
    }
    report("TransformTensorBilinear (border cases)", worst);
}

fn tl_graph(n: usize, d: usize) -> Graph {
    let mut b = GraphBuilder::default();
    let lm = b.input(&[1, n, d]);
    let m = b.input(&[1, 4, 4]);
    let y = b.op(
        OpKind::TransformLandmarks(TransformLandmarksAttrs {}),
        vec![lm, m],
        &[1, n, d],
        Epilogue::default(),
    );
    b.finish(vec![y])
}

/// `TransformLandmarks` with 2-D and 3-D landmarks (odd counts, z copied) through random
/// matrices like the model's (crop pixels → frame pixels).
#[test]
fn transform_landmarks_matches_cpu() {
    let mut worst = [0.0; 3];
    for seed in 0..12u64 {
        let mut rng = Rng::new(3000 + seed);
        let n = rng.u(1, 150);
        let d = 2 + (seed as usize % 2);
        let lm: Vec<f32> = (0..n * d).map(|_| rng.f(-2.0, 18.0)).collect();
        let m = random_matrix(&mut rng, (0.5, 3.0), ((0.0, 192.0), (0.0, 192.0)));
        let what = format!("TransformLandmarks seed {seed} ([1, {n}, {d}])");
        merge(&mut worst, check(&what, &tl_graph(n, d), &[lm, m]));
    }
    report("TransformLandmarks", worst);
}

/// A smooth NHWC feature map (sums of slow sinusoids, as the model's maps after a few
/// convolutions), values in about [-1.5, 1.5].
fn smooth(h: usize, w: usize, c: usize, seed: u64) -> Vec<f32> {
    let phase = seed as f32;
    let mut v = Vec::with_capacity(h * w * c);
    for y in 0..h {
        for x in 0..w {
            for ch in 0..c {
                let (x, y, ch) = (x as f32, y as f32, ch as f32);
                v.push(
                    (0.37 * x + 0.23 * y + 0.9 * ch + phase).sin()
                        + 0.5 * (0.11 * x - 0.29 * y + 0.4 * ch).cos(),
                );
            }
        }
    }
    v
}

/// The three ops chained as in face_landmark_with_attention: landmarks → matrix → crop of a
/// feature map and crop landmarks mapped back to the frame; the matrix also passes through a
/// MUL (as the model's does) whose output the f32 matrix rule covers. The feature map is smooth:
/// the GPU's matrix may differ from the reference's by an ulp (atan2, sin and cos are not the
/// platform libm's), which moves every sample by about 4e-6 pixel; on white noise that alone is a
/// relative change of about 1e-5 (the sampler itself is exact, see the tests above).
#[test]
fn chained_like_the_model() {
    let mut worst = [0.0; 3];
    for seed in 0..4u64 {
        let mut rng = Rng::new(4000 + seed);
        let n = 40;
        let lm = landmarks(&mut rng, n, (24.0, 24.0), 14.0);
        let attrs = Landmarks2TransformMatrixAttrs {
            subset_idxs: (0..17).map(|_| rng.u(0, n)).collect(),
            left_rotation_idx: 0,
            right_rotation_idx: 1,
            target_rotation_radians: 0.0,
            output_height: 9,
            output_width: 11,
            scale_x: 1.5,
            scale_y: 1.5,
        };
        let (c, (h, w)) = (7, (48, 48));
        let mut b = GraphBuilder::default();
        let lm_t = b.input(&[1, n, 3]);
        let x = b.input(&[1, h, w, c]);
        let crop_lm = b.input(&[1, 13, 2]);
        let m = b.op(
            OpKind::Landmarks2TransformMatrix(attrs),
            vec![lm_t],
            &[1, 4, 4],
            Epilogue::default(),
        );
        let one = b.constant(&[1], 5);
        let m2 = b.op(
            OpKind::Binary(BinaryFn::Mul),
            vec![m, one],
            &[1, 4, 4],
            Epilogue::default(),
        );
        let ttb = TransformTensorBilinearAttrs {
            output_height: 9,
            output_width: 11,
        };
        let crop = b.op(
            OpKind::TransformTensorBilinear(ttb),
            vec![x, m],
            &[1, 9, 11, c],
            Epilogue::default(),
        );
        let act = b.op(
            OpKind::Unary(UnaryKind::Relu),
            vec![crop],
            &[1, 9, 11, c],
            Epilogue::default(),
        );
        let back = b.op(
            OpKind::TransformLandmarks(TransformLandmarksAttrs {}),
            vec![crop_lm, m2],
            &[1, 13, 2],
            Epilogue::default(),
        );
        let g = b.finish(vec![act, back]);
        let inputs = vec![
            lm,
            smooth(h, w, c, seed),
            (0..26).map(|_| rng.f(0.0, 11.0)).collect(),
        ];
        merge(
            &mut worst,
            check(&format!("chain seed {seed}"), &g, &inputs),
        );
    }
    report("chain", worst);
}
