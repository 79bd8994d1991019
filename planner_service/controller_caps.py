"""The active controller's per-broker move caps, as far as the planner service can read them: from
the controller's operations port (``--ops-listen``; the service's ``--controller-ops URL``),
whose ``/metrics`` carries ``reassignd_broker_move_slots{direction="incoming"|"outgoing"}``
while that instance is active. A request's ``concurrent_partition_movements_per_broker`` is
clamped to the lower of the two. The cluster-wide cap (``max_cluster_moves``) is in no answer the
service can get (not in /metrics, DescribeConfigs or the registration), so
``max_partition_movements_in_cluster`` is not clamped.

Usage::

    caps = await read_caps("http://127.0.0.1:9191")      # {"incoming": 10, "outgoing": 10, ...}
    used, note = clamp(25, caps)                           # 10, {"asked": 25, "used": 10, ...}
"""

from __future__ import annotations

import asyncio
import re
import urllib.error
import urllib.request

# The metrics scrape is one small page; an operations port slower than this is down.
FETCH_TIMEOUT_S = 5.0
_CAP = re.compile(r'^reassignd_broker_move_slots\{direction="(incoming|outgoing)"\}\s+([0-9.eE+]+)\s*$', re.M)


def parse_caps(text: str) -> dict[str, int]:
    """{"incoming": N, "outgoing": M} from a /metrics page (empty: not the active controller)."""
    return {d: int(float(v)) for d, v in _CAP.findall(text)}


def clamp(asked: int, caps: dict) -> tuple[int, dict]:
    """The per-broker concurrency to use and what /state and the answer say about it."""
    limits = [caps[d] for d in ("incoming", "outgoing") if isinstance(caps.get(d), int)]
    used = min([asked, *limits])
    return used, {"asked": asked, "used": used, "controller": caps}


async def read_caps(ops_url: str | None) -> dict:
    """The caps the controller at ``ops_url`` reports, or why there are none (``error``)."""
    if not ops_url:
        return {"error": "not read: the service has no --controller-ops URL"}
    url = ops_url.rstrip("/") + "/metrics"

    def fetch() -> str:
        with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT_S) as answer:
            return answer.read().decode("utf-8", "replace")

    try:
        caps = parse_caps(await asyncio.to_thread(fetch))
    except (urllib.error.URLError, OSError, ValueError) as e:
        return {"error": f"{url} did not answer: {e}"}
    if not caps:
        return {"error": f"{url} reports no move caps (that controller is not the active one)"}
    return {**caps, "source": url}
