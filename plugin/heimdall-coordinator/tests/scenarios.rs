//! The repository's scenario files: acceptance on immersive shopping, and scenario validation.

use std::path::PathBuf;

use heimdall_coordinator::sim::{Scenario, simulate};

fn scenario_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../assets/scenarios")
        .join(name)
}

fn load(name: &str) -> Scenario {
    Scenario::from_file(&scenario_path(name)).unwrap()
}

/// Heimdall's headline (paper sec. 9.2) on our shopping scenario: max_total_utility keeps >= 99.5 %
/// of frames on time and >= 29 fps in every 1/3 s window, and StyleTransfer's worst latency stays
/// within 1.5x its isolated latency (same file, StyleTransfer alone) plus one frame period. The
/// uncoordinated baseline collapses on the same file.
#[test]
fn shopping_max_total_utility_meets_targets_and_fifo_collapses() {
    let sc = load("immersive_shopping.json");
    let period = 1000.0 / sc.frame_rate;
    let r = simulate(&sc, "max_total_utility", false).unwrap().report;
    assert!(r.frames.on_time_rate >= 0.995, "{:?}", r.frames);
    assert!(r.frames.fps_min_window >= 29.0, "{:?}", r.frames);
    let iso = simulate(
        &sc.only("style_transfer").unwrap(),
        "max_total_utility",
        false,
    )
    .unwrap()
    .report;
    let iso_lat = iso.dnns[0].latency_ms.max;
    // Isolated: 51.6 ms of GPU ops, 14 x 0.6 ms of CPU ops, interleaved with 2.7 ms renders.
    assert!(iso_lat > 60.0 && iso_lat < 90.0, "isolated {iso_lat}");
    let st = r.dnn("style_transfer").unwrap();
    assert_eq!(st.completed, 11, "every StyleTransfer event is served");
    assert!(
        st.latency_ms.max <= 1.5 * iso_lat + period,
        "StyleTransfer worst {} vs bound {}",
        st.latency_ms.max,
        1.5 * iso_lat + period
    );
    for d in &r.dnns {
        assert!(d.completed > 0, "{} starved", d.name);
    }

    let f = simulate(&sc, "fifo", false).unwrap().report;
    assert!(f.frames.on_time_rate < 0.5, "fifo {:?}", f.frames);
    assert!(f.frames.fps_min_window < 10.0, "fifo {:?}", f.frames);
    assert!(f.frames.fps_mean < 20.0, "fifo {:?}", f.frames);
    let fst = f.dnn("style_transfer").unwrap();
    assert!(
        fst.latency_ms.max > 3.0 * st.latency_ms.max,
        "fifo StyleTransfer {:?}",
        fst.latency_ms
    );
}

#[test]
fn every_scenario_file_runs_every_policy() {
    for file in [
        "immersive_shopping.json",
        "ar_emoji.json",
        "interactive_workspace.json",
    ] {
        let sc = load(file);
        for policy in [
            "max_total_utility",
            "max_min_utility",
            "least_slack_time",
            "fifo",
            "layers:5",
        ] {
            let r = simulate(&sc, policy, false).unwrap().report;
            assert_eq!(r.policy, policy);
            assert!(r.frames.rendered > 0);
            let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
            for key in [
                "target_fps",
                "rendered",
                "on_time_rate",
                "fps_mean",
                "fps_min_window",
            ] {
                assert!(
                    json["frames"][key].is_number(),
                    "{file} {policy} frames.{key}"
                );
            }
            for d in json["dnns"].as_array().unwrap() {
                for key in [
                    "completed",
                    "deadline_miss_rate",
                    "gpu_busy_ms",
                    "cpu_busy_ms",
                    "offloaded_ms",
                ] {
                    assert!(d[key].is_number(), "{key}");
                }
                for key in ["mean", "p99", "max"] {
                    assert!(d["latency_ms"][key].is_number());
                }
            }
            assert!(json["scheduler"]["decision_us_mean"].is_number());
            assert!(json["scheduler"]["decision_us_max"].is_number());
            assert!(r.to_table().contains("fps"));
        }
        if file != "immersive_shopping.json" {
            let r = simulate(&sc, "max_total_utility", false).unwrap().report;
            assert!(r.frames.on_time_rate >= 0.99, "{file}: {:?}", r.frames);
        }
    }
}

#[test]
fn style_transfer_has_its_14_fallback_ops_and_table_2_latency() {
    let sc = load("immersive_shopping.json");
    let st = sc.dnns.iter().find(|d| d.name == "style_transfer").unwrap();
    assert_eq!(st.cpu_only_ops.len(), 14);
    assert_eq!(st.gpu_op_ms.len(), 120);
    let total: f64 = (0..120)
        .map(|i| {
            if st.cpu_only_ops.contains(&i) {
                st.cpu_op_ms[i]
            } else {
                st.gpu_op_ms[i]
            }
        })
        .sum();
    assert!(
        (total - 60.0).abs() < 0.1,
        "Table 2 says 60 ms, got {total}"
    );
}

fn err(text: &str) -> String {
    Scenario::from_json(text).unwrap_err().to_string()
}

const OK: &str = r#"{"frame_rate": 30, "render_ms": 2.7, "duration_s": 1, "cpu_workers": 1,
  "dnns": [{"name": "m", "gpu_op_ms": [1, 2], "cpu_op_ms": [3, 4], "request": {"period_ms": 100},
            "utility": {"l0": 1, "beta": 1, "gamma": 1}}]}"#;

#[test]
fn scenario_errors_name_the_field() {
    assert!(Scenario::from_json(OK).is_ok());
    assert!(err(&OK.replace("\"cpu_workers\"", "\"cpu_wrokers\"")).contains("cpu_wrokers"));
    assert!(err(&OK.replace("\"gamma\"", "\"gama\"")).contains("gama"));
    assert!(
        err(&OK.replace("\"period_ms\": 100", "\"period_ms\": 100, \"every\": 1"))
            .contains("every")
    );
    assert!(err(&OK.replace("[3, 4]", "[3]")).contains("dnns[0].cpu_op_ms"));
    assert!(err(&OK.replace("[1, 2]", "[1, -2]")).contains("dnns[0].gpu_op_ms[1]"));
    assert!(err(&OK.replace("\"frame_rate\": 30", "\"frame_rate\": 0")).contains("frame_rate"));
    assert!(err(&OK.replace("\"render_ms\": 2.7", "\"render_ms\": -1")).contains("render_ms"));
    // A scene longer than the frame leaves the DNNs no GPU budget: valid (issue 34).
    assert!(Scenario::from_json(&OK.replace("\"render_ms\": 2.7", "\"render_ms\": 40")).is_ok());
    assert!(err(&OK.replace("{\"period_ms\": 100}", "{}")).contains("dnns[0].request"));
    assert!(
        err(&OK.replace("\"request\"", "\"cpu_only_ops\": [5], \"request\""))
            .contains("dnns[0].cpu_only_ops[0]")
    );
    assert!(err(&OK.replace("\"gamma\": 1", "\"gamma\": 0")).contains("dnns[0].utility.gamma"));
    assert!(
        err(&OK.replace("\"utility\"", "\"deadline_ms\": -5, \"utility\"")).contains("deadline_ms")
    );
}
