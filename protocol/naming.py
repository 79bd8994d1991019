"""Spec field names (PascalCase) to the snake_case keys bodies use.

>>> [snake_case(n) for n in ("ThrottleTimeMs", "IsInternal", "ZkVersion", "ISRNodes", "BrokerIDs")]
['throttle_time_ms', 'is_internal', 'zk_version', 'isr_nodes', 'broker_ids']
"""

from __future__ import annotations

import re

# One word per match: a plural acronym ("IDs"), an acronym not followed by a lower-case letter
# ("ISR" in "ISRNodes"), a capitalised word with its digits ("Int32"), or a lower-case run.
_WORD = re.compile(r"[A-Z]{2,}s(?![a-z])|[A-Z]+[0-9]*(?![a-z])|[A-Z][a-z0-9]*|[a-z0-9]+")
PASCAL_CASE = re.compile(r"^[A-Z][A-Za-z0-9]*$")


def snake_case(name: str) -> str:
    """PascalCase -> snake_case, keeping acronyms as one word."""
    return "_".join(w.lower() for w in _WORD.findall(name))
