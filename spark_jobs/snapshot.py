"""Cluster snapshots: what the planner reads. `reassignd snapshot` (:mod:`reassignd.snapshot`)
writes them from ZooKeeper with :func:`read_cluster` and :func:`dump`.

    from spark_jobs import snapshot
    snap = snapshot.load("cluster.json")          # validated; SnapshotError says what is wrong
    snapshot.dump(snap, "cluster.msgpack")

The format follows the file's extension: ``.json`` (UTF-8 JSON) or ``.msgpack`` / ``.mpk``
(MessagePack, the same structure). Keys are written in sorted order, brokers by id, topics by
name and partitions by number, so the same cluster always gives the same bytes.

``--zk-config FILE`` gives the ZooKeeper identity and security, the keys the controller's
``--security-config``, ``reassignd users`` and ``reassignd sim`` read (``znodes.security``):
``zookeeper.auth.digest`` or ``zookeeper.sasl.jaas.config``, ``zookeeper.ssl.*``. Without it
the session is unauthenticated, which a ZooKeeper requiring authentication closes (exit 1,
saying so). The snapshot writes nothing, so ``zookeeper.set.acl`` changes nothing here.

Schema, version 1::

    {
      "version": 1,
      "cluster": {                       # where the snapshot came from (informational)
        "source": "127.0.0.1:2181/kafka" | null,
        "taken_at_ms": 1700000000000 | null,
        "warnings": ["broker 3: DescribeLogDirs failed: ..."]
      },
      "brokers": [
        {"id": 1, "host": "10.0.0.1" | null, "port": 9092 | null, "rack": "r1" | null,
         "alive": true,                  # alive: registered in /brokers/ids right now
         "disk_bytes": 1099511627776}    # optional: the broker's disk (DescribeLogDirs v4 total_bytes)
      ],
      "topics": [
        {"name": "orders", "partitions": [
          {"partition": 0,
           "replicas": [1, 2, 3],        # the assignment (the target while a reassignment runs)
           "leader": 1,                  # from the partition state znode; -1 when none/unknown
           "isr": [1, 2] | null,
           "reassigning": false,         # a reassignment of this partition is in progress
           "sizes": [1024, 1000, null] | null}   # bytes per replica, aligned with replicas
        ]}
      ]
    }

Rules the loader enforces (each violation is a :class:`SnapshotError` naming the element):
broker ids are unique non-negative ints; topic names are legal Kafka names and unique;
partition numbers are unique non-negative ints; a partition has at least one replica, no
broker twice, and every replica on a listed broker; ``leader`` is -1 or one of the replicas;
``sizes`` has one entry per replica, each a non-negative int or null. Brokers that hold
replicas but are not registered (down) appear with ``alive: false`` and no host.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import msgpack

from spark_jobs.errors import SnapshotError

SNAPSHOT_VERSION = 1
JSON_EXTENSIONS = (".json",)
MSGPACK_EXTENSIONS = (".msgpack", ".mpk")
MAX_INT32 = 2**31 - 1  # broker ids and partition numbers are Java ints in Kafka
MAX_TOPIC_NAME_LENGTH = 249  # Kafka's limit, leaves room in log directory names
_INT_ONLY = {int}
_SIZE_TYPES = {int, type(None)}
_TOPIC_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


# ---- format by extension ----------------------------------------------------------------------


# A replica's size is an int64 in Kafka's DescribeLogDirs (and a long in Spark's columns).
MAX_SIZE = 2**63 - 1

def format_for(path: str | os.PathLike) -> str:
    """"json" or "msgpack" from the file name; SnapshotError for anything else."""
    suffix = Path(path).suffix.lower()
    if suffix in JSON_EXTENSIONS:
        return "json"
    if suffix in MSGPACK_EXTENSIONS:
        return "msgpack"
    raise SnapshotError(str(path), f"unknown snapshot extension {suffix!r} (use .json, .msgpack or .mpk)")


def _sorted_keys(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _sorted_keys(obj[k]) for k in sorted(obj)}
    if isinstance(obj, list):
        return [_sorted_keys(v) for v in obj]
    return obj


def dumps(snapshot: dict, fmt: str) -> bytes:
    """Serialise a (validated) snapshot; deterministic bytes for the same snapshot."""
    ordered = _sorted_keys(snapshot)
    if fmt == "json":
        return (json.dumps(ordered, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")
    if fmt == "msgpack":
        return msgpack.packb(ordered, use_bin_type=True)
    raise ValueError(f"unknown snapshot format {fmt!r}")


def dump(snapshot: dict, path: str | os.PathLike) -> None:
    """Validate and write ``snapshot`` to ``path`` (format from the extension), atomically."""
    fmt = format_for(path)
    data = dumps(validate(snapshot, str(path)), fmt)
    tmp = Path(f"{path}.tmp{os.getpid()}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # the file it would replace stays as it was, and no stray
        raise


def loads(data: bytes, fmt: str, where: str = "<snapshot>") -> dict:
    """Parse and validate snapshot bytes."""
    if fmt == "json":
        try:
            obj = json.loads(data.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise SnapshotError(where, f"not UTF-8 text: {e}") from None
        except json.JSONDecodeError as e:
            raise SnapshotError(where, f"malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
        except RecursionError:
            raise SnapshotError(where, "malformed JSON: nested too deeply") from None
    elif fmt == "msgpack":
        try:
            obj = msgpack.unpackb(data, raw=False, strict_map_key=False)
        except (msgpack.ExtraData, ValueError, msgpack.UnpackException, TypeError) as e:
            raise SnapshotError(where, f"malformed msgpack: {e}") from None
    else:
        raise ValueError(f"unknown snapshot format {fmt!r}")
    return validate(obj, where)


def load(path: str | os.PathLike) -> dict:
    """Read and validate a snapshot file; SnapshotError with a clear reason otherwise."""
    where = str(path)
    fmt = format_for(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise SnapshotError(where, "no such file") from None
    except IsADirectoryError:
        raise SnapshotError(where, "is a directory, not a snapshot file") from None
    except OSError as e:
        raise SnapshotError(where, f"cannot read: {e.strerror or e}") from None
    return loads(data, fmt, where)


# ---- validation -------------------------------------------------------------------------------


def _is_int(v: Any) -> bool:
    return type(v) is int


def _type(v: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(v), type(v).__name__)


def _topic_name_problem(name: Any) -> str | None:
    if not isinstance(name, str):
        return f"topic name must be a string, got {_type(name)}"
    if not name or name in (".", ".."):
        return f"illegal topic name {name!r}"
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return f"topic name longer than {MAX_TOPIC_NAME_LENGTH} characters"
    if not set(name) <= _TOPIC_CHARS:
        return f"topic name {name!r} has a character other than ASCII alphanumerics, '.', '_' and '-'"
    return None


def validate(obj: Any, where: str = "<snapshot>") -> dict:
    """Check a parsed snapshot and return it normalised (defaults filled, sorted).

    Raises SnapshotError naming the first problem found; the input is never modified.
    """

    def fail(path: str, reason: str):
        raise SnapshotError(f"{where}: {path}" if path else where, reason)

    if not isinstance(obj, dict):
        fail("", f"a snapshot is a JSON object, got {_type(obj)}")
    if "version" not in obj:
        fail("", "missing 'version'")
    if obj["version"] != SNAPSHOT_VERSION or not _is_int(obj["version"]):
        fail("version", f"unsupported snapshot version {obj['version']!r} (this planner reads {SNAPSHOT_VERSION})")
    for key in ("brokers", "topics"):
        if key not in obj:
            fail("", f"missing {key!r}")
        if not isinstance(obj[key], list):
            fail(key, f"must be an array, got {_type(obj[key])}")

    cluster_in = obj.get("cluster") or {}
    if not isinstance(cluster_in, dict):
        fail("cluster", f"must be an object, got {_type(cluster_in)}")
    source = cluster_in.get("source")
    taken = cluster_in.get("taken_at_ms")
    warnings = cluster_in.get("warnings") or []
    if source is not None and not isinstance(source, str):
        fail("cluster.source", f"must be a string or null, got {_type(source)}")
    if taken is not None and not _is_int(taken):
        fail("cluster.taken_at_ms", f"must be an int or null, got {_type(taken)}")
    if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
        fail("cluster.warnings", "must be an array of strings")
    cluster = {"source": source, "taken_at_ms": taken, "warnings": list(warnings)}

    brokers: dict[int, dict] = {}
    for i, b in enumerate(obj["brokers"]):
        at = f"brokers[{i}]"
        if not isinstance(b, dict):
            fail(at, f"must be an object, got {_type(b)}")
        bid = b.get("id")
        if not _is_int(bid) or not 0 <= bid <= MAX_INT32:
            fail(f"{at}.id", f"broker id must be an int in [0, {MAX_INT32}], got {bid!r}")
        if bid in brokers:
            fail(f"{at}.id", f"duplicate broker {bid}")
        host, port, rack, alive = b.get("host"), b.get("port"), b.get("rack"), b.get("alive", True)
        if host is not None and not isinstance(host, str):
            fail(f"{at}.host", f"must be a string or null, got {_type(host)}")
        if port is not None and (not _is_int(port) or not 0 <= port <= 65535):
            fail(f"{at}.port", f"must be a port number or null, got {port!r}")
        if rack is not None and (not isinstance(rack, str) or not rack):
            fail(f"{at}.rack", f"must be a non-empty string or null, got {rack!r}")
        if not isinstance(alive, bool):
            fail(f"{at}.alive", f"must be a boolean, got {_type(alive)}")
        brokers[bid] = {"id": bid, "host": host, "port": port, "rack": rack, "alive": alive}
        disk = b.get("disk_bytes")
        if disk is not None:
            if not _is_int(disk) or disk <= 0:
                fail(f"{at}.disk_bytes", f"must be a positive int or null, got {disk!r}")
            brokers[bid]["disk_bytes"] = disk  # only when known: snapshots without it stay as they were

    topics: dict[str, dict] = {}
    known_set = set(brokers)
    for ti, t in enumerate(obj["topics"]):
        at = f"topics[{ti}]"
        if not isinstance(t, dict):
            fail(at, f"must be an object, got {_type(t)}")
        name = t.get("name")
        problem = _topic_name_problem(name)
        if problem:
            fail(f"{at}.name", problem)
        if name in topics:
            fail(f"{at}.name", f"duplicate topic {name!r}")
        parts_in = t.get("partitions")
        if not isinstance(parts_in, list):
            fail(f"{at}.partitions", f"must be an array, got {_type(parts_in)}")
        parts: dict[int, dict] = {}
        # The loop below runs once per partition (millions in big clusters): checks are
        # written with C-level set operations and error paths are only formatted on failure.
        for pi, p in enumerate(parts_in):

            def pfail(fld: str, reason: str):
                fail(f"{at}.partitions[{pi}]" + (f".{fld}" if fld else ""), reason)

            if type(p) is not dict:
                pfail("", f"must be an object, got {_type(p)}")
            num = p.get("partition")
            if type(num) is not int or not 0 <= num <= MAX_INT32:
                pfail("partition", f"partition number must be an int in [0, {MAX_INT32}], got {num!r}")
            if num in parts:
                pfail("partition", f"duplicate partition {name}-{num}")
            reps = p.get("replicas")
            if type(reps) is not list or not reps:
                pfail("replicas", f"must be a non-empty array of broker ids, got {reps!r}")
            if set(map(type, reps)) != _INT_ONLY:
                pfail("replicas", f"broker ids must be ints, got {reps!r}")
            rset = set(reps)
            if not rset <= known_set:
                bad = next(r for r in reps if r not in known_set)
                pfail("replicas", f"replica on unknown broker {bad} (not in 'brokers')")
            if len(rset) != len(reps):
                pfail("replicas", f"broker listed twice in {reps}")
            leader = p.get("leader", -1)
            if leader is None:
                leader = -1
            if type(leader) is not int or (leader != -1 and leader not in rset):
                pfail("leader", f"must be -1 or one of the replicas {reps}, got {leader!r}")
            isr = p.get("isr")
            if isr is not None:
                if type(isr) is not list or not set(map(type, isr)) <= _INT_ONLY or len(set(isr)) != len(isr):
                    pfail("isr", f"must be an array of distinct broker ids or null, got {isr!r}")
                isr = list(isr)
            reassigning = p.get("reassigning", False)
            if type(reassigning) is not bool:
                pfail("reassigning", f"must be a boolean, got {_type(reassigning)}")
            sizes = p.get("sizes")
            if sizes is not None:
                if type(sizes) is not list or len(sizes) != len(reps):
                    pfail("sizes", f"must have one entry per replica ({len(reps)}), got {sizes!r}")
                kinds = set(map(type, sizes))
                if not kinds <= _SIZE_TYPES or (int in kinds and not all(0 <= x <= MAX_SIZE for x in sizes if x is not None)):
                    pfail("sizes", f"sizes are ints from 0 to {MAX_SIZE} (int64, as Kafka's) or null, got {sizes!r}")
                sizes = None if int not in kinds else list(sizes)
            parts[num] = {
                "partition": num,
                "replicas": list(reps),
                "leader": leader,
                "isr": isr,
                "reassigning": reassigning,
                "sizes": sizes,
            }
        topics[name] = {"name": name, "partitions": [parts[k] for k in sorted(parts)]}

    return {
        "version": SNAPSHOT_VERSION,
        "cluster": cluster,
        "brokers": [brokers[k] for k in sorted(brokers)],
        "topics": [topics[k] for k in sorted(topics)],
    }


# ---- reading a live cluster ---------------------------------------------------------------------


async def read_cluster(hosts: str, *, sizes: bool = True, timeout: float = 10.0, security=None) -> dict:
    """Read brokers, topics, assignments and partition states from ZooKeeper at ``hosts``
    (``host:port[/chroot]``), and replica sizes through DescribeLogDirs when ``sizes``.
    ``security``: the session's :class:`znodes.security.ZkSecurity` (identity, TLS); None is
    an unauthenticated session.

    Returns a validated snapshot. Malformed znodes raise SnapshotError naming the znode.
    """
    from znodes import cluster_reader
    from znodes.api import ConnectionLossError, ZkError
    from znodes.security import ZkSecurity, auth_hint

    def refuse(bad: list) -> None:
        """The snapshot is all or nothing: the first znode the shared reader could not read."""
        if bad:
            raise SnapshotError(hosts, f"znode {bad[0]}")

    security = security or ZkSecurity()
    warnings: list[str] = []
    try:
        zk = await security.connect(hosts, timeout=timeout)
    except (ConnectionLossError, ZkError, ValueError) as e:
        raise SnapshotError(hosts, f"cannot read the cluster: {e}{auth_hint(e, security)}") from None
    try:
        # Whole registrations, not the controller's view of them: a broker without a PLAINTEXT
        # listener is still in the snapshot (the controller needs one; the planner does not).
        registrations, bad = await cluster_reader.registrations(zk)
        refuse(bad)
        names, bad = await cluster_reader.topic_names(zk)
        refuse(bad)
        topic_reads, bad = await cluster_reader.topics(zk, names)
        refuse(bad)
        assignments = {t: read.partitions for t, read in topic_reads.items() if read is not None}
        keys = [(t, p) for t in sorted(assignments) for p in sorted(assignments[t])]
        states, bad = await cluster_reader.partition_states(zk, keys)
        refuse(bad)
    except ZkError as e:
        raise SnapshotError(hosts, f"reading the cluster: {e!r}{auth_hint(e, security)}") from None
    finally:
        await zk.close()

    brokers: dict[int, dict] = {}
    endpoints: dict[int, tuple[str, int]] = {}
    for bid, reg in registrations.items():
        host, port = reg.host, reg.port if reg.port >= 0 else None
        eps = reg.parsed_endpoints()
        plain = [e for e in eps if e.security_protocol == "PLAINTEXT"] or eps
        if plain:
            host, port = plain[0].host, plain[0].port
            endpoints[bid] = (host, port)
        brokers[bid] = {"id": bid, "host": host, "port": port, "rack": reg.rack, "alive": True}

    log_sizes: dict[int, dict[tuple[str, int], int]] = {}
    if sizes and endpoints:
        from spark_jobs.logdirs import query_sizes

        log_sizes, size_warnings = await query_sizes(endpoints, timeout=timeout)
        warnings.extend(size_warnings)

    for b, found in log_sizes.items():
        disk = getattr(found, "disk_bytes", None)
        if disk is not None and b in brokers:
            brokers[b]["disk_bytes"] = disk
    topics_out: dict[str, list[dict]] = {t: [] for t in assignments}
    for t, p in keys:
        state = states.get((t, p))
        leader, isr = (-1, None) if state is None else (state.leader, list(state.isr))
        reps = list(assignments[t][p].replicas)
        rem = list(assignments[t][p].removing)
        target = [r for r in reps if r not in rem]
        if leader not in target:
            leader = -1
        for r in reps:
            if r not in brokers:
                brokers[r] = {"id": r, "host": None, "port": None, "rack": None, "alive": False}
        szs = [log_sizes.get(r, {}).get((t, p)) for r in target] if log_sizes else None
        topics_out[t].append(
            {
                "partition": p,
                "replicas": target,
                "leader": leader,
                "isr": isr,
                "reassigning": bool(rem) or len(target) != len(reps),
                "sizes": szs,
            }
        )
    snap = {
        "version": SNAPSHOT_VERSION,
        "cluster": {"source": hosts, "taken_at_ms": int(time.time() * 1000), "warnings": warnings},
        "brokers": list(brokers.values()),
        "topics": [{"name": t, "partitions": ps} for t, ps in topics_out.items()],
    }
    return validate(snap, hosts)
