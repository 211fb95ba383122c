//! Hostile input for the ONNX importer: mutated copies of the two ONNX models (truncation, bit
//! flips, overwritten words and varints, random spans) never panic: every case ends in `Ok` or a
//! typed error. The models are loaded with a small static input shape so that mutations reach
//! the mapping, folding and passes, not only the protobuf decoder. Every mutant that loads is
//! compiled and run on the CPU backend (within the budget of `common/mutants.rs`), a sample on
//! the GPU backend too (`HEIMDALL_FUZZ_GPU_CASES`, default 2; none with `HEIMDALL_SKIP_GPU=1`).
//!
//! `cargo test` runs a sample (`HEIMDALL_FUZZ_CASES`, default 150 per model). The full run,
//! 100 000 cases:
//! `HEIMDALL_FUZZ_CASES=50000 cargo test --release -p heimdall --test onnx_hostile -- --nocapture`
//! (50 000 cases for each of the two models). Coverage-guided fuzzing of the same importer is in
//! `fuzz/` (docs/fuzzing.md).

mod common;
#[path = "common/mutants.rs"]
mod mutants;

use heimdall::{LoadOptions, load_onnx_bytes};
use mutants::Tally;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const MODELS: [(&str, &str); 2] = [("multistyle26", "image"), ("PP-OCRv6_det_small", "x")];

fn mutate(original: &[u8], rng: &mut StdRng, case: usize) -> Vec<u8> {
    let mut bytes = original.to_vec();
    let n = bytes.len();
    match case % 5 {
        0 => {
            let cut = if rng.random_bool(0.5) {
                rng.random_range(0..n.min(4096))
            } else {
                rng.random_range(0..n)
            };
            bytes.truncate(cut);
        }
        1 => {
            for _ in 0..rng.random_range(1..=8) {
                let i = rng.random_range(0..n);
                bytes[i] ^= 1 << rng.random_range(0..8);
            }
        }
        2 => {
            for _ in 0..rng.random_range(1..=3) {
                let i = rng.random_range(0..n / 4) * 4;
                let v: u32 = match rng.random_range(0..4) {
                    0 => rng.random(),
                    1 => rng.random_range(0..64),
                    2 => u32::MAX - rng.random_range(0..16),
                    _ => 0x7fff_ffff,
                };
                bytes[i..i + 4].copy_from_slice(&v.to_le_bytes());
            }
        }
        // Small values at random bytes: field numbers, wire types, lengths, enum values and
        // attribute integers (strides, axes, groups...) in the node section near the front.
        3 => {
            for _ in 0..rng.random_range(1..=4) {
                let i = if rng.random_bool(0.7) {
                    rng.random_range(0..n.min(65536))
                } else {
                    rng.random_range(0..n)
                };
                bytes[i] = rng.random_range(0..=0x7f);
            }
        }
        _ => {
            let start = rng.random_range(0..n);
            let len = rng.random_range(1..=64).min(n - start);
            rng.fill(&mut bytes[start..start + len]);
        }
    }
    bytes
}

#[test]
fn mutated_onnx_models_never_panic() {
    let n = mutants::cases(150);
    let mut gpu_left = mutants::gpu_cases(2);
    let mut tally = Tally::default();
    for (k, (name, input)) in MODELS.iter().enumerate() {
        let path = heimdall_testkit::onnx_model_path(name).unwrap_or_else(|e| panic!("{e}"));
        let original = std::fs::read(path).expect("read model");
        let options = LoadOptions {
            passes: true,
            input_shapes: vec![(input.to_string(), vec![1, 3, 32, 32])],
        };
        let mut rng = StdRng::seed_from_u64(0x0441_0000 + k as u64);
        let mut gpu_done = false;
        for case in 0..n {
            let bytes = mutate(&original, &mut rng, case);
            let result = std::panic::catch_unwind(|| load_onnx_bytes(&bytes, name, &options));
            match result {
                Ok(Ok(model)) => {
                    // The GPU sample: the first loaded mutant within budget of each model.
                    let on_gpu = gpu_left > 0 && !gpu_done;
                    let before = tally.ran_gpu + tally.gpu_refused;
                    let what = format!("{name}: case {case}");
                    mutants::exercise(&model.graph, &what, on_gpu, &mut tally);
                    if tally.ran_gpu + tally.gpu_refused > before {
                        gpu_left -= 1;
                        gpu_done = true;
                    }
                }
                Ok(Err(e)) => tally.load_error(&e),
                Err(_) => panic!("{name}: case {case} panicked"),
            }
            tally.total += 1;
        }
    }
    tally.print("hostile ONNX input");
    assert_eq!(tally.total, n * MODELS.len());
    assert!(
        tally.ran_cpu > 0,
        "no mutant ran on the CPU: the test exercises nothing"
    );
}

#[test]
fn empty_and_garbage_onnx_files_are_errors() {
    let options = LoadOptions::default();
    for bytes in [&b""[..], b"\x08\x07", &[0u8; 64][..], &[0xffu8; 1024][..]] {
        assert!(load_onnx_bytes(bytes, "garbage", &options).is_err());
    }
}
