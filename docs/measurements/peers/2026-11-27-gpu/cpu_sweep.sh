#!/usr/bin/env bash
# #18 on the H100 host's CPU: heimdall (HEAD) beside ONNX Runtime and XNNPACK at 1, 2, 4, 8 and 16
# threads on the two ONNX models and five MediaPipe models, every output checked first; with
# OLD=path also the CLI of c27b949 (before the grid split of depthwise/1x1) on the same models,
# interleaved (`heimdall bench`, median of 20). Needs what run.sh leaves in /tmp/keep.
set -u
K=/tmp/keep
export PYTHONPATH=$K/litert PYTHONUNBUFFERED=1
[ -f .devpace/heimdall-old.xz ] && xz -dc .devpace/heimdall-old.xz > $K/heimdall-old && chmod +x $K/heimdall-old
MP=palm_detection_lite,selfie_segmentation,face_detection_short_range,face_landmark,hand_landmark_lite
for t in 1 2 4 8 16; do
  timeout 110 python3 scripts/bench_peers.py --models multistyle26,PP-OCRv6_det_small,$MP --threads $t \
    --engines heimdall,onnxruntime,xnnpack --rounds 3 --runs 15 --warmup 3 --exe $K/heimdall-new \
    --models-dir .cache/models --json $OUT/h100_cpu.json --append > $OUT/h100_cpu_t$t.log 2>&1
  grep "^| " $OUT/h100_cpu_t$t.log | grep -v "^| model\|^| ---"
done
if [ -n "${OLD:-}" ]; then
  for t in 1 4 16; do for r in 1 2; do for b in old new; do
    for m in ${MP//,/ }; do
      echo "$b $t $($K/heimdall-$b bench assets/models/$m.tflite --threads $t --runs 20 --warmup 5 --json 2>/dev/null \
        | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["model"], round(d["median_ms"],3))')" >> $OUT/oldnew.txt
    done; done; done; done
  cat $OUT/oldnew.txt
fi
