#!/usr/bin/env python3
"""The simulator against a real app run (issue #15, item 6).

Each RUN directory is an app's `--out` of a run made with `--record-run`: `stats.json` (what the
app measured), and `scenario.json` + `replay.json` (the same workload as the plugin's coordinator
saw it: the app's requests, each frame's scene time, each inference's chunks with their GPU
timestamps). This runs `heimdall simulate scenario.json --replay replay.json --jitter 0` under the
run's policy and compares, per run:

- frames on time by the same definition on both sides: the share of frames whose own GPU work
  (scene passes and the chunks of that frame, timed by GPU timestamps in the app) fits in one
  period: the app's `on_time_rate` (a proxy) against the simulator's `work_fits_rate`;
  agreement: within 1 point. Beside it, not compared: the app's `wall_on_time_rate` (frames
  leaving the render thread, which the simulator does not model: it has no CPU);
- the display after the GPU: the app's `swapchain.after_gpu` (each frame shown at the first
  blank at or after both its emulated presentation and its GPU completion, one per blank)
  against the simulator's display model, which does the same where the recording has each
  frame's presentation (`present_ms` in replay.json, recorded since 2026-11-28's third
  session); agreement: within 1 point. Older recordings (the blanks' phase only, or nothing)
  print it without comparing;
- per DNN, the coordinator's latency, admission to last op (`admission_to_last_op_ms` in
  stats.json, the simulator's latency by the same definition), mean and p99; agreement: mean
  within 10 %;
- per DNN, inferences completed (both count the recorded window).

A run whose plugin handed CPU work out as workers finished (`stats.json`:
`cpu_dispatch_on_completion`, the default since issue 34) is simulated so
(`cpu_dispatch_on_completion` in the scenario: the plugin's recordings say so themselves,
`RunRecorder::set_cpu_dispatch_on_completion`; for recordings made before they did, it is set
here from stats.json).

A DNN whose GPU model ran with the convolution cache has it in the scenario (`conv_cache`: the
cached steps, the saving the coordinator was given, the hit rate a GPU run reports) and each
inference's reported hit rate in the replay (`cache_hit`), where the recorder was told them
(`RunRecorder::set_conv_cache`, `RunRecorder::cache_hit`). The cache changes the coordinator's
predicted GPU costs (not the CPU's: runs there recompute everything; before 2026-12-02's last
session the coordinator scaled those too, so recordings made before then decided otherwise than
this simulator does), so a recording without it simulates other decisions.
For a recording without it (made before 2026-12-02's contention session), it is set here from
stats.json's `conv_cache` of each DNN that had one (`cached_ops` > 0): the first `cached_ops`
steps as the cached ones (the cache skips "the first N layers"; the exact steps are not in
stats.json), the saving the plugin computes from the calibration the `decision` quotes
(`1 - all reused / plain`, over the cached steps' share of the GPU time), and the mean of the
reported hit rates as each simulated GPU run's (none where the app reported none).

The plugin cuts a continuous DNN's CPU inference that takes the last free slots into pieces of
at most 0.75 of a frame (at least 8 ms; 12.5 ms at 60 Hz), and its planner counts that piece as
an on-demand DNN's wait for the CPU: the recorder writes it as the scenario's `cpu_chunk_ms`;
for a recording without it (made before 2026-12-02's contention session) it is set here as the
plugin computes it, not the coordinator's default of 8 ms.

The scenario's `readback_ms` (from the end of the GPU submission holding an inference's last chunk
to its outputs in host memory) is the median the plugin measured in the run (0 in recordings made
before it did); the replay has each frame's and each model's in each frame, which the simulator
takes first. Replayed, a DNN's readback is the residual of its measured completion beyond what
the simulator models, so where the simulator decides as the app did its latency comes out as the
app's: the comparison then checks the decisions and the GPU queue. `--median-readbacks` replaces
each DNN's per-frame readbacks by their median (one figure per DNN, the frames' means left out),
which checks the simulator's prediction instead. `--readback-ms X` overrides the scenario's.

The plugin hands CPU work out as workers finish only while its render world lends the
coordinator to the workers, from the end of its frame (`RenderSystems::Cleanup`) to its next
preparation; a worker that finishes while the render thread holds it waits for the lend or the
next decision (the scenario's `cpu_lend_ms`). For a recording without it, it is set here to the
mean of the render thread's `wait_main_world`, `extract` and `bevy_prepare_before_heimdall`
phases in stats.json; `--whole-frame-lend` leaves it out (CPU work handed out at any time, as
the simulator did before). It matters where CPU slots are few (the 4-core runs).

Usage: python3 scripts/sim_vs_app.py [--heimdall PATH] [--readback-ms X] [--median-readbacks]
                                     [--whole-frame-lend] [--json OUT] RUN [RUN...]
Exit status 0 when every run agrees, 1 otherwise, 2 on bad input.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile


def load(path):
    with open(path) as f:
        return json.load(f)


def model_readbacks(replay):
    """The replay with each model's per-frame readbacks replaced by their median and the frames'
    means left out: a model of the readback (one figure per DNN) instead of a replay of it."""
    for trace in replay.get("models", {}).values():
        measured = [x for x in trace.get("readback_ms", []) if x is not None]
        if measured:
            trace["readback_ms"] = [statistics.median(measured)]
    replay.pop("readback_ms", None)
    return replay


# The render thread's phases from its `Cleanup` (where the plugin lends the coordinator to the CPU
# workers) to its next preparation (where it takes it back, just before the frame's decision).
LEND_PHASES = ("wait_main_world", "extract", "bevy_prepare_before_heimdall")

CALIBRATION = re.compile(r"plain ([0-9.]+) ms, full ([0-9.]+) ms, all reused ([0-9.]+) ms")


def conv_cache_from_stats(dnn, model_stats):
    """The scenario's `conv_cache` of `dnn` from the app's statistics of its model (`None` when it
    ran without the cache): see the module's documentation."""
    c = (model_stats or {}).get("conv_cache") or {}
    n = min(c.get("cached_ops") or 0, len(dnn["gpu_op_ms"]))
    if n <= 0:
        return None
    cache = {"cached_steps": list(range(n))}
    m = CALIBRATION.search(c.get("decision") or "")
    total, share = sum(dnn["gpu_op_ms"]), sum(dnn["gpu_op_ms"][:n])
    if m and float(m.group(1)) > 0 and total > 0 and share > 0:
        saving = 1.0 - float(m.group(3)) / float(m.group(1))
        cache["saving"] = min(max(saving * total / share, 0.0), 1.0)
    if c.get("runs"):
        cache["hit_rate"] = min(max(c.get("hit_rate_mean", 0.0), 0.0), 1.0)
    return cache


def with_conv_caches(scenario, app_models):
    """Sets the convolution cache of each DNN of `scenario` (a recording that has none) from
    the app's statistics; returns whether any was set."""
    if any("conv_cache" in d for d in scenario["dnns"]):
        return False
    by_count = {}
    for name, m in app_models.items():
        count = (m.get("admission_to_last_op_ms") or {}).get("count", 0)
        by_count.setdefault(base(name), []).append((count, m))
    changed = False
    for d in scenario["dnns"]:
        # Instances of one model have the same compiled GPU model: any of them says.
        stats = max(by_count.get(base(d["name"]), [(0, None)]), key=lambda x: x[0])[1]
        cache = conv_cache_from_stats(d, stats)
        if cache:
            d["conv_cache"] = cache
            changed = True
    return changed


def lend_from_phases(stats):
    """The scenario's `cpu_lend_ms` from the render thread's mean phases (`None` without them)."""
    phases = stats.get("render_phases_ms") or {}
    if not all(k in phases for k in LEND_PHASES):
        return None
    return sum(phases[k]["mean"] for k in LEND_PHASES)


def simulate(heimdall, run, policy, readback_ms, per_model_median, stats, lend_phases=False):
    scenario = os.path.join(run, "scenario.json")
    replay = os.path.join(run, "replay.json")
    temps = []
    s = load(scenario)
    # The plugin hands CPU work out as workers finish (stats.json `cpu_dispatch_on_completion`);
    # a recording made before the recorder wrote it is simulated the way the run did it.
    on_completion = (stats.get("cpu_dispatch_on_completion")
                     and not s.get("cpu_dispatch_on_completion"))
    caches = with_conv_caches(s, stats.get("models", {}))
    # The plugin's longest CPU piece (`render/schedule.rs`: 0.75 of a frame, at least 8 ms);
    # recordings made before the recorder wrote it simulated the coordinator's default, 8 ms.
    chunk = "cpu_chunk_ms" not in s
    if chunk:
        s["cpu_chunk_ms"] = max(0.75 * 1000.0 / s["frame_rate"], 8.0)
    lend = lend_from_phases(stats) if lend_phases and "cpu_lend_ms" not in s else None
    if lend is not None:
        s["cpu_lend_ms"] = lend
    if readback_ms is not None or on_completion or caches or chunk or lend is not None:
        if readback_ms is not None:
            s["readback_ms"] = readback_ms
        if on_completion:
            s["cpu_dispatch_on_completion"] = True
        scenario = write_temp(s, temps)
    if per_model_median:
        replay = write_temp(model_readbacks(load(replay)), temps)
    cmd = [heimdall, "simulate", scenario, "--replay", replay,
           "--jitter", "0", "--policy", policy, "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    for t in temps:
        os.unlink(t)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def write_temp(value, temps):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as tmp:
        json.dump(value, tmp)
    temps.append(tmp.name)
    return tmp.name


def base(name):
    """A DNN's model name without the instance suffix ("hand_landmark_lite#2")."""
    return name.split("#")[0]


def compare(run, heimdall, readback_ms, per_model_median=False, lend_phases=True):
    stats = load(os.path.join(run, "stats.json"))
    policy = stats.get("policy") or "max_total_utility"
    if stats.get("mode") == "fifo":
        policy = "fifo"
    sim = simulate(heimdall, run, policy, readback_ms, per_model_median, stats, lend_phases)
    app_on = stats["on_time_rate"]
    sim_on = sim["frames"]["work_fits_rate"]
    rows = []
    # Instances of one model are keyed "name", "name#2"... on both sides, but each numbers them
    # in its own order (the app's statistics as results first arrive, the scenario by
    # registration): within a model, instances are paired by inference count, most first.
    app_models = stats.get("models", {})
    sim_dnns = {d["name"]: d for d in sim["dnns"]}
    ok = abs(app_on - sim_on) <= 0.01
    for model in sorted({base(n) for n in set(app_models) | set(sim_dnns)}):
        def count_app(n):
            return (app_models[n].get("admission_to_last_op_ms") or {}).get("count", 0)
        apps = sorted((n for n in app_models if base(n) == model), key=lambda n: -count_app(n))
        sims = sorted((n for n in sim_dnns if base(n) == model),
                      key=lambda n: -sim_dnns[n]["completed"])
        for k in range(max(len(apps), len(sims))):
            an = apps[k] if k < len(apps) else None
            sn = sims[k] if k < len(sims) else None
            n = an if an == sn or sn is None else (sn if an is None else f"{an} / sim {sn}")
            a = (app_models[an].get("admission_to_last_op_ms") or {}) if an else {}
            s = sim_dnns.get(sn) if sn else None
            if not a.get("count") or s is None or not s["completed"]:
                # Agreement only where neither side ran it (an event that never came).
                none = not a.get("count") and not (s and s["completed"])
                rows.append({"dnn": n, "app_count": a.get("count", 0),
                             "sim_count": s["completed"] if s else 0, "agree": none})
                ok &= none
                continue
            am, sm = a["mean"], s["latency_ms"]["mean"]
            rel = abs(sm - am) / am if am > 0 else float("inf")
            agree = rel <= 0.10
            ok &= agree
            rows.append({"dnn": n, "app_count": a["count"], "sim_count": s["completed"],
                         "app_mean_ms": am, "sim_mean_ms": sm, "rel_diff": rel,
                         "app_p99_ms": a.get("p99"), "sim_p99_ms": s["latency_ms"]["p99"],
                         "agree": agree})
    after_gpu = (stats.get("swapchain") or {}).get("after_gpu") or {}
    replay = load(os.path.join(run, "replay.json"))
    blanks = replay.get("vsync_phase_ms")
    presented = bool(replay.get("present_ms"))
    app_shown = after_gpu.get("on_time_rate")
    sim_shown = sim["frames"]["wall_on_time_rate"]
    # With each frame's presentation recorded, both sides show a frame at the first blank at or
    # after its presentation and its GPU's end, one per blank: compared, within 1 point.
    display_compared = presented and blanks is not None and app_shown is not None
    display_agree = display_compared and abs(sim_shown - app_shown) <= 0.01
    if display_compared:
        ok &= display_agree
    return {"run": run, "mode": stats.get("mode"), "policy": policy, "readback_ms": readback_ms,
            "cpu_lend_ms": lend_from_phases(stats) if lend_phases else None,
            "app_after_gpu_on_time_rate": app_shown,
            "recorded_vsync_phase_ms": blanks, "recorded_presentations": presented,
            "display_compared": display_compared, "display_agree": display_agree,
            "app_on_time_rate": app_on, "sim_work_fits_rate": sim_on,
            "app_wall_on_time_rate": stats["wall_on_time_rate"],
            "sim_display_on_time_rate": sim_shown,
            "on_time_diff_pts": 100 * (sim_on - app_on), "dnns": rows, "agree": ok}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+")
    p.add_argument("--heimdall", default="target/release/heimdall")
    p.add_argument("--readback-ms", type=float, default=None,
                   help="override the recording's readback_ms")
    p.add_argument("--median-readbacks", action="store_true",
                   help="replace each DNN's recorded per-frame readbacks by their median (a "
                        "model of the readback, not a replay of it)")
    p.add_argument("--whole-frame-lend", action="store_true",
                   help="for a recording without `cpu_lend_ms`, hand CPU work out whenever a "
                        "worker finishes (by default only in the render thread's mean "
                        "wait_main_world + extract + bevy_prepare_before_heimdall before each "
                        "frame's decision, from stats.json)")
    p.add_argument("--json")
    a = p.parse_args()
    results = []
    for run in a.runs:
        try:
            results.append(compare(run, a.heimdall, a.readback_ms, a.median_readbacks,
                                   not a.whole_frame_lend))
        except (OSError, KeyError, ValueError, RuntimeError) as e:
            print(f"{run}: {e}", file=sys.stderr)
            return 2
    for r in results:
        print(f"{r['run']} ({r['mode']}, {r['policy']}): frames whose GPU work fits a period: "
              f"app {100 * r['app_on_time_rate']:.2f} %, sim {100 * r['sim_work_fits_rate']:.2f} % "
              f"({r['on_time_diff_pts']:+.2f} pts); not compared: app wall clock "
              f"{100 * r['app_wall_on_time_rate']:.2f} %")
        g = r["app_after_gpu_on_time_rate"]
        app_gpu = "not measured" if g is None else f"{100 * g:.2f} %"
        blanks = r["recorded_vsync_phase_ms"]
        if r["display_compared"]:
            where = ("blanks and presentations recorded: compared, "
                     + ("within 1 point" if r["display_agree"] else "NOT within 1 point"))
        elif blanks is not None:
            where = "blanks recorded, presentations not: not compared"
        else:
            where = "blanks assumed on the frame grid: not comparable"
        g_diff = "" if g is None else f" ({100 * (r['sim_display_on_time_rate'] - g):+.2f} pts)"
        print(f"  display after the GPU: app {app_gpu}, sim display model "
              f"{100 * r['sim_display_on_time_rate']:.2f} %{g_diff} ({where})")
        for d in r["dnns"]:
            if "app_mean_ms" not in d:
                print(f"  {d['dnn']:<24} app {d['app_count']} results, sim {d['sim_count']}: "
                      "nothing to compare")
                continue
            print(f"  {d['dnn']:<24} admission->last op mean app {d['app_mean_ms']:7.2f} ms, "
                  f"sim {d['sim_mean_ms']:7.2f} ms ({100 * d['rel_diff']:.1f} %); p99 app "
                  f"{d['app_p99_ms']:.2f}, sim {d['sim_p99_ms']:.2f}; inferences app "
                  f"{d['app_count']}, sim {d['sim_count']}")
        print(f"  agree: {'yes' if r['agree'] else 'NO'}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"runs": results}, f, indent=1)
    return 0 if all(r["agree"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
