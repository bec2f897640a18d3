"""Planner and prefetcher against INN2 on loopback: yEnc articles posted to a fresh group, planned from
its real watermarks, fetched plain and with COMPRESS DEFLATE into the spool, on both stores.

What is checked is the spool and the ranges: every posted article's overview line stored exactly once
across the chunks, ``spooled_chunks`` right, cancelled articles counted as gaps. The end-to-end check
("the catalog holds every article once") needs the batch store and the edge worker, which are not on
this branch: a worker reading these chunks is the next step (see the report on issue 5).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest

from tests.support import inn2 as support
from tests.support.loops import group_row, news_service, prefetch_all, ranges_of, stored_lines
from usenet_indexer.articles import chunk_spans
from usenet_indexer.coordinator.loops.planner import Planner
from usenet_indexer.coordinator.loops.prefetcher import Prefetcher
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.leases.planning import Backfill
from usenet_indexer.wire.chunks import inflate_chunk

ARTICLES = 2345


def cancel(message_id: str) -> None:
    """Remove an article from INN2 (its number stays used: a gap in the overview)."""
    result = subprocess.run(
        [support.CTLINND, "-t", "30", "cancel", message_id], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def message_id(line: bytes) -> str:
    return line.split(b"\t")[4].decode()


# INN2 offers COMPRESS DEFLATE; auto reads plain or compressed, whichever it measures faster (these
# replies are too small to measure: its connections alternate between the two).
@pytest.mark.parametrize("compression", ["none", "deflate", "auto"])
async def test_posted_articles_are_planned_and_spooled_exactly_once(
    services: Services, inn2: None, compression: str
) -> None:
    group = support.new_group()
    articles = [support.yenc_article(i, collection=f"loops.{compression}") for i in range(1, ARTICLES + 1)]
    assert await asyncio.to_thread(support.post_articles, group, articles) == ARTICLES
    cancelled = [*articles[100:110], articles[777], *articles[2000:2003]]
    for article in cancelled:
        cancel(article.message_id)
    services.groups.add(group)
    news = news_service(support.HOST, support.PLAIN_PORT, compression=compression, timeout=30.0)
    prefetcher = Prefetcher(services, news)
    try:
        [outcome] = await asyncio.to_thread(Planner(services, news).plan_all)
        assert (outcome.outcome, outcome.low, outcome.high) == ("planned", 1, ARTICLES)
        await asyncio.to_thread(prefetch_all, prefetcher)
        # Which compression the session used (the pool's idle clients; private, for this check only).
        sessions = {client.session_compression for client in news.pool._servers[0]._idle}
    finally:
        prefetcher.close()
        await asyncio.to_thread(news.close)
    if compression == "auto":
        assert sessions and sessions <= {"deflate", "none"}
    else:
        assert sessions == {compression}

    ranges = ranges_of(services, group)
    assert [(int(r["start_id"]), int(r["end_id"])) for r in ranges] == [(1, 999), (1000, 1999), (2000, 2345)]
    lines = stored_lines(services, group)
    counts = Counter(message_id(line) for line in lines)
    gone = {a.message_id for a in cancelled}
    assert {a.message_id for a in articles} - gone == set(counts)  # every article there, none cancelled
    assert set(counts.values()) == {1}  # each exactly once
    assert len(lines) == ARTICLES - len(cancelled)
    for row in ranges:
        assert int(row["spooled_chunks"]) == len(chunk_spans(int(row["start_id"]), int(row["end_id"]), 100))
    assert sum(int(r["gaps"]) for r in ranges) == len(cancelled)
    by_start = {int(r["start_id"]): int(r["gaps"]) for r in ranges}
    assert by_start == {1: 11, 1000: 0, 2000: 3}


async def test_backfill_by_date_against_inn2(services: Services, inn2: None) -> None:
    """Articles posted one an hour over 20 days; --backfill-days 5 plans the last 5 days' articles."""
    group = support.new_group()
    now = datetime.now(UTC).replace(microsecond=0)
    hours = 20 * 24
    articles = []
    for i in range(1, hours + 1):
        article = support.yenc_article(i, collection="loops.dated")
        posted = now - timedelta(hours=hours - i)
        articles.append(
            support.Article(
                article.message_id, article.subject, article.poster, article.body, format_datetime(posted)
            )
        )
    assert await asyncio.to_thread(support.post_articles, group, articles) == hours
    services.groups.add(group)
    services.groups.set_backfill(group, Backfill(days=5))
    news = news_service(support.HOST, support.PLAIN_PORT, timeout=30.0)
    try:
        [outcome] = await asyncio.to_thread(Planner(services, news, clock=now.timestamp).plan_all)
    finally:
        await asyncio.to_thread(news.close)
    assert outcome.outcome == "planned"
    # Article i was posted hours - i hours ago: 5 days ago is article hours - 120.
    target = hours - 5 * 24
    assert group_row(services, group)["backfill_article"] == target
    ranges = ranges_of(services, group)
    assert min(int(r["start_id"]) for r in ranges) == target
    assert max(int(r["end_id"]) for r in ranges) == hours


def test_serve_with_a_news_server_runs_the_loops(inn2: None, tmp_path: Path) -> None:
    """`usenet-indexer serve --nntp-host …` as a process: the planner plans the group from INN2 and the
    prefetcher spools it; SIGTERM stops it."""
    group = support.new_group()
    articles = [support.yenc_article(i, collection="loops.serve") for i in range(1, 501)]
    assert support.post_articles(group, articles) == 500
    data = tmp_path / "data"
    env = {**os.environ, "USENET_INDEXER_PLANNER_PERIOD_SECONDS": "0.5", "USENET_INDEXER_LOG_FORMAT": "json"}
    env.pop("USENET_INDEXER_CONFIG", None)
    cli = [sys.executable, "-m", "usenet_indexer.cli", "--data-dir", str(data)]
    subprocess.run([*cli, "groups", "add", group], check=True, env=env, capture_output=True)
    serve = [
        *cli,
        "serve",
        "--port",
        "0",
        "--nntp-host",
        support.HOST,
        "--nntp-port",
        str(support.PLAIN_PORT),
    ]
    process = subprocess.Popen(
        [*serve, "--nntp-connections", "2"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        spooled = 0
        while time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.3)
            with (
                contextlib.suppress(sqlite3.OperationalError),
                contextlib.closing(sqlite3.connect(data / "usenet-indexer.db")) as conn,
            ):
                spooled = conn.execute("SELECT COALESCE(SUM(spooled_chunks), 0) FROM ranges").fetchone()[0]
            if spooled:
                break
        assert spooled == 1, "the group was not spooled"
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            out, err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            raise AssertionError(f"serve did not stop on SIGTERM:\n{err.decode()[-3000:]}") from None
    assert b"coordinator listening" in out
    assert b"planner.planned" in err
    chunk = next((data / "blobs" / "spool").rglob("0*"))
    lines = [line for line in inflate_chunk(chunk.read_bytes()).split(b"\r\n") if line]
    assert sorted(message_id(line) for line in lines) == sorted(a.message_id for a in articles)


def test_the_probe_loop_renames_an_obfuscated_release_through_the_shared_pool(
    inn2: None, database_url: str, tmp_path: Path
) -> None:
    """serve's probe loop: the catalog's Prober on its own event loop, BODY through the news service."""
    import uuid

    from tests.integration.catalog.test_probe import GROUP, HASH, REAL, overview, par2_index
    from tests.support.store import query, services_for
    from usenet_indexer.catalog.batch_store import store_batch
    from usenet_indexer.coordinator.loops.probe import probe_work
    from usenet_indexer.indexing import RangeIndexer
    from usenet_indexer.indexing.rules import default_rules
    from usenet_indexer.nntp import yenc

    group = support.new_group("alt.binaries.probe")
    article = support.Article(
        message_id=f"<par2-{uuid.uuid4().hex}@loops.test>",
        subject=f'[4/4] - "{HASH}.par2" yEnc (1/1)',
        poster="poster@example.test",
        body=yenc.encode(par2_index(tmp_path), f"{HASH}.par2"),
        date="Mon, 30 Nov 2026 10:00:00 +0000",
    )
    assert support.post_articles(group, [article]) == 1
    services = services_for(database_url, tmp_path / "data")
    news = news_service(support.HOST, support.PLAIN_PORT, timeout=30.0)
    try:
        indexer = RangeIndexer(GROUP, 1, 7, 1, default_rules())
        indexer.add_text(overview(article.message_id), 8)
        indexer.finish()
        with services.db.transaction() as tx:
            store_batch(tx, 1, GROUP, indexer.take())
        assert probe_work(services, news)() is False  # one candidate: not a full batch
        assert query(services.db, "SELECT name, name_source FROM releases") == [
            {"name": REAL, "name_source": "par2"}
        ]
    finally:
        news.close()
        services.close()
