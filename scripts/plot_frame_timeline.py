#!/usr/bin/env python3
"""Draws the per-frame GPU timeline of `emoji` runs (their stats.json) as one SVG, one strip per
run: for each frame, the scene passes (grey) and the DNN chunks after them (a colour per model),
against the frame period (red line). Frames whose bar crosses the line missed their vsync.

    python3 scripts/plot_frame_timeline.py docs/measurements/emoji_h100/heimdall_stats.json \
        docs/measurements/emoji_h100/fifo_stats.json --frames 120 --out docs/measurements/emoji_h100/timeline.svg
"""
import argparse
import json

COLOURS = ["#f28c28", "#3fa7d6", "#7bc043", "#e0529c", "#f2d43d", "#9b7fe8", "#4dd0c4"]


def strip(stats, frames, y0, width, height):
    period = 1000.0 / stats["target_fps"]
    scale = height * 0.8 / period  # the period line at 80 % of the strip height
    names = stats.get("instances", {})
    tl = stats["timeline"][:frames]
    col = width / max(len(tl), 1)
    out = []
    model_colour = {}
    for i, f in enumerate(tl):
        x = i * col
        y = y0 + height
        h = f["scene_ms"] * scale
        out.append(f'<rect x="{x:.2f}" y="{y - h:.2f}" width="{col * 0.85:.2f}" height="{h:.2f}" fill="#9e9e9e"/>')
        y -= h
        for inst, ms in f["chunks"]:
            name = names.get(str(inst), str(inst)).split("#")[0]
            c = model_colour.setdefault(name, COLOURS[len(model_colour) % len(COLOURS)])
            h = ms * scale
            out.append(f'<rect x="{x:.2f}" y="{y - h:.2f}" width="{col * 0.85:.2f}" height="{h:.2f}" fill="{c}"/>')
            y -= h
    ly = y0 + height - period * scale
    out.append(f'<line x1="0" x2="{width}" y1="{ly:.2f}" y2="{ly:.2f}" stroke="red" stroke-width="1"/>')
    on = stats.get("on_time_rate")
    label = (f'{stats["mode"]}: {on * 100:.1f} % of frames on time, GPU frame p99 '
             f'{stats["gpu_frame_ms"]["p99"]:.2f} ms (period {period:.2f} ms)')
    out.append(f'<text x="4" y="{y0 + 14}" font-family="sans-serif" font-size="12">{label}</text>')
    legend_x = 4
    for name, c in model_colour.items():
        out.append(f'<rect x="{legend_x}" y="{y0 + 20}" width="10" height="10" fill="{c}"/>')
        out.append(f'<text x="{legend_x + 13}" y="{y0 + 29}" font-family="sans-serif" font-size="10">{name}</text>')
        legend_x += 13 + 7 * len(name)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stats", nargs="+")
    ap.add_argument("--frames", type=int, default=120)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    width, height, gap = 900, 200, 20
    parts = []
    for k, path in enumerate(a.stats):
        with open(path) as f:
            stats = json.load(f)
        parts += strip(stats, a.frames, k * (height + gap), width, height)
    total = len(a.stats) * (height + gap)
    with open(a.out, "w") as f:
        f.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total}" '
                f'viewBox="0 0 {width} {total}"><rect width="100%" height="100%" fill="white"/>\n')
        f.write("\n".join(parts))
        f.write("\n</svg>\n")


if __name__ == "__main__":
    main()
