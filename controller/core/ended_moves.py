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

Clean only: no topic config is read for it (a leader offline goes to the first online ISR
member, else -1 until one comes back). Its state writes go after the step's record deletes
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
    offline get broker_failure's check, its state writes after the step's record deletes."""
    if not ws.ended:
        return
    due = tuple(tp for tp in sorted(ws.ended) if offline_in_state(ws, tp))
    if not due:
        return
    early, mark = ws.early, len(ws.early.ops)
    elections.elect(ws, offline_check(due))
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
