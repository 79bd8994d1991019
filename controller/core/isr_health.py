"""ISR-aware execution (issue 24 item 4): the engine's step 2a, which pending moves may start
now, and 2b, at what per-broker cap (2c, the order they are tried in, is
controller.core.move_order). Pure: it reads only what the engine holds (the
partition states' ISR, the live brokers, each topic's ``min.insync.replicas``).

 2a. ISR health, before step 2 gives a pending move a slot. Terms: RS the partition's current
     replicas, ISR its state's in-sync replicas, m its topic's ``min.insync.replicas`` (the
     topic's override, read from ``/config/topics/T`` when the entry naming it was read, else
     the ``min_insync_replicas`` setting, the cluster default), live the registered brokers.

     * wait (ISR): every replica of RS is live, ISR is short (len(ISR) < len(RS)) and
       len(ISR) <= m. A move loads the leader with copies and ends with an ISR change and a
       leader epoch; while the ISR is at its floor, one more replica falling behind makes
       acks=all writes fail (NOT_ENOUGH_REPLICAS). A short ISR of live brokers recovers by
       itself, so the move waits for it (Cruise Control skips such partitions). A full ISR
       never waits (an RF-1 topic at m=1 has nothing to recover).
     * wait (offline), only with ``isr_wait_offline_replicas``: a replica of RS is on a broker
       not live. Off by default: a dead broker may never come back, and moving its replicas
       away is what the operator is doing.
     * the entry's ``skip_isr_check`` or ``isr_aware_moves = false``: never waits.
     * no state held yet: not judged here; judged when the state is read (LOADING).

     A waiting move keeps its place, holds no slot, and carries its reason (``Move.waiting``:
     the ``reassignd_moves_waiting_for_isr`` gauge counts them). It is judged again whenever
     the step schedules (a state read or an ISR change notification for it does).

     Worked table, m = 2, brokers 1-4 live, 5 dead:

     RS       ISR      flag   decision
     1,2,3    1,2,3    -      start (ISR full)
     1,2,3    1,2      -      wait: ISR [1, 2] at or under min.insync.replicas=2
     1,2,3    1        -      wait: ISR [1] at or under min.insync.replicas=2
     1,2,3    1        skip   start (the request asked)
     1,2,3,4  1,2,3    -      start (3 in sync > m)
     1,5      1        -      start (5 offline: judged only with isr_wait_offline_replicas)
     1,5      1        (*)    wait: replica(s) [5] offline  (*: isr_wait_offline_replicas)
     1        1        -      start (RF 1: ISR full)

 2b. Concurrency adjuster (Cruise Control's): while any partition the engine holds a state of
     is under its min ISR (len(ISR) < m), the per-broker caps are at most
     ``isr_throttled_concurrency``; they come back once none is. The count scans every state
     (~25 ms at 100,000 partitions), so step 2 takes it only when a move would exceed that cap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from operator import attrgetter

from controller.core.state import DELETED, Overlay
from znodes.values import LeaderIsr, TopicPartition

MIN_ISR_CONFIG = "min.insync.replicas"  # Kafka's topic config (protocol.kafka_configs)


def min_isr_of(topic: str, overrides: Mapping[str, int], default: int) -> int:
    """The topic's ``min.insync.replicas``: its own override, else the cluster default."""
    return overrides.get(topic, default)


def parse_min_isr(config: Mapping | None) -> int | None:
    """The override in a ``/config/topics/T`` config map, or None (absent or not a positive
    integer: Kafka's own validation refuses those, so a bad value falls back to the default)."""
    raw = (config or {}).get(MIN_ISR_CONFIG)
    try:
        value = int(str(raw))
    except ValueError:
        return None
    return value if value >= 1 else None


def waiting_reason(
    replicas: Iterable[int], state: LeaderIsr | None, live: Mapping | frozenset, min_isr: int,
    *, wait_offline: bool = False,
) -> str | None:
    """Step 2a for one partition: why its move must wait, or None to let it start."""
    replicas = tuple(replicas)
    offline = [b for b in replicas if b not in live]
    if offline:
        return f"replica(s) {offline} offline" if wait_offline else None
    if state is None:
        return None
    isr = state.isr
    if len(isr) < len(replicas) and len(isr) <= min_isr:
        return f"ISR {list(isr)} at or under min.insync.replicas={min_isr}"
    return None


def under_min_isr(states: Mapping[TopicPartition, LeaderIsr], overrides: Mapping[str, int], default: int) -> int:
    """Step 2b: partitions whose ISR is under their min ISR (Kafka's UnderMinIsrPartitionCount)."""
    if default <= 1 and not overrides:
        # Fast path: under a floor of 1 means an empty ISR. A step's states are an overlay
        # of every partition's (100,000, counted whenever the caps may bind): the plain dict
        # under it is counted in C, then corrected for the keys the step changed.
        if isinstance(states, Overlay):
            base = states.base
            n = _empty_isrs(base)
            for tp, s in states.changes.items():
                old = base.get(tp)
                n += (s is not DELETED and not s.isr) - (old is not None and not old.isr)
            return n
        return _empty_isrs(states)
    return sum(1 for tp, s in states.items() if len(s.isr) < overrides.get(tp[0], default))


_ISR = attrgetter("isr")


def _empty_isrs(states: Mapping[TopicPartition, LeaderIsr]) -> int:
    return len(states) - sum(map(bool, map(_ISR, states.values())))

