"""LoopRunner against a fake ownership lease: renewals beside the works, and a lost lease stops them."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from usenet_indexer.coordinator.loops.runner import LoopRunner, holder_gone, holder_name
from usenet_indexer.db import Fenced
from usenet_indexer.leases.ownership import Claim

RENEW = 0.2


@dataclass
class FakeOwnership:
    """Records acquisitions, renewals and works; renewals fail from ``lose_after`` on."""

    holder: str = "test:1:abc"
    renew_interval: float = RENEW
    lose_after: int | None = None
    events: list[tuple[str, float]] = field(default_factory=list)
    renewals: int = 0
    held: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def acquire(self, name: str, meta: Any = None, gone: Any = None) -> Claim:
        lost = self.lose_after is not None and self.renewals >= self.lose_after
        with self.lock:
            self.events.append(("acquire" if not lost else "refused", time.monotonic()))
            self.held = not lost
        return Claim(not lost, name, 1, self.holder if not lost else "other", None)

    def renew(self, name: str) -> bool:
        with self.lock:
            self.renewals += 1
            ok = self.lose_after is None or self.renewals < self.lose_after
            self.events.append(("renew" if ok else "lost", time.monotonic()))
            self.held = ok
        return ok

    def fresh(self, name: str) -> bool:
        return self.held

    def release(self, name: str) -> bool:
        return True


def run_for(ownership: FakeOwnership, seconds: float, work: Any) -> LoopRunner:
    runner = LoopRunner(ownership)  # type: ignore[arg-type]
    runner.add("busy", 10.0, work)
    runner.start()
    time.sleep(seconds)
    runner.stop()
    return runner


def test_renewals_go_on_while_a_long_work_runs() -> None:
    """Issue 14: renewed only between works, a planner pass outlived its lease and a second
    coordinator ran the loop beside it."""
    ownership = FakeOwnership()

    def long_work() -> bool:
        with ownership.lock:
            ownership.events.append(("work", time.monotonic()))
        time.sleep(8 * RENEW)
        with ownership.lock:
            ownership.events.append(("worked", time.monotonic()))
        return False

    run_for(ownership, 12 * RENEW, long_work)
    kinds = [kind for kind, _ in ownership.events]
    during = kinds[kinds.index("work") : kinds.index("worked")]
    assert during.count("renew") >= 5, ownership.events


def test_a_lost_lease_stops_the_work_at_once() -> None:
    ownership = FakeOwnership(lose_after=3)

    def work() -> bool:
        with ownership.lock:
            ownership.events.append(("work", time.monotonic()))
        time.sleep(0.02)
        return True  # more at once: works back to back

    run_for(ownership, 2.0, work)
    kinds = [kind for kind, _ in ownership.events]
    assert "lost" in kinds
    assert "work" not in kinds[kinds.index("lost") + 1 :]
    assert "refused" in kinds  # it went on asking, and was refused


def test_a_fenced_work_stops_and_its_loop_claims_again() -> None:
    ownership = FakeOwnership()
    works: list[float] = []

    def fenced_once() -> bool:
        works.append(time.monotonic())
        if len(works) == 1:
            raise Fenced("ownership lease busy is no longer held")
        return False

    runner = run_for(ownership, 3 * RENEW, fenced_once)
    (loop,) = runner.loops
    assert (loop.fenced, loop.errors) == (1, 0)
    assert [kind for kind, _ in ownership.events].count("acquire") >= 2


def test_a_work_is_due_by_the_runners_clock_not_the_real_one() -> None:
    """An hour's period, passed by moving the clock the runner is given instead of sleeping it out; not
    moved, the work does not come again."""
    ownership = FakeOwnership()
    now = [1_000.0]
    works: list[float] = []
    worked = threading.Event()

    def work() -> bool:
        works.append(now[0])
        worked.set()
        return False

    runner = LoopRunner(ownership, clock=lambda: now[0])  # type: ignore[arg-type]
    runner.add("hourly", 3_600.0, work)
    runner.start()
    try:
        assert worked.wait(5.0)
        time.sleep(3 * RENEW)  # three of its waits on the real clock: on its own clock no time passed
        assert works == [1_000.0]
        worked.clear()
        now[0] += 3_600.0
        assert worked.wait(5.0)  # seen within one wait (a renew interval)
        assert works == [1_000.0, 4_600.0]
    finally:
        runner.stop()


def test_a_holder_is_gone_only_when_its_process_on_this_host_no_longer_exists() -> None:
    host = socket.gethostname()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert not holder_gone(f"{host}:{child.pid}:abcdef")  # alive
    finally:
        child.kill()
        child.wait()
    assert holder_gone(f"{host}:{child.pid}:abcdef")  # reaped: no such process
    assert not holder_gone(f"another-{host}:{child.pid}:abcdef")  # another host's: the TTL decides
    assert not holder_gone(holder_name())  # this process
    assert not holder_gone(f"{host}:1:abcdef")  # exists (init)
    for malformed in ("", host, f"{host}:", f"{host}:x:abc", f"{host}:-5:abc", f"{host}:0:abc"):
        assert not holder_gone(malformed)


def test_a_woken_loop_runs_its_work_at_once_not_at_the_end_of_its_period() -> None:
    """The prefetcher found no ranges at a run's start and slept its period while the planner planned
    them: nothing was fetched for the run's first second (issue 17). Woken, it works at once; a stop
    ends its wait at once too."""
    ownership = FakeOwnership(renew_interval=5.0)
    runs: list[float] = []
    runner = LoopRunner(ownership)  # type: ignore[arg-type]
    runner.add("prefetcher", 60.0, lambda: runs.append(time.monotonic()))
    runner.add("other", 60.0, lambda: None)
    runner.start()
    try:
        deadline = time.monotonic() + 5
        while not runs and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(runs) == 1
        time.sleep(0.3)
        assert len(runs) == 1  # its period is a minute
        woken = time.monotonic()
        runner.wake("prefetcher")
        while len(runs) < 2 and time.monotonic() < woken + 2:
            time.sleep(0.01)
        assert len(runs) == 2 and runs[1] - woken < 1.0
    finally:
        stopping = time.monotonic()
        runner.stop()
    assert time.monotonic() - stopping < 2.0
