#!/usr/bin/python3
"""Checks a `gradshare report` page and a headless-Chromium screenshot of it (report_test.sh).

  check_report.py REPORT.html SCREENSHOT.png --workers N [N ...] --strategies S [S ...]

The HTML: one <svg> per chart figure, the expected charts, a PNG beside the page for every
chart (decodable, not blank), one worker-table row per worker of each run, each run's config,
event lines on the time charts, nothing loaded from elsewhere. The screenshot: not blank, and
the charts drawn: plot frames found, the overlaid runs' colours inside the training charts.
Needs Debian's python3 (numpy, PIL). Prints what it found; exits 1 naming every failure.
"""
import argparse
import html as html_text
import os
import re
import sys

import numpy as np
from PIL import Image

RUN_COLOURS = [(0x1F, 0x77, 0xB4), (0xD6, 0x27, 0x28)]
TRAINING = ["loss-time", "loss-step", "accuracy-time", "accuracy-step"]
COMMUNICATION = ["samples", "tau", "sparsity", "bytes", "staleness", "backpressure"]
ENCODING_DEBUG = ["enc-tau", "enc-sparsity", "enc-residual", "enc-bytes", "enc-staleness", "enc-backpressure"]


def check_html(path, workers, strategies, failures):
    html = open(path, encoding="utf-8").read()
    figures = re.findall(r'<figure class="chart-figure" id="chart-([\w-]+)">(.*?)</figure>', html, re.S)
    ids = [f[0] for f in figures]
    print(f"html: {len(html)} bytes, {len(figures)} charts: {' '.join(ids)}")
    if html.count("<svg ") != len(figures):
        failures.append(f"{html.count('<svg ')} <svg> elements for {len(figures)} chart figures")
    expected = TRAINING + COMMUNICATION + ["run1-" + e for e in ENCODING_DEBUG]
    missing = [e for e in expected if e not in ids]
    if missing:
        failures.append(f"charts missing: {missing}")
    if any(i.startswith("run2-enc") for i in ids):
        failures.append("encoding-debug charts for the allreduce run, which has no such records")
    for chart_id, body in figures:
        if body.count("<svg ") != 1 or body.count("</svg>") != 1:
            failures.append(f"{chart_id}: not exactly one <svg>")
        lines = re.findall(r'<polyline class="series"[^>]* points="([^"]*)"', body)
        if not any(len(points.split()) >= 2 for points in lines):
            failures.append(f"{chart_id}: no series with two points or more")
        png = os.path.join(os.path.dirname(path), f"report-{chart_id}.png")
        if f'href="report-{chart_id}.png"' not in body:
            failures.append(f"{chart_id}: no link to its PNG")
        try:
            image = np.asarray(Image.open(png).convert("RGB"))
            colours = len(np.unique(image.reshape(-1, 3), axis=0))
            if image.shape[:2] != (720, 1280) or colours < 6:
                failures.append(f"{png}: {image.shape[1]}x{image.shape[0]} px, {colours} colours")
        except OSError as error:
            failures.append(f"{png}: {error}")
    by_id = dict(figures)
    for chart_id in TRAINING:
        body = by_id.get(chart_id, "")
        for colour in ("#1f77b4", "#d62728"):
            if f'stroke="{colour}"' not in body:
                failures.append(f"{chart_id}: no series in run colour {colour}")
    events = by_id.get("loss-time", "").count('<line class="event"')
    print(f"loss-time: {events} event lines")
    if events < 5:  # a checkpoint every epoch: 3 + 2
        failures.append(f"loss-time: {events} event lines, expected a checkpoint per epoch (5)")
    if "allreduce" not in by_id.get("tau", "") or "no data" not in by_id.get("tau", ""):
        failures.append("tau: the allreduce run is not named as having no data")

    sections = re.findall(r'<section class="run" id="run-(\d+)">(.*?)</section>', html, re.S)
    if len(sections) != len(workers):
        failures.append(f"{len(sections)} run sections, expected {len(workers)}")
    for (number, body), count, strategy in zip(sections, workers, strategies):
        rows = body.count('<tr class="worker">')
        print(f"run {number}: {rows} worker rows")
        if rows != count:
            failures.append(f"run {number}: {rows} worker-table rows, expected {count}")
        config = re.search(r'<pre class="config">(.*?)</pre>', body, re.S)
        if not config or not re.search(rf'^  strategy: "?{strategy}"?$', html_text.unescape(config.group(1)), re.M):
            failures.append(f"run {number}: no resolved config with strategy: {strategy}")
    checkpoints = len(re.findall(r"<td>checkpoint</td>", html))
    print(f"events table: {checkpoints} checkpoints")
    if checkpoints < 5:
        failures.append(f"{checkpoints} checkpoints in the events table, expected 5")
    for external in ("http://", "https://", "<script", "<img", "<link", "url(", "@import"):
        if external in html:
            failures.append(f"the page contains '{external}'")


def frame_grey(image):
    """Where the plot frames' grey (#888888, lighter where anti-aliased) is: a boolean mask."""
    r, g, b = (image[:, :, i].astype(int) for i in range(3))
    return (r == g) & (g == b) & (r >= 0x80) & (r <= 0xD0)


def frame_runs(row):
    """[(start, end)] of the grey runs in one row, two runs of 40 px or more less than 16 px
    apart joined: a curve that reaches the plot's top or bottom edge crosses the frame line
    without ending it (tick marks and label glyphs, shorter, stay apart)."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], row.astype(np.int8), [0]))))
    runs = []
    for start, end in zip(edges[::2], edges[1::2]):
        long_pieces = end - start >= 40 and runs and runs[-1][1] - runs[-1][0] >= 40
        if long_pieces and start - runs[-1][1] < 16:
            runs[-1][1] = end
        else:
            runs.append([start, end])
    return runs


def frame_lines(grey):
    """Horizontal runs (>= 500 px) of the frame grey: [(y, x_start, x_end)], a line that
    anti-aliasing spread over adjacent rows counted once."""
    lines = []  # [first row, last row, x_start, x_end]
    for y in range(grey.shape[0]):
        for start, end in frame_runs(grey[y]):
            if end - start < 500:
                continue
            line = next((l for l in lines if l[1] == y - 1 and abs(l[2] - start) <= 3), None)
            if line:
                line[1] = y
            else:
                lines.append([y, y, int(start), int(end)])
    return [(first, start, end) for first, _, start, end in lines]


def check_screenshot(path, failures):
    image = np.asarray(Image.open(path).convert("RGB"))
    colours = len(np.unique(image.reshape(-1, 3), axis=0))
    print(f"screenshot: {image.shape[1]}x{image.shape[0]} px, {colours} colours")
    if colours < 100:
        failures.append(f"screenshot has {colours} colours: blank or nearly")
    # Plot areas: a frame's top and bottom lines at the same x, a plot's height apart, joined
    # by the frame's left side.
    grey = frame_grey(image)
    lines = frame_lines(grey)
    plots = []
    for i, (top, x0, x1) in enumerate(lines):
        for bottom, bx0, _ in lines[i + 1:]:
            if abs(bx0 - x0) > 3 or not 150 <= bottom - top <= 340:
                continue
            if grey[top:bottom, max(x0 - 1, 0):x0 + 2].any(axis=1).mean() > 0.9:
                plots.append((top, bottom, x0, x1))
                break
    # In reading order: rows of charts (tops within a few pixels), left to right.
    plots.sort()
    row_top = None
    ordered = []
    for plot in plots:
        if row_top is None or plot[0] - row_top > 10:
            row_top = plot[0]
        ordered.append((row_top, plot[2], plot))
    plots = [plot for _, _, plot in sorted(ordered)]
    print(f"screenshot: {len(plots)} plot areas found: " + ", ".join(f"{x0},{t}-{x1},{b}" for t, b, x0, x1 in plots))
    if len(plots) < 6:
        failures.append(f"{len(plots)} drawn charts found in the screenshot, expected 6 or more")
    for n, (top, bottom, x0, x1) in enumerate(plots):
        area = image[top + 2:bottom - 1, x0 + 2:x1 - 1].astype(int)
        saturated = (area.max(axis=2) - area.min(axis=2) > 40).mean()
        near = [int((np.abs(area - np.array(c)).sum(axis=2) < 60).sum()) for c in RUN_COLOURS]
        print(f"  plot {n}: {100 * saturated:.2f} % coloured, run colours {near[0]} / {near[1]} px")
        if saturated < 0.004:
            failures.append(f"plot {n} at y {top}: nothing drawn in it ({100 * saturated:.2f} % coloured)")
        if n < 4 and min(near) < 200:  # the training charts overlay both runs' lines
            failures.append(f"plot {n} at y {top}: run colours {near[0]} / {near[1]} px, both expected")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("html")
    parser.add_argument("screenshot")
    parser.add_argument("--workers", type=int, nargs="+", required=True)
    parser.add_argument("--strategies", nargs="+", required=True)
    args = parser.parse_args()
    failures = []
    check_html(args.html, args.workers, args.strategies, failures)
    check_screenshot(args.screenshot, failures)
    for failure in failures:
        print(f"FAIL: {failure}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
