"""Kafka's throttled-replica list, ``leader.replication.throttled.replicas`` and
``follower.replication.throttled.replicas``: the one parser and formatter. Pure.

A value is ``"P:B,P:B"`` (partition:broker pairs of the topic) or ``"*"`` (every replica of it);
an empty value throttles nothing. The strictness is Kafka's ThrottledReplicaListValidator: each
entry, trimmed as Java trims, is ``[0-9]+:[0-9]+``, or the whole list is the single ``*``.
Anything else raises :class:`ThrottledReplicasError` naming the bad entry. It lives in
``protocol/`` (below ``znodes/``) because the config catalogue (``protocol.kafka_configs``)
validates with it as much as the controller, the tools and the simulated brokers read with it.

    >>> r = parse("0:1, 1:2")
    >>> (0, 1) in r, str(r.merged({(1, 3)}))
    (True, '0:1,1:2,1:3')
    >>> (9, 9) in parse("*"), parse("")
    (True, ThrottledReplicas(everything=False, pairs=frozenset()))
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

WILDCARD = "*"  # every replica of the topic

# Kafka's own wording of the rule (ThrottledReplicaListValidator), so every refusal reads alike.
RULE = ("must be the literal '*' or a list of replicas in the following format: "
        "[partitionId]:[brokerId],[partitionId]:[brokerId],...")

# Partition and broker ids are Java ints on the broker (it parses each side with toInt): a larger
# number passes Kafka's regex but then fails the broker's parse, so it is refused here up front.
MAX_ID = 2**31 - 1

# Java's String.trim, which Kafka applies to the value and to each entry: every char up to U+0020.
_JAVA_TRIM = "".join(map(chr, range(0x21)))
_PAIR = re.compile(r"([0-9]+):([0-9]+)")  # [0-9], not \d: Kafka's regex takes ASCII digits only


class ThrottledReplicasError(ValueError):
    """A throttled-replica list Kafka would refuse; ``entry`` is the first bad entry."""

    def __init__(self, value: object, entry: object):
        self.value, self.entry = value, entry
        super().__init__(f"bad throttled replica {entry!r} in {value!r}: {RULE}")


@dataclass(frozen=True, slots=True)
class ThrottledReplicas:
    """A parsed list: every replica of the topic, or a set of (partition, broker)."""

    everything: bool = False
    pairs: frozenset[tuple[int, int]] = frozenset()

    def __contains__(self, pair: tuple[int, int]) -> bool:
        return self.everything or pair in self.pairs

    @property
    def empty(self) -> bool:
        return not self.everything and not self.pairs

    def merged(self, add: Iterable[tuple[int, int]], replace_partitions: Iterable[int] = ()) -> ThrottledReplicas:
        """These plus ``add``, the pairs of ``replace_partitions`` dropped first; ``*`` already
        covers everything and stays."""
        if self.everything:
            return self
        drop = set(replace_partitions)
        return ThrottledReplicas(pairs=frozenset({(p, b) for p, b in self.pairs if p not in drop} | set(add)))

    def __str__(self) -> str:
        """Kafka's text, pairs sorted so the same set always writes the same bytes."""
        return WILDCARD if self.everything else ",".join(f"{p}:{b}" for p, b in sorted(self.pairs))


NONE = ThrottledReplicas()
EVERY = ThrottledReplicas(everything=True)


def parse(value: str | None) -> ThrottledReplicas:
    """A config value as stored: ``None`` or ``""`` throttle nothing."""
    if value is None:
        return NONE
    if not isinstance(value, str):
        raise ThrottledReplicasError(value, value)
    text = value.strip(_JAVA_TRIM)
    return parse_items(text.split(","), value) if text else NONE


def parse_items(items: Sequence[str], value: object = None) -> ThrottledReplicas:
    """A list already split at its commas (Kafka's ConfigDef LIST type); ``value`` is what the
    error names as the whole (the items joined back by default)."""
    whole = ",".join(items) if value is None else value
    entries = [item.strip(_JAVA_TRIM) for item in items]
    if not entries:
        return NONE
    if entries == [WILDCARD]:
        return EVERY
    pairs = set()
    for entry in entries:
        # Kafka's regex lets an empty entry through ("0:1,,1:2"), which its broker then fails to
        # parse (no ':' to split at); it is refused here, as every other entry that is no pair.
        match = _PAIR.fullmatch(entry)
        if match is None or int(match[1]) > MAX_ID or int(match[2]) > MAX_ID:
            raise ThrottledReplicasError(whole, entry)
        pairs.add((int(match[1]), int(match[2])))
    return ThrottledReplicas(pairs=frozenset(pairs))


def format_pairs(pairs: Iterable[tuple[int, int]]) -> str:
    """Pairs -> ``"P:B,P:B"``, sorted."""
    return str(ThrottledReplicas(pairs=frozenset(pairs)))
