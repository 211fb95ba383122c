#!/bin/sh
# CI's bounded fuzz run (docs/fuzzing.md, "In CI"): seeds the corpora, builds every target
# (the parsers' and the GPU path's) with libFuzzer's coverage instrumentation on the nightly
# toolchain, without cargo-fuzz and without AddressSanitizer (lavapipe's JIT-compiled shaders
# run inside the GPU target's process), with debug assertions and overflow checks, then runs
# each target for a bounded time. Any crash, hang or out-of-memory report fails the run.
# Usage: fuzz/ci.sh [SECONDS_PER_PARSER_TARGET SECONDS_GPU]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
parser_s=${1:-30}
gpu_s=${2:-90}
triple=$(rustc +nightly -vV | sed -n 's/^host: //p')
target_dir=${CARGO_TARGET_DIR:-$root/fuzz/target}/fuzz-ci
fuzz/seed.sh
# The GPU target starts from the two smallest models (each case compiles its kernels).
mkdir -p fuzz/corpus/gpu
cp fuzz/corpus/tflite/face_detection_short_range.tflite fuzz/corpus/tflite/selfie_segmentation.tflite \
    fuzz/corpus/gpu/
# What cargo-fuzz passes (`cargo fuzz build -a -s none`); `--target` keeps the flags off build
# scripts and proc macros.
RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks" \
    cargo +nightly build --release --manifest-path fuzz/Cargo.toml --features gpu --bins \
    --target "$triple" --target-dir "$target_dir"
bin="$target_dir/$triple/release"
mkdir -p fuzz/artifacts
status=0
for spec in "scenario $parser_s 10" "replay $parser_s 10" "tflite $parser_s 10" "onnx $parser_s 10" \
    "gpu $gpu_s 60"; do
    set -- $spec
    log="fuzz/artifacts/ci-$1.log"
    # The GPU target's cases compile kernels on lavapipe: a longer per-case timeout.
    if "$bin/$1" "fuzz/corpus/$1" -max_total_time="$2" -timeout="$3" -rss_limit_mb=2048 \
        -malloc_limit_mb=1024 -artifact_prefix="fuzz/artifacts/$1-" -print_final_stats=1 \
        >"$log" 2>&1; then
        result=ok
    else
        result="FAILED (see $log)"
        status=1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -n 1)
    echo "fuzz $1: ${runs:-?} cases in $2 s, peak RSS ${rss:-?} MB: $result"
done
exit $status
