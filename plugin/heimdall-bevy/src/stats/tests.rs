//! Tests of the statistics: intervals, windows, deadline misses, the convolution cache and the
//! guard in the JSON, resets.

use super::*;

#[test]
fn presented_frames_give_the_intervals_between_them() {
    let mut s = HeimdallStats::default();
    let t0 = std::time::Instant::now();
    for (i, ms) in [0, 10, 30, 45].into_iter().enumerate() {
        let mut phases = FramePhases {
            frame: Some(i as u64),
            ..Default::default()
        };
        phases.ms[PHASE_COUNT - 1] = i as f32;
        s.record_presented(t0 + Duration::from_millis(ms), Some(phases));
    }
    let got: Vec<f64> = s.frame_ms.iter().map(|d| d.round()).collect();
    assert_eq!(got, vec![10.0, 20.0, 15.0]);
    assert!(
        s.update_ms.is_empty(),
        "the main loop's intervals are apart"
    );
    // The phases line up with the intervals they explain; only the late one is listed.
    let late = s.late_frame_phases(0, 12.5);
    assert_eq!(late.len(), 2, "{late:?}");
    assert_eq!(late[0]["index"], 1);
    assert_eq!(late[0]["frame"], 2);
    assert_eq!(late[0]["phases_ms"]["finish_and_present"], 2.0);
    assert_eq!(late[1]["frame"], 3);
    let summary = phase_summaries(&s.frame_phases);
    assert_eq!(summary["finish_and_present"]["max"], 3.0);
}

#[test]
fn fps_window_finds_the_slow_second() {
    // 10 frames at 10 ms, then 5 frames at 50 ms.
    let s = HeimdallStats {
        frame_ms: [vec![10.0; 10], vec![50.0; 5]].concat(),
        ..Default::default()
    };
    let (mean, min) = s.fps(0, 5);
    assert!((mean - 1000.0 * 15.0 / 350.0).abs() < 1e-9);
    assert!((min - 20.0).abs() < 1e-9);
}

#[test]
fn deadline_misses_count_late_results_only() {
    let mut s = HeimdallStats::default();
    let e = Entity::from_raw_u32(7).expect("valid index");
    let d = Some(Duration::from_millis(100));
    for ms in [50, 100, 101, 250] {
        s.record_result("m", e, Duration::from_millis(ms), d, 0, Backend::Gpu);
    }
    let f = Entity::from_raw_u32(8).expect("valid index");
    s.record_result("free", f, Duration::from_secs(9), None, 0, Backend::Gpu);
    let m = &s.models["m"];
    assert_eq!(
        (m.results, m.deadline_misses),
        (4, 2),
        "101 ms and 250 ms are late"
    );
    let j = s.to_json(&HeimdallSettings::default(), "gpu", 0);
    assert_eq!(j["models"]["m"]["deadline_miss_rate"], 0.5);
    assert_eq!(
        j["models"]["free"]["deadline_misses"], 0,
        "no deadline, no miss"
    );
}

#[test]
fn conv_cache_means_over_runs() {
    use heimdall_ir::conv_cache::CacheCounts;
    let mut s = HeimdallStats::default();
    let e = Entity::from_raw_u32(3).expect("valid index");
    let run = |dirty, computed| CacheCounts {
        blocks: 64,
        dirty_blocks: dirty,
        tiles: 100,
        computed_tiles: computed,
    };
    s.record_result("m", e, Duration::from_millis(5), None, 0, Backend::Gpu);
    let j = s.to_json(&HeimdallSettings::default(), "gpu", 0);
    assert!(
        j["models"]["m"]["conv_cache"].is_null(),
        "no cached run yet"
    );
    // A first run computes everything, the next ones a quarter, then nothing.
    for (dirty, computed) in [(64, 100), (16, 25), (0, 0)] {
        s.record_conv_cache("m", e, &run(dirty, computed), 7, Some(0.1));
    }
    let m = &s.models["m"];
    assert_eq!(m.cache_runs, 3);
    assert!((m.cache_hit_rate_mean - (0.0 + 0.75 + 1.0) / 3.0).abs() < 1e-12);
    assert!((m.cache_dirty_block_rate_mean - (1.0 + 0.25) / 3.0).abs() < 1e-12);
    let j = s.to_json(&HeimdallSettings::default(), "gpu", 0);
    let c = &j["models"]["m"]["conv_cache"];
    assert_eq!(c["runs"], 3);
    assert_eq!(c["cached_ops"], 7);
    assert_eq!(c["hit_rate_last"], 1.0);
    assert!((c["saved_ms_mean"].as_f64().unwrap() - 0.1).abs() < 1e-12);
    assert!(c["decision"].is_null(), "no decision recorded");
}

/// A reset in the middle of a run (the apps' measured window) empties every history in
/// place: the same room, nothing allocated, and nothing of before left in the figures.
#[test]
fn a_reset_forgets_the_results_and_keeps_the_room() {
    let mut s = HeimdallStats::default();
    let e = Entity::from_raw_u32(3).expect("valid index");
    s.record_result(
        "m",
        e,
        Duration::from_millis(80),
        Some(Duration::from_millis(50)),
        0,
        Backend::Gpu,
    );
    s.frame_ms.push(16.7);
    let rooms = |s: &HeimdallStats| {
        let m = &s.models["m"];
        [
            s.frame_ms.as_ptr() as usize,
            s.gpu_frames.as_ptr() as usize,
            s.frame_phases.as_ptr() as usize,
            m.latencies_ms.as_ptr() as usize,
            m.stages.to_start.as_ptr() as usize,
        ]
    };
    let before = rooms(&s);
    s.reset();
    assert_eq!(rooms(&s), before);
    assert!(s.frame_ms.is_empty() && s.models["m"].latencies_ms.is_empty());
    let m = &s.to_json(&HeimdallSettings::default(), "gpu", 0)["models"]["m"];
    assert_eq!(
        (m["count"].as_u64(), m["deadline_misses"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(m["deadline_ms"].as_f64(), Some(50.0));
}

#[test]
fn a_conv_cache_decision_shows_without_runs_and_outlives_a_reset() {
    let mut s = HeimdallStats::default();
    let e = Entity::from_raw_u32(3).expect("valid index");
    s.record_conv_cache_decision("m", e, "dropped: too slow".into(), 0);
    s.record_result("m", e, Duration::from_millis(5), None, 0, Backend::Gpu);
    s.reset();
    assert_eq!(s.models["m"].results, 0);
    let j = s.to_json(&HeimdallSettings::default(), "gpu", 0);
    let c = &j["models"]["m"]["conv_cache"];
    assert_eq!(c["decision"], "dropped: too slow");
    assert_eq!(
        (c["runs"].as_u64(), c["cached_ops"].as_u64()),
        (Some(0), Some(0))
    );
}

#[test]
fn a_guard_decision_shows_in_the_json_and_outlives_a_reset() {
    use crate::guard::{GuardDecision, GuardOutcome};
    use heimdall_gpu::Precision;
    let mut s = HeimdallStats::default();
    let (a, b) = (
        Entity::from_raw_u32(3).expect("valid index"),
        Entity::from_raw_u32(4).expect("valid index"),
    );
    let decision = GuardDecision {
        precision: Precision::F16,
        overrides: vec![(1..2, Precision::F32)],
        f32_ranges: std::iter::once(1..2).collect(),
        ops: 6,
        bounds: vec![1e-2],
        errors_before: vec![f64::INFINITY],
        errors_after: vec![2e-4],
        whole_f32: false,
        passed: true,
        trials: 5,
        cap_reached: false,
        time: Duration::from_millis(40),
    };
    s.record_guard("m", a, &GuardStatus::Pending);
    s.record_guard("n", b, &GuardStatus::Failed("no reference".into()));
    let j = s.to_json(&HeimdallSettings::default(), "gpu", 0);
    assert_eq!(j["models"]["m"]["guard"]["state"], "pending");
    assert_eq!(j["models"]["n"]["guard"]["error"], "no reference");
    let decided = GuardStatus::Decided(GuardOutcome {
        decision: std::sync::Arc::new(decision),
        reused: false,
    });
    s.record_guard("m", a, &decided);
    s.reset();
    let j = s.to_json(&HeimdallSettings::default(), "gpu", 0);
    let g = &j["models"]["m"]["guard"];
    assert_eq!(g["state"], "decided");
    assert_eq!(g["reused"], false);
    assert_eq!(g["decision"]["f32_ranges"], json!([[1, 2]]));
    assert_eq!(g["decision"]["errors_before"], json!([null]));
    assert_eq!(
        g["decision"]["summary"],
        "f16 with ops 1..2 in f32 (1 of 6 ops)"
    );
    s.record_guard("m", a, &GuardStatus::Off);
    let j = s.to_json(&HeimdallSettings::default(), "gpu", 0);
    assert!(j["models"]["m"]["guard"].is_null());
}

/// Where a DNN runs and at what rate, in `stats.json`: its inferences on each processor, the
/// threads of a CPU inference, the rates and the shortfall the coordinator reported last, the
/// time spent in shortfall in the window (1.5 s of the 2.5 s after the reset here) and the
/// changes of processor.
#[test]
fn placement_rates_and_shortfall_in_the_json() {
    use crate::dnn::RateShortfall;
    let mut s = HeimdallStats::default();
    let e = Entity::from_raw_u32(3).expect("valid index");
    let at = |s: &mut HeimdallStats, ms: f64, p: &DnnPlacement| {
        s.now_ms = ms;
        s.record_placement("m", e, p);
    };
    let gpu = DnnPlacement {
        backend: Some(Backend::Gpu),
        cpu_threads: 4,
        requested_rate_hz: Some(10.0),
        ..Default::default()
    };
    let short = DnnPlacement {
        backend: Some(Backend::Cpu),
        granted_rate_hz: Some(2.5),
        shortfall: Some(RateShortfall {
            requested_hz: 10.0,
            granted_hz: 2.5,
            reason: "no GPU budget and the CPU is full".into(),
        }),
        ..gpu.clone()
    };
    at(&mut s, 0.0, &gpu);
    at(&mut s, 500.0, &short);
    s.now_ms = 1000.0;
    s.reset();
    at(&mut s, 2000.0, &DnnPlacement { ..short.clone() });
    at(&mut s, 2500.0, &gpu);
    at(&mut s, 3000.0, &short);
    for (ms, backend) in [(10, Backend::Cpu), (20, Backend::Gpu), (30, Backend::Cpu)] {
        s.record_result("m", e, Duration::from_millis(ms), None, 0, backend);
    }
    s.now_ms = 3500.0;
    let j = s.to_json(&HeimdallSettings::default(), "gpu", 0);
    let m = &j["models"]["m"];
    assert_eq!(m["placement"]["processor"], "cpu");
    assert_eq!(m["placement"]["cpu_inferences"], 2);
    assert_eq!(m["placement"]["gpu_inferences"], 1);
    assert_eq!(m["placement"]["cpu_threads"], 4);
    assert_eq!(
        m["placement"]["switches"], 2,
        "cpu -> gpu -> cpu after the reset"
    );
    assert_eq!(m["requested_rate_hz"], 10.0);
    assert_eq!(m["granted_rate_hz"], 2.5);
    assert_eq!(m["shortfall"]["granted_hz"], 2.5);
    assert_eq!(
        m["shortfall"]["reason"],
        "no GPU budget and the CPU is full"
    );
    // 1000..2500 and 3000..3500 in shortfall.
    assert_eq!(m["shortfall_s"], 1.5 + 0.5);
    assert_eq!(j["cpu_slots"], HeimdallSettings::default().cpu_slots());
    // A DNN the coordinator never placed: nulls, no time in shortfall.
    s.record_result(
        "free",
        Entity::from_raw_u32(4).unwrap(),
        Duration::ZERO,
        None,
        0,
        Backend::Gpu,
    );
    let j = s.to_json(&HeimdallSettings::default(), "gpu", 0);
    assert!(j["models"]["free"]["shortfall"].is_null());
    assert!(j["models"]["free"]["placement"]["processor"].is_null());
    assert_eq!(j["models"]["free"]["shortfall_s"], 0.0);
}
