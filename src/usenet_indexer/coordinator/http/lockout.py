"""Failed admin logins, per client: a lockout with a back-off, so the password cannot be guessed at
the speed of the server (issue 15: 42 guesses a second from one client, then the right password was
still accepted).

After ``FREE_FAILURES`` wrong passwords from one client (its address: the proxy's forwarded one
behind a proxy on this machine, coordinator/http/network.py), each further failure locks that client out for
twice as long as the last, from 1 s up to ``MAX_LOCK_SECONDS``; while locked out, no password is
checked at all, the right one included. A success forgets the client's failures. In memory: several
coordinators each count their own, which multiplies an attacker's rate by their number at most.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

FREE_FAILURES = 5
MAX_LOCK_SECONDS = 900.0
FORGET_SECONDS = 3600.0  # a client quiet this long starts afresh
MAX_CLIENTS = 100_000  # remembered at most (the oldest forgotten first)


@dataclass
class _Record:
    failures: int = 0
    locked_until: float = 0.0
    last: float = 0.0


class LoginLockout:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._clients: dict[str, _Record] = {}
        self._lock = threading.Lock()

    def locked(self, client: str) -> float:
        """Seconds ``client`` must still wait before a password is checked (0: none)."""
        with self._lock:
            record = self._clients.get(client)
            return 0.0 if record is None else max(0.0, record.locked_until - self.clock())

    def failed(self, client: str) -> float:
        """Count a wrong password; the seconds ``client`` is now locked out for (0: not yet)."""
        now = self.clock()
        with self._lock:
            record = self._clients.get(client)
            if record is None or now - record.last > FORGET_SECONDS:
                if len(self._clients) >= MAX_CLIENTS:
                    oldest = min(self._clients, key=lambda c: self._clients[c].last)
                    del self._clients[oldest]
                record = self._clients[client] = _Record()
            record.failures += 1
            record.last = now
            over = record.failures - FREE_FAILURES
            if over <= 0:
                return 0.0
            seconds = min(MAX_LOCK_SECONDS, 2.0 ** (over - 1))
            record.locked_until = now + seconds
            return seconds

    def succeeded(self, client: str) -> None:
        with self._lock:
            self._clients.pop(client, None)
