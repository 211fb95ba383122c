#!/usr/bin/env bash
# Wall time of whole blocking GPU runs (`GpuModel::run`: upload, record, submit, wait, readback)
# against the GPU run time, per part, for the models of docs/gpu.md "Wall time of a whole call";
# optionally against a baseline binary, interleaved (3 rounds; in each round every model runs
# with the baseline, then the binary, then the binary with one submission at the end).
#   bash scripts/bench_wall.sh OUT_DIR HEIMDALL_BINARY [BASELINE_BINARY]
# PP-OCRv6_det_small is fetched by `python3 scripts/fetch_onnx_models.py` into .cache/models.
set -u
out=$1; bin=$2; base=${3:-}
mkdir -p "$out"
models=(
  "multistyle26 assets/models/multistyle26.onnx --input-shape image=1x3x256x256"
  "ppocr .cache/models/PP-OCRv6_det_small.onnx --input-shape x=1x3x320x640"
  "palm assets/models/palm_detection_lite.tflite"
  "selfie assets/models/selfie_segmentation.tflite"
  "face assets/models/face_detection_short_range.tflite"
  "ppocr16 .cache/models/PP-OCRv6_det_small.onnx --input-shape x=1x3x320x640 --precision f16 --no-guard"
)
variants=(new new0); [ -n "$base" ] && variants=(base new new0)
for round in 1 2 3; do
  for m in "${models[@]}"; do
    set -- $m; n=$1; shift
    for v in "${variants[@]}"; do
      exe=$bin; early=8
      [ "$v" = base ] && exe=$base
      [ "$v" = new0 ] && early=0
      HEIMDALL_EARLY_SUBMIT=$early timeout 120 "$exe" bench "$@" --backend gpu --runs 60 --warmup 10 \
        --json > "$out/${n}_${v}_$round.json" 2> "$out/${n}_${v}_$round.err"
      python3 - "$out/${n}_${v}_$round.json" "$n" "$v" "$round" <<'PY' || tail -3 "$out/${n}_${v}_$round.err"
import json, sys
d = json.load(open(sys.argv[1]))
parts = " ".join(f"{k} {v:.3f}" for k, v in (d.get("wall_parts_ms") or {}).items())
print(*sys.argv[2:5], f"run {d.get('gpu_run_ms') or -1:.3f} wall {d['wall_median_ms']:.3f} p90 {d['wall_p90_ms']:.3f}", parts)
PY
    done
  done
done
