"""Issue 14 items 5 and 6 with standard clients, unchanged, against 2 controller processes,
bootstrapped from the STANDBY (each client sends the controller-only request to the active
instance that Metadata names):

- ElectLeaders (KIP-460) with kafka-python's ``KafkaAdminClient.elect_leaders`` (3.x; older
  releases called it ``perform_leader_election``): a partition whose leader is not its first
  replica - after a reassignment that kept the old leader, and after its preferred broker
  stopped and started again - gets its preferred leader back (state znode leader ==
  replicas[0], leader epoch + 1, the broker leads it); ELECTION_NOT_NEEDED when already
  preferred, UNKNOWN_TOPIC_OR_PARTITION, PREFERRED_LEADER_NOT_AVAILABLE while the preferred
  broker is down, each with the state znode unchanged.
- confluent-kafka's ``AdminClient.elect_leaders``: PREFERRED, and UNCLEAN for a partition whose
  only in-sync replica is down (the live out-of-sync replica leads alone), ELECTION_NOT_NEEDED
  for one with a live leader.
- CreatePartitions and DeleteTopics errors through kafka-python not covered elsewhere, with
  nothing half-applied: INVALID_TOPIC_EXCEPTION for a topic queued for deletion,
  INVALID_REPLICA_ASSIGNMENT for a given assignment with the wrong number of replicas (what
  Kafka answers: AdminZkClient's "Inconsistent replication factor between partitions"),
  INVALID_REPLICATION_FACTOR when fewer brokers are live than the topic's replication factor,
  TOPIC_DELETION_DISABLED with ``delete_topic_enable`` false.

Everything is real: ZooKeeper (the session fixture), ``python -m reassignd sim`` brokers, two
``python -m reassignd controller`` processes (tests/e2e/processes.py). The automatic leader
rebalance is off so that only the requests elect.
"""

from __future__ import annotations

import socket

import pytest

from protocol.errors import ErrorCode
from tests.e2e.processes import RunningCluster, running_cluster, sim_status, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(150)]

CONTROLLER_IDS = (101, 102)
SIM_ARGS = ["--brokers", "4", "--topics", "orders:3:2:1KiB", "--produce-rate", "0", "--tick-ms", "50"]
NO_REBALANCE = {"auto_leader_rebalance_enable": False}


def _code(call) -> int:
    try:
        call()
    except Exception as e:  # noqa: BLE001 - kafka-python raises Kafka's error per code
        return getattr(e, "errno", repr(e))
    return ErrorCode.NONE


def _sim(c: RunningCluster, line: str) -> None:
    with socket.create_connection(("127.0.0.1", c.control_port), timeout=10) as s:
        s.sendall(line.encode() + b"\n")
        with s.makefile("rb") as f:
            answer = f.readline().decode()
    assert answer.startswith("OK"), answer


def _state(c: RunningCluster, topic: str, p: int) -> dict:
    return c.json(f"/brokers/topics/{topic}/partitions/{p}/state")


def _stat(c: RunningCluster, topic: str, p: int):
    """The state znode's data and version: an unchanged znode has both the same."""
    data, stat = c.zk.get(f"/brokers/topics/{topic}/partitions/{p}/state")
    return data, stat.version


def _in_sync(c: RunningCluster, topic: str, p: int) -> dict | None:
    state = _state(c, topic, p)
    replicas = c.replicas(topic, p)
    return state if state and sorted(state["isr"]) == sorted(replicas) and state["leader"] in replicas else None


def _leads(c: RunningCluster, broker: int, topic: str, p: int) -> bool:
    replicas = sim_status(c.control_port)["brokers"][str(broker)]["replicas"]
    return any(r["topic"] == topic and r["partition"] == p and r["role"] == "leader" for r in replicas)


def _results(response) -> dict[tuple[str, int], int]:
    """kafka-python's ElectLeadersResponse: (topic, partition) -> error code."""
    return {(t.topic, r.partition_id): r.error_code
            for t in response.replica_election_results for r in t.partition_result}


def test_kafka_python_elect_leaders_preferred_from_the_standby(zk_hosts, tmp_path):
    from kafka import KafkaAdminClient, TopicPartition

    admin = None
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM_ARGS, controller_ids=CONTROLLER_IDS,
                         controller_config=NO_REBALANCE) as c:
        try:
            standby = next(cid for cid in CONTROLLER_IDS if cid != c.active_controller())
            admin = KafkaAdminClient(bootstrap_servers=c.listeners[standby], client_id="kafka-python-elect",
                                     request_timeout_ms=20000)
            for p in range(3):
                wait_for(lambda p=p: _in_sync(c, "orders", p), 30, f"orders-{p} fully in sync")

            def elect(partitions, **kw):
                return _results(admin.elect_leaders(0, partitions, timeout_ms=15000, raise_errors=False, **kw))

            # 1. A reassignment that swaps the replicas keeps the old leader (Kafka's
            #    moveReassignedPartitionLeaderIfRequired: the leader is in the target and live).
            first, second = c.replicas("orders", 0)
            assert _state(c, "orders", 0)["leader"] == first
            assert admin.alter_partition_reassignments({TopicPartition("orders", 0): [second, first]}) == {
                TopicPartition("orders", 0): None}
            wait_for(lambda: c.replicas("orders", 0) == [second, first] and c.reassignments_done(), 30,
                     "the swap of orders-0's replicas")
            before = wait_for(lambda: _in_sync(c, "orders", 0), 30, "orders-0 in sync after the swap")
            assert before["leader"] == first  # not its preferred leader any more

            assert elect({"orders": [0]}) == {("orders", 0): ErrorCode.NONE}
            after = _state(c, "orders", 0)
            assert after["leader"] == second == c.replicas("orders", 0)[0]
            assert after["leader_epoch"] == before["leader_epoch"] + 1
            assert sorted(after["isr"]) == sorted(before["isr"])
            assert after["controller_epoch"] == c.json("/controller_epoch")
            wait_for(lambda: _leads(c, second, "orders", 0), 20, f"broker {second} to lead orders-0")

            # 2. Already preferred: ELECTION_NOT_NEEDED (kafka-python does not raise it), nothing written.
            unchanged = _stat(c, "orders", 0)
            assert elect({"orders": [0]}) == {("orders", 0): ErrorCode.ELECTION_NOT_NEEDED}
            assert _code(lambda: admin.elect_leaders(0, {"orders": [0]}, timeout_ms=15000)) == ErrorCode.NONE
            assert _stat(c, "orders", 0) == unchanged

            # 3. Unknown partitions, alone and beside a known one.
            assert elect({"orders": [7], "nope": [0]}) == {("orders", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                           ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
            assert _code(lambda: admin.elect_leaders(0, {"nope": [0]}, timeout_ms=15000)) == \
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            assert not c.zk.exists("/brokers/topics/nope") and not c.zk.exists("/brokers/topics/orders/partitions/7")

            # 4. The preferred broker of orders-1 stops: the controller elects another leader from
            #    the ISR; a preferred election is refused while the broker is down.
            preferred = c.replicas("orders", 1)[0]
            _sim(c, f"stop {preferred}")
            down = wait_for(lambda: (s := _state(c, "orders", 1))["leader"] not in (preferred, -1)
                            and preferred not in s["isr"] and s, 30, f"orders-1 led without broker {preferred}")
            unchanged = _stat(c, "orders", 1)
            assert elect({"orders": [1]}) == {("orders", 1): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE}
            assert _code(lambda: admin.elect_leaders(0, {"orders": [1]}, timeout_ms=15000)) == \
                ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
            assert _stat(c, "orders", 1) == unchanged

            # 5. It starts again and catches up (back in the ISR, still a follower): elected back.
            _sim(c, f"start {preferred}")
            back = wait_for(lambda: (s := _state(c, "orders", 1)) and preferred in s["isr"] and s, 30,
                            f"broker {preferred} back in orders-1's ISR")
            assert back["leader"] == down["leader"]
            assert elect({"orders": [1]}) == {("orders", 1): ErrorCode.NONE}
            elected = _state(c, "orders", 1)
            assert elected["leader"] == preferred and elected["leader_epoch"] == back["leader_epoch"] + 1
            wait_for(lambda: _leads(c, preferred, "orders", 1), 20, f"broker {preferred} to lead orders-1")

            # 6. Every partition (kafka-python names them all, from Metadata): each preferred
            #    leader back (orders-0's too, if the stop moved it), the rest not needed.
            codes = elect(None)
            assert set(codes) == {("orders", p) for p in range(3)}
            assert set(codes.values()) <= {ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED}
            assert all(_state(c, "orders", p)["leader"] == c.replicas("orders", p)[0] for p in range(3))
            assert set(elect(None).values()) == {ErrorCode.ELECTION_NOT_NEEDED}
        finally:
            if admin is not None:
                admin.close()


def test_confluent_kafka_elect_leaders_preferred_and_unclean_from_the_standby(zk_hosts, tmp_path):
    from confluent_kafka import ElectionType, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient
    from kafka import KafkaAdminClient

    with running_cluster(zk_hosts, tmp_path, sim_args=SIM_ARGS, controller_ids=CONTROLLER_IDS,
                         controller_config=NO_REBALANCE) as c:
        standby = next(cid for cid in CONTROLLER_IDS if cid != c.active_controller())
        client = AdminClient({"bootstrap.servers": c.listeners[standby]})

        def elect(election_type, partitions) -> dict[tuple[str, int], int]:
            future = client.elect_leaders(election_type, [TopicPartition(t, p) for t, p in partitions])
            out = {}
            for tp, error in future.result(timeout=30).items():
                if isinstance(error, KafkaException):
                    error = error.args[0]
                out[(tp.topic, tp.partition)] = ErrorCode.NONE if error is None else error.code()
            return out

        # fragile-0 on [a, b]: b stops (the ISR is [a]), then a (no live leader, ISR [a]), then
        # b comes back out of sync: only an unclean election gives the partition a leader.
        a, b = 1, 2
        # (confluent-kafka 2.16's NewTopic refuses a replica_assignment locally: kafka-python creates it.)
        creator = KafkaAdminClient(bootstrap_servers=c.listeners[standby], client_id="kafka-python-create")
        try:
            creator.create_topics({"fragile": {"assignments": {0: [a, b]}}}, timeout_ms=15000)
        finally:
            creator.close()
        wait_for(lambda: _in_sync(c, "fragile", 0), 30, "fragile-0 in sync")
        assert elect(ElectionType.UNCLEAN, [("fragile", 0)]) == {("fragile", 0): ErrorCode.ELECTION_NOT_NEEDED}
        assert elect(ElectionType.PREFERRED, [("fragile", 0)]) == {("fragile", 0): ErrorCode.ELECTION_NOT_NEEDED}

        _sim(c, f"stop {b}")
        wait_for(lambda: _state(c, "fragile", 0)["isr"] == [a], 30, f"broker {b} out of fragile-0's ISR")
        _sim(c, f"stop {a}")
        wait_for(lambda: _state(c, "fragile", 0)["leader"] == -1, 30, "fragile-0 without a leader")
        _sim(c, f"start {b}")
        wait_for(lambda: c.zk.exists(f"/brokers/ids/{b}"), 30, f"broker {b} registered again")
        leaderless = _state(c, "fragile", 0)
        assert leaderless["leader"] == -1 and leaderless["isr"] == [a]  # unclean.leader.election.enable is false

        unchanged = _stat(c, "fragile", 0)
        assert elect(ElectionType.PREFERRED, [("fragile", 0)]) == {
            ("fragile", 0): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE}
        assert elect(ElectionType.UNCLEAN, [("fragile", 7)]) == {("fragile", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert _stat(c, "fragile", 0) == unchanged

        assert elect(ElectionType.UNCLEAN, [("fragile", 0)]) == {("fragile", 0): ErrorCode.NONE}
        elected = _state(c, "fragile", 0)
        assert elected["leader"] == b and elected["isr"] == [b]
        assert elected["leader_epoch"] == leaderless["leader_epoch"] + 1
        wait_for(lambda: _leads(c, b, "fragile", 0), 20, f"broker {b} to lead fragile-0")
        assert elect(ElectionType.UNCLEAN, [("fragile", 0)]) == {("fragile", 0): ErrorCode.ELECTION_NOT_NEEDED}

        # a comes back and catches up from b; then a preferred election returns the lead to a.
        _sim(c, f"start {a}")
        back = wait_for(lambda: (s := _state(c, "fragile", 0)) and a in s["isr"] and s, 30,
                        f"broker {a} back in fragile-0's ISR")
        assert elect(ElectionType.PREFERRED, [("fragile", 0)]) == {("fragile", 0): ErrorCode.NONE}
        final = _state(c, "fragile", 0)
        assert final["leader"] == a and final["leader_epoch"] == back["leader_epoch"] + 1
        del client  # librdkafka's threads go before the cluster does


def test_create_partitions_errors_for_a_topic_being_deleted_and_wrong_replication(zk_hosts, tmp_path):
    from kafka import KafkaAdminClient
    from kafka.admin import NewPartitions

    admin = None
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM_ARGS, controller_ids=CONTROLLER_IDS,
                         controller_config=NO_REBALANCE) as c:
        try:
            standby = next(cid for cid in CONTROLLER_IDS if cid != c.active_controller())
            admin = KafkaAdminClient(bootstrap_servers=c.listeners[standby], client_id="kafka-python-partitions",
                                     request_timeout_ms=20000)

            def grow(spec):
                return _code(lambda: admin.create_partitions(spec, timeout_ms=10000))

            def snapshot(topic):
                """The topic znode and every partition state znode, data and version."""
                data, stat = c.zk.get(f"/brokers/topics/{topic}")
                parts = sorted(c.zk.get_children(f"/brokers/topics/{topic}/partitions"))
                return (data, stat.version), {p: _stat(c, topic, int(p)) for p in parts}

            # A given assignment with the wrong number of replicas (orders has 2): Kafka answers
            # INVALID_REPLICA_ASSIGNMENT ("Inconsistent replication factor between partitions").
            before = snapshot("orders")
            assert grow({"orders": NewPartitions(4, [[1, 2, 3]])}) == ErrorCode.INVALID_REPLICA_ASSIGNMENT
            assert grow({"orders": NewPartitions(5, [[1, 2], [3]])}) == ErrorCode.INVALID_REPLICA_ASSIGNMENT
            assert _code(lambda: admin.create_partitions({"orders": NewPartitions(4, [[1]])}, timeout_ms=10000,
                                                         validate_only=True)) == ErrorCode.INVALID_REPLICA_ASSIGNMENT
            assert snapshot("orders") == before

            # Automatic placement with fewer live brokers than the replication factor:
            # INVALID_REPLICATION_FACTOR (AdminUtils: "larger than available brokers").
            admin.create_topics({"wide": {"num_partitions": 1, "replication_factor": 4}}, timeout_ms=15000)
            wait_for(lambda: _in_sync(c, "wide", 0), 30, "wide-0 in sync")
            _sim(c, "stop 4")
            wait_for(lambda: not c.zk.exists("/brokers/ids/4") and 4 not in _state(c, "wide", 0)["isr"], 30,
                     "broker 4 gone")
            before = snapshot("wide")
            assert grow({"wide": NewPartitions(2)}) == ErrorCode.INVALID_REPLICATION_FACTOR
            assert snapshot("wide") == before
            # An explicit assignment naming the stopped broker: INVALID_REPLICA_ASSIGNMENT.
            assert grow({"wide": NewPartitions(2, [[1, 2, 3, 4]])}) == ErrorCode.INVALID_REPLICA_ASSIGNMENT
            assert snapshot("wide") == before

            # A topic queued for deletion (its replica on the stopped broker 4 keeps it there):
            # INVALID_TOPIC_EXCEPTION, as Kafka's "The topic wide is queued for deletion".
            answer = admin.delete_topics(["wide"], timeout_ms=2000, raise_errors=False)
            # Kafka's answer while a replica waits for its broker: REQUEST_TIMED_OUT, deletion going on.
            assert [t["error_code"] for t in answer["topics"]] == [ErrorCode.REQUEST_TIMED_OUT]
            assert c.zk.exists("/admin/delete_topics/wide")
            wait_for(lambda: c.hosted().get(("wide", 0)) == {4}, 30,
                     "the live brokers to delete their replicas of wide (the stopped one keeps its own)")
            assert c.zk.exists("/admin/delete_topics/wide") and c.zk.exists("/brokers/topics/wide")
            before = snapshot("wide")
            assert grow({"wide": NewPartitions(2)}) == ErrorCode.INVALID_TOPIC_EXCEPTION
            assert grow({"wide": NewPartitions(2, [[1, 2, 3]])}) == ErrorCode.INVALID_TOPIC_EXCEPTION
            assert _code(lambda: admin.create_partitions({"wide": NewPartitions(2)}, timeout_ms=10000,
                                                         validate_only=True)) == ErrorCode.INVALID_TOPIC_EXCEPTION
            assert snapshot("wide") == before
            # A batch: the other topic of the request still grows.
            assert grow({"wide": NewPartitions(2), "orders": NewPartitions(4)}) == ErrorCode.INVALID_TOPIC_EXCEPTION
            assert sorted(int(p) for p in c.topic("orders")["partitions"]) == [0, 1, 2, 3]
            assert snapshot("wide") == before

            # Broker 4 returns: its replica is deleted, then the topic's znodes.
            _sim(c, "start 4")
            wait_for(lambda: not c.zk.exists("/brokers/topics/wide") and not c.zk.exists("/admin/delete_topics/wide"),
                     30, "wide deleted once broker 4 is back")
            assert not any(t == "wide" for t, _ in c.hosted())
        finally:
            if admin is not None:
                admin.close()


def test_delete_topics_refused_when_deletion_is_disabled(zk_hosts, tmp_path):
    from kafka import KafkaAdminClient

    admin = None
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM_ARGS, controller_ids=CONTROLLER_IDS,
                         controller_config={**NO_REBALANCE, "delete_topic_enable": False}) as c:
        try:
            standby = next(cid for cid in CONTROLLER_IDS if cid != c.active_controller())
            admin = KafkaAdminClient(bootstrap_servers=c.listeners[standby], client_id="kafka-python-no-delete",
                                     request_timeout_ms=20000)
            before = c.zk.get("/brokers/topics/orders")
            hosted = {tp: rs for tp, rs in c.hosted().items() if tp[0] == "orders"}
            assert _code(lambda: admin.delete_topics(["orders"], timeout_ms=5000)) == ErrorCode.TOPIC_DELETION_DISABLED
            answer = admin.delete_topics(["orders", "nope"], timeout_ms=5000, raise_errors=False)
            topics = answer["topics"] if isinstance(answer, dict) else answer.responses
            codes = {(t["name"] if isinstance(t, dict) else t.name): (t["error_code"] if isinstance(t, dict) else t.error_code)
                     for t in topics}
            assert codes == {"orders": ErrorCode.TOPIC_DELETION_DISABLED, "nope": ErrorCode.TOPIC_DELETION_DISABLED}
            # Nothing marked, nothing deleted: the topic znode as it was, every replica on disk.
            assert not c.zk.exists("/admin/delete_topics/orders")
            assert c.zk.get("/brokers/topics/orders") == before
            assert {tp: rs for tp, rs in c.hosted().items() if tp[0] == "orders"} == hosted
            # A marker written by another tool is dropped, the topic kept (Kafka's controller).
            c.zk.create("/admin/delete_topics/orders", makepath=True)
            wait_for(lambda: not c.zk.exists("/admin/delete_topics/orders"), 20, "the marker dropped")
            assert c.zk.get("/brokers/topics/orders") == before
            assert {tp: rs for tp, rs in c.hosted().items() if tp[0] == "orders"} == hosted
        finally:
            if admin is not None:
                admin.close()
