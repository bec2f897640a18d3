"""Background loops, each run by one coordinator at a time under its ownership lease (seed 004).

A loop's thread claims the lease and runs its work every period while it holds it. One renewer
thread renews every lease this coordinator holds every renew interval, whatever the works are doing:
renewed only between works, a planner pass of 15 s on a group plus 60 s searching a backfill date
outlived its 30 s lease, and a second coordinator ran the loop beside it (issue 14: five overlapping
works, seen with a scaled-down TTL).

Renewing on time is not enough to be safe, so every loop's writes are fenced: each write transaction
starts with ``fence.check(tx)`` (leases/ownership.py), which checks in the database that this
coordinator still holds the loop at its epoch and share-locks the lease until the transaction ends. A
loop whose lease was lost, or not renewed within its TTL by this process's own clock, fails that
check (``Fenced``) and its work stops there (self-fencing); the loop then tries to claim it again.
"""

from __future__ import annotations

import math
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from usenet_indexer.db import Fenced
from usenet_indexer.leases.ownership import Claim, OwnershipFence, OwnershipLeases
from usenet_indexer.logs import get_logger

log = get_logger(__name__)


def holder_name() -> str:
    """Unique per process: a restarted coordinator must not pass for its dead predecessor."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def holder_gone(holder: str) -> bool:
    """Whether ``holder`` (a ``holder_name``) is proven dead: named by this host, and its process no
    longer exists. A coordinator killed outright (``kill -9`` of ``run``, the OOM killer) is restarted
    on the same machine, and its loops waited out their 30 s lease doing nothing (issue 17).

    Anything else is not proof, and the lease's TTL decides: another host's holder, a pid that exists
    (even reused by another program). Wrongly proven (two machines of one name sharing a database,
    or a pid namespace of its own), a live holder only loses the loop to this coordinator: its next
    fenced write or renewal finds the new epoch, and it stops the loop (self-fencing)."""
    host, _, rest = holder.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # exists, someone else's (EPERM)
    return False


@dataclass
class Loop:
    name: str
    period_seconds: float
    work: Callable[[], object]
    runs: int = 0
    errors: int = 0
    fenced: int = 0  # works stopped because the lease was lost
    last_error: str | None = None
    holding: bool = False
    woken: threading.Event = field(default_factory=threading.Event)  # LoopRunner.wake: its work now


@dataclass
class LoopRunner:
    ownership: OwnershipLeases
    # Seconds, when each work is next due; a test gives a clock it moves instead of sleeping the period
    # out (as OwnershipLeases takes one for the database's). Waits stay on the real clock, at most a renew
    # interval each, so a moved clock is seen within one.
    clock: Callable[[], float] = time.monotonic
    loops: list[Loop] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _stop_renewing: threading.Event = field(default_factory=threading.Event)
    _renewer: threading.Thread | None = None
    _threads: list[threading.Thread] = field(default_factory=list)
    _closers: list[Callable[[], object]] = field(default_factory=list)

    def on_stop(self, close: Callable[[], object]) -> None:
        """Called after every loop thread has ended (the news loops' pool and storage threads)."""
        self._closers.append(close)

    def add(self, name: str, period_seconds: float, work: Callable[[], object]) -> Loop:
        loop = Loop(name, period_seconds, work)
        self.loops.append(loop)
        return loop

    def hold(self, name: str) -> Claim:
        """Claim ``name`` now and hold it for this coordinator's life, renewed and released with the
        loops' leases (a loop with no work). ``run`` holds its machine's (local/run.py)."""
        claim = self.ownership.acquire(name, {"held": True}, gone=holder_gone)
        if claim.ok:
            self.add(name, math.inf, lambda: None).holding = True
        return claim

    def wake(self, name: str) -> None:
        """The loop ``name``'s work runs now (if this coordinator holds it), not at the end of its
        period: what it waits for has just happened (ranges planned for the prefetcher)."""
        for loop in self.loops:
            if loop.name == name:
                loop.woken.set()

    def fence(self, name: str) -> OwnershipFence:
        """The fence the loop ``name``'s writes check (give it to the loop's work)."""
        return OwnershipFence(self.ownership, name)

    def start(self) -> None:
        for loop in self.loops:
            thread = threading.Thread(target=self._run, args=(loop,), name=f"loop-{loop.name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        self._renewer = threading.Thread(target=self._renew_all, name="loop-renewer", daemon=True)
        self._renewer.start()

    def stop(self, timeout: float = 10.0) -> None:
        """The works end (each at its next check of the stop), then the leases are released. They
        are renewed until then: a work still writing must not lose its lease on the way out."""
        self._stop.set()
        for loop in self.loops:
            loop.woken.set()  # its wait ends now
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._stop_renewing.set()
        if self._renewer is not None:
            self._renewer.join(timeout)
        # A work still running past the timeout is fenced from here: its lease is released.
        for loop in self.loops:
            if loop.holding:
                self.ownership.release(loop.name)
                loop.holding = False
        for close in self._closers:
            try:
                close()
            except Exception:
                log.exception("loop.close_failed")

    def _renew_all(self) -> None:
        """Every held lease renewed every renew interval, beside the works."""
        while not self._stop_renewing.wait(self.ownership.renew_interval):
            for loop in self.loops:
                if not loop.holding:
                    continue
                try:
                    renewed = self.ownership.renew(loop.name)
                except Exception:  # the database away: the fences go stale by themselves
                    log.exception("loop.renew_failed", loop=loop.name)
                    continue
                if not renewed:
                    loop.holding = False
                    log.warning("loop.lost", loop=loop.name, holder=self.ownership.holder)

    def _run(self, loop: Loop) -> None:
        next_work = 0.0
        while not self._stop.is_set():
            try:
                if not loop.holding:
                    meta = {"period": loop.period_seconds}
                    loop.holding = self.ownership.acquire(loop.name, meta, gone=holder_gone).ok
                    if loop.holding:
                        log.info("loop.acquired", loop=loop.name, holder=self.ownership.holder)
                if loop.holding and not self.ownership.fresh(loop.name):
                    # Not renewed within the TTL (the database away): another may claim it meanwhile.
                    loop.holding = False
                    log.warning("loop.stale", loop=loop.name, holder=self.ownership.holder)
                if loop.holding and self.clock() >= next_work:
                    more = loop.work()
                    loop.runs += 1
                    next_work = self.clock() + (0.0 if more is True else loop.period_seconds)
            except Fenced as lost:
                loop.fenced += 1
                loop.holding = False
                log.warning("loop.fenced", loop=loop.name, reason=str(lost))
            except Exception as error:  # a failed round must not end the loop: log, count, go on
                loop.errors += 1
                loop.last_error = f"{type(error).__name__}: {error}"
                log.exception("loop.error", loop=loop.name)
            renew = self.ownership.renew_interval
            wait = next_work - self.clock() if loop.holding else renew
            if loop.woken.wait(max(0.05, min(wait, renew))):
                loop.woken.clear()
                next_work = 0.0
