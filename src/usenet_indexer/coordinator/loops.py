"""Background loops, each run by one coordinator at a time under its ownership lease (seed 004).

A loop's thread claims the lease, renews it every renew interval and runs its work every period while
it holds it. When a renewal fails the loop stops working at once (self-fencing): another coordinator
may claim it only after the TTL, which is at least three renew intervals away, so the two never overlap.
A work that returns True (more to do now: the prefetcher after a busy round) runs again without waiting
its period; it must still return well within the TTL, since renewals happen between works.

A work starts only on a lease renewed within the last quarter renew interval (renewed first if not):
renewed on schedule alone, a work begun just before a renewal was due had only TTL − renew left before
another coordinator could claim the loop, and one that ran longer (a slow round) would have overlapped
its successor. So every work has at least TTL − renew/4 to return; the loops bound their works by the
TTL (prefetcher.py's round grace, the probe's round).
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from usenet_indexer.leases.ownership import OwnershipLeases
from usenet_indexer.logs import get_logger

log = get_logger(__name__)


def holder_name() -> str:
    """Unique per process: a restarted coordinator must not pass for its dead predecessor."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


@dataclass
class Loop:
    name: str
    period_seconds: float
    work: Callable[[], object]
    runs: int = 0
    errors: int = 0
    last_error: str | None = None
    holding: bool = False


@dataclass
class LoopRunner:
    ownership: OwnershipLeases
    loops: list[Loop] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _closers: list[Callable[[], object]] = field(default_factory=list)

    def on_stop(self, close: Callable[[], object]) -> None:
        """Called after every loop thread has ended (the news loops' pool and storage threads)."""
        self._closers.append(close)

    def add(self, name: str, period_seconds: float, work: Callable[[], object]) -> Loop:
        loop = Loop(name, period_seconds, work)
        self.loops.append(loop)
        return loop

    def start(self) -> None:
        for loop in self.loops:
            thread = threading.Thread(target=self._run, args=(loop,), name=f"loop-{loop.name}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout)
        for loop in self.loops:
            if loop.holding:
                self.ownership.release(loop.name)
                loop.holding = False
        for close in self._closers:
            try:
                close()
            except Exception:
                log.exception("loop.close_failed")

    def _renew(self, loop: Loop) -> bool:
        if not self.ownership.renew(loop.name):
            loop.holding = False
            log.warning("loop.lost", loop=loop.name, holder=self.ownership.holder)
        return loop.holding

    def _run(self, loop: Loop) -> None:
        renew = self.ownership.renew_interval
        next_work = 0.0
        next_renew = 0.0
        while not self._stop.is_set():
            now = time.monotonic()
            try:
                if not loop.holding:
                    loop.holding = self.ownership.acquire(loop.name, {"period": loop.period_seconds}).ok
                    if loop.holding:
                        log.info("loop.acquired", loop=loop.name, holder=self.ownership.holder)
                        next_renew = now + renew
                elif now >= next_renew:
                    self._renew(loop)
                    next_renew = now + renew
                if loop.holding and now >= next_work and next_renew - time.monotonic() < 0.75 * renew:
                    renewed_at = time.monotonic()  # renewed over renew/4 ago: renewed before the work
                    if self._renew(loop):
                        next_renew = renewed_at + renew
                if loop.holding and now >= next_work:
                    more = loop.work()
                    loop.runs += 1
                    next_work = time.monotonic() + (0.0 if more is True else loop.period_seconds)
            except Exception as error:  # a failed round must not end the loop: log, count, go on
                loop.errors += 1
                loop.last_error = f"{type(error).__name__}: {error}"
                log.exception("loop.error", loop=loop.name)
            wait = min(next_renew, next_work) - time.monotonic() if loop.holding else renew
            self._stop.wait(max(0.05, min(wait, renew)))
