"""``kafka-reassign --progress --chart FILE.png``: per-broker bytes remaining over time.

The active controller keeps the samples it takes for ``reassignd_broker_bytes_remaining``
(every ``copy_progress_interval_s``) for the latest reassignment run and serves them at
``GET /progress/history`` on its operations port (controller.shell.copy_progress). This module
fetches that document (:func:`fetch_history`), draws it as a PNG with the planner chart's canvas
(spark_jobs.chart: zlib and a pixel font, no plotting library) and writes it as CSV
(``--chart-data``). The controller draws nothing: its image stays free of NumPy.

    doc = fetch_history("http://127.0.0.1:9191", timeout_s=10)
    write_chart(doc, "progress.png"); write_csv(doc, "progress.csv")
"""

from __future__ import annotations

import csv
import json
import urllib.error
import urllib.request

from client.errors import ClusterDataError, ConnectionFailedError
from client.progress import human_bytes, human_eta
from spark_jobs.chart import BLACK, LIGHT, Canvas

HISTORY_PATH = "/progress/history"
# One colour per broker line, cycled (brokers beyond the palette share colours; the legend says which).
PALETTE = ((40, 110, 200), (200, 60, 60), (60, 160, 80), (230, 140, 20), (140, 80, 180), (20, 160, 170),
           (120, 120, 120), (190, 90, 140))
WIDTH, PLOT_H = 900, 360
LEFT, RIGHT, TOP = 110, 20, 40
LEGEND_MAX = 24  # brokers named in the legend; more are drawn but summed up as "+N more"


def fetch_history(ops_url: str, timeout_s: float) -> dict:
    """``GET <ops_url>/progress/history`` of the active controller."""
    url = ops_url.rstrip("/") + HISTORY_PATH
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as answer:
            doc = json.loads(answer.read())
    except urllib.error.HTTPError as e:
        raise ConnectionFailedError(f"{url}: HTTP {e.code} (is this a reassignd controller's operations port?)") from None
    except OSError as e:
        raise ConnectionFailedError(f"cannot read {url}: {e}") from None
    except ValueError as e:
        raise ClusterDataError(f"{url}: not JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("version") != 1 or "run" not in doc:
        raise ClusterDataError(f"{url}: not a progress history document")
    if not doc.get("active"):
        raise ClusterDataError(f"{url}: this controller is not the active one; give the active controller's --ops URL")
    if doc["run"] is None:
        raise ClusterDataError(f"{url}: the controller has sampled no reassignment yet (sampled every copy_progress_interval_s)")
    return doc


def series(doc: dict) -> tuple[list[int], list[float], dict[int, list[int | None]]]:
    """(brokers, seconds since the run began, bytes remaining per broker per sample; None
    where a broker did not answer)."""
    run = doc["run"]
    brokers = [int(b) for b in run["brokers"]]
    began = run["started"]
    times = [s["time"] - began for s in run["samples"]]
    values = {b: [s["bytes_remaining"].get(str(b)) for s in run["samples"]] for b in brokers}
    return brokers, times, values


def write_csv(doc: dict, path) -> None:
    """One row per sample: seconds since the run began, then each broker's bytes remaining
    (empty where it did not answer)."""
    brokers, times, values = series(doc)
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["seconds", *(f"broker_{b}" for b in brokers)])
        for i, t in enumerate(times):
            out.writerow([f"{t:.3f}", *("" if values[b][i] is None else values[b][i] for b in brokers)])


def render(doc: dict) -> bytes:
    brokers, times, values = series(doc)
    run = doc["run"]
    legend_rows = -(-min(len(brokers), LEGEND_MAX + 1) // 4)
    height = TOP + PLOT_H + 50 + 22 * max(legend_rows, 1) + 10
    cv = Canvas(WIDTH, height)
    state = "finished" if run["finished"] is not None else "running"
    span = max(times[-1] if times else 0.0, 1e-9)
    cv.text(LEFT, 10, f"bytes remaining per broker, run {run['number']} ({state}, {human_eta(times[-1] if times else 0)})")
    top_v = max([v for vs in values.values() for v in vs if v is not None] or [0]) or 1
    plot_w = WIDTH - LEFT - RIGHT
    base = TOP + PLOT_H
    cv.rect(LEFT - 2, TOP, LEFT - 1, base + 1, BLACK)
    cv.rect(LEFT - 2, base, LEFT + plot_w, base + 1, BLACK)
    for frac in (0.0, 0.5, 1.0):
        y = base - frac * (PLOT_H - 10)
        if frac:
            cv.rect(LEFT, y, LEFT + plot_w, y + 1, LIGHT)
        cv.rect(LEFT - 6, y, LEFT - 2, y + 1, BLACK)
        cv.text(4, y - 7, human_bytes(top_v * frac).replace(" ", ""))
    for frac in (0.0, 0.5, 1.0):
        x = LEFT + frac * (plot_w - 1)
        cv.rect(x, base, x + 1, base + 5, BLACK)
        seconds = span * frac
        label = f"{seconds:.0f}s" if span >= 10 else f"{seconds:.1f}s"
        cv.text(x - len(label) * 12 * frac, base + 8, label)  # 12: a glyph's width on the canvas

    def point(t: float, v: int) -> tuple[float, float]:
        return LEFT + t / span * (plot_w - 1), base - v / top_v * (PLOT_H - 10)

    for i, b in enumerate(brokers):
        colour = PALETTE[i % len(PALETTE)]
        # Brokers copying alike draw the same line: the first ones wider, so each still shows.
        width = max(2, 6 - 2 * i)
        last = None
        for t, v in zip(times, values[b]):
            if v is None:
                last = None  # no answer: a gap, not a guess
                continue
            here = point(t, v)
            if last is not None:
                _line(cv, last, here, colour, width)
            else:
                cv.rect(here[0] - 1, here[1] - 1, here[0] + 2, here[1] + 2, colour)
            last = here
    ly = base + 30
    for i, b in enumerate(brokers[:LEGEND_MAX]):
        x = LEFT + (i % 4) * 190
        y = ly + (i // 4) * 22
        cv.rect(x, y + 5, x + 16, y + 9, PALETTE[i % len(PALETTE)])
        cv.text(x + 22, y, f"broker {b}")
    if len(brokers) > LEGEND_MAX:
        i = LEGEND_MAX
        cv.text(LEFT + (i % 4) * 190, ly + (i // 4) * 22, f"+{len(brokers) - LEGEND_MAX} more")
    return cv.png()


def _line(cv: Canvas, a: tuple[float, float], b: tuple[float, float], colour, width: int) -> None:
    """A line ``width`` pixels thick from a to b, one square per step along its longer axis."""
    (x0, y0), (x1, y1) = a, b
    steps = int(max(abs(x1 - x0), abs(y1 - y0))) + 1
    for k in range(steps + 1):
        f = k / steps
        x, y = x0 + (x1 - x0) * f, y0 + (y1 - y0) * f
        cv.rect(x - width // 2, y - width // 2, x + (width + 1) // 2, y + (width + 1) // 2, colour)


def write_chart(doc: dict, path) -> None:
    with open(path, "wb") as f:
        f.write(render(doc))
