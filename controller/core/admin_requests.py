"""Admin requests that change what the controller runs, taken as engine events: one writer.

ReassignPartitions (KIP-179, v0 and v1) and AlterPartitionReassignments (KIP-455) arrive as
controller.core.events.ReassignRequested, AlterInterbrokerThrottledRates and
...Replicas (KIP-179) as ThrottleRequested. The shell decodes and authorizes the request, reads
the throttle znodes it will change (ThrottlesRead, in the step that takes it), and waits for
``Step.answers``: each request is answered once the flush carrying its writes has landed, or
not at all (NOT_CONTROLLER) when it did not. Nothing here does I/O.

ReassignRequested, step by step (KIP-179's six steps, KIP-455's checks):

 1. Validate each target against the state the engine holds: unknown topic (or one being
    deleted) or partition -> UNKNOWN_TOPIC_OR_PARTITION; empty, duplicate, negative or
    unregistered brokers -> INVALID_REPLICA_ASSIGNMENT (controller.core.validation: Kafka's
    checks and words, the ones engine step 1 uses for a tool's entry); KIP-860's flag off and
    another replica count than the partition's (ORS's while it moves) ->
    INVALID_REPLICATION_FACTOR.
 2. v0 (``create_only``): while ``/admin/reassign_partitions`` exists, or an earlier request of
    the step created it, every valid target -> REASSIGNMENT_IN_PROGRESS.
 3. ``validate_only``: answer here, nothing written.
 4. Throttle (KIP-179, Kafka's ReassignPartitionsCommand): the partitions that move get
    ``leader.replication.throttled.replicas`` P:B for each original replica and
    ``follower.replication.throttled.replicas`` P:B for each replica that copies; the brokers
    involved both rates. With ``remove_throttle`` the topics and brokers join the removal znodes
    (written before the configs), each newly listed one with its own throttle keys as they are
    now (its ``restore`` entry: the removal puts them back); without, they leave them (after). A malformed config or
    removal znode fails the whole request with INVALID_CONFIG, nothing of it written.
 5. The targets become entries of ``/admin/reassign_partitions`` with their
    ``original_replicas`` (an entry already there keeps its recorded original), and engine
    step 1 takes the merged list as it takes a read of the znode (reassignment.on_requests):
    new moves, in-place overrides of replicating ones (4b), targets queued behind completions.
 6. Answer per partition (``Step.answers``).

Flush order (docs/DESIGN.md 4.10): removal znodes that gain members, throttle configs (each with
its ``/config/changes`` notification), removal znodes' final contents - all before the step's
moves start - then ``/admin/reassign_partitions`` last, in the shared tail. Any prefix leaves
every auto-removable throttle listed and no move unthrottled; a conflict on the shared tail
(a tool wrote the znode) is answered "retry" and the shell takes the request again.

Worked example: a v1 request, throttle 1000 with ``remove_throttle``, t-0 from (1,2) to (3,2),
t-1 to (9) with 9 unregistered, t-2 to its own replicas:

    partition  result                      writes (in flush order)
    t-0        NONE                         removal znodes + t, + 1,2,3; /config/topics/t leader
    t-1        INVALID_REPLICA_ASSIGNMENT   0:1,0:2 follower 0:3; /config/brokers/1..3 rates;
    t-2        NONE (nothing to move)       /admin/reassign_partitions + t-0, t-2 (t-2 dropped
                                            as done by step 1 in the same step)

ThrottleRequested (KIP-179's five steps; ``kind`` "brokers" for rates, "topics" for replicas):

 1. Validate: a rate <= 0 -> INVALID_THROTTLE; an unregistered broker -> UNKNOWN_MEMBER_ID; an
    unknown topic or partition -> UNKNOWN_TOPIC_OR_PARTITION; a broker named twice for one
    partition -> INVALID_REQUEST. ``validate_only`` stops here.
 With ``remove_throttle`` (the request replaces the auto-removable set of its kind):
 2. the request's entities join the removal znode (first write), with restore entries as in
    ReassignRequested step 4;
 3. entities listed before that the request leaves out lose their throttle configs (their
    restore entries put back);
 4. the request's configs are set (replicas: a partition's pairs are replaced in both lists);
 5. the removal znode lists exactly the request's entities (last write).
 Without ``remove_throttle``: step 4, then the entities leave the removal znode.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.core import reassignment
from controller.core.events import RequestsRead, ReassignRequested, ThrottleRequested, ThrottlesRead
from controller.core.flush import ADMIN, writing
from controller.core.throttle_writes import (
    ThrottleWriteError,
    add_replicas,
    removal_kind,
    restore_keys,
    set_keys,
)
from controller.core.validation import replicas_problem
from controller.core.working_set import WorkingSet
from protocol.errors import ErrorCode
from znodes import paths
from znodes.throttle_keys import FOLLOWER_RATE, LEADER_RATE, RATE_KEYS, REPLICA_KEYS
from znodes.values import Assignment, Request, TopicPartition

Result = tuple[ErrorCode, str | None]
OK: Result = (ErrorCode.NONE, None)

IN_PROGRESS = "a reassignment is running (/admin/reassign_partitions exists); use version 1 to add to it"


@dataclass(frozen=True)
class Answer:
    """What the shell answers a request with once the step's writes landed: per-entity
    ``results``, or ``error`` for the whole request. ``retry``: the request needed a znode
    the shell did not read for it; take it again (nothing of it was decided)."""

    token: object
    results: dict | None = None
    error: Result | None = None
    retry: bool = False


def original_replicas(assignment: Assignment) -> tuple[int, ...]:
    """ORS: the replicas before any move in progress (the topic znode's RS minus AR)."""
    return assignment.original


def partition_problem(ws: WorkingSet, tp: TopicPartition) -> Result | None:
    topic, partition = tp
    if topic not in ws.topic_partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic {topic!r}"
    if topic in ws.deleting:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic!r} is being deleted"
    if tp not in ws.assignments:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic!r} has no partition {partition}"
    return None


def target_problem(ws: WorkingSet, tp: TopicPartition, replicas) -> Result | None:
    """Why ``replicas`` cannot be the partition's target, or None (Kafka's checks)."""
    problem = partition_problem(ws, tp)
    if problem is not None:
        return problem
    reason = replicas_problem(replicas, ws.brokers, ws.assignments[tp].original)
    return None if reason is None else (ErrorCode.INVALID_REPLICA_ASSIGNMENT, reason)


def throttle_plan(ws: WorkingSet, targets: dict[TopicPartition, tuple[int, ...]]):
    """(leader pairs per topic, follower pairs per topic, brokers involved) for the moves:
    the existing replicas (ORS) are leader-throttled, the replicas that must copy (the target's
    new ones, and those of a move in flight) follower-throttled; the rates go on every broker
    that hosts or will host a replica."""
    leaders: dict[str, set] = {}
    followers: dict[str, set] = {}
    brokers: set[int] = set()
    for (topic, p), target in targets.items():
        assignment = ws.assignments[(topic, p)]
        existing = original_replicas(assignment)  # a move in flight: its ORS still leads
        lead = leaders.setdefault(topic, set())
        follow = followers.setdefault(topic, set())
        lead.update((p, b) for b in existing)
        follow.update((p, b) for b in target if b not in existing)
        follow.update((p, b) for b in assignment.adding)
        brokers.update(assignment.replicas)
        brokers.update(target)
    return leaders, followers, brokers


def throttle_entities(state_assignments, targets) -> tuple[set[str], set[int]]:
    """The topics and brokers whose throttle znodes a reassignment of ``targets`` may change:
    what the shell reads for it (a superset of throttle_plan's)."""
    topics: set[str] = set()
    brokers: set[int] = set()
    for tp, target in targets:
        topics.add(tp[0])
        brokers.update(target)
        assignment = state_assignments.get(tp)
        if assignment is not None:
            brokers.update(assignment.replicas)
    return topics, brokers


@writing(ADMIN)
def on_reassign(ws: WorkingSet, event: ReassignRequested) -> None:
    results: dict[TopicPartition, Result] = {}
    valid: dict[TopicPartition, tuple[int, ...]] = {}
    for tp, replicas in event.targets:  # step 1
        replicas = tuple(replicas)
        problem = target_problem(ws, tp, replicas)
        if problem is None and event.keep_replication_factor:
            current = len(original_replicas(ws.assignments[tp]))
            if len(replicas) != current:
                problem = (ErrorCode.INVALID_REPLICATION_FACTOR,
                           f"the replication factor would change from {current} to {len(replicas)} and "
                           "allow_replication_factor_change is false")
        if problem is not None:
            results[tp] = problem
        else:
            valid[tp] = replicas
    if event.create_only and valid and (ws.requests_version is not None or len(ws.requests) > 0):  # step 2
        for tp in valid:
            results[tp] = (ErrorCode.REASSIGNMENT_IN_PROGRESS, IN_PROGRESS)
        valid = {}
    if event.validate_only or not valid:  # step 3
        ws.answers.append(Answer(event.token, results))
        return
    moving = {tp: r for tp, r in valid.items() if ws.assignments[tp].replicas != r}
    if event.throttle is not None and moving:  # step 4
        try:
            change = _reassign_throttles(ws, event, moving)
        except _NotRead:
            ws.answers.append(Answer(event.token, retry=True))
            return
        except ThrottleWriteError as e:
            ws.answers.append(Answer(event.token, error=(ErrorCode.INVALID_CONFIG, f"cannot apply the request: {e}")))
            return
        ws.throttles.commit(change)
    _add_entries(ws, event, valid)  # step 5
    for tp in valid:
        results[tp] = OK
    ws.answers.append(Answer(event.token, results))


class _NotRead(Exception):
    """A znode the request changes was not in its ThrottlesRead (the state moved meanwhile)."""


def _read(read: ThrottlesRead | None, key, listed: bool = False):
    found = None if read is None else (read.listed if listed else read.configs).get(key)
    if found is None:
        raise _NotRead(key)
    return found


def _configs_read(read: ThrottlesRead | None, path: str, members) -> dict:
    """The configs of the entities a removal znode lists, as read (their throttle keys become
    the restore entries of those newly listed)."""
    kind = removal_kind(path)
    return {(kind, m): _read(read, (kind, m)) for m in members}


def _reassign_throttles(ws: WorkingSet, event: ReassignRequested, moving):
    leaders, followers, brokers = throttle_plan(ws, moving)
    topics = sorted(leaders)
    read = event.read
    change = ws.throttles.change()
    removal = ((paths.THROTTLED_REPLICAS_REMOVAL, topics), (paths.THROTTLED_RATES_REMOVAL, sorted(brokers)))
    if event.remove_throttle:
        for path, members in removal:
            change.add_listed(path, _read(read, path, listed=True), members, _configs_read(read, path, members))
    for t in topics:
        change.update_config(("topics", t), _read(read, ("topics", t)), add_replicas(leaders[t], followers[t]))
    rate = str(event.throttle)
    for b in sorted(brokers):
        change.update_config(("brokers", b), _read(read, ("brokers", b)), set_keys({LEADER_RATE: rate, FOLLOWER_RATE: rate}))
    if not event.remove_throttle:
        for path, members in removal:
            change.drop_listed(path, _read(read, path, listed=True), members)
    return change


def _add_entries(ws: WorkingSet, event: ReassignRequested, valid: dict[TopicPartition, tuple[int, ...]]) -> None:
    """Step 5: the znode as it will be written, taken by engine step 1 like a read of it."""
    merged: dict[TopicPartition, Request] = dict(ws.requests.items())
    for tp, replicas in valid.items():
        old = merged.get(tp)
        original = original_replicas(ws.assignments[tp])
        if old is not None and old.original_replicas:
            original = old.original_replicas
        merged[tp] = Request(tp[0], tp[1], replicas, original, skip_isr_check=event.skip_isr_check,
                             movement_strategies=tuple(event.movement_strategies))
    reassignment.on_requests(ws, RequestsRead(ws.requests_version, tuple(merged.values())))
    ws.requests_dirty = True
    # Their moves start (or change target) in the next step, once the entries landed: a crash in
    # between leaves an unanswered request not applied at all, as when a tool's entry is unread.
    ws.held.update(valid)


@writing(ADMIN)
def on_throttle(ws: WorkingSet, event: ThrottleRequested) -> None:
    results: dict = {}
    wanted: dict = {}
    for entity, value in event.entities.items():  # step 1
        problem = _rate_problem(ws, entity, value) if event.kind == "brokers" else _replicas_problem(ws, entity, value)
        if problem is not None:
            results[entity] = problem
        else:
            wanted[entity] = value
    if event.validate_only or not wanted:
        ws.answers.append(Answer(event.token, results))
        return
    if event.kind == "brokers":
        path, keys = paths.THROTTLED_RATES_REMOVAL, RATE_KEYS
        entities = set(wanted)
        configs = {("brokers", b): set_keys({LEADER_RATE: str(lead), FOLLOWER_RATE: str(follow)})
                   for b, (lead, follow) in wanted.items()}
    else:
        path, keys = paths.THROTTLED_REPLICAS_REMOVAL, REPLICA_KEYS
        parts: dict[str, dict[int, tuple[int, ...]]] = {}
        for (topic, p), brokers in wanted.items():
            parts.setdefault(topic, {})[p] = tuple(brokers)
        entities = set(parts)
        configs = {}
        for topic, by_partition in parts.items():
            pairs = {(p, b) for p, brokers in by_partition.items() for b in brokers}
            configs[("topics", topic)] = add_replicas(pairs, pairs, replace_partitions=set(by_partition))
    read = event.read
    try:
        change = ws.throttles.change()
        listed = _read(read, path, listed=True)
        if event.remove_throttle:
            before = change.listed_now(path, listed)
            change.add_listed(path, listed, entities, _configs_read(read, path, entities))  # step 2
            for entity in sorted(before - entities, key=str):  # step 3
                own = change.restore_of(path, listed, entity)
                change.update_config((event.kind, entity), _read(read, (event.kind, entity)), restore_keys(keys, own))
        for key, update in configs.items():  # step 4
            change.update_config(key, _read(read, key), update)
        if event.remove_throttle:
            change.replace_listed(path, listed, entities)  # step 5
        else:
            change.drop_listed(path, listed, entities)
    except _NotRead:
        ws.answers.append(Answer(event.token, retry=True))
        return
    except ThrottleWriteError as e:
        ws.answers.append(Answer(event.token, error=(ErrorCode.INVALID_CONFIG, f"cannot apply the request: {e}")))
        return
    ws.throttles.commit(change)
    ws.answers.append(Answer(event.token, results))


def _rate_problem(ws: WorkingSet, broker: int, rates) -> Result | None:
    leader, follower = rates
    if leader <= 0 or follower <= 0:
        return ErrorCode.INVALID_THROTTLE, f"rates must be > 0 bytes/s, got leader {leader}, follower {follower}"
    if broker not in ws.brokers:
        return ErrorCode.UNKNOWN_MEMBER_ID, f"broker {broker} is not registered in /brokers/ids"
    return None


def _replicas_problem(ws: WorkingSet, tp: TopicPartition, brokers) -> Result | None:
    problem = partition_problem(ws, tp)
    if problem is not None:
        return problem
    if len(set(brokers)) != len(brokers):
        return ErrorCode.INVALID_REQUEST, f"duplicate broker in {list(brokers)}"
    unknown = sorted(b for b in set(brokers) if b not in ws.brokers)
    if unknown:
        return ErrorCode.UNKNOWN_MEMBER_ID, f"broker(s) {unknown} not registered in /brokers/ids"
    return None


def throttle_reads_needed(event, state_assignments, listed_members=None) -> tuple[set[str], set[int]]:
    """The topics and brokers whose configs the shell reads for ``event`` (the removal znodes
    are always read; ``listed_members`` maps each to what it lists, for ThrottleRequested's
    step 3)."""
    if isinstance(event, ReassignRequested):
        return throttle_entities(state_assignments, event.targets)
    listed_members = listed_members or {}
    if event.kind == "brokers":
        return set(), set(event.entities) | set(listed_members.get(paths.THROTTLED_RATES_REMOVAL, ()))
    return ({tp[0] for tp in event.entities} | set(listed_members.get(paths.THROTTLED_REPLICAS_REMOVAL, ())), set())
