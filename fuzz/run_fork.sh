#!/usr/bin/env bash
# The recorded 1M+ case run (docs/fuzzing.md): the targets built by `cargo +nightly fuzz build -a`
# in libFuzzer fork mode (15 workers), bounded in time and memory. Logs go to $OUT (default
# fuzz/artifacts). Usage: [S=90 T=150 O=90] fuzz/run_fork.sh
set -u
OUT=${OUT:-fuzz/artifacts}; mkdir -p "$OUT"
sh fuzz/seed.sh
for t in scenario:${S:-90} tflite:${T:-150} onnx:${O:-90}; do
  name=${t%%:*}; secs=${t##*:}
  cp "${FUZZ_BIN:-$CARGO_TARGET_DIR/fuzz/x86_64-unknown-linux-gnu/release}/$name" /tmp/fz-$name
  echo "== $name for $secs s, fork=15"
  /usr/bin/time -v /tmp/fz-$name -fork=15 -max_total_time=$secs -rss_limit_mb=2048 -malloc_limit_mb=1024 \
     -timeout=10 -print_final_stats=1 -artifact_prefix=$OUT/$name- fuzz/corpus/$name > $OUT/$name.log 2>&1
  echo "exit $?"
  grep -E "^#[0-9]+" $OUT/$name.log | tail -2
  grep -E "INFO: fuzzed|crash|panicked|ERROR|Maximum resident|Elapsed \(wall|DONE|exec/s" $OUT/$name.log | tail -6
done
nproc; lscpu | grep "Model name"
