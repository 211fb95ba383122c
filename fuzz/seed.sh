#!/bin/sh
# Seeds the fuzz corpora from the bundled models and scenario files (docs/fuzzing.md).
# Run from anywhere; writes fuzz/corpus/{tflite,onnx,scenario,replay}/ (ignored by git).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
corpus="$root/fuzz/corpus"
mkdir -p "$corpus/tflite" "$corpus/onnx" "$corpus/scenario" "$corpus/replay"
# The two smallest bundled TFLite models (~230 KB each) keep every case fast; the larger three
# add ops (resize, concatenation, custom ops) the fuzzer could not write by itself.
for m in face_detection_short_range selfie_segmentation face_landmark palm_detection_lite \
    hand_landmark_lite; do
    cp "$root/assets/models/$m.tflite" "$corpus/tflite/"
done
# multistyle26 (750 KB) only: PP-OCRv6_det_small (10 MB, fetched, not bundled) would make every
# case ~13 times slower; the hostile test `onnx_hostile.rs` mutates it instead.
cp "$root/assets/models/multistyle26.onnx" "$corpus/onnx/"
cp "$root"/assets/scenarios/*.json "$corpus/scenario/"
# The replay target reads a scenario, a line `---` and a replay: each scenario file with a short
# replay that has every per-frame field, and readbacks for the scenario's first DNN.
for f in "$root"/assets/scenarios/*.json; do
    first=$(sed -n 's/.*"name": *"\([^"]*\)".*/\1/p' "$f" | head -n 1)
    {
        # 5 s: short enough for the target to simulate (at most 300 frames).
        sed 's/"duration_s": *[0-9.]*/"duration_s": 5/' "$f"
        printf '\n---\n'
        printf '{"format": "heimdall-replay/1", "render_ms": [4, 9.5], "frame_start_ms": [0, 34, 67],'
        printf ' "dnn_submit_ms": [1, null], "scene_submit_ms": [2.5], "vsync_phase_ms": 5,'
        printf ' "present_ms": [38, null, 71], "readback_ms": [0.5, null],'
        printf ' "models": {"%s": {"readback_ms": [null, 2]}}}\n' "$first"
    } > "$corpus/replay/$(basename "$f")"
done
echo "seeded: $(ls "$corpus/tflite" | wc -l) tflite, $(ls "$corpus/onnx" | wc -l) onnx, $(ls "$corpus/scenario" | wc -l) scenario, $(ls "$corpus/replay" | wc -l) replay"
