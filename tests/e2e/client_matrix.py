"""The client compatibility matrix: one admin scenario, one adapter per Kafka client.

Each adapter runs the same steps (``STEPS``) against one bootstrap address with the client's
own calls, unchanged, and answers what it saw in a common shape; ``check`` (in
tests/e2e/test_client_matrix.py) compares that with ZooKeeper. A step the client has no call
for raises ``NoSuchCall`` and is recorded as such, never emulated. Every client negotiates its
versions through ApiVersions, so the steps run the newest request versions it sends.

Results are written to ``RESULTS`` (one row per client, target and step) and the README's
matrix is generated from them by ``python -m tests.e2e.matrix_report``.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "tests" / "e2e" / "client_matrix.json"

# (key, label in the README), in scenario order.
STEPS = (
    ("bootstrap", "bootstrap"),
    ("list_topics", "list topics"),
    ("list_brokers", "list brokers"),
    ("find_controller", "find controller"),
    ("describe_topics", "describe topics"),
    ("describe_configs", "describe configs"),
    ("alter_reassignments", "alter reassignments"),
    ("list_reassignments", "list reassignments"),
    ("cancel_reassignments", "cancel reassignments"),
)
TARGETS = (("standby", "standby controller"), ("broker", "simulated broker"))
PASSED, FAILED, NO_SUCH_CALL = "ok", "FAILED", "no such call"
TIMEOUT_S = 20


class NoSuchCall(Exception):
    """The client has no call for this step."""


class Adapter:
    """One client's calls. Topic descriptions come back as {partition: sorted replicas}."""

    name = ""

    def version(self) -> str:
        raise NotImplementedError

    def open(self, bootstrap: str) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def list_topics(self) -> set[str]:
        raise NotImplementedError

    def list_brokers(self) -> set[int]:
        raise NotImplementedError

    def find_controller(self) -> int:
        raise NotImplementedError

    def describe_topics(self, topic: str) -> dict[int, list[int]]:
        raise NotImplementedError

    def describe_configs(self, topic: str) -> dict[str, str]:
        raise NotImplementedError

    def alter_reassignments(self, topic: str, partition: int, replicas: list[int] | None) -> None:
        raise NoSuchCall()

    def list_reassignments(self) -> dict[tuple[str, int], dict]:
        """(topic, partition) -> {"replicas", "adding", "removing"}."""
        raise NoSuchCall()


def _partitions(described: dict) -> dict[int, list[int]]:
    """{partition: sorted replicas} of a Metadata topic as a dict, in either client's spelling
    (the response's own field names, or kafka-python 2.x's short ones)."""
    return {p.get("partition_index", p.get("partition")): sorted(p.get("replica_nodes", p.get("replicas")))
            for p in described["partitions"]}


class KafkaPython(Adapter):
    name = "kafka-python"

    def version(self) -> str:
        import kafka

        return kafka.__version__

    def open(self, bootstrap: str) -> None:
        from kafka import KafkaAdminClient

        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="matrix-kafka-python",
                                      request_timeout_ms=TIMEOUT_S * 1000)

    def close(self) -> None:
        self.admin.close()

    def list_topics(self) -> set[str]:
        return set(self.admin.list_topics())

    def list_brokers(self) -> set[int]:
        # kafka-python 3 names the id broker_id (DescribeCluster's name, also on its Metadata
        # fallback); 2.x said node_id.
        return {b.get("broker_id", b.get("node_id")) for b in self.admin.describe_cluster()["brokers"]}

    def find_controller(self) -> int:
        return self.admin.describe_cluster()["controller_id"]

    def describe_topics(self, topic: str) -> dict[int, list[int]]:
        (described,) = self.admin.describe_topics([topic])
        assert described["error_code"] == 0, described
        return _partitions(described)

    def describe_configs(self, topic: str) -> dict[str, str]:
        from kafka.admin import ConfigResource, ConfigResourceType

        described = self.admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        return {k: v["value"] for k, v in described["topic"][topic].items()}

    def alter_reassignments(self, topic: str, partition: int, replicas: list[int] | None) -> None:
        from kafka import TopicPartition

        tp = TopicPartition(topic, partition)
        answer = self.admin.alter_partition_reassignments({tp: replicas})
        assert answer == {tp: None}, answer

    def list_reassignments(self) -> dict[tuple[str, int], dict]:
        return {(tp.topic, tp.partition): {"replicas": r["replicas"], "adding": r["adding_replicas"],
                                           "removing": r["removing_replicas"]}
                for tp, r in self.admin.list_partition_reassignments().items()}


class AioKafka(Adapter):
    """aiokafka's AIOKafkaAdminClient, driven from its own event loop."""

    name = "aiokafka"

    def version(self) -> str:
        import aiokafka

        return aiokafka.__version__

    def run(self, coro):
        return self.loop.run_until_complete(asyncio.wait_for(coro, TIMEOUT_S))

    def open(self, bootstrap: str) -> None:
        from aiokafka.admin import AIOKafkaAdminClient

        self.loop = asyncio.new_event_loop()

        async def start():
            admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="matrix-aiokafka",
                                        request_timeout_ms=TIMEOUT_S * 1000)
            await admin.start()
            return admin

        self.admin = self.run(start())

    def close(self) -> None:
        try:
            self.run(self.admin.close())
        finally:
            self.loop.close()

    def list_topics(self) -> set[str]:
        return set(self.run(self.admin.list_topics()))

    def list_brokers(self) -> set[int]:
        return {b["node_id"] for b in self.run(self.admin.describe_cluster())["brokers"]}

    def find_controller(self) -> int:
        return self.run(self.admin.describe_cluster())["controller_id"]

    def describe_topics(self, topic: str) -> dict[int, list[int]]:
        (described,) = self.run(self.admin.describe_topics([topic]))
        assert described["error_code"] == 0, described
        return _partitions(described)

    def describe_configs(self, topic: str) -> dict[str, str]:
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

        responses = self.run(self.admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)]))
        out = {}
        for response in responses:
            for error_code, _message, _type, name, entries in response.resources:
                assert error_code == 0, (error_code, _message)
                if name == topic:
                    out.update({entry[0]: entry[1] for entry in entries})
        return out


class ConfluentKafka(Adapter):
    """confluent-kafka's AdminClient (librdkafka)."""

    name = "confluent-kafka"

    def version(self) -> str:
        import confluent_kafka

        # libversion() is a (text, int) pair; version() is the text alone in 2.16.
        version = confluent_kafka.version()
        version = version[0] if isinstance(version, tuple) else version
        return f"{version} (librdkafka {confluent_kafka.libversion()[0]})"

    def open(self, bootstrap: str) -> None:
        from confluent_kafka.admin import AdminClient

        self.admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "matrix-confluent-kafka"})
        # The constructor connects lazily; the first call that needs the cluster is the bootstrap.
        self.admin.list_topics(timeout=TIMEOUT_S)

    def list_topics(self) -> set[str]:
        return set(self.admin.list_topics(timeout=TIMEOUT_S).topics)

    def list_brokers(self) -> set[int]:
        return {n.id for n in self.admin.describe_cluster(request_timeout=TIMEOUT_S).result(TIMEOUT_S).nodes}

    def find_controller(self) -> int:
        return self.admin.describe_cluster(request_timeout=TIMEOUT_S).result(TIMEOUT_S).controller.id

    def describe_topics(self, topic: str) -> dict[int, list[int]]:
        from confluent_kafka import TopicCollection

        futures = self.admin.describe_topics(TopicCollection([topic]), request_timeout=TIMEOUT_S)
        described = futures[topic].result(TIMEOUT_S)
        return {p.id: sorted(n.id for n in p.replicas) for p in described.partitions}

    def describe_configs(self, topic: str) -> dict[str, str]:
        from confluent_kafka.admin import ConfigResource

        resource = ConfigResource("topic", topic)
        entries = self.admin.describe_configs([resource], request_timeout=TIMEOUT_S)[resource].result(TIMEOUT_S)
        return {name: entry.value for name, entry in entries.items()}


class Kcat(Adapter):
    """kcat's metadata listing (``-L -J``): every step it has comes from that one request."""

    name = "kcat"

    def version(self) -> str:
        out = subprocess.run(["kcat", "-V"], capture_output=True, text=True, timeout=10).stdout
        found = re.search(r"Version (\S+) .*?librdkafka (\S+)", out)
        assert found, out
        return f"{found[1]} (librdkafka {found[2]})"

    def open(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.listing()

    def listing(self) -> dict:
        out = subprocess.run(["kcat", "-L", "-J", "-b", self.bootstrap, "-m", str(TIMEOUT_S)],
                             capture_output=True, text=True, timeout=TIMEOUT_S + 10)
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout)

    def list_topics(self) -> set[str]:
        return {t["topic"] for t in self.listing()["topics"]}

    def list_brokers(self) -> set[int]:
        return {b["id"] for b in self.listing()["brokers"]}

    def find_controller(self) -> int:
        return self.listing()["controllerid"]

    def describe_topics(self, topic: str) -> dict[int, list[int]]:
        (described,) = [t for t in self.listing()["topics"] if t["topic"] == topic]
        return {p["partition"]: sorted(r["id"] for r in p["replicas"]) for p in described["partitions"]}

    def describe_configs(self, topic: str) -> dict[str, str]:
        raise NoSuchCall()


ADAPTERS = (KafkaPython, AioKafka, ConfluentKafka, Kcat)


def load_results(path: Path = RESULTS) -> dict:
    return json.loads(path.read_text())


def save_results(rows: list[dict], sent: dict[tuple[str, str], list[str]], path: Path = RESULTS) -> None:
    """Rows sorted into matrix order, so the file only changes when a result does; ``sent``:
    per (client, "standby"), the "API vN" requests the controllers' listeners answered."""
    clients = [a.name for a in ADAPTERS]
    targets = [t for t, _ in TARGETS]
    steps = [s for s, _ in STEPS]
    rows = sorted(rows, key=lambda r: (clients.index(r["client"]), targets.index(r["target"]), steps.index(r["step"])))
    sent_rows = [{"client": c, "target": t, "requests": sent[(c, t)]}
                 for c, t in sorted(sent, key=lambda ct: (clients.index(ct[0]), targets.index(ct[1])))]
    path.write_text(json.dumps({"rows": rows, "sent": sent_rows}, indent=1) + "\n")
