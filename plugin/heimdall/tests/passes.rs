//! The load-time passes do not change any model's outputs: every model runs with passes on and
//! off on the same inputs (the golden photo input and a random one), and every output agrees.
//!
//! Folding weights and pads and dropping reshapes is exact; fusing an activation or a residual
//! add into the producer's epilogue computes the same operations in the same order, so the
//! tolerance is tight (rel-L2 ≤ 1e-6).

mod common;

use heimdall_testkit::rel_l2;

fn check(name: &str) {
    let on = common::graph(name, true);
    let off = common::graph(name, false);
    assert!(
        on.ops.len() < off.ops.len(),
        "{name}: the passes removed nothing ({} ops)",
        off.ops.len()
    );
    let golden = vec![common::golden_input(name)];
    for inputs in [golden, common::random_inputs(&on, 7)] {
        let a = common::run(&on, &inputs, 2);
        let b = common::run(&off, &inputs, 2);
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            let err = rel_l2(x, y);
            println!(
                "{name}: output {i}: passes on vs off rel-L2 {err:.2e} ({} vs {} ops)",
                on.ops.len(),
                off.ops.len()
            );
            assert!(
                err <= 1e-6,
                "{name}: output {i} differs with passes on/off: rel-L2 {err:.3e}"
            );
        }
    }
}

heimdall_testkit::mediapipe_model_tests!(check);
