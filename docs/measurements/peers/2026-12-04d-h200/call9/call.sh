#!/usr/bin/env bash
# Issue 38, 2026-12-04 (tenth session), call 9: the expansions at 28x28 and 14x14 made inside
# their depthwise convolutions by rows (each thread computes the expansion rows its depthwise
# rows read, its neighbours' edge rows included, instead of reading them from their cores).
# One CLI (3b80355 + exp.patch: HD_FUSE_ALL fuses every
# expansion -> depthwise pair of at least 32768 values; HD_ROWS runs the pairs of 40 000 to
# 120 000 values by rows; bits unchanged), base against both switches, hand_landmark_lite,
# twelve paired alternations at 4 threads (cores 4-7) and 2 (cores 4-5), then per op at 4
# threads, six alternations. Carry: .device/d17.
set -u
H=/tmp/h; mkdir -p $H $OUT/cpu
xz -dc .device/d17/heimdall-rows.xz > $H/r; chmod +x $H/r
{ nproc; lscpu | grep -E "Model name|L2|L3"; uptime; sha256sum $H/r; } > $OUT/cpu/env.txt 2>&1
MODEL=assets/models/hand_landmark_lite.tflite
pins=(x x "taskset -c 4-5" x "taskset -c 4-7")
for i in $(seq 1 12); do
  if [ $((i % 2)) -eq 1 ]; then order="base rows"; else order="rows base"; fi
  for t in 4 2; do for v in $order; do
    if [ $v = rows ]; then e="HD_FUSE_ALL=1 HD_ROWS=1"; else e="HD_X=1"; fi
    m=$(env $e timeout 30 ${pins[$t]} $H/r bench $MODEL --threads $t --runs 100 2>/dev/null | grep -o 'median [0-9.]*' | cut -d' ' -f2)
    echo "whole $t $i $v $m"
  done; done
done > $OUT/cpu/whole.txt
echo "whole at ${SECONDS}s"
for i in $(seq 1 6); do for v in base rows; do
  if [ $v = rows ]; then e="HD_FUSE_ALL=1 HD_ROWS=1"; else e="HD_X=1"; fi
  env $e timeout 30 taskset -c 4-7 $H/r bench $MODEL --threads 4 --runs 100 --per-op > $OUT/cpu/perop-$v-$i.txt 2>/dev/null
done; done
python3 - <<'PY'
import os, statistics as st
from collections import defaultdict
d = os.environ["OUT"] + "/cpu/"
w = defaultdict(dict)
for l in open(d + "whole.txt"):
    f = l.split()
    if len(f) == 5: w[(f[1], f[2])][f[3]] = float(f[4])
for t in "42":
    r = [w[(t, str(i))]["base"] / w[(t, str(i))]["rows"] for i in range(1, 13)]
    print(t, "threads: base %.3f rows %.3f" % (st.median(w[(t, str(i))]["base"] for i in range(1, 13)), st.median(w[(t, str(i))]["rows"] for i in range(1, 13))),
          "base/rows %.3f" % st.median(r), "rows faster in", sum(x > 1 for x in r))
for v in ["base", "rows"]:
    s = []
    for i in range(1, 7):
        ops = [l.split() for l in open(d + f"perop-{v}-{i}.txt").read().splitlines()[1:]]
        s.append(sum(float(o[2]) for o in ops if 10 <= int(o[0]) <= 35))
    print(v, "ops 10-35 per-op sum median %.4f" % st.median(s))
PY
echo "done at ${SECONDS}s"
tar cJf $OUT/cpu.txz -C $OUT cpu && rm -rf $OUT/cpu
