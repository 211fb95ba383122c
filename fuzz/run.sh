#!/bin/sh
# The recorded fuzz run (docs/fuzzing.md): seeds the corpora, then runs the four targets one
# after the other, each bounded in time and in memory (-rss_limit_mb; -malloc_limit_mb flags any
# single allocation above it).
# Usage: fuzz/run.sh [SECONDS_TFLITE SECONDS_ONNX SECONDS_SCENARIO SECONDS_REPLAY]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
fuzz/seed.sh
target_dir=${CARGO_TARGET_DIR:-$root/fuzz/target}/fuzz
for spec in "scenario ${3:-300}" "replay ${4:-300}" "tflite ${1:-900}" "onnx ${2:-600}"; do
    set -- $spec
    echo "== $1 for $2 s"
    mkdir -p fuzz/artifacts
    log="fuzz/artifacts/$1.log"
    /usr/bin/time -v cargo +nightly fuzz run -a --target-dir "$target_dir" "$1" \
        "fuzz/corpus/$1" -- -max_total_time="$2" -rss_limit_mb=2048 -malloc_limit_mb=1024 \
        -timeout=10 -print_final_stats=1 >"$log" 2>&1 || echo "exit status $?"
    grep -E "(DONE|stat::number_of_executed_units|stat::peak_rss_mb|Maximum resident|Elapsed \(wall|panicked|ERROR|Test unit written)" "$log" || true
done
