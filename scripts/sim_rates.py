#!/usr/bin/env python3
"""The simulator's own per-DNN figures on recorded app runs, for comparing coordinators.

`scripts/sim_vs_app.py` checks the simulator against what an app measured; once the coordinator
changes, the app's figures are those of the old coordinator and only the simulator's own
prediction is comparable. This prints, per RUN directory (an app's `--record-run` output with
`scenario.json`, `replay.json` and `stats.json`), `heimdall simulate scenario.json --replay
replay.json --jitter 0 --policy P --json` as a markdown table: frames whose GPU work fits a
period, then per DNN that completed anything its rate (Hz), mean latency (admission to last op,
ms), deadline misses and share of inferences on the CPU. The policy is the run's (stats.json:
`fifo` for fifo runs, else its `policy`), and the run's `cpu_dispatch_on_completion` is set as
`sim_vs_app.py` does for recordings older than the recorder's own field.

`--heimdall A --heimdall B` runs each binary on each run (rows labelled by the binary's path);
`--set KEY=JSON` overrides a scenario field (e.g. `--set budget_margin_ms=0.5`), repeatable.

Usage: python3 scripts/sim_rates.py [--heimdall PATH]... [--set KEY=JSON]... RUN [RUN...]
Exit status 0, 2 on bad input or a failed simulation.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile


def load(path):
    with open(path) as f:
        return json.load(f)


def simulate(heimdall, run, overrides):
    stats = load(os.path.join(run, "stats.json"))
    policy = "fifo" if stats.get("mode") == "fifo" else (stats.get("policy") or "max_total_utility")
    s = load(os.path.join(run, "scenario.json"))
    if stats.get("cpu_dispatch_on_completion") and not s.get("cpu_dispatch_on_completion"):
        s["cpu_dispatch_on_completion"] = True
    s.update(overrides)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as tmp:
        json.dump(s, tmp)
    try:
        cmd = [heimdall, "simulate", tmp.name, "--replay", os.path.join(run, "replay.json"),
               "--jitter", "0", "--policy", policy, "--json"]
        out = subprocess.run(cmd, capture_output=True, text=True)
    finally:
        os.unlink(tmp.name)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def row(label, sim):
    cells = [label, f"{sim['frames']['work_fits_rate'] * 100:.1f} %"]
    for d in sorted(sim["dnns"], key=lambda d: d["name"]):
        if d["completed"] == 0:
            continue
        cells.append(f"{d['name']}: {d['rate_hz']:.1f} Hz / {d['latency_ms']['mean']:.1f} ms / "
                     f"{d['deadline_miss_rate'] * 100:.1f} % / CPU {d['cpu_share'] * 100:.0f} %")
    return "| " + " | ".join(cells) + " |"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heimdall", action="append", default=[])
    ap.add_argument("--set", action="append", default=[], metavar="KEY=JSON")
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args()
    heimdalls = a.heimdall or ["target/release/heimdall"]
    overrides = {}
    try:
        for kv in a.set:
            k, v = kv.split("=", 1)
            overrides[k] = json.loads(v)
    except ValueError as e:
        print(f"--set: {e}", file=sys.stderr)
        return 2
    print("| run | frames fit | per DNN: rate / mean latency / deadline misses / on the CPU |")
    print("| --- | ---: | --- |")
    for run in a.runs:
        for h in heimdalls:
            label = run.rstrip("/") + (f" ({h})" if len(heimdalls) > 1 else "")
            try:
                print(row(label, simulate(h, run, overrides)))
            except (OSError, RuntimeError, ValueError, KeyError) as e:
                print(f"{run}: {e}", file=sys.stderr)
                return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
