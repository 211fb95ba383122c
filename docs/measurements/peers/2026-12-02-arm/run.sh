#!/bin/bash
# Issue #38 on the device host's CPU (16 cores): the CPU backend of this branch against main's
# and against XNNPACK on the five small MediaPipe models, at 1, 2, 4, 8 and 16 threads, outputs
# checked before timing (bench_peers.py), then per-op profiles at 1, 2 and 4 threads.
#
#   OUT=/some/dir bash docs/measurements/peers/2026-12-02-arm/run.sh [CARRY]      (from the repository root)
#   THREADS="1 2 4" PIN_CORE=1 ...                                       (a 2-core machine)
#
# CARRY (default .devcpu) holds what the machine lacks, made on the dev machine (docs/peers.md,
# "Issue #38: carrying it to the device"): heimdall-main.xz and heimdall-arm.xz (stripped
# release CLIs of main at 128f793 and of this branch), site.tar.xz (ai-edge-litert 2.3.0 for
# cp312, trimmed; unpacked onto PYTHONPATH). Writes into $OUT: env.txt, main_vs_arm.txt
# (interleaved `heimdall bench` medians), peers.json, peers.log, peers.md (the table), profile.md,
# profile.json. About 5 minutes; each step has its own time limit.
set -u
cd "$(dirname "$0")/../../../.."
C=${1:-.devcpu}
OUT=${OUT:?set OUT}
H=/tmp/h38
mkdir -p "$H" /tmp/site38 "$OUT"
for b in main arm; do xz -dc "$C/heimdall-$b.xz" > "$H/$b"; chmod +x "$H/$b"; done
xz -dc "$C/site.tar.xz" | tar xf - -C /tmp/site38
export PYTHONPATH=/tmp/site38
{
    nproc
    lscpu | grep -E "Model name|Thread|Core|Socket|NUMA node|MHz" | cut -c1-160
    python3 --version
    sha256sum "$H/main" "$H/arm"
} > "$OUT/env.txt" 2>&1
MODELS=face_detection_short_range,palm_detection_lite,hand_landmark_lite,selfie_segmentation,face_landmark
js() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["model"], round(d["median_ms"],3))'; }

# 1. main and this branch, interleaved (3 rounds of 30 timed runs each).
step1() {
    for r in 1 2 3; do for t in $THREADS; do for b in main arm; do
        for m in ${MODELS//,/ }; do
            echo "$r $b $t $("$H/$b" bench "assets/models/$m.tflite" --threads "$t" --runs 30 --warmup 10 --json 2>/dev/null | js)"
        done
    done; done; done >> "$OUT/main_vs_arm.txt"
}
THREADS=${THREADS:-1 2 4 8 16}
export -f step1 js; export H OUT MODELS THREADS
timeout 150 bash -c step1
echo "main vs arm done at ${SECONDS}s"

# 2. bench_peers: one thread pinned to one core (PIN_CORE, default 2: the Python process and the
# heimdall CLI it starts share it), then 2..16 threads unpinned.
timeout 110 taskset -c "${PIN_CORE:-2}" python3 scripts/bench_peers.py --models "$MODELS" --threads 1 \
    --engines heimdall,xnnpack --rounds 5 --runs 20 --warmup 5 --exe "$H/arm" \
    --json "$OUT/peers.json" >> "$OUT/peers.log" 2>&1
for t in $THREADS; do
    [ "$t" = 1 ] && continue
    timeout 80 python3 scripts/bench_peers.py --models "$MODELS" --threads "$t" \
        --engines heimdall,xnnpack --rounds 5 --runs 20 --warmup 5 --exe "$H/arm" \
        --json "$OUT/peers.json" --append >> "$OUT/peers.log" 2>&1
    echo "peers t$t done at ${SECONDS}s"
done
python3 scripts/bench_peers.py --table-from "$OUT/peers.json" > "$OUT/peers.md" 2>&1

# 3. Where the time goes: per-op medians at 1, 2 and 4 threads.
timeout 100 python3 scripts/bench_cpu.py --exe "$H/arm" --profile "$MODELS" --threads 1,2,4 \
    --runs 40 --rounds 3 --top 12 --json "$OUT/profile.json" > "$OUT/profile.md" 2>&1
echo "all done at ${SECONDS}s"
