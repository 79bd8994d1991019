"""The async AdminClient for reassignd: KIP-179 reassignment and throttles, KIP-236
cancellation, KIP-240 list/describe, KIP-113 DescribeLogDirs and KIP-546 client quotas, over the
Kafka wire protocol.

Transport is aiokafka's connection layer carrying this project's message schemas
(:mod:`client.transport`). The client bootstraps from any controller instance, learns the nodes
and the active controller from Metadata, sends controller-only requests to the active one
(refreshing Metadata and retrying when a node answers NOT_CONTROLLER or cannot be reached), and
sends DescribeLogDirs to the brokers. Every request goes at the highest version both sides
support (from the ApiVersions handshake).

Usage::

    async with AdminClient("127.0.0.1:9190") as admin:
        result = await admin.reassign_partitions({("orders", 0): [4, 5, 6]}, throttle=10_000_000)
        result.all()                                   # raises PartitionErrors if any failed
        running = await admin.list_reassignments()     # {("orders", 0): Reassignment(...)}
        desc = await admin.describe_reassignments(running.values())  # {("orders", 0): ...}
        logs = await admin.describe_log_dirs()         # sizes, lags and directories per broker
        moved = await admin.alter_replica_log_dirs({("orders", 0, 4): "/data/d2"})   # KIP-113
        await admin.cancel_reassignments()             # KIP-236: roll every pending one back
        await admin.alter_client_quotas({(("user", "alice"),): {"producer_byte_rate": 1024}})  # KIP-546
        await admin.describe_client_quotas([("user", MATCH_EXACT, "alice")])  # {(("user", "alice"),): {...}}

Errors are :mod:`client.errors`; per-partition outcomes are :class:`client.results.KeyedResult`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Sequence

from client import logdirs, wire
from client.errors import (
    ConnectionFailedError,
    InputError,
    KafkaApiError,
    NotControllerError,
    ProtocolViolationError,
    ReassignError,
    RequestTimedOutError,
    UnsupportedVersionError,
    error_for_code,
)
from client.metadata import (
    NO_CONTROLLER,
    ClusterMetadata,
    LogDirsResult,
    Node,
    Reassignment,
    ReassignmentDescription,
)
from client.results import KeyedResult
from client.transport import NodeConnection
from protocol import ApiKey
from znodes import strategies as strategy_names
from znodes.values import TopicPartition


DEFAULT_PORT = 9092  # Kafka's, when a bootstrap address has none
DEFAULT_CLIENT_ID = "kafka-reassign"
DEFAULT_REQUEST_TIMEOUT_MS = 30_000
# Retries of a controller-only request after NOT_CONTROLLER or an unreachable controller:
# enough to ride out an election (a new controller is usually elected within a ZooKeeper
# session timeout), with backoff doubling from RETRY_BACKOFF_MS up to MAX_RETRY_BACKOFF_MS.
DEFAULT_RETRIES = 8
RETRY_BACKOFF_MS = 100
MAX_RETRY_BACKOFF_MS = 2_000
# Kafka's "not throttled" value in KIP-240 descriptions.
UNTHROTTLED = 2**63 - 1

_HOST_PORT = re.compile(r"^(?:\[(?P<v6>[0-9a-fA-F:.]+)\]|(?P<host>[^:\[\]/\s]+))(?::(?P<port>\d+))?$")


def parse_bootstrap(servers: str | Iterable[str]) -> list[tuple[str, int]]:
    """``"h1:9092,h2"`` or ``["h1:9092", "[::1]:9093"]`` -> [(host, port), ...]."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    out: list[tuple[str, int]] = []
    for raw in items:
        if not isinstance(raw, str):
            raise InputError(f"bootstrap address {raw!r} is not a string", "--bootstrap-server")
        text = raw.strip()
        if not text:
            continue
        m = _HOST_PORT.match(text)
        if not m:
            raise InputError(f"{text!r} is not HOST:PORT", "--bootstrap-server")
        digits = (m.group("port") or "").lstrip("0")
        if len(digits) > 5:  # out of range anyway; int() would refuse past 4300 digits
            raise InputError(f"{text[:60]!r}: port {digits[:6]}... is out of range", "--bootstrap-server")
        port = int(m.group("port")) if m.group("port") else DEFAULT_PORT
        if not 0 < port < 65536:
            raise InputError(f"{text!r}: port {port} is out of range", "--bootstrap-server")
        out.append((m.group("v6") or m.group("host"), port))
    if not out:
        raise InputError("no bootstrap address given", "--bootstrap-server")
    return out


def _require_tp(key: object, what: str) -> TopicPartition:
    if (
        not isinstance(key, tuple)
        or len(key) != 2
        or not isinstance(key[0], str)
        or not isinstance(key[1], int)
        or isinstance(key[1], bool)
        or key[1] < 0
    ):
        raise InputError(f"{what}: {key!r} is not a (topic, partition) pair")
    return key


def _require_ids(values: object, what: str, *, allow_none: bool = False) -> list[int] | None:
    if values is None and allow_none:
        return None
    if not isinstance(values, (list, tuple)):
        raise InputError(f"{what}: expected a list of broker ids, got {values!r}")
    for b in values:
        if not isinstance(b, int) or isinstance(b, bool) or b < 0:
            raise InputError(f"{what}: {b!r} is not a broker id")
    if len(set(values)) != len(values):
        raise InputError(f"{what}: broker ids repeat in {list(values)}")
    return list(values)


def _require_rate(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0 or value > UNTHROTTLED:
        raise InputError(f"{what}: a throttle must be a positive number of bytes/s, got {value!r}")
    return value


class AdminClient:
    """See the module docstring. Not thread-safe; one event loop."""

    def __init__(
        self,
        bootstrap_servers: str | list[str],
        client_id: str = DEFAULT_CLIENT_ID,
        request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS,
        retries: int = DEFAULT_RETRIES,
        security=None,
    ):
        self._bootstrap = parse_bootstrap(bootstrap_servers)
        if not isinstance(request_timeout_ms, int) or request_timeout_ms <= 0:
            raise InputError(f"request_timeout_ms must be a positive int, got {request_timeout_ms!r}")
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.retries = retries
        # client.security.ClientSecurity: TLS and SASL on every connection (None: PLAINTEXT).
        self.security = security
        self._conns: dict[tuple[str, int], NodeConnection] = {}
        self._metadata: ClusterMetadata | None = None
        self._started = False

    # ---- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect to a bootstrap server and read the cluster's Metadata."""
        failures: list[str] = []
        for host, port in self._bootstrap:
            try:
                self._metadata = await self._fetch_metadata((host, port), topics=[])
            except (ConnectionFailedError, RequestTimedOutError, ProtocolViolationError,
                    UnsupportedVersionError, KafkaApiError) as exc:
                failures.append(str(exc))
                continue
            self._started = True
            return
        raise ConnectionFailedError("no bootstrap server answered: " + "; ".join(failures))

    async def close(self) -> None:
        conns, self._conns = list(self._conns.values()), {}
        for conn in conns:
            await conn.close()
        self._started = False

    async def __aenter__(self) -> "AdminClient":
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    # ---- connections and routing ----------------------------------------------------------

    def _check_started(self) -> None:
        if not self._started:
            raise ReassignError("AdminClient is not started (use `async with` or await start())")

    async def _conn(self, addr: tuple[str, int]) -> NodeConnection:
        conn = self._conns.get(addr)
        if conn is not None and conn.connected:
            return conn
        if conn is not None:
            await conn.close()
            del self._conns[addr]
        conn = await NodeConnection.open(
            addr[0], addr[1], client_id=self.client_id, request_timeout_ms=self.request_timeout_ms,
            security=self.security,
        )
        self._conns[addr] = conn
        return conn

    async def _request(self, addr: tuple[str, int], api_key: int, body, versions=None) -> tuple[int, dict]:
        conn = await self._conn(addr)
        try:
            return await conn.request(api_key, body, versions)
        except (ConnectionFailedError, RequestTimedOutError, ProtocolViolationError):
            self._conns.pop(addr, None)
            await conn.close()
            raise

    def _addr(self, node_id: int) -> tuple[str, int]:
        assert self._metadata is not None
        node = self._metadata.nodes.get(node_id)
        if node is None:
            raise ConnectionFailedError(f"node {node_id} is not in the cluster's Metadata")
        return (node.host, node.port)

    async def _fetch_metadata(self, addr: tuple[str, int], topics: list[str] | None) -> ClusterMetadata:
        _, body = await self._request(addr, ApiKey.METADATA, wire.metadata_request(topics))
        if body.get("error_code"):  # v13+ (KIP-1102): the node could not answer; another may
            raise ConnectionFailedError(f"{addr[0]}:{addr[1]} answered Metadata with error {body['error_code']}")
        return ClusterMetadata.from_body(body)

    def _metadata_sources(self) -> list[tuple[str, int]]:
        """Where to ask for Metadata: the active controller, the bootstrap servers, the rest."""
        seen: list[tuple[str, int]] = []
        meta = self._metadata
        if meta is not None and meta.controller_id in meta.nodes:
            seen.append(self._addr(meta.controller_id))
        for addr in self._bootstrap:
            if addr not in seen:
                seen.append(addr)
        if meta is not None:
            for node in meta.nodes.values():
                if (node.host, node.port) not in seen:
                    seen.append((node.host, node.port))
        return seen

    async def refresh_metadata(self, topics: list[str] | tuple | None = ()) -> ClusterMetadata:
        """Re-read Metadata (``topics=None``: every topic; ``[]``: nodes only)."""
        failures: list[str] = []
        for addr in self._metadata_sources():
            try:
                meta = await self._fetch_metadata(addr, topics)
            except (ConnectionFailedError, RequestTimedOutError, ProtocolViolationError,
                    UnsupportedVersionError) as exc:
                failures.append(str(exc))
                continue
            self._metadata = meta
            return meta
        raise ConnectionFailedError("no node answered Metadata: " + "; ".join(failures))

    async def _controller_request(self, api_key: int, body, codes, versions=None) -> tuple[int, dict]:
        """Send to the active controller; on NOT_CONTROLLER (anywhere in the answer, as
        ``codes(body)`` lists them) or a refused connection, refresh Metadata and retry."""
        self._check_started()
        backoff = RETRY_BACKOFF_MS / 1000
        last: ReassignError | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, MAX_RETRY_BACKOFF_MS / 1000)
                try:
                    await self.refresh_metadata()
                except ConnectionFailedError as exc:
                    last = exc
                    continue
            assert self._metadata is not None
            controller = self._metadata.controller_id
            if controller == NO_CONTROLLER or controller not in self._metadata.nodes:
                last = NotControllerError("the cluster has no active controller right now")
                continue
            addr = self._addr(controller)
            try:
                conn = await self._conn(addr)
            except ConnectionFailedError as exc:
                # Nothing was sent: safe to retry against a (possibly new) controller.
                last = exc
                continue
            try:
                version, answer = await conn.request(api_key, body, versions)
            except (ConnectionFailedError, RequestTimedOutError, ProtocolViolationError) as exc:
                self._conns.pop(addr, None)
                await conn.close()
                # The request may have been applied: do not send it twice, and say so.
                if isinstance(exc, ConnectionFailedError):
                    exc.request_sent = True
                raise
            if NotControllerError.code in codes(answer):
                last = NotControllerError(f"node {controller} is not the active controller")
                continue
            return version, answer
        assert last is not None
        raise last

    # ---- cluster view ---------------------------------------------------------------------

    async def describe_cluster(self, topics: list[str] | None = None) -> ClusterMetadata:
        """Metadata: nodes, active controller, and ``topics`` (None: every topic)."""
        self._check_started()
        return await self.refresh_metadata(topics)

    @property
    def nodes(self) -> dict[int, Node]:
        self._check_started()
        assert self._metadata is not None
        return dict(self._metadata.nodes)

    @property
    def controller_id(self) -> int:
        self._check_started()
        assert self._metadata is not None
        return self._metadata.controller_id

    # ---- KIP-179 --------------------------------------------------------------------------

    async def reassign_partitions(
        self,
        assignments: dict[TopicPartition, list[int]],
        throttle: int | None = None,
        auto_remove_throttle: bool = True,
        validate_only: bool = False,
        additional: bool = False,
        skip_isr_check: bool = False,
        movement_strategies: Sequence[str] | None = None,
    ) -> KeyedResult:
        """Start moving each partition to its new replica list (first = preferred leader).

        ``throttle`` (bytes/s) throttles the moving replicas' leaders and followers; with
        ``auto_remove_throttle`` the controller removes it when the reassignment completes.
        ``validate_only`` checks without starting. ``additional`` adds to reassignments already
        running instead of being refused with REASSIGNMENT_IN_PROGRESS. ``skip_isr_check``: the
        moves start even while their partition's ISR is at or under its min.insync.replicas
        (reassignd's controller holds them otherwise); it is a tagged field of v1, so it is sent
        as v1, with v1's additional semantics (callers that want v0's refusal check first).
        ``movement_strategies``: the order these moves start in among themselves (names of
        znodes.strategies, e.g. ``["smallest_first", "under_replicated_last"]``; None: the
        controller's ``replica_movement_strategies``), v1's tagged MovementStrategies, so also v1.
        """
        if not assignments:
            raise InputError("reassign_partitions: no assignments given")
        clean = {_require_tp(k, "reassign_partitions"): _require_ids(v, f"reassign_partitions {k}") for k, v in assignments.items()}
        for k, v in clean.items():
            if not v:
                raise InputError(f"reassign_partitions {k}: empty replica list")
        if throttle is not None:
            _require_rate(throttle, "reassign_partitions")
        strategies = ()
        if movement_strategies is not None:
            try:
                strategies = strategy_names.parse(movement_strategies)
            except strategy_names.StrategyError as e:
                raise InputError(f"reassign_partitions: {e}") from None
        body = wire.reassign_partitions_request(
            clean, throttle, auto_remove_throttle, validate_only, self.request_timeout_ms, skip_isr_check
        )
        body["movement_strategies"] = list(strategies)  # tagged, v1 only
        # The version carries the semantics: v1 is the additional one (and carries the tags).
        tagged = skip_isr_check or bool(strategies)
        versions = wire.REASSIGN_V_ADDITIONAL if additional or tagged else wire.REASSIGN_V_PLAIN
        _, answer = await self._controller_request(ApiKey.REASSIGN_PARTITIONS, body, wire.partition_codes, versions)
        return wire.partition_results(answer, list(clean))

    async def alter_interbroker_throttled_rates(
        self,
        rates: dict[int, tuple[int, int]],
        auto_remove: bool = True,
        validate_only: bool = False,
    ) -> KeyedResult:
        """Set each broker's (leader_rate, follower_rate) in bytes/s. Result keyed by broker."""
        if not rates:
            raise InputError("alter_interbroker_throttled_rates: no brokers given")
        clean: dict[int, tuple[int, int]] = {}
        for broker, pair in rates.items():
            _require_ids([broker], "alter_interbroker_throttled_rates")
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise InputError(f"alter_interbroker_throttled_rates: broker {broker}: expected (leader_rate, follower_rate)")
            clean[broker] = (_require_rate(pair[0], f"broker {broker} leader rate"),
                             _require_rate(pair[1], f"broker {broker} follower rate"))
        body = wire.throttled_rates_request(clean, auto_remove, validate_only, self.request_timeout_ms)
        _, answer = await self._controller_request(ApiKey.ALTER_INTERBROKER_THROTTLED_RATES, body, wire.broker_codes)
        return wire.broker_results(answer, list(clean))

    async def alter_interbroker_throttled_replicas(
        self,
        replicas: dict[TopicPartition, list[int]],
        auto_remove: bool = True,
        validate_only: bool = False,
    ) -> KeyedResult:
        """Set which brokers' replicas of each partition are subject to the throttled rates
        (the wire API carries one broker list per partition)."""
        if not replicas:
            raise InputError("alter_interbroker_throttled_replicas: no partitions given")
        clean = {
            _require_tp(k, "alter_interbroker_throttled_replicas"): _require_ids(v, f"alter_interbroker_throttled_replicas {k}")
            for k, v in replicas.items()
        }
        body = wire.throttled_replicas_request(clean, auto_remove, validate_only, self.request_timeout_ms)
        _, answer = await self._controller_request(ApiKey.ALTER_INTERBROKER_THROTTLED_REPLICAS, body, wire.partition_codes)
        return wire.partition_results(answer, list(clean))

    # ---- KIP-236 --------------------------------------------------------------------------

    async def cancel_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None, validate_only: bool = False
    ) -> KeyedResult:
        """Roll pending reassignments back to their original replicas: every one (None) or the
        listed partitions. Result keyed by partition: None (cancelled) or why it was not
        (e.g. NO_REASSIGNMENT_IN_PROGRESS, or skipped as unsafe per KIP-236)."""
        wanted = None if partitions is None else [_require_tp(k, "cancel_reassignments") for k in partitions]
        body = wire.cancel_request(wanted, validate_only, self.request_timeout_ms)
        _, answer = await self._controller_request(ApiKey.CANCEL_REASSIGNMENTS, body, wire.cancel_codes)
        return wire.cancel_results(answer, wanted)

    # ---- KIP-240 --------------------------------------------------------------------------

    async def list_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, Reassignment]:
        """The running reassignments (of ``partitions``, or all). Raises the request's error."""
        wanted = None if partitions is None else [_require_tp(k, "list_reassignments") for k in partitions]
        body = wire.list_request(wanted, self.request_timeout_ms)
        _, answer = await self._controller_request(ApiKey.LIST_REASSIGNMENTS, body, wire.top_codes)
        return wire.list_results(answer)

    async def waiting_reassignments(self, partitions: Iterable[TopicPartition] | None = None) -> dict[TopicPartition, str]:
        """Accepted moves (of ``partitions``, or all) the controller holds back, and why
        (reassignd's ISR-aware execution; ListReassignments v1's tagged Waiting). An older
        controller sends none: {}."""
        wanted = None if partitions is None else [_require_tp(k, "waiting_reassignments") for k in partitions]
        body = wire.list_request(wanted, self.request_timeout_ms)
        _, answer = await self._controller_request(ApiKey.LIST_REASSIGNMENTS, body, wire.top_codes, versions=(1, 1))
        return wire.list_waiting(answer)

    async def elect_preferred_leaders(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, KafkaApiError | None]:
        """ElectLeaders (43, KIP-460, v1+), preferred: per partition None when its preferred
        replica leads now (elected, or already leading: ELECTION_NOT_NEEDED), else the error."""
        wanted = [_require_tp(k, "elect_preferred_leaders") for k in partitions]
        body = wire.elect_leaders_request(wanted, self.request_timeout_ms)
        _, answer = await self._controller_request(ApiKey.ELECT_LEADERS, body, wire.elect_leaders_codes, versions=(1, 2))
        return {tp: None if code in (0, wire.ELECTION_NOT_NEEDED) else error_for_code(code, topic=tp[0], partition=tp[1])
                for tp, code in wire.elect_leaders_results(answer).items()}

    async def describe_reassignments(
        self, reassignments: Iterable[Reassignment]
    ) -> dict[TopicPartition, ReassignmentDescription | None]:
        """KIP-240: describe each reassignment. Keyed by (topic, partition), in the order given:
        its description, or None when it is no longer running.

        Moves started together share a reassignment id, so the answer is matched by the
        partition each description names (v1) or else by request order
        (:func:`client.wire.describe_results`). Entries an order-only answer cannot pin down
        are asked about again, one per request, where there is nothing to mix up."""
        wanted: dict[TopicPartition, Reassignment] = {}
        for r in reassignments:
            if not isinstance(r, Reassignment):
                raise InputError(f"describe_reassignments: {r!r} is not a Reassignment from list_reassignments")
            seen = wanted.setdefault(r.topic_partition, r)
            if seen != r:
                raise InputError(
                    f"describe_reassignments: two reassignments of {r.topic}-{r.partition} (ids "
                    f"{seen.reassignment_id} and {r.reassignment_id}); a partition has one at a time"
                )
        if not wanted:
            return {}
        match = await self._describe(list(wanted.values()))
        found = match.described
        for r in match.ambiguous:
            alone = await self._describe([r])
            if alone.ambiguous:  # one entry, at most one description: cannot happen
                raise ProtocolViolationError(f"DescribeReassignments: cannot match the answer about {r}")
            found.update(alone.described)
        return {tp: found[tp] for tp in wanted}

    async def _describe(self, wanted: list[Reassignment]) -> wire.DescribeMatch:
        body = wire.describe_request(wanted, self.request_timeout_ms)
        _, answer = await self._controller_request(ApiKey.DESCRIBE_REASSIGNMENTS, body, wire.top_codes)
        return wire.describe_results(answer, wanted)

    async def list_partition_reassignments(self) -> dict[TopicPartition, tuple[list[int], list[int], list[int]]]:
        """Kafka's ListPartitionReassignments (KIP-455): (replicas, adding, removing) of each
        running reassignment."""
        body = wire.list_partition_reassignments_request(self.request_timeout_ms)
        _, answer = await self._controller_request(ApiKey.LIST_PARTITION_REASSIGNMENTS, body, wire.top_codes)
        return wire.list_partition_reassignments_results(answer)

    # ---- KIP-113 --------------------------------------------------------------------------

    async def describe_log_dirs(
        self,
        broker_ids: Iterable[int] | None = None,
        partitions: Iterable[TopicPartition] | None = None,
    ) -> LogDirsResult:
        """Each broker's replicas (size, offset lag, directory; future logs of intra-broker
        moves apart) and its directories (``dirs``: error, total and usable bytes, how many
        logs). With ``broker_ids=None`` every node is asked (controller instances answer with
        no log directory, so hold nothing here; a node that does not serve DescribeLogDirs is
        skipped); listed brokers that cannot answer appear in ``errors``."""
        self._check_started()
        meta = await self.refresh_metadata()
        explicit = broker_ids is not None
        ids = sorted(meta.nodes) if broker_ids is None else list(broker_ids)
        wanted = None if partitions is None else [_require_tp(k, "describe_log_dirs") for k in partitions]
        body = wire.describe_log_dirs_request(wanted)
        result = LogDirsResult()

        async def ask(broker: int) -> None:
            if broker not in meta.nodes:
                result.errors[broker] = ConnectionFailedError(f"broker {broker} is not in the cluster")
                return
            try:
                _, answer = await self._request(self._addr(broker), ApiKey.DESCRIBE_LOG_DIRS, body)
            except UnsupportedVersionError as exc:
                if explicit:
                    result.errors[broker] = exc
                return
            except (ConnectionFailedError, RequestTimedOutError, ProtocolViolationError) as exc:
                result.errors[broker] = exc
                return
            code = answer.get("error_code", 0)
            if code:
                result.errors[broker] = error_for_code(code, broker_id=broker)
                return
            result.add_body(broker, answer)

        await asyncio.gather(*(ask(b) for b in ids))
        return result

    async def describe_broker_throttles(self, broker_ids: Iterable[int]) -> dict[int, tuple[int | None, int | None]]:
        """Each broker's (leader, follower) replication throttled rate from DescribeConfigs on
        the controller, None where unset. Brokers the controller cannot describe are left out."""
        ids = list(broker_ids)
        if not ids:
            return {}
        body = wire.describe_configs_request(ids, wire.THROTTLE_RATE_KEYS)
        _, answer = await self._controller_request(ApiKey.DESCRIBE_CONFIGS, body, wire.describe_configs_codes)
        return wire.broker_throttles(answer)

    async def alter_replica_log_dirs(self, moves: dict[tuple[str, int, int], str]) -> KeyedResult:
        """KIP-113: move each replica ``(topic, partition, broker)`` into the named absolute
        directory of its broker (AlterReplicaLogDirs, sent to each broker concurrently). Result
        keyed by replica: None (moving or already there) or its error - REPLICA_NOT_AVAILABLE
        while the broker does not host it yet (the broker remembers the directory for when it
        does), LOG_DIR_NOT_FOUND, KAFKA_STORAGE_ERROR; a broker that cannot be reached fails
        its replicas with that error."""
        self._check_started()
        if not moves:
            raise InputError("alter_replica_log_dirs: no replicas given")
        for key, path in moves.items():
            if (not isinstance(key, tuple) or len(key) != 3 or not isinstance(key[0], str)
                    or any(not isinstance(x, int) or isinstance(x, bool) or x < 0 for x in key[1:])):
                raise InputError(f"alter_replica_log_dirs: {key!r} is not a (topic, partition, broker) triple")
            if not isinstance(path, str) or not path.startswith("/"):
                raise InputError(f"alter_replica_log_dirs {key}: {path!r} is not an absolute directory path")
        meta = await self.refresh_metadata([])
        outcome: dict[tuple[str, int, int], KafkaApiError | None] = {}

        async def ask(broker: int, body: dict) -> None:
            asked = [k for k in moves if k[2] == broker]
            try:
                if broker not in meta.nodes:
                    raise ConnectionFailedError(f"broker {broker} is not in the cluster's Metadata")
                _, answer = await self._request(self._addr(broker), ApiKey.ALTER_REPLICA_LOG_DIRS, body)
            except (ConnectionFailedError, RequestTimedOutError, ProtocolViolationError,
                    UnsupportedVersionError) as exc:
                outcome.update(dict.fromkeys(asked, exc))
                return
            outcome.update(logdirs.results(broker, answer, asked))

        await asyncio.gather(*(ask(b, body) for b, body in logdirs.requests_by_broker(moves).items()))
        return KeyedResult({k: outcome[k] for k in moves})

    async def alter_broker_config(self, broker: int, key: str, value: str | None) -> None:
        """IncrementalAlterConfigs on broker ``broker``'s dynamic config (``/config/brokers/N``):
        SET ``key`` to ``value``, or DELETE it when None. Sent to that broker, as Kafka's
        clients send a BROKER resource; raises the error it answers."""
        self._check_started()
        _require_ids([broker], "alter_broker_config")
        await self.refresh_metadata([])
        _, answer = await self._request(self._addr(broker), ApiKey.INCREMENTAL_ALTER_CONFIGS,
                                        wire.alter_broker_config_request(broker, key, value))
        error = wire.alter_configs_error(answer)
        if error is not None:
            raise error

    async def describe_broker_config(self, broker_ids: Iterable[int], key: str) -> dict[int, tuple[str | None, int | None]]:
        """Each broker's (value, config_source) of one config key, from DescribeConfigs on the
        controller (v1+, which has sources); brokers it cannot describe are left out."""
        ids = list(broker_ids)
        if not ids:
            return {}
        body = wire.describe_configs_request(ids, [key])
        _, answer = await self._controller_request(ApiKey.DESCRIBE_CONFIGS, body, wire.describe_configs_codes,
                                                   versions=(1, 4))
        return wire.broker_config_values(answer, key)

    # ---- client quotas (KIP-546) --------------------------------------------------------------

    async def describe_client_quotas(self, components: Sequence = (), strict: bool = False) -> dict:
        """DescribeClientQuotas: {entity: {key: value}} for the entities the filter selects.
        ``components``: (entity type, match type, name) with protocol.client_quotas' MATCH_EXACT
        (the name), MATCH_DEFAULT or MATCH_SPECIFIED (name None); ``strict`` leaves out entities
        with types no component names. An entity is ((type, name or None: the default), ...)."""
        for component in components:
            if not (isinstance(component, tuple) and len(component) == 3 and isinstance(component[0], str)
                    and type(component[1]) is int and -128 <= component[1] <= 127
                    and (component[2] is None or isinstance(component[2], str))):
                raise InputError(f"describe_client_quotas: {component!r} is not (entity type, match type, name)")
        _, answer = await self._controller_request(
            ApiKey.DESCRIBE_CLIENT_QUOTAS, wire.describe_client_quotas_request(components, strict), wire.top_codes)
        return wire.client_quotas_found(answer)

    async def alter_client_quotas(self, alterations: dict, validate_only: bool = False) -> KeyedResult:
        """AlterClientQuotas: {entity: {key: value, or None to remove}}; one outcome per entity."""
        for entity, ops in alterations.items():
            if not (isinstance(entity, tuple) and entity and all(
                    isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) and (p[1] is None or isinstance(p[1], str))
                    for p in entity)):
                raise InputError(f"alter_client_quotas: {entity!r} is not ((entity type, name), ...)")
            if not isinstance(ops, dict) or not all(
                    isinstance(k, str) and (v is None or isinstance(v, (int, float)) and not isinstance(v, bool))
                    for k, v in ops.items()):
                raise InputError(f"alter_client_quotas: {ops!r} is not {{key: number or None}}")
        _, answer = await self._controller_request(
            ApiKey.ALTER_CLIENT_QUOTAS, wire.alter_client_quotas_request(alterations, validate_only),
            lambda a: [e["error_code"] for e in a["entries"]])
        return wire.alter_client_quotas_results(answer, list(alterations))
