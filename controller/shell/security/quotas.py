"""What one client address may hold and spend, counted across every listener of the instance.
Pure: no I/O, time comes in as ``now``.

    counts = AddressCounts(cap=128)            # Kafka's max.connections.per.ip, one count for all listeners
    if counts.admit("10.0.0.7"): ...           # at accept, before any TLS handshake; False: close now
    counts.release("10.0.0.7")                 # when that connection closes

    logins = LoginBudget(rate=5.0)             # failed-login attempts per second per address
    if logins.take("10.0.0.7", now): ...       # before an exchange's first SaslAuthenticate
    logins.give_back("10.0.0.7", now)          # it succeeded: only failures spend the budget
"""

from __future__ import annotations

# A full bucket holds this many seconds of the rate: a client that mistypes its password a
# few times in a row is not refused, a flood is bounded after that burst.
BURST_SECONDS = 2.0
# Addresses whose bucket is full again are forgotten once the table holds this many, so a
# scan from many addresses cannot grow it without end.
MAX_TRACKED_ADDRESSES = 10_000


class AddressCounts:
    """Open connections per client address, one count for all the listeners sharing it."""

    def __init__(self, cap: int | None):
        self.cap = cap  # None: no cap
        self._open: dict[str, int] = {}

    def admit(self, address: str) -> bool:
        """Count one more connection from ``address``; False (and nothing counted) at the cap."""
        held = self._open.get(address, 0)
        if self.cap is not None and held >= self.cap:
            return False
        self._open[address] = held + 1
        return True

    def release(self, address: str) -> None:
        left = self._open.get(address, 1) - 1
        if left > 0:
            self._open[address] = left
        else:
            self._open.pop(address, None)

    def held(self, address: str) -> int:
        return self._open.get(address, 0)


class LoginBudget:
    """A token bucket per address: each authentication attempt takes a token, a successful one
    gives it back, so failures (and attempts still being checked) are bounded to ``rate`` a
    second after a burst of ``BURST_SECONDS`` worth."""

    def __init__(self, rate: float):
        if rate <= 0:
            raise ValueError(f"the failed-login rate must be positive, not {rate}")
        self.rate = rate
        self.burst = max(1.0, rate * BURST_SECONDS)
        self._buckets: dict[str, tuple[float, float]] = {}  # address -> (tokens, at)

    def _level(self, address: str, now: float) -> float:
        tokens, at = self._buckets.get(address, (self.burst, now))
        return min(self.burst, tokens + max(0.0, now - at) * self.rate)

    def take(self, address: str, now: float) -> bool:
        """Whether ``address`` may make one more attempt now (and, if so, charge it)."""
        tokens = self._level(address, now)
        if tokens < 1.0:
            self._buckets[address] = (tokens, now)
            return False
        if address not in self._buckets and len(self._buckets) >= MAX_TRACKED_ADDRESSES:
            self._forget_full(now)
        self._buckets[address] = (tokens - 1.0, now)
        return True

    def give_back(self, address: str, now: float) -> None:
        """An attempt ``take`` charged succeeded: it costs the address nothing."""
        if address in self._buckets:
            self._buckets[address] = (min(self.burst, self._level(address, now) + 1.0), now)

    def _forget_full(self, now: float) -> None:
        for address in [a for a in self._buckets if self._level(a, now) >= self.burst]:
            del self._buckets[address]
