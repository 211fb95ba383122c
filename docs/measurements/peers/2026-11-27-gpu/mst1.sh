#!/usr/bin/env bash
# #18: multistyle26 at one thread, heimdall (HEAD) and the CLI of c27b949 (before the grid split)
# each beside ONNX Runtime, twice each, alternating; every output checked first.
set -u
K=/tmp/keep; mkdir -p $K
for b in new old; do xz -dc .devpace/heimdall-$b.xz > $K/heimdall-$b && chmod +x $K/heimdall-$b; done
for i in 1 2; do for b in new old; do
  python3 scripts/bench_peers.py --models multistyle26 --threads 1 --engines heimdall,onnxruntime \
    --rounds 7 --runs 15 --warmup 3 --exe $K/heimdall-$b --json $OUT/mst1_${b}_$i.json 2>&1 | grep "^| multistyle26" | sed "s/^/$b $i /"
done; done
