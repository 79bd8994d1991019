"""``kafka-reassign --progress --chart FILE.png``: per-broker bytes remaining over time.

The active controller keeps the samples it takes for ``reassignd_broker_bytes_remaining``
(every ``copy_progress_interval_s``) for the latest reassignment run and serves them at
``GET /progress/history`` on its operations port (controller.shell.copy_progress). This module
fetches that document (:func:`fetch_history`), draws it with matplotlib (the optional ``charts``
extra, through spark_jobs.chart's helpers) as PNG or SVG, with each broker's follower throttle and
ETA from the ``--progress`` report taken with it, and writes it as CSV (``--chart-data``). The
controller draws nothing: its image stays free of NumPy and matplotlib.

    doc = fetch_history("http://127.0.0.1:9191", timeout_s=10)
    write_chart(doc, "progress.svg", progress=report.data); write_csv(doc, "progress.csv")
"""

from __future__ import annotations

import csv
import json
import urllib.error
import urllib.request

from client.errors import ClusterDataError, ConnectionFailedError
from client.progress import human_bytes, human_eta
from spark_jobs.chart import byte_unit, chart_format, figure_bytes, new_figure

HISTORY_PATH = "/progress/history"
# One colour per broker line, cycled (brokers beyond the palette share colours; the legend says which).
PALETTE = ("#2a6ec8", "#c83c3c", "#3ca050", "#e68c14", "#8c50b4", "#14a0aa", "#787878", "#be5a8c")
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
    times = [max(0.0, s["time"] - began) for s in run["samples"]]  # the samples' times are rounded to ms
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


def broker_etas(progress: dict | None) -> dict[int, float]:
    """Receiving broker -> seconds until its copies are done, from a ``--progress`` report's JSON
    (the slowest of its replicas still copying; brokers with no estimate are left out)."""
    out: dict[int, float] = {}
    for row in (progress or {}).get("replicas", []):
        if row.get("bytes_remaining") and row.get("eta_s") is not None:
            out[row["broker"]] = max(out.get(row["broker"], 0.0), row["eta_s"])
    return out


def draw(doc: dict, progress: dict | None = None):
    """The bytes-remaining chart as a matplotlib Figure: one line per receiving broker, its follower
    throttle in the legend, and (while the run goes on) a dashed line from its last sample to zero
    at its ETA, from ``progress``: the ``--progress`` report's JSON taken with the history."""
    brokers, times, values = series(doc)
    run = doc["run"]
    throttles = {int(b): r for b, r in (progress or {}).get("follower_throttles", {}).items()}
    etas = broker_etas(progress) if run["finished"] is None else {}
    largest = max([v for vs in values.values() for v in vs if v is not None] or [0])
    size, unit = byte_unit(largest)
    fig = new_figure(9.0, 5.0)
    ax = fig.subplots()
    elapsed = times[-1] if times else 0.0
    state = f"finished after {human_eta(elapsed)}" if run["finished"] is not None else f"running for {human_eta(elapsed)}"
    overall = (progress or {}).get("eta_s")
    if run["finished"] is None and overall is not None:
        state += f", ETA {human_eta(overall)}"
    fig.suptitle(f"bytes remaining per receiving broker, run {run['number']} ({state})", fontsize=11)
    shown = brokers[:LEGEND_MAX]
    for i, b in enumerate(brokers):
        colour = PALETTE[i % len(PALETTE)]
        label = None
        if b in shown:
            label = f"broker {b}"
            if b in throttles:
                label += f", throttle {human_bytes(throttles[b])}/s"
        # No answer is a gap in the line (NaN), not a guess.
        ys = [float("nan") if v is None else v / size for v in values[b]]
        ax.plot(times, ys, color=colour, linewidth=max(1.2, 4.5 - 1.5 * i), marker="." if len(times) < 40 else None,
                label=label)
        last = next(((t, v) for t, v in zip(reversed(times), reversed(values[b])) if v is not None), None)
        if b in etas and last is not None and last[1] > 0:
            ax.plot([last[0], elapsed + etas[b]], [last[1] / size, 0.0], color=colour, linestyle="--", linewidth=1)
    if etas:
        ax.plot([], [], color="#555555", linestyle="--", linewidth=1, label="projected to its ETA")
    if len(brokers) > LEGEND_MAX:
        ax.plot([], [], linestyle="none", label=f"+{len(brokers) - LEGEND_MAX} more brokers")
    ax.set_xlabel("seconds since the run began")
    ax.set_ylabel(unit)
    ax.set_xlim(0, max(elapsed + max(etas.values(), default=0.0), run.get("interval_s") or 1.0))
    ax.set_ylim(bottom=0)
    ax.grid(color="#e6e6e6")
    if brokers:
        ax.legend(fontsize=8, loc="upper right")
    return fig


def render(doc: dict, progress: dict | None = None, fmt: str = "png") -> bytes:
    """The bytes-remaining chart as PNG or SVG bytes."""
    return figure_bytes(draw(doc, progress), fmt)


def write_chart(doc: dict, path, progress: dict | None = None) -> None:
    fmt = chart_format(path)
    with open(path, "wb") as f:
        f.write(render(doc, progress, fmt))
