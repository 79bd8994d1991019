"""A small cluster of :class:`WireServer` nodes for AdminClient and CLI tests: controller
instances (Metadata and the controller APIs) and brokers (Metadata and DescribeLogDirs), whose
Metadata names every node and the active controller, as the project's convention says.

State is plain data the test edits between requests: ``topics`` (topic -> partition ->
replicas), ``running`` (reassignment ids), ``logs`` (broker -> (topic, partition) -> (size,
lag)), and per-API handlers a test may replace.
"""

from __future__ import annotations

from protocol import ApiKey
from tests.client.wire_server import WireServer



def ok_partitions(body: dict, topics_key: str, parts_key: str, result_key: str, error_key: str) -> dict:
    return {
        result_key: [
            {"topic": t["topic"], error_key: [
                {"partition_id": p["partition_id"], "error_code": 0, "error_message": None} for p in t[parts_key]
            ]}
            for t in body[topics_key]
        ]
    }


class WireCluster:
    def __init__(self):
        self.topics: dict[str, dict[int, list[int]]] = {}
        self.racks: dict[int, str | None] = {}
        self.controller_id = 100
        self.running: dict[tuple[str, int], int] = {}  # (topic, partition) -> reassignment id
        self.descriptions: dict[int, dict] = {}  # reassignment id -> description body entry
        self.logs: dict[int, dict[tuple[str, int], tuple[int, int]]] = {}
        self.throttle_rates: dict[int, int] = {}
        self.controllers: dict[int, WireServer] = {}
        self.brokers: dict[int, WireServer] = {}
        self.reassign_answer = None  # optional override: body -> response

    # ---- handlers --------------------------------------------------------------------------

    def metadata(self, version: int, body: dict) -> dict:
        nodes = [{"node_id": n, "host": "127.0.0.1", "port": s.port, "rack": self.racks.get(n)}
                 for n, s in sorted({**self.brokers, **self.controllers}.items())]
        wanted = body.get("topics")
        names = sorted(self.topics) if wanted is None or (version == 0 and not wanted) else [t["name"] for t in wanted]
        topics = []
        for name in names:
            if name not in self.topics:
                topics.append({"error_code": 3, "name": name, "is_internal": False, "partitions": []})
                continue
            topics.append({"error_code": 0, "name": name, "is_internal": False, "partitions": [
                {"error_code": 0, "partition_index": p, "leader_id": r[0], "leader_epoch": 0,
                 "replica_nodes": r, "isr_nodes": r, "offline_replicas": []}
                for p, r in sorted(self.topics[name].items())]})
        return {"brokers": nodes, "cluster_id": "wire", "controller_id": self.controller_id, "topics": topics}

    def reassign(self, version: int, body: dict) -> dict:
        if self.reassign_answer is not None:
            return self.reassign_answer(version, body)
        return {"throttle_time_ms": 0, **ok_partitions(body, "topic_reassignments", "partition_reassignments",
                                                       "reassign_partition_result", "partition_error")}

    def list_reassignments(self, version: int, body: dict) -> dict:
        by_topic: dict[str, list] = {}
        wanted = body.get("topic_partition")
        keep = None if wanted is None else {(t["topic"], p) for t in wanted for p in t["partition_id"]}
        for (t, p), rid in sorted(self.running.items()):
            if keep is None or (t, p) in keep:
                by_topic.setdefault(t, []).append({"partition_id": p, "reassignment_id": rid})
        return {"error_code": 0, "error_message": None,
                "reassignment": [{"topic": t, "topic_reassignments": ps} for t, ps in by_topic.items()]}

    def describe(self, version: int, body: dict) -> dict:
        out = []
        for item in body["topic_reassignment"]:
            rid = item["reassignment"]["reassignment_id"]
            if rid in self.descriptions:
                out.append({"reassignment_id": rid, **self.descriptions[rid]})
        return {"error_code": 0, "error_message": None, "description": out}

    def cancel(self, version: int, body: dict) -> dict:
        wanted = body.get("partitions")
        keys = sorted(self.running) if wanted is None else [(t["topic"], p) for t in wanted for p in t["partition_ids"]]
        results: dict[str, list] = {}
        for t, p in keys:
            code = 0 if (t, p) in self.running else 85
            results.setdefault(t, []).append({"partition_id": p, "error_code": code,
                                              "error_message": None if code == 0 else "no reassignment in progress"})
        return {"error_code": 0, "error_message": None,
                "results": [{"topic": t, "partitions": ps} for t, ps in results.items()]}

    def describe_configs(self, version: int, body: dict) -> dict:
        results = []
        for r in body["resources"]:
            b = int(r["resource_name"])
            configs = []
            if b in self.throttle_rates:
                configs = [{"name": k, "value": str(self.throttle_rates[b]), "read_only": False, "is_sensitive": False}
                           for k in ("leader.replication.throttled.rate", "follower.replication.throttled.rate")]
            results.append({"error_code": 0, "error_message": None, "resource_type": 4,
                            "resource_name": r["resource_name"], "configs": configs})
        return {"results": results}

    def log_dirs_for(self, broker: int):
        def handler(version: int, body: dict) -> dict:
            by_topic: dict[str, list] = {}
            for (t, p), (size, lag) in sorted(self.logs.get(broker, {}).items()):
                by_topic.setdefault(t, []).append(
                    {"partition_index": p, "partition_size": size, "offset_lag": lag, "is_future_key": False})
            return {"error_code": 0, "results": [{"error_code": 0, "log_dir": f"/data/{broker}", "topics": [
                {"name": t, "partitions": ps} for t, ps in by_topic.items()]}]}
        return handler

    # ---- lifecycle -------------------------------------------------------------------------

    def controller_handlers(self) -> dict:
        return {
            ApiKey.METADATA: self.metadata, ApiKey.REASSIGN_PARTITIONS: self.reassign, ApiKey.LIST_REASSIGNMENTS: self.list_reassignments,
            ApiKey.DESCRIBE_REASSIGNMENTS: self.describe, ApiKey.CANCEL_REASSIGNMENTS: self.cancel, ApiKey.DESCRIBE_CONFIGS: self.describe_configs,
            ApiKey.ALTER_INTERBROKER_THROTTLED_RATES: lambda v, b: {"broker_error": [{"broker_id": x["broker_id"], "error_code": 0, "error_message": None}
                                                  for x in b["broker_throttles"]]},
            ApiKey.ALTER_INTERBROKER_THROTTLED_REPLICAS: lambda v, b: ok_partitions(b, "topic_throttles", "partition_throttles",
                                                 "topic_errors", "partition_errors"),
        }

    @classmethod
    async def start(cls, brokers=(1, 2, 3, 4), controllers=(100,), **offered) -> "WireCluster":
        c = cls()
        c.controller_id = controllers[0]
        for n in controllers:
            c.controllers[n] = await WireServer.start(c.controller_handlers())
        for b in brokers:
            c.brokers[b] = await WireServer.start({ApiKey.METADATA: c.metadata, ApiKey.DESCRIBE_LOG_DIRS: c.log_dirs_for(b)})
        return c

    @property
    def bootstrap(self) -> str:
        return self.controllers[self.controller_id].address

    def received(self, api_key: int) -> list[tuple[int, dict]]:
        return [r for s in self.controllers.values() for r in s.requests(api_key)]

    async def stop(self) -> None:
        for s in [*self.controllers.values(), *self.brokers.values()]:
            await s.stop()
