#!/usr/bin/env bash
# Issue #15 item 6 on the H100: the apps run with --record-run (stats.json, scenario.json,
# replay.json per run), modes interleaved, for scripts/sim_vs_app.py to compare with the
# simulator. One app per call: carry .gl (the Vulkan loader debs), the app's binary in
# .devpace/APP.xz and the models it needs that the tree lacks in .devpace/am/*.xz (shopping:
# the SSD detector; workspace: PP-OCRv6).
# usage: bash docs/measurements/sim_vs_app/run.sh emoji|ws|shop       (env MODES, RUNS; EMOJI: the emoji
#        configurations, default "plain s600 90_15"; REC=0: without --record-run)
set -u
export PYTHONUNBUFFERED=1
K=/tmp/keep
mkdir -p $K/models /tmp/gl
[ -e /tmp/gl/usr ] || for d in .gl/*.deb; do dpkg -x $d /tmp/gl; done
for m in .devpace/am/*.xz; do [ -f "$m" ] && xz -dc $m > $K/models/$(basename ${m%.xz}); done
export LD_LIBRARY_PATH=/tmp/gl/usr/lib/x86_64-linux-gnu
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
mkdir -p .cache/models && cp -n $K/models/* .cache/models/ 2>/dev/null
for a in emoji workspace shopping; do
  [ -f .devpace/$a.xz ] && xz -dc .devpace/$a.xz > $K/$a && chmod +x $K/$a
done
export BEVY_ASSET_ROOT=$PWD
MODES=${MODES:-heimdall,fifo}
RUNS=${RUNS:-2}
EMOJI=${EMOJI:-plain s600 90_15}
REC=${REC:-1}
S=/tmp/sv
rm -rf $S && mkdir -p $S
cmp() { # app out-name timeout args...
  local app=$1 name=$2 t=$3; shift 3
  python3 scripts/compare_modes.py --app $app --bin $K/$app --modes $MODES --runs $RUNS --timeout $t \
    --out $S/$name -- $([ "$REC" = 1 ] && echo --record-run) "$@" 2>&1 | grep -v '^run ' > $S/$name.md
}
case $1 in
emoji)
  for c in $EMOJI; do case $c in
  plain) cmp emoji emoji_plain 100 --fps 60 --resolution 1280x720 --frames 600 --warmup 60;;
  s600) cmp emoji emoji_s600 100 --fps 60 --resolution 1280x720 --frames 600 --warmup 60 --scene-load 600;;
  90_15) cmp emoji emoji_90_15 120 --fps 90 --resolution 1280x720 --frames 900 --warmup 90 --scene-load 300 --extra-models 12;;
  esac; done;;
ws)
  cmp workspace workspace 150 --fps 60 --resolution 2560x1440 --frames 600 --warmup 60 --quality high;;
shop)
  cmp shopping shopping 150 --fps 60 --resolution 2560x1440 --frames 600 --warmup 60 --quality medium --instances 30;;
esac
# One archive per configuration, xz (a file over ~20 MB does not come back; the 15-model emoji
# runs are ~12 MB each gzipped).
cd $S && for d in */; do d=${d%/}
  XZ_OPT=-T0 tar cJf $OUT/sv_$d.txz $(find $d -name stats.json -o -name scenario.json -o -name replay.json) $d.md
done; ls -la $OUT
