"""The prefetcher loop: leased and planned ranges' chunks from the news server into the spool, ahead of
the workers that stream them.

What it fetches, in this order (one round, then the loop asks again):

1. **Leased ranges' chunks**, from each range's resume point: a worker is waiting for them. Taken
   round-robin across the leased ranges (every range's next chunk, then every range's second, …), so
   that no worker waits behind another's whole range.
2. **Planned ranges' chunks** in lease order (spooled first, by priority, then id: leases/ranges.py),
   each range from its resume point, so the next range a worker leases is the one already spooled;
   ``PLANNED_TOGETHER`` of them at a time, a chunk of each in turn, so that the workers that lease them
   at once all find a first chunk soon.

Chunks the corrupt path listed in ``plain_chunks`` are fetched with compression off; one listed but not
yet fetched plain is fetched again even when a copy is spooled (a compressed copy in flight when the
report came may have landed after it: seed 000, range 161820). A captured range's chunks go to the
corpus instead of the spool (the stream reads the corpus first), so they are written once.

Back-pressure, never a full disk: past ``spool_cap_bytes`` planned ranges are not fetched; leased ranges
still get the few chunks next to their resume point (``LEASED_AHEAD_OVER_CAP``): the spool only shrinks
when workers finish ranges, and a worker waiting for a chunk the cap withholds would never finish one.
A full disk (ENOSPC) is one clear log line and a pause; the blob store leaves no partial file behind.

Parallelism: asyncio tasks over the shared pool (coordinator/loops/news.py), twice as many as connections, so
that while one task packs and writes its chunk on a storage thread another uses the connection. No
chunk is fetched twice at once: each is claimed (range, chunk) for the time of its fetch.

A round lasts at most ``prefetch_round_seconds`` (it takes no new chunk after that), so that a stop
is heard and the round's plan follows the leases. Every chunk it records checks the loop's fence
(coordinator/loops/runner.py): a coordinator that lost the loop records nothing more.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from usenet_indexer.articles import ChunkSpan, chunk_spans
from usenet_indexer.coordinator.loops.fetching import (
    ChunkTarget,
    DiskFull,
    Fetched,
    fetch_chunk,
    pack,
    record,
    write,
)
from usenet_indexer.coordinator.loops.news import NewsService
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.db.database import Fence
from usenet_indexer.logs import get_logger
from usenet_indexer.nntp.errors import NNTPError
from usenet_indexer.nntp.pool import NNTPPool
from usenet_indexer.storage.corpus import ROOT as CORPUS_ROOT
from usenet_indexer.storage.spool import ROOT as SPOOL_ROOT

log = get_logger(__name__)

T = TypeVar("T")

LEASED_AHEAD_OVER_CAP = 4  # chunks from a leased range's resume point fetched even past the spool cap
# Planned ranges fetched side by side, a chunk of each in turn (then the next one takes a finished one's
# place): at the start of a `run` two workers lease the first two ranges at once, and the second waited
# for its first chunk until the whole first range was fetched (issue 17).
PLANNED_TOGETHER = 2
DISK_FULL_PAUSE_SECONDS = 30.0
MAX_STORE_THREADS = 16
SPOOL_SIZE_SECONDS = 5.0
# Chunk fetches failing in a row (after the pool's retries): the server is in trouble, end the round.
FAILURES_TO_END_ROUND = 8
# A fetch is abandoned this long after its round's deadline (at most a third of the ownership lease's
# TTL): with the default 5 s rounds a round ends within 15 s (+ one chunk's store).
ROUND_GRACE_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class Job:
    target: ChunkTarget
    span: ChunkSpan
    plain: bool  # fetch with compression off (listed by the corrupt path)
    present: bool  # a copy is stored already (a plain copy replaces it)
    leased: bool
    ahead: int  # chunks between the range's resume point and this one

    @property
    def key(self) -> tuple[int, int]:
        return (self.target.range_id, self.span.first)


@dataclass
class RoundReport:
    fetched: int = 0
    failed: int = 0
    bytes: int = 0
    lines: int = 0
    gaps: int = 0
    plain: int = 0
    left: int = 0  # chunks not fetched this round (deadline, cap, trouble)
    capped: bool = False  # the spool cap held planned ranges back
    disk_full: bool = False
    paused: bool = False
    spool_bytes: int = 0
    busy: int = 0  # chunks skipped because another fetch of them was in flight

    @property
    def more(self) -> bool:
        """Worth another round at once: something came and nothing said stop."""
        return self.fetched > 0 and not (self.capped or self.disk_full or self.paused)


@dataclass
class _RoundState:
    queue: deque[Job]
    spool_bytes: int
    deadline: float
    report: RoundReport
    stop: bool = False
    failures_in_row: int = 0


def in_turn(ranges: Sequence[Sequence[T]], width: int) -> list[T]:
    """The ranges' chunks, ``width`` ranges at a time taking turns (a chunk each); a range that runs out
    gives its place to the next, in order."""
    order: list[T] = []
    waiting = deque(deque(jobs) for jobs in ranges)
    turns: deque[deque[T]] = deque()
    while turns or waiting:
        while len(turns) < max(1, width) and waiting:
            turns.append(waiting.popleft())
        jobs = turns.popleft()
        if jobs:
            order.append(jobs.popleft())
        if jobs:
            turns.append(jobs)
    return order


class Prefetcher:
    def __init__(
        self,
        services: Services,
        news: NewsService,
        *,
        workers: int | None = None,
        max_ranges: int = 64,
        max_jobs: int = 4000,
        fence: Fence | None = None,
    ) -> None:
        self.services = services
        self.fence = fence  # the prefetcher loop's (coordinator/loops/runner.py): every record checks it
        self.settings = services.settings
        self.news = news
        self.workers = workers or 2 * news.connections
        self.max_ranges = max_ranges
        self.max_jobs = max_jobs
        self.paused_until = 0.0
        # Packing is CPU (ISA-L or libdeflate, GIL released) and writing waits on fsync: more threads
        # than this only queue, and each holds a database connection while it records its chunk.
        self._executor = ThreadPoolExecutor(
            max_workers=min(self.workers, MAX_STORE_THREADS), thread_name_prefix="prefetch-store"
        )
        self._was_capped = False
        self._spool_size = (0, -1e9)  # bytes, when measured (monotonic)

    def close(self) -> None:
        self._executor.shutdown(wait=True)

    # -- the loop's work -------------------------------------------------------------------------

    def work(self) -> bool:
        """One round on the news service's loop; True when another should follow at once."""
        return self.news.run(self.round).more

    async def round(self, pool: NNTPPool, deadline: float | None = None) -> RoundReport:
        report = RoundReport()
        if time.monotonic() < self.paused_until:
            report.paused = True
            return report
        deadline = (
            deadline if deadline is not None else time.monotonic() + self.settings.prefetch_round_seconds
        )
        jobs, spool_bytes = await self._in_thread(self.plan_round)
        state = _RoundState(deque(jobs), spool_bytes, deadline, report)
        await asyncio.gather(*(self._worker(pool, state) for _ in range(self.workers)))
        report.left += len(state.queue)
        report.spool_bytes = state.spool_bytes
        if report.capped and not self._was_capped:
            log.info(
                "prefetch.spool_cap",
                spool_bytes=state.spool_bytes,
                cap=self.settings.spool_cap_bytes,
                action="planned ranges wait until workers finish ranges and their spool is removed",
            )
        self._was_capped = report.capped
        if report.fetched or report.failed:
            log.info(
                "prefetch.round",
                fetched=report.fetched,
                failed=report.failed,
                bytes=report.bytes,
                lines=report.lines,
                gaps=report.gaps,
                left=report.left,
                spool_bytes=report.spool_bytes,
            )
        return report

    async def _worker(self, pool: NNTPPool, state: _RoundState) -> None:
        report = state.report
        while not state.stop and time.monotonic() < state.deadline:
            job = self._take(state)
            if job is None:
                return
            if not self.news.claim(job.key):
                report.busy += 1
                continue
            if not job.present and self.stored(job):
                # Stored since the round was planned (another round, the corpus fill): done already.
                self.news.release(job.key)
                continue
            try:
                # A fetch still running this long after the round's end is given up (a server that
                # stalls while the pool retries): the round must end for a stop to be heard.
                grace = min(ROUND_GRACE_SECONDS, self.settings.ownership_ttl_seconds / 3)
                async with asyncio.timeout(max(0.0, state.deadline + grace - time.monotonic())):
                    fetched = await fetch_chunk(pool, job.target.group, job.span, plain=job.plain)
                # Let the task waiting for the connection just released send its command first: a
                # storage thread started now takes the GIL and a core, and that delayed the next
                # command by 1-2 ms per chunk with the server on the same two cores (bench/fetch.py).
                await asyncio.sleep(0)
                size = await self._in_thread(self.store, job, fetched)
            except TimeoutError:
                report.failed += 1
                state.stop = True
                log.warning(
                    "prefetch.chunk_late",
                    range=job.target.range_id,
                    chunk=job.span.first,
                    action="given up at the round's end; fetched again next round",
                )
            except DiskFull as error:
                if not state.stop:
                    self.paused_until = time.monotonic() + DISK_FULL_PAUSE_SECONDS
                    log.error(
                        "prefetch.disk_full",
                        data_dir=str(self.settings.data_dir),
                        error=str(error),
                        action=(
                            f"prefetching paused for {DISK_FULL_PAUSE_SECONDS:.0f} s; nothing half-written "
                            f"was kept. Free space under the data directory or lower spool_cap_bytes "
                            f"(now {self.settings.spool_cap_bytes})"
                        ),
                    )
                report.disk_full = state.stop = True
                state.queue.appendleft(job)
            except NNTPError as error:
                report.failed += 1
                state.failures_in_row += 1
                log.warning(
                    "prefetch.chunk_failed",
                    range=job.target.range_id,
                    group=job.target.group,
                    chunk=job.span.first,
                    error=f"{type(error).__name__}: {error}",
                )
                if state.failures_in_row >= FAILURES_TO_END_ROUND:
                    state.stop = True
            except Exception:
                # Storage or the store failed (not the disk filling up): the round ends here, whole,
                # rather than leaving the other tasks running on after it; the loop logs and retries.
                report.failed += 1
                state.stop = True
                log.exception("prefetch.store_failed", range=job.target.range_id, chunk=job.span.first)
            else:
                state.failures_in_row = 0
                report.fetched += 1
                report.bytes += size
                report.lines += fetched.chunk.lines
                report.gaps += fetched.gaps
                report.plain += fetched.plain
                if not job.target.capture:
                    state.spool_bytes += size
                    self._stored(size)
            finally:
                self.news.release(job.key)

    def _take(self, state: _RoundState) -> Job | None:
        """The next job the cap allows: past the cap only a leased range's chunks near its resume point."""
        queue = state.queue
        while queue:
            over = state.spool_bytes >= self.settings.spool_cap_bytes
            job = queue[0]
            if not over or (job.leased and job.ahead < LEASED_AHEAD_OVER_CAP) or job.target.capture:
                return queue.popleft()
            state.report.capped = True
            # The queue holds leased ranges' chunks first: past one that the cap holds back, only other
            # leased ranges' near chunks may still come; planned ones all wait.
            rest = [j for j in queue if j.leased and j.ahead < LEASED_AHEAD_OVER_CAP]
            skipped = len(queue) - len(rest)
            queue.clear()
            queue.extend(rest)
            state.report.left += skipped
            if not rest:
                return None
        return None

    # -- storage side (threads) ------------------------------------------------------------------

    async def _in_thread(self, function: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, function, *args)

    def store(self, job: Job, fetched: Fetched) -> int:
        """Pack, write atomically, record; returns the stored size."""
        data = pack(fetched.chunk, self.settings.spool_deflate_level)
        if self.fence is not None:
            self.fence.check_alive()
        write(self.services.spool, self.services.corpus, job.target, job.span, data)
        with self.services.db.transaction(fence=self.fence) as tx:
            record(tx, job.target.range_id, fetched, data, spooled=not job.present)
        self.services.arrivals.stored(job.target.range_id)  # its streams wake now, not at their next look
        return len(data)

    def plan_round(self) -> tuple[list[Job], int]:
        """The round's chunks in order, and the spool's size now."""
        services = self.services
        with services.db.transaction(write=False) as tx:
            rows = tx.run(
                "prefetch_targets",
                {"history_allowed": bool(services.space.history_allowed()), "limit": self.max_ranges},
            )
            # Two queries for the round, not two per range: on PostgreSQL each is a round trip.
            ids = tx.array([int(row["id"]) for row in rows])
            plain_of: dict[int, dict[int, object]] = {int(row["id"]): {} for row in rows}
            for p in tx.run("plain_chunks_of_ranges", {"range_ids": ids}):
                plain_of[int(p["range_id"])][int(p["chunk_from"])] = p["fetched_plain_at"]
            recorded: dict[int, set[int]] = {int(row["id"]): set() for row in rows if not row["capture"]}
            for f in tx.run("fetched_chunks_of_ranges", {"range_ids": ids}):
                if (chunks := recorded.get(int(f["range_id"]))) is not None:
                    chunks.add(int(f["chunk_from"]))
        busy = self.news.busy_ranges()
        leased: list[list[Job]] = []
        planned: list[list[Job]] = []
        recount: list[dict[str, int]] = []
        size = self.settings.chunk_articles
        for row in rows:
            range_id = int(row["id"])
            target = ChunkTarget(
                range_id,
                str(row["group_name"]),
                int(row["start_id"]),
                int(row["end_id"]),
                bool(row["capture"]),
            )
            present = self.present(target)
            all_spans = chunk_spans(target.start, target.end, size)
            spooled = sum(1 for s in all_spans if s.name in present)
            if spooled != int(row["spooled_chunks"]) and range_id not in busy:
                recount.append({"range_id": range_id, "spooled": spooled})
            is_leased = row["status"] == "leased"
            plain = plain_of[range_id]
            jobs: list[Job] = []
            for ahead, span in enumerate(chunk_spans(target.start, target.end, size, int(row["next_id"]))):
                listed = span.first in plain
                stored = span.name in present
                # A spooled chunk never recorded: a coordinator died between writing it and recording
                # it (its gaps never counted). Fetched again, it is recorded; the file is replaced
                # atomically with the same overview. (Not for captured ranges: a reindex plans new
                # ranges over a corpus that no fetched_chunks row names, and must not refetch it.)
                unrecorded = stored and range_id in recorded and span.first not in recorded[range_id]
                if stored and not unrecorded and not (listed and plain[span.first] is None):
                    continue
                jobs.append(Job(target, span, listed, stored, is_leased, ahead))
            (leased if is_leased else planned).append(jobs)
        if recount:
            with services.db.transaction(fence=self.fence) as tx:
                tx.executemany("range_set_spooled", recount)
        # Leased ranges round-robin: every range's next chunk, then every range's second, …
        ordered = in_turn(leased, len(leased)) + in_turn(planned, PLANNED_TOGETHER)
        return ordered[: self.max_jobs], self.spool_size()

    def spool_size(self) -> int:
        """The spool's size, walked at most every SPOOL_SIZE_SECONDS (a full 20 GB spool is ~20,000
        files to stat); in between, the last walk plus what this prefetcher stored since, which only
        errs high: removals by finishing workers are seen at the next walk."""
        if time.monotonic() - self._spool_size[1] >= SPOOL_SIZE_SECONDS:
            self._spool_size = (self.services.spool.size(), time.monotonic())
        return self._spool_size[0]

    def _stored(self, size: int) -> None:
        walked, measured = self._spool_size
        self._spool_size = (walked + size, measured)

    def stored(self, job: Job) -> bool:
        if job.target.capture:
            return self.services.corpus.has(job.target.corpus_range, job.span)
        return self.services.spool.has(job.target.range_id, job.span)

    def present(self, target: ChunkTarget) -> set[str]:
        """Names of the range's chunks stored now (spool, and corpus for a captured range)."""
        blobs = self.services.blobs
        names = {key.rsplit("/", 1)[-1] for key in blobs.list(f"{SPOOL_ROOT}/{target.range_id}")}
        if target.capture:
            owner = target.corpus_range.owner
            names |= {key.rsplit("/", 1)[-1] for key in blobs.list(f"{CORPUS_ROOT}/{owner}")}
        return names
