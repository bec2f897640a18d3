"""LoopRunner against a fake ownership lease: when works may start, and that a lost lease stops them."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from usenet_indexer.coordinator.loops import LoopRunner
from usenet_indexer.leases.ownership import Claim

RENEW = 0.4


@dataclass
class FakeOwnership:
    """Records acquisitions, renewals and works; renewals fail from ``lose_after`` on."""

    holder: str = "test:1:abc"
    renew_interval: float = RENEW
    lose_after: int | None = None
    events: list[tuple[str, float]] = field(default_factory=list)
    renewals: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def acquire(self, name: str, meta: Any = None) -> Claim:
        lost = self.lose_after is not None and self.renewals >= self.lose_after
        with self.lock:
            self.events.append(("acquire" if not lost else "refused", time.monotonic()))
        return Claim(not lost, name, 1, self.holder if not lost else "other", None)

    def renew(self, name: str) -> bool:
        with self.lock:
            self.renewals += 1
            ok = self.lose_after is None or self.renewals < self.lose_after
            self.events.append(("renew" if ok else "lost", time.monotonic()))
        return ok

    def release(self, name: str) -> bool:
        return True


def run_for(ownership: FakeOwnership, seconds: float, work_seconds: float) -> None:
    runner = LoopRunner(ownership)  # type: ignore[arg-type]

    def work() -> bool:
        with ownership.lock:
            ownership.events.append(("work", time.monotonic()))
        time.sleep(work_seconds)
        return True  # more at once: the hardest case, works back to back

    runner.add("busy", 10.0, work)
    runner.start()
    time.sleep(seconds)
    runner.stop()


def test_every_work_starts_on_a_lease_renewed_within_a_quarter_interval() -> None:
    ownership = FakeOwnership()
    run_for(ownership, 2.5, work_seconds=0.15)
    works = 0
    last_renewal = None
    for kind, at in ownership.events:
        if kind in ("acquire", "renew"):
            last_renewal = at
        elif kind == "work":
            works += 1
            assert last_renewal is not None and at - last_renewal <= RENEW / 4 + 0.05, ownership.events
    assert works >= 5


def test_a_lost_lease_stops_the_work_at_once() -> None:
    ownership = FakeOwnership(lose_after=3)
    run_for(ownership, 2.0, work_seconds=0.05)
    kinds = [kind for kind, _ in ownership.events]
    assert "lost" in kinds
    assert "work" not in kinds[kinds.index("lost") :]
    assert "refused" in kinds  # it went on asking, and was refused
