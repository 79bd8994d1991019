"""Per-entity results of an admin call (KIP-179's ``values()`` / ``all()`` shape, resolved).

The wire answers carry one error code per partition (or per broker); a call's result maps each
key the caller asked about to ``None`` (success) or the :class:`~client.errors.KafkaApiError`
for it. Nothing is raised until the caller asks.

Usage::

    result = await admin.reassign_partitions({("t", 0): [4, 5]})
    result.result(("t", 0))   # None, or raises that partition's error
    result.all()              # None, or raises PartitionErrors with every failure
    result.errors             # {("t", 0): UnknownTopicOrPartitionError(...)}
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping

from client.errors import KafkaApiError, PartitionErrors


class KeyedResult(Mapping):
    """key -> None (succeeded) or the KafkaApiError for that key."""

    def __init__(self, outcomes: Mapping[Hashable, KafkaApiError | None]):
        self._outcomes = dict(outcomes)

    def __getitem__(self, key):
        return self._outcomes[key]

    def __iter__(self) -> Iterator:
        return iter(self._outcomes)

    def __len__(self) -> int:
        return len(self._outcomes)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._outcomes!r})"

    @property
    def errors(self) -> dict:
        return {k: v for k, v in self._outcomes.items() if v is not None}

    @property
    def succeeded(self) -> list:
        return [k for k, v in self._outcomes.items() if v is None]

    def result(self, key) -> None:
        """None when ``key`` succeeded; raises its error when it failed; KeyError if unknown."""
        if key not in self._outcomes:
            raise KeyError(key)
        error = self._outcomes[key]
        if error is not None:
            raise error
        return None

    def all(self) -> None:
        """Raise :class:`PartitionErrors` listing every failure, if any key failed."""
        errors = self.errors
        if errors:
            raise PartitionErrors(errors)
