"""``kafka-reassign --progress --chart``: the controller's bytes-remaining history (the pure
ring buffer, then a real reassignment on simulated brokers with a controller process, charted
through its operations port)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import urllib.request

import pytest

from client import chart as chart_module
from client import exit_codes
from client.cli import UsageError, build_parser, check_options
from controller.shell.copy_progress import ProgressHistory
from tests.controller.test_copy_progress import ops_port, ready
from tests.e2e.processes import REPO, running_cluster, wait_for


def test_history_runs_are_bounded_gapped_and_replaced():
    h = ProgressHistory(max_samples=3)
    assert h.as_json() == {"version": 1, "run": None}
    h.record(10.0, False, {}, set(), 1.0)  # idle: no run begins
    assert h.as_json()["run"] is None
    h.record(11.0, True, {4: 900}, set(), 1.0)
    h.record(12.0, True, {4: 500, 5: 700}, set(), 1.0)
    h.record(13.0, True, {5: 300}, {4}, 1.0)  # broker 4 did not answer: left out, not 0
    h.record(14.0, True, {5: 100}, set(), 1.0)  # 4 has no move left: 0
    run = h.as_json()["run"]
    assert run["number"] == 1 and run["finished"] is None and run["brokers"] == [4, 5]
    assert [s["bytes_remaining"] for s in run["samples"]] == [{"4": 500, "5": 700}, {"5": 300}, {"4": 0, "5": 100}]
    assert run["dropped_samples"] == 1  # the bound pushed out the first sample
    h.record(15.0, False, {}, set(), 1.0)  # nothing pending or running: the run ends at 0
    run = h.as_json()["run"]
    assert run["finished"] == 15.0 and run["samples"][-1]["bytes_remaining"] == {"4": 0, "5": 0}
    h.record(16.0, False, {}, set(), 1.0)  # still readable while idle
    assert h.as_json()["run"]["finished"] == 15.0 and len(h.as_json()["run"]["samples"]) == 3
    h.record(17.0, True, {6: 50}, set(), 1.0)  # the next reassignment replaces it
    run = h.as_json()["run"]
    assert run["number"] == 2 and run["brokers"] == [6] and run["started"] == 17.0 and len(run["samples"]) == 1


def test_chart_options_are_checked():
    parser = build_parser()
    base = ["--bootstrap-server", "h:1", "--progress", "--reassignment-json-file", "p.json"]
    for extra, words in ((["--chart", "c.png"], "--ops"), (["--chart-data", "c.csv"], "--ops"),
                         (["--ops", "http://h:2"], "only read with"),
                         (["--chart", "c.png", "--ops", "h:2"], "http:// URL"),
                         (["--chart", "c.jpg", "--ops", "http://h:2"], ".png or .svg")):
        with pytest.raises(UsageError, match=words):
            check_options(parser.parse_args(base + extra))
    with pytest.raises(UsageError, match="cannot be used with --list"):
        check_options(parser.parse_args(["--bootstrap-server", "h:1", "--list", "--chart", "c.png", "--ops", "http://h:2"]))
    assert check_options(parser.parse_args(base + ["--chart", "c.png", "--ops", "http://h:2"])) == "progress"


def png_colours(path) -> set[tuple[int, int, int]]:
    """The RGB colours a PNG chart holds (read back with matplotlib's own PNG reader)."""
    from matplotlib.image import imread

    pixels = imread(path)
    return {tuple(int(round(c * 255)) for c in px[:3]) for row in pixels for px in row}


def rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))


def svg_text(data: bytes) -> str:
    import xml.etree.ElementTree as ET

    return " ".join(t.strip() for t in ET.fromstring(data).itertext() if t.strip())


def _doc(finished: float | None) -> dict:
    samples = [{"time": 100.0 + i, "bytes_remaining": {"4": 4_194_304 - i * 1_048_576, "5": 2_097_152 - i * 524_288}}
               for i in range(3)]
    samples[1]["bytes_remaining"].pop("5")  # broker 5 did not answer: a gap
    return {"version": 1, "active": True, "run": {"number": 3, "started": 100.0, "finished": finished,
                                                   "interval_s": 1.0, "max_samples": 10, "dropped_samples": 0,
                                                   "brokers": [4, 5], "samples": samples}}


def test_chart_names_each_brokers_throttle_and_projects_its_eta():
    progress = {"replicas": [{"broker": 4, "bytes_remaining": 2_097_152, "eta_s": 2.0},
                             {"broker": 5, "bytes_remaining": 1_048_576, "eta_s": 4.0},
                             {"broker": 5, "bytes_remaining": 0, "eta_s": 0.0}],
                "eta_s": 4.0, "follower_throttles": {"4": 1_048_576}}
    assert chart_module.broker_etas(progress) == {4: 2.0, 5: 4.0}
    text = svg_text(chart_module.render(_doc(None), progress, "svg"))
    for words in ("bytes remaining per receiving broker, run 3", "running for 0:00:02, ETA 0:00:04",
                  "broker 4, throttle 1.0 MiB/s", "broker 5", "projected to its ETA", "MiB",
                  "seconds since the run began"):
        assert words in text, words
    assert "throttle" not in text.split("broker 5", 1)[1].split("projected", 1)[0]  # 5 has none
    # A finished run projects nothing and says how long it took.
    done = svg_text(chart_module.render(_doc(102.0), progress, "svg"))
    assert "finished after 0:00:02" in done and "ETA" not in done and "projected" not in done
    # Without a --progress report (the history alone) the lines are still drawn.
    assert "broker 4" in svg_text(chart_module.render(_doc(None), None, "svg"))


def history(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/progress/history", timeout=5) as r:
        assert r.headers["Content-Type"] == "application/json"
        return json.loads(r.read())


def kafka_reassign(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "client.cli", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.e2e
@pytest.mark.zk
@pytest.mark.timeout(180)
def test_a_reassignment_charted_from_the_controllers_history(zk_hosts, tmp_path):
    # Two 6 MiB partitions on broker 1 copied at 2 MiB/s: a few seconds each, sampled every 0.2 s.
    sim = ["--brokers", "3", "--topics", "big:2:1:6MiB", "--topic-brokers", "1", "--bandwidth", "2MiB",
           "--produce-rate", "0", "--tick-ms", "50"]
    config = {"ops_listen": "127.0.0.1:0", "copy_progress_interval_s": 0.2}
    with running_cluster(zk_hosts, tmp_path, sim_args=sim, controller_ids=(61,), controller_config=config) as c:
        port = wait_for(lambda: ops_port(c.controller_log(61)), 20, "the operations port")
        wait_for(lambda: ready(port), 20, "the controller ready")
        ops = f"http://127.0.0.1:{port}"
        plan = tmp_path / "plan.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": "big", "partition": 0, "replicas": [2]}, {"topic": "big", "partition": 1, "replicas": [3]}]}))
        assert history(port) == {"version": 1, "run": None, "active": True}
        r = kafka_reassign("--bootstrap-server", c.listeners[61], "--execute", "--reassignment-json-file", str(plan))
        assert r.returncode == exit_codes.OK, r.stderr
        # While it runs: a chart of what is there so far.
        wait_for(lambda: (history(port)["run"] or {}).get("samples"), 20, "a first sample")
        running = tmp_path / "running.svg"
        r = kafka_reassign("--bootstrap-server", c.listeners[61], "--progress", "--reassignment-json-file", str(plan),
                           "--interval", "0.1", "--chart", str(running), "--ops", ops, "--output", "json")
        assert r.returncode == exit_codes.OK, r.stderr
        assert json.loads(r.stdout)["chart"]["files"] == [str(running)]
        text = svg_text(running.read_bytes())
        assert "run 1 (running for" in text and "broker 2" in text and "broker 3" in text, text
        wait_for(c.reassignments_done, 60, "the reassignment to complete", interval=0.2)
        wait_for(lambda: history(port)["run"]["finished"], 10, "the run to end")

        chart, data = tmp_path / "progress.png", tmp_path / "progress.csv"
        r = kafka_reassign("--bootstrap-server", c.listeners[61], "--progress", "--reassignment-json-file", str(plan),
                           "--chart", str(chart), "--chart-data", str(data), "--ops", ops)
        assert r.returncode == exit_codes.OK, r.stderr
        assert f"written to {chart}, {data}" in r.stdout
        assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        colours = png_colours(chart)
        assert {rgb(chart_module.PALETTE[0]), rgb(chart_module.PALETTE[1])} <= colours  # both brokers' lines show
        rows = list(csv.reader(data.open()))
        assert rows[0] == ["seconds", "broker_2", "broker_3"]
        samples = [(float(t), *(int(v) if v else None for v in vs)) for t, *vs in rows[1:]]
        assert len(samples) >= 5
        for column in (1, 2):
            values = [s[column] for s in samples]
            # A broker joins the run with the first sample that finds its copy under way (the
            # run begins with the request, its moves a step or two later): empty before that;
            # from then on every broker answered, so no gap.
            first = next(i for i, v in enumerate(values) if v is not None)
            values = values[first:]
            assert None not in values, values
            assert values[0] > 0 and values[-1] == 0, values
            assert all(a >= b for a, b in zip(values, values[1:])), values  # nothing produced: only down
        assert max(s[1] for s in samples if s[1] is not None) <= 6 * 1024 * 1024
        # The endpoint holds the same: the finished run stays readable until the next one starts.
        run = history(port)["run"]
        assert run["number"] == 1 and run["brokers"] == [2, 3] and len(run["samples"]) == len(samples)

        # The next reassignment (back onto broker 1) replaces it.
        back = tmp_path / "back.json"
        back.write_text(json.dumps({"version": 1, "partitions": [{"topic": "big", "partition": 0, "replicas": [1]}]}))
        r = kafka_reassign("--bootstrap-server", c.listeners[61], "--execute", "--reassignment-json-file", str(back))
        assert r.returncode == exit_codes.OK, r.stderr
        wait_for(lambda: history(port)["run"]["number"] == 2, 20, "the second run")
        # Its broker joins with the first sample that finds the copy under way.
        wait_for(lambda: history(port)["run"]["brokers"], 20, "the second run's first copy sampled")
        assert history(port)["run"]["brokers"] == [1]
        wait_for(c.reassignments_done, 60, "the second reassignment to complete", interval=0.2)
