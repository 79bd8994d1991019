"""The ZooKeeper writes a simulated broker asks its shell to carry out, as data.

:meth:`sim.core.BrokerCore.advance` returns these; the shell (:mod:`sim.cluster`) performs
them on the broker's own ZooKeeper session and reports back to the core. When ISR changes go to
the controller instead (``ClusterSettings.isr_via``), an IsrWrite is what the broker proposes in
AlterPartition (:mod:`sim.alter_partition`), and no IsrChangeNotification comes.

    >>> w = IsrWrite("orders", 0, leader=1, leader_epoch=4, controller_epoch=2, isr=(1, 3), zk_version=7)
    >>> w.path, w.payload()
    ('/brokers/topics/orders/partitions/0/state', b'{"controller_epoch":2,"leader":1,"version":1,"leader_epoch":4,"isr":[1,3]}')
"""

from __future__ import annotations

from dataclasses import dataclass

from znodes import models, paths


@dataclass(frozen=True, slots=True)
class IsrWrite:
    """Set a partition's state znode to a new ISR, conditional on ``zk_version``.

    Leader and both epochs are kept as they are: only the ISR changes (Kafka's leader-side
    ISR update).
    """

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    controller_epoch: int
    isr: tuple[int, ...]
    zk_version: int

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def path(self) -> str:
        return paths.partition_state(self.topic, self.partition)

    def payload(self) -> bytes:
        return models.PartitionState(
            leader=self.leader,
            leader_epoch=self.leader_epoch,
            controller_epoch=self.controller_epoch,
            isr=list(self.isr),
        ).to_bytes()


@dataclass(frozen=True, slots=True)
class IsrChangeNotification:
    """Create one sequential ``/isr_change_notification/isr_change_`` node for a batch.

    ``written`` holds, per partition, the ISR write that landed and the zkVersion it got:
    each entry carries that state (znodes.models.NotifiedState), so the controller needs no
    read of the state znode.
    """

    written: tuple[tuple[IsrWrite, int], ...]

    path = paths.ISR_CHANGE_PREFIX

    @property
    def partitions(self) -> tuple[tuple[str, int], ...]:
        return tuple(w.key for w, _ in self.written)

    def payload(self) -> bytes:
        return models.IsrChangeNotification(
            partitions=[
                models.IsrChangeRef(topic=w.topic, partition=w.partition, state=_notified(w, v)) for w, v in self.written
            ]
        ).to_bytes()


def _notified(write: IsrWrite, zk_version: int) -> models.NotifiedState:
    return models.NotifiedState(
        leader=write.leader,
        leader_epoch=write.leader_epoch,
        controller_epoch=write.controller_epoch,
        isr=list(write.isr),
        zk_version=zk_version,
    )


Effect = IsrWrite | IsrChangeNotification
