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
print('%-14s fma32 %.0f fma16 %s | %s' % (sys.argv[2], d['fma_gflops'], '%.0f' % d['fma_f16_gflops'] if d.get('fma_f16_gflops') else '-', c))
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
probe old old
probe new new
probe new_lb new HEIMDALL_LOOP_BOUNDING=1
probe new_st new HEIMDALL_F16_ARITH=0
for r in 1 2; do
  for m in ms po; do
    [ $m = ms ] && M=$MS || M=$PO
    BENV= bench ${m}_old_f32_$r old $M --precision f32
    BENV= bench ${m}_new_f32_$r new $M --precision f32
    BENV= bench ${m}_old_f16_$r old $M --precision f16 --no-guard
    BENV= bench ${m}_new_f16_$r new $M --precision f16 --no-guard
    BENV=HEIMDALL_F16_ARITH=0 bench ${m}_new_f16st_$r new $M --precision f16 --no-guard
  done
done
for blk in 8,4,64 8,8,64 4,8,64 8,2,64 4,4,64 8,4,128 8,4,32 8,6,64; do
  probe blk_$blk new HEIMDALL_CONV_BLOCK=$blk
done
probe unroll new HEIMDALL_CONV1X1_UNROLL=2
probe unroll_88 new HEIMDALL_CONV1X1_UNROLL=2 HEIMDALL_CONV_BLOCK=8,8,64
probe terms256 new HEIMDALL_F16_TERMS=256
probe terms256_88 new HEIMDALL_F16_TERMS=256 HEIMDALL_CONV_BLOCK=8,8,64
for m in ms po; do
  [ $m = ms ] && M=$MS || M=$PO
  BENV= bench ${m}_new_f16guard new $M --precision f16
done
probe old2 old
probe new2 new
cd $OUT && tar czf f16.tgz f16 && rm -rf f16
