//! The matrix product's micro-kernels against naive references.
#![allow(clippy::needless_range_loop)] // naive references index on purpose

use super::*;

/// Every micro-kernel this CPU can run.
fn micros() -> Vec<Micro> {
    #[allow(unused_mut)]
    let mut v = vec![Micro::Portable];
    #[cfg(target_arch = "x86_64")]
    {
        if Isa::Avx2.is_available() {
            v.push(Micro::Avx2);
        }
        if Isa::Avx512.is_available() {
            v.push(Micro::Avx512);
            v.push(Micro::Avx512Wide);
            v.push(Micro::Avx512X48);
            v.push(Micro::Avx512X64);
        }
    }
    #[cfg(target_arch = "aarch64")]
    if Isa::Neon.is_available() {
        v.push(Micro::Neon);
    }
    v
}

#[test]
fn gemm_segmented_matches_dense() {
    // A as 3 segments of 4 values at offsets 0, 10, 20 of rows of stride 7.
    let (m, n, segs, seg_len, lda) = (17, 21, [0usize, 10, 20], 4, 7);
    let a = data_i(m * lda + 24);
    let k = segs.len() * seg_len;
    let bm = data_i(k * n);
    for isa in micros() {
        let pb = PackedB::with_micro(isa, k, n, None, |kk, j| bm[kk * n + j]);
        let mut c = vec![0.0; m * n];
        // SAFETY: the last row reads up to (m - 1) * lda + 20 + 4 < a.len().
        unsafe { pb.gemm_segmented(a.as_ptr(), lda, &segs, seg_len, m, &mut c) };
        for i in 0..m {
            for j in 0..n {
                let mut s = 0.0;
                for (si, so) in segs.iter().enumerate() {
                    for t in 0..seg_len {
                        s += a[i * lda + so + t] * bm[(si * seg_len + t) * n + j];
                    }
                }
                assert_eq!(c[i * n + j], s, "{isa:?} at {i},{j}");
            }
        }
    }
}

fn data_i(len: usize) -> Vec<f32> {
    (0..len).map(|i| ((i * 7 % 13) as f32) - 6.0).collect()
}

#[test]
fn gemm_matches_naive_for_ragged_shapes() {
    for &(m, k, n) in &[
        (1, 1, 1),
        (13, 7, 17),
        (25, 33, 40),
        (12, 3, 16),
        (50, 130, 5),
    ] {
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 13) as f32) - 6.0).collect();
        let bm: Vec<f32> = (0..k * n).map(|i| ((i * 5 % 11) as f32) - 5.0).collect();
        let bias: Vec<f32> = (0..n).map(|j| j as f32).collect();
        for isa in micros() {
            let pb = PackedB::with_micro(isa, k, n, Some(&bias), |kk, j| bm[kk * n + j]);
            let mut c = vec![0.0; m * n];
            pb.gemm(&a, k, m, &mut c);
            for i in 0..m {
                for j in 0..n {
                    let mut s = bias[j];
                    for kk in 0..k {
                        s += a[i * k + kk] * bm[kk * n + j];
                    }
                    assert_eq!(c[i * n + j], s, "{isa:?} m{m} k{k} n{n} at {i},{j}");
                }
            }
        }
    }
}

/// On aarch64 the matrix product runs the NEON kernel (every aarch64 core has NEON); on x86-64
/// the widest of AVX-512 and AVX2.
#[test]
fn packing_picks_the_simd_kernel() {
    let pb = PackedB::new(7, 24, None, |k, j| (k + j) as f32);
    assert_eq!(pb.isa(), Isa::detect());
    #[cfg(target_arch = "aarch64")]
    assert_eq!(pb.micro, Micro::Neon, "NEON not selected");
    #[cfg(target_arch = "x86_64")]
    assert_ne!(
        pb.micro,
        Micro::Portable,
        "x86-64 without AVX2 or AVX-512 selected"
    );
    assert_eq!(
        PackedB::with_isa(Isa::Portable, 7, 24, None, |_, _| 0.0).micro,
        Micro::Portable
    );
}

/// `bias + sum a * b` in `k` order, each step one fused multiply-add (`f32::mul_add`): what
/// every SIMD kernel computes, bit for bit.
fn fused_reference(a: &[f32], b: &[f32], bias: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = bias[j];
            for kk in 0..k {
                s = a[i * k + kk].mul_add(b[kk * n + j], s);
            }
            c[i * n + j] = s;
        }
    }
    c
}

/// The same sum with each product rounded before it is added: what the portable kernel
/// computes, bit for bit.
fn unfused_reference(a: &[f32], b: &[f32], bias: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = bias[j];
            for kk in 0..k {
                s += a[i * k + kk] * b[kk * n + j];
            }
            c[i * n + j] = s;
        }
    }
    c
}

/// Random shapes (every tail of the register tiles and of NEON's four-step loads of A, `K`
/// from 1 to 300): each SIMD kernel equals the fused reference bit for bit and is within
/// rel-L2 1e-6 of the portable kernel (the reference's rounding of each product apart, on
/// values in [-1, 1)); the portable kernel equals the unfused reference bit for bit. The fused
/// and unfused sums differ on these data, so a SIMD path that is not selected or not fused
/// fails.
#[test]
fn simd_kernels_match_the_fused_reference_on_random_shapes() {
    use crate::kernels::testutil::data;
    let mut shapes = vec![(1, 1, 1), (6, 4, 8), (7, 5, 9), (13, 300, 17), (25, 33, 40)];
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..40 {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let (m, k, n) = (
            1 + s as usize % 30,
            1 + (s >> 8) as usize % 70,
            1 + (s >> 16) as usize % 50,
        );
        shapes.push((m, k, n));
    }
    let mut compared = 0;
    for (t, &(m, k, n)) in shapes.iter().enumerate() {
        let seed = 100 * t as u64;
        let (a, bm, bias) = (data(seed, m * k), data(seed + 1, k * n), data(seed + 2, n));
        let fused = fused_reference(&a, &bm, &bias, m, k, n);
        let unfused = unfused_reference(&a, &bm, &bias, m, k, n);
        for micro in micros() {
            let pb = PackedB::with_micro(micro, k, n, Some(&bias), |kk, j| bm[kk * n + j]);
            let mut c = vec![f32::NAN; m * n];
            pb.gemm(&a, k, m, &mut c);
            if micro == Micro::Portable {
                assert_eq!(c, unfused, "portable m{m} k{k} n{n}");
            } else {
                assert_eq!(c, fused, "{micro:?} m{m} k{k} n{n}");
                let e = heimdall_testkit::rel_l2(&c, &unfused);
                assert!(
                    e <= 1e-6,
                    "{micro:?} m{m} k{k} n{n}: rel-L2 {e} to portable"
                );
                compared += 1;
            }
        }
    }
    #[cfg(any(target_arch = "aarch64", target_arch = "x86_64"))]
    assert!(compared > 0, "no SIMD kernel ran");
    // The two references differ: the bit-exact checks can tell a fused kernel from the other.
    let (a, bm, bias) = (data(1, 13 * 300), data(2, 300 * 17), data(3, 17));
    assert_ne!(
        fused_reference(&a, &bm, &bias, 13, 300, 17),
        unfused_reference(&a, &bm, &bias, 13, 300, 17)
    );
}

/// The epilogue fused into the micro-kernels' stores gives the bits of the product followed by
/// `Epilogue::apply`, for every micro-kernel, every activation they fuse, with and without a
/// residual, on random shapes (partial panels) and on a column range of the output (an
/// offset into the tensor: residual and PReLU alphas indexed by the tensor's element).
#[test]
fn fused_epilogue_matches_apply() {
    use crate::kernels::testutil::data;
    let n_alpha = 70;
    let alpha = data(9, n_alpha);
    let alpha1 = [0.3f32];
    let acts = [
        Act::None,
        Act::Relu,
        Act::Relu6,
        Act::ReluN1To1,
        Act::HardSwish,
        Act::Prelu(&alpha),
        Act::Prelu(&alpha1),
    ];
    for (t, &(m, k)) in [(13, 5), (7, 40), (25, 17)].iter().enumerate() {
        let n = n_alpha;
        let seed = 10 * t as u64;
        // Values around the activations' kinks: scaled so that clamps and signs matter.
        let a: Vec<f32> = data(seed, m * k).iter().map(|v| 4.0 * v).collect();
        let (bm, bias) = (data(seed + 1, k * n), data(seed + 2, n));
        let residual: Vec<f32> = data(seed + 3, m * n).iter().map(|v| 3.0 * v).collect();
        for micro in micros() {
            let pb = PackedB::with_micro(micro, k, n, Some(&bias), |kk, j| bm[kk * n + j]);
            for act in acts {
                for residual in [None, Some(&residual[..])] {
                    let ep = Epilogue { residual, act };
                    assert!(pb.fuses(&ep));
                    let mut want = vec![0.0; m * n];
                    pb.gemm(&a, k, m, &mut want);
                    ep.apply_with(Isa::Portable, &mut want, 0, n);
                    let mut got = vec![f32::NAN; m * n];
                    pb.gemm_ep(&a, k, m, &mut got, Some((&ep, 0)));
                    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&got), bits(&want), "{micro:?} {act:?} m{m} k{k}");
                    // The columns from the second panel on, rows 1.., as a tile of the tensor.
                    let c0 = pb.panel_cols();
                    let (rows, cols) = (m - 1, n - c0);
                    let mut tile = vec![f32::NAN; rows * n];
                    // SAFETY: rows 1..m of A, columns c0..n of a tile of row stride n.
                    unsafe {
                        pb.gemm_tile(
                            a.as_ptr().add(k),
                            k,
                            &[0],
                            k,
                            rows,
                            c0..n,
                            tile.as_mut_ptr(),
                            n,
                            Some((&ep, n + c0)),
                        );
                    }
                    for i in 0..rows {
                        let got = &tile[i * n..i * n + cols];
                        let want = &want[(i + 1) * n + c0..(i + 2) * n];
                        assert_eq!(bits(got), bits(want), "{micro:?} {act:?} tile row {i}");
                    }
                }
            }
        }
    }
    // Not fused: the logistic and tanh (applied after the product).
    let pb = PackedB::new(3, 5, None, |_, _| 1.0);
    assert!(!pb.fuses(&Epilogue::act(Act::Logistic)));
    assert!(!pb.fuses(&Epilogue::act(Act::Tanh)));
    assert!(!pb.fuses(&Epilogue::act(Act::Prelu(&[1.0, 2.0]))));
}
