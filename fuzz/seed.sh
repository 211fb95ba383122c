#!/bin/sh
# Seeds the fuzz corpora from the bundled models and scenario files (docs/fuzzing.md).
# Run from anywhere; writes fuzz/corpus/{tflite,onnx,scenario}/ (ignored by git).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
corpus="$root/fuzz/corpus"
mkdir -p "$corpus/tflite" "$corpus/onnx" "$corpus/scenario"
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
echo "seeded: $(ls "$corpus/tflite" | wc -l) tflite, $(ls "$corpus/onnx" | wc -l) onnx, $(ls "$corpus/scenario" | wc -l) scenario"
