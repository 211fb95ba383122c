#!/usr/bin/env python3
"""Compares scheduling modes on one app, same input, runs interleaved, and prints one table.

    python3 scripts/compare_modes.py --app emoji --modes heimdall,fifo --runs 3 \
        --out out/compare -- --fps 60 --resolution 1280x720 --frames 600 --warmup 60

Every run is `APP --headless --mode MODE --out OUT/MODE-RUN --save-every 0 ARGS...`; runs go
round-robin (heimdall 1, fifo 1, heimdall 2, ...) so a slow drift of the machine hits every mode
alike. The table reads each run's `stats.json`:

- `wall on time`: frames whose wall-clock interval was at most 1.25 periods (the headline: what a
  user sees on screen; headless, the emulated display shows a frame at the first vertical blank
  after its submission, see examples/support/swapchain.rs);
- `submitted on time (proxy)`: the same bound on the interval between submissions, what a display
  without vsync would show (every millisecond of CPU jitter on the frame path counts);
- `interval p50/p99/max`: the wall-clock frame interval;
- `GPU on time (proxy)`: frames whose GPU timestamps (scene + DNN chunks) fit in a period;
- per DNN: results per second, capture→result latency p50/p99, deadline misses;
- `host steal / busy`: the share of the host's CPU time the hypervisor stole during the run
  (/proc/stat; a virtual machine's cores running someone else's work) and the share busy.

- per DNN, where it ran (the plugin's `placement`: inferences on the CPU, the threads a CPU
  inference takes) and, where the coordinator granted it less than it asked for, its
  `shortfall` (granted / requested Hz and why);

`--cpus LIST` runs the app under `taskset -c LIST` (a process limited to a phone's 4 cores:
`--cpus 0-3`); the plugin sizes its CPU slots to the cores it may use. `--json FILE` writes
every run's summary. The binary is `target/release/examples/APP` unless
`--bin` says otherwise (a built example copied elsewhere finds its assets through
`BEVY_ASSET_ROOT`).
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def cpu_times():
    """The host's CPU time counters (/proc/stat's `cpu` line; None where there is none)."""
    try:
        with open("/proc/stat") as f:
            return [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None


def host_share(before, after):
    """What the host did with its CPUs during a run: the share of CPU time stolen by the
    hypervisor (a virtual machine's cores running someone else's work, which no code of ours
    can pace around) and the share busy, in %."""
    if not before or not after or len(before) < 8:
        return None
    d = [b - a for a, b in zip(before, after)]
    total = sum(d[:8]) or 1
    idle = d[3] + d[4]
    return {"steal_pct": 100.0 * d[7] / total, "busy_pct": 100.0 * (total - idle - d[7]) / total}


def run_once(binary, mode, out, extra, timeout, cpus=None):
    """Runs the app once (under `taskset -c CPUS` with `cpus`); returns its stats.json (or
    raises with the app's stderr)."""
    name, *flags = mode.split("+")
    cmd = ["taskset", "-c", cpus] if cpus else []
    cmd += [str(binary), "--headless", "--mode", name, "--out", str(out), "--save-every", "0"]
    for f in flags:  # "flag" or "flag=value" (e.g. heimdall+background-burst-ms=4)
        cmd += [f"--{f.split('=', 1)[0]}"] + f.split("=", 1)[1:]
    cmd += extra
    t, before, started = time.monotonic(), cpu_times(), time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-3000:]}")
    stats = json.loads((Path(out) / "stats.json").read_text())
    stats["_wall_s"] = time.monotonic() - t
    stats["_host"] = host_share(before, cpu_times())
    stats["_started_unix"] = started
    return stats


def summarise(stats):
    """The figures of one run."""
    fi = stats.get("frame_interval_ms", {})
    row = {
        "wall_on_time_rate": stats.get("wall_on_time_rate"),
        # The same bound on the main loop's update-to-update interval (a proxy: what the app
        # loop did, not what left for the screen).
        "update_on_time_rate": stats.get("update_on_time_rate"),
        "submit_on_time_rate": stats.get("swapchain", {}).get("submit_on_time_rate"),
        "interval_p50": fi.get("p50"),
        "interval_p99": fi.get("p99"),
        "interval_max": fi.get("max"),
        "gpu_on_time_proxy": stats.get("on_time_rate"),
        "scene_ms_p50": stats.get("scene_ms", {}).get("p50"),
        "frames": stats.get("frames"),
        # The apps' own latencies: an event to its visible answer (shopping's style transfer),
        # a fingertip's capture to its ink on the page (workspace).
        "event_to_visible_ms": stats.get("style_events", {}).get("event_to_visible_ms"),
        "capture_to_ink_ms": stats.get("strokes", {}).get("capture_to_ink_ms"),
        # The headless pacer's own view (examples/support/pacer.rs): how long each update took
        # and how many took longer than a period (a late frame without a long update was held
        # up between updates).
        "update_ms_p99": stats.get("pacer", {}).get("update_ms", {}).get("p99"),
        "long_updates": stats.get("pacer", {}).get("updates_longer_than_a_period"),
        # The headless swap chain's waits for the GPU (examples/support/swapchain.rs): a late
        # frame that waited there was held up by the GPU.
        "gpu_wait_p99": stats.get("swapchain", {}).get("wait_ms", {}).get("p99"),
        "frames_that_waited": stats.get("swapchain", {}).get("frames_that_waited"),
        # The CPU slots the plugin planned with (the cores left to it, or --cpu-workers).
        "cpu_slots": stats.get("cpu_slots"),
        "models": {},
    }
    for name, m in sorted(stats.get("models", {}).items()):
        lat = m.get("latency_ms", {})
        row["models"][name] = {
            "rate_hz": m.get("rate_hz"),
            "latency_p50": lat.get("p50"),
            "latency_p99": lat.get("p99"),
            "latency_max": lat.get("max"),
            "results": m.get("count"),
            "cpu_results": m.get("cpu_results"),
            "deadline_ms": m.get("deadline_ms"),
            "deadline_misses": m.get("deadline_misses"),
            "deadline_miss_rate": m.get("deadline_miss_rate"),
            "cpu_threads": (m.get("placement") or {}).get("cpu_threads"),
            "requested_rate_hz": m.get("requested_rate_hz"),
            "granted_rate_hz": m.get("granted_rate_hz"),
            "shortfall": m.get("shortfall"),
            "shortfall_s": m.get("shortfall_s"),
            "placement_switches": (m.get("placement") or {}).get("switches"),
        }
    return row


def shortfall(m):
    """`granted/requested Hz (reason)` of a DNN that ran below its rate in the window, '-'
    where it did not."""
    sf = m.get("shortfall")
    if sf:
        return f"{sf['granted_hz']:.1f}/{sf['requested_hz']:.1f} Hz ({sf['reason']})"
    if m.get("shortfall_s"):
        return f"{m['shortfall_s']:.1f} s"
    return "-"


def pct(x):
    return "-" if x is None else f"{100 * x:.1f} %"


def ms(x):
    return "-" if x is None else f"{x:.1f}"


def host(h):
    return "-" if not h else f"{h['steal_pct']:.2f} / {h['busy_pct']:.1f} %"


def print_table(results):
    """One line per run, then one line per run and DNN."""
    print("| mode | run | wall on time | interval p50/p99/max ms | submitted on time (proxy) "
          "| main loop on time (proxy) "
          "| GPU on time (proxy) | scene GPU p50 ms | update p99 ms | updates > period "
          "| waits for the GPU > 1 ms (p99 ms) | host steal / busy |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        s = r["summary"]
        print(
            f"| {r['mode']} | {r['run']} | {pct(s['wall_on_time_rate'])} | "
            f"{ms(s['interval_p50'])} / {ms(s['interval_p99'])} / {ms(s['interval_max'])} | "
            f"{pct(s.get('submit_on_time_rate'))} | {pct(s.get('update_on_time_rate'))} | {pct(s['gpu_on_time_proxy'])} | {ms(s['scene_ms_p50'])} | "
            f"{ms(s.get('update_ms_p99'))} | {'-' if s.get('long_updates') is None else s['long_updates']} | "
            f"{'-' if s.get('frames_that_waited') is None else s['frames_that_waited']} ({ms(s.get('gpu_wait_p99'))}) | "
            f"{host(r.get('host'))} |"
        )
    for key, what in [("event_to_visible_ms", "event → visible"), ("capture_to_ink_ms", "capture → ink")]:
        if any(r["summary"].get(key) for r in results):
            print()
            print(f"| mode | run | {what}: count | p50 / p99 / max ms |")
            print("| --- | ---: | ---: | ---: |")
            for r in results:
                e = r["summary"].get(key) or {}
                print(
                    f"| {r['mode']} | {r['run']} | {e.get('count', 0)} | "
                    f"{ms(e.get('p50'))} / {ms(e.get('p99'))} / {ms(e.get('max'))} |"
                )
    print()
    print("| mode | run | DNN | rate Hz | latency p50/p99/max ms | deadline misses | on CPU "
          "| CPU threads / slots | placement switches | shortfall |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in results:
        for name, m in r["summary"]["models"].items():
            misses = m["deadline_misses"]
            deadline = "" if m["deadline_ms"] is None else f" of {m['results']} (≤ {m['deadline_ms']:.0f} ms)"
            print(
                f"| {r['mode']} | {r['run']} | {name} | {ms(m['rate_hz'])} | "
                f"{ms(m['latency_p50'])} / {ms(m['latency_p99'])} / {ms(m['latency_max'])} | "
                f"{misses}{deadline} | {m['cpu_results']} | "
                f"{m.get('cpu_threads') or '-'} / {r['summary'].get('cpu_slots') or '-'} | "
                f"{'-' if m.get('placement_switches') is None else m['placement_switches']} | "
                f"{shortfall(m)} |"
            )


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--app", default="emoji", help="example name (default emoji)")
    ap.add_argument("--bin", type=Path, help="the app's binary (default target/release/examples/APP)")
    ap.add_argument("--modes", default="heimdall,fifo",
                    help="comma-separated: heimdall, fifo, layers:K; '+flag' adds --flag to that mode's "
                         "runs (heimdall+adaptive-margin, heimdall+no-offload: variants and ablations)")
    ap.add_argument("--runs", type=int, default=3, help="runs per mode, interleaved (default 3)")
    ap.add_argument("--out", type=Path, default=Path("out/compare"))
    ap.add_argument("--json", type=Path, help="write every run's summary here")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    ap.add_argument("--cpus", help="run the app under `taskset -c CPUS` (e.g. 0-3)")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="-- then the app's own options")
    a = ap.parse_args()
    extra = a.args[1:] if a.args[:1] == ["--"] else a.args
    binary = a.bin or Path(os.environ.get("CARGO_TARGET_DIR", "target")) / "release" / "examples" / a.app
    if not binary.exists():
        sys.exit(f"{binary} not found: build it with `cargo build --release --example {a.app}` or pass --bin")
    modes = [m for m in a.modes.split(",") if m]
    results = []
    for run in range(1, a.runs + 1):
        for mode in modes:
            out = a.out / f"{mode.replace(':', '').replace('+', '_')}-{run}"
            print(f"run {run} {mode} -> {out}", file=sys.stderr, flush=True)
            stats = run_once(binary, mode, out, extra, a.timeout, a.cpus)
            results.append({"mode": mode, "run": run, "summary": summarise(stats),
                            "wall_s": stats["_wall_s"], "started_unix": stats["_started_unix"],
                            "host": stats["_host"],
                            "adapter": stats.get("adapter")})
    cpus = f"; taskset -c {a.cpus}" if a.cpus else ""
    print(f"adapter: {results[0]['adapter']}; app options: {' '.join(extra)}{cpus}")
    print_table(results)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({"app": a.app, "args": extra, "cpus": a.cpus, "runs": results},
                                     indent=1))


if __name__ == "__main__":
    main()
