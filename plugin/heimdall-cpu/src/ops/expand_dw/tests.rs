//! The fused expansion and depthwise convolution against the two ops run apart, bit for bit.

use super::*;
use crate::kernels::Isa;
use crate::kernels::testutil::data;

/// A `k x k` depthwise geometry of stride `s` and dilation `dil` on `h x w x c`, TFLite's SAME
/// padding.
fn dw_window(h: usize, w: usize, c: usize, k: usize, s: usize, dil: usize) -> Window {
    let reach = (k - 1) * dil + 1;
    let (oh, ow) = (h.div_ceil(s), w.div_ceil(s));
    let pad = |n: usize, o: usize| ((o - 1) * s + reach).saturating_sub(n) / 2;
    Window {
        in_h: h,
        in_w: w,
        in_c: c,
        out_h: oh,
        out_w: ow,
        out_c: c,
        k_h: k,
        k_w: k,
        stride_h: s,
        stride_w: s,
        dil_h: dil,
        dil_w: dil,
        pad_top: pad(h, oh),
        pad_left: pad(w, ow),
    }
}

/// The 1x1 geometry of `h x w x c` to `n` channels.
fn pw_window(h: usize, w: usize, c: usize, n: usize) -> Window {
    Window {
        out_c: n,
        ..dw_window(h, w, c, 1, 1, 1)
    }
}

/// The pair against the expansion then the depthwise convolution run apart, bit for bit: 3x3
/// and 5x5 filters, strides 1 and 2, a dilation, one-row and one-column images, expansion
/// activations, depthwise epilogues with a residual and one the expansion's kernels do not
/// fuse (logistic), on the AVX-512/NEON and portable depthwise kernels, in both modes, on 1 to
/// 4 and 7 threads.
#[test]
fn the_pair_gives_the_two_ops_bits() {
    let shapes = [
        // (h, w, c, mid, k, s, dil)
        (112, 20, 16, 64, 3, 2, 1),
        (30, 17, 8, 40, 3, 1, 1),
        (29, 23, 5, 33, 5, 2, 1),
        (21, 9, 3, 24, 5, 1, 1),
        (18, 11, 4, 20, 3, 1, 2),
        (1, 13, 6, 16, 3, 1, 1),
        (9, 1, 6, 17, 3, 2, 1),
    ];
    let pw_acts = [Act::Relu6, Act::None, Act::HardSwish, Act::Logistic];
    for (case, &(h, w, c, mid, k, s, dil)) in shapes.iter().enumerate() {
        let seed = 100 * case as u64;
        let (pw, dw) = (pw_window(h, w, c, mid), dw_window(h, w, mid, k, s, dil));
        let input = data(seed, h * w * c);
        let (f_pw, b_pw) = (data(seed + 1, mid * c), data(seed + 2, mid));
        let (f_dw, b_dw) = (data(seed + 3, k * k * mid), data(seed + 4, mid));
        let out_len = dw.out_h * dw.out_w * mid;
        let residual = data(seed + 5, out_len);
        let eps = [
            Epilogue {
                residual: Some(&residual),
                act: Act::Relu6,
            },
            Epilogue::NONE,
            Epilogue {
                residual: None,
                act: Act::Logistic,
            },
        ];
        for isa in [Isa::detect(), Isa::Portable] {
            for (i, ep) in eps.iter().enumerate() {
                let pw_act = pw_acts[(case + i) % pw_acts.len()];
                let pk = PackedConv::new(&f_pw, Some(&b_pw), pw);
                let dk = PackedDepthwise::with_isa(isa, &f_dw, Some(&b_dw), dw);
                let one = Par::new(1);
                let mut mid_t = vec![0.0; h * w * mid];
                let pw_ep = Epilogue {
                    residual: None,
                    act: pw_act,
                };
                pk.run(&one, &input, &mut mid_t, &mut [], &pw_ep);
                let mut want = vec![0.0; out_len];
                dk.run(&one, &mid_t, &mut want, ep);
                for (mode, threads) in [Mode::Rows, Mode::Apart]
                    .into_iter()
                    .flat_map(|m| [1, 2, 3, 4, 7].map(|t| (m, t)))
                {
                    let pair = ExpandDw::new(pk.clone(), pw_act, dk.clone(), mode);
                    let par = Par::new(threads);
                    let mut scratch = vec![f32::NAN; pair.scratch_len(threads)];
                    let mut got = vec![f32::NAN; out_len];
                    pair.run(&par, &input, &mut got, &mut scratch, ep);
                    let same = got
                        .iter()
                        .zip(&want)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(
                        same,
                        "{h}x{w}x{c} -> {mid}, k{k} s{s} d{dil}, {isa:?}, ep {i}, {mode:?}, {threads} threads"
                    );
                }
            }
        }
    }
}

/// The mode follows a thread's share of the expanded tensor: hand_landmark_lite's 112x112x64
/// runs by rows on 1 to 3 threads and apart on 4; its 56x56x96 by rows on one thread only.
#[test]
fn the_mode_follows_a_threads_share() {
    let big = 112 * 112 * 64;
    let modes = [1, 2, 3, 4].map(|t| Mode::for_threads(big, t));
    assert_eq!(modes, [Mode::Rows, Mode::Rows, Mode::Rows, Mode::Apart]);
    let mid = 56 * 56 * 96;
    let modes = [1, 2].map(|t| Mode::for_threads(mid, t));
    assert_eq!(modes, [Mode::Rows, Mode::Apart]);
}

/// With the expansion in half precision (aarch64 with FEAT_FP16; elsewhere there is no f16
/// convolution and nothing to check) the pair gives the f16 convolution's then the depthwise
/// convolution's bits, whatever mode it was built for.
#[test]
fn an_f16_expansion_gives_the_two_ops_bits() {
    let (h, w, c, mid) = (40, 24, 8, 48);
    let (pw, dw) = (pw_window(h, w, c, mid), dw_window(h, w, mid, 3, 2, 1));
    let input = data(1, h * w * c);
    let (f_pw, b_pw) = (data(2, mid * c), data(3, mid));
    let (f_dw, b_dw) = (data(4, 9 * mid), data(5, mid));
    let Some(k16) = F16Conv::new(&f_pw, Some(&b_pw), pw) else {
        return;
    };
    let pw_ep = Epilogue {
        residual: None,
        act: Act::Relu6,
    };
    let dk = PackedDepthwise::new(&f_dw, Some(&b_dw), dw);
    let one = Par::new(1);
    let mut expanded = vec![0.0; h * w * mid];
    let mut s16 = vec![0.0; fp16::scratch_len(&pw, 1)];
    k16.run(&one, &input, &mut expanded, &mut s16, &pw_ep);
    let mut want = vec![0.0; dw.out_h * dw.out_w * mid];
    dk.run(&one, &expanded, &mut want, &Epilogue::NONE);
    for mode in [Mode::Rows, Mode::Apart] {
        let pk = PackedConv::new(&f_pw, Some(&b_pw), pw);
        let pair = ExpandDw::new(pk, Act::Relu6, dk.clone(), mode).with_f16_expansion(k16.clone());
        for threads in [1, 2, 3] {
            let par = Par::new(threads);
            let mut scratch = vec![f32::NAN; pair.scratch_len(threads)];
            let mut got = vec![f32::NAN; want.len()];
            pair.run(&par, &input, &mut got, &mut scratch, &Epilogue::NONE);
            let same = got
                .iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{mode:?}, {threads} threads");
        }
    }
}
