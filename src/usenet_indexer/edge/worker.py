"""An edge worker (seed 003): leases a range, streams its chunks, indexes them, posts a batch every
``batch_articles`` articles (each moves the range's resume point) and finishes the range.

Per range: the next chunk inflates on a thread while the current one is indexed (zlib releases the
GIL); batches are posted in order by a poster thread while indexing goes on (a post took 1–16 s);
a failed post stops the range at the next chunk (a lost lease: nothing more will be stored). On stop
(SIGTERM) the range is given back after the current chunk and the next worker resumes from the last
stored batch. A lost lease is logged and the loop goes on; any other error gives the range back.
"""

from __future__ import annotations

import queue
import random
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from usenet_indexer import accelerator
from usenet_indexer.edge.client import ApiError, Lease, NodeClient
from usenet_indexer.edge.main import DEFAULT_BATCH_ARTICLES, DEFAULT_IDLE_SECONDS
from usenet_indexer.indexing.fragment import Batch
from usenet_indexer.indexing.indexer import RangeIndexer
from usenet_indexer.indexing.rules import RuleSet
from usenet_indexer.leases.errors import LeaseLost
from usenet_indexer.logs import get_logger
from usenet_indexer.wire.batch import encode_batch
from usenet_indexer.wire.chunks import ChunkError, inflate_chunk
from usenet_indexer.wire.frames import FrameDecoder, FrameError, FrameType

log = get_logger(__name__)

# A worker that found nothing asks again after this, then twice as long each time, up to its idle wait:
# with one fixed wait (5 s under `run`) a worker turned away while the group's two leases were held (a
# range still completing and the other worker's) slept through the ranges planned after it; one of two
# workers had nothing to do for the first seconds of a run (issue 17).
FIRST_IDLE_SECONDS = 0.25
# Ranges being posted and finished while the next one is indexed. With one, a worker waited for the
# previous range's batch to be stored before it could start the next range's: with ranges that index
# in 0.1 s and a store of about as long, the worker sat idle a fifth of the time (bench/stream.py,
# py-spy). Two keeps the coordinator's store and the worker's indexing both busy; each holds one
# range's last batch, so memory stays bounded.
COMPLETING = 2


@dataclass
class CpuSplit:
    """A range's CPU by stage (``time.thread_time`` of the thread doing each): what a worker's time per
    header is made of, logged with ``range.done`` (bench/e2e.py adds them up)."""

    inflate: float = 0.0
    index: float = 0.0
    take: float = 0.0
    encode: float = 0.0

    def fields(self) -> dict[str, float]:
        return {k: round(v, 4) for k, v in vars(self).items()}


@dataclass
class RangeSummary:
    range_id: int
    group: str
    start: int
    end: int
    headers: int = 0
    releases: int = 0
    candidates: int = 0
    bytes_posted: int = 0
    post_seconds: float = 0.0
    seconds: float = 0.0
    finished: bool = False
    cpu: CpuSplit = field(default_factory=CpuSplit)

    def line(self) -> str:
        rate = self.headers / self.seconds if self.seconds > 0 else 0.0
        return (
            f"{self.group} {self.start}–{self.end}: {self.headers:,} headers in {self.seconds:.1f} s "
            f"({rate:,.0f}/s), {self.releases:,} release fragments, {self.candidates:,} probe candidates; "
            f"posted {self.bytes_posted / 1e6:.1f} MB in {self.post_seconds:.1f} s"
        )


@dataclass
class Poster:
    """Posts one range's batches in order on its own thread; the first failure is kept and ends it."""

    client: NodeClient
    lease: Lease
    summary: RangeSummary
    on_batch: Callable[[Batch, dict[str, Any]], None] | None = None
    error: BaseException | None = None
    _queue: queue.Queue[Batch | None] = field(default_factory=lambda: queue.Queue(maxsize=2))
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"poster-{self.lease.range_id}", daemon=True)
        self._thread.start()

    def post(self, batch: Batch) -> None:
        self._queue.put(batch)

    def close(self) -> None:
        """Wait for every queued batch to be posted (or the first failure)."""
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while (batch := self._queue.get()) is not None:
            if self.error is not None:
                continue  # drain: nothing after a failed post may be stored
            try:
                began_cpu = time.thread_time()
                body = encode_batch(batch, self.lease.range_id, self.lease.epoch)
                self.summary.cpu.encode += time.thread_time() - began_cpu
                began = time.monotonic()
                result = self.client.batch(self.lease.range_id, self.lease.epoch, body)
                self.summary.post_seconds += time.monotonic() - began
                self.summary.bytes_posted += len(body)
                self.summary.headers += batch.headers
                self.summary.releases += int(result.get("releases", len(batch.fragments)))
                self.summary.candidates += int(result.get("candidates", len(batch.candidates)))
                if self.on_batch is not None:
                    self.on_batch(batch, result)
            except BaseException as error:
                self.error = error


class EdgeWorker:
    def __init__(
        self,
        client: NodeClient,
        *,
        batch_articles: int = DEFAULT_BATCH_ARTICLES,
        stop: threading.Event | None = None,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
        complete_first: bool = False,
    ) -> None:
        if batch_articles < 1:
            raise ValueError(f"--batch-articles must be at least 1, not {batch_articles}")
        self.client = client
        self.batch_articles = batch_articles
        self.stop = stop or threading.Event()
        self.idle_seconds = idle_seconds
        # Finish completing the last range before asking for the next one. A range being completed
        # (its last batch posted, then finished) still holds one of its group's leases (two at most):
        # with two workers on one group, a worker that leased its next range meanwhile held both, and
        # the other was turned away range after range (under `run`, 7 of 8 ranges went to one
        # worker; issue 17). One worker alone keeps the overlap without it; `run` does not set it yet
        # (local/run.py says why).
        self.complete_first = complete_first
        self._rules: dict[int, RuleSet] = {}
        self._completing: deque[threading.Thread] = deque()
        self._inflater = ThreadPoolExecutor(max_workers=1, thread_name_prefix="inflate")
        # Which indexing path this process runs (the C accelerator or pure Python) and why: a worker on
        # the pure path indexes at about half the rate.
        # ``startup_cpu``: the process's CPU until now, imports mostly (bench/e2e.py reads it).
        log.info(
            "edge.indexing",
            path=accelerator.PATH,
            reason=accelerator.REASON,
            startup_cpu=round(time.process_time(), 3),
        )

    def close(self) -> None:
        self.wait_for_completion()
        self._inflater.shutdown(wait=True)

    def rules(self, version: int) -> RuleSet:
        if version not in self._rules:
            self._rules[version] = RuleSet.from_json(self.client.rules(version))
        return self._rules[version]

    def run(self, max_ranges: int | None = None) -> int:
        """The lease loop; returns the number of ranges worked on."""
        ranges = 0
        idle = min(FIRST_IDLE_SECONDS, self.idle_seconds)
        while not self.stop.is_set() and (max_ranges is None or ranges < max_ranges):
            if self.complete_first:
                self.wait_for_completion()
            try:
                lease = self.client.lease()
            except (ApiError, OSError) as error:
                log.warning("lease.failed", error=str(error))
                lease = None
            if lease is None and self._completing:
                # Our own range still being completed may be what holds the group at its cap.
                self.wait_for_completion()
                continue
            if lease is None:
                if max_ranges is not None:
                    break
                # Jittered: workers that all found nothing must not all ask again at the same instant.
                self.stop.wait(idle * random.uniform(0.5, 1.0))
                idle = min(2 * idle, self.idle_seconds)
                continue
            idle = min(FIRST_IDLE_SECONDS, self.idle_seconds)
            self.run_range(lease)
            ranges += 1
        self.wait_for_completion()
        return ranges

    def run_range(self, lease: Lease) -> RangeSummary:
        """Index one range. Its last batch is posted and the range finished on a thread while the
        worker goes on to its next range (a post took 1–16 s; seed 003): at most COMPLETING ranges
        are being completed at once; the oldest is waited for before another one's completion starts."""
        summary = RangeSummary(lease.range_id, lease.group, lease.start, lease.end)
        began = time.monotonic()
        poster = Poster(self.client, lease, summary)
        try:
            indexer = RangeIndexer(
                lease.group, lease.start, lease.end, lease.next, self.rules(lease.rule_version)
            )
            poster.start()
            reached_end = self._index(
                lease,
                indexer,
                poster.post,
                batch_articles=self.batch_articles,
                failure=lambda: poster.error,
                cpu=summary.cpu,
            )
        except Exception as error:
            poster.close()
            self._failed(lease, error)
            summary.seconds = time.monotonic() - began
            return summary
        while len(self._completing) >= COMPLETING:
            self._completing.popleft().join()
        completing = threading.Thread(
            target=self._complete,
            args=(lease, poster, summary, reached_end, indexer.next_article, began),
            name=f"complete-{lease.range_id}",
            daemon=True,
        )
        completing.start()
        self._completing.append(completing)
        return summary

    def wait_for_completion(self) -> None:
        while self._completing:
            self._completing.popleft().join()

    def _complete(
        self, lease: Lease, poster: Poster, summary: RangeSummary, reached_end: bool, at: int, began: float
    ) -> None:
        try:
            poster.close()
            if poster.error is not None:
                raise poster.error
            if not reached_end:
                # Stopping: back to the queue; the next worker resumes at the last stored batch.
                log.info("range.give_back", range=lease.range_id, at=at)
                self.client.call(lease.range_id, lease.epoch, "release")
                return
            self.client.call(lease.range_id, lease.epoch, "finish")
            summary.finished = True
            summary.seconds = time.monotonic() - began
            log.info("range.done", range=lease.range_id, summary=summary.line(), cpu=summary.cpu.fields())
        except Exception as error:
            self._failed(lease, error)

    def _failed(self, lease: Lease, error: Exception) -> None:
        """A range that could not be completed: a lost lease is logged; a corrupt chunk reported;
        anything else gives the range back."""
        if isinstance(error, LeaseLost):
            log.warning("range.lease_lost", range=lease.range_id, reason=error.reason)
            self.client.forget(lease)
            return
        if isinstance(error, CorruptChunk):
            log.warning("range.corrupt_chunk", range=lease.range_id, chunk=error.first, error=str(error))
            try:
                self.client.corrupt(lease.range_id, lease.epoch, error.first, error.crc)
            except (LeaseLost, ApiError) as report_error:
                log.warning("range.corrupt_report_failed", range=lease.range_id, error=str(report_error))
            return
        log.error("range.failed", range=lease.range_id, error=f"{type(error).__name__}: {error}")
        try:
            self.client.call(lease.range_id, lease.epoch, "release")
        except LeaseLost as lost:
            # The usual reason a stream broke: the coordinator ended it because the lease was lost.
            log.warning("range.lease_lost", range=lease.range_id, reason=lost.reason)
        except (ApiError, OSError) as release_error:
            log.warning("range.release_failed", range=lease.range_id, error=str(release_error))

    def _index(
        self,
        lease: Lease,
        indexer: RangeIndexer,
        emit: Callable[[Batch], None],
        *,
        batch_articles: int,
        failure: Callable[[], BaseException | None] = lambda: None,
        emit_partial: bool = True,
        cpu: CpuSplit | None = None,
    ) -> bool:
        """Stream, inflate ahead, index, ``emit`` a batch every ``batch_articles`` and at the end;
        True when the end was reached. ``failure()`` (a failed post) stops the range at the next
        chunk. On stop, what was indexed since the last batch is emitted too (``emit_partial``).
        ``cpu``: where the CPU of each stage is added."""
        batch_from = indexer.next_article
        pending: tuple[int, int, Future[tuple[bytes, float]], bytes] | None = None
        reached_end = False
        spent = cpu or CpuSplit()

        def take() -> Batch:
            began = time.thread_time()
            batch = indexer.take()
            spent.take += time.thread_time() - began
            return batch

        def handle(first: int, last: int, text: Future[tuple[bytes, float]], data: bytes) -> bool:
            nonlocal batch_from
            failed = failure()
            if failed is not None:
                raise failed
            try:
                overview, inflating = text.result()
            except ChunkError as error:
                raise CorruptChunk(first, str(error), zlib.crc32(data)) from None
            spent.inflate += inflating
            began = time.thread_time()
            indexer.add_text(overview, last + 1)
            at_end = last >= lease.end
            if at_end:
                indexer.finish()
            spent.index += time.thread_time() - began
            if at_end or last + 1 - batch_from >= batch_articles:
                emit(take())
                batch_from = last + 1
            return at_end

        for frame_type, first, last, data in self._frames(lease):
            if frame_type is FrameType.END:
                break
            inflating = self._inflater.submit(_inflate_timed, data)
            if pending is not None:
                reached_end = handle(*pending)
            pending = (first, last, inflating, data)
            if self.stop.is_set():
                break
        if pending is not None and not self.stop.is_set():
            reached_end = handle(*pending)
        elif pending is not None:
            pending[2].cancel()
        if emit_partial and not reached_end and indexer.next_article > batch_from:
            # Stopping mid-batch: what was indexed is posted, so the next worker starts after it.
            emit(take())
        return reached_end

    def _frames(self, lease: Lease) -> Iterator[tuple[FrameType, int, int, bytes]]:
        decoder = FrameDecoder()
        for piece in self.client.stream(lease.range_id, lease.epoch):
            for frame in decoder.feed(piece):
                if frame.type is FrameType.KEEPALIVE:
                    if self.stop.is_set():  # waiting for a chunk is a fine moment to stop
                        return
                    continue
                yield frame.type, frame.first, frame.last, bytes(frame.data)
                if frame.type is FrameType.END:
                    return
                if self.stop.is_set():
                    return
        try:
            decoder.close()
        except FrameError as error:
            raise StreamCut(f"range {lease.range_id}: {error}") from None


def _inflate_timed(data: bytes) -> tuple[bytes, float]:
    """The chunk's overview, and the CPU its inflating took (on the inflater's thread)."""
    began = time.thread_time()
    overview = inflate_chunk(data)
    return overview, time.thread_time() - began


class CorruptChunk(Exception):
    """A streamed chunk that does not inflate; ``crc``: the CRC-32 of its bytes, which names the copy
    in the report (a plain copy may replace it meanwhile: leases/ranges.py ``corrupt``)."""

    def __init__(self, first: int, message: str, crc: int | None = None) -> None:
        super().__init__(message)
        self.first = first
        self.crc = crc


class StreamCut(Exception):
    """The stream ended before its END frame (the coordinator gave up or the connection broke)."""
