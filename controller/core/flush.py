"""Why the engine writes each op of a step's flush: its *kind* (docs/DESIGN.md section 7.2).

Pure. Every op of ``engine.Step.writes`` carries the kinds of flush it is part of in
``Step.kinds`` (an op written once for several partitions - a topic znode,
``/admin/reassign_partitions`` - may serve several kinds). Nothing in the controller acts on
them: they name the crash points the stateful test cuts (a flush cut after each op of each
kind) and what a failed flush was doing.

The engine's working set (controller.core.working_set) has a current kind, set by the function
doing the work (:func:`writing`, which nests: a start that completes at once writes its state
znode as "complete"), and its op lists are :class:`Writes`, which label every op appended with it.

    @writing("start")
    def start(ws, move, state):
        ws.early.append(Create(...))     # labelled "start"
"""

from __future__ import annotations

import functools

# The kinds, in the order a partition meets them; the engine's docstring ("Flush kinds") gives
# each one's ops in flush order.
START = "start"  # engine step 3
OVERRIDE = "override"  # step 4b (KIP-455)
COMPLETE = "complete"  # step 5: the state znode with TRS as ISR
FINISH = "finish"  # step 6
ROLLBACK = "rollback"  # controller.core.cancel steps 4-6 (and the cancel znode's delete)
ROLLBACK_FINISH = "rollback-finish"  # controller.core.cancel step 7
QUEUE = "queue"  # controller.core.queue
THROTTLE_REMOVAL = "throttle-removal"  # controller.core.throttle_removal's rule, the shell's own flush
# Bookkeeping around those: entries dropped or completed on reading /admin/reassign_partitions,
# recovery's record fixes, processed ISR change notifications, a broker set change.
ACCEPT = "accept"
RESUME = "resume"
ISR_CHANGE = "isr-change"
BROKERS = "brokers"
OTHER = "other"  # none of the above (a partition deleted under a move)
# A new partition's parents and state znode (controller.core.topic_creation step 4; engine
# step 10).
CREATE = "create"
# A deleted topic's znodes and its marker (controller.core.topic_deletion step 5): the shell's
# own flush, like throttle removal's.
DELETE = "delete"
ELECT = "elect"  # a leader election asked for (controller.core.elections): the state znode
# Leaders and ISRs after a broker failed or registered (controller.core.broker_failure): state znodes.
BROKER_FAILURE = "broker-failure"
# Log directory event notifications deleted once read (controller.core.log_dir_failure; the
# state znodes its check writes are broker-failure's).
LOG_DIR = "log-dir"
# A reassignment or throttle request's removal znodes and throttle configs
# (controller.core.admin_requests), first in the step's flush, and its entries of
# /admin/reassign_partitions, last with that znode's other kinds.
ADMIN = "admin"
# A topic request's config and topic znodes, partitions added, deletion markers
# (controller.core.topic_requests), first in the flush; and a new topic's znode rewritten with
# the topic id it was given (controller.core.reassignment.on_topics, with the moves' rewrites).
TOPICS = "topics"

# The kinds the stateful suite cuts each op of (docs/DESIGN.md 7.2): topics, create, delete and
# elect by scripted schedules of its topics machine (tests/controller/test_stateful_topics.py).
FLUSH_KINDS = (START, OVERRIDE, COMPLETE, FINISH, ROLLBACK, ROLLBACK_FINISH, QUEUE, THROTTLE_REMOVAL, ADMIN, TOPICS,
               CREATE, DELETE, ELECT)
KINDS = FLUSH_KINDS + (ACCEPT, RESUME, ISR_CHANGE, BROKERS, BROKER_FAILURE, LOG_DIR, OTHER)


def writing(kind: str):
    """Decorate a function taking the working set first: what it (and what it calls) writes is
    for ``kind``, unless a function it calls says otherwise."""

    def wrap(function):
        @functools.wraps(function)
        def run(ws, *args, **kwargs):
            outer, ws.kind = ws.kind, kind
            try:
                return function(ws, *args, **kwargs)
            finally:
                ws.kind = outer

        return run

    return wrap


class Kind:
    """The current kind of a working set, shared with its :class:`Writes`. A cell of its own,
    not the working set: a list that pointed back at its working set made every step's working
    set a reference cycle, so each step's ops, overlays and messages (hundreds of thousands of
    objects in a step of 10,000 partitions) outlived the step until the collector found them:
    in bench/controller.py the collector then took about a tenth of the CPU."""

    __slots__ = ("kind",)

    def __init__(self, kind: str = OTHER):
        self.kind = kind


class Writes:
    """Ops of one part of a flush; ``kinds[i]`` is the kind ``ops[i]`` was appended for (the
    ``current`` kind then). Only ``append`` adds to these."""

    __slots__ = ("current", "ops", "kinds")

    def __init__(self, current: Kind):
        self.current = current
        self.ops: list = []
        self.kinds: list[str] = []

    def append(self, op) -> None:
        self.ops.append(op)
        self.kinds.append(self.current.kind)

    def __len__(self) -> int:
        return len(self.ops)

    def __iter__(self):
        return iter(self.ops)
