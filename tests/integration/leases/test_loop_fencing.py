"""Background loops under their ownership leases: a work that outlives a renewal interval keeps its
lease, and a loop that lost its lease writes nothing more (issue 14.5), on both dialects."""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field

import pytest

from tests.support.interleave import Interleaving
from usenet_indexer.coordinator.loops.runner import LoopRunner
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.db import Database, Fenced
from usenet_indexer.db.database import Fence
from usenet_indexer.leases.ownership import OwnershipFence, OwnershipLeases


@pytest.fixture
def group_id(services: Services) -> int:
    return services.groups.add("alt.binaries.loops")


def write(db: Database, fence: Fence, group_id: int, note: str) -> float:
    """One loop write (a group's error note), fenced; the database's time of it."""
    with db.transaction(fence=fence) as tx:
        tx.execute("group_set_error", {"group_id": group_id, "error": note})
        row = tx.one("database_now")
    assert row is not None
    return float(row["now"])


@pytest.mark.parametrize("takeover", ["expired", "holder-gone"])
def test_a_claim_waits_for_a_fenced_write_and_fences_the_next(
    services: Services, group_id: int, takeover: str
) -> None:
    """The claim after the TTL, or at once from a holder proven gone (loops/runner.py holder_gone):
    either waits for the write in flight, and the first coordinator's next write is fenced."""
    db = services.db
    first = OwnershipLeases(db, "coordinator-1", ttl_seconds=30.0, renew_seconds=10.0)
    second = OwnershipLeases(db, "coordinator-2", ttl_seconds=30.0, renew_seconds=10.0)
    assert first.acquire("planner").ok
    fence = OwnershipFence(first, "planner")
    script = Interleaving(db)
    try:
        writer = script.spawn("A", write, db, fence, group_id, "from the first")
        script.run(writer, until="COMMIT")  # checked and written, not committed yet
        if takeover == "expired":
            db.move_clock(31.0)  # the first's lease expires while its write is in flight
            claim = script.spawn("B", second.acquire, "planner")
        else:
            gone = {"coordinator-1"}.__contains__  # the first's process proven gone
            claim = script.spawn("B", second.acquire, "planner", gone=gone)
        script.run(claim)
        assert claim.state == "blocked"  # the write's check holds the lease until it commits
        script.free(writer)
        writer.outcome()
        script.free(claim)
        assert claim.outcome().ok
    finally:
        script.close()
    # The first coordinator's next write is refused: it no longer holds the loop.
    with pytest.raises(Fenced):
        write(db, fence, group_id, "too late")
    assert services.groups.get("alt.binaries.loops")["error"] == "from the first"
    write(db, OwnershipFence(second, "planner"), group_id, "from the second")


@dataclass
class Recorder:
    """Works and writes of loops on two coordinators, by the database's clock."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    works: list[tuple[str, float, float]] = field(default_factory=list)
    writes: list[tuple[str, float]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)  # the works' own stop


def runner_for(
    db: Database, holder: str, recorder: Recorder, group_id: int, work_seconds: float
) -> LoopRunner:
    ownership = OwnershipLeases(db, holder, ttl_seconds=1.5, renew_seconds=0.5)
    runner = LoopRunner(ownership)
    fence = runner.fence("planner")

    def work() -> bool:
        began = db.now()
        try:
            end = time.monotonic() + work_seconds
            while time.monotonic() < end and not recorder.stop.is_set():
                at = write(db, fence, group_id, holder)
                with recorder.lock:
                    recorder.writes.append((holder, at))
                time.sleep(0.05)
        finally:
            with recorder.lock:
                recorder.works.append((holder, began, db.now()))
        return False

    runner.add("planner", 0.05, work)
    return runner


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


def test_a_work_longer_than_the_ttl_keeps_its_lease(
    services: Services, group_id: int, recorder: Recorder
) -> None:
    """Renewed only between works, a 4.5 s work under a 1.5 s lease was run by both coordinators."""
    runners = [runner_for(services.db, f"coordinator-{n}", recorder, group_id, 4.5) for n in (1, 2)]
    for runner in runners:
        runner.start()
    time.sleep(6.0)
    recorder.stop.set()
    for runner in runners:
        runner.stop()
    assert recorder.works, "no work ran"
    spans = sorted(recorder.works, key=lambda w: w[1])
    for (holder, _, end), (other, start, _) in itertools.pairwise(spans):
        assert holder == other or start >= end, spans
    assert sum(loop.fenced for runner in runners for loop in runner.loops) == 0


def test_a_loop_that_cannot_renew_stops_writing_before_another_starts(
    services: Services, group_id: int, recorder: Recorder
) -> None:
    first = runner_for(services.db, "coordinator-1", recorder, group_id, 30.0)
    first.start()
    deadline = time.monotonic() + 10
    while not recorder.writes and time.monotonic() < deadline:
        time.sleep(0.05)

    def unreachable(name: str) -> bool:
        raise OSError("the database does not answer this renewal")

    first.ownership.renew = unreachable  # type: ignore[method-assign]
    second = runner_for(services.db, "coordinator-2", recorder, group_id, 30.0)
    second.start()
    deadline = time.monotonic() + 15
    while not any(holder == "coordinator-2" for holder, _ in recorder.writes) and time.monotonic() < deadline:
        time.sleep(0.05)
    first.stop()
    recorder.stop.set()
    second.stop()
    firsts = [at for holder, at in recorder.writes if holder == "coordinator-1"]
    seconds = [at for holder, at in recorder.writes if holder == "coordinator-2"]
    assert firsts and seconds, recorder.writes
    assert max(firsts) < min(seconds)
    assert first.loops[0].fenced >= 1
