"""kafka-reassign's bridge to the planner (:mod:`spark_jobs`): cluster snapshots in the
planner's format, Kafka's old ``--generate`` algorithm, and the KIP-6 plans behind
``--rebalance`` and ``--decommission-broker``.

Snapshots come from ZooKeeper (``spark_jobs.snapshot.read_cluster``: znodes, and replica sizes
from the brokers' DescribeLogDirs) or, with ``--bootstrap-server``, from the controller's
Metadata and the brokers' DescribeLogDirs through the AdminClient. The planner's errors become
:mod:`client.errors`: a snapshot it refuses is ClusterDataError, a request it cannot satisfy
PlanRefusedError.

With ``--planner URL`` the plan comes from a running planner service (``reassignd planner
serve``, the package planner_service, asked over HTTP: nothing of it is imported) instead: no
snapshot is read and no Spark job started; its answer has the same reassignment and report as
the one-shot planner's. Its answers become the errors of their kind (:func:`_service_request`,
client/exit_codes.py): a 400 PlanRefusedError, a 409 ConflictError, a 401/403 the request
refused; any other status, an answer that is not the service's, no service or no whole answer
within the timeout: it cannot be used now (exit 4). :class:`ServiceOptions` carries
Cruise Control's request options the service takes (excluded topics and brokers, the
concurrency caps); with a cap, the reviewed proposal is executed by the service
(:func:`execute_on_service`, ``dryrun=false&proposal_id=N``), which runs it in waves that keep it.

Usage::

    snap = await snapshot_from_admin(admin)
    result = make_plan(snap, "decommission", brokers=[3])
    result.reassignment["partitions"]      # Kafka's reassignment JSON entries
    result = await plan_from_service("http://127.0.0.1:9300", "decommission", brokers=[3],
                                     options=ServiceOptions(excluded_topics="__.*", per_broker=1))
    execution = await execute_on_service("http://127.0.0.1:9300", result)   # the service's /state view
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import http.client
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from client.cluster import ClusterAssignment
from client.errors import (
    ClusterAuthorizationFailedError,
    ClusterDataError,
    ConflictError,
    ConnectionFailedError,
    PlanRefusedError,
    ProtocolViolationError,
    RequestTimedOutError,
    UnsupportedVersionError,
)
from znodes.values import TopicPartition

SNAPSHOT_VERSION = 1


def _broker_entries(alive: dict[int, tuple[str | None, int | None, str | None]], replicas_on: set[int]) -> list[dict]:
    out = [{"id": b, "host": h, "port": p, "rack": r, "alive": True} for b, (h, p, r) in sorted(alive.items())]
    out += [{"id": b, "host": None, "port": None, "rack": None, "alive": False}
            for b in sorted(replicas_on - set(alive))]
    return out


def snapshot_from_state(state: ClusterAssignment, topics: list[str] | None = None, source: str | None = None) -> dict:
    """A size-less snapshot of ``topics`` (default all) from what the CLI already read."""
    names = sorted(state.topics) if topics is None else list(dict.fromkeys(topics))
    on = {b for t in names for r in state.topics.get(t, {}).values() for b in r}
    return {
        "version": SNAPSHOT_VERSION,
        "cluster": {"source": source, "taken_at_ms": int(time.time() * 1000), "warnings": []},
        "brokers": _broker_entries({b: (None, None, rack) for b, rack in state.brokers.items()}, on),
        "topics": [
            {"name": t, "partitions": [
                {"partition": p, "replicas": list(r), "leader": state.leaders.get(t, {}).get(p, -1)
                 if state.leaders.get(t, {}).get(p, -1) in r else -1,
                 "isr": None, "reassigning": (t, p) in state.in_flight, "sizes": None}
                for p, r in sorted(state.topics[t].items())]}
            for t in names if t in state.topics
        ],
    }


async def snapshot_from_zookeeper(hosts: str, timeout_s: float) -> dict:
    from spark_jobs.errors import SnapshotError
    from spark_jobs.snapshot import read_cluster

    try:
        return await read_cluster(hosts, sizes=True, timeout=timeout_s)
    except SnapshotError as exc:
        raise ClusterDataError(str(exc)) from None


async def snapshot_from_admin(admin, sizes: bool = True) -> dict:
    """Metadata (brokers, racks, assignment, leaders, ISR) plus DescribeLogDirs sizes (none
    asked with ``sizes`` False: a demotion reads no sizes)."""
    meta = await admin.describe_cluster(None)
    brokers = {n: (node.host, node.port, node.rack) for n, node in meta.nodes.items() if n != meta.controller_id}
    try:
        moving = await admin.list_partition_reassignments()
    except UnsupportedVersionError:
        moving = {}
    logs = await admin.describe_log_dirs() if sizes else None
    if logs is not None:  # a standby controller is a Metadata node too, but no broker
        brokers = {n: v for n, v in brokers.items() if not logs.hosts_nothing(n)}
    warnings = [f"broker {b}: DescribeLogDirs failed: {e}" for b, e in sorted(logs.errors.items())] if logs is not None else []
    on: set[int] = set()
    topics = []
    for name in sorted(meta.topics):
        parts = []
        for p, m in sorted(meta.topics[name].items()):
            _, _, removing = moving.get((name, p), ([], [], []))
            target = [b for b in m.replicas if b not in removing]
            on.update(m.replicas)
            found = [logs.replicas.get(b, {}).get((name, p)) for b in target] if logs is not None else None
            parts.append({
                "partition": p,
                "replicas": target,
                "leader": m.leader if m.leader in target else -1,
                "isr": list(m.isr),
                "reassigning": (name, p) in moving or target != m.replicas,
                "sizes": None if found is None else [None if s is None else s.size for s in found],
            })
        topics.append({"name": name, "partitions": parts})
    return {
        "version": SNAPSHOT_VERSION,
        "cluster": {"source": None, "taken_at_ms": int(time.time() * 1000), "warnings": warnings},
        "brokers": _broker_entries(brokers, on),
        "topics": topics,
    }


def legacy_generate(state: ClusterAssignment, topics: list[str], brokers: list[int], rack_aware: bool) -> dict[TopicPartition, list[int]]:
    """Kafka's old --generate (spark_jobs.legacy_generate), with a fixed seed so the same
    cluster and input always give the same proposal."""
    from spark_jobs import legacy_generate as generate
    from spark_jobs.errors import PlanError, SnapshotError

    try:
        doc = generate(snapshot_from_state(state, topics), topics, brokers, seed=0, rack_aware=rack_aware)
    except PlanError as exc:
        raise PlanRefusedError(str(exc)) from None
    except SnapshotError as exc:
        raise ClusterDataError(str(exc)) from None
    return {(e["topic"], e["partition"]): list(e["replicas"]) for e in doc["partitions"]}


def make_plan(snapshot: dict, mode: str, *, brokers=None, broker_list=None, topics=None,
              throttle: int | None = None, spark_master: str | None = None):
    """spark_jobs.api.plan; in-process unless ``spark_master`` names a Spark master."""
    from spark_jobs import api
    from spark_jobs.errors import PlanError, SnapshotError

    spark = api.get_spark(spark_master) if spark_master else None
    try:
        return api.plan(snapshot, mode, brokers=brokers, broker_list=broker_list, topics=topics,
                        throttle=throttle, spark=spark)
    except PlanError as exc:
        raise PlanRefusedError(str(exc)) from None
    except SnapshotError as exc:
        raise ClusterDataError(str(exc)) from None


@dataclass
class ServicePlan:
    """A planner service's dry-run answer, shaped like spark_jobs.api.PlanResult, with the
    proposal's id and the endpoint that planned it (to approve it by)."""

    reassignment: dict
    report: dict
    proposal_id: int | None = None
    path: str | None = None


@dataclass
class ServiceOptions:
    """Cruise Control's request options for the planner service (kafka-reassign's
    --excluded-topics, --excluded-brokers-for-replica-move,
    --concurrent-partition-movements-per-broker, --max-partition-movements-in-cluster)."""

    excluded_topics: str | None = None  # a regular expression over whole topic names
    excluded_brokers: list[int] | None = None
    per_broker: int | None = None
    cluster_cap: int | None = None

    @property
    def caps(self) -> bool:
        """Whether a cap is asked for: only the service's own execution keeps it."""
        return self.per_broker is not None or self.cluster_cap is not None

    def query(self) -> dict[str, str]:
        out = {}
        if self.excluded_topics is not None:
            out["excluded_topics"] = self.excluded_topics
        if self.excluded_brokers is not None:
            out["excluded_brokers_for_replica_move"] = ",".join(map(str, self.excluded_brokers))
        if self.per_broker is not None:
            out["concurrent_partition_movements_per_broker"] = str(self.per_broker)
        if self.cluster_cap is not None:
            out["max_partition_movements_in_cluster"] = str(self.cluster_cap)
        return out


# How long --planner waits for the service when --timeout is not given: a plan on a cold Spark
# can take a minute, past the 30 s the other requests get. An explicit --timeout is the wait.
SERVICE_TIMEOUT_S = 120.0


def _garbled(message: str) -> ProtocolViolationError:
    """An answer this tool cannot read: the POST went out, so the service may have acted on it."""
    exc = ProtocolViolationError(message)
    exc.request_sent = True
    return exc


def _service_request(url: str, timeout_s: float) -> dict:
    """POST ``url``; the service's JSON answer, or the error of its kind (client/exit_codes.py):
    400 the plan is refused, 409 a conflict, 401/403 the request refused, any other status, a
    timeout or an answer that is not the service's JSON: the service cannot be used now."""
    where = url.split("?")[0]
    req = urllib.request.Request(url, method="POST", data=b"")
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as answer:
            data = answer.read()
    except urllib.error.HTTPError as e:
        try:
            message = json.loads(e.read())["error"]["message"]
        except (ValueError, KeyError, TypeError, OSError):
            message = f"HTTP {e.code} {e.reason}"
        if e.code == 400:
            raise PlanRefusedError(f"planner service: {message}") from None
        if e.code == 409:
            raise ConflictError(f"planner service: {message}") from None
        if e.code in (401, 403):
            # as the admin listener's CLUSTER_AUTHORIZATION_FAILED is: the request was refused
            raise ClusterAuthorizationFailedError(f"planner service at {where} answered {e.code}: {message}") from None
        raise ConnectionFailedError(f"planner service at {where} answered {e.code}: {message}") from None
    except TimeoutError:
        raise _timed_out(where, timeout_s) from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        if isinstance(getattr(e, "reason", None), TimeoutError):
            raise _timed_out(where, timeout_s) from None
        raise ConnectionFailedError(f"planner service at {where} is unreachable: {e}") from None
    except http.client.HTTPException as e:  # not OSError: no status line, a header too long, cut short
        raise _garbled(f"planner service at {where} gave no HTTP answer this tool can read: "
                       f"{type(e).__name__}: {str(e)[:80]}") from None
    try:
        body = json.loads(data)
    except ValueError:
        raise _garbled(f"planner service at {where} answered something that is not JSON: {data[:80]!r}") from None
    if not isinstance(body, dict):
        raise _garbled(f"planner service at {where} answered {str(body)[:80]}, not an object")
    return body


def _timed_out(where: str, timeout_s: float) -> RequestTimedOutError:
    return RequestTimedOutError(f"planner service at {where} did not answer within {timeout_s:g} s "
                                f"(--timeout sets the wait)")


async def _ask(url: str, timeout_s: float) -> dict:
    """:func:`_service_request`, its whole wait bounded by ``timeout_s``: the socket's timeout
    bounds each read only, so a service trickling its answer (or a slow DNS) would hold on past
    --timeout. The request runs in a daemon thread, which exiting does not wait for (the
    default executor's threads it would)."""
    future: concurrent.futures.Future = concurrent.futures.Future()

    def run() -> None:
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(_service_request(url, timeout_s))
            except BaseException as e:  # noqa: BLE001 - handed to the waiting coroutine
                future.set_exception(e)

    threading.Thread(target=run, name="planner-service-request", daemon=True).start()
    try:
        return await asyncio.wait_for(asyncio.wrap_future(future), timeout_s)
    except TimeoutError:
        raise _timed_out(url.split("?")[0], timeout_s) from None


async def plan_from_service(base_url: str, mode: str, *, brokers=None, broker_list=None, topics=None,
                            throttle: int | None = None, timeout_s: float = SERVICE_TIMEOUT_S,
                            options: ServiceOptions | None = None) -> ServicePlan:
    """A dry-run plan from ``reassignd planner serve`` at ``base_url`` (nothing is executed)."""
    query: dict[str, str] = {"dryrun": "true"}
    if mode == "rebalance":
        path = "/rebalance"
        if broker_list is not None:
            query["brokerid"] = ",".join(map(str, broker_list))
        if topics is not None:
            query["topics"] = ",".join(topics)
    elif mode == "decommission":
        path, query["brokerid"] = "/remove_broker", ",".join(map(str, brokers))
    elif mode == "demote":  # the service's spark_jobs.demote: its report names what to elect
        path, query["brokerid"] = "/demote_broker", ",".join(map(str, brokers))
    else:
        raise ValueError(f"no planner service endpoint for mode {mode!r}")
    if throttle is not None:
        query["replication_throttle"] = str(throttle)
    if options is not None:
        query.update(options.query())
    url = base_url.rstrip("/") + path + "?" + urllib.parse.urlencode(query)
    body = await _ask(url, timeout_s)
    try:
        proposal = body["proposal"]
        return ServicePlan(proposal["reassignment"], proposal["report"], proposal.get("proposal_id"), path)
    except (KeyError, TypeError):
        raise ProtocolViolationError(f"planner service answered without a proposal: {str(body)[:200]}") from None


async def execute_on_service(base_url: str, plan: ServicePlan, timeout_s: float = SERVICE_TIMEOUT_S) -> dict:
    """Approve a reviewed proposal: the service executes exactly ``plan`` (its proposal id), or
    ConflictError when the cluster changed since it was planned or a reassignment runs. The
    execution as the service's /state shows it."""
    if plan.proposal_id is None or plan.path is None:
        raise ProtocolViolationError("the planner service's proposal carries no proposal_id: it cannot be approved")
    query = urllib.parse.urlencode({"dryrun": "false", "proposal_id": str(plan.proposal_id)})
    body = await _ask(base_url.rstrip("/") + plan.path + "?" + query, timeout_s)
    try:
        return body["execution"]
    except (KeyError, TypeError):
        raise ProtocolViolationError(f"planner service answered without an execution: {str(body)[:200]}") from None
