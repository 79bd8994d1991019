"""ElectLeaders (43, KIP-460; KIP-183's PreferredLeaderElection before it), v0-2: preferred or
unclean leader elections through the active controller (controller.core.elections has the
rules and errors per partition).

 1. Active controller only; ALTER on the cluster (controller.shell.authorizer, Kafka's rule).
 2. Version 0 has no election type: PREFERRED. An unknown type -> INVALID_REQUEST for all.
 3. The named partitions' states (every known one's when none is named) are read from ZooKeeper,
    as Kafka's controller reads them for an election (the decision is made from the newer of
    that and the state the controller holds: a leader's ISR change whose notification has not
    come yet counts), and an ElectionRequested goes into the controller's queue; it is
    answered once the step's writes landed (the new states), the
    LeaderAndIsr and UpdateMetadata handed to the dispatcher. A step whose writes fail (a state
    changed under it: the controller rebuilds) answers UNKNOWN_SERVER_ERROR per partition, to
    be retried; the controller resigned with the request still queued -> NOT_CONTROLLER (ask
    the new one).
 4. ``timeout_ms``, as Kafka's: the controller decides whatever it is (Kafka's controller has
    no deadline; only the wait for the new leaders to show is bounded, DelayedElectLeader), so
    the handler waits for the decision at least MIN_WAIT_S; a partition that failed keeps its
    error, one elected after the deadline (always, for ``timeout_ms`` <= 0) is REQUEST_TIMED_OUT
    - elected all the same. No decision within max(timeout, MIN_WAIT_S) -> REQUEST_TIMED_OUT
    for every partition (it may still be taken).
 5. Null topic_partitions: every partition of a topic not being deleted; only those elected
    or failing other than with ELECTION_NOT_NEEDED are listed, as Kafka answers. A request
    that failed as a whole (timed out, its writes failed, the controller resigned) lists every
    known partition with that error, as Kafka's broker expands a null list to every partition
    before it waits: an empty list would read as nothing to elect. A partition named twice is
    one (Kafka's request reads them into a set).
 6. Version 0 (KIP-183, before KIP-460's ELECTION_NOT_NEEDED existed): a preferred replica that
    already leads is NONE, as Kafka 2.2-2.3 answered it; a v0 client cannot read code 84.

    # Kafka's kafka-leader-election.sh --election-type preferred --all-topic-partitions
"""

from __future__ import annotations

import asyncio
import time

from controller.core.elections import PREFERRED, UNCLEAN, every_partition
from controller.core.events import ElectionRequested
from controller.shell.active import NotTheController
from controller.shell.admin.base import AdminContext, Api
from controller.shell.zkread import read_states
from protocol import ApiKey
from protocol.errors import ErrorCode

MIN_WAIT_S = 1.0  # the decision is waited for at least this long, whatever timeout_ms says (4)


def _response(version: int, by_tp: dict, code: ErrorCode = ErrorCode.NONE) -> dict:
    topics: dict[str, list] = {}
    for (t, p), (c, message) in by_tp.items():
        topics.setdefault(t, []).append({"partition_id": p, "error_code": int(c), "error_message": message})
    return {"throttle_time_ms": 0, "error_code": int(code),
            "replica_election_results": [{"topic": t, "partition_result": ps} for t, ps in topics.items()]}


def _asked(body: dict):
    given = body.get("topic_partitions")
    if given is None:
        return None
    return tuple(dict.fromkeys((t["topic"], p) for t in given for p in t.get("partitions") or ()))


async def handle_elect(ctx: AdminContext, version: int, body: dict) -> dict:
    active = ctx.require_active()
    election_type = body.get("election_type", PREFERRED) if version >= 1 else PREFERRED
    asked = _asked(body)
    if election_type not in (PREFERRED, UNCLEAN):
        message = f"unknown election type {election_type}"
        return _response(version, {tp: (ErrorCode.INVALID_REQUEST, message) for tp in asked or ()}, ErrorCode.INVALID_REQUEST)
    state = active.state
    if asked is None:
        known = every_partition(state)
    else:
        known = [tp for tp in asked if tp in state.assignments]
    failed = known if asked is None else asked  # the partitions a failure of the whole request lists
    timeout_s = body.get("timeout_ms", 60_000) / 1000
    deadline = time.monotonic() + timeout_s
    states, _ = await read_states(ctx.store, known)
    future = asyncio.get_running_loop().create_future()
    active.inbox.queue.put_nowait(ElectionRequested(asked, election_type, states, future))
    try:
        results = await asyncio.wait_for(asyncio.shield(future), max(deadline - time.monotonic(), MIN_WAIT_S))
    except asyncio.TimeoutError:
        future.cancel()
        return _response(version, {tp: (ErrorCode.REQUEST_TIMED_OUT, "the election was not done in time") for tp in failed})
    except NotTheController as e:  # it resigned with the request queued: ask the new one
        return _response(version, {tp: (ErrorCode.NOT_CONTROLLER, str(e)) for tp in failed}, ErrorCode.NOT_CONTROLLER)
    except Exception as e:  # the step's writes failed: nothing was elected
        return _response(version, {tp: (ErrorCode.UNKNOWN_SERVER_ERROR, f"{e}; retry") for tp in failed})
    if timeout_s <= 0 or time.monotonic() > deadline:  # 4: decided, not within timeout_ms
        late = (ErrorCode.REQUEST_TIMED_OUT, f"elected, but not within timeout_ms {body.get('timeout_ms')}")
        results = {tp: late if r[0] == ErrorCode.NONE else r for tp, r in results.items()}
    if asked is None:
        results = {tp: r for tp, r in results.items() if r[0] != ErrorCode.ELECTION_NOT_NEEDED}
    elif version == 0:  # 6
        results = {tp: (ErrorCode.NONE, None) if r[0] == ErrorCode.ELECTION_NOT_NEEDED else r for tp, r in results.items()}
    return _response(version, results)


def elect_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return _response(version, {tp: (code, message) for tp in _asked(body) or ()}, code)


APIS = [
    Api(ApiKey.ELECT_LEADERS, "ElectLeaders", 0, 2, controller_only=True, handle=handle_elect, error_response=elect_error),
]
