#!/usr/bin/env bash
# #18 on the H100: heimdall's GPU (with the tensor-core kernels) beside ncnn Vulkan, ONNX Runtime
# and XNNPACK on the two ONNX models and the two MediaPipe models of the acceptance, every output
# checked first. Carried (git-ignored): .devpace/ncnn/{ncnn.tar.xz (the pnnx conversions),
# ncnnsite.tar.xz (PyPI ncnn 1.0.20261020 unpacked), palm_detection_full.tflite.xz},
# .devpace/heimdall-new.xz (the CLI) and, from an earlier call, /tmp/keep/{models,site.tar.xz
# (ai-edge-litert)} and /tmp/gl (the Vulkan loader), as docs/measurements/pacing_h100/2026-11-27c/pace.sh setup
# leaves them.
set -u
K=/tmp/keep
mkdir -p $K/ncnnsite $K/litert $K/ncnn .cache/models
tar xJf .devpace/ncnn/ncnnsite.tar.xz -C $K/ncnnsite
tar xJf $K/site.tar.xz -C $K/litert
tar xJf .devpace/ncnn/ncnn.tar.xz -C $K/ncnn
cp -n $K/models/* .cache/models/
xz -dc .devpace/ncnn/palm_detection_full.tflite.xz > .cache/models/palm_detection_full.tflite
[ -f .devpace/heimdall-new.xz ] && xz -dc .devpace/heimdall-new.xz > $K/heimdall-new && chmod +x $K/heimdall-new
export PYTHONPATH=$K/ncnnsite:$K/litert PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=/tmp/gl/usr/lib/x86_64-linux-gnu
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
(nproc; lscpu | grep "Model name"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader;
 python3 -c "import ncnn, onnxruntime, ai_edge_litert; print(ncnn.__version__, onnxruntime.__version__)") > $OUT/h100_env.txt 2>&1
timeout ${LIMIT:-480} python3 scripts/bench_peers.py --models ${MODELS:-palm_detection_full,selfie_segmentation,multistyle26,PP-OCRv6_det_small} \
  --threads 16 --gpu --rounds 3 --runs 20 --warmup 5 --exe $K/heimdall-new --ncnn-dir $K/ncnn \
  --models-dir .cache/models --json $OUT/h100_gpu.json 2>&1 | tee $OUT/h100_gpu.log | tail -60
