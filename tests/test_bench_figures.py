"""The README's performance figures come from bench/results.json, never from typing.

Fails when the README's generated table or a quoted `name=value` figure differs from what the
recorded results give, when the README quotes a figure no benchmark recorded, or when a
benchmark does not end through bench.results.finish (so its figures would not be recorded).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import report
from bench.results import RESULTS, check_figures, load

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = ["codec", "zk_writes", "rpc", "controller", "planner"]


def _results(**figures) -> dict:
    cond = {"commit": "0123456789abcdef", "dirty": False, "cpu_count": 2, "cpu_model": "cpu",
            "load_average_start": [1.0, 1.0, 1.0], "load_average_end": [2.0, 1.5, 1.0],
            "finished_utc": "2026-11-26T19:00:00Z", "started_utc": "2026-11-26T18:59:00Z", "python": "3.11.7"}
    return {"zk_writes": {"figures": figures, "peer": "kazoo create_async", "sizes": {"count": 10}, "notes": [],
                          "conditions": cond}}


def _readme(prose: str) -> str:
    return (f"# x\n\n{report.SECTION}\n\n{report.START}\nold table\n{report.END}\n\n{prose}\n\n"
            "## Next\n\nOther section `some_setting=3` is not ours.\n")


def test_readme_is_what_results_json_generates():
    text = (REPO / "README.md").read_text()
    results = load(RESULTS)
    assert report.unsourced(text, results) == [], "the README quotes figures bench/results.json does not hold"
    assert report.generate(text, results) == text, "README is stale: run python -m bench.report"


def test_every_benchmark_is_recorded_and_ends_through_finish():
    results = load(RESULTS)
    for name in BENCHMARKS:
        source = (REPO / "bench" / f"{name}.py").read_text()
        assert "results.finish(" in source, f"bench/{name}.py does not record its figures"
        assert name in results, f"bench/results.json has no run of bench/{name}.py"
        check_figures(results[name]["figures"])
        assert results[name]["conditions"]["commit"]


def test_a_typed_figure_without_a_source_fails():
    text = _readme("The writes are `batched_write_speedup=52` times faster.")
    results = _results(pipelined_write_speedup=3.1)
    assert report.unsourced(text, results) == ["batched_write_speedup=52"]
    with pytest.raises(ValueError, match="batched_write_speedup=52"):
        report.generate(text, results)


def test_a_stale_value_and_table_are_regenerated():
    text = _readme("Batched: `batched_write_speedup=52`.")
    out = report.generate(text, _results(batched_write_speedup=3.1))
    assert out != text
    assert "Batched: `batched_write_speedup=3.1`." in out
    assert "old table" not in out
    assert "| `bench/zk_writes.py` | kazoo create_async | count=10 | `batched_write_speedup=3.1` |" in out
    assert "load 1/1/1 -> 2/1.5/1" in out
    # Generation is a fixed point, and other sections are left alone.
    assert report.generate(out, _results(batched_write_speedup=3.1)) == out
    assert "`some_setting=3` is not ours" in out


def test_a_figure_two_benchmarks_record_is_ambiguous():
    results = _results(x_per_second=1)
    results["rpc"] = dict(results["zk_writes"], figures={"x_per_second": 2})
    with pytest.raises(ValueError, match="ambiguous"):
        report.figure_index(results)
