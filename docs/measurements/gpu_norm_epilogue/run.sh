#!/usr/bin/env bash
# The instance norm's fused shift and epilogue on the GPU (H100): multistyle26's GPU run time
# with the CLI of this commit (cur) and of e634d1b (new: before the fold), f32 and f16 (the
# guard on, calibrated on the astronaut), 3 interleaved rounds of `heimdall bench --backend gpu
# --runs 30 --warmup 5`; then the GPU kernel tests' instance norm cases are not run here (they
# need the test binaries): the bench's own output check against the CPU is the guard's.
set -u
mkdir -p /tmp/gl && for d in .gl/*.deb; do dpkg -x $d /tmp/gl; done
export LD_LIBRARY_PATH=/tmp/gl/usr/lib/x86_64-linux-gnu
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
K=/tmp/keep; mkdir -p $K
for b in cur new; do xz -dc .devpace/heimdall-$b.xz > $K/heimdall-$b && chmod +x $K/heimdall-$b; done
M="assets/models/multistyle26.onnx --input-shape image=1x3x256x256"
for r in 1 2 3; do for b in cur new; do for p in f32 f16; do
  echo "round $r $b $p: $($K/heimdall-$b bench $M --backend gpu --precision $p --runs 30 --warmup 5 2>&1 | tail -1)"
done; done; done
