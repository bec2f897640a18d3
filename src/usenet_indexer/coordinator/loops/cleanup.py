"""Spool clean-up: a range's spool goes when the range is over, and nothing is left behind for good.

- A range finished by its worker loses its spool in the node API's finish call; one finished as
  abandoned (read to its end, its worker gone quiet: ``RangeLeases.finish_abandoned``) loses it here.
- The sweep (its own loop) removes the spool of every range that is done, failed or unknown (deleted,
  or a spool directory from another database): these are orphans — a finish whose removal failed, a
  range failed by the corrupt path, a coordinator that died between the two.
- It also drops a live range's chunks that lie wholly before its resume point: their articles are in
  stored batches already, and a stream starts at the resume point's chunk. A worker on a big range
  would otherwise hold its whole range in the spool until it finishes, and the spool cap with it.
- Files a writer left half-written (a crash between write and rename) go after an hour.

The counts (``spooled_chunks``) are the prefetcher's to correct: it alone knows which fetches are in
flight (coordinator/loops/prefetcher.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.db.database import Fence
from usenet_indexer.leases.ranges import FinishedRange
from usenet_indexer.logs import get_logger
from usenet_indexer.storage.spool import ROOT as SPOOL_ROOT

log = get_logger(__name__)

TEMPORARY_AGE_SECONDS = 3600.0


@dataclass
class SweepReport:
    orphans: int = 0  # ranges whose spool was removed
    pruned: int = 0  # chunks before a live range's resume point
    temporary: int = 0  # half-written files


class SpoolCleanup:
    def __init__(
        self, services: Services, *, abandoned_fence: Fence | None = None, sweep_fence: Fence | None = None
    ) -> None:
        self.services = services
        # The two loops' fences (coordinator/loops/runner.py): their writes check them.
        self.abandoned_fence = abandoned_fence
        self.sweep_fence = sweep_fence

    def finish_abandoned(self) -> list[FinishedRange]:
        done = self.services.ranges.finish_abandoned(fence=self.abandoned_fence)
        for finished in done:
            self.services.spool.remove(finished.range_id)
        if done:
            log.info("ranges.finished_abandoned", ranges=[d.range_id for d in done])
        return done

    def sweep(self) -> SweepReport:
        services = self.services
        report = SweepReport()
        for range_id in services.spool.ranges():
            with services.db.transaction(write=False) as tx:
                row = tx.one("range_spool_state", {"range_id": range_id})
            if self.sweep_fence is not None:
                self.sweep_fence.check_alive()  # files are deleted here: only while the loop is ours
            if row is None or row["status"] in ("done", "failed"):
                services.spool.remove(range_id)
                report.orphans += 1
                continue
            resume = int(row["next_id"])
            for key in services.blobs.list(f"{SPOOL_ROOT}/{range_id}"):
                last = chunk_last(key)
                if last is not None and last < resume:
                    services.blobs.delete(key)
                    report.pruned += 1
        report.temporary = services.blobs.sweep_temporary(SPOOL_ROOT, TEMPORARY_AGE_SECONDS)
        if report.orphans or report.pruned or report.temporary:
            log.info("spool.swept", orphans=report.orphans, pruned=report.pruned, temporary=report.temporary)
        return report


def chunk_last(key: str) -> int | None:
    """The last article of a spooled chunk from its key (``spool/<range>/<from>-<to>``), or None."""
    _, _, last = key.rsplit("/", 1)[-1].partition("-")
    return int(last) if last.isdigit() else None
