#!/usr/bin/env bash
# Issue #34's acceptance on the H200 (the device tool): shopping and workspace at
# `--quality high`, 2560x1440, at 60 and 90 Hz, modes heimdall and fifo interleaved, 3 runs each,
# every run with --record-run; the same under `taskset -c 0-3` (a phone's 4 cores); and the calm
# configurations (emoji, shopping medium; workspace at 60 Hz is the first set) with 2 runs per
# mode. Each run: 600 measured frames after a 60-frame warm-up. Then
# scripts/pacing_acceptance.py judges every configuration.
#
# What the calls carry (ignored by the checkout's .git/info/exclude: /.device/, /.gl/):
#   .gl/*.deb                                  the Vulkan loader (already in the lead's checkout)
#   .device/models/*.gz                        the two models the tree does not bundle:
#       object_detection_ssd_mobilenetv2_oidv4_fp16.tflite.gz, PP-OCRv6_det_small.onnx.gz
#   .device/bin/APP.gz                         stripped release builds of the examples
# One call per app keeps each carry under the tool's 64 MiB and each call under 10 minutes:
#   bash docs/measurements/contention/run.sh setup       (carry .gl .device/models; ~20 s)
#   bash docs/measurements/contention/run.sh shopping    (carry .device/bin/shopping.gz; 28 runs, ~5 min)
#   bash docs/measurements/contention/run.sh workspace   (carry .device/bin/workspace.gz; 24 runs, ~4.3 min)
#   bash docs/measurements/contention/run.sh emoji       (carry .device/bin/emoji.gz; 4 runs, < 1 min)
# Files: $OUT/contention_CONFIG.txz (the runs' stats.json, scenario.json, replay.json, the
# compare_modes table), $OUT/acceptance_APP.txt (the checks) and $OUT/summary_APP.txt (each run's
# DNNs, stages, CPU runs and host steal: scripts/contention_summary.py). env RUNS (3), CALM_RUNS (2),
# FRAMES (660 = 60 warm-up + 600), MODES (heimdall,fifo; an ablation is MODE+flag[=value]...,
# e.g. heimdall+margin-ms=0.3), MODES_4C (the modes of the taskset configs; default MODES),
# SETS (a subset of the app's configs).
set -u
export PYTHONUNBUFFERED=1
K=/tmp/keep
mkdir -p $K/models $K/bin
if [ "$1" = setup ]; then
  mkdir -p /tmp/gl && for d in .gl/*.deb; do dpkg -x $d /tmp/gl; done
  for m in .device/models/*.gz; do gzip -dc $m > $K/models/$(basename ${m%.gz}); done
  ls -la $K/models; nproc; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader
  exit 0
fi
export LD_LIBRARY_PATH=/tmp/gl/usr/lib/x86_64-linux-gnu
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export BEVY_ASSET_ROOT=$PWD HEIMDALL_CACHE_DIR=$PWD/.cache
mkdir -p .cache/models && cp -n $K/models/* .cache/models/ 2>/dev/null
app=$1
[ -f .device/bin/$app.gz ] && gzip -dc .device/bin/$app.gz > $K/bin/$app && chmod +x $K/bin/$app
[ -x $K/bin/$app ] || { echo "no binary for $app (carry .device/bin/$app.gz)"; exit 2; }
MODES=${MODES:-heimdall,fifo}
RUNS=${RUNS:-3}
CALM_RUNS=${CALM_RUNS:-2}
FRAMES=${FRAMES:-660}
S=/tmp/contention
rm -rf $S && mkdir -p $S
# config-name runs cpus(- for all) app-options...
cfg() {
  local name=$1 runs=$2 cpus=$3; shift 3
  local pin="" modes=$MODES; [ "$cpus" != - ] && pin="--cpus $cpus" && modes=${MODES_4C:-$MODES}
  python3 scripts/compare_modes.py --app $app --bin $K/bin/$app --modes $modes --runs $runs --timeout 150 \
    $pin --out $S/$name --json $S/$name.json -- --record-run --frames $FRAMES --warmup 60 "$@" 2>&1 \
    | grep -v '^run ' > $S/$name.md
}
HI="--resolution 2560x1440 --quality high"
case $app in
shopping) ALL="shop_high_60 shop_high_90 shop_high_60_4c shop_high_90_4c shop_medium_60";;
workspace) ALL="ws_high_60 ws_high_90 ws_high_60_4c ws_high_90_4c";;
emoji) ALL="emoji_plain_60";;
*) echo "usage: $0 setup|shopping|workspace|emoji"; exit 2;;
esac
for c in ${SETS:-$ALL}; do case $c in
  shop_high_60) cfg $c $RUNS - $HI --fps 60 --events 1;;
  shop_high_90) cfg $c $RUNS - $HI --fps 90 --events 1;;
  shop_high_60_4c) cfg $c $RUNS 0-3 $HI --fps 60 --events 1;;
  shop_high_90_4c) cfg $c $RUNS 0-3 $HI --fps 90 --events 1;;
  shop_medium_60) cfg $c $CALM_RUNS - --resolution 2560x1440 --quality medium --fps 60 --events 1;;
  ws_high_60) cfg $c $RUNS - $HI --fps 60;;
  ws_high_90) cfg $c $RUNS - $HI --fps 90;;
  ws_high_60_4c) cfg $c $RUNS 0-3 $HI --fps 60;;
  ws_high_90_4c) cfg $c $RUNS 0-3 $HI --fps 90;;
  emoji_plain_60) cfg $c $CALM_RUNS - --resolution 1280x720 --fps 60;;
esac; done
python3 scripts/pacing_acceptance.py --json $S/acceptance_$app.json $(for c in ${SETS:-$ALL}; do echo $S/$c; done) \
  > $S/acceptance_$app.txt 2>&1
grep -E '^## |^- \[|ALL PASS|SOME FAIL|pacing_acceptance' $S/acceptance_$app.txt
cp $S/acceptance_$app.txt $S/acceptance_$app.json $OUT/ 2>/dev/null
python3 scripts/contention_summary.py $S > $OUT/summary_$app.txt 2>&1
cd $S && for d in */; do d=${d%/}
  XZ_OPT=-T0 tar cJf $OUT/contention_$d.txz $d.md $d.json \
    $(find $d -name stats.json -o -name scenario.json -o -name replay.json)
done; ls -la $OUT
