#!/usr/bin/env bash
# The apps on the H100 as in ../2026-11-27c/pace.sh (which does the setup: run it with `setup`
# first), with an independent witness of host noise running beside them: jitter_probe.py.
# usage: bash docs/measurements/pacing_h100/2026-11-27f/pace.sh emoji|ws|shop     (env MODES, RUNS)
set -u
D=docs/measurements/pacing_h100/2026-11-27f
python3 $D/jitter_probe.py /tmp/probe_$1.json 540 &
P=$!
bash docs/measurements/pacing_h100/2026-11-27c/pace.sh "$1"
kill -TERM $P; wait $P
python3 -c "import json; d=json.load(open('/tmp/probe_$1.json')); print({k: d[k] for k in ('span_s', 'wakes', 'late_over_3ms', 'late_over_8ms', 'late_per_minute', 'work_median_ms', 'work_p99_ms', 'work_slow_over_3x', 'slow_per_minute')})"
