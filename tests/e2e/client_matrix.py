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
import os
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
    # issue 23: Kafka's topic configs and log directories (KIP-113)
    ("create_topic", "create topic with configs"),
    ("describe_topic_configs", "describe configs: value and source"),
    ("alter_configs", "alter configs, bad value refused"),
    ("describe_log_dirs", "describe log dirs of every broker"),
    ("move_log_dir", "move a replica between log dirs"),
    ("delete_topic", "delete topic"),
)
TARGETS = (("standby", "standby controller"), ("broker", "simulated broker"))
PASSED, FAILED, NO_SUCH_CALL = "ok", "FAILED", "no such call"
TIMEOUT_S = 20


class NoSuchCall(Exception):
    """The client has no call for this step."""


class Refused(Exception):
    """The cluster refused a request; the message is its error and reason as the client gives them."""


# Kafka's ConfigSource ids (DescribeConfigs v1+), for clients that hand back the number.
CONFIG_SOURCES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
                  3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
                  6: "DYNAMIC_BROKER_LOGGER_CONFIG", 7: "CLIENT_METRICS_CONFIG", 8: "GROUP_CONFIG"}


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

    def create_topic(self, topic: str, partitions: int, replication: int, configs: dict[str, str]) -> None:
        raise NoSuchCall()

    def topic_configs(self, topic: str) -> dict[str, tuple[str, str]]:
        """Every config of the topic: key -> (value, Kafka's ConfigSource name)."""
        raise NoSuchCall()

    def alter_config(self, topic: str, key: str, value: str, current: dict[str, str]) -> None:
        """Set ``key`` to ``value`` (``current``: the topic's own configs, for a client whose only
        call replaces them all); Refused with the client's error text when the cluster refuses."""
        raise NoSuchCall()

    def describe_log_dirs(self) -> dict[int, dict[tuple[str, int], str]]:
        """Every node's replicas and the directory each is in (nodes with none: empty)."""
        raise NoSuchCall()

    def move_replica(self, topic: str, partition: int, broker: int, directory: str) -> None:
        raise NoSuchCall()

    def delete_topic(self, topic: str) -> None:
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

    def create_topic(self, topic: str, partitions: int, replication: int, configs: dict[str, str]) -> None:
        from kafka.admin import NewTopic

        answer = self.admin.create_topics([NewTopic(topic, partitions, replication, topic_configs=configs)],
                                          timeout_ms=TIMEOUT_S * 1000)
        assert [(t["name"], t["error_code"]) for t in answer["topics"]] == [(topic, 0)], answer

    def topic_configs(self, topic: str) -> dict[str, tuple[str, str]]:
        from kafka.admin import ConfigResource, ConfigResourceType

        got = self.admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
        return {k: (v["value"], v["config_source"]) for k, v in got["topic"][topic].items()}

    def alter_config(self, topic: str, key: str, value: str, current: dict[str, str]) -> None:
        from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType

        # IncrementalAlterConfigs (the client's default when the cluster offers it): SET one key.
        # raise_on_unknown=False: the client's own pre-check (a DescribeConfigs to any node, which
        # may not know a topic created a moment ago) is skipped, so the cluster judges the value.
        result = self.admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                                          configs={key: (AlterConfigOp.SET, value)})],
                                          incremental=True, raise_on_unknown=False)["topic"][topic]
        if result != "OK":
            raise Refused(str(result))

    def describe_log_dirs(self) -> dict[int, dict[tuple[str, int], str]]:
        out = {}
        for node in self.admin.describe_log_dirs():  # every node of the cluster
            dirs = out.setdefault(node["broker"], {})
            for d in node["log_dirs"]:
                assert d["error_code"] == 0, d
                for t in d["topics"]:
                    for p in t["partitions"]:
                        if not p["is_future_key"]:
                            dirs[(t["name"], p["partition_index"])] = d["log_dir"]
        return out

    def move_replica(self, topic: str, partition: int, broker: int, directory: str) -> None:
        from kafka.errors import NoError

        answer = self.admin.alter_replica_log_dirs({(topic, partition, broker): directory})
        assert list(answer.values()) == [NoError], answer

    def delete_topic(self, topic: str) -> None:
        answer = self.admin.delete_topics([topic], timeout_ms=TIMEOUT_S * 1000)
        assert [(t["name"], t["error_code"]) for t in answer["topics"]] == [(topic, 0)], answer


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

    def create_topic(self, topic: str, partitions: int, replication: int, configs: dict[str, str]) -> None:
        from aiokafka.admin import NewTopic

        answer = self.run(self.admin.create_topics([NewTopic(topic, partitions, replication, topic_configs=configs)]))
        assert [(t[0], t[1]) for t in answer.topic_errors] == [(topic, 0)], answer

    def topic_configs(self, topic: str) -> dict[str, tuple[str, str]]:
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

        responses = self.run(self.admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)],
                                                         include_synonyms=True))
        out = {}
        for response in responses:
            for error_code, message, _type, name, entries in response.resources:
                assert error_code == 0, (error_code, message)
                if name == topic:
                    # v1+: (name, value, read_only, config_source, is_sensitive, synonyms, ...)
                    out.update({e[0]: (e[1], CONFIG_SOURCES.get(e[3], str(e[3]))) for e in entries})
        return out

    def alter_config(self, topic: str, key: str, value: str, current: dict[str, str]) -> None:
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

        # aiokafka has AlterConfigs only (no IncrementalAlterConfigs): the whole set, one key changed
        responses = self.run(self.admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                                                      configs={**current, key: value})]))
        for response in responses:
            for error_code, message, _type, _name in response.resources:
                if error_code:
                    raise Refused(f"error {error_code}: {message}")

    def delete_topic(self, topic: str) -> None:
        answer = self.run(self.admin.delete_topics([topic]))
        assert [(t[0], t[1]) for t in answer.topic_error_codes] == [(topic, 0)], answer


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

    def create_topic(self, topic: str, partitions: int, replication: int, configs: dict[str, str]) -> None:
        from confluent_kafka.admin import NewTopic

        [future] = self.admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=replication,
                                                      config=configs)], request_timeout=TIMEOUT_S).values()
        future.result(TIMEOUT_S)

    def topic_configs(self, topic: str) -> dict[str, tuple[str, str]]:
        from confluent_kafka.admin import ConfigResource, ConfigSource

        resource = ConfigResource("topic", topic)
        entries = self.admin.describe_configs([resource], request_timeout=TIMEOUT_S)[resource].result(TIMEOUT_S)
        return {name: (e.value, ConfigSource(e.source).name) for name, e in entries.items()}

    def alter_config(self, topic: str, key: str, value: str, current: dict[str, str]) -> None:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

        entry = ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
        [future] = self.admin.incremental_alter_configs([ConfigResource("topic", topic, incremental_configs=[entry])],
                                                        request_timeout=TIMEOUT_S).values()
        try:
            future.result(TIMEOUT_S)
        except KafkaException as e:
            raise Refused(f"{e.args[0].name()}: {e.args[0].str()}") from None

    def delete_topic(self, topic: str) -> None:
        [future] = self.admin.delete_topics([topic], request_timeout=TIMEOUT_S).values()
        future.result(TIMEOUT_S)


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
    # Replaced whole: tests/e2e/test_matrix_report.py may read it meanwhile (pytest-xdist).
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"rows": rows, "sent": sent_rows}, indent=1) + "\n")
    os.replace(tmp, path)
