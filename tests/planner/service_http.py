"""What the planner-service tests say to the service and to ``reassignd sim``: one HTTP call
(status and JSON body, error statuses included), one line on the sim's control port, and the
assignment they check proposals against (read from ZooKeeper)."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request

# A proposal on a cold Spark session of a busy 2-core machine can take a while.
HTTP_TIMEOUT_S = 120


def http(base: str, method: str, path: str) -> tuple[int, dict]:
    req = urllib.request.Request(base + path, method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT_S) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def sim_command(control: str, line: str) -> str:
    """Send ``line`` to the sim's control port; its answer must start with OK."""
    host, port = control.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(line.encode() + b"\n")
        with s.makefile("rb") as f:
            answer = f.readline().decode()
    assert answer.startswith("OK"), answer
    return answer


def assignment(zk) -> dict[tuple[str, int], list[int]]:
    """Every partition's replicas, from the topic znodes (a kazoo client)."""
    out = {}
    for t in zk.get_children("/brokers/topics"):
        doc = json.loads(zk.get(f"/brokers/topics/{t}")[0])
        for p, r in doc["partitions"].items():
            out[(t, int(p))] = r
    return out
