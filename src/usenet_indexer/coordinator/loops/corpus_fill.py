"""The corpus: captured ranges' overview kept for good, and re-indexing from it without the news server.

A captured range's chunks are written to the corpus by the prefetcher as they are fetched (not to the
spool: the stream reads the corpus first, and polls both while it waits — seed 002). The corpus-fill
loop finishes the job:

- a captured range whose chunks are all in the corpus is marked stored (``stored_at``); from then on the
  prefetcher leaves it alone and ``reindex`` may re-plan it;
- chunks missing from the corpus that the prefetcher will not fetch — those before a range's resume
  point, and any of a range already done (a chunk dropped by the corrupt path, a corpus restored from an
  incomplete copy) — are fetched here, one at a time: the prefetcher's work comes first. Failed ranges
  are left alone: a chunk that does not inflate even when fetched plain will not be better next time.

``reindex(group)`` puts a group's stored ranges back to planned from their start, with the priority of
stored ranges (``planning.STORED_PRIORITY``: after the tail, before history); the next lease records
the current rule version, and the worker's stream reads every chunk from the corpus.
"""

from __future__ import annotations

import time

from usenet_indexer.articles import ChunkSpan, chunk_spans
from usenet_indexer.coordinator.loops.fetching import ChunkTarget, Fetched, fetch_chunk, pack, record, write
from usenet_indexer.coordinator.loops.news import NewsService
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.db.database import Fence
from usenet_indexer.leases.planning import STORED_PRIORITY
from usenet_indexer.logs import get_logger
from usenet_indexer.nntp.errors import NNTPError
from usenet_indexer.nntp.pool import NNTPPool
from usenet_indexer.storage.corpus import ROOT as CORPUS_ROOT

log = get_logger(__name__)


class CorpusFill:
    def __init__(
        self,
        services: Services,
        news: NewsService | None,
        *,
        max_ranges: int = 64,
        budget_seconds: float = 10.0,
        call_timeout_seconds: float = 30.0,
        fence: Fence | None = None,
    ) -> None:
        self.services = services
        self.news = news
        self.max_ranges = max_ranges
        self.fence = fence  # the corpus fill loop's (coordinator/loops/runner.py): every record checks it
        # Bounded work, so that a stop is heard between chunks.
        self.budget_seconds = budget_seconds
        self.call_timeout = call_timeout_seconds

    def work(self) -> bool:
        """One pass over captured ranges not yet stored; True when it fetched something (look again)."""
        fetched = 0
        started = time.monotonic()
        with self.services.db.transaction(write=False) as tx:
            rows = tx.run("corpus_fill_targets", {"limit": self.max_ranges})
        for row in rows:
            target = ChunkTarget(
                int(row["id"]), str(row["group_name"]), int(row["start_id"]), int(row["end_id"]), True
            )
            spans = chunk_spans(target.start, target.end, self.services.settings.chunk_articles)
            missing = [s for s in spans if s.name not in self.present(target)]
            if status_fetches(str(row["status"])):
                wanted = missing
            else:  # planned or leased: the prefetcher fetches from the resume point on
                wanted = [s for s in missing if s.last < int(row["next_id"])]
            for span in wanted:
                if time.monotonic() - started > self.budget_seconds:
                    return True
                if self.news is None or not self.fetch(target, span):
                    break
                fetched += 1
            if not missing or (wanted and self.complete(target, spans)):
                self.mark_stored(target, spans)
        return fetched > 0

    def present(self, target: ChunkTarget) -> set[str]:
        owner = target.corpus_range.owner
        return {key.rsplit("/", 1)[-1] for key in self.services.blobs.list(f"{CORPUS_ROOT}/{owner}")}

    def complete(self, target: ChunkTarget, spans: list[ChunkSpan]) -> bool:
        present = self.present(target)
        return all(s.name in present for s in spans)

    def mark_stored(self, target: ChunkTarget, spans: list[ChunkSpan]) -> None:
        with self.services.db.transaction(fence=self.fence) as tx:
            tx.execute("range_stored", {"range_id": target.range_id})
            tx.execute("range_set_spooled", {"range_id": target.range_id, "spooled": len(spans)})
        log.info("corpus.stored", range=target.range_id, group=target.group, chunks=len(spans))

    def fetch(self, target: ChunkTarget, span: ChunkSpan) -> bool:
        """One chunk into the corpus; False when it could not be fetched now (try again next pass)."""
        assert self.news is not None
        key = (target.range_id, span.first)
        if not self.news.claim(key):
            return False  # being fetched (by the prefetcher) right now

        async def get(pool: NNTPPool) -> Fetched:
            return await fetch_chunk(pool, target.group, span)

        try:
            fetched = self.news.run(get, timeout=self.call_timeout)
            data = pack(fetched.chunk, self.services.settings.spool_deflate_level)
            if self.fence is not None:
                self.fence.check_alive()
            write(self.services.spool, self.services.corpus, target, span, data)
            with self.services.db.transaction(fence=self.fence) as tx:
                record(tx, target.range_id, fetched, data, spooled=False)
            return True
        except (NNTPError, TimeoutError) as error:
            log.warning("corpus.fetch_failed", range=target.range_id, chunk=span.first, error=str(error))
            return False
        finally:
            self.news.release(key)


def status_fetches(status: str) -> bool:
    """Statuses whose missing chunks are the corpus fill's to fetch (all of them)."""
    return status == "done"


def reindex(services: Services, group: str) -> int:
    """Re-plan ``group``'s ranges stored in the corpus; returns how many."""
    row = services.groups.get(group)
    size = services.settings.chunk_articles
    with services.db.transaction() as tx:
        ranges = tx.run("ranges_reindex", {"group_id": row["id"], "priority": STORED_PRIORITY})
        tx.executemany("batch_log_forget", [{"range_id": r["id"]} for r in ranges])
        # Every chunk is in the corpus: spooled as far as leasing is concerned (spooled ranges go first).
        tx.executemany(
            "range_set_spooled",
            [
                {"range_id": r["id"], "spooled": len(chunk_spans(int(r["start_id"]), int(r["end_id"]), size))}
                for r in ranges
            ],
        )
    log.info("corpus.reindex", group=group, ranges=len(ranges))
    return len(ranges)
