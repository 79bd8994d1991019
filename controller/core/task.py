"""One partition move's lifecycle, as an explicit transition map checked on every change.

A :class:`Move` is immutable; ``move.to(phase, ...)`` returns the next one and raises
:class:`IllegalTransition` for any change the map does not allow, so a bug in the engine
fails loudly instead of corrupting a reassignment.

::

    PENDING ──> LOADING ──> REPLICATING ──> STOPPING ──> DONE
       │           │  │        │ ↺ │
       │           │  │        │   └──> CANCELLING ──> CANCELLED (KIP-236 rollback to ORS)
       │           │  └──────────────────────────────────^ (target == current: nothing to move)
       └───────────┴──> DROPPED (invalid, or withdrawn/cancelled before it started)

LOADING -> PENDING: the state read for a move that took a slot shows its partition's ISR at its
floor (controller.core.isr_health, step 2a): it gives the slot back and waits.

REPLICATING -> REPLICATING is KIP-455's override: a new target replaces the running one in
place (controller.core.engine step 4b). ORS stays; replicas the old target added that the new one
does not keep are deleted at once if they are outside the ISR (as Kafka does; they hold no
in-sync copy), and the ones in the ISR are ``dropped``: they stay in RR until the move
completes or is rolled back, so an in-sync replica is still removed only once its move's
target is in the ISR (docs/DESIGN.md invariant 4). ``shed`` takes dropped replicas that have
left the ISR off a move (deleted on a failover's resume).

STOPPING cannot be cancelled: the original replicas already got StopReplica(delete), so
there is nothing left to roll back to; such a move completes (see controller.core.cancel).

    m = Move(("t", 0), target=(4, 5, 6))            # PENDING
    m = m.to(Phase.LOADING)
    m = m.to(Phase.REPLICATING, original=(1, 2, 3))
    m.adding, m.removing, m.replicas                # (4, 5, 6) (1, 2, 3) (4, 5, 6, 1, 2, 3)

Terms (Kafka 2.4+): ORS ``original``, TRS ``target``, RS ``replicas`` = TRS followed by
RR, AR ``adding`` = TRS - ORS, RR ``removing`` = ORS - TRS followed by ``dropped``.

``stray_partitions`` is the rule for a registering broker's replicas nothing assigns to it
(controller.core.engine step 9):

    stray_partitions(5, {("t", 0), ("t", 1)}, assignments, tasks, states)   # [("t", 1)]
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Phase(enum.Enum):
    PENDING = "pending"  # accepted from /admin/reassign_partitions, waiting for a slot
    LOADING = "loading"  # holds a slot; its partition state is being read
    REPLICATING = "replicating"  # record + RS written, LeaderAndIsr sent; waits for TRS in ISR
    STOPPING = "stopping"  # leader in TRS, ISR shrunk to TRS; StopReplica(delete) sent to RR
    DONE = "done"  # RS = TRS written, record and request entry gone
    CANCELLING = "cancelling"  # KIP-236: record marked, leader/ISR back in ORS, StopReplica to AR
    CANCELLED = "cancelled"  # RS = ORS written, record and request entry gone
    DROPPED = "dropped"  # refused: invalid, or withdrawn before it started

    # Members are singletons compared by identity: hash them so too. Enum's own __hash__ is a
    # Python function (hash of the name), called for every ``phase in STARTED`` and transition
    # check: about fifteen times per partition moved.
    __hash__ = object.__hash__


TRANSITIONS: dict[Phase, frozenset[Phase]] = {
    Phase.PENDING: frozenset({Phase.LOADING, Phase.DROPPED}),
    # LOADING -> PENDING: the state read shows an ISR at its floor (step 2a): it waits again.
    Phase.LOADING: frozenset({Phase.PENDING, Phase.REPLICATING, Phase.DONE, Phase.DROPPED}),
    Phase.REPLICATING: frozenset({Phase.REPLICATING, Phase.STOPPING, Phase.CANCELLING}),
    Phase.STOPPING: frozenset({Phase.DONE}),
    Phase.CANCELLING: frozenset({Phase.CANCELLED}),
    Phase.DONE: frozenset(),
    Phase.CANCELLED: frozenset(),
    Phase.DROPPED: frozenset(),
}

# Phases a failover resumes a move in (rebuilt from ZooKeeper, not reached by a transition).
RESUMABLE = frozenset({Phase.REPLICATING, Phase.STOPPING, Phase.CANCELLING})
# Phases that hold a concurrency slot.
HOLDS_SLOT = frozenset({Phase.LOADING, Phase.REPLICATING, Phase.STOPPING, Phase.CANCELLING})
# Phases whose record (/admin/reassignments/T/P) and topic znode RS exist in ZooKeeper.
STARTED = frozenset({Phase.REPLICATING, Phase.STOPPING, Phase.CANCELLING})


_COPIED_FIELDS = frozenset({"target", "original", "next_target", "resend", "dropped", "new_epoch", "waiting"})  # what _copy may change


class IllegalTransition(RuntimeError):
    """The engine tried a phase change the transition map does not allow (a bug)."""


@dataclass(frozen=True, slots=True)
class Move:
    tp: tuple[str, int]
    target: tuple[int, ...]
    phase: Phase = Phase.PENDING
    original: tuple[int, ...] | None = None  # set when the move starts
    # A different target written to the znode while this move ran: taken once it ends
    # (completing, or being rolled back), or in place while it replicates (engine step 4b,
    # at the end of the step, or once its state is read after a failover).
    next_target: tuple[int, ...] | None = None
    # Resumed by failover before its partition state was read: the brokers are told about it
    # again (LeaderAndIsr, StopReplica) once the state arrives.
    resend: bool = False
    # Added by an earlier target of this move and not kept by the current one (KIP-455
    # override), and in the ISR when it was overridden: removed with RR on completion, with AR
    # on rollback.
    dropped: tuple[int, ...] = ()
    # Resumed by failover with an RS no broker may have heard of (recovery wrote it, or the
    # move was adopted from the topic znode): announced with a new leader epoch, not resent
    # as is (docs/DESIGN.md 4, "Leader epochs").
    new_epoch: bool = False
    # Step 2a (controller.core.isr_health): why this pending move may not start yet (its
    # partition's ISR is at its floor); None once it may.
    waiting: str | None = None

    def to(self, phase: Phase, **changes) -> Move:
        if phase not in TRANSITIONS[self.phase]:
            raise IllegalTransition(f"{self.tp}: {self.phase.name} -> {phase.name} is not a legal transition")
        if phase in STARTED and (changes.get("original", self.original) is None):
            raise IllegalTransition(f"{self.tp}: {phase.name} needs the original replicas")
        if phase is self.phase and tuple(changes.get("target", self.target)) == self.target:
            raise IllegalTransition(f"{self.tp}: an override of {phase.name} needs a new target")
        return self._copy(phase, changes)

    def with_changes(self, **changes) -> Move:
        """Change fields other than the phase (a new target while pending, a queued one)."""
        if "phase" in changes:
            raise IllegalTransition("use Move.to() to change the phase")
        if ("target" in changes or "dropped" in changes) and self.started:
            raise IllegalTransition(f"{self.tp}: a started move changes its target only by an override (to REPLICATING)")
        return self._copy(self.phase, changes)

    def _copy(self, phase: Phase, changes: dict) -> Move:
        # dataclasses.replace, without its per-call field introspection (hot: every phase change).
        if not changes:  # a phase change alone (most of them): nothing to look up
            return Move(
                self.tp, self.target, phase, self.original, self.next_target, self.resend, self.dropped,
                self.new_epoch, self.waiting if phase is Phase.PENDING else None,
            )
        unknown = changes.keys() - _COPIED_FIELDS
        if unknown:
            raise TypeError(f"Move has no field(s) {sorted(unknown)}")
        get = changes.get
        return Move(
            self.tp,
            get("target", self.target),
            phase,
            get("original", self.original),
            get("next_target", self.next_target),
            get("resend", self.resend),
            get("dropped", self.dropped),
            get("new_epoch", self.new_epoch),
            get("waiting", self.waiting) if phase is Phase.PENDING else None,
        )

    def shed(self, replicas) -> Move:
        """The move without some of its ``dropped`` replicas (deleted before it completes:
        they left the ISR). Phase, target and ORS stay."""
        gone = set(replicas)
        if not gone <= set(self.dropped):
            raise IllegalTransition(f"{self.tp}: only dropped replicas can be shed, not {sorted(gone - set(self.dropped))}")
        return self._copy(self.phase, {"dropped": tuple(b for b in self.dropped if b not in gone)})

    @classmethod
    def resumed(cls, tp, target, original, phase: Phase, dropped=()) -> Move:
        """A move rebuilt by failover recovery, entering the map at ``phase``."""
        if phase not in RESUMABLE:
            raise IllegalTransition(f"{tp}: a move cannot be resumed in {phase.name}")
        return cls(tp, tuple(target), phase, tuple(original), dropped=tuple(dropped))

    @property
    def started(self) -> bool:
        return self.phase in STARTED

    @property
    def holds_slot(self) -> bool:
        return self.phase in HOLDS_SLOT

    @property
    def adding(self) -> tuple[int, ...]:
        original = self.original or ()
        return tuple([r for r in self.target if r not in original])

    @property
    def removing(self) -> tuple[int, ...]:
        target = self.target
        removing = tuple([r for r in (self.original or ()) if r not in target])
        return removing + self.dropped if self.dropped else removing

    @property
    def added(self) -> tuple[int, ...]:
        """Every replica the move added and a rollback deletes: AR, then ``dropped``."""
        return self.adding + self.dropped

    @property
    def replicas(self) -> tuple[int, ...]:
        """RS: TRS followed by ORS - TRS."""
        return self.target + self.removing

    @property
    def cancelling(self) -> bool:
        return self.phase is Phase.CANCELLING

    @property
    def rollback_replicas(self) -> tuple[int, ...]:
        """RS of the rollback (KIP-236): ORS followed by the replicas it deletes."""
        return (self.original or ()) + self.added

    def told(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """(replicas, adding, removing) a started move's LeaderAndIsr names in its phase, told
        again to a broker with the state held: REPLICATING its RS, AR and RR; STOPPING TRS and
        CANCELLING ORS, the RS each already wrote, with nothing moving."""
        if self.phase is Phase.REPLICATING:
            return self.replicas, self.adding, self.removing
        return (self.target if self.phase is Phase.STOPPING else self.original or ()), (), ()


def reassigning_replicas(target, original) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(RS, AR, RR) for a move from ``original`` to ``target``."""
    target, original = tuple(target), tuple(original)
    adding = tuple(r for r in target if r not in original)
    removing = tuple(r for r in original if r not in target)
    return target + removing, adding, removing


def dropped_replicas(replicas, target, original) -> tuple[int, ...]:
    """The replicas of RS that are neither in TRS nor in ORS: what earlier targets of an
    overridden move added (KIP-455). The engine's override computes ``dropped`` this way from
    the move's RS, and failover recovery from the topic znode's, whether or not the
    override's topic write landed."""
    keep = set(target) | set(original)
    return tuple(r for r in replicas if r not in keep)


def stray_partitions(broker_id, hosted, assignments, tasks, states) -> list[tuple[str, int]]:
    """The partitions of ``hosted`` (what ``broker_id`` says it hosts) whose replica there is a
    stray: its partition is known and its RS (``assignments``: TRS and RR of a running move,
    so AR and dropped replicas too) does not place it there, no move of it is waiting to add
    it (a pending or loading target, or a next one), and it is not in the partition's ISR.
    A partition the controller does not know (a topic created a moment ago) is never one.
    What is left is a replica whose deletion was missed while its broker was down: RR of a
    completed move, AR of a rolled-back one, an override's dropped replica."""
    out = []
    for tp in hosted:
        assignment = assignments.get(tp)
        if assignment is None or broker_id in assignment.replicas:
            continue
        move = tasks.get(tp)
        if move is not None and (broker_id in move.target or broker_id in (move.next_target or ())):
            continue
        state = states.get(tp)
        if state is not None and broker_id in state.isr:
            continue
        out.append(tp)
    out.sort()  # the strays in order (a broker hosts tens of thousands; few are strays)
    return out
