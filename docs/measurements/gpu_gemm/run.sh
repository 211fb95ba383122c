#!/usr/bin/env bash
# #18 item 6 on the device: the tiled 1x1 kernel (conv1x1_tiled.wgsl) against the blocked one,
# one binary, switched by HEIMDALL_CONV1X1_TILED (0: old kernels; unset: the default rule;
# a tile name or TM,TN,GX,GY,BKS: that tile). Carried: .devgemm/{debs,bin,models}.
# PHASE: words test, probe, models, tiles, envs, relax, sweep, variants, xt, or all (= test probe models).
# The phases sweep (deeper K tiles with 48 KiB), variants and xt need the binary of branch
# experiment/gemm-variants (HEIMDALL_TILED_PIPE, _SLICE_LOOP, _XT, _ZERO_INIT,
# HEIMDALL_WORKGROUP_MEMORY); the others run on gemm-tiled's.
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
print('%-22s fma32 %.0f GF | %s' % (sys.argv[2], d['fma_gflops'], c))
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
  probe tiny_old HEIMDALL_PROBE_SHAPE=8,8,4,4 HEIMDALL_CONV1X1_TILED=0
  # Tiles TM,TN,GX,GY,BKS beside the default 8,2,16,16,2 (128 px x 128 ch).
  for t in 128x64 64x64 8,2,16,16,1 8,4,16,8,2 8,4,16,8,1 4,4,16,16,1 8,2,8,16,2 4,2,32,16,1; do
    probe t$t HEIMDALL_CONV1X1_TILED=$t
  done
fi
if [[ $P == *tiles* ]]; then
  # TILES="TM,TN,GX,GY,BKS ...": one probe each, the default before and after.
  probe t_default
  for t in ${TILES:-}; do probe t$t HEIMDALL_CONV1X1_TILED=$t; done
  for sh in ${SHAPES:-}; do probe sh$sh HEIMDALL_PROBE_SHAPE=$sh; done
  probe t_default2
fi
if [[ $P == *variants* ]]; then
  # Generator variants: PIPE=2 stores tile t+1 at the start of turn t and loads tile t+2;
  # SLICE_LOOP=1 keeps the slices of a K tile in a loop instead of unrolling them.
  probe v_old HEIMDALL_CONV1X1_TILED=0
  for v in HEIMDALL_NONE=1 HEIMDALL_TILED_PIPE=2 HEIMDALL_TILED_SLICE_LOOP=1 "HEIMDALL_TILED_PIPE=2 HEIMDALL_TILED_SLICE_LOOP=1"; do
    for t in 8,2,16,16,2 8,2,16,16,4 8,4,16,8,2; do
      probe "v${v// /+}_$t" $v HEIMDALL_CONV1X1_TILED=$t
    done
  done
  # A tiny layer: what a timed pass costs beside the kernel.
  probe tiny_old HEIMDALL_PROBE_SHAPE=8,8,4,4 HEIMDALL_CONV1X1_TILED=0
  probe tiny_new HEIMDALL_PROBE_SHAPE=8,8,32,64 HEIMDALL_CONV1X1_TILED=64x64
  HEIMDALL_TILED_PIPE=2 HEIMDALL_KERNEL_CASES=20 timeout 200 /tmp/conv1x1_tiled --test-threads 4 2>&1 | grep "test result" | tee $D/test_pipe2.txt
fi
if [[ $P == *xt* ]]; then
  # XT=1: x staged transposed (one row per input channel, 4 pixels per vec4).
  probe x_default
  for v in HEIMDALL_TILED_XT=1 "HEIMDALL_TILED_XT=1 HEIMDALL_TILED_PIPE=2"; do
    for t in 8,2,16,16,2 8,2,16,16,4 8,4,16,8,2 8,4,16,8,4 8,2,8,32,4 4,4,16,16,4; do
      probe "x${v// /+}_$t" $v HEIMDALL_CONV1X1_TILED=$t
    done
  done
  probe x_k1024 HEIMDALL_TILED_XT=1 HEIMDALL_PROBE_SHAPE=128,128,1024,256
  probe x_default2
  HEIMDALL_TILED_XT=1 HEIMDALL_KERNEL_CASES=20 timeout 200 /tmp/conv1x1_tiled --test-threads 4 2>&1 | grep "test result" | tee $D/test_xt.txt
fi
if [[ $P == *envs* ]]; then
  # ENVS="A=1 B=2;C=3": one probe per ;-separated set of variables, the default before and after.
  probe e_default
  IFS=';' read -ra SETS <<< "${ENVS:-}"
  for v in "${SETS[@]}"; do probe "e${v// /+}" $v; done
  probe e_default2
fi
if [[ $P == *relax* ]]; then
  # Mid-size layers of PP-OCR (grids below the rule's 32768 threads): old kernel vs forced tiles,
  # then whole models with the rule relaxed (HEIMDALL_TILED_MIN_THREADS).
  for sh in 80,160,48,96 40,80,96,192 20,40,192,384; do
    probe r${sh}_old HEIMDALL_PROBE_SHAPE=$sh
    for t in 64x64 128x64; do probe r${sh}_$t HEIMDALL_PROBE_SHAPE=$sh HEIMDALL_CONV1X1_TILED=$t HEIMDALL_TILED_MIN_THREADS=1; done
  done
  PO=".cache/models/PP-OCRv6_det_small.onnx --input-shape x=1x3x320x640"
  for r in 1 2; do
    for m in po; do
      [ $m = po ] && M=$PO || M=assets/models/palm_detection_lite.tflite
      for k in old 4096 16384; do
        [ $k = old ] && TENV=HEIMDALL_CONV1X1_TILED=0 || TENV=HEIMDALL_TILED_MIN_THREADS=$k
        bench ${m}_f32_mt${k}_$r $M --precision f32
      done
    done
  done
fi
if [[ $P == *sweep* ]]; then
  # Deeper K tiles (32 and 48 KiB of work-group memory), work-group zeroing, longer reductions.
  probe s_default
  probe s_zero HEIMDALL_TILED_ZERO_INIT=1
  probe s_wg16k HEIMDALL_WORKGROUP_MEMORY=default
  for t in 8,2,16,16,4 8,2,16,16,6 8,4,16,8,2 8,4,16,8,4 8,4,16,8,6 8,2,8,16,4 8,2,16,8,4; do
    probe s$t HEIMDALL_CONV1X1_TILED=$t
  done
  for sh in 128,128,1024,256 256,256,256,256; do
    probe k${sh}_old HEIMDALL_PROBE_SHAPE=$sh HEIMDALL_CONV1X1_TILED=0
    probe k${sh}_new HEIMDALL_PROBE_SHAPE=$sh
    probe k${sh}_t4 HEIMDALL_PROBE_SHAPE=$sh HEIMDALL_CONV1X1_TILED=8,2,16,16,4
  done
  probe s_default2
fi
if [[ $P == *models* || $P == all ]]; then
  MS="assets/models/multistyle26.onnx --input-shape image=1x3x256x256"
  PO=".cache/models/PP-OCRv6_det_small.onnx --input-shape x=1x3x320x640"
  for r in 1 2 3; do
    for m in ms po palm selfie hand; do
      case $m in ms) M=$MS;; po) M=$PO;; palm) M=assets/models/palm_detection_lite.tflite;;
        selfie) M=assets/models/selfie_segmentation.tflite;; hand) M=assets/models/hand_landmark_lite.tflite;; esac
      # old: no tiled kernel; new: the default rule; big: the 128x128 tile only.
      for k in old new big; do
        case $k in old) TENV=HEIMDALL_CONV1X1_TILED=0;; new) TENV=HEIMDALL_NONE=1;; big) TENV=HEIMDALL_CONV1X1_TILED=128x128;; esac
        bench ${m}_f32_${k}_$r $M --precision f32
        [ $r = 1 ] && [ $k != big ] && bench ${m}_f16_${k}_$r $M --precision f16 --no-guard
      done
    done
  done
fi
cd $OUT && tar czf gemm_${P// /_}.tgz gemm && rm -rf gemm
