#!/bin/bash
# The grid split of the CPU backend (branch cpu-mediapipe) against the binary before it,
# interleaved, 3 rounds of 20 runs at 1..16 threads on the five MediaPipe models (and the two
# ONNX models, which must not regress); per-op medians of both at 16 threads; then bench_peers
# (every output checked first) with the new binary beside XNNPACK.
# Usage, from the repository root: OLD=/path/heimdall-old NEW=/path/heimdall-new OUT=dir \
#   bash docs/measurements/peers/2026-11-27-cpu/run_grid.sh   (PP-OCRv6 is skipped if .cache lacks it)
set -u
mkdir -p "$OUT"
(nproc; lscpu | grep -E "Model name" ; sha256sum "$OLD" "$NEW") > "$OUT/env_grid.txt" 2>&1
MP="palm_detection_lite selfie_segmentation face_detection_short_range face_landmark hand_landmark_lite"
MODELS=""
for m in $MP; do MODELS="$MODELS assets/models/$m.tflite"; done
MS="assets/models/multistyle26.onnx --input-shape image=1x3x256x256"
PP=".cache/models/PP-OCRv6_det_small.onnx --input-shape x=1x3x320x640"
js() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["model"], round(d["median_ms"],3))'; }
for r in 1 2 3; do for t in 1 2 4 8 16; do for b in old new; do
  exe=$OLD; [ $b = new ] && exe=$NEW
  for m in $MODELS "$MS" "$PP"; do
    case "$m" in .cache*) [ -f .cache/models/PP-OCRv6_det_small.onnx ] || continue;; esac
    echo "$b $t $($exe bench $m --threads $t --runs 20 --warmup 5 --json 2>/dev/null | js)" >> "$OUT/grid_oldnew.txt"
  done; done; done; done
python3 - "$OUT/grid_oldnew.txt" > "$OUT/grid_oldnew_medians.txt" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) == 4:
        d[(p[2], int(p[1]), p[0])].append(float(p[3]))
for (m, t, b) in sorted(d):
    if b == "old":
        o, n = statistics.median(d[(m, t, "old")]), statistics.median(d.get((m, t, "new"), [float("nan")]))
        print(f"{m:28s} {t:2d}T old {o:8.3f} new {n:8.3f} old/new {o / n:5.2f}")
PY
for b in old new; do exe=$OLD; [ $b = new ] && exe=$NEW
  for m in $MP; do $exe bench assets/models/$m.tflite --threads 16 --per-op --runs 50 --warmup 5 > "$OUT/perop16_${b}_$m.txt" 2>&1; done
done
for t in 1 2 4 8 16; do
  timeout 150 python3 scripts/bench_peers.py --models ${MP// /,} --threads $t --engines heimdall,xnnpack \
    --rounds 3 --runs 20 --warmup 3 --exe "$NEW" --json "$OUT/peers_grid.json" --append >> "$OUT/peers_grid.log" 2>&1
done
