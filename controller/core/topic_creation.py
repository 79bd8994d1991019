"""Topic creation (KIP-4 CreateTopics), as Kafka's ZooKeeper-mode admin manager and controller
do it. Pure: no I/O. Two halves, as in Kafka:

* the request half (Kafka's ``ZkAdminManager.createTopics`` + ``AdminZkClient``):
  :func:`plan_topics` checks each topic of a request and places its replicas
  (controller.core.placement); :func:`creation_ops` is what the admin handler writes for one
  accepted topic, in ONE fenced multi (so a topic is either wholly requested or not at all);
* the controller half (Kafka's ``onNewPartitionCreation``, NewPartition -> OnlinePartition):
  :func:`create_partition` (a function of the engine's working set, with
  :func:`new_partition_state` and :func:`state_ops`), which the engine runs for every known
  partition that has no state znode (controller.core.engine, step 10), whoever wrote its topic
  znode and whichever controller was active then.

Steps (docs/DESIGN.md section 4.4):

 1. Check, per topic, in request order (Kafka's errors and order): a name given twice ->
    INVALID_REQUEST for each; a topic that exists (not being deleted) -> TOPIC_ALREADY_EXISTS;
    both an assignment and a partition count or replication factor -> INVALID_REQUEST;
    a null config value -> INVALID_REQUEST; an illegal name -> INVALID_TOPIC_EXCEPTION; a name
    marked for deletion, or created earlier in the request -> TOPIC_ALREADY_EXISTS; a name equal to an existing
    one once '.' and '_' are taken alike -> INVALID_TOPIC_EXCEPTION; a partition count < 1 ->
    INVALID_PARTITIONS; a replication factor < 1 or above the live brokers ->
    INVALID_REPLICATION_FACTOR; an assignment whose partitions are not 0..n-1, whose lists are
    empty, differ in length, repeat a broker or name an unregistered one ->
    INVALID_REPLICA_ASSIGNMENT; a config key that is not one of Kafka's topic configs, a bad
    value, or values that conflict (protocol.config_changes) -> INVALID_CONFIG; last,
    the topic policy (controller.core.topic_policy) -> POLICY_VIOLATION.
    -1 for the count or the factor means the default (KIP-464).
 2. Place (no assignment given): controller.core.placement over the live brokers, counting
    every replica of the cluster and of the topics accepted before it in the request.
 3. Write (the admin handler, unless validate_only): ``/config/topics/T`` (the configs) and
    ``/brokers/topics/T`` (the assignment, no adding/removing; version 3 with the topic id the
    shell drew, KIP-516, as Kafka 2.8+'s AdminZkClient writes it) in one fenced multi. That is
    the request, durable; everything after it is the controller's and survives any crash.
 4. The controller reads the new topic znode (its children watch) and, for each partition with
    no state znode (read in the full-metadata chunks it already sends for new partitions, after
    an election, and to a broker that registers), in one fenced flush creates the missing
    ``/brokers/topics/T/partitions`` and ``.../partitions/P`` parents and the state znode:
    leader = the first live replica, ISR = the live replicas, leader epoch 0. Then LeaderAndIsr
    (``is_new``) to the live replicas, UpdateMetadata to every live broker. A partition none of
    whose replicas is live gets nothing (Kafka: it stays NewPartition) until one registers.
    4a. A new partition with a replica on a controller instance (a Kafka broker's auto-creation
    placed it over UpdateMetadata's live brokers, which list the instances) is placed again
    over the registered brokers first, its topic znode rewritten in the same flush, before the
    states (:func:`place_off_controllers`, engine step 10a).
 5. Answer: with ``timeout_ms`` > 0 once every partition of the topic passed step 4 (or
    REQUEST_TIMED_OUT, the topic still being created), else right after step 3.

Worked table, topic "t" with 2 partitions, RF 2, live brokers 1, 2, 3 (broker 3 down for p1):

    step                                        /brokers/topics/t   state p0        state p1
    3 multi: config, topic znode                 0:[1,2] 1:[3,1]    -               -
      (crash here: step 4 runs at the next election - its full metadata reads no states)
    4 p0: parents + state; LeaderAndIsr to 1,2   0:[1,2] 1:[3,1]    1 [1,2] e0      -
      p1 with 3 down: parents + state, leader 1  0:[1,2] 1:[3,1]    1 [1,2] e0      1 [1] e0
      UpdateMetadata to every live broker
    5 answer NONE (timeout > 0: after step 4)

    plans = plan_topics([TopicRequest("t", 2, 2)], CreationView(...))   # [Planned(...)]
    ops = creation_ops(plans[0])                                         # config + topic znode
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from controller.core import placement
from protocol.config_changes import TOPIC_CONFIGS, check, check_topic
from controller.core.flush import CREATE, writing
from controller.core.topic_policy import NO_POLICY, TopicPolicy
from controller.core.working_set import WorkingSet
from protocol.errors import ErrorCode
from znodes import models, paths
from znodes.api import Create, Op, SetData
from znodes.payloads import encode_state, encode_topic
from znodes.values import Assignment, LeaderIsr, TopicPartition

# Kafka's broker defaults for -1 (num.partitions, default.replication.factor).
DEFAULT_PARTITIONS = 1
DEFAULT_REPLICATION_FACTOR = 1
MAX_PARTITIONS = 100_000  # the simulation's own limit (sim.topics): beyond it is a typo


@dataclass(frozen=True)
class TopicRequest:
    """One topic of a CreateTopics request, as sent (-1: the default), and the topic id the
    shell drew for it (KIP-516; None: none, the topic znode is written as version 2)."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: tuple[tuple[int, tuple[int, ...]], ...] = ()  # (partition, brokers) as sent
    configs: tuple[tuple[str, str | None], ...] = ()
    topic_id: str | None = None


@dataclass(frozen=True)
class CreationView:
    """The cluster as a request sees it: existing topic names (those marked for deletion
    included), live brokers with their racks, replicas and preferred leaders per broker."""

    topics: frozenset[str]
    deleting: frozenset[str] = frozenset()
    brokers: Mapping[int, str | None] = field(default_factory=dict)
    replica_counts: Mapping[int, int] = field(default_factory=dict)
    leader_counts: Mapping[int, int] = field(default_factory=dict)
    policy: TopicPolicy = NO_POLICY  # controller.core.topic_policy, checked last


@dataclass(frozen=True)
class Planned:
    name: str
    assignment: dict[int, tuple[int, ...]]
    configs: dict[str, str]
    topic_id: str | None = None  # the request's, written in the topic znode (version 3)

    @property
    def replication_factor(self) -> int:
        return len(self.assignment[0])


@dataclass(frozen=True)
class Refused:
    name: str
    code: ErrorCode
    message: str


def _collides(name: str) -> str:
    return name.replace(".", "_")


def plan_topics(requests: list[TopicRequest], view: CreationView) -> list[Planned | Refused]:
    """Steps 1 and 2 for a whole request, in order; see the module docstring."""
    seen: dict[str, int] = {}
    for r in requests:
        seen[r.name] = seen.get(r.name, 0) + 1
    taken = set(view.topics)
    collisions = {_collides(t): t for t in view.topics}
    counts = dict(view.replica_counts)
    leaders = dict(view.leader_counts)
    out: list[Planned | Refused] = []
    for r in requests:
        if seen[r.name] > 1:
            out.append(Refused(r.name, ErrorCode.INVALID_REQUEST, f"topic {r.name!r} appears more than once in the request"))
            continue
        result = _plan_one(r, view, taken, collisions, counts, leaders)
        out.append(result)
        if isinstance(result, Planned):
            # Later topics of the request see this one (name and load).
            taken.add(r.name)
            collisions[_collides(r.name)] = r.name
            for rs in result.assignment.values():
                for b in rs:
                    counts[b] = counts.get(b, 0) + 1
                leaders[rs[0]] = leaders.get(rs[0], 0) + 1
    return out


def _plan_one(r: TopicRequest, view: CreationView, taken, collisions, counts, leaders) -> Planned | Refused:
    def no(code: ErrorCode, message: str) -> Refused:
        return Refused(r.name, code, message)

    # Kafka's ZkAdminManager asks its metadata cache first (a topic being deleted is no longer
    # in it), before the request's own checks.
    if r.name in taken and r.name not in view.deleting:
        return no(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{r.name}' already exists.")
    if r.assignments and (r.num_partitions != -1 or r.replication_factor != -1):
        return no(ErrorCode.INVALID_REQUEST, "Both numPartitions or replicationFactor and replicasAssignments were set. "
                  "Both cannot be used at the same time.")
    nulls = [k for k, v in r.configs if v is None]
    if nulls:
        return no(ErrorCode.INVALID_REQUEST, f"null value not supported for topic configs: {', '.join(nulls)}")
    try:
        paths.validate_topic_name(r.name)
    except ValueError as e:
        return no(ErrorCode.INVALID_TOPIC_EXCEPTION, str(e))
    if r.name in view.deleting:
        return no(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{r.name}' is marked for deletion.")
    if r.name in taken:
        return no(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{r.name}' already exists.")
    other = collisions.get(_collides(r.name))
    if other is not None:
        # Kafka's words; '.' and '_' are alike in its metric names.
        return no(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic '{r.name}' collides with existing topics: {other}")
    if r.assignments:
        assignment, problem = _explicit(r.assignments, view)
        if problem is not None:
            return no(ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem)
    else:
        n = DEFAULT_PARTITIONS if r.num_partitions == -1 else r.num_partitions
        rf = DEFAULT_REPLICATION_FACTOR if r.replication_factor == -1 else r.replication_factor
        if n < 1:
            return no(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
        if n > MAX_PARTITIONS:
            return no(ErrorCode.INVALID_PARTITIONS, f"more than {MAX_PARTITIONS} partitions in one topic")
        if rf < 1:
            return no(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
        if rf > len(view.brokers):
            return no(ErrorCode.INVALID_REPLICATION_FACTOR,
                      f"Replication factor: {rf} larger than available brokers: {len(view.brokers)}.")
        assignment = None  # placed once every check passed
    configs: dict[str, str] = {}
    for key, value in r.configs:
        problem = check(key, value, TOPIC_CONFIGS)  # protocol.config_changes
        if problem is not None:
            return no(*problem)
        configs[key] = value
    problem = check_topic(configs)  # across keys: min/max compaction lag, remote storage
    if problem is not None:
        return no(*problem)
    # Last, as Kafka runs create.topic.policy.class.name after its own checks.
    violation = view.policy.check_new_topic(r.name, n if assignment is None else len(assignment),
                                            rf if assignment is None else len(assignment[0]))
    if violation is not None:
        return no(ErrorCode.POLICY_VIOLATION, violation)
    if assignment is None:
        assignment = dict(enumerate(placement.place(view.brokers, n, rf, counts, leaders)))
    return Planned(r.name, assignment, configs, r.topic_id)


def _explicit(given, view: CreationView) -> tuple[dict[int, tuple[int, ...]], str | None]:
    """An explicit assignment and the first thing wrong with it (Kafka's checks), or None."""
    assignment: dict[int, tuple[int, ...]] = {}
    for p, brokers in given:
        if p in assignment:
            return {}, f"partition {p} is given more than once"
        assignment[p] = tuple(brokers)
    if sorted(assignment) != list(range(len(assignment))):
        return {}, "partitions should be a consecutive 0-based integer sequence"
    sizes = {len(rs) for rs in assignment.values()}
    if 0 in sizes:
        return {}, "every partition needs at least one replica"
    if len(sizes) > 1:
        return {}, "All partitions should have the same number of replicas"
    for p, rs in sorted(assignment.items()):
        if len(set(rs)) != len(rs):
            return {}, f"Duplicate replica assignment found: partition {p} {list(rs)}"
        unknown = sorted(set(rs) - set(view.brokers))
        if unknown:
            return {}, f"unknown broker(s) in replica assignment for partition {p}: {unknown}"
    return assignment, None


def creation_ops(plan: Planned, config_exists: bool = False) -> list[Op]:
    """Step 3: what the admin handler writes for an accepted topic (one multi, fenced). A
    leftover ``/config/topics/T`` (a topic deleted before, its config kept) is rewritten; a
    topic with configs gets their ``/config/changes`` notification; a topic with an id gets a
    version 3 topic znode carrying it (Kafka 2.8+)."""
    config = models.EntityConfig(config=dict(plan.configs)).to_bytes()
    parts = {p: Assignment(rs) for p, rs in sorted(plan.assignment.items())}
    first = SetData(paths.topic_config(plan.name), config) if config_exists else Create(paths.topic_config(plan.name), config)
    ops = [first, Create(paths.topic(plan.name), encode_topic(parts, plan.topic_id))]
    if plan.configs:
        # The config's change notification, as every config write here: brokers (the simulated
        # ones too) learn topic configs from /config/changes.
        note = json.dumps({"version": 2, "entity_path": f"topics/{plan.name}"}, separators=(",", ":")).encode()
        ops.append(Create(paths.config_change_prefix(), note, sequential=True))
    return ops


def new_partition_state(replicas: tuple[int, ...], live, controller_epoch: int) -> LeaderIsr | None:
    """Step 4 (Kafka's NewPartition -> OnlinePartition): leader the first live replica, ISR
    the live replicas, leader epoch 0; None when no replica is live."""
    isr = tuple(b for b in replicas if b in live)
    if not isr:
        return None
    return LeaderIsr(leader=isr[0], leader_epoch=0, controller_epoch=controller_epoch, isr=isr, zk_version=0)


def state_ops(tp: TopicPartition, state: LeaderIsr, missing_parents: frozenset[str]) -> list[Op]:
    """Step 4's writes for one partition: its missing parents (topic's first), then the state."""
    ops: list[Op] = []
    for path in (paths.partitions(tp[0]), paths.partition(*tp)):
        if path in missing_parents:
            ops.append(Create(path))
    ops.append(Create(paths.partition_state(*tp), encode_state(state)))
    return ops


# ---- the engine's step 10 ---------------------------------------------------------------------


def place_off_controllers(ws: WorkingSet, topic: str) -> dict[int, Assignment]:
    """Step 10a: new partitions of ``topic`` (no state znode) with a replica on a controller
    instance that is no registered broker, placed again over the registered brokers
    (controller.core.placement, as this controller's CreateTopics places); {} when none.

    Why: the controller instances are among the live brokers of UpdateMetadata (a Kafka 3.x
    broker finds the controller there, engine step 8), and a Kafka broker auto-creating a topic
    (``auto.create.topics.enable``, its default) places the replicas over exactly that list
    (ZkAdminManager.createTopics: ``metadataCache.getAliveBrokers``), so it may name an
    instance, which never hosts a replica: the partition would be short of a replica forever,
    or leaderless with one replica. Such a replica never existed, so nothing moves: the topic
    znode is rewritten with the new placement before the states are created, in the same flush
    (``ws.early``: a cut flush leaves the topic either as it was, and the next controller
    places it again, or placed, and it creates the states as for any new partition). With
    fewer registered brokers than the replication factor, as many as there are; with none, the
    partition waits as any partition with no live replica does. Partitions with a state are
    left as they are (their replicas are a reassignment's business).

        topic "t" auto-created by broker 1, live brokers 1, 2, 3, controller instance 101:
        /brokers/topics/t  0:[101,1] 1:[2,101]   ->  0:[3,2] 1:[1,3] (counts, racks)  then states
    """
    cannot = set(ws.controller_nodes) - set(ws.brokers)
    wrong = {p for p in ws.topic_partitions.get(topic, ())
             if (topic, p) not in ws.states and cannot & set(ws.assignments[(topic, p)].replicas)}
    racks = {b: info.rack for b, info in ws.brokers.items()}
    if not wrong or not racks:
        return {}
    kept = [a.replicas for tp, a in ws.assignments.items() if tp[0] != topic or tp[1] not in wrong]
    by_factor: dict[int, list[int]] = {}
    for p in sorted(wrong):
        by_factor.setdefault(min(len(ws.assignments[(topic, p)].replicas), len(racks)), []).append(p)
    placed: dict[int, Assignment] = {}
    for factor, ps in sorted(by_factor.items()):
        counts, leaders = placement.cluster_counts([*kept, *(a.replicas for a in placed.values())])
        for p, replicas in zip(ps, placement.place(racks, len(ps), factor, counts, leaders)):
            placed[p] = Assignment(replicas)
    ws.warnings.append(
        f"topic {topic}: partitions {sorted(placed)} named controller instance(s) {sorted(cannot)} as replicas "
        "(a broker's auto-creation places over UpdateMetadata's live brokers, which list them): placed again "
        f"over the registered brokers as {[list(placed[p].replicas) for p in sorted(placed)]}")
    for p, assignment in placed.items():
        ws.assignments[(topic, p)] = assignment
    version = ws.topic_versions[topic]
    parts = {p: ws.assignments[(topic, p)] for p in ws.topic_partitions[topic]}
    ws.early.append(SetData(paths.topic(topic), encode_topic(parts, ws.topic_ids.get(topic)), version))
    ws.topic_versions[topic] = version + 1
    return placed


@writing(CREATE)
def create_partition(ws: WorkingSet, tp: TopicPartition, assignment: Assignment, missing_parents: frozenset[str]) -> None:
    """Step 10 (controller.core.topic_creation step 4): a partition without a state znode
    gets one - leader the first live replica, ISR the live replicas, leader epoch 0 - with
    its missing parents; LeaderAndIsr (is_new) to the live replicas, UpdateMetadata to
    every live broker. With no replica live it waits (asked again when one registers)."""
    if tp[0] in ws.deleting:
        return  # being deleted (a deletion cut short may have removed its state already)
    if any(b in ws.controller_nodes and b not in ws.brokers for b in assignment.replicas):
        place_off_controllers(ws, tp[0])  # step 10a
        assignment = ws.assignments[tp]
    # Kafka's isReplicaOnline: not a broker shutting down (controller.core.controlled_shutdown)
    state = new_partition_state(assignment.replicas, ws.eligible_for(tp), ws.base.epoch)
    if state is None:
        ws.log.append(f"new partition {tp[0]}-{tp[1]} has no live replica in {list(assignment.replicas)}: "
                      "it gets a leader when one registers")
        return
    for op in state_ops(tp, state, missing_parents - ws.parents_created):
        ws.early.append(op)
        if op.path != paths.partition_state(*tp):
            ws.parents_created.add(op.path)
    ws.states[tp] = state
    ws.unhosted.pop(tp)  # told below with every live replica
    ws.created.append(tp)
    for b in assignment.replicas:
        if b in ws.brokers:
            ws.box.leader_and_isr(b, tp, state, replicas=assignment.replicas, adding=(), removing=(), is_new=True)
    ws.box.update_metadata(tp, state, assignment.replicas)


# ---- CreatePartitions (KIP-195) -------------------------------------------------------------------


@dataclass(frozen=True)
class PartitionsRequest:
    """One topic of a CreatePartitions request: the new total count, and the new partitions'
    replicas (None: placed automatically)."""

    name: str
    count: int
    assignments: tuple[tuple[int, ...], ...] | None = None


def plan_partitions(
    r: PartitionsRequest,
    current: Mapping[int, tuple[int, ...]] | None,
    view: CreationView,
    *,
    moving: bool,
) -> dict[int, tuple[int, ...]] | Refused:
    """The new partitions (index -> replicas) for ``r``, or Kafka's error: ``current`` is the
    topic's assignment (None: no such topic), ``moving``: a partition of it is being reassigned.

    Kafka's checks in Kafka's order, with Kafka's messages (operators and tools match on them):
    KafkaApis.handleCreatePartitionsRequest (queued for deletion), ZkAdminManager
    .createPartitions (a reassignment found while the assignment is read, no such topic, not an
    increase, unknown brokers, the number of assignments), AdminZkClient
    .validateReplicaAssignment (per new partition: an empty list, a broker twice; then every
    replication factor against partition 0's), AdminUtils (too few brokers to place). Our own
    limits (MAX_PARTITIONS, the topic policy) come after the count, as Kafka's policies do."""

    def no(code: ErrorCode, message: str) -> Refused:
        return Refused(r.name, code, message)

    if r.name in view.deleting:
        return no(ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is queued for deletion.")
    if current is None:
        return no(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{r.name}' does not exist.")
    if moving:
        return no(ErrorCode.REASSIGNMENT_IN_PROGRESS, f"A partition reassignment is in progress for the topic '{r.name}'.")
    have = len(current)
    if r.count < have:
        return no(ErrorCode.INVALID_PARTITIONS, f"Topic currently has {have} partitions, which is higher than the requested {r.count}.")
    if r.count == have:
        return no(ErrorCode.INVALID_PARTITIONS, f"Topic already has {have} partitions.")
    if r.count > MAX_PARTITIONS:
        return no(ErrorCode.INVALID_PARTITIONS, f"more than {MAX_PARTITIONS} partitions in one topic")
    violation = view.policy.check_partition_count(r.name, r.count)  # controller.core.topic_policy, rule 3
    if violation is not None:
        return no(ErrorCode.POLICY_VIOLATION, violation)
    rf = len(current[min(current)])
    new = r.count - have
    if r.assignments is not None:
        bad = ErrorCode.INVALID_REPLICA_ASSIGNMENT
        unknown = sorted({b for rs in r.assignments for b in rs} - set(view.brokers))
        if unknown:
            return no(bad, f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}.")
        if len(r.assignments) != new:
            return no(bad, f"Increasing the number of partitions by {new} but {len(r.assignments)} assignments provided.")
        out = {have + i: tuple(rs) for i, rs in enumerate(r.assignments)}
        for p, rs in out.items():
            if not rs:
                return no(bad, f"Cannot have replication factor of 0 for partition id {p}.")
            if len(set(rs)) != len(rs):
                return no(bad, f"Duplicate brokers not allowed in replica assignment: {', '.join(map(str, rs))} for partition id {p}.")
        odd = [(p, len(rs)) for p, rs in out.items() if len(rs) != rf]
        if odd:
            return no(bad, f"Inconsistent replication factor between partitions, partition 0 has {rf} while partitions "
                           f"[{', '.join(str(p) for p, _ in odd)}] have replication factors [{', '.join(str(n) for _, n in odd)}], "
                           "respectively.")
        return out
    if rf > len(view.brokers):
        return no(ErrorCode.INVALID_REPLICATION_FACTOR, f"Replication factor: {rf} larger than available brokers: {len(view.brokers)}.")
    placed = placement.place(view.brokers, new, rf, view.replica_counts, view.leader_counts)
    return {have + i: rs for i, rs in enumerate(placed)}
