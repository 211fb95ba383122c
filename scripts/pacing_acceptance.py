#!/usr/bin/env python3
"""Issue #15's pacing acceptance, checked on the runs of `scripts/compare_modes.py` (or
`docs/sim_vs_app/run.sh`): for each configuration directory (its runs in `MODE-RUN`
subdirectories, each with a `stats.json`),

- every Heimdall run (`heimdall-K`) has `wall_on_time_rate` >= 99.5 % (frames on screen by the
  wall clock, interval <= 1.25 periods, in the measured window);
- Heimdall is not below Fifo: the worst Heimdall run is at least the worst Fifo run, and the
  Heimdall mean at least the Fifo mean less the Fifo runs' own spread (max - min);
- no DNN of a Heimdall run misses its deadline in more than 1 % of its results.

Runs of other modes (`heimdall_FLAG-K`, ablations) are listed, not judged.

Usage: python3 scripts/pacing_acceptance.py CONFIG_DIR [CONFIG_DIR...]
Exit status 0 when every configuration passes, 1 otherwise, 2 on bad input.
"""

import json
import os
import re
import sys

ON_SCREEN = 0.995
MISSES = 0.01


def runs(config):
    """{mode: [(run, stats)]} of a configuration directory."""
    out = {}
    for name in sorted(os.listdir(config)):
        m = re.fullmatch(r"(.+)-(\d+)", name)
        path = os.path.join(config, name, "stats.json")
        if not m or not os.path.isfile(path):
            continue
        with open(path) as f:
            out.setdefault(m.group(1), []).append((int(m.group(2)), json.load(f)))
    for v in out.values():
        v.sort(key=lambda r: r[0])
    return out


def worst_miss(stats):
    """(rate, dnn) of the DNN with the highest deadline miss rate among those with results."""
    worst = (0.0, None)
    for name, m in (stats.get("models") or {}).items():
        if (m.get("count") or 0) > 0 and m.get("deadline_miss_rate") is not None:
            worst = max(worst, (m["deadline_miss_rate"], name), key=lambda w: w[0])
    return worst


def check(config):
    modes = runs(config)
    heimdall, fifo = modes.get("heimdall", []), modes.get("fifo", [])
    if not heimdall:
        raise ValueError(f"{config}: no heimdall-K runs with a stats.json")
    pct = lambda rs: [100 * s["wall_on_time_rate"] for _, s in rs]  # noqa: E731
    h, f = pct(heimdall), pct(fifo)
    ok = all(x >= 100 * ON_SCREEN for x in h)
    if f:
        spread = max(f) - min(f)
        ok &= min(h) >= min(f) and sum(h) / len(h) >= sum(f) / len(f) - spread
    misses = [worst_miss(s) for _, s in heimdall]
    ok &= all(rate <= MISSES for rate, _ in misses)
    print(f"{config}: {'PASS' if ok else 'FAIL'}")
    for mode, rs in modes.items():
        figures = " / ".join(f"{x:.1f}" for x in pct(rs))
        worst = max((worst_miss(s) for _, s in rs), key=lambda w: w[0])
        miss = f"{100 * worst[0]:.1f} % ({worst[1]})" if worst[1] else "0"
        print(f"  {mode:<40} on screen {figures} %; worst DNN deadline misses {miss}")
    return ok


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    ok = True
    for config in sys.argv[1:]:
        try:
            ok &= check(config)
        except (OSError, ValueError, KeyError, json.JSONDecodeError) as e:
            print(f"pacing_acceptance: {e}", file=sys.stderr)
            return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
