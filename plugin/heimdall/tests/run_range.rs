//! Heimdall's `RunPartial`: a model run as a sequence of random contiguous op ranges gives
//! bit-for-bit the outputs of one whole run, for every model.

mod common;

use heimdall_cpu::{CpuModel, CpuOptions};

fn check(name: &str) {
    let graph = common::graph(name, true);
    let inputs = common::random_inputs(&graph, 11);
    let whole = common::run(&graph, &inputs, 2);
    let n = graph.ops.len();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ n as u64;
    for trial in 0..3 {
        let mut m = CpuModel::compile(&graph, CpuOptions { threads: 2 }).expect("compile");
        for (i, x) in inputs.iter().enumerate() {
            m.set_input(i, x).expect("input");
        }
        // Random cut points, including empty ranges.
        let mut cuts = vec![0, n];
        for _ in 0..(3 + trial * 5) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            cuts.push((rng % (n as u64 + 1)) as usize);
        }
        cuts.sort_unstable();
        for w in cuts.windows(2) {
            m.run_range(w[0]..w[1]).expect("range");
        }
        for (i, reference) in whole.iter().enumerate() {
            let got = m.output(i).expect("output");
            assert!(
                got.iter()
                    .zip(reference)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{name}: output {i} differs when run as ranges {cuts:?}"
            );
        }
    }
    // Out-of-range requests are errors, not panics.
    let mut m = CpuModel::compile(&graph, CpuOptions { threads: 1 }).expect("compile");
    assert!(m.run_range(0..n + 1).is_err());
}

heimdall_testkit::mediapipe_model_tests!(check);
