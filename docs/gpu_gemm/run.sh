#!/usr/bin/env bash
# #18 item 6 on the device: the tiled 1x1 kernel (conv1x1_tiled.wgsl) against the blocked one,
# one binary, switched by HEIMDALL_CONV1X1_TILED (0: old kernels; unset: the default rule;
# a tile name: that tile). Carried: .devgemm/{debs,bin,models}. PHASE: words test, probe, models, or all.
set -u
for d in .devgemm/debs/*.deb; do dpkg -x $d /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp HEIMDALL_ROOT=$PWD
for f in .devgemm/bin/*.xz; do b=$(basename $f .xz); xz -dc $f > /tmp/$b && chmod +x /tmp/$b; done
mkdir -p .cache/models && xz -dc .devgemm/models/PP-OCRv6_det_small.onnx.xz > .cache/models/PP-OCRv6_det_small.onnx
D=$OUT/gemm; mkdir -p $D
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader | tee $D/gpu.txt
P=${PHASE:-all}
probe() { # name, env...
  local n=$1; shift
  env "$@" timeout 90 /tmp/heimdall bench --backend gpu --probe --json > $D/probe_$n.json 2> $D/probe_$n.err
  python3 - $D/probe_$n.json $n <<'PY' || tail -3 $D/probe_$n.err
import json,sys
d=json.load(open(sys.argv[1]))
c=' | '.join('%s %.4f ms %.0f GF %.1f%% [%s]' % (x['precision'], x['time_ms'], x['gflops'], 100*x['fraction_of_peak'], x['blocking'].replace(' per work group','').replace(' per thread','')) for x in d['conv1x1'])
print('%-12s fma32 %.0f GF | %s' % (sys.argv[2], d['fma_gflops'], c))
PY
}
bench() { # name, env (TENV), model args...
  local n=$1; shift
  env $TENV timeout 120 /tmp/heimdall bench "$@" --backend gpu --runs 30 --warmup 5 --json > $D/b_$n.json 2> $D/b_$n.err
  python3 -c "
import json,sys; d=json.load(open(sys.argv[1]))
print('%-26s run %.3f steps %.3f wall %.3f' % (sys.argv[2], d.get('gpu_run_ms') or -1, d.get('gpu_ms') or -1, d['wall_median_ms']))" $D/b_$n.json $n || tail -3 $D/b_$n.err
}
if [[ $P == *test* || $P == all ]]; then
  # The tiled kernel against the CPU on the real GPU (forced tiles, every precision), 40 cases.
  HEIMDALL_KERNEL_CASES=40 timeout 200 /tmp/conv1x1_tiled --test-threads 4 2>&1 | tail -15 | tee $D/test.txt
fi
if [[ $P == *probe* || $P == all ]]; then
  for r in 1 2 3; do
    probe old_$r HEIMDALL_CONV1X1_TILED=0
    probe new_$r
  done
  # Tiles TM,TN,GX,GY,BKS beside the default 8,2,16,16,2 (128 px x 128 ch).
  for t in 128x64 64x64 8,2,16,16,1 8,4,16,8,2 8,4,16,8,1 4,4,16,16,1 8,2,8,16,2 4,2,32,16,1; do
    probe t$t HEIMDALL_CONV1X1_TILED=$t
  done
fi
if [[ $P == *models* || $P == all ]]; then
  MS="assets/models/multistyle26.onnx --input-shape image=1x3x256x256"
  PO=".cache/models/PP-OCRv6_det_small.onnx --input-shape x=1x3x320x640"
  for r in 1 2 3; do
    for m in ms po palm selfie hand; do
      case $m in ms) M=$MS;; po) M=$PO;; palm) M=assets/models/palm_detection_lite.tflite;;
        selfie) M=assets/models/selfie_segmentation.tflite;; hand) M=assets/models/hand_landmark_lite.tflite;; esac
      for k in old new; do
        [ $k = old ] && TENV=HEIMDALL_CONV1X1_TILED=0 || TENV=HEIMDALL_NONE=1
        bench ${m}_f32_${k}_$r $M --precision f32
        [ $r = 1 ] && bench ${m}_f16_${k}_$r $M --precision f16 --no-guard
      done
    done
  done
fi
cd $OUT && tar czf gemm_${P// /_}.tgz gemm && rm -rf gemm
