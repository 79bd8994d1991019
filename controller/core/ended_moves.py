"""A move that ended with a replica offline: the broker-failure check for its partition, in the
step that ended it (engine step 12c). Pure: functions of the working set.

While a move runs, controller.core.broker_failure leaves its partition to it: a REPLICATING
move's ISR is the move's (its completion reads it, broker_failure step 2), a STOPPING or
CANCELLING one chose a live leader when it entered that phase (step 1). A broker that stops, or
a log directory that fails, while the move runs is therefore not taken out of that ISR - and
the move may end with it still there: a completion whose ISR names a replica that went offline
after it rejoined, a rollback that restores the original replicas with the ISR as it was.
Kafka's controller has no such exemption (its OfflineReplica transition shrinks every ISR);
here the exemption ends with the move, and the partition gets broker_failure's steps 2-6 with
L its online replicas (``WorkingSet.live_for``: registered, not on a failed directory):

    partition  move ended    state after the end    5 stopped mid-move     checked
    t-2        rollback      6 [6,4,5] 1            live 1,2,3,4,6         6 [6,4] 2
    t-3        completion    1 [1,2,5] 3            5's /d1 failed         1 [1,2] 4

Unclean where the topic allows it, as for a broker failure outside a move (broker_failure step
4): with no online ISR member, the first online replica leads alone if the topic's
``unclean.leader.election.enable`` is true, else leader -1 until an ISR member comes back. The
engine cannot know before the step which moves end in it, so the setting is not read for the
step: it comes from the config view the shell keeps for the topics of every move it holds
(``ws.unclean``, fed by ``TopicConfigsRead`` with step 2a's floors - the same znode, read when
the move's entry or its failover is read and again on a config change notification naming the
topic). ORS (1,2,3) -> TRS (4,5,6); the partition's remaining replica out of the ISR is live,
every ISR member stopped while the move was ending:

    partition  move ended    state after the end    stopped mid-move   checked: unclean off / on
    u-0        rollback      1 [1,2] 4 (RS 1,2,3)   1, 2               -1 [1,2] 5  /  3 [3] 5
    u-1        completion    4 [4,5] 6 (RS 4,5,6)   4, 5               -1 [4,5] 7  /  6 [6] 7

Its state writes go after the step's record deletes
(``ws.late``): cut between them, the flush must not leave a state whose ISR lost a TRS replica
beside the record of a move whose completion counted that replica in sync (the next
controller would resume the move and delete RR again, judged against the shrunk ISR).

    check_ended(ws)   # after every event of the step is handled
"""

from __future__ import annotations

from controller.core import elections
from controller.core.events import offline_check
from controller.core.working_set import WorkingSet
from znodes.values import TopicPartition


def check_ended(ws: WorkingSet) -> None:
    """The partitions whose move ended in this step with their leader or an ISR member
    offline get broker_failure's check (unclean for the topics ``ws.unclean`` holds), its
    state writes after the step's record deletes."""
    if not ws.ended:
        return
    due = tuple(tp for tp in sorted(ws.ended) if offline_in_state(ws, tp))
    if not due:
        return
    early, mark = ws.early, len(ws.early.ops)
    unclean = {tp[0] for tp in due if ws.unclean.get(tp[0])}
    elections.elect(ws, offline_check(due, unclean))
    for op, kind in zip(early.ops[mark:], early.kinds[mark:]):
        ws.late.ops.append(op)
        ws.late.kinds.append(kind)
    del early.ops[mark:], early.kinds[mark:]


def offline_in_state(ws: WorkingSet, tp: TopicPartition) -> bool:
    """Whether ``tp``'s state held names a leader or an ISR member whose replica is offline."""
    state = ws.states.get(tp)
    if state is None:
        return False
    live = ws.live_for(tp)
    return (state.leader >= 0 and state.leader not in live) or any(b not in live for b in state.isr)
