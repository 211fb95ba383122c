#!/usr/bin/env bash
# #18 on an H100 host's CPU after the instance-norm/reflect-pad fusions: at one thread, each
# bench_peers.py call pinned to one core (`taskset`: ONNX Runtime in the Python process and the
# heimdall CLI it starts share that core, so neither gets a faster or busier core than the other),
# the CLI of this commit (cur) and that of e634d1b (new, the last session's) in turn, on two
# cores; then 2-16 threads unpinned with the current CLI. Every output checked first.
# Carries PP-OCRv6_det_small.onnx xz-compressed in .devpace/am2 and the two CLIs in .devpace.
set -u
export PYTHONUNBUFFERED=1
K=/tmp/keep; mkdir -p $K .cache/models
for m in .devpace/am2/*.xz; do xz -dc $m > .cache/models/$(basename ${m%.xz}); done
for b in cur new; do xz -dc .devpace/heimdall-$b.xz > $K/heimdall-$b && chmod +x $K/heimdall-$b; done
M=multistyle26,PP-OCRv6_det_small
for core in 2 9; do for b in cur new; do
  taskset -c $core python3 scripts/bench_peers.py --models $M --threads 1 --engines heimdall,onnxruntime \
    --rounds 5 --runs 15 --warmup 3 --exe $K/heimdall-$b --models-dir .cache/models \
    --json $OUT/t1_${b}_core$core.json > $OUT/t1_${b}_core$core.log 2>&1
  grep "^| multistyle26\|^| PP-OCR" $OUT/t1_${b}_core$core.log | sed "s/^/$b core $core /"
done; done
for t in 2 4 8 16; do
  timeout 120 python3 scripts/bench_peers.py --models $M --threads $t --engines heimdall,onnxruntime \
    --rounds 3 --runs 15 --warmup 3 --exe $K/heimdall-cur --models-dir .cache/models \
    --json $OUT/sweep.json --append > $OUT/sweep_t$t.log 2>&1
  grep "^| multistyle26\|^| PP-OCR" $OUT/sweep_t$t.log
done
