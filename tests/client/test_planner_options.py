"""kafka-reassign's planner-service options (issue 24 item 2): --excluded-topics,
--excluded-brokers-for-replica-move, --concurrent-partition-movements-per-broker and
--max-partition-movements-in-cluster are checked before anything is asked, only go with
--planner, and reach the service as Cruise Control's parameters; a reviewed proposal is
approved by its id. The service here is a recording HTTP endpoint (the real one answers the
same calls in tests/planner/test_execution_controls.py)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from client import cli, exit_codes, planner
from client.errors import ConflictError

PROPOSAL = {"proposal_id": 7, "reassignment": {"version": 1, "partitions": [
    {"topic": "t", "partition": 0, "replicas": [2, 3]}]}, "report": {"moves": 1}}


@pytest.fixture
def service():
    """A recording stand-in for the planner service: each request's path and query, and the
    answer queued for it (200 with a proposal by default)."""
    seen: list[tuple[str, dict]] = []
    answers: list[tuple[int, dict]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            url = urlsplit(self.path)
            seen.append((url.path, {k: v[0] for k, v in parse_qs(url.query).items()}))
            status, body = answers.pop(0) if answers else (200, {"dryrun": True, "proposal": PROPOSAL})
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield {"url": f"http://127.0.0.1:{server.server_address[1]}", "seen": seen, "answers": answers}
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("extra", [
    ["--excluded-topics", "__.*"],
    ["--excluded-brokers-for-replica-move", "4"],
    ["--concurrent-partition-movements-per-broker", "2"],
    ["--max-partition-movements-in-cluster", "10"],
])
def test_the_options_need_the_planner_service(extra, capsys):
    assert cli.main(["--bootstrap-server", "127.0.0.1:1", "--rebalance", *extra]) == exit_codes.USAGE
    assert "--planner" in capsys.readouterr().err
    # and only the planner actions take them
    assert cli.main(["--bootstrap-server", "127.0.0.1:1", "--list", "--planner", "http://x", *extra]) == exit_codes.USAGE


@pytest.mark.parametrize("extra, why", [
    (["--excluded-topics", "("], "not a regular expression"),
    (["--excluded-topics", ""], "empty"),
    (["--excluded-brokers-for-replica-move", "1,x"], "not a broker id"),
    (["--excluded-brokers-for-replica-move", "1,1"], "twice"),
    (["--concurrent-partition-movements-per-broker", "0"], "positive"),
    (["--max-partition-movements-in-cluster", "two"], "whole number"),
])
def test_bad_values_are_refused_before_anything_is_asked(extra, why, service, capsys):
    code = cli.main(["--bootstrap-server", "127.0.0.1:1", "--rebalance", "--planner", service["url"], *extra])
    assert code == exit_codes.USAGE and why in capsys.readouterr().err
    assert service["seen"] == []


async def test_the_options_reach_the_service_as_cruise_controls_parameters(service):
    opts = planner.ServiceOptions(excluded_topics="__.*", excluded_brokers=[4, 5], per_broker=1, cluster_cap=3)
    plan = await planner.plan_from_service(service["url"], "decommission", brokers=[2], throttle=1000, options=opts)
    assert plan.proposal_id == 7 and plan.path == "/remove_broker"
    assert service["seen"] == [("/remove_broker", {
        "dryrun": "true", "brokerid": "2", "replication_throttle": "1000", "excluded_topics": "__.*",
        "excluded_brokers_for_replica_move": "4,5", "concurrent_partition_movements_per_broker": "1",
        "max_partition_movements_in_cluster": "3"})]
    # Approving executes exactly that proposal, by its id and nothing else.
    service["answers"].append((200, {"dryrun": False, "proposal": PROPOSAL, "execution": {"id": 3, "proposal_id": 7}}))
    assert (await planner.execute_on_service(service["url"], plan)) == {"id": 3, "proposal_id": 7}
    assert service["seen"][-1] == ("/remove_broker", {"dryrun": "false", "proposal_id": "7"})
    # The cluster changed since: the service's 409 is a conflict (exit code 3's kind).
    service["answers"].append((409, {"error": {"status": 409, "message": "the cluster changed since proposal 7"}}))
    with pytest.raises(ConflictError, match="changed since"):
        await planner.execute_on_service(service["url"], plan)
    assert opts.caps and not planner.ServiceOptions(excluded_topics="x").caps


async def test_an_unreadable_answer_to_the_approval_says_the_execution_may_have_started(service):
    from client import commands
    from client.errors import ProtocolViolationError

    plan = await planner.plan_from_service(service["url"], "rebalance")
    service["answers"].append((200, ["not", "an", "object"]))
    with pytest.raises(ProtocolViolationError) as caught:
        await commands._changing(planner.execute_on_service(service["url"], plan),
                                 "the planner service may have started executing the plan", "GET /state")
    assert "not an object" in str(caught.value) and "may have started executing the plan" in str(caught.value)
    assert service["seen"][-1][1]["dryrun"] == "false"
