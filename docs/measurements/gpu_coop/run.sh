#!/usr/bin/env bash
# #18 item 4 on the device: cooperative matrices (tensor cores) through wgpu 29. Carried:
# .devcoop/{debs,bin/heimdall.xz,bin/conv_coop.xz,ppocr.onnx.xz} (bash .devcoop/run.sh).
# PHASE: words probe, test, ab, models, guard, sweep, perop, potiles (default: probe test ab models guard).
# HEIMDALL_CONV_COOP=WM,WN,FM,FN,KT picks a tile (sweep: TILES="..."); =0 keeps the other
# kernels; HEIMDALL_CONV_COOP_WINDOWED=0 keeps windowed convolutions on theirs.
# The probe prints the adapter's cooperative matrix configurations, the matrix-product rate
# and the 1x1 layer in f32, f16 storage (the other kernels) and f16 on cooperative matrices;
# ab interleaves it with HEIMDALL_COOP_MATRIX=0 (the device created without the feature).
set -u
mkdir -p /tmp/gl && for d in .devcoop/debs/*.deb; do dpkg -x $d /tmp/gl; done
export LD_LIBRARY_PATH=/tmp/gl/usr/lib/x86_64-linux-gnu
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp HEIMDALL_ROOT=$PWD
for b in heimdall conv_coop reduce_split; do [ -f .devcoop/bin/$b.xz ] || continue; xz -dc .devcoop/bin/$b.xz > /tmp/$b && chmod +x /tmp/$b; done
mkdir -p .cache/models && xz -dc .devcoop/ppocr.onnx.xz > .cache/models/PP-OCRv6_det_small.onnx
D=$OUT/coop; mkdir -p $D
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader | tee $D/gpu.txt
P=${PHASE:-probe test ab models guard}
probe() { # name, env...
  local n=$1; shift
  env "$@" timeout 60 /tmp/heimdall bench --backend gpu --probe --json > $D/probe_$n.json 2> $D/probe_$n.err
  python3 - $D/probe_$n.json $n <<'PY' || tail -5 $D/probe_$n.err
import json,sys
d=json.load(open(sys.argv[1]))
c=' | '.join('%s %.4f ms %.0f GF [%s]' % (x['precision'], x['time_ms'], x['gflops'], x['blocking'].split(' (')[0].replace(' per work group','').replace(' per thread','')) for x in d['conv1x1'])
f=lambda v: '%.0f' % v if v else '-'
print('%-12s fma32 %.0f coop32 %s coop16 %s | %s%s' % (sys.argv[2], d['fma_gflops'], f(d.get('coop_f32_gflops')), f(d.get('coop_f16_gflops')), c, (' ERR ' + d['coop_error']) if d.get('coop_error') else ''))
PY
}
bench() { # name, model args...; env via BENV
  local n=$1; shift
  env $BENV timeout 120 /tmp/heimdall bench "$@" --backend gpu --runs 30 --warmup 5 --json > $D/b_$n.json 2> $D/b_$n.err
  python3 -c "
import json,sys; d=json.load(open(sys.argv[1])); g=d.get('guard') or {}
print('%-22s run %.3f steps %.3f wall %.3f %s' % (sys.argv[2], d.get('gpu_run_ms') or -1, d.get('gpu_ms') or -1, d['wall_median_ms'], g.get('summary','')))" $D/b_$n.json $n || tail -5 $D/b_$n.err
}
if [[ $P == *probe* ]]; then
  timeout 60 /tmp/heimdall bench --backend gpu --probe 2>&1 | tee $D/probe_text.txt
fi
if [[ $P == *test* ]]; then
  HEIMDALL_KERNEL_CASES=${CASES:-24} timeout 100 /tmp/conv_coop --test-threads 4 --nocapture 2>&1 | tail -25 | tee $D/test.txt
  [ -x /tmp/reduce_split ] && timeout 60 /tmp/reduce_split --test-threads 4 2>&1 | tail -8 | tee $D/test_reduce.txt
fi
if [[ $P == *ab* ]]; then
  for r in 1 2 3; do probe nocoop_$r HEIMDALL_COOP_MATRIX=0; probe coop_$r; done
fi
if [[ $P == *sweep* ]]; then
  for t in ${TILES:-}; do probe t$t HEIMDALL_CONV_COOP=$t; done
fi
MAIN="HEIMDALL_COOP_MATRIX=0 HEIMDALL_REDUCE_SPLIT=0"
MS="assets/models/multistyle26.onnx --input-shape image=1x3x256x256"
PO=".cache/models/PP-OCRv6_det_small.onnx --input-shape x=1x3x320x640"
if [[ $P == *models* ]]; then
  # main: the device without cooperative matrices and one thread per reduction output (main's
  # kernels); then f32, f16 storage (no cooperative matrices), 1x1 only, and all of them.
  for r in 1 2; do
    for m in ms po; do
      [ $m = ms ] && M=$MS || M=$PO
      BENV=$MAIN bench ${m}_f32_main_$r $M --precision f32
      BENV=$MAIN bench ${m}_f16_main_$r $M --precision f16 --no-guard
      BENV= bench ${m}_f32_$r $M --precision f32
      BENV=HEIMDALL_CONV_COOP=0 bench ${m}_f16st_$r $M --precision f16 --no-guard
      [ $r = 1 ] && BENV=HEIMDALL_CONV_COOP_WINDOWED=0 bench ${m}_f16coop1x1_$r $M --precision f16 --no-guard
      BENV= bench ${m}_f16coop_$r $M --precision f16 --no-guard
    done
  done
fi
if [[ $P == *potiles* ]]; then
  # PP-OCR with one tile throughout (the size rule kept) against the default choice.
  for t in 2,2,2,2,16 2,2,2,2,32 2,2,4,4,16; do
    BENV=HEIMDALL_CONV_COOP=$t bench po_f16coop_t$t $PO --precision f16 --no-guard
  done
fi
if [[ $P == *perop* ]]; then
  # Where the time goes: the 12 slowest steps, f16 without and with cooperative matrices.
  for m in ms po; do
    [ $m = ms ] && M=$MS || M=$PO
    for v in f16st f16coop; do
      [ $v = f16st ] && E=HEIMDALL_CONV_COOP=0 || E=HEIMDALL_NONE=1
      env $E timeout 120 /tmp/heimdall bench $M --backend gpu --precision f16 --no-guard --runs 20 --warmup 5 --per-op --json > $D/op_${m}_$v.json 2> $D/op_${m}_$v.err
      python3 -c "
import json,sys; d=json.load(open(sys.argv[1])); ops=sorted(d.get('ops',[]), key=lambda o: -o['median_ms'])
print(sys.argv[2], 'run %.3f steps %.3f' % (d.get('gpu_run_ms') or -1, d.get('gpu_ms') or -1), ' '.join('%d:%s=%.3f' % (o['index'], o['op'][:14], o['median_ms']) for o in ops[:12]))" $D/op_${m}_$v.json ${m}_$v || tail -3 $D/op_${m}_$v.err
    done
  done
fi
if [[ $P == *guard* ]]; then
  for m in ms po; do
    [ $m = ms ] && M=$MS || M=$PO
    BENV=$MAIN bench ${m}_f16_main_guard $M --precision f16
    BENV=HEIMDALL_CONV_COOP=0 bench ${m}_f16st_guard $M --precision f16
    BENV= bench ${m}_f16coop_guard $M --precision f16
  done
fi
cd $OUT && tar czf coop_${P// /_}.tgz coop && rm -rf coop
