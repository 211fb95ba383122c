#!/usr/bin/env bash
# The convolution cache's benchmarks (docs/conv_cache.md): the three models of the issue on a
# still photo with camera noise (f32, f16, and with the automatic switch) and on the bundled
# clips (with and without the switch), each cached run interleaved with an uncached one.
# Usage: scripts/bench_conv_cache.sh [HEIMDALL_BINARY] [OUT_DIR]   (run from the repository root)
set -u
H=${1:-target/release/heimdall}
OUT=${2:-out/conv_cache}
mkdir -p "$OUT"
COMMON="--backend gpu --conv-cache --cache-expiry-ms 0 --cache-expiry-runs 30 --json"
FACE="assets/models/face_detection_short_range.tflite --input-range -1,1 --decode faces"
PALM="assets/models/palm_detection_lite.tflite --input-range -1,1 --decode palms"
SELFIE="assets/models/selfie_segmentation.tflite --input-range 0,1 --decode mask"
run() { # name args...
  local name=$1; shift
  # shellcheck disable=SC2086
  timeout 300 "$H" bench "$@" $COMMON > "$OUT/$name.json" 2> "$OUT/$name.err" || echo "FAILED $name"
  python3 - "$OUT/$name.json" "$name" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(sys.argv[2], "no json:", e); sys.exit()
dec = d.get("decoded") or {}
print(f"{sys.argv[2]:32s} uncached {d['median_ms_uncached']:.3f} ms  cached {d['median_ms_cached']:.3f} ms  "
      f"saved {100 * (1 - d['median_ms_cached'] / d['median_ms_uncached']):5.1f} %  hit {d['hit_rate']:.3f}  "
      f"off {d.get('cache_off_runs', 0)}  rel-L2 {d['max_rel_l2']:.2e} (frames {d['max_rel_l2_between_frames']:.2e})  "
      f"decoded IoU {dec.get('min_iou', '-')} count changes {dec.get('count_mismatches', '-')}")
PY
}
STILL="--noise 2 --frames 30 --repeat 2"
for P in f32 f16; do
  run face_still_$P $FACE --precision $P --still assets/images/astronaut.png $STILL
  run palm_still_$P $PALM --precision $P --still assets/images/hand_src.jpg $STILL
  run selfie_still_$P $SELFIE --precision $P --still assets/images/astronaut.png $STILL
done
run face_still_auto_f32 $FACE --still assets/images/astronaut.png $STILL --cache-auto
run palm_still_auto_f32 $PALM --still assets/images/hand_src.jpg $STILL --cache-auto
run selfie_still_auto_f32 $SELFIE --still assets/images/astronaut.png $STILL --cache-auto
for C in astronaut_pan shopping_room workspace_desk; do
  for A in "" --cache-auto; do
    tag=${A:+auto_}
    run face_clip_$tag$C $FACE --clip $C --frames 90 $A
    run palm_clip_$tag$C $PALM --clip $C --frames 90 $A
    run selfie_clip_$tag$C $SELFIE --clip $C --frames 90 $A
  done
done
