"""Captured ranges in the corpus, re-indexing from it, the spool clean-up, and the loops as `serve`
runs them."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from tests.support.fake_nntp import FakeNNTPServer, Script, fill_group
from tests.support.loops import news_service, prefetch_all, ranges_of, stored_lines
from tests.support.store import TTL, backdate, query
from usenet_indexer.articles import chunk_spans
from usenet_indexer.coordinator.http.node_api import read_chunk
from usenet_indexer.coordinator.loops.background import background_loops
from usenet_indexer.coordinator.loops.cleanup import SpoolCleanup
from usenet_indexer.coordinator.loops.corpus_fill import CorpusFill, reindex
from usenet_indexer.coordinator.loops.prefetcher import Prefetcher
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.leases.audit import audit
from usenet_indexer.leases.planning import STORED_PRIORITY
from usenet_indexer.storage.corpus import CorpusRange
from usenet_indexer.wire.chunks import inflate_chunk

G = "alt.binaries.corpus"


def index_range(services: Services, node: int) -> int:
    """A worker: lease, a batch per chunk (read as the stream reads: corpus first), finish."""
    lease = services.ranges.lease(node)
    assert lease is not None
    row = ranges_of(services, lease.group)[0]
    corpus = CorpusRange(lease.group, lease.start, lease.end) if row["capture"] else None
    for span in chunk_spans(lease.start, lease.end, 100, lease.next):
        data = read_chunk(services, lease.range_id, span, corpus)
        assert data is not None, f"chunk {span.first} not stored"
        lines = [line for line in inflate_chunk(data).split(b"\r\n") if line]
        services.ranges.commit_batch(lease.range_id, node, lease.epoch, span.first, span.last, len(lines))
    services.ranges.finish(lease.range_id, node, lease.epoch)
    services.spool.remove(lease.range_id)
    return lease.range_id


async def test_captured_ranges_go_to_the_corpus_and_are_reindexed_without_the_server(
    services: Services,
) -> None:
    async with FakeNNTPServer(Script(support_gzip=False)) as server:
        lines = fill_group(server, G, 1, 999)
        services.groups.add(G, capture=True)
        services.groups.plan(G, 1, 999)
        news = news_service("127.0.0.1", server.port, compression="xzver")
        prefetcher = Prefetcher(services, news)
        fill = CorpusFill(services, news)
        try:
            await asyncio.to_thread(prefetch_all, prefetcher)
            # Written once, to the corpus: the spool holds nothing of a captured range.
            assert services.spool.ranges() == []
            assert await asyncio.to_thread(fill.work) is False  # nothing to fetch, only to mark
            [row] = ranges_of(services, G)
            assert row["stored_at"] is not None
            assert int(row["spooled_chunks"]) == 10
            assert sorted(stored_lines(services, G)) == sorted(lines)

            node, _ = services.nodes.add("edge")
            range_id = await asyncio.to_thread(index_range, services, node)
            commands = len(server.commands)

            assert reindex(services, G) == 1
            [row] = ranges_of(services, G)
            assert (row["status"], int(row["next_id"]), int(row["priority"])) == (
                "planned",
                1,
                STORED_PRIORITY,
            )
            # A stored range needs nothing from the news server: the prefetcher leaves it alone …
            report = await asyncio.to_thread(news.run, prefetcher.round)
            assert report.fetched == 0
            assert (
                await asyncio.to_thread(index_range, services, node) == range_id
            )  # … and it is indexed again
            assert len(server.commands) == commands
            # The second pass is the range's record: each article once, the audit clean.
            audited = audit(services.db, ttl=services.settings.lease_ttl_seconds, max_per_group=2)
            assert audited.problems == []
        finally:
            prefetcher.close()
            await asyncio.to_thread(news.close)
    [row] = ranges_of(services, G)
    assert row["status"] == "done"


async def test_corpus_fill_fetches_what_the_corpus_lacks_and_the_corrupt_path_unmarks(
    services: Services,
) -> None:
    async with FakeNNTPServer(Script(support_gzip=False)) as server:
        lines = fill_group(server, G, 1, 999)
        services.groups.add(G, capture=True)
        services.groups.plan(G, 1, 999)
        news = news_service("127.0.0.1", server.port, compression="xzver")
        prefetcher = Prefetcher(services, news)
        fill = CorpusFill(services, news)
        try:
            await asyncio.to_thread(prefetch_all, prefetcher)
            node, _ = services.nodes.add("edge")
            await asyncio.to_thread(index_range, services, node)
            where = CorpusRange(G, 1, 999)
            lost = chunk_spans(1, 999, 100)[6]
            services.corpus.remove_chunk(where, lost)  # a corpus restored from an incomplete copy
            query(services.db, "UPDATE ranges SET stored_at = NULL")
            assert await asyncio.to_thread(fill.work) is True
            assert services.corpus.has(where, lost)
            assert ranges_of(services, G)[0]["stored_at"] is not None
        finally:
            prefetcher.close()
            await asyncio.to_thread(news.close)
    assert sorted(stored_lines(services, G)) == sorted(lines)


async def test_the_corrupt_path_on_a_captured_range_refetches_into_the_corpus(services: Services) -> None:
    async with FakeNNTPServer(Script(support_gzip=False)) as server:
        fill_group(server, G, 1, 999)
        services.groups.add(G, capture=True)
        services.groups.plan(G, 1, 999)
        news = news_service("127.0.0.1", server.port, compression="xzver")
        prefetcher = Prefetcher(services, news)
        try:
            await asyncio.to_thread(prefetch_all, prefetcher)
            await asyncio.to_thread(CorpusFill(services, news).work)
            node, _ = services.nodes.add("edge")
            lease = services.ranges.lease(node)
            assert lease is not None
            bad = chunk_spans(1, 999, 100)[2]
            outcome = services.ranges.corrupt(lease.range_id, node, lease.epoch, bad.first)
            services.corpus.remove_chunk(CorpusRange(G, 1, 999), bad)  # as the node API does
            assert outcome.capture and not outcome.failed
            assert ranges_of(services, G)[0]["stored_at"] is None  # no longer whole in the corpus
            before = len(server.commands)
            await asyncio.to_thread(prefetch_all, prefetcher)
            assert server.commands[before:] == [f"OVER {bad.first}-{bad.last}"]
            await asyncio.to_thread(CorpusFill(services, news).work)
            assert ranges_of(services, G)[0]["stored_at"] is not None
        finally:
            prefetcher.close()
            await asyncio.to_thread(news.close)


async def test_spool_removed_when_abandoned_and_orphans_swept(services: Services) -> None:
    async with FakeNNTPServer(Script(support_gzip=False)) as server:
        fill_group(server, G, 1, 3999)
        services.groups.add(G)
        services.groups.plan(G, 1, 3999)
        news = news_service("127.0.0.1", server.port, compression="xzver")
        prefetcher = Prefetcher(services, news)
        try:
            await asyncio.to_thread(prefetch_all, prefetcher)
        finally:
            prefetcher.close()
            await asyncio.to_thread(news.close)
    ids = {int(r["start_id"]): int(r["id"]) for r in ranges_of(services, G)}
    node, _ = services.nodes.add("edge")
    cleanup = SpoolCleanup(services)

    # Abandoned: read to its end, its worker silent past the TTL.
    lease = services.ranges.lease(node)
    assert lease is not None
    services.ranges.commit_batch(lease.range_id, node, lease.epoch, lease.start, lease.end, 0)
    backdate(services.db, lease.range_id, TTL + 5)
    assert [d.range_id for d in cleanup.finish_abandoned()] == [lease.range_id]
    assert lease.range_id not in services.spool.ranges()

    # Orphans: a failed range, a range the store does not know, a half-written file an hour old.
    failed = ids[1000] if ids[1000] != lease.range_id else ids[2000]
    query(services.db, "UPDATE ranges SET status = 'failed', error = 'test' WHERE id = :id", {"id": failed})
    services.spool.write(987654, chunk_spans(1, 99, 100)[0], b"stray")
    stale = services.settings.data_dir / "blobs" / "spool" / str(ids[1]) / ".tmp-crashed"
    stale.write_bytes(b"half")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    # A live range half read: its chunks before the resume point are no longer needed.
    live = next(i for i in ids.values() if i not in (lease.range_id, failed))
    other = services.ranges.lease(node)
    while other is not None and other.range_id != live:
        services.ranges.release(other.range_id, node, other.epoch)
        query(
            services.db, "UPDATE ranges SET priority = priority + 100 WHERE id = :id", {"id": other.range_id}
        )
        other = services.ranges.lease(node)
    assert other is not None
    services.ranges.commit_batch(live, node, other.epoch, other.start, other.start + 449, 450)

    report = cleanup.sweep()
    assert (report.orphans, report.temporary) == (2, 1)
    assert report.pruned == 4  # four chunks wholly before 450 of the range; the fifth holds it
    assert set(services.spool.ranges()) == set(ids.values()) - {lease.range_id, failed}
    assert not stale.exists()
    kept = [s for s in chunk_spans(other.start, other.end, 100) if services.spool.has(live, s)]
    resume = other.start + 450
    assert kept[0].first <= resume <= kept[0].last


async def test_serve_runs_the_news_loops(services: Services) -> None:
    """background_loops with a news server: planner and prefetcher run under their ownership leases
    until the group is spooled; the clean-up and finish-abandoned loops beside them."""
    services.settings.planner_period_seconds = 0.2
    services.settings.prefetch_idle_seconds = 0.1
    async with FakeNNTPServer(Script(support_gzip=False)) as server:
        lines = fill_group(server, G, 1, 2500)
        services.groups.add(G)
        services.groups.add("alt.binaries.not.there")
        news = news_service("127.0.0.1", server.port, compression="xzver")
        runner = background_loops(services, news)
        assert {loop.name for loop in runner.loops} == {
            "finish-abandoned",
            "spool-cleanup",
            "grouping",
            "planner",
            "prefetcher",
            "corpus-fill",
            "probe",
        }
        services.settings.probe_bodies = False
        assert "probe" not in {loop.name for loop in background_loops(services, news).loops}
        services.settings.probe_bodies = True
        runner.start()
        try:
            deadline = time.monotonic() + 20

            def spooled() -> int:
                return sum(int(r["spooled_chunks"]) for r in ranges_of(services, G))

            while spooled() < 26 and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
        finally:
            await asyncio.to_thread(runner.stop)
    assert spooled() == 26  # 10 + 10 + 6 (2000–2099 … 2500–2500)
    assert sorted(stored_lines(services, G)) == sorted(lines)
    missing = query(services.db, "SELECT error FROM groups WHERE name = 'alt.binaries.not.there'")[0]
    assert "no group" in missing["error"]
    assert not [loop for loop in runner.loops if loop.errors], [loop.last_error for loop in runner.loops]


def test_settings_name_the_news_servers(tmp_path: Any, monkeypatch: Any) -> None:
    from usenet_indexer.settings import Settings

    config = tmp_path / "usenet-indexer.toml"
    config.write_text(
        'nntp_host = "news.example.com"\nnntp_ssl = true\nnntp_user = "me"\n'
        '[[nntp_fill_servers]]\nhost = "fill.example.net"\nconnections = 2\n'
    )
    monkeypatch.setenv("USENET_INDEXER_CONFIG", str(config))
    monkeypatch.setenv("USENET_INDEXER_NNTP_PASSWORD", "pa55-n3ws")
    monkeypatch.setenv("USENET_INDEXER_NNTP_CONNECTIONS", "20")
    settings = Settings(data_dir=tmp_path)
    primary, fill = settings.news_servers()
    assert (primary.host, primary.port, primary.ssl, primary.connections) == (
        "news.example.com",
        563,
        True,
        20,
    )
    assert primary.password is not None and primary.password.get_secret_value() == "pa55-n3ws"
    assert (fill.host, fill.port, fill.priority, fill.connections) == ("fill.example.net", 119, 1, 2)
    assert "pa55-n3ws" not in repr(settings)  # the value; "secret" is in a setting's name
