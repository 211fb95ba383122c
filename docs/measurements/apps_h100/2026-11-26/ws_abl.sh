#!/usr/bin/env bash
# Workspace at 1440p60 on the GPU machine: which option changes the late frames? One run each.
set -u
export PYTHONUNBUFFERED=1
mkdir -p /tmp/gl && for d in .gl/*.deb; do dpkg -x $d /tmp/gl; done
export LD_LIBRARY_PATH=/tmp/gl/usr/lib/x86_64-linux-gnu
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
[ -x /tmp/workspace ] || { xz -dc .devcarry/workspace.xz > /tmp/workspace && chmod +x /tmp/workspace; }
export BEVY_ASSET_ROOT=$PWD
mkdir -p .cache/models && [ -f .cache/models/PP-OCRv6_det_small.onnx ] || xz -dc .devcarry/am/PP-OCRv6_det_small.onnx.xz > .cache/models/PP-OCRv6_det_small.onnx
i=0
for opts in "--quality high" "--quality high --no-overlay" "--quality medium" "--quality low" "--quality high --force-cpu" "--quality high"; do
  i=$((i+1))
  python3 scripts/compare_modes.py --app workspace --bin /tmp/workspace --modes heimdall --runs 1 --out /tmp/w$i --json $OUT/abl$i.json \
    -- --fps 60 --resolution 2560x1440 --frames 660 --warmup 60 $opts > $OUT/abl$i.md 2>&1
  echo "$opts: $(grep -E '^\| heimdall \| 1 \| [0-9]' $OUT/abl$i.md | head -1)"
  python3 -c "
import json,sys;s=json.load(open('/tmp/w$i/heimdall-1/stats.json'));print('  late', [[l[0], round(l[1],1)] for l in (s.get('late_frames') or [])][:16])"
done
