#!/usr/bin/env python3
"""An independent witness of host noise: a loop that sleeps 4 ms, then times a fixed piece of
CPU work (~0.3 ms), until killed (SIGTERM) or DURATION seconds. It records every wake-up more
than 3 ms late (the scheduler) and every piece of work that took over 3x the median (a core
slowed down: frequency, a busy sibling hyperthread, memory contention). Run beside the apps:
the probe shares nothing with them but the host.
usage: python3 jitter_probe.py OUT.json [DURATION_S]"""
import json, signal, sys, time

out, duration = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 3600.0
late, wakes, start, work = [], 0, time.time(), []
stop = False


def finish(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, finish)
t0 = time.perf_counter()
while not stop and time.perf_counter() - t0 < duration:
    a = time.perf_counter()
    time.sleep(0.004)
    over = (time.perf_counter() - a - 0.004) * 1e3
    wakes += 1
    if over > 3.0:
        late.append([round(time.time() - start, 3), round(over, 2)])
    b = time.perf_counter()
    sum(range(20000))
    work.append((round(time.time() - start, 3), (time.perf_counter() - b) * 1e3))
span = time.perf_counter() - t0
ms = sorted(w for _, w in work)
median = ms[len(ms) // 2] if ms else 0.0
slow = [[t, round(w / median, 1)] for t, w in work if median and w > 3 * median]
json.dump({"start_unix": start, "span_s": span, "wakes": wakes,
           "late_over_3ms": len(late), "late_over_8ms": sum(1 for _, o in late if o > 8.0),
           "late_per_minute": 60.0 * len(late) / max(span, 1e-9), "late": late[:2000],
           "work_median_ms": median, "work_p99_ms": ms[int(0.99 * (len(ms) - 1))] if ms else 0.0,
           "work_slow_over_3x": len(slow), "slow_per_minute": 60.0 * len(slow) / max(span, 1e-9),
           "slow": slow[:2000]}, open(out, "w"))
