#!/usr/bin/env bash
# #18 items 4 and 6 on the device: probe variants (loop bounding, blockings, f16 arithmetic,
# unrolled slices) and whole models, the binary of HEAD (old) beside the working tree (new).
set -u
mkdir -p /tmp/gl && for d in .gl/*.deb; do dpkg -x $d /tmp/gl; done
export LD_LIBRARY_PATH=/tmp/gl/usr/lib/x86_64-linux-gnu
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp HEIMDALL_ROOT=$PWD
for b in old new; do xz -dc .devcarry3/$b.xz > /tmp/h-$b && chmod +x /tmp/h-$b; done
mkdir -p .cache/models && xz -dc .devcarry/amw/PP-OCRv6_det_small.onnx.xz > .cache/models/PP-OCRv6_det_small.onnx
D=$OUT/f16; mkdir -p $D
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader | tee $D/gpu.txt
P=${PHASE:-all}
probe() { # name, bin, env...
  local n=$1 b=$2; shift 2
  env "$@" timeout 60 /tmp/h-$b bench --backend gpu --probe --json > $D/probe_$n.json 2> $D/probe_$n.err
  python3 - $D/probe_$n.json $n <<'PY' || tail -3 $D/probe_$n.err
import json,sys
d=json.load(open(sys.argv[1]))
c=' | '.join('%s %.4f ms %.0f GF %.1f%%%s %s' % (x['precision'], x['time_ms'], x['gflops'], 100*x['fraction_of_peak'],
  (' f16peak %.1f%%' % (100*x['fraction_of_f16_peak']) if x.get('f16_arith') else ''), x['blocking'].split(' per')[0]) for x in d['conv1x1'])
fo=' '.join('%s%s=%.0f' % ('h' if f['f16'] else 's', f['form'][0], f['gflops']) for f in d.get('fma_forms', []))
print('%-14s fma32 %.0f fma16 %s [%s] | %s' % (sys.argv[2], d['fma_gflops'], '%.0f' % d['fma_f16_gflops'] if d.get('fma_f16_gflops') else '-', fo, c))
PY
}
bench() { # name, bin, model args..., env via BENV
  local n=$1 b=$2; shift 2
  env $BENV timeout 120 /tmp/h-$b bench "$@" --backend gpu --runs 30 --warmup 5 --json > $D/b_$n.json 2> $D/b_$n.err
  python3 -c "
import json,sys; d=json.load(open(sys.argv[1])); g=d.get('guard') or {}
print('%-22s run %.3f steps %.3f wall %.3f f16ops %s %s' % (sys.argv[2], d.get('gpu_run_ms') or -1, d.get('gpu_ms') or -1, d['wall_median_ms'], d.get('f16_arith_ops','-'), g.get('summary','')))" $D/b_$n.json $n || tail -3 $D/b_$n.err
}
MS="assets/models/multistyle26.onnx --input-shape image=1x3x256x256"
PO=".cache/models/PP-OCRv6_det_small.onnx --input-shape x=1x3x320x640"
probe new new
probe mad new HEIMDALL_MAD=muladd
probe lb_st new HEIMDALL_LOOP_BOUNDING=1 HEIMDALL_F16_ARITH=0
for blk in 8,2,64 4,8,64 8,4,32 4,4,64; do
  probe mad_$blk new HEIMDALL_MAD=muladd HEIMDALL_CONV_BLOCK=$blk
done
probe mad_unroll new HEIMDALL_MAD=muladd HEIMDALL_CONV1X1_UNROLL=2
probe mad_t256 new HEIMDALL_MAD=muladd HEIMDALL_F16_TERMS=256
for blk in 8,4,16 6,4,32 8,3,32 7,4,32; do
  probe f32_$blk new HEIMDALL_CONV_BLOCK=$blk
done
for r in 1 2; do
  for m in ms po; do
    [ $m = ms ] && M=$MS || M=$PO
    BENV= bench ${m}_f32_$r new $M --precision f32
    BENV=HEIMDALL_F16_ARITH=0 bench ${m}_f16st_$r new $M --precision f16 --no-guard
    BENV= bench ${m}_f16fma_$r new $M --precision f16 --no-guard
    BENV=HEIMDALL_MAD=muladd bench ${m}_f16mad_$r new $M --precision f16 --no-guard
    BENV=HEIMDALL_MAD=muladd bench ${m}_f32mad_$r new $M --precision f32
  done
done
for m in ms po; do
  [ $m = ms ] && M=$MS || M=$PO
  BENV=HEIMDALL_F16_ARITH=0 bench ${m}_f16st_guard new $M --precision f16
  BENV= bench ${m}_f16fma_guard new $M --precision f16
  BENV=HEIMDALL_MAD=muladd bench ${m}_f16mad_guard new $M --precision f16
done
probe old old
probe new2 new
cd $OUT && tar czf f16b.tgz f16 && rm -rf f16
