"""planner_service.controller_caps: the active controller's per-broker caps read from its
/metrics page, and a request's concurrency clamped to them."""

from __future__ import annotations

import asyncio

import pytest

from planner_service.controller_caps import clamp, parse_caps, read_caps

PAGE = """# HELP reassignd_broker_move_slots per-broker cap on concurrent moves, by direction
# TYPE reassignd_broker_move_slots gauge
reassignd_broker_move_slots{direction="incoming"} 4.0
reassignd_broker_move_slots{direction="outgoing"} 6.0
reassignd_broker_move_slots_in_use{broker="1",direction="incoming"} 2.0
"""


def test_parse_and_clamp():
    caps = parse_caps(PAGE)
    assert caps == {"incoming": 4, "outgoing": 6}
    assert clamp(10, caps) == (4, {"asked": 10, "used": 4, "controller": caps})
    assert clamp(3, caps)[0] == 3
    assert parse_caps("# a standby: no gauges\n") == {}
    assert clamp(5, {"error": "not read"})[0] == 5  # unknown caps clamp nothing


def test_unreadable_caps_say_why():
    assert "no --controller-ops" in asyncio.run(read_caps(None))["error"]
    assert "did not answer" in asyncio.run(read_caps("http://127.0.0.1:1"))["error"]


def test_the_service_takes_the_url_and_refuses_another_scheme(capsys):
    from reassignd import planner as cli

    assert cli.main(["serve", "--zookeeper", "127.0.0.1:1", "--listen", "127.0.0.1:0",
                     "--controller-ops", "127.0.0.1:9191"]) == 2
    assert "expected an http:// URL" in capsys.readouterr().err
    args = cli.build_parser().parse_args(["--zookeeper", "z", "--listen", "127.0.0.1:0", "--controller-ops",
                                    "http://127.0.0.1:9191"])
    assert args.controller_ops == "http://127.0.0.1:9191"


def test_the_service_takes_an_execution_deadline():
    from reassignd import planner as cli
    from planner_service.service import DEFAULT_EXECUTION_DEADLINE_S

    base = ["--zookeeper", "z", "--listen", "127.0.0.1:0"]
    assert cli.build_parser().parse_args(base).execution_deadline == DEFAULT_EXECUTION_DEADLINE_S
    assert cli.build_parser().parse_args(base + ["--execution-deadline", "90"]).execution_deadline == 90.0
    assert cli.main(["serve", *base, "--execution-deadline", "0"]) == 2


def test_no_spark_plans_in_process_and_excludes_a_master():
    from reassignd import planner as cli
    from reassignd.args import UsageError

    base = ["--zookeeper", "z", "--listen", "127.0.0.1:0"]
    assert cli.build_parser().parse_args(base).master == "local[*]"
    assert cli.build_parser().parse_args(base + ["--no-spark"]).master is None
    with pytest.raises(UsageError, match="--master: not allowed with argument --no-spark"):
        cli.build_parser().parse_args(base + ["--no-spark", "--master", "local[1]"])
