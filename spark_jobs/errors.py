"""The planner's two error types: bad snapshots and impossible plan requests.

Both are ``ValueError`` subclasses carrying a message meant for an operator; the command line
prints it and exits non-zero without writing anything.
"""

from __future__ import annotations


class SnapshotError(ValueError):
    """A snapshot file or object that is not a valid cluster snapshot.

    ``where`` names the file (or "<snapshot>") and, when known, the element at fault, such as
    ``topics[2].partitions[0].replicas``.
    """

    def __init__(self, where: str, reason: str):
        super().__init__(f"{where}: {reason}")
        self.where = where
        self.reason = reason


class PlanError(ValueError):
    """A plan request that cannot be carried out (unknown broker, replication factor larger
    than the broker set, brokers with and without racks, ...)."""
