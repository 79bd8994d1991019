"""Charts drawn with matplotlib, as PNG or SVG by the file's suffix: the planner's before/after
chart (here) and ``kafka-reassign --progress --chart`` (client/chart.py, which uses the helpers
below).

The planner's chart has one panel per measure, one bar pair per broker, before (grey) and after
(blue): replicas and preferred leaders with the fair targets R and R+1 (dashed), bytes on disk
when the snapshot knows sizes, and disk use against each broker's capacity with the capacity
goal's threshold (dashed) when capacities are known. Its title gives the move count against KIP-6's lower bound (and the
extra moves a rack fix needed). Clusters with more than ``MAX_BARS`` brokers are drawn with
several brokers per bar (the bar shows their mean), so a bar never gets thinner than a pixel.

matplotlib is an optional extra (``pip install 'reassignd[charts]'``): the controller's image and a
planner run without ``--chart`` never import it, and asking for a chart without it is a
:class:`ChartError` that names the extra. Figures are built without pyplot (no global state, no
display), and SVG keeps its text as text, so a browser can search and scale it.

Usage::

    write_chart(report, "chart.svg")   # report: spark_jobs.api's plan report
"""

from __future__ import annotations

import math
from pathlib import Path

# Suffix -> matplotlib format: what a chart can be written as.
FORMATS = {".png": "png", ".svg": "svg"}
# Bar pairs per panel: more brokers are grouped, several to a bar (at ~1,200 pixels wide a pair
# below 4 pixels is unreadable).
MAX_BARS = 300
# Broker ids are written under the bars only up to this many (beyond, they overlap).
MAX_LABELLED_BARS = 60
DPI = 100
BEFORE, AFTER, TARGET = "#a0a0a0", "#2a6ec8", "#c83c3c"
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


class ChartError(ValueError):
    """A chart cannot be written: an unsupported file suffix, or no matplotlib installed."""


def chart_format(path) -> str:
    """The format a chart at ``path`` is written in (ChartError for other suffixes)."""
    fmt = FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise ChartError(f"{path}: a chart is written as {' or '.join(FORMATS)} (by the file name's suffix)")
    return fmt


def check_chart_path(path) -> str:
    """Before any work: ``path``'s format, and matplotlib is there to draw it (ChartError if not)."""
    fmt = chart_format(path)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ChartError("charts need matplotlib: pip install 'reassignd[charts]'") from None
    return fmt


def new_figure(width_in: float, height_in: float):
    """A matplotlib Figure (no pyplot: nothing global, no display needed)."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ChartError("charts need matplotlib: pip install 'reassignd[charts]'") from None
    return Figure(figsize=(width_in, height_in), dpi=DPI, layout="constrained")


def figure_bytes(fig, fmt: str) -> bytes:
    """``fig`` as PNG or SVG bytes; SVG text stays text, with no date in it (same input, same file)."""
    import io

    import matplotlib

    if fmt not in FORMATS.values():
        raise ChartError(f"a chart is written as {' or '.join(FORMATS.values())}, not {fmt!r}")
    out = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "reassignd"}):
        fig.savefig(out, format=fmt, metadata={"Date": None} if fmt == "svg" else None)
    return out.getvalue()


def byte_unit(largest: float) -> tuple[int, str]:
    """The binary unit to draw byte counts up to ``largest`` in: (its size, its name). Axes are
    drawn in that unit so their ticks fall on round numbers of it."""
    step = min(int(math.log(largest, 1024)), len(_UNITS) - 1) if largest >= 1 else 0
    return 1024**step, _UNITS[step]


def _grouped(values: list[float], group: int) -> list[float]:
    """Means of consecutive runs of ``group`` values (the last run may be shorter)."""
    return [sum(run) / len(run) for run in (values[i:i + group] for i in range(0, len(values), group))]


def _title(report: dict) -> str:
    title = f"{report['mode']}: {report['moves']} moves, lower bound {report['lower_bound']}"
    extra = report.get("rack_fix_moves") or 0
    if extra:
        title += f" ({extra} of them to make partitions rack-valid)"
    return title


def draw(report: dict):
    """The planner's chart as a matplotlib Figure."""
    from matplotlib.ticker import MaxNLocator

    rows = report["per_broker"]
    sized = any(r.get("bytes_before") or r.get("bytes_after") for r in rows)  # else sizes are unknown
    panels = [
        ("replicas per broker", "replicas_before", "replicas_after", report["replica_target"]),
        ("preferred leaders per broker", "leaders_before", "leaders_after", report["leader_target"]),
    ]
    if sized:
        panels.append(("bytes on disk per broker", "bytes_before", "bytes_after", None))
    capacity = report.get("capacity")
    if capacity and any(r.get("disk_use_before") is not None for r in rows):
        # Disk use against each broker's capacity, with the capacity goal's threshold (hard).
        panels.append(("disk use, % of capacity", "disk_use_before", "disk_use_after", capacity["threshold"]))
    n = max(len(rows), 1)
    group = -(-n // MAX_BARS)
    bars = -(-n // group)
    width_in = min(14.0, max(7.0, 3.0 + bars * 0.25))  # at most 1,400 pixels wide
    fig = new_figure(width_in, 2.6 * len(panels) + 0.8)
    fig.suptitle(_title(report), fontsize=12)
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    xs = list(range(bars))
    half = 0.4
    for ax, (name, kb, ka, target) in zip(axes, panels):
        before = _grouped([float(r.get(kb) or 0.0) for r in rows] or [0.0], group)
        after = _grouped([float(r.get(ka) or 0.0) for r in rows] or [0.0], group)
        if target is None:  # bytes, in the unit of the largest bar
            size, unit = byte_unit(max(before + after))
            before, after = [v / size for v in before], [v / size for v in after]
            ax.set_ylabel(unit)
        if isinstance(target, float):  # disk use: a fraction of capacity, drawn in %
            before, after = [100 * v for v in before], [100 * v for v in after]
            ax.bar([x - half / 2 for x in xs], before, width=half, color=BEFORE)
            ax.bar([x + half / 2 for x in xs], after, width=half, color=AFTER)
            ax.axhline(100 * target, color=TARGET, linestyle="--", linewidth=1)
            ax.annotate(f"threshold {100 * target:.0f}%", xy=(1.0, 100 * target), xycoords=("axes fraction", "data"),
                        xytext=(3, 0), textcoords="offset points", va="center", fontsize=8, color=TARGET)
            ax.set_ylabel("%")
            ax.set_title(name if group == 1 else f"{name} ({group} brokers per bar, their mean)", fontsize=10,
                         loc="left")
            ax.grid(axis="y", color="#e6e6e6")
            ax.set_axisbelow(True)
            continue
        ax.bar([x - half / 2 for x in xs], before, width=half, color=BEFORE, label="before")
        ax.bar([x + half / 2 for x in xs], after, width=half, color=AFTER, label="after")
        if target is not None:
            for value, label in zip(target, ("R", "R+1")):
                ax.axhline(value, color=TARGET, linestyle="--", linewidth=1)
                ax.annotate(f"{label} = {value}", xy=(1.0, value), xycoords=("axes fraction", "data"),
                            xytext=(3, 0), textcoords="offset points", va="center", fontsize=8, color=TARGET)
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(name if group == 1 else f"{name} ({group} brokers per bar, their mean)", fontsize=10, loc="left")
        ax.grid(axis="y", color="#e6e6e6")
        ax.set_axisbelow(True)
    axes[0].legend(loc="upper right", fontsize=8, ncols=2)
    last = axes[-1]
    if group == 1 and bars <= MAX_LABELLED_BARS:
        last.set_xticks(xs, [_broker_label(r) for r in rows], fontsize=8)
    else:
        last.set_xticks([])
    last.set_xlabel("broker" + (" (rack)" if any(r.get("rack") for r in rows) else ""))
    return fig


def _broker_label(row: dict) -> str:
    return f"{row['broker']}\n{row['rack']}" if row.get("rack") else str(row["broker"])


def render(report: dict, fmt: str = "png") -> bytes:
    """The planner's chart for ``report`` as PNG or SVG bytes."""
    return figure_bytes(draw(report), fmt)


def write_chart(report: dict, path) -> None:
    """Draw the planner's chart for ``report`` into ``path`` (.png or .svg)."""
    fmt = chart_format(path)  # a bad suffix is refused before anything is drawn
    Path(path).write_bytes(render(report, fmt))
