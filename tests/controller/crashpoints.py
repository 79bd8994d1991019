"""Crash-point coverage of the stateful test: which op of which kind of flush a crash cut off.

A flush's ops carry the kinds they are written for (controller.core.flush, engine.Step.kinds;
the throttle removal the harness labels itself). A cut lands just before one op: that op and
everything after it in the flush never land. Its crash point is (kind, role) for each kind
the op serves, ``role`` naming the op by the znode it writes (:func:`role`; a record's also
by what it does to it): "cut start before its topic write" is the point where a start's record
exists and its topic znode does not. :data:`SHAPES` lists, per kind, its roles in flush order
(docs/DESIGN.md section 7.2 and controller/core/engine.py, "Flush kinds"); a role's index
there is its op index.

The points a run must cut are those it wrote (a point no schedule wrote cannot occur in this
run's code); a written point of a flush kind missing from SHAPES fails the run, so SHAPES and
the documented shapes follow the code.

    points = Points()
    points.flushed(frozenset({"start"}), op)      # every op written
    points.cut(frozenset({"start"}), op)          # the op a crash cut off
    total = Coverage(); total.add(points)         # per schedule, then summed over schedules
    print("\\n".join(total.table()))
"""

from __future__ import annotations

from collections import Counter

from controller.core import flush
from znodes import paths
from znodes.api import Create, Delete, SetData

_VERBS = {Create: "create", SetData: "write", Delete: "delete"}

# Per kind, its ops in flush order (the engine's "Flush kinds"; optional ops included). The
# steering rule draws its cut points from here; a pair written in a flush but missing here
# fails the run's coverage check (the shapes changed: update this, the engine's docstring and
# DESIGN.md 7.2).
SHAPES: dict[str, tuple[str, ...]] = {
    flush.START: ("records parent", "record create", "state", "topic", "requests"),
    flush.OVERRIDE: ("record write", "state", "topic"),
    flush.COMPLETE: ("state",),
    flush.FINISH: ("topic", "record delete", "records parent", "requests"),
    flush.ROLLBACK: ("state", "topic", "record write", "requests", "cancel znode"),
    flush.ROLLBACK_FINISH: ("topic", "requests", "record delete", "records parent"),
    flush.QUEUE: ("record write", "requests", "queue znode"),
    # The guard first (controller.core.throttle_removal step 3: /admin/reassign_partitions as read).
    flush.THROTTLE_REMOVAL: ("requests", "topic config", "config change", "broker config", "replicas removal", "rates removal"),
    # ReassignPartitions with an auto-removable throttle (controller.core.admin_requests): the
    # removal znodes gaining members, the configs (brokers, then topics, each with its change
    # notification), /admin/reassign_partitions last.
    flush.ADMIN: ("rates removal", "replicas removal", "broker config", "config change", "topic config", "requests"),
    # CreateTopics, CreatePartitions, DeleteTopics (controller.core.topic_requests): a new topic's
    # config and topic znodes, a topic znode with partitions added, the deletion markers' parent
    # and a marker (run by tests/controller/test_stateful_topics.py's machine).
    flush.TOPICS: ("topic config", "topic", "deletions parent", "deletion marker"),
    # The topics machine's too. A new partition's missing parents, then its state znode
    # (controller.core.topic_creation step 4, engine step 10: after a request's topic znode in
    # its flush, or after an election that finds a partition without a state).
    flush.CREATE: ("partitions parent", "partition parent", "state"),
    # A deleted topic's znodes, bottom-up, in the shell's own flush after the step's
    # (controller.core.topic_deletion step 5): per partition its state and znode, then the
    # partitions parent, the config, the topic znode, the marker last (a marker dropped alone:
    # only that).
    flush.DELETE: ("state", "partition parent", "partitions parent", "topic config", "topic", "deletion marker"),
    # A leader election asked for (controller.core.elections step 4): the state znode; the
    # ZooKeeper door's znode deleted last (step 5).
    flush.ELECT: ("state", "preferred znode"),
}
POINTS: tuple[tuple[str, str], ...] = tuple((kind, r) for kind, roles in SHAPES.items() for r in roles)

_NAMES = {
    paths.REASSIGN_PARTITIONS: "requests",
    paths.CANCEL_REASSIGNMENT: "cancel znode",
    paths.PREFERRED_REPLICA_ELECTION: "preferred znode",
    paths.REASSIGN_QUEUE: "queue znode",
    paths.THROTTLED_REPLICAS_REMOVAL: "replicas removal",
    paths.THROTTLED_RATES_REMOVAL: "rates removal",
    paths.DELETE_TOPICS: "deletions parent",
}
_KINDS = {
    paths.ZnodeKind.REASSIGNMENT: "record",
    paths.ZnodeKind.PARTITION_STATE: "state",
    paths.ZnodeKind.TOPIC: "topic",
    paths.ZnodeKind.TOPIC_CONFIG: "topic config",
    paths.ZnodeKind.BROKER_CONFIG: "broker config",
    paths.ZnodeKind.CONFIG_CHANGE: "config change",
    paths.ZnodeKind.ISR_CHANGE: "isr notification",
}


def role(op) -> str:
    """Which znode ``op`` writes ("topic", "requests", ...); for a record also how ("record
    create"). Other znodes go without the verb: one op written for several partitions (the
    requests znode, a records parent) may create, rewrite or delete it whatever each kind did."""
    name = _NAMES.get(op.path)
    if name is None:
        if paths.parent(op.path) == paths.REASSIGNMENTS:
            name = "records parent"
        elif paths.parent(op.path) == paths.DELETE_TOPICS:
            name = "deletion marker"
        elif paths.parent(op.path) == paths.LOG_DIR_EVENT_NOTIFICATION:
            name = "log-dir notification"
        elif op.path.startswith(paths.config_change_prefix()):
            name = "config change"  # a sequential create's path is only the prefix
        elif (parents := _partition_parent(op.path)) is not None:
            name = parents
        else:
            match = paths.classify(op.path)
            name = _KINDS.get(match.kind, match.kind.value) if match is not None else op.path
    return f"{name} {_VERBS[type(op)]}" if name == "record" else name


def _partition_parent(path: str) -> str | None:
    """"partitions parent" for /brokers/topics/T/partitions, "partition parent" for
    .../partitions/P (a state znode's parents: named alike for every topic), else None."""
    up = paths.parent(path)
    match = paths.classify(up)
    if match is not None and match.kind is paths.ZnodeKind.TOPIC and path == paths.partitions(match.topic):
        return "partitions parent"
    match = paths.classify(paths.parent(up))
    if match is not None and match.kind is paths.ZnodeKind.TOPIC and up == paths.partitions(match.topic):
        return "partition parent"
    return None


class Points:
    """One schedule's crash points: the (kind, role) pairs written, and those cut."""

    def __init__(self):
        self.written: set[tuple[str, str]] = set()
        self.cuts: set[tuple[str, str]] = set()

    def flushed(self, kinds, op) -> None:
        r = role(op)
        self.written.update((k, r) for k in kinds)

    def cut(self, kinds, op) -> None:
        r = role(op)
        self.cuts.update((k, r) for k in kinds)


class Coverage:
    """Crash points summed over schedules: per (kind, role), how many schedules wrote it and
    how many cut it."""

    def __init__(self):
        self.written: Counter = Counter()
        self.cut: Counter = Counter()

    def add(self, points: Points) -> None:
        self.written.update(points.written)
        self.cut.update(points.cuts)

    def merge(self, other: Coverage) -> None:
        self.written.update(other.written)
        self.cut.update(other.cut)

    def required(self) -> set[tuple[str, str]]:
        """The points a run must cut: every (kind, role) of a flush kind it wrote."""
        return {p for p in self.written if p[0] in flush.FLUSH_KINDS}

    def kinds_unwritten(self) -> list[str]:
        """Flush kinds no schedule wrote (a run that never wrote one cannot vouch for it)."""
        return [k for k in flush.FLUSH_KINDS if not any(p[0] == k for p in self.written)]

    def missing(self) -> list[tuple[str, str]]:
        return sorted(p for p in self.required() if self.cut[p] == 0)

    def unexpected(self) -> list[tuple[str, str]]:
        """Pairs of a flush kind written but not in SHAPES (or written unlabelled)."""
        return sorted(p for p in self.written if (p[0] in flush.FLUSH_KINDS and p not in POINTS) or p[0] == "unlabelled")

    def covered(self) -> int:
        return sum(1 for p in self.required() if self.cut[p] > 0)

    def table(self) -> list[str]:
        """One line per (kind, op index): schedules that cut the flush just before that op
        (after the ops above it landed); the bookkeeping kinds follow, without an index."""
        lines = [f"{'kind':<17}{'op':>3}  {'cut just before':<20}{'schedules':>10}{'wrote it':>10}"]
        for kind, roles in SHAPES.items():
            extra = sorted(r for k, r in set(self.written) | set(self.cut) if k == kind and r not in roles)
            for i, r in enumerate(roles + tuple(extra)):
                index = str(i) if i < len(roles) else "?"
                lines.append(f"{kind:<17}{index:>3}  {r:<20}{self.cut[(kind, r)]:>10}{self.written[(kind, r)]:>10}")
        others = sorted(p for p in set(self.written) | set(self.cut) if p[0] not in SHAPES)
        for kind, r in others:
            lines.append(f"{kind:<17}{'-':>3}  {r:<20}{self.cut[(kind, r)]:>10}{self.written[(kind, r)]:>10}")
        return lines

    def to_json(self) -> dict:
        return {"written": [[*k, v] for k, v in self.written.items()], "cut": [[*k, v] for k, v in self.cut.items()]}

    @classmethod
    def from_json(cls, data: dict) -> Coverage:
        out = cls()
        out.written.update({(k, r): v for k, r, v in data["written"]})
        out.cut.update({(k, r): v for k, r, v in data["cut"]})
        return out
