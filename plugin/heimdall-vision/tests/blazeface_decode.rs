//! Anchors and BlazeFace decoding checked against values computed by hand from MediaPipe's
//! formulas (see the module docs of `anchors` and `blazeface`).

use heimdall_vision::anchors::{SsdAnchorsOptions, generate_anchors};
use heimdall_vision::blazeface::{BlazeFaceDecoder, NUM_COORDS, weighted_nms};
use heimdall_vision::{Detection, Rect, Vec2};

const TOL: f32 = 1e-6;

#[test]
fn short_range_anchors_count_and_positions() {
    let a = generate_anchors(&SsdAnchorsOptions::face_detection_short_range());
    // 16x16 cells x 2 anchors (stride 8) + 8x8 cells x 6 anchors (three stride-16 layers x 2).
    assert_eq!(a.len(), 896);
    // First two: cell (0, 0) of the 16x16 map, centre 0.5 / 16.
    for anchor in &a[..2] {
        assert!((anchor.x_center - 0.03125).abs() < TOL);
        assert!((anchor.y_center - 0.03125).abs() < TOL);
        assert_eq!((anchor.w, anchor.h), (1.0, 1.0));
    }
    // Third: cell (1, 0): x = 1.5 / 16.
    assert!((a[2].x_center - 0.09375).abs() < TOL && (a[2].y_center - 0.03125).abs() < TOL);
    // Last of the 16x16 map (index 511): cell (15, 15), 15.5 / 16.
    assert!((a[511].x_center - 0.96875).abs() < TOL && (a[511].y_center - 0.96875).abs() < TOL);
    // First of the 8x8 map (index 512): 0.5 / 8; six anchors share it.
    for anchor in &a[512..518] {
        assert!((anchor.x_center - 0.0625).abs() < TOL && (anchor.y_center - 0.0625).abs() < TOL);
    }
    // Cell (x 3, y 2) of the 8x8 map starts at 512 + (2 * 8 + 3) * 6 = 626.
    assert!((a[626].x_center - 3.5 / 8.0).abs() < TOL && (a[626].y_center - 2.5 / 8.0).abs() < TOL);
    // Last (895): cell (7, 7), 7.5 / 8.
    assert!((a[895].x_center - 0.9375).abs() < TOL && (a[895].y_center - 0.9375).abs() < TOL);
}

#[test]
fn anchor_sizes_without_fixed_size_follow_the_scale_formula() {
    let mut o = SsdAnchorsOptions::face_detection_short_range();
    o.fixed_anchor_size = false;
    let a = generate_anchors(&o);
    // Layer 0: scale = min_scale = 0.1484375; interpolated: sqrt(0.1484375 * s1) with
    // s1 = 0.1484375 + (0.75 - 0.1484375) / 3 = 0.3489583.
    let s1 = 0.1484375f32 + (0.75 - 0.1484375) / 3.0;
    assert!((a[0].w - 0.1484375).abs() < TOL && (a[0].h - 0.1484375).abs() < TOL);
    assert!((a[1].w - (0.1484375 * s1).sqrt()).abs() < TOL);
    // 8x8 map: layers 1, 2, 3 with scales s1, s2, s3 = 0.75 and the last one's interpolated
    // scale sqrt(0.75 * 1.0).
    let s2 = 0.1484375f32 + (0.75 - 0.1484375) * 2.0 / 3.0;
    let want = [
        s1,
        (s1 * s2).sqrt(),
        s2,
        (s2 * 0.75).sqrt(),
        0.75,
        0.75f32.sqrt(),
    ];
    for (k, w) in want.iter().enumerate() {
        assert!(
            (a[512 + k].w - w).abs() < 1e-5,
            "anchor {k}: {} vs {w}",
            a[512 + k].w
        );
    }
}

fn logit(p: f32) -> f32 {
    (p / (1.0 - p)).ln()
}

/// Raw tensors with three boxes above the threshold (two overlapping, one apart) and one below.
fn hand_made_tensors() -> (Vec<f32>, Vec<f32>) {
    let mut reg = vec![0.0f32; 896 * NUM_COORDS];
    let mut scores = vec![-10.0f32; 896];
    let mut set = |i: usize, raw: [f32; 4], kp0: [f32; 2], p: f32| {
        let r = &mut reg[i * NUM_COORDS..(i + 1) * NUM_COORDS];
        r[..4].copy_from_slice(&raw);
        r[4..6].copy_from_slice(&kp0);
        scores[i] = logit(p);
    };
    // Anchor 728 = 512 + (4 * 8 + 4) * 6: centre (4.5 / 8, 4.5 / 8) = (0.5625, 0.5625).
    // Box A: centred on it, 32 / 128 = 0.25 wide and high; keypoint 0 at (-0.1, -0.05) from it.
    set(728, [0.0, 0.0, 32.0, 32.0], [-12.8, -6.4], 0.8);
    // Box B, same anchor centre (729), shifted right by 6.4 / 128 = 0.05; IoU with A = 2/3.
    set(729, [6.4, 0.0, 32.0, 32.0], [-6.4, -6.4], 0.6);
    // Box C: anchor 68 = (2 * 16 + 2) * 2, centre (2.5 / 16, 2.5 / 16) = 0.15625; 0.1 wide.
    set(68, [0.0, 0.0, 12.8, 12.8], [0.0, 0.0], 0.9);
    // Box D: over C but scoring 0.4 < 0.5: dropped before NMS, so C stays as it is.
    set(69, [3.2, 3.2, 12.8, 12.8], [0.0, 0.0], 0.4);
    (reg, scores)
}

#[test]
fn decode_and_weighted_nms_by_hand() {
    let (reg, scores) = hand_made_tensors();
    let dec = BlazeFaceDecoder::short_range();
    let raw = dec.decode_raw(&reg, &scores).unwrap();
    assert_eq!(raw.len(), 3);
    let dets = dec.decode(&reg, &scores).unwrap();
    assert_eq!(dets.len(), 2, "{dets:#?}");

    // Best first: C, untouched.
    let c = &dets[0];
    assert!((c.score - 0.9).abs() < 1e-5);
    let want_c = Rect::new(0.15625 - 0.05, 0.15625 - 0.05, 0.1, 0.1);
    assert_rect(c.bbox, want_c);
    assert_vec(c.keypoints[0], Vec2::splat(0.15625));

    // A and B merged, weights 0.8 and 0.6 (total 1.4); score stays A's.
    let m = &dets[1];
    assert!((m.score - 0.8).abs() < 1e-5);
    // xmin = (0.8 * 0.4375 + 0.6 * 0.4875) / 1.4 = 0.458929; xmax = (0.8 * 0.6875 + 0.6 *
    // 0.7375) / 1.4 = 0.708929; y unchanged 0.4375..0.6875.
    assert_rect(m.bbox, Rect::new(0.6425 / 1.4, 0.4375, 0.25, 0.25));
    // Keypoint 0: A (0.4625, 0.5125), B (0.5125, 0.5125) → x = (0.37 + 0.3075) / 1.4.
    assert_vec(m.keypoints[0], Vec2::new(0.6775 / 1.4, 0.5125));
    // Other keypoints were 0 offsets: the anchor centre in both.
    assert_vec(m.keypoints[3], Vec2::splat(0.5625));
}

#[test]
fn nms_keeps_boxes_below_the_overlap_threshold_apart() {
    let d = |x: f32, score: f32| Detection {
        score,
        bbox: Rect::new(x, 0.0, 0.2, 0.2),
        class_id: 0,
        keypoints: vec![Vec2::ZERO; 6],
    };
    // IoU of boxes shifted by 0.1 = 0.02 / 0.06 = 1/3 > 0.3: merged; by 0.12: 0.016 / 0.064 =
    // 0.25 < 0.3: kept apart.
    assert_eq!(weighted_nms(vec![d(0.0, 0.9), d(0.1, 0.8)], 0.3).len(), 1);
    let out = weighted_nms(vec![d(0.12, 0.8), d(0.0, 0.9)], 0.3);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].bbox.x, 0.0);
    assert!(weighted_nms(Vec::new(), 0.3).is_empty());
}

fn assert_rect(got: Rect, want: Rect) {
    let d = [
        got.x - want.x,
        got.y - want.y,
        got.w - want.w,
        got.h - want.h,
    ];
    assert!(d.iter().all(|v| v.abs() < 1e-5), "{got:?} vs {want:?}");
}

fn assert_vec(got: Vec2, want: Vec2) {
    assert!(
        (got - want).abs().max_element() < 1e-5,
        "{got:?} vs {want:?}"
    );
}
