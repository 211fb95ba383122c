#!/usr/bin/env python3
"""Soak test: runs an example app headless for a long time and checks that nothing drifts.

The app itself samples every ``--interval`` seconds (``--sample-every``, see
``examples/support/soak.rs``) into ``OUT/soak.jsonl``: resident memory (``/proc/self/status``),
the C heap (``mallinfo2``), GPU memory allocated through wgpu (all of it, and the part labelled
``heimdall``), the frame intervals of that interval (wall clock) and each DNN's results and
latency in it. This script runs the app, then writes ``OUT/soak.csv`` (one row a sample) and
``OUT/soak_summary.json`` and prints the summary:

- RSS growth from the start of the samples after the warm-up to their end (%; each end is the
  median of three samples), and the least-squares drift of RSS per hour over the same samples;
- the same for the GPU memory allocated;
- the drift per hour of the frame interval's p50 and p99 and of each DNN's latency p50.

It exits non-zero when the app fails (non-zero exit, no samples), or when RSS or GPU memory grew
by ``--max-growth`` percent (1 %) or more after the warm-up.

    python3 scripts/soak.py --example emoji --minutes 60 --out out/soak
    python3 scripts/soak.py --summarize out/soak          # re-judge the samples of a run
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def default_binary(example: str) -> Path:
    """The release build of the example (in CARGO_TARGET_DIR, else target/)."""
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "release" / "examples" / example


def fit(xs: list[float], ys: list[float]) -> tuple[float, float] | None:
    """Least-squares line y = a + b x; None with fewer than two distinct x."""
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - b * mx, b


# Each end of a series is the median of this many samples (fewer in short series), so that one
# transient allocation (Bevy's staging buffers come and go) is not read as growth.
ENDS = 3


def median(v: list[float]) -> float:
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def series_summary(ts_h: list[float], ys: list[float]) -> dict:
    """First and last (medians of up to ENDS samples at each end), growth % (last vs first),
    and the fitted drift per hour (absolute and % of the fitted start)."""
    pairs = [(t, y) for t, y in zip(ts_h, ys) if y is not None]
    if not pairs:
        return {"samples": 0}
    ts, vs = [p[0] for p in pairs], [p[1] for p in pairs]
    k = max(1, min(ENDS, len(vs) // 3))
    first, last = median(vs[:k]), median(vs[-k:])
    out = {
        "samples": len(vs),
        "first": first,
        "last": last,
        "ends_of": k,
        "min": min(vs),
        "max": max(vs),
        "growth_pct": 100.0 * (last - first) / first if first else None,
    }
    f = fit(ts, vs)
    if f is not None:
        a, b = f
        base = a + b * ts[0]
        out["drift_per_hour"] = b
        out["drift_pct_per_hour"] = 100.0 * b / base if base else None
    return out


def get(d: dict, *path, default=None):
    for k in path:
        if not isinstance(d, dict) or k not in d or d[k] is None:
            return default
        d = d[k]
    return d


def load(out: Path) -> list[dict]:
    path = out / "soak.jsonl"
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line:
            rows.append(json.loads(line))
    return rows


MB = 1024.0 * 1024.0


def rnd(v: float | None) -> float | None:
    return None if v is None else round(v, 2)


def cpu_share(prev: dict | None, r: dict) -> float | None:
    """The app's CPU time over the interval's wall time (2.0: both cores of this machine)."""
    a, b = get(prev or {}, "machine", "process_cpu_s"), get(r, "machine", "process_cpu_s")
    if a is None or b is None or not r.get("window_s"):
        return None
    return round((b - a) / r["window_s"], 2)


def write_csv(out: Path, rows: list[dict]) -> None:
    models = sorted({m for r in rows for m in r.get("models", {})})
    cols = ["t_min", "frame", "rss_mb", "rss_anon_mb", "rss_file_mb", "heap_in_use_mb",
            "heap_free_mb", "malloc_mmapped_mb", "gpu_allocated_mb", "gpu_reserved_mb",
            "gpu_heimdall_mb", "interval_p50_ms", "interval_p99_ms", "interval_max_ms",
            "fps", "loadavg_1min", "cpu_share"]
    for m in models:
        cols += [f"{m}_hz", f"{m}_p50_ms", f"{m}_p99_ms"]
    with open(out / "soak.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        prev = None
        for r in rows:
            kb = lambda k: get(r, "memory", k)  # noqa: E731
            b = lambda *p: get(r, *p)  # noqa: E731
            mb = lambda v, s=1.0: None if v is None else round(v * s / MB, 2)  # noqa: E731
            n = get(r, "frame_interval_ms", "count", default=0)
            row = [round(r["t_s"] / 60.0, 2), r.get("frame"),
                   mb(kb("rss_kb"), 1024), mb(kb("rss_anon_kb"), 1024), mb(kb("rss_file_kb"), 1024),
                   mb(b("malloc", "heap_in_use")), mb(b("malloc", "heap_free")),
                   mb(b("malloc", "mmapped")),
                   mb(b("gpu_memory", "allocated")), mb(b("gpu_memory", "reserved")),
                   mb(b("gpu_memory", "heimdall")),
                   rnd(b("frame_interval_ms", "p50")), rnd(b("frame_interval_ms", "p99")),
                   rnd(b("frame_interval_ms", "max")),
                   round(n / r["window_s"], 2) if r.get("window_s") else None,
                   b("machine", "loadavg_1min"), cpu_share(prev, r)]
            prev = r
            for m in models:
                row += [round(get(r, "models", m, "rate_hz", default=0.0), 2),
                        rnd(get(r, "models", m, "latency_ms", "p50")),
                        rnd(get(r, "models", m, "latency_ms", "p99"))]
            w.writerow(row)


def asked_duration(out: Path) -> float | None:
    """The `--duration` of the run in OUT (from command.txt), if known."""
    try:
        words = (out / "command.txt").read_text().split()
        return float(words[words.index("--duration") + 1])
    except (OSError, ValueError, IndexError):
        return None


def summarize(out: Path, warmup_min: float, max_growth: float, app_rc: int | None,
              duration_s: float | None = None) -> tuple[dict, list[str]]:
    rows = load(out)
    failures = []
    if app_rc not in (None, 0):
        failures.append(f"the app exited with {app_rc} (see {out / 'app.log'})")
    if not rows:
        failures.append("no samples")
        return {"samples": 0, "failures": failures}, failures
    if duration_s is None:
        duration_s = asked_duration(out)
    if duration_s is not None:
        # The end of the run builds the final report and the trace (~15 MB for a moment):
        # samples in its last half interval are left out (the app no longer takes them).
        end = duration_s - 0.5 * rows[0].get("window_s", 60.0)
        rows = [r for r in rows if r["t_s"] <= end] or rows
    write_csv(out, rows)
    after = [r for r in rows if r["t_s"] >= warmup_min * 60.0]
    if len(after) < 2:
        failures.append(f"fewer than two samples after the {warmup_min} min warm-up")
    ts_h = [r["t_s"] / 3600.0 for r in after]

    def s(*path, scale=1.0):
        return series_summary(ts_h, [None if get(r, *path) is None else get(r, *path) * scale
                                     for r in after])

    models = sorted({m for r in rows for m in r.get("models", {})})
    summary = {
        "samples": len(rows),
        "samples_after_warmup": len(after),
        "warmup_min": warmup_min,
        "ran_min": rows[-1]["t_s"] / 60.0,
        "asked_min": None if duration_s is None else duration_s / 60.0,
        "frames": rows[-1].get("frame"),
        "max_growth_pct": max_growth,
        "rss_mb": s("memory", "rss_kb", scale=1 / 1024),
        "rss_anon_mb": s("memory", "rss_anon_kb", scale=1 / 1024),
        "heap_in_use_mb": s("malloc", "heap_in_use", scale=1 / MB),
        "heap_free_mb": s("malloc", "heap_free", scale=1 / MB),
        "gpu_allocated_mb": s("gpu_memory", "allocated", scale=1 / MB),
        "gpu_heimdall_mb": s("gpu_memory", "heimdall", scale=1 / MB),
        "interval_p50_ms": s("frame_interval_ms", "p50"),
        "interval_p99_ms": s("frame_interval_ms", "p99"),
        "latency_p50_ms": {m: s("models", m, "latency_ms", "p50") for m in models},
        "rate_hz": {m: s("models", m, "rate_hz") for m in models},
        "kept_at_end": rows[-1].get("kept"),
        "app_rc": app_rc,
    }
    for key in ("rss_mb", "gpu_allocated_mb"):
        g = summary[key].get("growth_pct")
        if g is not None and g >= max_growth:
            failures.append(f"{key} grew {g:.2f} % after the warm-up (limit {max_growth} %)")
    summary["failures"] = failures
    summary["pass"] = not failures
    return summary, failures


def fmt(d: dict, unit: str) -> str:
    if not d.get("samples"):
        return "–"
    g = d.get("growth_pct")
    dr = d.get("drift_per_hour")
    return (f"{d['first']:.2f} → {d['last']:.2f} {unit}"
            + ("" if g is None else f" ({g:+.2f} %)")
            + ("" if dr is None else f", drift {dr:+.3f} {unit}/h"))


def print_summary(summary: dict) -> None:
    print(f"samples {summary['samples']} ({summary.get('samples_after_warmup')} after a "
          f"{summary.get('warmup_min')} min warm-up), {summary.get('ran_min', 0):.1f} min, "
          f"{summary.get('frames')} frames")
    for key, unit in (("rss_mb", "MB"), ("rss_anon_mb", "MB"), ("heap_in_use_mb", "MB"),
                      ("heap_free_mb", "MB"), ("gpu_allocated_mb", "MB"),
                      ("gpu_heimdall_mb", "MB"), ("interval_p50_ms", "ms"),
                      ("interval_p99_ms", "ms")):
        if key in summary:
            print(f"  {key:18} {fmt(summary[key], unit)}")
    for m, d in summary.get("latency_p50_ms", {}).items():
        print(f"  latency p50 {m}: {fmt(d, 'ms')}")
    print("PASS" if summary.get("pass") else "FAIL: " + "; ".join(summary.get("failures", [])))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--example", default="emoji", help="emoji, shopping or workspace")
    ap.add_argument("--bin", type=Path, help="the example's binary (default: the release build)")
    ap.add_argument("--minutes", type=float, default=60.0, help="run length")
    ap.add_argument("--interval", type=float, default=60.0, help="seconds between samples")
    ap.add_argument("--warmup", type=float, default=10.0,
                    help="minutes after the camera starts before growth is measured (on "
                         "lavapipe memory settles in 10-12 min: docs/soak.md)")
    ap.add_argument("--max-growth", type=float, default=1.0, help="percent")
    ap.add_argument("--resolution", default="320x240")
    ap.add_argument("--fps", default="30")
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "soak")
    ap.add_argument("--summarize", type=Path, metavar="OUT",
                    help="only judge the samples already in OUT/soak.jsonl")
    ap.add_argument("app_args", nargs="*", help="more options for the app (after --)")
    a = ap.parse_args()

    if a.summarize:
        summary, failures = summarize(a.summarize, a.warmup, a.max_growth, None)
        (a.summarize / "soak_summary.json").write_text(json.dumps(summary, indent=2))
        print_summary(summary)
        return 1 if failures else 0

    exe = a.bin or default_binary(a.example)
    if not exe.exists():
        print(f"{exe} not found: cargo build --release -p heimdall-examples --example "
              f"{a.example}", file=sys.stderr)
        return 2
    if a.out.exists():
        shutil.rmtree(a.out)
    a.out.mkdir(parents=True)
    duration = a.minutes * 60.0
    cmd = [str(exe), "--headless", "--resolution", a.resolution, "--fps", a.fps,
           "--save-every", "0", "--duration", str(duration), "--sample-every", str(a.interval),
           "--out", str(a.out), *a.app_args]
    (a.out / "command.txt").write_text(" ".join(cmd) + "\n")
    print(" ".join(cmd), flush=True)
    start = time.monotonic()
    with open(a.out / "app.log", "w") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        seen = 0
        while proc.poll() is None:
            time.sleep(min(5.0, a.interval))
            rows = load(a.out) if (a.out / "soak.jsonl").exists() else []
            for r in rows[seen:]:
                print(f"  {r['t_s'] / 60:6.1f} min  frame {r.get('frame'):>7}  "
                      f"RSS {get(r, 'memory', 'rss_kb', default=0) / 1024:8.1f} MB  "
                      f"GPU {get(r, 'gpu_memory', 'allocated', default=0) / MB:7.1f} MB  "
                      f"interval p50 {get(r, 'frame_interval_ms', 'p50', default=0):6.1f} ms",
                      flush=True)
            seen = len(rows)
    rc = proc.returncode
    print(f"the app exited with {rc} after {(time.monotonic() - start) / 60:.1f} min")
    summary, failures = summarize(a.out, a.warmup, a.max_growth, rc, duration)
    (a.out / "soak_summary.json").write_text(json.dumps(summary, indent=2))
    print_summary(summary)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
