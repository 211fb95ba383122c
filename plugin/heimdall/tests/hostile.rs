//! Hostile input: the loader (import, validation and load-time passes) never panics and never
//! allocates unbounded memory on mutated copies of the real models: truncation at many points,
//! random byte flips, and random 32-bit words overwritten (which hits offsets, lengths and
//! indices). Every case must end in `Ok` or a typed error, and every mutant that loads is
//! compiled and run on the CPU backend (within the budget of `common/mutants.rs`: 2^24
//! activation elements, 4 GFLOP, 4096 ops; mutants above it are counted), a sample of them on
//! the GPU backend too (`HEIMDALL_FUZZ_GPU_CASES`, default 2; none with `HEIMDALL_SKIP_GPU=1`).
//!
//! `cargo test` runs a sample (`HEIMDALL_FUZZ_CASES`, default 200 per model over the five
//! bundled models). The full run, 100 000 cases:
//! `HEIMDALL_FUZZ_CASES=20000 cargo test --release -p heimdall --test hostile -- --nocapture`
//! (20 000 cases for each of the five models). Coverage-guided fuzzing of the same loader is in
//! `fuzz/` (docs/fuzzing.md).

mod common;
#[path = "common/mutants.rs"]
mod mutants;

use heimdall::{LoadOptions, load_tflite_bytes};
use mutants::Tally;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The bundled models (nothing to fetch).
const MODELS: [&str; 5] = heimdall_testkit::BUNDLED_MEDIAPIPE_MODELS;

fn mutate(original: &[u8], rng: &mut StdRng, case: usize) -> Vec<u8> {
    let mut bytes = original.to_vec();
    match case % 4 {
        // Truncation anywhere (more often near the start, where the tables are).
        0 => {
            let cut = if rng.random_bool(0.5) {
                rng.random_range(0..bytes.len().min(4096))
            } else {
                rng.random_range(0..bytes.len())
            };
            bytes.truncate(cut);
        }
        // A few random bit flips.
        1 => {
            for _ in 0..rng.random_range(1..=8) {
                let i = rng.random_range(0..bytes.len());
                bytes[i] ^= 1 << rng.random_range(0..8);
            }
        }
        // A random 32-bit word at a random aligned offset: offsets, lengths, indices.
        2 => {
            for _ in 0..rng.random_range(1..=3) {
                let i = rng.random_range(0..bytes.len() / 4) * 4;
                let v: u32 = match rng.random_range(0..4) {
                    0 => rng.random(),
                    1 => rng.random_range(0..64),
                    2 => u32::MAX - rng.random_range(0..16),
                    _ => 0x7fff_ffff,
                };
                bytes[i..i + 4].copy_from_slice(&v.to_le_bytes());
            }
        }
        // Random bytes over a random span.
        _ => {
            let start = rng.random_range(0..bytes.len());
            let len = rng.random_range(1..=64).min(bytes.len() - start);
            rng.fill(&mut bytes[start..start + len]);
        }
    }
    bytes
}

#[test]
fn mutated_models_never_panic() {
    let n = mutants::cases(200);
    let mut gpu_left = mutants::gpu_cases(2);
    let mut tally = Tally::default();
    for (k, name) in MODELS.iter().enumerate() {
        let path = heimdall_testkit::model_path(name).expect("bundled model");
        let original = std::fs::read(path).expect("read model");
        let mut rng = StdRng::seed_from_u64(0x5eed_0000 + k as u64);
        let mut gpu_done = false;
        for case in 0..n {
            let bytes = mutate(&original, &mut rng, case);
            let result = std::panic::catch_unwind(|| {
                load_tflite_bytes(&bytes, name, LoadOptions::default()).map(|(g, _)| g)
            });
            match result {
                Ok(Ok(graph)) => {
                    // The GPU sample: the first loaded mutant within budget of the first models.
                    let on_gpu = gpu_left > 0 && !gpu_done;
                    let before = tally.ran_gpu + tally.gpu_refused;
                    mutants::exercise(&graph, &format!("{name}: case {case}"), on_gpu, &mut tally);
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
    tally.print("hostile input");
    assert_eq!(tally.total, n * MODELS.len());
    assert!(
        tally.ran_cpu > 0,
        "no mutant ran on the CPU: the test exercises nothing"
    );
}

#[test]
fn empty_and_garbage_files_are_errors() {
    for bytes in [&b""[..], b"TFL3", &[0u8; 64][..], &[0xffu8; 1024][..]] {
        assert!(load_tflite_bytes(bytes, "garbage", LoadOptions::default()).is_err());
    }
}
