"""A plan's output files (Kafka's reassignment JSON, batches, report, chart), written all or
none (the planner's command, :mod:`reassignd.plan`, writes them).

    files = output_files(result, Path("plan.json"), Path("batches.json"), report=None, chart_path=None)
    write_all(files)        # every file or none (temp files first, then the renames)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from spark_jobs import chart


def plan_json(reassignment: dict) -> bytes:
    """Kafka's reassignment JSON, one partition per line: valid JSON, readable, deterministic."""
    lines = [json.dumps(e, separators=(",", ":")) for e in reassignment["partitions"]]
    body = ",\n".join(lines)
    return f'{{"version":{reassignment["version"]},"partitions":[\n{body}\n]}}\n'.encode()


def json_bytes(obj) -> bytes:
    """A report or batches file: indented, keys sorted (the same result, the same bytes)."""
    return (json.dumps(obj, indent=1, sort_keys=True) + "\n").encode()


def write_all(files: list[tuple[Path, bytes]]) -> None:
    """Write every output or none: all temp files first, then the renames."""
    temps = []
    try:
        for path, data in files:
            tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
            tmp.write_bytes(data)
            temps.append((tmp, path))
    except OSError:
        for tmp, _ in temps:
            tmp.unlink(missing_ok=True)
        raise
    for tmp, path in temps:
        os.replace(tmp, path)


def output_files(result, out: Path, batches: Path | None, report: Path | None, chart_path: Path | None) -> list:
    """(path, bytes) for each output of ``result`` (an api.plan result) that has a path."""
    files = [(out, plan_json(result.reassignment))]
    if batches:
        files.append((batches, json_bytes(result.batches)))
    if report:
        files.append((report, json_bytes(result.report)))
    if chart_path:
        files.append((chart_path, chart.render(result.report, chart.chart_format(chart_path))))
    return files

