"""The prefetcher against the scripted server: what it stores and counts, and how it copes with
compressed replies cut short, the corrupt path, dropped connections, 502, stalls, the spool cap and a
full disk."""

from __future__ import annotations

import asyncio
import errno
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_nntp import FakeNNTPServer, Script, fill_group
from tests.support.loops import formats, news_service, prefetch_all, ranges_of, stored_lines
from tests.support.store import query
from usenet_indexer.articles import chunk_spans
from usenet_indexer.coordinator.loops.news import NewsService
from usenet_indexer.coordinator.loops.prefetcher import LEASED_AHEAD_OVER_CAP, Prefetcher
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.storage.blobs import LocalBlobStore, LocalFileWriter
from usenet_indexer.storage.spool import Spool
from usenet_indexer.wire.chunks import ChunkError, inflate_chunk

G = "alt.binaries.prefetch"


def script_for(mode: str, **faults: Any) -> Script:
    return Script(support_xzver=mode == "xzver", support_gzip=mode.startswith("gzip"), **faults)


@pytest.fixture
def make(services: Services) -> Iterator[Any]:
    """make(server, **server_settings) -> (news, prefetcher); closed after the test."""
    made: list[tuple[NewsService, Prefetcher]] = []

    def build(server: FakeNNTPServer, **settings: Any) -> tuple[NewsService, Prefetcher]:
        news = news_service("127.0.0.1", server.port, **settings)
        prefetcher = Prefetcher(services, news)
        made.append((news, prefetcher))
        return news, prefetcher

    yield build
    for news, prefetcher in made:
        prefetcher.close()
        news.close()


def plan(services: Services, first: int, last: int, *, capture: bool = False) -> None:
    services.groups.add(G, capture=capture)
    services.groups.plan(G, first, last)


def chunk_count(row: dict[str, Any], size: int = 100) -> int:
    return len(chunk_spans(int(row["start_id"]), int(row["end_id"]), size))


@pytest.mark.parametrize(
    ("mode", "stored_as"),
    [("none", "ZLIB"), ("xzver", "RAW_DEFLATE"), ("gzip", "ZLIB"), ("gzip-terminator", "ZLIB")],
)
async def test_every_article_stored_once_compressed_as_fetched(
    services: Services, make: Any, mode: str, stored_as: str
) -> None:
    async with FakeNNTPServer(script_for(mode)) as server:
        lines = fill_group(server, G, 1, 2345)
        plan(services, 1, 2345)
        _, prefetcher = make(server, compression=mode)
        reports = await asyncio.to_thread(prefetch_all, prefetcher)
    assert sorted(stored_lines(services, G)) == sorted(lines)  # each exactly once
    assert formats(services, G) == {stored_as}
    for row in ranges_of(services, G):
        assert int(row["spooled_chunks"]) == chunk_count(row)
        assert int(row["gaps"]) == 0
    assert sum(r.fetched for r in reports) == 24  # 1–99, 100–199, …, 2300–2345
    fetched = query(services.db, "SELECT count(*) AS n, sum(lines) AS l FROM fetched_chunks")[0]
    assert (int(fetched["n"]), int(fetched["l"])) == (24, 2345)


async def test_missing_articles_are_counted_as_gaps(services: Services, make: Any) -> None:
    async with FakeNNTPServer(script_for("xzver")) as server:
        fill_group(server, G, 1, 2500)
        holes = {*range(150, 160), 777, *range(1000, 1100), 2499}
        for number in holes:
            del server.groups[G][number]
        plan(services, 1, 2500)
        _, prefetcher = make(server, compression="xzver")
        await asyncio.to_thread(prefetch_all, prefetcher)
    ranges = ranges_of(services, G)
    assert sum(int(r["gaps"]) for r in ranges) == len(holes)
    assert [int(r["gaps"]) for r in ranges] == [11, 100, 1]
    assert len(stored_lines(services, G)) == 2500 - len(holes)
    # 1000–1099 came back empty (423): stored as an empty chunk, so a worker does not wait for it.
    assert all(int(r["spooled_chunks"]) == chunk_count(r) for r in ranges)


@pytest.mark.parametrize("mode", ["xzver", "gzip-terminator"])
async def test_a_compressed_reply_cut_short_is_not_stored_and_fetched_plain(
    services: Services, make: Any, mode: str
) -> None:
    async with FakeNNTPServer(script_for(mode, cut_short=1)) as server:
        lines = fill_group(server, G, 1, 999)
        plan(services, 1, 999)
        _, prefetcher = make(server, compression=mode, connections=1)
        reports = await asyncio.to_thread(prefetch_all, prefetcher)
        # Compressed: XZVER, or XOVER after XFEATURE COMPRESS GZIP; plain: OVER.
        plain_overs = [c for c in server.commands if c.startswith("OVER ")]
    assert sorted(stored_lines(services, G)) == sorted(lines)
    assert sum(r.plain for r in reports) == 1
    assert plain_overs == ["OVER 1-99"]  # the one cut short
    [row] = ranges_of(services, G)
    assert int(row["spooled_chunks"]) == 10


async def test_corrupt_report_refetches_the_chunk_plain_and_the_range_completes(
    services: Services, make: Any
) -> None:
    async with FakeNNTPServer(script_for("xzver")) as server:
        lines = fill_group(server, G, 1, 999)
        plan(services, 1, 999)
        _news, prefetcher = make(server, compression="xzver")
        await asyncio.to_thread(prefetch_all, prefetcher)
        [row] = ranges_of(services, G)
        range_id = int(row["id"])
        # Damaged at rest, past the client's check: the worker finds it.
        bad = chunk_spans(1, 999, 100)[3]
        path = services.settings.data_dir / "blobs" / Spool.key(range_id, bad)
        path.write_bytes(path.read_bytes()[:40])

        node, _ = services.nodes.add("edge")
        seen: list[bytes] = []

        def index_until_corrupt() -> bool:
            """A worker: lease, read chunks from the resume point, a batch per chunk; False at a
            corrupt chunk (reported as the node API does), True at the end (finished)."""
            lease = services.ranges.lease(node)
            assert lease is not None
            for span in chunk_spans(lease.start, lease.end, 100, lease.next):
                data = services.spool.read(range_id, span)
                assert data is not None
                try:
                    overview = inflate_chunk(data)
                except ChunkError:
                    services.ranges.corrupt(range_id, node, lease.epoch, span.first)
                    services.spool.remove_chunk(range_id, span)
                    return False
                chunk_lines = [line for line in overview.split(b"\r\n") if line]
                seen.extend(chunk_lines)
                services.ranges.commit_batch(
                    range_id, node, lease.epoch, span.first, span.last, len(chunk_lines)
                )
            services.ranges.finish(range_id, node, lease.epoch)
            return True

        assert not await asyncio.to_thread(index_until_corrupt)
        before = list(server.commands)
        reports = await asyncio.to_thread(prefetch_all, prefetcher)
        refetched = server.commands[len(before) :]
    assert sum(r.fetched for r in reports) == 1
    assert f"OVER {bad.first}-{bad.last}" in refetched  # plain: OVER, not XZVER
    plain = query(services.db, "SELECT * FROM plain_chunks WHERE range_id = :r", {"r": range_id})
    assert [(int(p["chunk_from"]), p["fetched_plain_at"] is not None) for p in plain] == [(bad.first, True)]
    assert await asyncio.to_thread(index_until_corrupt)
    [row] = ranges_of(services, G)
    assert row["status"] == "done"
    assert seen == lines  # every article once, in order
    # Gaps were counted once although the chunk was fetched twice.
    assert int(row["gaps"]) == 0


async def test_connection_dropped_mid_reply_is_retried_nothing_lost_nothing_twice(
    services: Services, make: Any
) -> None:
    async with FakeNNTPServer(script_for("none", drop_mid_reply=3)) as server:
        lines = fill_group(server, G, 1, 1999)
        plan(services, 1, 1999)
        news, prefetcher = make(server, compression="none")
        await asyncio.to_thread(prefetch_all, prefetcher)
        stats = news.pool.stats()
    assert stats.dropped == 3
    assert sorted(stored_lines(services, G)) == sorted(lines)


async def test_502_backs_off_and_keeps_within_the_limit(services: Services, make: Any) -> None:
    async with FakeNNTPServer(script_for("xzver", max_connections=2, reply_delay=0.02)) as server:
        lines = fill_group(server, G, 1, 2999)
        plan(services, 1, 2999)
        news, prefetcher = make(server, compression="xzver", connections=6)
        await asyncio.to_thread(prefetch_all, prefetcher)
        refused, peak = server.refused, server.peak_connections
        limit = news.pool.limit()
    assert refused >= 1
    assert peak <= 2
    assert limit <= 2
    assert sorted(stored_lines(services, G)) == sorted(lines)


async def test_a_reply_that_never_ends_times_out_and_is_retried(services: Services, make: Any) -> None:
    async with FakeNNTPServer(script_for("none", stall_mid_reply=1)) as server:
        lines = fill_group(server, G, 1, 999)
        plan(services, 1, 999)
        _, prefetcher = make(server, compression="none", timeout=0.5)
        started = time.monotonic()
        await asyncio.to_thread(prefetch_all, prefetcher)
    assert time.monotonic() - started < 10
    assert sorted(stored_lines(services, G)) == sorted(lines)


async def test_a_server_that_never_answers_ends_the_round_with_nothing_stored(
    services: Services, make: Any
) -> None:
    async with FakeNNTPServer(script_for("none", stall_mid_reply=10_000)) as server:
        fill_group(server, G, 1, 999)
        plan(services, 1, 999)
        news, prefetcher = make(server, compression="none", timeout=0.3, connections=2)
        report = await asyncio.to_thread(news.run, prefetcher.round)
    assert report.fetched == 0
    assert report.failed >= 1
    assert not report.more
    assert stored_lines(services, G) == []
    assert int(ranges_of(services, G)[0]["spooled_chunks"]) == 0


async def test_the_spool_cap_holds_planned_ranges_back_but_not_a_waiting_worker(
    services: Services, make: Any
) -> None:
    services.settings.spool_cap_bytes = 1
    async with FakeNNTPServer(script_for("xzver")) as server:
        fill_group(server, G, 1, 2999)
        plan(services, 1, 2999)
        news, prefetcher = make(server, compression="xzver", connections=2)
        first = await asyncio.to_thread(news.run, prefetcher.round)
        # Past the cap after the first chunks: at most one per worker was in flight when it was reached.
        assert first.capped
        assert 1 <= first.fetched <= prefetcher.workers
        second = await asyncio.to_thread(news.run, prefetcher.round)
        assert (second.fetched, second.capped) == (0, True)

        # A worker leases a range (spooled ones first) and waits: its next chunks still come.
        node, _ = services.nodes.add("edge")
        lease = services.ranges.lease(node)
        assert lease is not None
        third = await asyncio.to_thread(news.run, prefetcher.round)
    near = chunk_spans(lease.start, lease.end, 100)[:LEASED_AHEAD_OVER_CAP]
    assert all(services.spool.has(lease.range_id, span) for span in near)
    assert third.fetched <= LEASED_AHEAD_OVER_CAP
    assert third.capped


class FullDisk(LocalBlobStore):
    """Writes fail half-way with ENOSPC, as a full filesystem does."""

    def writer(self, key: str, *, max_bytes: int) -> LocalFileWriter:
        writer = super().writer(key, max_bytes=max_bytes)
        real_write = writer.write

        def write(piece: bytes) -> None:
            real_write(piece[: len(piece) // 2])
            writer.out.flush()
            raise OSError(errno.ENOSPC, "No space left on device")

        writer.write = write  # type: ignore[method-assign]
        return writer


async def test_a_full_disk_is_a_clear_error_and_back_pressure_never_a_half_written_chunk(
    services: Services, make: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    full = FullDisk(services.settings.data_dir / "blobs")
    services.spool = Spool(full)
    services.blobs = full
    async with FakeNNTPServer(script_for("xzver")) as server:
        fill_group(server, G, 1, 999)
        plan(services, 1, 999)
        news, prefetcher = make(server, compression="xzver")
        report = await asyncio.to_thread(news.run, prefetcher.round)
        again = await asyncio.to_thread(news.run, prefetcher.round)
    assert report.disk_full and report.fetched == 0 and not report.more
    assert again.paused and again.fetched == 0
    spool = services.settings.data_dir / "blobs" / "spool"
    assert [p for p in spool.rglob("*") if p.is_file()] == []  # not even a temporary file
    assert int(ranges_of(services, G)[0]["spooled_chunks"]) == 0
    logged = capsys.readouterr()
    assert "prefetch.disk_full" in logged.out + logged.err
    assert "Free space" in logged.out + logged.err


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
async def test_a_really_full_filesystem_leaves_no_partial_file(
    services: Services, make: Any, tmp_path: Path
) -> None:
    """The same on a real 256 KB tmpfs: the kernel's ENOSPC, not an imitation."""
    mount = tmp_path / "small"
    mount.mkdir()
    result = await asyncio.create_subprocess_exec(
        "mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)
    )
    assert await result.wait() == 0
    try:
        small = LocalBlobStore(mount)
        services.spool = Spool(small)
        services.blobs = small
        async with FakeNNTPServer(script_for("none")) as server:
            fill_group(server, G, 1, 9999)
            plan(services, 1, 9999)
            news, prefetcher = make(server, compression="none")
            services.settings.spool_deflate_level = 0  # stored, not compressed: fills 256 KB quickly
            report = await asyncio.to_thread(news.run, prefetcher.round)
        assert report.disk_full
        for path in mount.rglob("*"):
            if path.is_file():
                assert not path.name.startswith(".tmp-")
                inflate_chunk(path.read_bytes())  # every chunk there is whole
        spooled = sum(int(r["spooled_chunks"]) for r in ranges_of(services, G))
        assert spooled == sum(1 for p in mount.rglob("*") if p.is_file()) == report.fetched
    finally:
        proc = await asyncio.create_subprocess_exec("umount", str(mount))
        await proc.wait()


async def test_no_chunk_is_fetched_twice_at_once(services: Services, make: Any) -> None:
    async with FakeNNTPServer(script_for("xzver", reply_delay=0.05)) as server:
        lines = fill_group(server, G, 1, 1999)
        plan(services, 1, 1999)
        news, one = make(server, compression="xzver")
        two = Prefetcher(services, news)
        try:
            first, second = await asyncio.gather(
                asyncio.to_thread(news.run, one.round), asyncio.to_thread(news.run, two.round)
            )
        finally:
            two.close()
        fetches = [c for c in server.commands if c.startswith("XZVER")]
    assert sorted(fetches) == sorted(set(fetches))  # each chunk asked for once
    assert first.fetched + second.fetched == 20
    assert sorted(stored_lines(services, G)) == sorted(lines)


async def test_leased_ranges_first_then_planned_in_lease_order(services: Services, make: Any) -> None:
    async with FakeNNTPServer(script_for("xzver")) as server:
        fill_group(server, G, 1, 3999)
        plan(services, 1, 3999)
        node, _ = services.nodes.add("edge")
        lease = services.ranges.lease(node)
        assert lease is not None
        # Planned newest first (ids 1–4: 3000, 2000, 1000, 1); the lease took id 1. Reorder the rest.
        query(services.db, "UPDATE ranges SET priority = 5 WHERE start_id = 2000")
        query(services.db, "UPDATE ranges SET priority = 3 WHERE start_id IN (1, 1000)")
        _news, prefetcher = make(server, compression="xzver", connections=1)
        jobs, _ = await asyncio.to_thread(prefetcher.plan_round)
    starts = list(dict.fromkeys(job.target.start for job in jobs))
    assert starts[0] == lease.start == 3000
    assert jobs[0].leased and not jobs[-1].leased
    # Then by priority, then id: 1000 and 1 (priority 3, ids 3 and 4), then 2000 (priority 5).
    assert starts[1:] == [1000, 1, 2000]


async def test_a_round_ends_soon_after_its_deadline_whatever_the_server_does(
    services: Services, make: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop renews its ownership lease between rounds: a stalled fetch must not hold a round."""
    import usenet_indexer.coordinator.loops.prefetcher as prefetcher_module

    monkeypatch.setattr(prefetcher_module, "ROUND_GRACE_SECONDS", 0.5)
    services.settings.prefetch_round_seconds = 0.2
    async with FakeNNTPServer(script_for("none", stall_mid_reply=10_000)) as server:
        fill_group(server, G, 1, 999)
        plan(services, 1, 999)
        news, prefetcher = make(server, compression="none", timeout=30.0)
        started = time.monotonic()
        report = await asyncio.to_thread(news.run, prefetcher.round)
        took = time.monotonic() - started
    assert took < 3.0
    assert report.fetched == 0 and report.failed >= 1


async def test_the_next_command_goes_out_before_the_last_chunk_is_handed_to_storage(
    services: Services, make: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On one connection the task waiting for it sends its command before the task that just read a
    chunk starts storing it: a storage thread started first took the GIL and a core, and the
    connection sat idle 1-2 ms per chunk (bench/fetch.py). All is recorded on the news loop."""
    from usenet_indexer.nntp import pool as pool_module
    from usenet_indexer.nntp.client import NNTPClient

    order: list[str] = []
    send, release, in_thread = NNTPClient._send, pool_module._Server.release, Prefetcher._in_thread

    async def recording_send(self: NNTPClient, command: Any) -> None:
        if command.verb == "OVER":
            order.append("send")
        await send(self, command)

    async def recording_release(self: Any, client: NNTPClient, *, healthy: bool) -> None:
        # Whether a task waits for the connection (when none does, there is no command to send).
        order.append("release to a waiter" if self._cond._waiters else "release")
        await release(self, client, healthy=healthy)

    async def recording_in_thread(self: Prefetcher, function: Any, *args: Any) -> Any:
        if getattr(function, "__name__", "") == "store":
            order.append("store")
        return await in_thread(self, function, *args)

    monkeypatch.setattr(NNTPClient, "_send", recording_send)
    monkeypatch.setattr(pool_module._Server, "release", recording_release)
    monkeypatch.setattr(Prefetcher, "_in_thread", recording_in_thread)
    # Slow replies, so that the other task has mostly stored its chunk and waits for the connection.
    async with FakeNNTPServer(script_for("none", reply_delay=0.03)) as server:
        fill_group(server, G, 1, 799)
        plan(services, 1, 799)
        _, prefetcher = make(server, compression="none", connections=1)
        await asyncio.to_thread(prefetch_all, prefetcher)
    assert order.count("send") == 8
    handed = [i for i, event in enumerate(order) if event == "release to a waiter"]
    assert len(handed) >= 3
    for at in handed:
        assert order[at + 1] == "send", order[at : at + 3]


async def test_a_chunk_spooled_but_never_recorded_is_fetched_again_and_recorded(
    services: Services, make: Any
) -> None:
    """A coordinator killed between writing a chunk and recording it (tests/e2e/test_two_coordinators
    caught it): the next round fetches that chunk again and records it, counting nothing twice."""
    async with FakeNNTPServer(script_for("none")) as server:
        lines = fill_group(server, G, 1, 999)
        plan(services, 1, 999)
        _news, prefetcher = make(server, compression="none")
        await asyncio.to_thread(prefetch_all, prefetcher)
        before = query(services.db, "SELECT id, spooled_chunks FROM ranges")
        query(services.db, "DELETE FROM fetched_chunks WHERE chunk_from = 500")
        jobs, _ = await asyncio.to_thread(prefetcher.plan_round)
        assert [(job.span.first, job.present) for job in jobs] == [(500, True)]
        await asyncio.to_thread(prefetch_all, prefetcher)
    assert query(services.db, "SELECT id, spooled_chunks FROM ranges") == before
    fetched = query(services.db, "SELECT count(*) AS n, sum(lines) AS l FROM fetched_chunks")[0]
    assert (int(fetched["n"]), int(fetched["l"])) == (10, 999)
    assert sorted(stored_lines(services, G)) == sorted(lines)
