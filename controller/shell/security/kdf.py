"""PBKDF2 off the event loop: SASL/PLAIN checks a password by deriving the user's SCRAM key
(2.6 ms at 4096 iterations, 10.5 ms at Kafka's maximum 16384), which on the event loop would
stall every connection and the engine for that long per attempt.

    kdf = KeyDerivations()
    matched = await kdf.password_matches(credential, "secret")   # in the shared pool

One small pool serves the whole process; hashlib releases the GIL while it derives, so the
loop runs on meanwhile. Attempts waiting for the pool are bounded by the connections that may
be waiting (one request at a time before authentication, under the connection caps), and how
many reach it by the per-address login budget (controller.shell.security.quotas).
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from controller.shell.security.scram import ScramCredential, password_matches

# One thread: however many addresses flood PLAIN, the derivations take at most one core, and
# never the event loop's time.
KDF_THREADS = 1

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _shared_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(KDF_THREADS, thread_name_prefix="sasl-kdf")
        return _pool


class KeyDerivations:
    """Password checks in the shared pool; ``done`` counts this instance's (what a test or a
    metric reads)."""

    def __init__(self) -> None:
        self.done = 0

    async def password_matches(self, credential: ScramCredential, password: str) -> bool:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(_shared_pool(), password_matches, credential, password)
        finally:
            self.done += 1
